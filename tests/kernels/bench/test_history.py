"""`lab.kernels.bench.history`: the units read from pytest-benchmark files, the history file and its schema,
the first regression of each unit, and the figure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.core.errors import InputError
from lab.core.io import write_json_atomic
from lab.core.schema import ResultsError
from lab.kernels.bench import history as h

STEP = "benchmarks/test_bench_structured.py::test_algorithm1_step[numba-structured]"
NOISE = "benchmarks/test_bench_structured.py::test_noise_patch_kernel[numba]"
COMMITS = [
    {"hash": "aaaaaaa", "date": "2025-01-01", "subject": "first"},
    {"hash": "bbbbbbb", "date": "2025-01-02", "subject": "a small change"},
    {"hash": "ccccccc", "date": "2025-01-03", "subject": "the planted regression"},
]
MACHINE = {"cpu": "Fake CPU", "cores": 2, "python": "3.11"}


def _run(path: Path, fraction: float, ratio: float) -> Path:
    """A pytest-benchmark file with the fields `record_rate` and the structured benchmarks write."""
    extra = {"kernel": "algorithm1_step_structured_numba", "flops": 1e9, "gflops": 3.0, "dgemm_gflops": 6.0,
             "fraction_of_dgemm": fraction, "ratio_to_dense": ratio, "ratio_to_dense_ms": [1.0, 4.0],
             "flop_ratio_to_dense": 0.1, "expert_pass_ms": 0.5, "threads": 2}  # fmt: skip
    noise = {"kernel": "noise_patch_step_numba", "fraction_of_dgemm": 0.6, "time_to_dgemm": 1.5,
             "fraction_of_dgemm_same_shape_per_core": 0.4, "gflops_per_core": 2.0}  # fmt: skip
    run = {
        "machine_info": {"cpu": {"brand_raw": "cpu"}},
        "benchmarks": [
            {"name": "n", "fullname": STEP, "group": "g", "stats": {"min": 1e-3}, "extra_info": extra},
            {"name": "m", "fullname": NOISE, "group": "g", "stats": {"min": 2e-3}, "extra_info": noise},
        ],
    }
    path.write_text(json.dumps(run))
    return path


def _history(tmp_path: Path, fractions, ratios, failed=()) -> dict:
    measured = [
        "pytest exit status 1: FAILED x" if i in failed else h.units(_run(tmp_path / f"{i}.json", f, r))
        for i, (f, r) in enumerate(zip(fractions, ratios, strict=True))
    ]
    return h.history(COMMITS[: len(measured)], measured, MACHINE, "2025-02-01", "structured and numba")


def test_only_ratios_taken_within_a_run_are_units(tmp_path):
    found = h.units(_run(tmp_path / "run.json", 0.5, 0.25))
    assert found == {
        (STEP, "fraction_of_dgemm"): 0.5,
        (STEP, "ratio_to_dense"): 0.25,
        (STEP, "flop_ratio_to_dense"): 0.1,
        (NOISE, "fraction_of_dgemm"): 0.6,
        (NOISE, "time_to_dgemm"): 1.5,
        (NOISE, "fraction_of_dgemm_same_shape_per_core"): 0.4,
    }
    assert [h.better(u) for u in ("fraction_of_dgemm", "ratio_to_dense", "time_to_dgemm", "gflops")] == [
        "higher", "lower", "lower", None
    ]  # fmt: skip


def test_a_damaged_benchmark_file_is_named(tmp_path):
    path = tmp_path / "run.json"
    path.write_text('{"benchmarks": [{"name": "no full name"}]}')
    with pytest.raises(InputError, match=f"^{path}: benchmark 0 has no full name$"):
        h.units(path)
    path.write_text("{")
    with pytest.raises(InputError, match=f"^{path}: not a readable pytest-benchmark file"):
        h.units(path)


def test_a_planted_drop_of_40_percent_is_named_at_its_commit(tmp_path):
    data = _history(tmp_path, [0.5, 0.48, 0.288], [0.25, 0.26, 0.27])
    found = h.regressions(data)
    assert found == [h.Regression(STEP, "fraction_of_dgemm", 2, 0.48, 0.288)]
    lines = h.report(data, found)
    assert lines == [
        f"regression: {STEP} fraction_of_dgemm 0.48 → 0.288 (-40.0 %) at ccccccc the planted regression",
        "1 regression beyond 20 % across 3 commits (3 measured), 6 series",
    ]


def test_a_ratio_that_rises_beyond_the_threshold_is_a_regression_and_one_that_falls_is_not(tmp_path):
    data = _history(tmp_path, [0.5, 0.5, 0.5], [0.25, 0.1, 0.125])
    assert h.regressions(data) == [h.Regression(STEP, "ratio_to_dense", 2, 0.1, 0.125)]
    assert h.regressions(data, threshold=0.3) == []


def test_the_reference_is_the_previous_commit_that_measured_the_unit(tmp_path):
    data = _history(tmp_path, [0.5, 0.1, 0.45], [0.25, 0.25, 0.25], failed={1})
    assert data["commits"][1]["failed"] == "pytest exit status 1: FAILED x"
    assert h.regressions(data) == []
    lines = h.report(data, [])
    assert lines == [
        "bbbbbbb not measured: pytest exit status 1: FAILED x",
        "no regressions beyond 20 % across 3 commits (2 measured), 6 series",
    ]


def test_only_the_first_regression_of_a_unit_is_reported(tmp_path):
    data = _history(tmp_path, [0.5, 0.3, 0.1], [0.25, 0.25, 0.25])
    assert h.regressions(data) == [h.Regression(STEP, "fraction_of_dgemm", 1, 0.5, 0.3)]


def test_the_history_file_reads_back_and_a_damaged_one_is_named_in_one_line(tmp_path):
    data = _history(tmp_path, [0.5, 0.48, 0.288], [0.25, 0.26, 0.27])
    path = write_json_atomic(tmp_path / "history.json", data)
    assert h.load_history(path) == data
    series = data["series"][0] | {"values": [0.5, None]}
    write_json_atomic(path, data | {"series": [series]})
    with pytest.raises(ResultsError, match=f"^{path}: series 0: 2 values for 3 commits$"):
        h.load_history(path)
    write_json_atomic(path, data | {"series": [data["series"][0] | {"values": [0.5, "fast", None]}]})
    with pytest.raises(
        ResultsError, match="series 0: field 'values' must be a list of finite numbers or nulls"
    ):
        h.load_history(path)
    write_json_atomic(path, data | {"format": "something else"})
    with pytest.raises(ResultsError, match="not a benchmark history"):
        h.load_history(path)


def test_the_figure_is_drawn(tmp_path):
    pytest.importorskip("matplotlib")
    data = _history(tmp_path, [0.5, 0.1, 0.288], [0.25, 0.26, 0.27], failed={1})
    path = h.draw_figure(data, h.regressions(data), tmp_path / "history.png")
    assert path.read_bytes().startswith(b"\x89PNG")


def test_a_long_subject_is_cut_in_the_report_and_kept_in_the_file(tmp_path):
    data = _history(tmp_path, [0.5, 0.48, 0.288], [0.25, 0.26, 0.27])
    data["commits"][2]["subject"] = "x" * 100
    assert h.report(data, h.regressions(data))[0].endswith(f"at ccccccc {'x' * 71}…")


def test_the_largest_move_skips_unmeasured_commits_and_reads_both_ways():
    data = {"series": [{"values": [1.0, None, 1.5, 1.2]}, {"values": [2.0, 1.0, None, None]}]}
    assert h.largest_move(data) == pytest.approx(0.5)  # 1.0 → 1.5 over the gap; 2.0 → 1.0 is −50 %
    assert h.largest_move({"series": [{"values": [None, 3.0]}]}) is None
