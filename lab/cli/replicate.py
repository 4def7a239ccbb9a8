"""`python -m lab replicate TARGET ...`: replicate a paper's table or figure beside the paper's numbers."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from lab.cli.kernel_cache import compile_in_child
from lab.cli.main import UsageError, nonnegative_int, positive_int
from lab.cli.timing import Stopwatch, write_timing
from lab.core import registry
from lab.core.io import check_writable, check_writable_folder
from lab.core.registry import register_command


def settings_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a comma list of 1-4, got {text!r}") from None
    if not values or any(v not in (1, 2, 3, 4) for v in values):
        raise argparse.ArgumentTypeError(f"must be a comma list of 1-4, got {text!r}")
    return values


@register_command("replicate", "replicate a paper's table or figure beside the paper's numbers")
def configure(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    targets = registry.replications()
    parser.description = "targets: " + ", ".join(f"{k} ({v.help})" for k, v in sorted(targets.items()))
    parser.add_argument("targets", nargs="+", metavar="TARGET")
    parser.add_argument("--settings", type=settings_list, default=[1, 2, 3, 4], help="e.g. 1,3")
    parser.add_argument("--seeds", type=positive_int, default=10, help="runs per cell (default 10)")
    parser.add_argument("--seed", type=nonnegative_int, default=0, help="base seed (default 0)")
    parser.add_argument("--variant", choices=("paper", "reference-code"), default="paper")
    parser.add_argument("--tier", choices=registry.TIERS, default="full")
    parser.add_argument(
        "--dtype",
        choices=("float64", "float32"),
        default="float64",
        help="the experts' arithmetic (Chen et al.)",
    )
    parser.add_argument(
        "--arithmetic",
        choices=("structured", "dense"),
        default="structured",
        help="experts' kernels on Def. 3.1's structure, or the dense reference (Chen et al.)",
    )
    parser.add_argument("--json", metavar="PATH", help="write the runs as JSON")
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="folder for tables/figures (default reports; with --check, the committed summaries' folder "
        "results/replicate)",
    )
    parser.add_argument(
        "--jobs",
        type=positive_int,
        default=1,
        help="Chen et al. runs trained at once: 1 in this process, N on a local Dask cluster of N "
        "workers sharing the cores (default 1)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--timing", metavar="PATH", help="write the invocation's wall and CPU time as JSON (results/timing/)"
    )
    parser.add_argument(
        "--figure-only",
        action="store_true",
        help="redraw each target's figure from its committed JSON in --out (--json for makkuva-fig1); "
        "trains and rewrites nothing else",
    )
    parser.add_argument(
        "--keep-stale", action="store_true", help="reuse stored runs computed by other code, on purpose"
    )
    parser.add_argument(
        "--recertify",
        type=positive_int,
        metavar="N",
        help="rerun N sampled stale runs of the targets; only if all are identical, re-stamp every "
        "stale run as current (then exit; a later replicate re-renders without training)",
    )
    parser.add_argument(
        "--baseline",
        metavar="DIR",
        help="with --recertify: a checkout of the code that made the stale runs (e.g. a git worktree); "
        "compare the sampled reruns with the same runs under that code, for runs made on another machine",
    )
    parser.add_argument(
        "--check",
        type=positive_int,
        metavar="K",
        help="retrain the first K seeds of each cell and setting of each target's committed full-tier "
        "float64 summary in --out (of --variant) and compare them with their committed records, writing "
        "nothing; exit 1 when a run's |Δ accuracy| > 1 sd of its cell's committed seeds",
    )
    return run_replicate


def run_replicate(args: argparse.Namespace) -> int:
    """Run each named replication target in turn; the worst exit status wins."""
    targets = registry.replications()
    unknown = [t for t in args.targets if t not in targets]
    if unknown:
        known = ", ".join(sorted(targets)) or "none registered"
        raise UsageError(f"unknown replication target(s) {', '.join(unknown)}; known: {known}")
    if getattr(args, "check", None):
        args.out = args.out or "results/replicate"
        return run_check(args)
    args.out = args.out or "reports"
    check_writable_folder(args.out, "--out")
    for path, what in ((args.json, "--json"), (args.timing, "--timing")):
        if path:
            check_writable(path, what)
    baseline = getattr(args, "baseline", None)
    if baseline is not None:
        if not getattr(args, "recertify", None):
            raise UsageError("--baseline goes with --recertify N")
        if not (Path(baseline) / "lab" / "chen2022").is_dir():
            raise UsageError(f"--baseline {baseline}: not a checkout of the lab (no lab/chen2022 folder)")
    if getattr(args, "figure_only", False):  # each target redraws its figure from its JSON alone
        if getattr(args, "recertify", None) or args.timing:
            raise UsageError("--figure-only trains nothing: it goes without --recertify and --timing")
        return max(targets[t].run(args) for t in args.targets)
    stopwatch = Stopwatch.start(args.out) if args.timing else None  # it reads the run store
    from lab.chen2022 import replicate as chen  # here: the CLI starts without the science packages
    from lab.chen2022.replicate import TARGETS

    configs = chen_configs(args)
    if getattr(args, "recertify", None):
        from lab.chen2022.recertify import recertify

        out, progress = Path(args.out), not args.quiet
        base = Path(baseline) if baseline is not None else None
        found = recertify(configs, out, args.recertify, progress, compile_in_child, base)
        print(found.line(chen.run_code()))
        return 1 if found.differ else 0
    chen_only = TARGETS.keys() >= set(args.targets)

    def prepare(training: list[dict]) -> None:
        if training or not chen_only:  # a re-render from stored runs computes nothing
            compile_in_child(training)

    chen.train(configs, args.out, args.jobs, args.keep_stale, args.quiet, prepare)  # every target's runs
    status = max(targets[t].run(args) for t in args.targets)
    if stopwatch is not None:
        write_timing(args.timing, stopwatch, args, configs)
    return status


def run_check(args: argparse.Namespace) -> int:
    """`replicate TARGET --check K` (`lab.chen2022.recertify.check`): every input checked before any run."""
    from lab.chen2022.recertify import CHECKED, check, check_sample

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
        raise UsageError(
            f"--check reruns runs of a committed summary as it holds them: it goes without {given[0]}"
        )
    samples = [check_sample(target, args.variant, args.out, args.check) for target in args.targets]
    status = 0
    for sample in samples:
        found = check(sample, not args.quiet, compile_in_child)
        print(found.line() + "\n\n" + found.table())
        status = max(status, found.status)
    return status


def chen_configs(args: argparse.Namespace) -> list[dict]:
    """The Chen et al. run configs of every named target (a run shared by targets once)."""
    from lab.chen2022 import replicate as chen

    configs = {}
    for target in (t for t in args.targets if t in chen.TARGETS):
        for config in chen.target_configs(target, args):
            configs[chen.run_key(config)] = config
    return list(configs.values())
