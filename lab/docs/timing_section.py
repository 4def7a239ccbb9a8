"""The performance page's replication timings (`results/timing/*.json`) beside their arithmetic floor."""

from __future__ import annotations

import json
from typing import Any

from lab.chen2022.arithmetic_floor import run_flops
from lab.chen2022.tables import MOE_DEFAULTS
from lab.docs.markdown import code, fixed, pct, table
from lab.docs.results import Results

TARGET_MINUTES = 15.0
TARGET_TABLES = ["table1", "table3"]
# the fields of a run record that name its configuration (`replicate.expand`), not its outcome
CONFIG_FIELDS = (
    "model",
    "variant",
    "setting",
    "seed",
    "tier",
    "dtype",
    "arithmetic",
    "activation",
    "filters",
    "readout",
    *MOE_DEFAULTS,
)

TIMING_TEXT = f"""\
### Replication wall time

`python -m lab replicate ... --timing PATH` records one invocation: its command, wall and CPU time
(the `--jobs` workers included), the cores, the code fingerprint, and how many run files `--out` held
when it began; the records below are `results/timing/*.json`. The target is
`replicate {" ".join(TARGET_TABLES)} --seeds 10` for the stated model from an empty run directory in at
most {fixed(TARGET_MINUTES, 0)} min of wall time on 2 cores, in float64 and in float32.

The arithmetic floor counts the dense products no structured step avoids
(`lab.chen2022.arithmetic_floor`: the experts' noise patches forward and backward, an MoE router's two
products) over every step of the committed runs of the same configurations, and divides the FLOP by
the bench summary's one-thread DGEMM rate times the cores; for float32 by twice that rate (SGEMM's
SIMD lanes hold twice as many numbers). It is reported only when the committed runs were trained by
the same code as the timed ones, so that their step counts are the timed run's."""


def _identity(run: dict) -> str:
    return json.dumps({k: run.get(k) for k in CONFIG_FIELDS}, sort_keys=True)


def timed_runs(results: Results, record: dict[str, Any]) -> list[tuple[dict, int]]:
    """The committed runs (each once, with its training-set size) of the configurations a record timed."""
    seeds = range(record["seed"], record["seed"] + record["seeds"])
    runs = {}
    for rep in results.replications:
        same = (rep.variant, rep.dtype, rep.tier, rep.arithmetic) == (
            record["variant"],
            record["dtype"],
            record["tier"],
            "structured",
        )
        if rep.target in record["targets"] and same:
            n = rep.payload["config"]["train_sizes"][0]
            for run in rep.payload["runs"]:
                if run["seed"] in seeds and run["setting"] in record["settings"]:
                    runs[_identity(run)] = (run, n)
    return list(runs.values())


def floor_minutes(results: Results, record: dict[str, Any]) -> float | None:
    """The arithmetic floor of a timing record in minutes (None when it cannot be taken: see the text)."""
    rates = [s.payload["dgemm_gflops"] for s in results.bench if s.payload.get("dgemm_gflops")]
    runs = timed_runs(results, record)
    trained = record["run_files_at_end"] - record["run_files_at_start"]
    same_code = all(run.get("code") == record["code"] for run, _ in runs)
    if not rates or not runs or len(runs) != trained or not same_code:
        return None
    rate = rates[0] * 1e9 * (2 if record["dtype"] == "float32" else 1) * record["cores"]
    return sum(run_flops(run, n) for run, n in runs) / rate / 60


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


def timing_section(results: Results) -> str:
    """The timings table, or a line saying none is committed."""
    if not results.timing:
        return TIMING_TEXT + "\n\nNo timing record committed yet (`results/timing/` is empty)."
    rows = []
    for name, record in results.timing:
        wall = record["wall_seconds"] / 60
        floor = floor_minutes(results, record)
        rows.append(
            (
                name,
                code(record["command"]),
                record["run_files_at_start"],
                fixed(wall, 1),
                fixed(record["cpu_seconds"] / 60, 1),
                pct(record["cpu_seconds"] / record["wall_seconds"] / record["cores"], 0),
                fixed(floor, 1),
                "-" if floor is None else f"{wall / floor:.2f}×",
                target_status(record),
            )
        )
    head = (
        "record",
        "command",
        "run files at start",
        "wall (min)",
        "CPU (min)",
        "CPU use of the cores",
        "floor (min)",
        "wall ÷ floor",
        f"≤ {fixed(TARGET_MINUTES, 0)} min",
    )
    return TIMING_TEXT + "\n\n" + table(head, rows)
