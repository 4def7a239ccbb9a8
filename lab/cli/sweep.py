"""`python -m lab sweep run|status|report SPEC`: grids of experiments on Dask with a resumable store.

`python -m lab sweep figure REPORT.json` redraws a written report's figure beside it from the JSON alone.

The spec format is documented in `lab.sweeps.sweep`; examples live in `sweeps/`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from lab.cli.kernel_cache import compile_in_child
from lab.cli.main import positive_int
from lab.core import plots
from lab.core.errors import InputError
from lab.core.io import check_writable, check_writable_folder
from lab.core.registry import register_command
from lab.core.schema import load
from lab.core.store import SweepStore
from lab.core.tasks import task_type
from lab.sweeps.report import (
    SWEEP_REPORT,
    build_report,
    draw_figure,
    format_status,
    group_by_fields,
    sweep_status,
    write_reports,
)
from lab.sweeps.sweep import expand, key_prefixes, load_spec, run_sweep

EPILOG = """examples:
  python -m lab sweep run sweeps/smoke.toml                 on a local Dask cluster, one worker per core
  python -m lab sweep run sweeps/table1.toml --scheduler tcp://scheduler-host:8786
  python -m lab sweep run sweeps/table1.toml --retry-failed  resume, and rerun the failed tasks
  python -m lab sweep status sweeps/table1.toml
  python -m lab sweep report sweeps/table1.toml --out reports/sweeps
  python -m lab sweep figure results/proof_chain/proof_chain.json   redraw proof_chain.png beside it
"""


@register_command("sweep", "run a grid of experiments (Dask or in-process) into a resumable SQLite store")
def configure(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """Add the run, status and report actions; return the function that dispatches to them."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    run = actions.add_parser("run", help="run the tasks the store does not hold yet")
    run.add_argument("spec", metavar="SPEC", help="TOML sweep spec (format: lab/sweep.py)")
    run.add_argument("--scheduler", metavar="ADDR", help="address of a running Dask scheduler")
    run.add_argument("--workers", type=positive_int, help="local cluster workers (default: one per core)")
    run.add_argument("--sequential", action="store_true", help="run in-process, one task after another")
    run.add_argument("--retry-failed", action="store_true", help="rerun tasks that raised")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    status = actions.add_parser("status", help="counts of done, failed and pending tasks")
    status.add_argument("spec", metavar="SPEC")
    report = actions.add_parser("report", help="Markdown, JSON and PNG reports from the store")
    report.add_argument("spec", metavar="SPEC")
    report.add_argument("--out", metavar="DIR", default="reports/sweeps", help="default reports/sweeps")
    for action in (run, status, report):
        action.add_argument("--store", metavar="PATH", help="SQLite store (default: the spec's store)")
        action.add_argument(
            "--keep-stale",
            action="store_true",
            help="treat results computed by other code (stale) as current, on purpose",
        )
    figure = actions.add_parser("figure", help="redraw a report's PNG beside its JSON (no store needed)")
    figure.add_argument("report", metavar="REPORT", help="a sweep report, <name>.json")
    return _dispatch


def _dispatch(args: argparse.Namespace) -> int:
    return {"run": _run, "status": _status, "report": _report, "figure": _figure}[args.action](args)


def _run(args: argparse.Namespace) -> int:
    """Run the sweep; exit 0 when every task is done, 1 when some failed, 130 when interrupted."""
    spec = load_spec(args.spec)
    check_writable(args.store or spec.store, "store")
    group_by_fields(spec, expand(spec))  # a [report] typo is refused before anything runs
    if args.scheduler and (args.workers or args.sequential):
        raise InputError("--scheduler: --workers and --sequential apply to local runs only")
    if task_type(spec.task).training_kernels:  # this machine's workers then load the kernels (kernel_cache)
        compile_in_child([task.params for task in expand(spec)])
    try:
        summary = run_sweep(
            spec,
            store_path=args.store,
            scheduler=args.scheduler,
            workers=args.workers,
            sequential=args.sequential,
            retry_failed=args.retry_failed,
            keep_stale=args.keep_stale,
            quiet=args.quiet,
        )
    except KeyboardInterrupt:
        print("interrupted: finished tasks are in the store; run again to resume", file=sys.stderr)
        return 130
    print(
        f"ran {len(summary.ran)} task(s) ({summary.done} done, {summary.failed} failed) on {summary.backend} "
        f"in {summary.seconds:.1f} s; {summary.already_done} were already done, "
        f"{summary.failed_skipped} failed earlier and were not retried, "
        f"{summary.stale_rerun} were stale (other code) and ran again"
    )
    _status(args)
    return 0 if summary.failed + summary.failed_skipped == 0 else 1


def _status(args: argparse.Namespace) -> int:
    """Counts of done, failed, stale and pending tasks; opens the store read-only."""
    spec = load_spec(args.spec)
    path = Path(args.store or spec.store)
    if not path.exists():
        print(f"sweep {spec.name}: no store at {path} yet; {len(key_prefixes(spec))} tasks pending")
        return 0
    with SweepStore(path, readonly=True) as store:
        print(format_status(spec, store, sweep_status(spec, store, args.keep_stale)))
    return 0


def _report(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    check_writable_folder(args.out, "--out")
    with SweepStore(args.store or spec.store, readonly=True) as store:
        report = build_report(spec, expand(spec), store, args.keep_stale)
    for path in write_reports(report, args.out):
        print(f"wrote {path}")
    return 0


def _figure(args: argparse.Namespace) -> int:
    """Draw <name>.png beside the report <name>.json from the report alone (`draw_figure`)."""
    if not plots.available():
        raise InputError(plots.PLOTS_HINT)
    path = Path(args.report)
    drawn = draw_figure(load(path, SWEEP_REPORT, "a sweep report"), path.with_suffix(".png"))
    if drawn is None:
        raise InputError(f"{path}: no finished run to draw")
    print(f"wrote {drawn}")
    return 0
