"""Chen et al.'s replication targets as `python -m lab replicate` and the kernel cache reach them.

The targets (`REPLICATIONS`) share one run store under --out (`RUNS`, a `lab.core.registry.RunStore`):
before any named target reports, the command expands their runs (`target_runs`, a run shared by targets
once), trains those --out does not hold (`lab.chen2022.replicate.train_missing`), or re-certifies them
(`recertify_runs`) or checks them (`check_runs`, both `lab.chen2022.recertify`), and times the invocation
(`start_timing`, `lab.chen2022.timing`). `TRAINING` declares the runs that train on the lab's training
kernels (`lab.core.registry.TrainingRuns`): one of each model the targets train (`every_training_config`),
those whose kernels the training checks use (`check_training_config`), and one short run per
configuration whose kernels differ (`short_runs`), which
the commands have child processes run first so that they load every kernel from Numba's cache.
"""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Callable
from pathlib import Path

from lab.chen2022 import replicate as chen
from lab.chen2022.recertify import CHECKED, check, check_sample, recertify
from lab.chen2022.runs import ARITHMETIC, VARIANT_NAMES, expand, run_one
from lab.chen2022.tables import TARGET_HELP, TARGETS
from lab.chen2022.timing import Stopwatch, by_model, write_timing
from lab.core.errors import InputError
from lab.core.registry import Replication, RunStore, TrainingRuns

# sizes, coefficients (the learning rate, the init's scale), data and the options computed around the
# kernels (load balancing, the expert update, the init): they change no array's type, so one child run
# covers all their values
_VALUES_ONLY = (
    "setting",
    "seed",
    "tier",
    "steps",
    "filters",
    "J",
    "M",
    "lb_coef",
    "load_balancing",
    "same_init",
    "expert_update",
    "eta",
    "sigma0",
)
_CHILD_STEPS = 2
Prepare = Callable[[list[dict]], object]


def target_runs(names: list[str], args: argparse.Namespace) -> list[dict]:
    """The run configs of every named target (a run shared by targets once)."""
    configs = {}
    for target in names:
        for config in chen.target_configs(target, args):
            configs[chen.run_key(config)] = config
    return list(configs.values())


def train_runs(configs: list[dict], args: argparse.Namespace, prepare: Prepare) -> None:
    """Train the runs of `configs` that --out does not hold (`lab.chen2022.replicate.train_missing`); under
    `--timing`, one model at a time with the machine's peak rate calibrated before and after each, their
    kernels prepared once for all of them first, as without `--timing`."""
    stopwatch = _TIMED.get(args.out) if args.timing else None
    if stopwatch is None:
        chen.train_missing(configs, args.out, args.jobs, args.keep_stale, args.quiet, prepare)
        return
    found = chen.held(configs, args.out, args.keep_stale)
    prepare([config for config in configs if chen.run_key(config) not in found])
    for model, group in by_model(configs):
        stopwatch.calibrate(model, group, "before")
        chen.train_missing(group, args.out, args.jobs, args.keep_stale, args.quiet)
        stopwatch.calibrate(model, group, "after")


def recertify_runs(configs: list[dict], args: argparse.Namespace, prepare: Prepare) -> int:
    """`replicate TARGETS --recertify N [--baseline DIR]` (`lab.chen2022.recertify.recertify`): its line;
    exit status 1 when a rerun differs."""
    baseline = getattr(args, "baseline", None)
    base = Path(baseline) if baseline is not None else None
    found = recertify(configs, Path(args.out), args.recertify, not args.quiet, prepare, base)
    print(found.line(chen.run_code()))
    return 1 if found.differ else 0


def check_runs(names: list[str], args: argparse.Namespace, prepare: Prepare) -> int:
    """`replicate TARGET --check K` (`lab.chen2022.recertify.check`): every input checked before any run."""
    given = [
        flag
        for flag, value, default in (
            ("--recertify", getattr(args, "recertify", None), None),
            ("--baseline", getattr(args, "baseline", None), None),
            ("--figure-only", getattr(args, "figure_only", False), False),
            ("--json", args.json, None),
            ("--timing", args.timing, None),
            ("--keep-stale", args.keep_stale, False),
            ("--jobs", args.jobs, 1),
            ("--seeds", args.seeds, 10),
            ("--seed", args.seed, 0),
            ("--settings", list(args.settings), [1, 2, 3, 4]),
            *((f"--{key}", getattr(args, key), value) for key, value in CHECKED.items()),
        )
        if value != default
    ]
    if given:
        raise InputError(
            f"--check reruns runs of a committed summary as it holds them: it goes without {given[0]}"
        )
    samples = [check_sample(target, args.variant, args.out, args.check) for target in names]
    status = 0
    for sample in samples:
        found = check(sample, not args.quiet, prepare)
        print(found.line() + "\n\n" + found.table())
        status = max(status, found.status)
    return status


def start_timing(out: str) -> Callable[[str, argparse.Namespace, list[dict]], None]:
    """Start the `--timing` record of an invocation (`lab.chen2022.timing`): `write(path, args, configs)`."""
    stopwatch = _TIMED[out] = Stopwatch.start(out)
    return lambda path, args, configs: write_timing(path, stopwatch, args, configs)


_TIMED: dict[str, Stopwatch] = {}  # the invocation's `--timing` stopwatch by --out (`train_runs` calibrates)


RUNS = RunStore(target_runs, train_runs, recertify_runs, check_runs, start_timing)
REPLICATIONS = [
    Replication(target, TARGET_HELP[target], functools.partial(chen.run_target, target), RUNS)
    for target in TARGETS
]


def every_training_config() -> list[dict]:
    """One run of every replicate target in both variants and both arithmetics, float64."""
    return [
        config
        for target in TARGETS
        for variant in VARIANT_NAMES
        for arithmetic in ARITHMETIC
        for config in expand(target, [1, 2, 3, 4], 1, variant=variant, arithmetic=arithmetic)
    ]


def check_training_config() -> list[dict]:
    """The runs of `every_training_config` whose kernels the training checks use: the dense arithmetic
    (one set of kernels for every model) and the structured cubic MoE (Thm 4.2's conditions,
    `proof_monitors.theorem_config`); the structured kernels of other activations train no check."""
    return [
        config
        for config in every_training_config()
        if config["arithmetic"] == "dense"
        or (config["model"] == "moe (nonlinear)" and config["activation"] == "cubic")
    ]


def short_runs(configs: list[dict]) -> list[dict]:
    """One quick two-step run per configuration that differs in more than `_VALUES_ONLY`."""
    chosen: dict[str, dict] = {}
    for config in configs:
        rest = {k: v for k, v in config.items() if k not in _VALUES_ONLY}
        quick = {k: config[k] for k in _VALUES_ONLY if k in config} | {"seed": 0, "tier": "quick"}
        chosen.setdefault(json.dumps(rest, sort_keys=True), rest | quick)
    return [config | {"steps": _CHILD_STEPS} for config in chosen.values()]


def apart_from_structured_moe(config: dict) -> bool:
    """A structured single CNN or a dense run: compiled in a child of their own on two cores or more, apart
    from the structured MoE runs, whose kernels they barely share (replicate's targets: the singles' general
    structured step beside the MoE's; verify's checks: the routed kernels beside the structured cubic MoE)."""
    return config.get("arithmetic") != "structured" or config["model"].startswith("single")


TRAINING = TrainingRuns(
    "chen2022", every_training_config, short_runs, apart_from_structured_moe, run_one, check_training_config
)
