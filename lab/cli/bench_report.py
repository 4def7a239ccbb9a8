"""`python -m lab bench-report`: the command's arguments; the report and the summary are the kernels'
(`lab.kernels.bench.report`, the one reader of pytest-benchmark's saved files).

The command declares the lab's findings on its kernels (`FINDINGS`, beside the summary's writer): the
registry collects declarations from the plugins' modules, and the kernels are no plugin.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lab.core import plots
from lab.core.errors import InputError
from lab.core.io import write_json_atomic, write_text_atomic
from lab.core.registry import register_command
from lab.core.schema import load
from lab.kernels.bench import figure
from lab.kernels.bench import report as bench

FINDINGS = bench.FINDINGS


@register_command(
    "bench-report", "Markdown report of the last saved benchmark run against the one before, and its summary"
)
def configure(parser: argparse.ArgumentParser):
    parser.add_argument("--storage", default=".benchmarks", help="pytest-benchmark storage folder")
    parser.add_argument("--out", metavar="PATH", help="also write the report here")
    parser.add_argument(
        "--summary",
        metavar="PATH",
        help="also write the latest run's summary JSON (e.g. results/bench/summary.json) and its figure "
        "beside it (.png)",
    )
    parser.add_argument("--figure", metavar="PATH", help="only redraw the figure beside a written summary")
    parser.add_argument(
        "--recompute",
        metavar="PATH",
        help="only recompute the derived fields of the summary PATH from its own benchmarks, in place",
    )

    def run(args: argparse.Namespace) -> int:
        if args.figure:
            return _redraw(Path(args.figure))
        if args.recompute:
            try:
                data = json.loads(Path(args.recompute).read_text())
            except (OSError, json.JSONDecodeError) as exc:
                raise InputError(f"--recompute: {args.recompute}: not a readable summary ({exc})") from None
            write_json_atomic(args.recompute, bench.recomputed(data))
            return 0
        runs = bench.saved_runs(Path(args.storage))
        if not runs:
            raise InputError(f"--storage: no saved benchmark runs under {args.storage!r}; run `nox -s bench`")
        latest = bench.load_run(runs[-1])
        previous = bench.load_run(runs[-2]) if len(runs) > 1 else None
        text = bench.report(latest, previous)
        print(text)
        if args.out:
            write_text_atomic(args.out, text)
        if args.summary:
            data = bench.summary(latest, runs[-1].name)
            write_json_atomic(args.summary, data)
            _draw(data, Path(args.summary).with_suffix(".png"))
        return 0

    return run


def _draw(data: dict, path: Path) -> None:
    """The summary's figure (`lab.kernels.bench.figure`), or the hint when matplotlib is absent."""
    print(f"wrote {figure.draw(data, path)}" if plots.available() else plots.PLOTS_HINT)


def _redraw(path: Path) -> int:
    """`--figure PATH`: the figure beside a written summary, from the JSON alone (a damaged one named)."""
    if not plots.available():
        raise InputError(plots.PLOTS_HINT)
    _draw(
        load(path, bench.BENCH_SUMMARY, "a benchmark summary", format=bench.SUMMARY_FORMAT),
        path.with_suffix(".png"),
    )
    return 0
