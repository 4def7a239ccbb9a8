"""The mutation driver's pure parts: groups name real files, a seeded uniform draw, scores and CIs."""

import importlib
import json
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from lab.core.stats import clopper_pearson

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the driver's modules import each other as tests.mutation.*
    sys.path.insert(0, str(ROOT))
sampling = importlib.import_module("tests.mutation.sampling")
report = importlib.import_module("tests.mutation.report")

IDS = [sampling.mutant_id("lab/x.py", f"core/Op{i % 7}", i) for i in range(60)]


def test_every_group_names_existing_modules_and_tests():
    groups = sampling.load_groups()
    names = {"data", "model", "routing", "patchwise", "training", "gating", "makkuva", "kernels"}
    names |= {"structured"}
    assert set(groups) == names
    assert sampling.missing_paths(groups) == []
    for group in groups.values():
        assert all(m.startswith("lab/") and m.endswith(".py") for m in group.modules)
        assert all(t.startswith("tests/") for t in group.tests)


def test_every_kernel_module_is_in_a_group():
    grouped = {m for g in sampling.load_groups().values() for m in g.modules}
    kernels = {p.relative_to(ROOT).as_posix() for p in (ROOT / "lab" / "kernels").glob("*.py")}
    assert sorted(kernels - grouped - {"lab/kernels/__init__.py"}) == []


def test_no_module_is_in_two_groups():
    modules = Counter(m for g in sampling.load_groups().values() for m in g.modules)
    assert [m for m, n in modules.items() if n > 1] == []


def test_a_malformed_group_is_refused(tmp_path):
    path = tmp_path / "groups.toml"
    path.write_text('[groups.x]\nmodules = ["lab/a.py"]\ntests = []\n')
    with pytest.raises(ValueError, match="group 'x'"):
        sampling.load_groups(path)


def test_the_draw_is_seeded_sorted_and_without_replacement():
    a = sampling.draw_sample(IDS, 10, seed=2026, group="model")
    assert a == sampling.draw_sample(list(reversed(IDS)), 10, seed=2026, group="model")
    assert a == sorted(set(a)) and len(a) == 10 and set(a) <= set(IDS)
    assert a != sampling.draw_sample(IDS, 10, seed=2027, group="model")
    assert a != sampling.draw_sample(IDS, 10, seed=2026, group="data")
    assert sampling.draw_sample(IDS, 100, seed=0, group="model") == sorted(IDS)


def test_the_draw_is_uniform():
    # Each of 60 mutants is drawn with probability 10/60 per seed: over 3000 seeds the counts are
    # Binomial(3000, 1/6) (mean 500, sd 20.4); a chi-square statistic on 59 degrees of freedom stays
    # below its 0.999 quantile (95.7) unless the draw favours some mutants.
    counts = Counter(m for seed in range(3000) for m in sampling.draw_sample(IDS, 10, seed, "g"))
    expected = 3000 * 10 / 60
    chi2 = sum((counts[m] - expected) ** 2 / expected for m in IDS)
    assert chi2 < 95.7


def test_a_smaller_draw_is_part_of_a_larger_one():
    # A run whose sample was cut short keeps a seeded uniform sample: the draw of n is in the draw of N.
    ids = [sampling.mutant_id("lab/x.py", "core/Op", i) for i in range(500)]
    for seed in range(20):
        small, large = (sampling.draw_sample(ids, n, seed, "g") for n in (6, 30))
        assert set(small) <= set(large)


def test_duplicate_ids_are_refused():
    with pytest.raises(ValueError, match="unique"):
        sampling.draw_sample([*IDS, IDS[0]], 5, seed=0, group="g")


def test_split_deals_every_mutant_to_exactly_one_worker():
    parts = sampling.split(IDS[:7], 2)
    assert parts == [IDS[0:7:2], IDS[1:7:2]]
    assert sorted(m for part in sampling.split(IDS, 3) for m in part) == sorted(IDS)


def test_score_fields_counts_and_clopper_pearson_interval():
    outcomes = {"a": "killed", "b": "timeout", "c": "survived", "d": "survived", "e": "killed"}
    entry = sampling.score("model", 426, outcomes, equivalent={"d"})
    assert tuple(entry) == sampling.SUMMARY_FIELDS
    assert entry | {"ci_low": 0, "ci_high": 0} == {
        "group": "model",
        "mutants_total": 426,
        "sampled": 5,
        "killed": 3,
        "survived": 1,
        "equivalent": 1,
        "timeout": 1,
        "kill_rate": 0.75,
        "ci_low": 0,
        "ci_high": 0,
    }
    assert (entry["ci_low"], entry["ci_high"]) == clopper_pearson(3, 4, level=0.95)
    assert entry["ci_low"] == pytest.approx(0.194121, abs=1e-6)  # the textbook 95 % interval of 3/4


def test_score_refuses_a_killed_equivalent_and_unknown_outcomes():
    with pytest.raises(ValueError, match="cannot be equivalent"):
        sampling.score("g", 3, {"a": "killed"}, equivalent={"a"})
    with pytest.raises(ValueError, match="unknown"):
        sampling.score("g", 3, {"a": "maybe"}, equivalent=set())


def test_answers_file_parses_and_names_each_mutant_once():
    answers = sampling.load_answers()
    assert set(answers) == {"equivalent", "answered", "unobservable"}
    raw = tomllib.loads(sampling.ANSWERS_FILE.read_text())
    ids = [e["id"] for kind in answers for e in raw.get(kind, [])]
    assert len(ids) == len(set(ids))


def _run(outcomes: dict[str, str], label: str) -> dict:
    mutants = [
        {
            "id": m,
            "group": "model",
            "module": "lab/chen2022/model.py",
            "line": 1,
            "operator": "core/X",
            "outcome": o,
            "seconds": 2.0,
            "first_failure": "tests/t.py::test_x - AssertionError" if o == "killed" else "",
            "diff": f"-{m}\n+{m}'",
        }
        for m, o in outcomes.items()
    ]
    return {
        "label": label,
        "commit": "c" * 40,
        "seed": 1,
        "sample_sizes": {"model": 3},
        "workers": 2,
        "tool": "cosmic-ray",
        "tool_version": "8.7.0",
        "date": "2026-01-01",
        "wall_seconds": 10.0,
        "mutant_seconds": 8.0,
        "budget_factor": 3,
        "budget_slack_seconds": 60.0,
        "isolation": {"numba_cache_in_fresh_dir": True},
        "groups": {"model": {"baseline_seconds": 3.0, "total": 9, "sample": sorted(outcomes), "budget": 69}},
        "mutants": mutants,
    }


def test_summary_before_and_after_a_rerun(tmp_path):
    before = _run({"m1": "killed", "m2": "survived", "m3": "survived"}, "before")
    after = _run({"m2": "killed", "m3": "survived"}, "after")
    (tmp_path / "b.json").write_text(json.dumps(before))
    (tmp_path / "a.json").write_text(json.dumps(after))
    report.write(tmp_path / "b.json", tmp_path / "a.json", tmp_path / "out")
    data = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [tuple(g) for g in data["groups"]] == [sampling.SUMMARY_FIELDS]
    assert (data["before"][0]["killed"], data["before"][0]["survived"]) == (1, 2)
    assert (data["groups"][0]["killed"], data["groups"][0]["survived"]) == (2, 1)
    rows = json.loads((tmp_path / "out" / "mutants.json").read_text())["mutants"]
    assert {r["id"]: r["outcome_after"] for r in rows} == {"m1": "killed", "m2": "killed", "m3": "survived"}
    assert data["unanswered"] == ["m2", "m3"] and "diff" in rows[1] and "diff" not in rows[0]


def test_the_judge_and_driver_are_not_collected_and_import_without_running():
    names = {p.name for p in (ROOT / "tests" / "mutation").glob("*.py")}
    assert {n for n in names if n.startswith("test_")} == {"test_driver.py"}
    out = subprocess.run(
        [sys.executable, "-m", "tests.mutation.driver", "--help"], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0 and "run" in out.stdout and "rerun" in out.stdout


def test_the_docs_loader_expects_the_fields_the_report_writes():
    from lab.docs import results

    assert results.MUTATION_FIELDS == sampling.SUMMARY_FIELDS
    assert results.MUTATION_FORMAT == report.FORMAT


def _in_group(run: dict, group: str, commit: str) -> dict:
    """`run` with its one group renamed to `group` and its commit set (for the carry test)."""
    mutants = [r | {"group": group} for r in run["mutants"]]
    return run | {"commit": commit, "groups": {group: run["groups"]["model"]}, "mutants": mutants}


def test_groups_an_earlier_run_sampled_are_carried_with_their_commit(tmp_path):
    new = _run({"m1": "killed", "m2": "survived"}, "before")
    old_model = _in_group(_run({"m1": "survived"}, "before"), "model", "a" * 40)
    old = old_model | {
        "groups": old_model["groups"] | _in_group(new, "kernels", "a" * 40)["groups"],
        "mutants": old_model["mutants"]
        + _in_group(_run({"k1": "killed"}, "before"), "kernels", "a")["mutants"],
        "sample_sizes": {"model": 1, "kernels": 1},
    }
    old_after = _in_group(_run({"k1": "killed"}, "after"), "kernels", "b" * 40)
    for name, run in (("b", new), ("old", old), ("old_after", old_after)):
        (tmp_path / f"{name}.json").write_text(json.dumps(run))
    report.write(
        tmp_path / "b.json", None, tmp_path / "out", (tmp_path / "old.json", tmp_path / "old_after.json")
    )
    data = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [g["group"] for g in data["groups"]] == ["model", "kernels"]
    assert data["group_commits"] == {"model": "c" * 40, "kernels": "a" * 40}
    assert data["sample_sizes"] == {"model": 3, "kernels": 1}
    rows = json.loads((tmp_path / "out" / "mutants.json").read_text())["mutants"]
    # the older run's model mutant m1 (same id, other commit) is not mixed into this run's model group
    assert [(r["group"], r["id"], r["outcome_after"]) for r in rows] == [
        ("model", "m1", "killed"),
        ("model", "m2", "survived"),
        ("kernels", "k1", "killed"),
    ]
