"""Plugins from other packages: a broken check is its claim's `error`, collisions are refused naming both
sides and only where they matter, a premise without a control is `uncontrolled`."""

import json

import pytest

from lab.cli.main import EXIT_BAD_INPUT, EXIT_CLAIM_FAILED, EXIT_OK, main
from lab.cli.verify import mark_uncontrolled
from lab.core import registry
from lab.core.records import Record

RECORDS = """
from lab.core.records import Record
from lab.core.registry import register


def record(claim, kind, verdict="holds", **params):
    return Record(claim=claim, key=kind, statement="s", kind=kind, params=params, measured=0.0, bound=1.0,
                  verdict=verdict, rule="judged", reason="as the test says")
"""

GOOD = (
    RECORDS
    + """
@register("S1", name="good.check")
def check(seed, tier):
    return [record("S1", "premise", n=1), record("S1", "negative-control", "violated", n=2)]
"""
)


def _verify(tmp_path, only, *extra):
    out = tmp_path / "v.json"
    md = tmp_path / "v.md"
    status = main(["verify", "--only", only, "--quiet", "--json", str(out), "--markdown", str(md), *extra])
    return status, json.loads(out.read_text())["records"] if out.exists() else [], md


def _stderr_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    return err


def test_a_raising_check_is_its_claims_error_and_the_other_records_are_written(
    install_plugin, tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv("MOE_LAB_DEBUG", raising=False)
    install_plugin("good-plugin", GOOD)
    module = install_plugin(
        "boom-plugin",
        RECORDS
        + """
@register("S2", "S3", name="boom.check")
def check(seed, tier):
    raise ZeroDivisionError("division by zero\\nsecond line")
""",
    )
    status, records, md = _verify(tmp_path, "S1,S2,S3")
    assert status == EXIT_CLAIM_FAILED
    assert _stderr_line(capsys) == (
        f"python -m lab: check 'boom.check' in {module} (package boom-plugin) raised ZeroDivisionError: "
        "division by zero; MOE_LAB_DEBUG=1 shows the traceback"
    )
    assert [(r["claim"], r["outcome"]) for r in records] == [
        ("S1", "pass"),
        ("S1", "detected"),
        ("S2", "error"),
        ("S3", "error"),
    ]
    assert records[2]["params"] == {"check": "boom.check", "module": module, "package": "boom-plugin"}
    assert "| S2 | premise | check 'boom.check' in" in md.read_text()


def test_with_debug_the_error_carries_its_traceback(install_plugin, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MOE_LAB_DEBUG", "1")
    install_plugin("boom-plugin", RECORDS + "\n@register('S2', name='boom.check')\ndef c(s, t):\n    1 / 0\n")
    status, records, _ = _verify(tmp_path, "S2")
    assert status == EXIT_CLAIM_FAILED
    assert "Traceback" in capsys.readouterr().err
    assert "ZeroDivisionError" in records[0]["extra"]["traceback"]


@pytest.mark.parametrize(
    "body, says",
    [
        ("return {'claim': 'S4'}", "returned a dict, not a Record or a list of Records"),
        ("return []", "returned no records"),
        ("return [record('S4', 'premise'), 3]", "returned a int where a Record belongs"),
        ("return record('S5', 'premise')", "returned a record of claim 'S5', registered for ['S4']"),
        (
            "r = record('S4', 'premise')\n    r.measured = float('nan')\n    return r",
            "returned a record of 'S4' with record field 'measured' must be finite, got nan",
        ),
    ],
)
def test_a_malformed_record_is_its_claims_error(body, says, install_plugin, tmp_path, capsys):
    source = RECORDS + f"\n@register('S4', name='bad.check')\ndef c(s, t):\n    {body}\n"
    module = install_plugin("bad-plugin", source)
    status, records, _ = _verify(tmp_path, "S4")
    assert status == EXIT_CLAIM_FAILED
    assert f"check 'bad.check' in {module} (package bad-plugin) {says};" in _stderr_line(capsys)
    assert [r["outcome"] for r in records] == ["error"]


def test_a_claim_id_of_another_package_is_refused_only_where_it_matters(install_plugin, tmp_path, capsys):
    install_plugin("good-plugin", GOOD)
    module = install_plugin(
        "intruder", RECORDS + "\n@register('C1', name='intruder.c1')\ndef c(s, t):\n    return []\n"
    )
    assert main(["verify", "--only", "C1", "--quiet"]) == EXIT_BAD_INPUT
    assert _stderr_line(capsys) == (
        "python -m lab: error: claim C1 is declared by two packages: checks.shazeer2017.noisy_topk "
        f"(package moe-lab) and {module} (package intruder) (a package adds checks to its own claims only)"
    )
    with pytest.raises(registry.Refusal, match="claim C1"):
        registry.checks()
    assert _verify(tmp_path, "S1")[0] == EXIT_OK


def test_two_checks_with_one_name_are_refused_naming_both_modules(install_plugin, tmp_path, capsys):
    source = RECORDS + "\n@register('{claim}', name='shared.name')\ndef c(s, t):\n    return []\n"
    first = install_plugin("plugin-a", source.format(claim="S6"))
    second = install_plugin("plugin-b", source.format(claim="S7"))
    install_plugin("good-plugin", GOOD)
    for only in ("S6", "S7"):
        assert main(["verify", "--only", only, "--quiet"]) == EXIT_BAD_INPUT
        assert _stderr_line(capsys) == (
            f"python -m lab: error: two checks are named 'shared.name': {first} (package plugin-a) "
            f"and {second} (package plugin-b)"
        )
    assert _verify(tmp_path, "S1")[0] == EXIT_OK
    assert [c.name for c in registry.checks(["C1"])] == ["checks.noisy_topk.verify_gate"]


def test_a_plugin_that_cannot_be_imported_leaves_the_others_running(install_plugin, tmp_path, capsys):
    install_plugin("good-plugin", GOOD)
    module = install_plugin("broken-plugin", "import no_such_module_anywhere\n")
    assert _verify(tmp_path, "S1")[0] == EXIT_OK
    with pytest.raises(registry.Refusal) as refused:
        registry.checks()
    assert str(refused.value) == (
        f"plugin {module!r} (package broken-plugin) cannot be imported: "
        "ModuleNotFoundError: No module named 'no_such_module_anywhere'"
    )
    assert main(["verify", "--only", "S99", "--quiet"]) == EXIT_BAD_INPUT  # S99 may be the broken one's
    assert "cannot be imported" in _stderr_line(capsys)


@pytest.mark.parametrize("report_only, outcome, status", [(False, "uncontrolled", 1), (True, "pass", 0)])
def test_a_premise_without_a_negative_control_is_uncontrolled(
    report_only, outcome, status, install_plugin, tmp_path, capsys
):
    install_plugin(
        "lonely-plugin",
        RECORDS
        + f"\n@register('S8', name='lonely.check', report_only={report_only})\n"
        + "def c(s, t):\n    return record('S8', 'premise')\n",
    )
    code, records, md = _verify(tmp_path, "S8")
    assert code == status and [r["outcome"] for r in records] == [outcome]
    assert f"| S8 | premise | s | - | 0 | 1 | - | holds | - | {outcome} |" in md.read_text()
    said = "python -m lab: claim S8 has premise records and no negative control, so they read uncontrolled"
    assert (said in _stderr_line(capsys)) != report_only


def test_a_failing_premise_without_a_control_keeps_its_outcome():
    kinds = (("premise", "holds"), ("premise", "violated"), ("report", "not-applicable"))
    records = [_record(kind, verdict) for kind, verdict in kinds]
    assert mark_uncontrolled(records, set()) == ["S9"]
    assert [r.outcome for r in records] == ["uncontrolled", "FAIL", "report"]


def _record(kind, verdict):
    rule = {"rule": "report"} if kind == "report" else {"rule": "judged", "reason": "as the test says"}
    return Record(
        claim="S9",
        key=kind,
        statement="s",
        kind=kind,
        params={},
        measured=0,
        bound=1,
        verdict=verdict,
        **rule,
    )


def test_a_plugin_renders_on_its_own_page_never_on_the_labs(install_plugin, tmp_path, capsys):
    from pathlib import Path

    from lab.docs.render import render_all

    root = Path(__file__).resolve().parents[2]
    folders = (root / "results", root / "sweeps")
    alone = render_all(*folders)
    install_plugin("good-plugin", GOOD)
    assert render_all(*folders) == alone
    pages = render_all(*folders, plugins=True)
    assert {k: v for k, v in pages.items() if k in alone} == alone
    page = pages["claims/good-plugin.md"]
    assert "## S1: (no catalogue entry)" in page and "`good.check`" in page
    assert "The package `good-plugin` ships no description of this claim." in page
    assert main(["docs", "--plugins"]) == EXIT_BAD_INPUT
    assert "--plugins needs an --out DIR other than docs" in _stderr_line(capsys)


DESCRIBED = (
    GOOD
    + """
from pathlib import Path

from lab.core.descriptions import load_claims, load_paper

DESCRIPTIONS = load_claims(Path(__file__).with_suffix(".toml"))
PAPER = load_paper(Path(__file__).with_name("paper.toml"))
"""
)
CLAIMS_FILE = """paper = "{paper}"

[{claim}]
title = "Balanced dispatch"
reference = "eq. (4)"
statement = "The loss is 1."
premise = "Balanced inputs."
controls = "A crowded expert."
"""
PAPER_FILE = """key = "fedus2022"
short = "Fedus et al. 2022"
cite = "Fedus, Zoph and Shazeer (2022)"
title = "Switch Transformers"
scope = "The auxiliary loss."
"""


def test_a_plugin_describing_its_paper_renders_on_that_papers_page(install_plugin, tmp_path):
    from pathlib import Path

    from lab.docs.render import render_all

    root = Path(__file__).resolve().parents[2]
    folders = (root / "results", root / "sweeps")
    alone = render_all(*folders)
    module = install_plugin("good-plugin", DESCRIBED)
    (tmp_path / f"{module}.toml").write_text(CLAIMS_FILE.format(paper="fedus2022", claim="S1"))
    (tmp_path / "paper.toml").write_text(PAPER_FILE)
    assert render_all(*folders) == alone
    pages = render_all(*folders, plugins=True)
    assert {k: v for k, v in pages.items() if k in alone} == alone
    assert "claims/good-plugin.md" not in pages
    page = pages["claims/fedus2022.md"]
    assert page.startswith(alone["claims/shazeer2017.md"].split("\n")[0])
    assert "# Claims: Fedus et al. 2022" in page and "*Switch Transformers*. The auxiliary loss." in page
    assert "## S1: Balanced dispatch" in page and "- **Statement:** The loss is 1." in page
    assert "`good.check`" in page and "No records for S1 in `results/verify.json`" in page


FINDINGS_FILE = """paper = "{paper}"

[s1-balanced]
title = "The loss is one"
records = ["S1/{key}"]
evidence = [["proven", "Σ P_i = 1"]]
text = "Measured: {{{{ record('S1', '{key}').measured | num }}}}."
"""


def _with_findings(install_plugin, tmp_path, paper: str, key: str = "premise"):
    """A plugin describing paper `paper`, claim S1, and a finding on it reading S1's record `key`; the
    committed results with S1's records added."""
    import shutil
    from pathlib import Path

    module = install_plugin(
        "good-plugin", DESCRIBED + 'FINDINGS = load_findings(Path(__file__).with_name("f.toml"))\n'
    )
    source = tmp_path / f"{module}.py"
    source.write_text(
        source.read_text().replace("load_claims, load_paper", "load_claims, load_findings, load_paper")
    )
    (tmp_path / f"{module}.toml").write_text(CLAIMS_FILE.format(paper=paper, claim="S1"))
    (tmp_path / "paper.toml").write_text(PAPER_FILE.replace("fedus2022", paper))
    (tmp_path / "f.toml").write_text(FINDINGS_FILE.format(paper=paper, key=key))
    root = Path(__file__).resolve().parents[2]
    results = tmp_path / "results"
    shutil.copytree(root / "results", results)
    _verify(tmp_path, "S1")
    data = json.loads((results / "verify.json").read_text())
    data["records"] += json.loads((tmp_path / "v.json").read_text())["records"]
    (results / "verify.json").write_text(json.dumps(data))
    return results, root / "sweeps"


def test_a_plugins_findings_render_on_its_papers_page_only(install_plugin, tmp_path):
    from lab.docs.render import render_all

    folders = _with_findings(install_plugin, tmp_path, "fedus2022")
    alone = render_all(*folders)
    assert "The loss is one" not in alone["findings.md"]
    page = render_all(*folders, plugins=True)["claims/fedus2022.md"]
    assert page.endswith(
        '\n\n## Findings\n\n<a name="s1-balanced"></a>\n\n### The loss is one\n\n'
        "Evidence: **proven** (Σ P_i = 1).\n\nMeasured: 0.\n"
    )


def test_a_plugins_finding_naming_a_key_its_results_lack_is_one_line(install_plugin, tmp_path, capsys):
    results, sweeps = _with_findings(install_plugin, tmp_path, "fedus2022", key="balanced")
    out = tmp_path / "docs"
    command = ["docs", "--plugins", "--results", str(results), "--sweeps", str(sweeps), "--out", str(out)]
    assert main(command) == EXIT_BAD_INPUT
    assert _stderr_line(capsys) == (
        "python -m lab docs: error: claims/fedus2022.md: verify results: no record of claim S1 with key "
        "'balanced'"
    )


def test_a_paper_key_the_lab_uses_is_refused_naming_both_packages(install_plugin, tmp_path, capsys):
    results, sweeps = _with_findings(install_plugin, tmp_path, "chen2022")
    out = tmp_path / "docs"
    assert (
        main(["docs", "--results", str(results), "--sweeps", str(sweeps), "--out", str(out)])
        == EXIT_BAD_INPUT
    )
    line = _stderr_line(capsys)
    assert (
        "error: two papers are named 'chen2022': checks.chen2022 (package moe-lab) and fake_plugin_" in line
    )
    assert line.endswith(" (package good-plugin)")


def test_a_description_of_another_packages_claim_is_refused_naming_both(install_plugin, tmp_path):
    module = install_plugin("intruder", DESCRIBED)
    (tmp_path / f"{module}.toml").write_text(CLAIMS_FILE.format(paper="fedus2022", claim="C1"))
    (tmp_path / "paper.toml").write_text(PAPER_FILE)
    with pytest.raises(registry.Refusal) as refused:
        registry.checks(["C1"])
    assert str(refused.value) == (
        f"two claims are named 'C1': checks.shazeer2017.noisy_topk (package moe-lab) and {module} "
        "(package intruder)"
    )


def test_a_command_of_the_labs_name_is_refused_only_where_every_command_is_needed(install_plugin):
    source = "from lab.core.registry import register_command\n\n\n@register_command('verify', 'x')\n"
    module = install_plugin("shadow", source + "def configure(parser):\n    return None\n")
    assert registry.find("command", "verify").configure.__module__ == "lab.cli.verify"
    with pytest.raises(registry.Refusal) as refused:
        registry.commands()
    assert str(refused.value) == (
        f"two commands are named 'verify': lab.cli.verify (package moe-lab) and {module} (package shadow)"
    )
