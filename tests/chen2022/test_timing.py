"""`replicate --timing`: the record of an invocation, and how the performance page renders it."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest

from lab.chen2022 import replicate as R
from lab.chen2022.timing import (
    ROUTER_DTYPE,
    TIMING_FORMAT,
    calibrated_dtypes,
    model_name,
    model_totals,
    router_step_flops,
    run_flops,
    run_train_config,
    step_flops,
    step_products,
)
from lab.cli.main import main
from lab.core.keys import task_key
from lab.core.provenance import environment
from lab.docs.findings_data import registered, render_finding
from lab.docs.markdown import pct
from lab.docs.results import ReplicationFile, Results, ResultsError, load_timing
from lab.docs.templating import render
from lab.docs.timing_section import (
    fastest_pace_seconds,
    floor_minutes,
    gemm_minutes,
    invocations,
    model_times,
    same_code,
    slower_floor_minutes,
    slower_peaks,
    timing_values,
)
from lab.kernels.bench.gemm import gemm_flops
from tests.rounding import rounded

pytestmark = pytest.mark.usefixtures("without_figures")  # none of these tests looks at them


@pytest.fixture
def short_runs(monkeypatch):
    """Every Chen et al. run of this test 12 steps long."""
    expand = R.expand
    monkeypatch.setattr(R, "expand", lambda *a, **k: [c | {"steps": 12} for c in expand(*a, **k)])


def _replicate(out: Path, timing: Path, *options: str) -> int:
    argv = ["replicate", "table1", "--tier", "quick", "--settings", "1", "--seeds", "1", "--quiet", *options]
    return main([*argv, "--out", str(out), "--timing", str(timing)])


def test_a_timed_replicate_records_its_time_and_the_runs_it_trained(short_runs, tmp_path, capsys):
    out, timing = tmp_path / "out", tmp_path / "timing.json"
    assert _replicate(out, timing) == 0
    first = load_timing(timing)
    configs = R.expand("table1", [1], 1, tier="quick")
    assert first["run_files_at_start"] == 0 and len(first["runs"]) == len(configs)
    assert sorted(r["model"] for r in first["runs"]) == sorted(c["model"] for c in configs)
    assert all(r["steps"] == 12 and r["seconds"] > 0 for r in first["runs"])
    assert first["models"] == model_totals(first["runs"], first["calibration"], first["gemm"])
    models = sorted({m["model"] for m in first["models"]})  # each calibrated before and after its runs
    assert [(c["model"], c["when"], c["dtype"]) for c in first["calibration"]] == [
        (m, when, "float64") for m in models for when in ("before", "after")
    ]
    assert [(g["model"], g["when"]) for g in first["gemm"]] == [
        (m, w) for m in models for w in ("before", "after")
    ]
    for m in first["models"]:  # its runs' steps at the faster GEMM step timed around them
        step = min(g["step_seconds"] for g in first["gemm"] if g["model"] == m["model"])
        assert step > 0 and m["gemm_seconds"] == pytest.approx(12 * m["runs"] * step)
    assert all(c["gflops"] > 0 for c in first["calibration"])
    assert all(m["peak_gflops"] > 0 for m in first["models"])
    assert first["wall_seconds"] > 0 and first["cpu_seconds"] > 0 and first["code"] == R.run_code()
    assert first["machine"] == environment()  # the CPU and the libraries it timed
    assert first["command"].startswith("python -m lab replicate table1 --seeds 1 --seed 0 --settings 1 ")
    assert _replicate(out, timing) == 0  # again: every run reused, and the record says so
    again = load_timing(timing)
    assert again["run_files_at_start"] == len(configs) and again["runs"] == []
    trained = first["runs"][0]
    stale = next(c for c in configs if c["model"] == trained["model"])
    with sqlite3.connect(R.store_path(out)) as db:  # one run from other code: it alone is trained again
        db.execute("UPDATE tasks SET code = 'from-other-code' WHERE key = ?", (task_key("replicate", stale),))
    db.close()
    (out / "table1.json").unlink()  # it holds the run from the current code
    assert _replicate(out, timing) == 0
    third = load_timing(timing)
    assert third["run_files_at_start"] == len(configs) and [r["model"] for r in third["runs"]] == [
        stale["model"]
    ]
    capsys.readouterr()


def test_a_timed_replicate_prepares_the_kernels_of_every_run_once_before_the_first_model(
    short_runs, tmp_path, monkeypatch, capsys
):
    import lab.cli.replicate as cli

    prepared = []
    monkeypatch.setattr(cli, "compile_in_child", lambda configs: prepared.append(len(configs)))
    assert _replicate(tmp_path / "out", tmp_path / "timing.json") == 0
    configs = R.expand("table1", [1], 1, tier="quick")
    assert len({m["model"] for m in load_timing(tmp_path / "timing.json")["models"]}) > 1
    assert prepared == [len(configs)]  # once, for every run of every model, as without --timing
    capsys.readouterr()


def test_a_timed_float32_replicate_calibrates_float64_too_around_each_moe(short_runs, tmp_path, capsys):
    timing = tmp_path / "timing.json"
    assert _replicate(tmp_path / "out", timing, "--dtype", "float32") == 0
    record = load_timing(timing)
    assert record["dtype"] == "float32" and {r["dtype"] for r in record["runs"]} == {"float32"}
    calibrated = {(c["model"], c["when"], c["dtype"]) for c in record["calibration"]}
    for model in record["models"]:
        dtypes = ("float32", ROUTER_DTYPE) if model["router_flops"] else ("float32",)
        assert {(m, w, d) for m, w, d in calibrated if m == model["model"]} == {
            (model["model"], when, dtype) for when in ("before", "after") for dtype in dtypes
        }
        assert ("router_peak_gflops" in model) == bool(model["router_flops"])
    assert any(m["router_flops"] for m in record["models"]) and record["models"] == model_totals(
        record["runs"], record["calibration"], record["gemm"]
    )
    capsys.readouterr()


def test_a_timing_path_that_cannot_be_written_stops_before_any_run(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert _replicate(tmp_path / "out", blocker / "timing.json") == 2
    assert "--timing" in capsys.readouterr().err
    assert not R.store_path(tmp_path / "out").exists()


def test_a_damaged_timing_file_is_named(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"format": TIMING_FORMAT, "command": "x"}))
    with pytest.raises(ResultsError, match=f"{path}: field 'targets' is missing"):
        load_timing(path)


def _runs(seconds: float = 60.0) -> list[dict]:
    """Two single CNNs of Table 1 at the full tier, 100 steps each."""
    configs = [c for c in R.expand("table1", [1], 1) if c["model"].startswith("single")][:2]
    return [c | {"steps": 100, "seconds": seconds} for c in configs]


def test_a_timing_record_without_its_models_totals_is_named(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps({k: v for k, v in _record().items() if k != "models"} | {"format": TIMING_FORMAT})
    )
    with pytest.raises(ResultsError, match=f"{path}: field 'models' is missing"):
        load_timing(path)


def test_a_timing_record_with_a_damaged_machine_is_named_and_one_without_a_machine_loads(tmp_path):
    path, record = tmp_path / "t.json", _record() | {"format": TIMING_FORMAT}
    path.write_text(json.dumps(record | {"machine": {"cpu": 7, "numba_cpu": "x"}}))
    with pytest.raises(ResultsError, match=f"{path}: machine: field 'cpu' must be text"):
        load_timing(path)
    path.write_text(json.dumps(record))
    assert "machine" not in load_timing(path)  # made before records named their machine


@pytest.mark.parametrize(
    "path",
    sorted((Path(__file__).resolve().parents[2] / "results/timing").glob("*.json")),
    ids=lambda p: p.name,
)
def test_a_committed_records_model_totals_are_the_writers_over_its_runs(path):
    record = load_timing(path)
    totals = model_totals(record["runs"], record.get("calibration", []), record.get("gemm", []))
    assert rounded(record["models"]) == rounded(totals)


def _record(**fields) -> dict:
    return {
        "targets": ["table1", "table3"],
        "variant": "paper",
        "dtype": "float64",
        "seeds": 10,
        "tier": "full",
        "jobs": 2,
        "cores": 2,
        "threads": 2,
        "command": "python -m lab replicate table1 table3 ...",
        "run_files_at_start": 0,
        "wall_seconds": 600.0,
        "cpu_seconds": 1080.0,
        "code": "abc",
        "runs": (runs := fields.pop("runs", _runs())),
        "models": model_totals(runs),
    } | fields


def _results(record: dict, peak: float | None = 50.0) -> Results:
    """Results with one timing record and a bench summary whose peak FMA rates are `peak` GFLOP/s in
    float64 and 3 × `peak` in float32 (none if None), beside a DGEMM rate the floor must not use."""
    rates = {} if peak is None else {"float64": peak, "float32": 3 * peak}
    benches = [{"kernel": f"peak_fma_{dtype}", "gflops": rate} for dtype, rate in rates.items()]
    bench = {"summary.json": {"dgemm_gflops": 7.0, "benchmarks": benches}}
    return Results({"records": []}, [], bench, timing=[("t.json", record)])


def test_the_floor_is_the_trained_runs_flop_at_the_peak_rate_of_every_core():
    expected = sum(map(run_flops, _runs())) / (50e9 * 2) / 60
    assert floor_minutes(_results(_record()), _record()) == pytest.approx(expected)
    record32 = _record(dtype="float32")  # its own dtype's peak rate
    assert floor_minutes(_results(record32), record32) == pytest.approx(expected / 3)


def test_a_calibrated_record_takes_its_own_peak_rate_per_model_not_the_bench_summarys():
    runs = _runs()
    calibration = [{"model": m["model"], "when": "after", "dtype": "float64", "gflops": 25.0} for m in
                   model_totals(runs)]  # fmt: skip
    record = _record(models=model_totals(runs, calibration), calibration=calibration)
    expected = sum(map(run_flops, runs)) / (25e9 * 2) / 60
    assert floor_minutes(_results(record), record) == pytest.approx(expected)  # not the summary's 50
    assert floor_minutes(_results(record, peak=None), record) == pytest.approx(expected)


def _moe_runs(dtype: str) -> list[dict]:
    """The MoE runs of Table 1 at the full tier in `dtype`, 100 steps and 60 s each."""
    configs = [c for c in R.expand("table1", [1], 1, dtype=dtype) if c["model"].startswith("moe")]
    return [c | {"steps": 100, "seconds": 60.0} for c in configs]


def test_a_float32_moes_router_counts_at_the_float64_rate_it_runs_at():
    runs = _moe_runs("float32")
    assert ROUTER_DTYPE == "float64" and calibrated_dtypes(runs) == ("float32", "float64")
    assert calibrated_dtypes(_moe_runs("float64")) == ("float64",)
    assert calibrated_dtypes([r | {"dtype": "float32"} for r in _runs()]) == ("float32",)  # no router
    calibration = [
        {"model": m["model"], "when": "after", "dtype": dtype, "gflops": rate}
        for m in model_totals(runs)
        for dtype, rate in (("float32", 100.0), ("float64", 50.0))
    ]
    models = model_totals(runs, calibration)
    assert [(m["peak_gflops"], m["router_peak_gflops"]) for m in models] == [(100.0, 50.0)] * len(models)
    router = sum(run_flops(r, router_step_flops) for r in runs)
    assert 0 < router < sum(m["flops"] for m in models) and sum(m["router_flops"] for m in models) == router
    record = _record(dtype="float32", runs=runs, models=models, calibration=calibration)
    experts = sum(map(run_flops, runs)) - router
    expected = (experts / 100e9 + router / 50e9) / 2 / 60
    assert floor_minutes(_results(record), record) == pytest.approx(expected)
    rows = _timing_tables(record)[1]
    assert all("| 100 / 50, calibrated |" in row for row in rows)
    floors = [((m["flops"] - m["router_flops"]) / 100e9 + m["router_flops"] / 50e9) for m in models]
    times = model_times(_results(record), record)  # one thread per job: floor ÷ seconds
    assert [t["fraction"] for t in times] == pytest.approx([f / 60.0 for f in floors])  # one 60 s run each


def test_an_uncalibrated_float32_moes_router_takes_the_bench_summarys_float64_rate():
    runs = _moe_runs("float32")
    record = _record(dtype="float32", runs=runs, models=model_totals(runs))
    router = sum(run_flops(r, router_step_flops) for r in runs)
    experts = sum(map(run_flops, runs)) - router
    expected = (experts / 150e9 + router / 50e9) / 2 / 60  # the summary: 50 in float64, 150 in float32
    assert floor_minutes(_results(record), record) == pytest.approx(expected)
    assert floor_minutes(_results(record, peak=None), record) is None


def test_no_floor_without_trained_runs_or_a_peak_rate():
    assert floor_minutes(_results(_record(runs=[])), _record(runs=[])) is None
    assert floor_minutes(_results(_record(), peak=None), _record()) is None


def _timing_section(results: Results) -> str:
    """The performance page's section on the timings (`templates/timing.md.j2`)."""
    return render("timing.md.j2", "performance.md", results, **timing_values(results))


def _table(section: str, first_header: str) -> list[str]:
    """The rows of the section's table whose header starts with `first_header`."""
    (table,) = [block for block in section.split("\n\n") if block.startswith(first_header)]
    return table.splitlines()[2:]


def _timing_tables(record: dict) -> tuple[list[str], list[str]]:
    """The rows of the timings table and of its split by model."""
    section = _timing_section(_results(record))
    return _table(section, "| record | command |"), _table(section, "| record | model |")


def test_the_split_gives_each_models_rate_its_minutes_above_the_floor_and_its_part_of_the_ratio():
    rows = _timing_tables(_record())[1]
    assert [row.split(" | ")[1] for row in rows] == [
        "single (linear), 128 filters",
        "single (nonlinear), 128 filters",
    ]
    flops = run_flops(_runs()[1])  # one run of 60 s on threads ÷ jobs = 1 thread
    rate = flops / 60
    above = (60 - flops / 50e9) / 2 / 60  # beyond its floor at the peak rate, ÷ the 2 jobs
    rate_cells = [f"{rate / 1e9:.3g}", "bench summary", pct(rate / 50e9, 0)]  # uncalibrated: the summary's
    share = 60 / 2 / 60 / floor_minutes(_results(_record()), _record())  # its seconds ÷ the jobs, in floors
    cells = ["1", "60", f"{flops / 1e12:.3g}", *rate_cells, f"{above:.1f}", f"{share:.2f}×", "1.00", "-"]
    assert rows[1].endswith(" | ".join(cells) + " |")  # one run: at its own pace; no GEMM time
    times = model_times(_results(_record()), _record())
    outside = 600 / 60 - sum(m["seconds"] for m in _record()["models"]) / 2 / 60  # wall not in training
    floor = floor_minutes(_results(_record()), _record())
    assert sum(t["share"] for t in times) + outside / floor == pytest.approx(600 / 60 / floor)  # the parts
    assert model_times(_results(_record(), peak=None), _record())[0]["share"] is None  # no floor, no part
    one_job = _record(jobs=1, threads=4, cores=4)  # the seconds ÷ the jobs, not the cores or the threads
    floor4 = floor_minutes(_results(one_job), one_job)
    assert [t["share"] for t in model_times(_results(one_job), one_job)] == pytest.approx(
        [m["seconds"] / 1 / 60 / floor4 for m in one_job["models"]]
    )


def _seeds(seconds: list[float], steps: list[int] | None = None, setting: int = 1) -> list[dict]:
    """Runs of one model (Table 1's nonlinear single CNN) on one setting, one per seed, with these seconds."""
    config = _runs()[1] | {"setting": setting}
    steps = steps or [100] * len(seconds)
    paces = enumerate(zip(seconds, steps, strict=True))
    return [config | {"seed": k, "seconds": t, "steps": n} for k, (t, n) in paces]


def test_at_the_fastest_pace_each_run_takes_its_steps_at_the_least_seconds_per_step_of_its_setting():
    assert fastest_pace_seconds(_seeds([60.0, 90.0])) == pytest.approx(120.0)  # both at 0.6 s per step
    assert fastest_pace_seconds(_seeds([90.0, 60.0])) == pytest.approx(120.0)  # the least, wherever listed
    assert fastest_pace_seconds(_seeds([30.0, 80.0], steps=[50, 100])) == pytest.approx(90.0)  # per step
    apart = [*_seeds([60.0, 90.0]), *_seeds([200.0], setting=2)]  # a setting's pace is its own
    assert fastest_pace_seconds(apart) == pytest.approx(320.0)


def test_the_tables_give_each_models_spread_and_wall_over_floor_at_the_fastest_paces():
    runs = _seeds([60.0, 90.0])
    record = _record(runs=runs, models=model_totals(runs))
    (model,) = model_times(_results(record), record)
    assert model["fastest_seconds"] == pytest.approx(120.0) and model["spread"] == pytest.approx(1.25)
    floor = floor_minutes(_results(record), record)
    paced = (600 - 30 / 2) / 60 / floor  # the 30 s above the pace, ÷ the 2 jobs, off the wall
    (values,) = timing_values(_results(record))["timing"]
    assert values["at_fastest_paces"] == pytest.approx(paced)
    timings, split = _timing_tables(record)
    assert f"| {600 / 60 / floor:.2f}× | {paced:.2f}× |" in timings[0] and split[0].endswith("| 1.25 | - |")
    assert timing_values(_results(record, peak=None))["timing"][0]["at_fastest_paces"] is None  # no floor
    linear = _runs()[0] | {"seconds": 5.0}  # another model on the same setting, at a faster pace
    both = [*runs, linear, linear | {"seed": 1, "seconds": 10.0}]
    record = _record(runs=both, models=model_totals(both))
    spreads = {m["model"]: m["spread"] for m in model_times(_results(record), record)}
    assert spreads == pytest.approx(
        {"single (nonlinear), 128 filters": 1.25, "single (linear), 128 filters": 1.5}
    )


def test_the_target_is_judged_only_on_the_targets_invocation_from_an_empty_directory():
    def row(record: dict) -> str:
        return _timing_tables(record)[0][-1]

    floor = floor_minutes(_results(_record()), _record()) * 60  # seconds
    assert row(_record()).endswith("| met | not met |")  # 10 min, far above 2× its floor
    assert row(_record(wall_seconds=901.0)).endswith("| not met | not met |")
    assert row(_record(wall_seconds=2 * floor)).endswith("| met | met |")  # ≤ 2× the floor: met
    assert row(_record(wall_seconds=2.01 * floor)).endswith("| met | not met |")
    assert row(_record(run_files_at_start=5)).endswith("| - | - |")
    assert row(_record(seeds=1)).endswith("| - | - |")
    assert "| met | - |" in _timing_section(_results(_record(), peak=None))  # no floor, no ratio status
    assert _timing_tables(_record())[0][-1].startswith("| t.json |") and "≤ 2× floor |" in _timing_section(
        _results(_record())
    )
    assert "| 2 | 10.0 | 18.0 | 90 % |" in row(_record())


def test_a_record_says_whether_the_table_runs_share_its_code():
    def results(*codes: str) -> Results:
        payload = {"runs": [{"code": code} for code in codes]}
        return dataclasses.replace(
            _results(_record()),
            replications=[ReplicationFile(Path("t1.json"), "table1", "paper", "full", payload)],
        )

    assert same_code(results("abc", "abc"), _record()) is True
    other = dataclasses.replace(  # another target's runs, without a code (Makkuva et al.'s), do not count
        results("abc"),
        replications=[
            *results("abc").replications,
            ReplicationFile(Path("fig1.json"), "makkuva-fig1", "paper", "full", {"runs": [{}]}),
        ],
    )
    assert same_code(other, _record()) is True
    assert same_code(results("abc", "xyz"), _record()) is False
    assert same_code(_results(_record()), _record()) is None
    assert "| abc (not as the table runs) |" in _timing_section(results("abc", "xyz"))
    assert "| abc | met |" in _timing_tables(_record())[0][-1]


def _time_finding(results: Results) -> str:
    """The findings' replication wall time (`lab/kernels/bench/report.findings.toml`)."""
    return render_finding("findings.md", registered()["replication-time"], results)


def test_the_findings_give_the_target_invocations_time_and_whose_minutes_are_above_its_floor():
    record = _record()
    above = sum(t["above_minutes"] for t in model_times(_results(record), record))
    sentence = _time_finding(_results(record))
    floor = floor_minutes(_results(record), record)
    assert (
        "timed once at code `abc` on 2 cores (machine: not recorded): `t.json` 10.0 min, "
        f"{600 / 60 / floor:.2f}× its floor of {floor:.1f} min. The target ≤ 15 min was met in 1 of 1, "
        "the target ≤ 2× the floor in 0 of 1 (the floor" in sentence
    )
    assert (
        "In it, of the minutes above its floor, the MoE runs account for 0.0 and the single CNNs for "
        f"{above:.1f}" in sentence
    )
    singles = sum(m["seconds"] for m in record["models"]) / 2 / 60 / floor  # every model here is a single
    assert f"divided by the 2 jobs, come to {singles:.2f}× the floor: at their speed" in sentence
    assert "below that, which is already above the target" in sentence  # 10 min against a floor of seconds
    runs = [*_runs(), *_moe_runs("float64")]  # the MoE runs' seconds are not the singles'
    mixed = _record(runs=runs, models=model_totals(runs), wall_seconds=6000.0)
    floor = floor_minutes(_results(mixed), mixed)
    singles = sum(m["seconds"] for m in mixed["models"] if m["model"].startswith("single")) / 2 / 60 / floor
    assert singles < sum(m["seconds"] for m in mixed["models"]) / 2 / 60 / floor
    assert f"come to {singles:.2f}× the floor" in _time_finding(_results(mixed))
    assert "no faster MoE run" in sentence and "not even those paces meet the target" in sentence
    runs = _seeds([60.0, 600.0])  # one run far slower than its setting's other: met at the fastest paces
    paced = _record(runs=runs, models=model_totals(runs), wall_seconds=400.0)
    peak = 50.0 * floor_minutes(_results(paced), paced) / (400 / 60 / 3)  # the wall 3× the floor
    floor = floor_minutes(_results(paced, peak=peak), paced)
    at_paces = (400 - 540 / 2) / 60 / floor  # the 540 s above the pace, ÷ the 2 jobs, off the wall
    assert at_paces <= 2 < 400 / 60 / floor
    sentence = _time_finding(_results(paced, peak=peak))
    assert f"would have taken {at_paces:.2f}× its floor, so the spread accounts for" in sentence
    assert (
        f"{400 / 60 / floor - at_paces:.2f}× of the ratio, and those paces would meet the target in 1 of 1"
        in sentence
    )
    other = _record(seeds=1)  # not the target's invocation
    assert "No timed invocation of the target" in _time_finding(_results(other))
    assert "No timed invocation of the target" in _time_finding(_results(record, peak=None))  # no floor


def _invoked(*records: tuple[str, dict]) -> Results:
    """`_results` with these (file name, record) timings."""
    return dataclasses.replace(_results(_record()), timing=list(records))


def _doubled(**fields) -> dict:
    """`_record` with every run twice (the second at seed 1): twice its floor."""
    runs = [*_runs(), *(run | {"seed": 1} for run in _runs())]
    return _record(runs=runs, models=model_totals(runs)) | fields


def test_the_targets_invocations_of_one_command_code_machine_and_cores_are_judged_together():
    floor = floor_minutes(_results(_record()), _record()) * 60  # seconds
    by_wall = [("a.json", _record(wall_seconds=800.0)), ("b.json", _doubled(wall_seconds=1000.0))]
    records = [*by_wall, ("c.json", _record(wall_seconds=2.5 * floor))]
    machine = {"cpu": "Other CPU", "numba_cpu": "zen4"}
    apart = [  # the same but for one of command, code, machine and cores: each its own group
        ("d.json", _record(code="xyz")),
        ("e.json", _record(command="python -m lab replicate table1 ...")),
        ("f.json", _record(machine=machine)),
        ("g.json", _record(cores=4, threads=4)),
    ]
    others = [("h.json", _record(seeds=1)), ("i.json", _record(run_files_at_start=5))]  # not the target's
    groups = invocations(timing_values(_invoked(*records, *apart, *others))["timing"])
    assert [[i["name"] for i in g["invocations"]] for g in groups] == [
        ["c.json", "b.json", "a.json"],  # by wall ÷ floor: 2.5, 1000 / (2 floor), 800 / floor
        ["d.json"],
        ["e.json"],
        ["f.json"],
        ["g.json"],
    ]
    first = groups[0]
    assert (first["code"], first["machine"], first["cores"], groups[3]["machine"]) == (
        "abc",
        "not recorded",
        2,
        "Other CPU (zen4)",
    )
    ratios = [2.5, 500 / floor, 800 / floor]
    assert [i["ratio"] for i in first["invocations"]] == pytest.approx(ratios)
    assert [i["wall"] for i in first["invocations"]] == pytest.approx([2.5 * floor / 60, 1000 / 60, 800 / 60])
    assert [i["floor"] for i in first["invocations"]] == pytest.approx(
        [floor / 60, 2 * floor / 60, floor / 60]
    )
    assert first["median_ratio"] == pytest.approx(500 / floor) and first["median_wall"] == pytest.approx(
        800 / 60
    )
    assert first["middle"]["name"] == "b.json"  # the median ratio, not the median wall (a.json's)
    values = {t["name"]: t for t in timing_values(_invoked(*records))["timing"]}
    assert [i["paced"] for i in first["invocations"]] == pytest.approx(
        [values[name]["at_fastest_paces"] for name in ("c.json", "b.json", "a.json")]
    )
    assert (first["minutes_met"], first["floor_met"]) == (2, 0)  # b.json's 16.7 min miss 15; none ≤ 2×
    (even,) = invocations(timing_values(_invoked(*by_wall))["timing"])  # the higher of the middle two
    assert even["middle"]["name"] == "a.json" and even["median_ratio"] == pytest.approx(650 / floor)
    assert invocations(timing_values(_invoked(*others))["timing"]) == []
    assert invocations(timing_values(dataclasses.replace(_invoked(*records), bench={}))["timing"]) == []
    assert first["paced_met"] == 0  # one run per model: each at its own pace, c.json's 2.5× the least
    two = _invoked(("a.json", _record(wall_seconds=1000.0)), ("b.json", _record(wall_seconds=1.9 * floor)))
    assert [(g["minutes_met"], g["floor_met"]) for g in invocations(timing_values(two)["timing"])] == [(1, 1)]


def test_the_page_and_the_finding_give_every_invocation_of_the_command_and_how_many_met_each_target():
    floor = floor_minutes(_results(_record()), _record()) * 60
    records = [("a.json", _record(wall_seconds=1000.0)), ("b.json", _doubled(wall_seconds=1600.0))]
    results = _invoked(*records, ("c.json", _record(wall_seconds=1.9 * floor)))
    (row,) = _table(_timing_section(results), "| command | code |")
    cells = ["abc", "not recorded", "2", "c.json, b.json, a.json", f"{1000 / 60:.1f}", f"{floor / 60:.1f}"]
    assert " | ".join([*cells, f"{800 / floor:.2f}×"]) in row and row.endswith("| - | 1 of 3 | 1 of 3 | - |")
    sentence = _time_finding(results)
    assert (
        "was timed 3 times at code `abc` on 2 cores (machine: not recorded), in ascending order" in sentence
    )
    listed = f"`c.json` {1.9 * floor / 60:.1f} min, 1.90× its floor of {floor / 60:.1f} min; `b.json` "
    listed += f"{1600 / 60:.1f} min, {800 / floor:.2f}× its floor of {2 * floor / 60:.1f} min; `a.json`"
    assert listed in sentence and f"(medians {1000 / 60:.1f} min and {800 / floor:.2f}×)" in sentence
    assert "min was met in 1 of 3, the target ≤ 2× the floor in 1 of 3: counts of 3 invocations" in sentence
    assert "In the invocation at the median ratio (`b.json`; by wall ÷ floor, not by wall time)" in sentence
    paced = {t["name"]: t["at_fastest_paces"] for t in timing_values(results)["timing"]}
    in_order = ", ".join(f"{paced[name]:.2f}×" for name in ("c.json", "b.json", "a.json"))
    assert f"at the fastest paces the 3 invocations come to {in_order}, in the order above" in sentence
    assert "those paces would meet the target in 1 of 3" in sentence  # c.json's runs are at one pace


def _calibrated(runs: list[dict], *rates: dict[str, tuple[float, float]], **fields) -> dict:
    """`_record` of `runs` whose k-th model (in `model_totals` order) was calibrated before and after its
    runs at `rates[k][dtype]` (GFLOP/s) in each dtype given; one `rates` serves every model."""
    calibration = [
        {"model": m["model"], "when": when, "dtype": dtype, "gflops": rate}
        for k, m in enumerate(model_totals(runs))
        for dtype, pair in rates[k % len(rates)].items()
        for when, rate in zip(("before", "after"), pair, strict=True)
    ]
    return _record(runs=runs, models=model_totals(runs, calibration), calibration=calibration) | fields


def _reading(record: dict) -> dict:
    """The record's values on the performance page (`timing_values`), with its own bench summary."""
    (values,) = timing_values(_results(record))["timing"]
    return values


def test_the_most_favourable_reading_takes_each_models_slower_calibration_at_the_fastest_paces():
    runs = _runs()
    record = _calibrated(runs, {"float64": (25.0, 50.0)}, {"float64": (80.0, 40.0)})  # a model's own pair
    first, second = record["models"]
    assert (first["peak_gflops"], second["peak_gflops"]) == (50.0, 80.0)  # the floor takes the better
    assert slower_peaks(record, first) == {"peak_gflops": 25.0, "router_peak_gflops": 25.0}
    assert slower_peaks(record, second) == {"peak_gflops": 40.0, "router_peak_gflops": 40.0}
    flops = [m["flops"] for m in record["models"]]
    floor = floor_minutes(_results(record), record)
    assert floor == pytest.approx((flops[0] / 50e9 + flops[1] / 80e9) / 2 / 60)
    slower = slower_floor_minutes(_results(record), record)
    assert slower == pytest.approx((flops[0] / 25e9 + flops[1] / 40e9) / 2 / 60)
    values = _reading(record)
    favourable = 600 / 60 / slower  # one run per model, each at its own pace
    assert values["favourable"] == pytest.approx(favourable) == values["over_slower"]
    assert values["floor_drift"] == pytest.approx(slower / floor) == pytest.approx(2.0)
    ratio = 600 / 60 / floor
    row = _timing_tables(record)[0][0]
    assert f"| {ratio:.2f}× | {ratio:.2f}× | {slower / floor:.2f}× | {favourable:.2f}× |" in row
    spread = _calibrated(_seeds([60.0, 90.0]), {"float64": (25.0, 50.0)})  # 30 s above the pace
    values = _reading(spread)
    slower = slower_floor_minutes(_results(spread), spread)
    assert values["favourable"] == pytest.approx((600 - 30 / 2) / 60 / slower)
    assert values["over_slower"] == pytest.approx(600 / 60 / slower)
    plain = _record()  # no calibration: no second reading
    values = _reading(plain)
    assert (
        slower_peaks(plain, plain["models"][0]) == {} and slower_floor_minutes(_results(plain), plain) is None
    )
    assert (values["favourable"], values["over_slower"], values["floor_drift"]) == (None, None, None)
    assert "| - | - |" in _timing_tables(plain)[0][0]
    part = record | {"calibration": record["calibration"][:2]}  # one model's calibrations only
    assert slower_floor_minutes(_results(part), part) is None
    moe_runs = _moe_runs("float32")  # the experts at their dtype's slower rate, the router at float64's
    moe = _calibrated(moe_runs, {"float32": (100.0, 80.0), "float64": (40.0, 50.0)}, dtype="float32")
    assert [slower_peaks(moe, m) for m in moe["models"]] == [
        {"peak_gflops": 80.0, "router_peak_gflops": 40.0}
    ] * len(moe["models"])
    router = sum(run_flops(r, router_step_flops) for r in moe_runs)
    experts = sum(map(run_flops, moe_runs)) - router
    assert slower_floor_minutes(_results(moe), moe) == pytest.approx(
        (experts / 80e9 + router / 40e9) / 2 / 60
    )
    unrouted = moe | {"calibration": [c for c in moe["calibration"] if c["dtype"] == "float32"]}
    assert slower_floor_minutes(_results(unrouted), unrouted) is None  # the router's float64 rate missing


def test_the_invocations_give_the_most_favourable_reading_and_the_finding_whether_it_meets_the_target():
    floor = floor_minutes(_results(_record()), _record()) * 60  # seconds, at 50 GFLOP/s
    rates = {"float64": (50.0, 25.0)}  # the slower floor twice the floor
    records = [
        ("a.json", _calibrated(_runs(), rates, wall_seconds=5 * floor)),  # 5×, and 2.5× so
        ("b.json", _calibrated(_runs(), rates, wall_seconds=3 * floor)),  # 3×, and 1.5× so
        ("c.json", _calibrated(_runs(), {"float64": (50.0, 40.0)}, wall_seconds=4 * floor)),  # 4×, 3.2×
    ]
    (group,) = invocations(timing_values(_invoked(*records))["timing"])
    assert [i["favourable"] for i in group["invocations"]] == pytest.approx([1.5, 3.2, 2.5])
    assert [i["floor_drift"] for i in group["invocations"]] == pytest.approx([2.0, 1.25, 2.0])
    assert (group["median_favourable"], group["favourable_met"], group["floor_met"]) == pytest.approx(
        (2.5, 1, 0)
    )
    assert [i["name"] for i in group["favourable_meeting"]] == ["b.json"]
    (row,) = _table(_timing_section(_invoked(*records)), "| command | code |")
    assert row.endswith("| 4.00× | 4.00× | 2.50× | 3 of 3 | 0 of 3 | 1 of 3 |")  # 15 min: a floor of seconds
    sentence = _time_finding(_invoked(*records))
    assert "instead of the better, the floor is 1.25× to 2.00× as long in these invocations." in sentence
    assert "the invocations come to 1.50×, 3.20×, 2.50×, in the order above" in sentence
    assert (
        "the target would be met in 1 of 3 (`b.json`, 1.50×; over the slower floor at its runs' own paces "
        "1.50×), and in that invocation the miss cannot be told apart" in sentence
    )
    assert "This reading is no bound" in sentence
    (one,) = invocations(timing_values(_invoked(records[2]))["timing"])
    assert (one["favourable_met"], one["median_favourable"]) == pytest.approx((0, 3.2))
    sentence = _time_finding(_invoked(records[2]))
    assert "the floor is 1.25× as long. Read most favourably" in sentence
    assert "it comes to 3.20×: it misses the target even so, so the spread of paces" in sentence
    pair = _time_finding(_invoked(records[0], records[2]))
    assert "come to 3.20×, 2.50×, in the order above: none meets the target even so" in pair  # c, a
    two = _time_finding(_invoked(records[1], ("d.json", records[1][1] | {"wall_seconds": 3.5 * floor})))
    assert "met in 2 of 2 (`b.json`, 1.50×; over" in two and "; `d.json`, 1.75×; over" in two
    assert "and in those invocations the miss" in two
    alone = _time_finding(_invoked(records[1]))
    assert "it comes to 1.50×: the target would be met in 1 of 1 (`b.json`" in alone
    mixed = _invoked(records[1], ("e.json", _record(wall_seconds=3.5 * floor)))  # one without calibration
    (group,) = invocations(timing_values(mixed)["timing"])
    assert (group["median_favourable"], group["favourable_met"]) == (None, None)
    (row,) = _table(_timing_section(mixed), "| command | code |")
    assert row.endswith("| - | 2 of 2 | 0 of 2 | - |")
    assert "Read most favourably" not in _time_finding(mixed)


def test_a_most_favourable_reading_at_exactly_the_target_meets_it():
    t = _reading(_calibrated(_runs(), {"float64": (50.0, 25.0)}))
    at_target = t | {"status": "met", "floor_status": "not met", "favourable": 2.0, "at_fastest_paces": 2.0}
    (group,) = invocations([at_target])
    assert (group["paced_met"], group["favourable_met"], len(group["favourable_meeting"])) == (1, 1, 1)


def test_a_steps_dense_products_are_its_flop_as_gemm_shapes():
    from lab.chen2022 import data

    d = data.setting(1).d
    runs = [  # 128 and 512 filters, with and without bias, in both dtypes
        run
        for variant in ("paper", "reference-code")
        for dtype in ("float64", "float32")
        for run in R.expand("table3", [1], 1, variant=variant, dtype=dtype)
    ]
    assert {run_train_config(r).bias for r in runs} == {False, True} and {r.get("filters") for r in runs} > {
        512
    }
    for run in runs:
        cfg = run_train_config(run)
        linear = cfg.activation == "linear"
        experts = (100 * (1 if linear else data.setting(1).P - 3), d + int(cfg.bias), 1 if linear else cfg.J)
        router = [] if run["model"].startswith("single") else [(100, d, cfg.M, ROUTER_DTYPE)]
        assert step_products(run, 100) == [(*experts, run["dtype"]), *router]
        flops = 4 * experts[0] * experts[1] * experts[2] + sum(4 * n * k * m for n, k, m, _ in router)
        assert step_flops(run, 100) == gemm_flops(step_products(run, 100)) == flops


def _gemm_timed(runs: list[dict], before: float, after: float, **fields) -> dict:
    """`_record` of `runs` whose every model timed its GEMM step at `before` and `after` seconds."""
    gemm = [
        {"model": m["model"], "when": when, "step_seconds": seconds}
        for m in model_totals(runs)
        for when, seconds in (("before", before), ("after", after))
    ]
    return _record(runs=runs, models=model_totals(runs, (), gemm), gemm=gemm) | fields


def test_the_gemm_time_is_the_runs_steps_at_the_faster_gemm_step_on_every_core():
    runs = [*_runs(), *_moe_runs("float64")]  # 100 steps per run, 60 s each
    record = _gemm_timed(runs, 0.01, 0.02)
    assert [m["gemm_seconds"] for m in record["models"]] == pytest.approx(
        [m["runs"] * 100 * 0.01 for m in record["models"]]
    )
    gemm = gemm_minutes(record)
    assert gemm == pytest.approx(len(runs) * 1.0 / 2 / 60)  # one second per run, on 2 cores
    assert gemm_minutes(record | {"cores": 4}) == pytest.approx(gemm / 2)  # the cores, not the jobs
    assert gemm_minutes(record, "single") == pytest.approx(2 * 1.0 / 2 / 60)
    values = {t["name"]: t for t in timing_values(_results(record))["timing"]}["t.json"]
    floor = floor_minutes(_results(record), record)
    assert values["gemm_minutes"] == pytest.approx(gemm) and values["gemm_over_floor"] == pytest.approx(
        gemm / floor
    )
    assert values["singles_gemm"] == pytest.approx(gemm_minutes(record, "single") / floor)
    assert values["over_gemm"] == pytest.approx(600 / 60 / gemm) and values["gemm_spread"] == pytest.approx(
        2.0
    )
    assert [m["gemm_ratio"] for m in values["models"]] == pytest.approx([60.0] * 4) and values[
        "gemm_outran"
    ] == []
    (row,) = _table(_timing_section(_results(record)), "| record | floor (min) | GEMM time")
    cells = [f"{floor:.1f}", f"{gemm:.1f}", f"{gemm / floor:.2f}×", f"{values['singles_gemm']:.2f}×"]
    assert row == "| " + " | ".join(["t.json", *cells, f"{600 / 60 / gemm:.2f}×", "2.00×"]) + " |"
    assert all(line.endswith("| 60.00× |") for line in _timing_tables(record)[1])
    sentence = _time_finding(_results(record))
    singles = values["singles_gemm"]
    more = "more" if gemm / floor > 2 else "less"
    assert (
        "In `t.json` the same dense products, timed as one-thread GEMM around each model (NumPy's BLAS on "
        "their shapes, on one core with no run going, the faster of two timings that differed by up to "
        f"2.00×), would take {gemm / floor:.2f}× the floor, {more} than the target's 2×, the single CNNs' "
        f"alone {singles:.2f}×. That is a reference, not a bound"
    ) in sentence
    assert f"The invocation took {600 / 60 / gemm:.2f}× that GEMM time." in sentence
    within = _gemm_timed(runs, 0.02, floor * 60 * 2 / len(runs) / 100 * 1.5)  # the GEMM time 1.5 floors
    assert "would take 1.50× the floor, less than the target's 2×" in _time_finding(_results(within))
    two = [runs[0] | {"seconds": 2.0}, runs[1]]  # 2 s and 60 s against 30 s of GEMM each
    slow = _gemm_timed(two, 0.3, 0.3)
    (t,) = timing_values(_results(slow))["timing"]
    name = model_name(two[0])
    assert [m["model"] for m in t["gemm_outran"]] == [name]
    gemm_rate = slow["models"][0]["flops"] / slow["models"][0]["gemm_seconds"]  # no calibration here
    assert (
        f"the runs of {name} took 0.07× their GEMM time, those of every other model longer than theirs."
        in _time_finding(_results(slow))
    )
    calibration = [{"model": name, "when": "after", "dtype": "float64", "gflops": gemm_rate / 0.25e9}]
    peaked = slow | {"models": model_totals(two, calibration, slow["gemm"]), "calibration": calibration}
    assert (
        "took 0.07× their GEMM time (GEMM there at 25 % of the peak rate calibrated around the same runs)"
        in (_time_finding(_results(peaked)))
    )
    part = record | {"models": [record["models"][0] | {"gemm_seconds": 1.0}, *model_totals(runs)[1:]]}
    assert gemm_minutes(part) is None  # a model without its GEMM step: no GEMM time
    assert "| GEMM time (min) |" not in _timing_section(_results(_record()))
    assert "one-thread GEMM" not in _time_finding(_results(_record()))
    two_of = _time_finding(_invoked(("a.json", record), ("b.json", _record(wall_seconds=900.0))))
    assert "In `a.json` (the only one of the 2 timed with GEMM) the same" in two_of
    assert "each the mean of the two middle values)" in two_of  # an even count: no invocation at the median
    assert "In the upper of the two middle invocations (`b.json`, " in two_of
