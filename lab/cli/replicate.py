"""`python -m lab replicate TARGET ...`: replicate a paper's table or figure beside the paper's numbers."""

from __future__ import annotations

import argparse
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from lab.cli.kernel_cache import compile_in_child
from lab.cli.main import UsageError, nonnegative_int, positive_int
from lab.cli.timing import Stopwatch, write_timing
from lab.core import registry
from lab.core.io import check_writable, check_writable_folder
from lab.core.progress import Progress
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
    parser.add_argument("--out", metavar="DIR", default="reports", help="folder for tables/figures")
    parser.add_argument(
        "--jobs",
        type=positive_int,
        default=1,
        help="Chen et al. runs trained at once, in processes sharing the cores (default 1)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--timing", metavar="PATH", help="write the invocation's wall and CPU time as JSON (results/timing/)"
    )
    parser.add_argument(
        "--keep-stale", action="store_true", help="reuse run files computed by other code, on purpose"
    )
    parser.add_argument(
        "--recertify",
        type=positive_int,
        metavar="N",
        help="rerun N sampled stale runs of the targets; only if all are identical, re-stamp every "
        "stale run as current (then exit; a later replicate re-renders without training)",
    )
    return run_replicate


def run_replicate(args: argparse.Namespace) -> int:
    """Run each named replication target in turn; the worst exit status wins."""
    targets = registry.replications()
    unknown = [t for t in args.targets if t not in targets]
    if unknown:
        known = ", ".join(sorted(targets)) or "none registered"
        raise UsageError(f"unknown replication target(s) {', '.join(unknown)}; known: {known}")
    check_writable_folder(args.out, "--out")
    for path, what in ((args.json, "--json"), (args.timing, "--timing")):
        if path:
            check_writable(path, what)
    stopwatch = Stopwatch.start(args.out) if args.timing else None  # it lists every run file
    from lab.chen2022 import replicate as chen  # here: the CLI starts without the science packages
    from lab.chen2022.replicate import TARGETS

    configs = chen_configs(args)
    if getattr(args, "recertify", None):
        from lab.chen2022.recertify import recertify

        out, progress = Path(args.out), not args.quiet
        found = recertify(list(configs.values()), out, args.recertify, progress, compile_in_child)
        print(found.line(chen.run_code()))
        return 1 if found.differ else 0
    committed = chen.committed_runs(Path(args.out)) if configs else {}
    training = {key: config for key, config in configs.items() if _trains(config, args, committed)}
    if training or not TARGETS.keys() >= set(args.targets):
        compile_in_child(list(training.values()))  # a re-render from stored runs computes nothing
    if args.jobs > 1:
        train_in_parallel(args, training)
    status = max(targets[t].run(args) for t in args.targets)
    if stopwatch is not None:
        write_timing(args.timing, stopwatch, args)
    return status


def _watch_parent(parent: int, poll: float = 1.0, leave: Callable[[int], object] = os._exit) -> None:
    """Leave (exit status 1) once `parent` is no longer this process's parent: a worker whose
    `replicate` was killed stops, instead of training on as an orphan."""
    while os.getppid() == parent:
        time.sleep(poll)
    leave(1)


def _start_worker(threads: int, parent: int) -> None:
    """A worker's share of the cores for Numba's parallel kernels, and a watch on its parent."""
    import numba

    numba.set_num_threads(threads)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _train(config: dict, runs_dir: Path, keep_stale: bool) -> tuple[dict, str, bool]:
    from lab.chen2022 import replicate as chen

    record, cached = chen.load_or_run(config, runs_dir, False, keep_stale)
    return config, chen.accuracy_text(record), cached


def chen_configs(args: argparse.Namespace) -> dict[str, dict]:
    """The Chen et al. run configs of every named target, by run key (a run shared by targets once)."""
    from lab.chen2022 import replicate as chen

    configs = {}
    for target in (t for t in args.targets if t in chen.TARGETS):
        for config in chen.target_configs(target, args):
            configs[chen.run_key(config)] = config
    return configs


def _trains(config: dict, args: argparse.Namespace, committed: dict[str, dict]) -> bool:
    """Whether `replicate` will train `config`: neither its run file in `--out` (`stored_record`) nor
    the summaries there (`committed_record`) hold its record from the current code (or `--keep-stale`)."""
    from lab.chen2022 import replicate as chen

    path = Path(args.out) / "runs" / f"{chen.run_key(config)}.json"
    if chen.stored_record(path, config, args.keep_stale)[0] is not None:
        return False
    return chen.committed_record(config, committed, args.keep_stale) is None


def train_in_parallel(args: argparse.Namespace, configs: dict[str, dict]) -> None:
    """Train the Chen et al. runs `configs` (by run key; the ones `--out` lacks), `--jobs` at a time.

    Each job is a process with cores ÷ jobs Numba threads; it stores its run as `replicate` does,
    so the targets then render from stored runs. A run's numbers do not depend on its thread count.
    """
    import numba

    if not configs:
        return
    runs_dir = Path(args.out) / "runs"
    threads = max(1, numba.get_num_threads() // args.jobs)
    spawn = multiprocessing.get_context("spawn")  # no fork of a process with Numba's thread pool
    with (
        ProcessPoolExecutor(
            args.jobs, mp_context=spawn, initializer=_start_worker, initargs=(threads, os.getpid())
        ) as pool,
        Progress(len(configs), "training", enabled=not args.quiet, lines=True, unit="run") as bar,
    ):
        futures = [pool.submit(_train, config, runs_dir, args.keep_stale) for config in configs.values()]
        try:
            for future in as_completed(futures):
                config, accuracy, cached = future.result()
                bar.step(
                    f"{config['model']} setting {config['setting']} seed {config['seed']}: "
                    f"{accuracy}{' (kept)' if cached else ''}"
                )
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
