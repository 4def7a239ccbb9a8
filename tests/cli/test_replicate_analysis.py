"""The statistics the replication findings and pages show are written by `replicate` (each summary's, and
the analysis over several beside them); the docs only read them, and refuse a folder that lacks them."""

import json
import shutil
from pathlib import Path

import pytest

from lab.chen2022.replicate import is_summary, write_analysis
from lab.chen2022.replicate_analysis import ANALYSIS_NAME, replicate_analysis
from lab.chen2022.replicate_report import summary_statistics
from lab.docs.results import ResultsError, load_results
from tests.rounding import rounded

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "results"


@pytest.fixture
def results(tmp_path):
    folder = tmp_path / "results"
    shutil.copytree(RESULTS, folder, ignore=shutil.ignore_patterns("runs", "*.sqlite"))
    return folder


def _summaries(folder: Path) -> dict[str, dict]:
    found = {p.name: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}
    return {name: payload for name, payload in found.items() if is_summary(payload)}


def test_the_committed_statistics_are_those_of_the_committed_runs():
    summaries = _summaries(RESULTS / "replicate")
    for name, payload in summaries.items():
        stored = {key: payload[key] for key in summary_statistics("table1", [])}
        computed = json.loads(json.dumps(summary_statistics(payload["config"]["target"], payload["runs"])))
        assert rounded(stored) == rounded(computed), name
    analysis = json.loads((RESULTS / "replicate" / ANALYSIS_NAME).read_text())
    written = {k: v for k, v in analysis.items() if k not in ("format", "summaries")}
    assert rounded(written) == rounded(json.loads(json.dumps(replicate_analysis(summaries))))


def test_an_analysis_of_other_summaries_is_refused_by_name(results):
    summary = results / "replicate" / "table3_float32.json"
    summary.write_text(summary.read_text().replace('"seed": 0', '"seed": 0 ', 1))
    refused = rf"{ANALYSIS_NAME}: computed from other summaries than its folder holds \(table3_float32.json\)"
    with pytest.raises(ResultsError, match=refused):
        load_results(results)
    write_analysis(results / "replicate")  # the replicate command rewrites it with every summary
    assert load_results(results).analysis is not None


def test_summaries_without_their_analysis_are_refused_by_name(results):
    (results / "replicate" / ANALYSIS_NAME).unlink()
    with pytest.raises(ResultsError, match=rf"{ANALYSIS_NAME}: no such file"):
        load_results(results)
