"""A plugin's pages (`python -m lab docs --plugins`): a claim id of another package is refused as `verify`
refuses it, a check that raised shows as its claim's `error` while the rest renders, and each page says
which package version made its verdicts and the commands that refresh them."""

import json
from pathlib import Path

from lab.cli.main import EXIT_BAD_INPUT, EXIT_OK, main

SWEEPS = Path(__file__).resolve().parents[2] / "sweeps"
CHECK = """
from pathlib import Path

from lab.core.descriptions import load_claims, load_findings, load_paper
from lab.core.records import upper_bound_record
from lab.core.registry import register

DESCRIPTIONS = load_claims(Path(__file__).with_suffix(".toml"))
PAPER = load_paper(Path(__file__).with_name("paper.toml"))
FINDINGS = load_findings(Path(__file__).with_name("f.toml"))


@register("JJ3", name="jj.exactly_k")
def check(seed, tier):
    {body}


def record(key, kind, measured):
    return upper_bound_record(claim="JJ3", key=key, statement="top-k keeps k", kind=kind, params={{}},
                              measured=measured, bound=0.0, rtol=1e-12)
"""
PASSING = (
    "return [record('exactly-k', 'premise', 1e-16), record('control-k-plus-one', 'negative-control', 1.0)]"
)
CLAIMS = """paper = "jj2024"

[JJ3]
title = "Exactly k experts"
reference = "eq. (1)"
statement = "Top-k keeps k."
premise = "Any gate values."
controls = "k + 1 kept."
records = ["exactly-k", "control-k-plus-one"]
"""
PAPER = """key = "jj2024"
short = "JJ et al. 2024"
cite = "JJ (2024)"
title = "Top-k"
scope = "The gate."
"""
FINDINGS = """paper = "jj2024"

[jj-exact]
title = "Exactly k"
records = ["JJ3/exactly-k"]
evidence = [["proven", "by construction"]]
text = "Deviation {{ record('JJ3', 'exactly-k').measured | num }}."
"""


def _plugin(install_plugin, tmp_path, body: str) -> str:
    """The package `jj-plugin`: claim JJ3 on its paper jj2024 (two record keys listed), a finding on it."""
    module = install_plugin("jj-plugin", CHECK.format(body=body))
    (tmp_path / f"{module}.toml").write_text(CLAIMS)
    (tmp_path / "paper.toml").write_text(PAPER)
    (tmp_path / "f.toml").write_text(FINDINGS)
    return module


def _render(tmp_path, *extra: str) -> tuple[int, Path, Path]:
    """Verify JJ3 into a fresh results folder, then render every page with the plugins'; the status of
    `docs`, the results folder and the docs folder."""
    results, out = tmp_path / "results", tmp_path / "docs"
    results.mkdir()
    main(["verify", "--only", "JJ3", "--quiet", "--json", str(results / "verify.json")])
    command = ["docs", "--plugins", "--results", str(results), "--sweeps", str(SWEEPS), "--out", str(out)]
    return main(command + list(extra)), results, out


def _stderr_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    return err


def test_a_claim_id_of_the_lab_is_refused_by_the_render_naming_both_packages(
    install_plugin, tmp_path, capsys
):
    module = install_plugin(
        "intruder",
        "from lab.core.registry import register\n\n\n@register('C1', name='intruder.c1')\n"
        "def c(s, t):\n    return []\n",
    )
    out = tmp_path / "docs"
    said = (
        "python -m lab: error: claim C1 is declared by two packages: checks.shazeer2017.noisy_topk "
        f"(package moe-lab) and {module} (package intruder) (a package adds checks to its own claims only)"
    )
    for plugins in (["--plugins"], []):
        command = ["docs", "--sweeps", str(SWEEPS), "--out", str(out), *plugins]
        assert main(command) == EXIT_BAD_INPUT
        assert _stderr_line(capsys) == said
    assert not out.exists()


def test_a_collision_between_two_plugins_stops_only_the_render_that_shows_them(
    install_plugin, tmp_path, capsys
):
    source = "from lab.core.registry import register\n\n\n@register('{claim}', name='shared.name')\n"
    install_plugin("plugin-a", source.format(claim="S6") + "def c(s, t):\n    return []\n")
    install_plugin("plugin-b", source.format(claim="S7") + "def c(s, t):\n    return []\n")
    out = tmp_path / "docs"
    assert main(["docs", "--sweeps", str(SWEEPS), "--out", str(out), "--check"]) in (0, 1)  # the lab's pages
    assert main(["docs", "--plugins", "--sweeps", str(SWEEPS), "--out", str(out)]) == EXIT_BAD_INPUT
    assert "two checks are named 'shared.name'" in capsys.readouterr().err


def test_a_check_that_raised_shows_its_error_and_every_other_page_renders(
    install_plugin, tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv("MOE_LAB_DEBUG", raising=False)
    _plugin(install_plugin, tmp_path, "raise ZeroDivisionError('division by zero')")
    status, results, out = _render(tmp_path)
    assert status == EXIT_OK
    assert [r["outcome"] for r in json.loads((results / "verify.json").read_text())["records"]] == ["error"]
    page = (out / "claims" / "jj2024.md").read_text()
    assert "Latest verdicts (1 error):" in page
    assert "A check of JJ3 errored in these results" in page
    assert "raised ZeroDivisionError: division by zero | - | - | - | not-applicable | - | error |" in page
    assert "Evidence: **proven** (the JJ3 records: a check errored)." in page
    assert "*A check of JJ3 errored in these results*" in page
    assert (out / "index.md").exists() and (out / "findings.md").exists()


def test_a_finding_on_a_key_an_errored_check_left_out_says_the_check_errored():
    from lab.docs.results import Results, ResultsError, record_by_key

    error = {"claim": "JJ3", "key": "error-jj", "outcome": "error", "statement": "check 'jj' raised X: y"}
    try:
        record_by_key(Results({"records": [error]}), "JJ3", "exactly-k", "claims/jj2024.md")
    except ResultsError as exc:
        said = str(exc)
    assert said == (
        "claims/jj2024.md: verify results: no record of claim JJ3 with key 'exactly-k' "
        "(a check of JJ3 errored: check 'jj' raised X: y)"
    )


def test_a_plugins_page_names_its_version_and_the_commands_that_refresh_it(install_plugin, tmp_path):
    _plugin(install_plugin, tmp_path, PASSING)
    status, results, out = _render(tmp_path)
    assert status == EXIT_OK
    assert json.loads((results / "verify.json").read_text())["versions"]["jj-plugin"] == "0.1"
    page = (out / "claims" / "jj2024.md").read_text()
    verify_file = f"{results.as_posix()}/verify.json"
    made = f"Verdicts are rendered from `{verify_file}`: 2 records at the `quick` tier, seed 0"
    assert made + ", made with package `jj-plugin` 0.1 (hypothesis " in page
    assert (
        f"Refresh them with `python -m lab verify --only JJ3 --seed 0 --json {verify_file}`, then "
        f"`python -m lab docs --plugins --results {results.as_posix()} --sweeps {SWEEPS.as_posix()} "
        f"--out {out.as_posix()}`." in page
    )
    lab = "`python -m lab verify --seed 0 --json results/verify.json`, then `python -m lab docs`."
    assert lab in (out / "claims" / "chen2022.md").read_text()


def test_a_passing_premise_against_a_zero_bound_prints_no_slack(install_plugin, tmp_path):
    _plugin(install_plugin, tmp_path, PASSING)
    status, results, out = _render(tmp_path)
    records = json.loads((results / "verify.json").read_text())["records"]
    assert status == EXIT_OK and [r["slack"] for r in records] == [0.0, 0.0]  # bound ÷ measured, as stored
    page = (out / "claims" / "jj2024.md").read_text()
    assert "| 1 | premise | top-k keeps k | 1e-16 | 0 | - | holds | - | pass |" in page
    assert "| 2 | negative-control | top-k keeps k | 1 | 0 | - | violated | - | detected |" in page
