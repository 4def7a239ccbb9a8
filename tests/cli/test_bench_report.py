"""The benchmark regression report reads pytest-benchmark's saved runs."""

import json

from lab.cli.bench_report import report, saved_runs
from lab.cli.main import main


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
