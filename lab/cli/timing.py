"""`replicate --timing PATH`: the wall and CPU time of one `replicate` invocation, as a result record.

The performance page renders these records (`results/timing/*.json`). A record says how many run
files `--out` held when the invocation began, so "from an empty run directory" is a fact of the file,
not a claim, and it keeps each run the invocation trained (its configuration, steps and seconds), from
which the page counts the arithmetic floor (`lab.docs.arithmetic_floor`) and where the time went.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.core.io import write_json_atomic

TIMING_FORMAT = "moe-lab replicate timing 2"
# what a record keeps of each trained run: its configuration (`runs.expand`, with the MoE
# options of `tables.MOE_DEFAULTS`), steps and seconds
RUN_FIELDS = (
    *"model variant setting seed tier dtype arithmetic activation filters readout".split(),
    "steps",
    "seconds",
)


def _cpu_seconds() -> float:
    """User and system time of this process and of its finished children (the `--jobs` workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _run_files(out: str) -> dict[str, int]:
    """The run files under `out` by name, with their modification times (ns)."""
    return {p.name: p.stat().st_mtime_ns for p in (Path(out) / "runs").glob("*.json")}


def command(args: argparse.Namespace) -> str:
    """The invocation as a command line with every option that changes the work spelled out."""
    return (
        f"python -m lab replicate {' '.join(args.targets)} --seeds {args.seeds} --seed {args.seed} "
        f"--settings {','.join(map(str, args.settings))} --variant {args.variant} --tier {args.tier} "
        f"--dtype {args.dtype} --arithmetic {args.arithmetic} --jobs {args.jobs}"
    )


@dataclass(frozen=True)
class Stopwatch:
    """Started before an invocation's first run; `record` gives its timing record afterwards."""

    wall: float
    cpu: float
    run_files: dict[str, int]

    @classmethod
    def start(cls, out: str) -> Stopwatch:
        return cls(time.perf_counter(), _cpu_seconds(), _run_files(out))

    def trained(self, out: str) -> list[dict[str, Any]]:
        """The runs this invocation wrote (new or rewritten run files), each cut to its configuration,
        steps and seconds."""
        from lab.chen2022.tables import MOE_DEFAULTS  # model code: not loaded for other commands

        runs = []
        for name, mtime in sorted(_run_files(out).items()):
            if self.run_files.get(name) != mtime:
                record = json.loads((Path(out) / "runs" / name).read_text())
                runs.append({k: record[k] for k in (*RUN_FIELDS, *MOE_DEFAULTS) if k in record})
        return runs

    def record(self, args: argparse.Namespace) -> dict[str, Any]:
        import numba

        from lab.chen2022.runs import run_code

        return {
            "format": TIMING_FORMAT,
            "command": command(args),
            "targets": list(args.targets),
            "variant": args.variant,
            "dtype": args.dtype,
            "seeds": args.seeds,
            "tier": args.tier,
            "jobs": args.jobs,
            "cores": os.cpu_count(),
            "threads": numba.get_num_threads(),
            "run_files_at_start": len(self.run_files),
            "wall_seconds": time.perf_counter() - self.wall,
            "cpu_seconds": _cpu_seconds() - self.cpu,
            "code": run_code(),
            "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "runs": self.trained(args.out),
        }


def write_timing(path: str, stopwatch: Stopwatch, args: argparse.Namespace) -> None:
    """Write the invocation's timing record atomically to `path`."""
    write_json_atomic(path, stopwatch.record(args))
