"""`python -m lab bench-history`: the benchmarks' machine-independent units across the commits that touched
`lab/kernels/`, and the first commit at which each moved beyond a threshold.

Per commit, oldest first, a temporary `git worktree` (removed afterwards) runs that commit's
`benchmarks/` with this interpreter, that commit's `lab` (`PYTHONPATH`) and an empty Numba cache of its
own; a commit whose benchmarks fail is recorded with one line why. The units, the history file, the
report and the figure are `lab.kernels.bench.history`'s; `--report-only JSON` and `--figure JSON` read a
written history and run nothing. Exit 1 when a unit regressed.
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lab.cli.main import positive_int
from lab.core import plots
from lab.core.errors import InputError
from lab.core.io import check_writable, write_json_atomic
from lab.core.registry import register_command
from lab.kernels.bench import history
from lab.kernels.bench.compile_profile import machine

DEFAULT_OUT = "results/bench/history.json"
KERNELS = "lab/kernels/"


def _git(*args: str, cwd: Path | None = None) -> str:
    """git's output; its first line of error as an InputError."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        first = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[0]
        raise InputError(f"git {args[0]}: {first}")
    return done.stdout


def kernel_commits(root: Path, count: int, span: str | None) -> list[dict[str, str]]:
    """The last `count` commits that touched `lab/kernels/`, or those in `span` (A..B), oldest first: full
    and short hash, date, subject."""
    limit = [span] if span else [f"-{count}"]
    out = _git("log", "--format=%H%x1f%h%x1f%cs%x1f%s", *limit, "--", KERNELS, cwd=root)
    fields = ("full", "hash", "date", "subject")
    found = [dict(zip(fields, line.split("\x1f"), strict=True)) for line in out.splitlines()]
    if not found:
        raise InputError(f"no commit {'in ' + span + ' ' if span else ''}touched {KERNELS}")
    return found[::-1]


def _why(returncode: int, output: str, select: str | None) -> str:
    """One line: why a commit's benchmarks gave no run (pytest's first FAILED or ERROR line, else its first
    error line, else its last line)."""
    if returncode == 5:
        return f"no benchmark collected{f' for -k {select!r}' if select else ''}"
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    found = [line for line in lines if line.startswith(("FAILED ", "ERROR "))]
    found += [line for line in lines if line.startswith("E ")] + lines[-1:] + ["no output"]
    return f"pytest exit status {returncode}: {found[0][:200]}"


def run_benchmarks(tree: Path, out: Path, env: dict[str, str], args: argparse.Namespace) -> str | None:
    """Run the benchmarks of the worktree `tree` into the pytest-benchmark file `out`; None, else why not."""
    if not (tree / "benchmarks").is_dir():
        return "no benchmarks/ folder"
    command = [
        *(sys.executable, "-m", "pytest", str(tree / "benchmarks"), "--benchmark-only"),
        *(f"--benchmark-json={out}", "-p", "no:cacheprovider", "-q"),
    ]
    command += ["-k", args.select] if args.select else []
    command += [f"--benchmark-min-rounds={args.min_rounds}"] if args.min_rounds else []
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode or not out.exists():
        return _why(done.returncode, done.stdout + done.stderr, args.select)
    return None


def measure(root: Path, commit: dict[str, str], args: argparse.Namespace) -> dict | str:
    """One commit's units (`history.units`), or one line why there are none; its worktree removed after
    (an InputError if git cannot remove it)."""
    with tempfile.TemporaryDirectory(prefix="bench-history-") as scratch:
        tree, cache, out = Path(scratch, "tree"), Path(scratch, "numba-cache"), Path(scratch, "run.json")
        cache.mkdir()
        try:
            _git("worktree", "add", "--detach", "--quiet", str(tree), commit["full"], cwd=root)
        except InputError as exc:
            return str(exc)
        try:
            env = os.environ | {"PYTHONPATH": str(tree), "NUMBA_CACHE_DIR": str(cache)}
            return run_benchmarks(tree, out, env, args) or history.units(out)
        except InputError as exc:  # pytest-benchmark's file is damaged
            return str(exc)
        finally:
            _git("worktree", "remove", "--force", str(tree), cwd=root)


def _run(args: argparse.Namespace) -> int:
    check_writable(args.out, "--out")
    root = Path(_git("rev-parse", "--show-toplevel").strip())
    commits = kernel_commits(root, args.commits, args.range)
    measured = []
    for i, commit in enumerate(commits, 1):
        start = time.monotonic()
        found = measure(root, commit, args)
        what = f"{len(found)} values" if isinstance(found, dict) else f"not measured: {found}"
        seconds = time.monotonic() - start
        print(f"[{i}/{len(commits)}] {commit['hash']} {what} ({seconds:.0f} s)", file=sys.stderr, flush=True)
        measured.append(found)
    shown = [{k: c[k] for k in ("hash", "date", "subject")} for c in commits]
    date = datetime.date.today().isoformat()
    data = history.history(shown, measured, machine(), date, args.select)
    write_json_atomic(args.out, data)
    print(f"wrote {args.out}: {len(commits)} commits, {len(data['series'])} series")
    return _report(data, Path(args.out), args.threshold, figure=True)


def _report(data: dict, path: Path, threshold: float, figure: bool) -> int:
    """The report's lines (and the figure beside `path`); exit 1 when a unit regressed."""
    found = history.regressions(data, threshold)
    if figure and plots.available():
        print(f"wrote {history.draw_figure(data, found, path.with_suffix('.png'), threshold)}")
    elif figure:
        print(plots.PLOTS_HINT)
    print("\n".join(history.report(data, found, threshold)))
    return 1 if found else 0


def _read(args: argparse.Namespace) -> int:
    path = Path(args.report_only or args.figure)
    if args.figure and not plots.available():
        raise InputError(plots.PLOTS_HINT)
    data = history.load_history(path)  # else one line naming it
    if args.figure:
        found = history.regressions(data, args.threshold)
        print(f"wrote {history.draw_figure(data, found, path.with_suffix('.png'), args.threshold)}")
        return 0
    return _report(data, path, args.threshold, figure=False)


def threshold(text: str) -> float:
    """A relative move strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (0.2 is 20 %), got {value}")
    return value


def span(text: str) -> str:
    """A git revision range A..B."""
    if ".." not in text:
        raise argparse.ArgumentTypeError(f"must be a git range A..B, got {text!r}")
    return text


@register_command(
    "bench-history", "The benchmarks' fractions of DGEMM and ratios across the kernels' commits"
)
def configure(parser: argparse.ArgumentParser):
    what = parser.add_mutually_exclusive_group()
    what.add_argument(
        "--commits",
        type=positive_int,
        default=10,
        metavar="N",
        help=f"the last N commits that touched {KERNELS} (default 10)",
    )
    what.add_argument(
        "--range", type=span, metavar="A..B", help=f"the commits in A..B that touched {KERNELS}"
    )
    what.add_argument("--report-only", metavar="JSON", help="only print the report of a written history")
    what.add_argument("--figure", metavar="JSON", help="only redraw the figure beside a written history")
    parser.add_argument("--select", metavar="EXPR", help="run only the benchmarks pytest -k EXPR selects")
    parser.add_argument(
        "--min-rounds",
        type=positive_int,
        metavar="N",
        help="pytest-benchmark's --benchmark-min-rounds (benchmarks that set their own rounds keep them)",
    )
    parser.add_argument(
        "--threshold",
        type=threshold,
        metavar="FRACTION",
        default=history.THRESHOLD,
        help="a fraction of DGEMM dropping, or a ratio rising, by more than this against the previous "
        f"commit that measured it is a regression (default {history.THRESHOLD}, "
        f"{100 * history.THRESHOLD:g} %%)",
    )
    parser.add_argument(
        "--out", default=DEFAULT_OUT, metavar="JSON", help=f"the history JSON (default {DEFAULT_OUT})"
    )
    return lambda args: _read(args) if args.report_only or args.figure else _run(args)
