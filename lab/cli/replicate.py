"""`python -m lab replicate TARGET ...`: replicate a paper's table or figure beside the paper's numbers."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from lab.cli.kernel_cache import compile_in_child
from lab.cli.main import UsageError, nonnegative_int, positive_int
from lab.core import registry
from lab.core.io import check_writable, check_writable_folder
from lab.core.registry import Replication, RunStore, register_command


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
        help="the models' float arithmetic (targets with training runs)",
    )
    parser.add_argument(
        "--arithmetic",
        choices=("structured", "dense"),
        default="structured",
        help="the experts' kernels on the data's structure, or the dense reference (training runs)",
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
        help="training runs at once: 1 in this process, N on a local Dask cluster of N "
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
        help="rerun N sampled stale runs of each code stamp, model, activation and filter count of the "
        "targets; only if all are identical, re-stamp every stale run as current (then exit; a later "
        "replicate re-renders without training)",
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
    """Train the runs of the named targets' run stores, then run each target in turn; the worst exit status
    wins."""
    targets = registry.replications()
    unknown = [t for t in args.targets if t not in targets]
    if unknown:
        known = ", ".join(sorted(targets)) or "none registered"
        raise UsageError(f"unknown replication target(s) {', '.join(unknown)}; known: {known}")
    if getattr(args, "check", None):
        args.out = args.out or "results/replicate"
        return run_check(args, targets)
    args.out = args.out or "reports"
    check_writable_folder(args.out, "--out")
    for path, what in ((args.json, "--json"), (args.timing, "--timing")):
        if path:
            check_writable(path, what)
    baseline = getattr(args, "baseline", None)
    if baseline is not None:
        if not getattr(args, "recertify", None):
            raise UsageError("--baseline goes with --recertify N")
        if not (Path(baseline) / "lab").is_dir():
            raise UsageError(f"--baseline {baseline}: not a checkout of the lab (no lab folder)")
    if getattr(args, "figure_only", False):  # each target redraws its figure from its JSON alone
        if getattr(args, "recertify", None) or args.timing:
            raise UsageError("--figure-only trains nothing: it goes without --recertify and --timing")
        return max(targets[t].run(args) for t in args.targets)
    stores = run_stores(targets, args.targets)
    if args.timing and len(stores) != 1:
        raise UsageError("--timing records the training runs of one run store: name targets that share one")
    write_timing = next(iter(stores)).timer(args.out) if args.timing else None  # it reads the run store
    configs = {runs: runs.configs(names, args) for runs, names in stores.items()}
    if getattr(args, "recertify", None):
        if not stores:
            print(f"recertify: {', '.join(args.targets)} keep no training runs; nothing to rerun")
            return 0
        return max(runs.recertify(configs[runs], args, compile_in_child) for runs in stores)
    every_store = all(targets[t].runs is not None for t in args.targets)

    def prepare(training: list[dict]) -> None:
        if training or not every_store:  # a re-render from stored runs computes nothing
            compile_in_child(training)

    for runs in stores:  # every target's runs, before any target reports
        runs.train(configs[runs], args, prepare)
    if not stores:
        prepare([])  # the stand-alone kernels, which the targets run themselves
    status = max(targets[t].run(args) for t in args.targets)
    if write_timing is not None:
        write_timing(args.timing, args, [config for found in configs.values() for config in found])
    return status


def run_stores(targets: dict[str, Replication], names: list[str]) -> dict[RunStore, list[str]]:
    """The run stores of the named targets (`Replication.runs`), each with its targets among `names`, in the
    order they are named."""
    stores: dict[RunStore, list[str]] = {}
    for name in names:
        if targets[name].runs is not None:
            stores.setdefault(targets[name].runs, []).append(name)
    return stores


def run_check(args: argparse.Namespace, targets: dict[str, Replication]) -> int:
    """`replicate TARGET --check K`: each run store reruns its committed runs of the named targets and
    compares them (`RunStore.check`, which checks every input before any run)."""
    bare = [t for t in args.targets if targets[t].runs is None]
    if bare:
        raise UsageError(f"--check: {bare[0]} keeps no training runs to rerun")
    stores = run_stores(targets, args.targets)
    return max(runs.check(names, args, compile_in_child) for runs, names in stores.items())
