"""A task's analysis across runs (fits, medians) is computed by the sweep report and stored in it."""

from __future__ import annotations

import json
from pathlib import Path

from lab.chen2022.proof_chain import PROOF_CHAIN_FITTED, proof_chain_analysis, report_runs
from lab.cli.main import main
from lab.core.provenance import code_fingerprint, science_modules
from lab.core.tasks import register_task
from lab.sweeps.sweep import task_code
from tests.rounding import rounded

RESULTS = Path(__file__).resolve().parents[2] / "results"


def _fits(values, results):
    return {"total": sum(r["value"] for r in results), "runs": len(results)}


@register_task("test-analysis", defaults={"x": 1, "seed": 0}, analysis=_fits)
def _task(params):
    return {"value": params["x"] * 10 + params["seed"]}


def _report(tmp_path: Path, task: str, grid: str, params: str = "") -> dict:
    """Run a small sweep of `task` over `grid` (TOML lines, and `params`) and read its JSON report."""
    spec = tmp_path / "s.toml"
    store = (tmp_path / "s.sqlite").as_posix()
    spec.write_text(f'[sweep]\ntask = "{task}"\nstore = "{store}"\n[params]\n{params}\n[grid]\n{grid}\n')
    assert main(["sweep", "run", str(spec), "--sequential", "--quiet"]) == 0
    assert main(["sweep", "report", str(spec), "--out", str(tmp_path / "out")]) == 0
    return json.loads((tmp_path / "out" / "s.json").read_text())


def test_a_reports_analysis_is_the_tasks_analysis_of_its_finished_runs(tmp_path, registered):
    registered(_task)
    report = _report(tmp_path, "test-analysis", "x = [1, 2]\nseed = [0, 1]")
    assert report["analysis"] == {"total": 10 + 11 + 20 + 21, "runs": 4}


def test_the_committed_proof_chain_analysis_is_the_writers_over_its_runs():
    """The fits, counts, stage schedule, E.3's ratio and routing trend the committed report stores are
    `proof_chain_analysis` of its own runs."""
    report = json.loads((RESULTS / "proof_chain" / "proof_chain.json").read_text())
    runs = report_runs(report)
    computed = json.loads(json.dumps(proof_chain_analysis({}, runs)))
    assert rounded(report["analysis"]) == rounded(computed)
    assert set(report["analysis"]["fits"]) == set(PROOF_CHAIN_FITTED)
    fit = report["analysis"]["fits"]["h_inf_T1"]
    assert fit["interval"][0] < fit["slope"] < fit["interval"][1]
    assert len(fit["median"]) == len(report["analysis"]["d"]) == len({r["d"] for r in runs})


def test_a_task_without_an_analysis_reports_none(tmp_path):
    assert "analysis" not in _report(tmp_path, "routing-probability", "M = [2]\nseed = [0]")


def test_the_proof_chain_analysis_of_a_reports_runs_is_the_one_it_stores(tmp_path):
    """The writer's analysis, of the runs' full results, equals the analysis of the runs the report keeps."""
    report = _report(tmp_path, "proof-chain", "d = [20, 30, 40]", "steps = 5")
    stored = report["analysis"]
    assert {"counts", "schedule", "e3_ratio", "routing"} <= set(stored)
    assert json.loads(json.dumps(proof_chain_analysis({}, report_runs(report)))) == stored


def test_the_proof_chain_runs_are_stamped_by_their_science_not_by_the_reports_code():
    """Editing the report's table, analysis, figure or schema in lab.chen2022.proof_chain stales no run."""
    assert task_code("proof-chain") == code_fingerprint("lab.chen2022.proof_monitors")
    assert "lab.chen2022.proof_chain" not in science_modules("lab.chen2022.proof_monitors")
