"""`replicate --timing PATH`: the wall and CPU time of one `replicate` invocation, as a result record.

The performance page renders these records (`results/timing/*.json`). A record says how many runs
the run store of `--out` (`lab.chen2022.replicate.store_path`) held when the invocation began
(`run_files_at_start`), so "from an empty run store" is a fact of the file, not a claim, and it keeps
each run the invocation trained (its configuration, steps and seconds): the store rows of its runs
that are new or rewritten since it began, and per model their seconds and FLOP.

The FLOP are the arithmetic floor of a run: the dense products its structured steps cannot avoid. Under
Def. 3.1's structure (`lab.kernels.structured`) a signal patch costs one small product per expert and
step, so a step of Algorithm 1 leaves two kinds of dense work: the experts' noise patches (P − S of them,
S = `data.SIGNAL_ROLES`), forward ⟨w, ξ⟩ and backward Σ coef·σ'·ξ (E.2), each 2·n·J·width FLOP per
patch, in the run's dtype; and an MoE's router, h = sΘ and ∇Θ = sᵀ∂h (2·n·d·M each), in float64 in
every run (`ROUTER_DTYPE`: `training.prepare` keeps s in float64). Linear experts collapse to one filter
on one patch (`plan.LinearExperts`). A multiply-add counts as two. A model's totals keep the router's
share apart (`router_flops`), so its floor counts each part at its own dtype's peak rate.

The clocks are the lab's (`lab.core.timing.Stopwatch`); the run store and the model code are imported in
the functions that read them, after the clocks have started.

A record calibrates itself: `replicate --timing` trains one model's runs at a time and measures this
machine's peak multiply-add rate on one core before and after each (`Stopwatch.calibrate`, the best of
`CALIBRATION_ROUNDS` rounds of `lab.kernels.bench.peak`), in the run's dtype and, around a float32
record's MoE models, in the router's float64 too (`calibrated_dtypes`), so each model's "× the
arithmetic floor" is a ratio within one run and one machine (`calibration`; per model its
`peak_gflops` and `router_peak_gflops`, the better of the two). Beside them it times one step's dense
products as one-thread GEMM (`lab.kernels.bench.gemm`, `gemm`; per model `gemm_seconds`, its runs' steps
at the faster of the two): the same products at the rate the machine's BLAS reaches on their shapes (an
MoE's experts as one product of their FLOP). A reference, not a bound: GEMM writes each product out
whole, the lab's fused kernels do not.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from lab.core.io import write_json_atomic
from lab.core.schema import COUNT, INT, LIST, NUMBER, POSITIVE, TEXT, Each
from lab.core.timing import Stopwatch as Clock

TIMING_FORMAT = "moe-lab replicate timing 3"
CALIBRATION_ROUNDS = 7  # timed rounds of the peak chains per calibration; the best counts
ROUTER_DTYPE = "float64"  # the router's s and Θ in every run, whatever the experts' dtype
# what a record keeps of each trained run: its configuration (`runs.expand`, with the MoE
# options of `tables.MOE_DEFAULTS`), steps and seconds
RUN_FIELDS = (
    *"model variant setting seed tier dtype arithmetic activation filters readout".split(),
    "steps",
    "seconds",
)


TIMING_RUN = {
    "model variant": TEXT,
    "setting": INT,
    "tier activation": TEXT,
    "steps": INT,
    "seconds": POSITIVE,
}
TIMING = {  # the schema of a timing record (what the docs read of it)
    "command": TEXT,
    "targets": LIST,
    "variant dtype tier code": TEXT,
    "seeds run_files_at_start": INT,
    "jobs cores threads": COUNT,
    "machine?": {"cpu numba_cpu": TEXT},  # `environment()`; records made before it have none
    "wall_seconds cpu_seconds": POSITIVE,
    "runs": Each(TIMING_RUN, "run"),
    "models": Each(  # `model_totals`
        {"model": TEXT, "runs": INT, "seconds flops": POSITIVE, "router_flops": NUMBER}, "model"
    ),
}


def _stored(out: str) -> frozenset[tuple[int, int, int]]:
    """Each run in the run store of `out` as its key's 128-bit prefix and its seconds in nanoseconds:
    a run trained again has other seconds. Empty without a store."""
    from lab.chen2022.replicate import TASK, store_path
    from lab.core.store import SweepStore

    if not store_path(out).exists():
        return frozenset()
    with SweepStore(store_path(out), readonly=True) as store:
        table = store.task_table(TASK, None)
    return frozenset(zip(*(column.tolist() for column in (*table.prefix.T, table.nanoseconds)), strict=True))


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

    clock: Clock
    stored: frozenset[tuple[int, int, int]]
    calibration: list[dict[str, Any]] = field(default_factory=list)
    gemm: list[dict[str, Any]] = field(default_factory=list)

    def calibrate(self, model: str, configs: list[dict[str, Any]], when: str) -> None:
        """This machine's peak multiply-add rate on one core now in each dtype the floor of `model`'s run
        `configs` needs (`calibrated_dtypes`), in GFLOP/s, and the seconds of one of their steps' dense
        products as one-thread GEMM (`lab.kernels.bench.gemm`; the runs of one model share their shapes),
        `when` before or after its runs."""
        from lab.chen2022.runs import TIER_SIZES
        from lab.kernels.bench.gemm import gemm_seconds
        from lab.kernels.bench.peak import peak_rate

        for dtype in calibrated_dtypes(configs):
            rate = peak_rate(dtype, CALIBRATION_ROUNDS) / 1e9
            self.calibration.append({"model": model, "when": when, "dtype": dtype, "gflops": rate})
        shapes = {tuple(step_products(c, TIER_SIZES[c["tier"]][0])) for c in configs}
        if len(shapes) != 1:  # one GEMM step per model: its runs' steps all have these products
            raise ValueError(f"the runs of {model} differ in their step's products: {sorted(shapes)}")
        seconds = gemm_seconds(list(shapes.pop()), CALIBRATION_ROUNDS)
        self.gemm.append({"model": model, "when": when, "step_seconds": seconds})

    @classmethod
    def start(cls, out: str) -> Stopwatch:
        """Started now; the run store is read after the clocks (its first read loads the model code)."""
        return cls(Clock.start(), _stored(out))

    def trained(self, out: str, configs: list[dict]) -> list[dict[str, Any]]:
        """The runs of `configs` this invocation wrote (new or rewritten store rows), each cut to its
        configuration, steps and seconds."""
        from lab.chen2022.replicate import store_record, stored_rows
        from lab.chen2022.tables import MOE_DEFAULTS  # model code: not loaded for other commands

        new = {run[:2] for run in _stored(out) - self.stored}
        runs = []
        for row in stored_rows(configs, out).values():
            if (int(row.key[:16], 16), int(row.key[16:32], 16)) in new:
                record = store_record(row)
                runs.append({k: record[k] for k in (*RUN_FIELDS, *MOE_DEFAULTS) if k in record})
        return runs

    def record(self, args: argparse.Namespace, configs: list[dict]) -> dict[str, Any]:
        import numba

        from lab.chen2022.runs import run_code
        from lab.core.provenance import environment

        wall, cpu = self.clock.elapsed()  # before the store is read
        runs = self.trained(args.out, configs)
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
            "run_files_at_start": len(self.stored),
            "wall_seconds": wall,
            "cpu_seconds": cpu,
            "code": run_code(),
            "machine": environment(),
            "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "runs": runs,
            "models": model_totals(runs, self.calibration, self.gemm),
            "calibration": self.calibration,
            "gemm": self.gemm,
        }


def run_train_config(run: dict) -> Any:
    """The experts' `TrainConfig` of a replication run record, as `replicate` built it."""
    from lab.chen2022.runs import moe_run_config, single_run_config

    if run["model"].startswith("single"):
        return single_run_config(run).expert
    return moe_run_config(run)


def router_step_flops(run: dict, n: int, cfg: Any = None) -> float:
    """FLOP of an MoE router's two products in one training step of `run` on n samples (0 for a single);
    `cfg`, the run's `run_train_config` when the caller has it."""
    from lab.chen2022 import data

    if run["model"].startswith("single"):
        return 0.0
    return float(2 * 2 * n * data.setting(run["setting"]).d * (cfg or run_train_config(run)).M)


def step_products(run: dict, n: int) -> list[tuple[int, int, int, str]]:
    """The dense products of one training step of `run` on n samples (see the module text) as GEMM shapes
    (rows, inner, cols, dtype), each made forward and backward: the experts' noise patches by their
    filters (an MoE's split by expert, here as one product of the same FLOP), and an MoE's router."""
    from lab.chen2022 import data

    cfg, setting = run_train_config(run), data.setting(run["setting"])
    linear = cfg.activation == "linear"
    patches = 1 if linear else setting.P - len(data.SIGNAL_ROLES)
    experts = (n * patches, setting.d + int(cfg.bias), 1 if linear else cfg.J, run["dtype"])
    routed = not run["model"].startswith("single")
    return [experts, *([(n, setting.d, cfg.M, ROUTER_DTYPE)] if routed else [])]


def step_flops(run: dict, n: int) -> float:
    """FLOP of the dense products in one training step of `run` on n samples (`step_products`)."""
    from lab.kernels.bench.gemm import gemm_flops

    return gemm_flops(step_products(run, n))


def run_flops(run: dict, part=step_flops) -> float:
    """FLOP of the dense products (or of `part` of them) over all of `run`'s training steps, on its
    tier's training set."""
    from lab.chen2022.runs import TIER_SIZES

    return part(run, TIER_SIZES[run["tier"]][0]) * run["steps"]


def model_name(run: dict[str, Any]) -> str:
    """The model a run trains, with its size: what a record totals and calibrates by."""
    if run["model"].startswith("single"):
        return f"{run['model']}, {run['filters']} filters"
    from lab.chen2022.tables import MOE_DEFAULTS

    run = MOE_DEFAULTS | run
    return f"{run['model']}, M = {run['M']}, J = {run['J']}"


def calibrated_dtypes(configs: list[dict[str, Any]]) -> tuple[str, ...]:
    """The dtypes whose peak rate the floor of one model's runs `configs` needs: theirs, and the router's
    when they have one in another dtype."""
    dtype = configs[0]["dtype"]
    routed = any(not c["model"].startswith("single") for c in configs)
    return (dtype, ROUTER_DTYPE) if routed and dtype != ROUTER_DTYPE else (dtype,)


def by_model(configs: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The run configs grouped by `model_name`, sorted by it."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for config in configs:
        groups[model_name(config)].append(config)
    return sorted(groups.items())


def model_totals(
    runs: list[dict[str, Any]], calibration: list[dict[str, Any]] = (), gemm: list[dict[str, Any]] = ()
) -> list[dict[str, Any]]:
    """Per model (sorted by its name and size): its runs, their own seconds, their FLOP and the router's
    share of them, the best peak rates calibrated around its runs, in the runs' dtype (`peak_gflops`)
    and in `ROUTER_DTYPE` (`router_peak_gflops`), when the record calibrated, and its runs' steps at the
    fastest one-thread GEMM step timed around them (`gemm_seconds`), when it timed one."""
    peaks: dict[tuple[str, str], float] = {}
    for c in calibration:
        key = (c["model"], c["dtype"])
        peaks[key] = max(peaks.get(key, 0.0), c["gflops"])
    fastest: dict[str, float] = {}
    for g in gemm:
        fastest[g["model"]] = min(fastest.get(g["model"], math.inf), g["step_seconds"])
    totals = []
    for m, rs in by_model(runs):
        rates = {"peak_gflops": (m, rs[0]["dtype"]), "router_peak_gflops": (m, ROUTER_DTYPE)}
        totals.append(
            {
                "model": m,
                "runs": len(rs),
                "seconds": sum(r["seconds"] for r in rs),
                "flops": sum(map(run_flops, rs)),
                "router_flops": sum(run_flops(r, router_step_flops) for r in rs),
            }
            | {name: peaks[key] for name, key in rates.items() if key in peaks}
            | ({"gemm_seconds": sum(r["steps"] for r in rs) * fastest[m]} if m in fastest else {})
        )
    return totals


def write_timing(path: str, stopwatch: Stopwatch, args: argparse.Namespace, configs: list[dict]) -> None:
    """Write the timing record of an invocation that ran the Chen et al. runs `configs`, atomically."""
    write_json_atomic(path, stopwatch.record(args, configs))
