"""The statistics the replication findings and pages show are written by `replicate` (each summary's, and
the analysis over several beside them); the docs read them, and compute them from the runs only for
summaries written before (the fallback): both give the same pages."""

import json
import shutil
from pathlib import Path

import pytest

from lab.chen2022.replicate import is_summary, summary_text, write_analysis
from lab.chen2022.replicate_analysis import ANALYSIS_NAME
from lab.chen2022.replicate_report import summary_statistics
from lab.docs.render import render_all
from lab.docs.results import ResultsError, load_results

REPO = Path(__file__).resolve().parents[2]
RESULTS, SWEEPS = REPO / "results", REPO / "sweeps"
PAGES = ("findings.md", "replications.md")


@pytest.fixture
def results(tmp_path):
    folder = tmp_path / "results"
    shutil.copytree(RESULTS, folder, ignore=shutil.ignore_patterns("runs", "*.sqlite", ANALYSIS_NAME))
    return folder


def _rewrite_summaries(folder: Path) -> None:
    """Each summary as the writer now writes it, its statistics stored beside its runs (no training)."""
    for path in sorted(folder.glob("*.json")):
        payload = json.loads(path.read_text())
        if is_summary(payload):
            stored = summary_statistics(payload["config"]["target"], payload["runs"])
            head = {k: v for k, v in payload.items() if k not in ("versions", "runs")}
            path.write_text(summary_text(head | stored | {k: payload[k] for k in ("versions", "runs")}))


def test_the_written_statistics_and_the_fallback_render_the_same_pages(results):
    fallback = render_all(results, SWEEPS)  # no summary stores its statistics, no analysis
    _rewrite_summaries(results / "replicate")
    write_analysis(results / "replicate")
    assert {r.analysis is not None for r in load_results(results).replications} == {True}
    written = render_all(results, SWEEPS)
    assert {page: written[page] for page in PAGES} == {page: fallback[page] for page in PAGES}
    assert 'name="rounding"' in written["findings.md"]  # the committed float32 files are paired


def test_an_analysis_of_other_summaries_is_refused_by_name(results):
    write_analysis(results / "replicate")
    summary = results / "replicate" / "table3_float32.json"
    summary.write_text(summary.read_text().replace('"seed": 0', '"seed": 0 ', 1))
    refused = rf"{ANALYSIS_NAME}: computed from other summaries than its folder holds \(table3_float32.json\)"
    with pytest.raises(ResultsError, match=refused):
        load_results(results)
    write_analysis(results / "replicate")  # the replicate command rewrites it with every summary
    assert load_results(results).replications[0].analysis is not None
