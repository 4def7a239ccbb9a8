"""The performance page's replication timings (`results/timing/*.json`) beside their arithmetic floor."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from lab.chen2022.runs import TIER_SIZES
from lab.docs.arithmetic_floor import run_flops
from lab.docs.markdown import code, fixed, num, pct, table
from lab.docs.results import Results

TARGET_MINUTES = 15.0
TARGET_TABLES = ["table1", "table3"]

TIMING_TEXT = f"""\
### Replication wall time

`python -m lab replicate ... --timing PATH` records one invocation: its command, wall and CPU time
(the `--jobs` workers included), the cores, the code fingerprint, how many runs the run store of
`--out` held when it began, and every run it trained with its steps and seconds; the records below
are `results/timing/*.json`. The target is `replicate {" ".join(TARGET_TABLES)} --seeds 10` for the
stated model from an empty run store in at most {fixed(TARGET_MINUTES, 0)} min of wall time on 2
cores, in float64 and in float32.

The arithmetic floor counts the dense products no structured step avoids
(`lab.docs.arithmetic_floor`: the experts' noise patches forward and backward, an MoE router's two
products) over every step of the runs the invocation trained, and divides the FLOP by the peak
multiply-add rate of one core in the record's dtype times the cores: the bench summary's
`peak_fma_float64` or `peak_fma_float32` (`benchmarks/test_bench_peak.py`: independent chains of
64-byte vector FMAs, no memory traffic). No kernel runs faster than that, so the floor is a limit.
One-thread DGEMM is not: on this machine NumPy's OpenBLAS runs its Haswell kernels (32-byte
vectors, as threadpoolctl reports), and the structured cubic kernels, with 64-byte ones, outrun it.
The second table splits each record by model: the runs' own seconds (each run in a process with the
Numba threads ÷ jobs), the rate they reached, per thread, as a fraction of that peak rate, and the
minutes of wall time above the floor the model accounts for (its runs' seconds beyond their own
floor, divided by the jobs that ran at once). The code column gives each record's code fingerprint
and says whether every committed table run carries the same one:
a record made by other code timed other kernels."""


PEAK_PREFIX = "peak_fma_"  # and the dtype: the kernel names of `benchmarks/test_bench_peak.py`


def peak_benchmarks(results: Results) -> dict[str, dict[str, Any]]:
    """The bench summary's peak multiply-add benchmarks that have a rate, by dtype, float64 first."""
    found: dict[str, dict[str, Any]] = {}
    for summary in results.bench:
        for bench in summary.payload.get("benchmarks", []):
            if bench.get("kernel", "").startswith(PEAK_PREFIX) and bench.get("gflops"):
                found.setdefault(bench["kernel"].removeprefix(PEAK_PREFIX), bench)
    return {dtype: found[dtype] for dtype in ("float64", "float32") if dtype in found}


def _rate(results: Results, dtype: str) -> float | None:
    """The peak rate in FLOP/s per thread: the bench summary's `peak_fma_<dtype>` (None without one)."""
    bench = peak_benchmarks(results).get(dtype)
    return bench["gflops"] * 1e9 if bench else None


def _flops(run: dict[str, Any]) -> float:
    return run_flops(run, TIER_SIZES[run["tier"]][0])


def floor_minutes(results: Results, record: dict[str, Any]) -> float | None:
    """The arithmetic floor of a timing record in minutes (None without a runs or a bench rate)."""
    rate = _rate(results, record["dtype"])
    if rate is None or not record["runs"]:
        return None
    return sum(_flops(run) for run in record["runs"]) / (rate * record["cores"]) / 60


def target_status(record: dict[str, Any]) -> str:
    """Met or not met when the record is the target's invocation, else `-`."""
    is_target = (
        record["targets"] == TARGET_TABLES
        and (record["variant"], record["seeds"], record["tier"]) == ("paper", 10, "full")
        and record["run_files_at_start"] == 0
    )
    if not is_target:
        return "-"
    return "met" if record["wall_seconds"] / 60 <= TARGET_MINUTES else "not met"


def code_status(results: Results, record: dict[str, Any]) -> str:
    """The record's code fingerprint and whether the committed table runs were all made by that code."""
    codes = {run.get("code") for rep in results.replications for run in rep.payload.get("runs", [])}
    if not codes:
        return record["code"]
    return f"{record['code']} ({'as' if codes == {record['code']} else 'not as'} the table runs)"


def _model(run: dict[str, Any]) -> str:
    if run["model"].startswith("single"):
        return f"{run['model']}, {run['filters']} filters"
    return f"{run['model']}, M = {run['M']}, J = {run['J']}"


@dataclass(frozen=True)
class ModelTime:
    """One model's runs in a timing record: their own seconds, FLOP, rate per thread and, with a
    peak rate, that rate's fraction and the minutes of wall time above the floor they account for."""

    model: str
    runs: int
    seconds: float
    flops: float
    per_thread: float
    fraction: float | None
    above_minutes: float | None


def model_times(results: Results, record: dict[str, Any]) -> list[ModelTime]:
    """Per model of one record (sorted by name): its runs' seconds beyond their own floor ÷ the jobs."""
    rate = _rate(results, record["dtype"])
    threads = max(1, record["threads"] // record["jobs"])  # as `replicate --jobs` gives each worker
    groups: dict[str, list[dict]] = defaultdict(list)
    for run in record["runs"]:
        groups[_model(run)].append(run)
    found = []
    for model, runs in sorted(groups.items()):
        seconds, flops = sum(r["seconds"] for r in runs), sum(_flops(r) for r in runs)
        per_thread = flops / seconds / threads
        above = (seconds - flops / (rate * threads)) / record["jobs"] / 60 if rate else None
        found.append(
            ModelTime(
                model, len(runs), seconds, flops, per_thread, per_thread / rate if rate else None, above
            )
        )
    return found


def breakdown_rows(results: Results, name: str, record: dict[str, Any]) -> list[tuple]:
    """Per model of one record: runs, the runs' own seconds, FLOP, the rate per thread, and the minutes
    of wall time above the floor it accounts for."""
    return [
        (
            name,
            t.model,
            t.runs,
            fixed(t.seconds, 0),
            num(t.flops / 1e12),
            num(t.per_thread / 1e9),
            pct(t.fraction, 0),
            fixed(t.above_minutes, 1),
        )
        for t in model_times(results, record)
    ]


def timing_section(results: Results) -> str:
    """The timings table and where their time went, or a line saying none is committed."""
    if not results.timing:
        return TIMING_TEXT + "\n\nNo timing record committed yet (`results/timing/` is empty)."
    rows, parts = [], []
    for name, record in results.timing:
        wall = record["wall_seconds"] / 60
        floor = floor_minutes(results, record)
        rows.append(
            (
                name,
                code(record["command"]),
                record["run_files_at_start"],
                len(record["runs"]),
                fixed(wall, 1),
                fixed(record["cpu_seconds"] / 60, 1),
                pct(record["cpu_seconds"] / record["wall_seconds"] / record["cores"], 0),
                fixed(floor, 1),
                "-" if floor is None else f"{wall / floor:.2f}×",
                code_status(results, record),
                target_status(record),
            )
        )
        parts += breakdown_rows(results, name, record)
    head = (
        "record",
        "command",
        "stored runs at start",
        "runs trained",
        "wall (min)",
        "CPU (min)",
        "CPU use of the cores",
        "floor (min)",
        "wall ÷ floor",
        "code",
        f"≤ {fixed(TARGET_MINUTES, 0)} min",
    )
    split = (
        "record",
        "model",
        "runs",
        "run seconds",
        "TFLOP",
        "GFLOP/s per thread",
        "of the peak rate",
        "wall above the floor (min)",
    )
    return "\n\n".join([TIMING_TEXT, table(head, rows), table(split, parts)])
