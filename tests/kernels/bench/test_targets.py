"""The performance targets of the structured path load from `lab/kernels/bench/targets.toml`, and the
summary's writer judges them against its benchmarks (`judged`)."""

import json
from pathlib import Path

import pytest

from lab.kernels.bench.targets import BENCH_TARGETS, judged, load_targets
from tests.rounding import rounded

STEP = "test_algorithm1_step[numba-structured]"


def test_a_bench_target_file_with_a_bad_target_is_one_line_naming_the_file_and_the_target(tmp_path):
    assert BENCH_TARGETS[1].name == "Algorithm 1 step, structured time"  # the committed targets load
    path = tmp_path / "targets.toml"
    entry = '[[target]]\nname = "t"\npattern = "b"\nmeasure = "min_ms"\nthreshold = 1.0\nunit = "ms"\n'
    path.write_text(entry + 'comparison = "<"\ndescription = "d"\n')
    with pytest.raises(ValueError, match=r"^targets\.toml: target 't': comparison must be ≤ or ≥, got '<'$"):
        load_targets(path)
    path.write_text(entry + 'comparison = "≤"\n')
    with pytest.raises(ValueError, match=r"^targets\.toml: target 't': .*'description'"):
        load_targets(path)


def test_each_target_is_judged_against_every_benchmark_it_fits_with_the_measures_beside_it():
    benches = [
        {"name": STEP, "min_ms": 2.5, "measures": {"ratio_to_dense": 0.25, "flop_ratio_to_dense": 0.2}},
        {"name": "test_single_cnn_pass[paper-structured]", "measures": {"ratio_to_dense": 0.2}},
        {"name": "test_single_cnn_pass[reference-code-structured]", "min_ms": 50.0},  # before measures
    ]
    rows = {(t["name"], t["benchmark"]): t for t in judged(benches)}
    ratio = rows["Algorithm 1 step, structured ÷ dense, against its FLOP ratio", STEP]
    assert (ratio["comparison"], ratio["threshold"], ratio["unit"], ratio["per"]) == (
        "≤",
        1.3,
        "×",
        "flop_ratio_to_dense",
    )
    assert (ratio["measured"], ratio["status"]) == (1.25, "met")  # 0.25 ÷ 0.2: a multiple of the FLOP ratio
    assert [c["measure"] for c in ratio["context"]] == ["ratio_to_dense", "flop_ratio_to_dense"]
    assert rows["Algorithm 1 step, structured time", STEP]["status"] == "met"
    cnn = "512-filter single CNN, structured ÷ dense"
    assert rows[cnn, "test_single_cnn_pass[paper-structured]"]["status"] == "met"
    missing = rows[cnn, "test_single_cnn_pass[reference-code-structured]"]
    assert (missing["measured"], missing["status"], missing["context"]) == (None, "not measured", [])
    unmatched = rows["Noise-patch kernel, fraction of DGEMM per core", None]  # no benchmark fits it
    assert (unmatched["measured"], unmatched["status"]) == (None, "not measured")
    assert len(rows) == len(BENCH_TARGETS) + 1  # the CNN target fits two benchmarks


def test_a_relative_target_is_not_measured_without_the_measure_it_is_relative_to():
    (row, *_) = judged([{"name": STEP, "measures": {"ratio_to_dense": 0.25}}])
    assert (row["measured"], row["status"]) == (None, "not measured")


def test_the_committed_targets_are_the_writers_judgment_of_the_committed_benchmarks():
    """The summary stores `targets` judged against its benchmarks; the committed ones are the writer's
    function of its own benchmarks and of `targets.toml`."""
    committed = json.loads((Path(__file__).resolve().parents[3] / "results/bench/summary.json").read_text())
    computed = json.loads(json.dumps(judged(committed["benchmarks"])))
    assert rounded(committed["targets"]) == rounded(computed)
