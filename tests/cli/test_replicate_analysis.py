"""The statistics the replication findings and pages show are written by `replicate` (each summary's, and
the analysis over several beside them); the docs only read them, and refuse a folder that lacks them."""

import json
import shutil
from pathlib import Path

import numpy as np
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


def test_a_cell_against_the_paper_is_scipys_welch_test_and_f_interval():
    from scipy import stats

    from lab.chen2022.replicate_analysis import AGREEMENT_LEVEL, PAPER_RUNS, cell_agreement

    lab = [96.0, 99.5, 99.7, 88.0, 99.9, 99.6, 97.0, 99.8, 99.1, 98.2]
    row = cell_agreement(lab, 99.46, 0.55)
    welch = stats.ttest_ind_from_stats(
        np.mean(lab), np.std(lab, ddof=1), len(lab), 99.46, 0.55, PAPER_RUNS, equal_var=False
    )
    assert row["mean_agrees"] == (welch.pvalue > 1 - AGREEMENT_LEVEL)
    low, high = row[
        "sd_ratio_interval"
    ]  # F interval of the sd ratio: holds 1 iff the two-sided F test passes
    f = (np.std(lab, ddof=1) / 0.55) ** 2
    p = 2 * min(stats.f.cdf(f, 9, 9), stats.f.sf(f, 9, 9))
    assert row["spread_agrees"] == (p > 1 - AGREEMENT_LEVEL) == (low <= 1 <= high)
    assert not row["spread_agrees"]  # one stalled run against the paper's sd 0.55: the spread differs


def test_a_cell_without_the_papers_sd_is_a_one_sample_interval_and_no_spread_test():
    from lab.chen2022.replicate_analysis import cell_agreement

    lab = [74.5, 74.9, 75.3, 74.7, 75.1]
    near, far = cell_agreement(lab, 74.9, None), cell_agreement(lab, 76.0, None)
    assert near["mean_agrees"] and not far["mean_agrees"]
    assert near["spread_agrees"] is None and near["sd_ratio_interval"] is None


def test_the_stalled_rate_is_also_given_per_precision_since_a_seeds_two_precisions_are_twins():
    from lab.chen2022.replicate_analysis import stalled_runs

    summaries = _summaries(RESULTS / "replicate")
    stalled = stalled_runs(summaries)
    by_dtype = stalled["by_dtype"]
    assert set(by_dtype) == {"float32", "float64"}
    assert sum(d["runs"] for d in by_dtype.values()) == stalled["runs"]
    assert sum(d["stalled"] for d in by_dtype.values()) == stalled["stalled"]
