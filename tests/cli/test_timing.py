"""`replicate --timing`: the record of an invocation, and how the performance page renders it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.chen2022 import replicate as R
from lab.chen2022.arithmetic_floor import run_flops
from lab.cli.main import main
from lab.docs.results import BenchSummary, Replication, Results, ResultsError, load_timing
from lab.docs.timing_section import floor_minutes, timing_section


@pytest.fixture
def short_runs(monkeypatch):
    """Every Chen et al. run of this test 12 steps long."""
    expand = R.expand
    monkeypatch.setattr(R, "expand", lambda *a, **k: [c | {"steps": 12} for c in expand(*a, **k)])


def _replicate(out: Path, timing: Path) -> int:
    argv = ["replicate", "table1", "--tier", "quick", "--settings", "1", "--seeds", "1", "--quiet"]
    return main([*argv, "--out", str(out), "--timing", str(timing)])


def test_a_timed_replicate_records_its_time_and_the_run_files_it_found(short_runs, tmp_path, capsys):
    out, timing = tmp_path / "out", tmp_path / "timing.json"
    assert _replicate(out, timing) == 0
    first = load_timing(timing)
    trained = len(R.expand("table1", [1], 1, tier="quick"))
    assert (first["run_files_at_start"], first["run_files_at_end"]) == (0, trained)
    assert first["wall_seconds"] > 0 and first["cpu_seconds"] > 0 and first["code"] == R.run_code()
    assert first["command"].startswith("python -m lab replicate table1 --seeds 1 --seed 0 --settings 1 ")
    assert _replicate(out, timing) == 0  # again: every run reused, and the record says so
    assert load_timing(timing)["run_files_at_start"] == trained
    capsys.readouterr()


def test_a_timing_path_that_cannot_be_written_stops_before_any_run(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert _replicate(tmp_path / "out", blocker / "timing.json") == 2
    assert "--timing" in capsys.readouterr().err
    assert not (tmp_path / "out" / "runs").exists()


def test_a_damaged_timing_file_is_named(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"format": "moe-lab replicate timing 1", "command": "x"}))
    with pytest.raises(ResultsError, match=f"{path}: field 'targets' is missing"):
        load_timing(path)


def _record(**fields) -> dict:
    return {
        "targets": ["table1", "table3"],
        "variant": "paper",
        "dtype": "float64",
        "seeds": 1,
        "seed": 0,
        "settings": [1],
        "tier": "full",
        "jobs": 2,
        "cores": 2,
        "command": "python -m lab replicate table1 table3 ...",
        "run_files_at_start": 0,
        "run_files_at_end": 2,
        "wall_seconds": 600.0,
        "cpu_seconds": 1080.0,
        "code": "abc",
    } | fields


def _results(record: dict, runs: list[dict]) -> Results:
    payload = {"runs": runs, "config": {"train_sizes": [16_000, 16_000]}}
    rep = Replication(Path("table1.json"), "table1", "paper", "full", payload, record["dtype"], "structured")
    bench = BenchSummary(Path("summary.json"), {"dgemm_gflops": 50.0})
    return Results({"records": []}, [rep], [bench], timing=[("t.json", record)])


def _two_runs(code: str = "abc") -> list[dict]:
    configs = [c for c in R.expand("table1", [1], 1) if c["model"].startswith("single")][:2]
    return [c | {"steps": 100, "code": code} for c in configs]


def test_the_floor_is_the_committed_runs_flop_at_the_dgemm_rate_of_every_core():
    runs = _two_runs()
    expected = sum(run_flops(r, 16_000) for r in runs) / (50e9 * 2) / 60
    assert floor_minutes(_results(_record(), runs), _record()) == pytest.approx(expected)
    record32 = _record(dtype="float32")  # SGEMM's rate taken as twice DGEMM's
    assert floor_minutes(_results(record32, runs), record32) == pytest.approx(expected / 2)


def test_no_floor_from_runs_of_other_code_or_another_run_count():
    assert floor_minutes(_results(_record(), _two_runs("other")), _record()) is None
    three = _record(run_files_at_end=3)
    assert floor_minutes(_results(three, _two_runs()), three) is None


def test_the_target_is_judged_only_on_the_targets_invocation_from_an_empty_directory():
    def row(record: dict) -> str:
        return timing_section(_results(record, _two_runs())).splitlines()[-1]

    assert row(_record(seeds=10)).endswith("| met |")
    assert row(_record(seeds=10, wall_seconds=901.0)).endswith("| not met |")
    assert row(_record(seeds=10, run_files_at_start=5)).endswith("| - |")
    assert row(_record(seeds=1)).endswith("| - |")
    assert "| 10.0 | 18.0 | 90 % |" in row(_record(seeds=10))
