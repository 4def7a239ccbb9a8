"""The benchmark report and summary read pytest-benchmark's saved runs (the one place that does)."""

import json
from pathlib import Path

import pytest

from lab.cli.main import main
from lab.docs.results import load_bench
from lab.kernels.bench.report import kernel_rates, recomputed, report, saved_runs, statistics, summary
from tests.rounding import rounded


def _run(numba_ms, numpy_ms):
    def bench(name, ms, extra):
        return {
            "name": name,
            "fullname": f"b.py::{name}",
            "group": "routed_forward",
            "stats": {"min": ms / 1e3},
            "extra_info": extra,
        }

    return {
        "datetime": "today",
        "machine_info": {"cpu": {"brand_raw": "cpu"}},
        "benchmarks": [
            bench(
                "test_routed_forward[numba]", numba_ms, {"kernel": "routed_forward", "fraction_of_dgemm": 0.5}
            ),
            bench("test_routed_forward[numpy]", numpy_ms, {"kernel": "routed_forward"}),
        ],
    }


def test_report_compares_with_previous_and_twin(tmp_path, capsys):
    folder = tmp_path / "Linux-CPython"
    folder.mkdir()
    (folder / "0001_a.json").write_text(json.dumps(_run(4.0, 400.0)))
    (folder / "0002_b.json").write_text(json.dumps(_run(5.0, 400.0)))
    assert [p.name for p in saved_runs(tmp_path)] == ["0001_a.json", "0002_b.json"]
    text = report(_run(5.0, 400.0), _run(4.0, 400.0))
    assert "+25.0 %" in text and "80.0×" in text and "50 %" in text
    out = tmp_path / "bench.md"
    assert main(["bench-report", "--storage", str(tmp_path), "--out", str(out)]) == 0
    assert out.read_text() == text


def test_no_saved_runs_is_a_usage_error(tmp_path, capsys):
    assert main(["bench-report", "--storage", str(tmp_path)]) == 2
    assert "no saved benchmark runs" in capsys.readouterr().err


def test_summary_is_the_small_json_the_docs_render(tmp_path):
    folder = tmp_path / "Linux-CPython"
    folder.mkdir()
    run = _run(4.0, 400.0)
    run["benchmarks"][0]["stats"] |= {"median": 0.005, "rounds": 9}
    run["benchmarks"][0]["extra_info"] |= {"gflops": 25.0, "dgemm_gflops": 50.0, "flops": 1e8}
    run["machine_info"] |= {"node": "my-laptop", "python_version": "3.11.7", "system": "Linux"}
    (folder / "0001_a.json").write_text(json.dumps(run))
    out = tmp_path / "results" / "bench" / "summary.json"
    assert main(["bench-report", "--storage", str(tmp_path), "--summary", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data == summary(run, "0001_a.json")
    assert data["source"] == "0001_a.json" and data["dgemm_gflops"] == 50.0
    assert data["machine"] == {
        "cpu": "cpu",
        "arch": None,
        "cores": None,
        "system": "Linux",
        "python": "3.11.7",
    }
    assert "my-laptop" not in out.read_text()  # the host name stays out of the repository
    numba, numpy = data["benchmarks"]
    assert numba["min_ms"] == 4.0 and numba["median_ms"] == 5.0 and numba["rounds"] == 9
    assert numba["speedup_vs_numpy_twin"] == 100.0 and numba["fraction_of_dgemm"] == 0.5
    assert numpy["speedup_vs_numpy_twin"] is None and numpy["median_ms"] is None
    assert load_bench(out) == data  # what the docs accept


def test_summary_keeps_the_allowed_measures_that_are_plain_numbers(tmp_path):
    run = _run(2.0, 40.0)
    run["benchmarks"][0]["extra_info"] |= {
        "ratio_to_dense": 0.25,
        "ratio_to_dense_ms": [2.0, 8.0],  # a list, not a measure
        "threads": 2,
        "gflops_per_core": 12.5,
        "time_to_dgemm": float("nan"),  # not finite: left out
        "fraction_of_dgemm_same_shape_per_core": True,  # a bool is no number
        "note": 1.0,  # not on the allow-list
    }
    numba, numpy = summary(run, "0001_a.json")["benchmarks"]
    assert numba["measures"] == {"ratio_to_dense": 0.25, "gflops_per_core": 12.5, "threads": 2}
    assert "measures" not in numpy  # none found: no key
    out = tmp_path / "summary.json"
    out.write_text(json.dumps(summary(run, "0001_a.json")))
    assert load_bench(out)["benchmarks"][0]["measures"]["threads"] == 2


def test_a_damaged_saved_run_is_one_line_naming_it(tmp_path, capsys):
    folder = tmp_path / "Linux-CPython"
    folder.mkdir()
    (folder / "0001_a.json").write_text("{")
    assert main(["bench-report", "--storage", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert (
        "0001_a.json" in err and "not a readable pytest-benchmark file" in err and len(err.splitlines()) == 1
    )


def test_the_committed_statistics_are_the_writers_over_the_committed_benchmarks():
    """The summary stores `statistics` of its benchmarks; the committed one's are the writer's function of
    its own benchmarks."""
    rates = summary(_run(4.0, 400.0), "0001_a.json")["statistics"]["kernel_rates"]
    assert rates == {"fractions": [["routed_forward", 0.5]], "median": 0.5, "rounds": None}
    committed = json.loads((Path(__file__).resolve().parents[3] / "results/bench/summary.json").read_text())
    computed = json.loads(json.dumps(statistics(committed["benchmarks"])))
    assert rounded(committed["statistics"]) == rounded(computed)
    step = committed["statistics"]["algorithm1_step"]
    split = step["structured"]
    assert split["expert_pass"] + split["rest"] == pytest.approx(split["ratio_to_dense"])
    assert step["speedup_vs_numpy_twin"] > 1


def _router_run():
    """A kernel and its NumPy twin parametrised as pytest ids them, `[router_logits-numba]` and
    `[router_logits-numpy]`: one group, one kernel name."""

    def bench(backend, ms, fraction, rounds):
        return {
            "name": f"test_router_products[router_logits-{backend}]",
            "fullname": f"b.py::test_router_products[router_logits-{backend}]",
            "group": "router_logits",
            "stats": {"min": ms / 1e3, "rounds": rounds},
            "extra_info": {"kernel": "router_logits", "fraction_of_dgemm": fraction},
        }

    return {"benchmarks": [bench("numba", 1.0, 2.0, 40), bench("numpy", 4.0, 0.5, 7)]}


def test_a_twin_named_with_its_kernel_is_left_out_of_the_kernel_rates():
    """`[router_logits-numpy]` is a twin: its rate must not overwrite the Numba kernel's (nor its rounds
    enter the range of the kernels listed), and it is the Numba kernel's twin for the speed-up."""
    data = summary(_router_run(), "0001_a.json")
    rates = data["statistics"]["kernel_rates"]
    assert rates == {"fractions": [["router_logits", 2.0]], "median": 2.0, "rounds": [40, 40]}
    numba, numpy = data["benchmarks"]
    assert numba["speedup_vs_numpy_twin"] == 4.0 and numpy["speedup_vs_numpy_twin"] is None


def test_twins_pair_by_their_other_parametrisation_ids():
    dense, structured = (
        {"name": f"test_step[numba-{path}]", "group": "step", "kernel": f"step_{path}", "min_ms": ms}
        for path, ms in (("dense", 2.0), ("structured", 1.0))
    )
    twins = [
        {"name": f"test_step[numpy-{path}]", "group": "step", "kernel": f"step_{path}_numpy", "min_ms": ms}
        for path, ms in (("dense", 20.0), ("structured", 30.0))
    ]
    data = recomputed({"benchmarks": [dense, structured, *twins], "statistics": {}, "targets": []})
    assert [b["speedup_vs_numpy_twin"] for b in data["benchmarks"]] == [10.0, 30.0, None, None]
    assert kernel_rates(data["benchmarks"])["fractions"] == []


def test_recompute_rewrites_a_summarys_derived_fields_from_its_own_benchmarks(tmp_path):
    written = summary(_router_run(), "0001_a.json")
    stale = written | {
        "statistics": {"kernel_rates": {"fractions": [["router_logits", 0.5]], "median": 0.5}},
        "benchmarks": [b | {"speedup_vs_numpy_twin": None} for b in written["benchmarks"]],
    }
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(stale))
    assert main(["bench-report", "--recompute", str(path)]) == 0
    assert json.loads(path.read_text()) == json.loads(json.dumps(written))
    assert load_bench(path) == written
