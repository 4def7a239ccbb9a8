"""The benchmarks' machine-independent units across commits (`python -m lab bench-history`): the history
file, the first commit at which each unit moved beyond a threshold, and the figure.

A unit is an `extra_info` field of a pytest-benchmark run that is a ratio taken within that one run, so
that runs on a busy or another machine still compare: `fraction_of_*` (a kernel's rate over a GEMM rate,
`fraction_of_dgemm` among them; higher is better) and `*ratio_to_*`, `time_to_*` (a time, or FLOPs,
over another's; lower is better). Times, rates and counts measure the machine and are left out. The
runs are read by `report.load_run`, the one reader of pytest-benchmark files; the caller names the
commits and runs them.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.core import plots
from lab.core.errors import InputError
from lab.core.schema import COUNT, TEXT, Each, Is, ResultsError, load
from lab.kernels.bench.report import load_run

HISTORY_FORMAT = "moe-lab bench history 1"
HISTORY_NAME = "history.json"  # its name in results/bench/, beside the benchmark summaries
THRESHOLD = 0.2  # the relative move of a unit, from the previous commit that measured it, that is reported
HIGHER, LOWER = "higher", "lower"  # which way a unit is better


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


VALUES = Is(
    "a list of finite numbers or nulls",
    lambda v: isinstance(v, list) and all(x is None or _finite(x) for x in v),
)
HISTORY = {  # the schema of the file `history` gives
    "date": TEXT,
    "machine": {"cpu": TEXT, "cores": COUNT},
    "select?": TEXT,
    "commits": Each({"hash date subject": TEXT, "failed?": TEXT}, "commit", least=1),
    "series": Each(
        {
            "benchmark unit": TEXT,
            "better": Is("'higher' or 'lower'", lambda v: v in (HIGHER, LOWER)),
            "values": VALUES,
        },
        "series",
    ),
}


def better(unit: str) -> str | None:
    """Which way the `extra_info` field `unit` is better, or None when it is no machine-independent unit."""
    if unit.startswith("fraction_of_"):
        return HIGHER
    if "ratio_to_" in unit or unit.startswith("time_to_"):
        return LOWER
    return None


def units(path: Path) -> dict[tuple[str, str], float]:
    """The units of the pytest-benchmark run at `path`, {(benchmark's full name, unit): value}; a damaged
    file, or a benchmark in it without a full name, is an InputError naming the file."""
    found = {}
    for i, bench in enumerate(load_run(path)["benchmarks"]):
        if not isinstance(bench, dict) or not isinstance(bench.get("fullname"), str):
            raise InputError(f"{path}: benchmark {i} has no full name")
        extra = bench.get("extra_info") or {}
        found |= {(bench["fullname"], k): v for k, v in extra.items() if better(k) and _finite(v)}
    return found


def history(
    commits: list[dict[str, str]],
    measured: list[dict[tuple[str, str], float] | str],
    machine: dict[str, Any],
    date: str,
    select: str | None = None,
) -> dict[str, Any]:
    """The history file: the commits in order (hash, date, subject; `failed`, one line, for a commit whose
    `measured` is that line instead of its units) and per benchmark and unit a value per commit (null where
    not measured), to 6 significant digits; the machine, the date and the benchmarks' selection."""
    keys = sorted({key for found in measured if isinstance(found, dict) for key in found})
    return {
        "format": HISTORY_FORMAT,
        "date": date,
        "machine": machine,
        "select": select,
        "commits": [
            commit | ({"failed": found} if isinstance(found, str) else {})
            for commit, found in zip(commits, measured, strict=True)
        ],
        "series": [
            {
                "benchmark": bench,
                "unit": unit,
                "better": better(unit),
                "values": [_value(found, (bench, unit)) for found in measured],
            }
            for bench, unit in keys
        ],
    }


def _value(found: dict[tuple[str, str], float] | str, key: tuple[str, str]) -> float | None:
    """A commit's value of the unit `key` to 6 significant digits; None where it was not measured."""
    return float(f"{found[key]:.6g}") if isinstance(found, dict) and key in found else None


def load_history(path: Path) -> dict[str, Any]:
    """A written history, refused in one line naming the file unless it meets `HISTORY`."""
    data = load(path, HISTORY, "a benchmark history", format=HISTORY_FORMAT)
    for i, series in enumerate(data["series"]):
        if len(series["values"]) != len(data["commits"]):
            raise ResultsError(
                f"{path}: series {i}: {len(series['values'])} values for {len(data['commits'])} commits"
            )
    return data


@dataclass(frozen=True)
class Regression:
    """A unit's first move beyond the threshold the wrong way: at commit `at` (its index), `old` → `new`."""

    benchmark: str
    unit: str
    at: int
    old: float
    new: float


def _beyond(direction: str, old: float, new: float, threshold: float) -> bool:
    """Whether `new` moved the wrong way by more than `threshold` of `old` (a positive `old` only: a
    relative move from zero or below is not judged)."""
    if old <= 0:
        return False
    moved = new / old - 1
    return moved < -threshold if direction == HIGHER else moved > threshold


def regressions(data: dict[str, Any], threshold: float = THRESHOLD) -> list[Regression]:
    """Per series, the first commit whose value moved beyond `threshold` against the previous commit that
    measured it (a fraction dropping, a ratio rising), in the order of the series."""
    found = []
    for series in data["series"]:
        measured = [(i, v) for i, v in enumerate(series["values"]) if v is not None]
        for (_, old), (i, new) in itertools.pairwise(measured):
            if _beyond(series["better"], old, new, threshold):
                found.append(Regression(series["benchmark"], series["unit"], i, old, new))
                break
    return found


def report(data: dict[str, Any], found: list[Regression], threshold: float = THRESHOLD) -> list[str]:
    """One line per commit not measured and per regression (benchmark, unit, old → new, the commit's short
    hash and subject, cut at 72 characters), then a line of totals."""
    commits = data["commits"]
    lines = [f"{c['hash']} not measured: {c['failed']}" for c in commits if c.get("failed")]
    for r in found:
        commit = commits[r.at]
        subject = commit["subject"] if len(commit["subject"]) <= 72 else commit["subject"][:71] + "…"
        lines.append(
            f"regression: {r.benchmark} {r.unit} {r.old:.4g} → {r.new:.4g} "
            f"({100 * (r.new / r.old - 1):+.1f} %) at {commit['hash']} {subject}"
        )
    measured = sum(not c.get("failed") for c in commits)
    lines.append(
        f"{len(found) or 'no'} regression{'s' * (len(found) != 1)} beyond {100 * threshold:g} % across "
        f"{len(commits)} commits ({measured} measured), {len(data['series'])} series"
    )
    return lines


def _label(series: dict[str, Any]) -> str:
    """`test_bench_x::test_y[numba] (unit)`: the benchmark without its folder and `.py`."""
    module, _, test = series["benchmark"].rpartition("::")
    return f"{Path(module).stem}::{test}" + (
        "" if series["unit"] == "fraction_of_dgemm" else f" ({series['unit']})"
    )


PANELS = ((HIGHER, "fractions of a GEMM rate (higher is better)"), (LOWER, "ratios (lower is better)"))


def draw_figure(
    data: dict[str, Any], found: list[Regression], path: Path, threshold: float = THRESHOLD
) -> Path:
    """One line per benchmark's unit across the commits (x: short hashes in order; a commit not measured
    greyed), fractions and ratios in two panels, each regression circled in red."""
    plt = plots.pyplot()
    from matplotlib.ticker import FormatStrFormatter, LogLocator

    commits, marks = data["commits"], {(r.benchmark, r.unit): r for r in found}
    panels = [(b, t) for b, t in PANELS if any(s["better"] == b for s in data["series"])] or list(PANELS[:1])
    fig, axes = plt.subplots(
        len(panels), 1, sharex=True, squeeze=False, figsize=(11, 1.2 + 3.4 * len(panels))
    )
    for ax, (direction, title) in zip(axes[:, 0], panels, strict=True):
        shown = [s for s in data["series"] if s["better"] == direction]
        for k, series in enumerate(shown):  # joined across the commits that did not measure it
            x, y = zip(*[(i, v) for i, v in enumerate(series["values"]) if v is not None], strict=True)
            style = {"color": plt.get_cmap("tab20")(k % 20), "linestyle": ("-", "--", ":")[k // 20 % 3]}
            ax.plot(x, y, marker=".", linewidth=1, label=_label(series), **style)
            if r := marks.get((series["benchmark"], series["unit"])):
                ax.plot(r.at, r.new, "o", mfc="none", mec="red", ms=12, mew=2)
        if any((s["benchmark"], s["unit"]) in marks for s in shown):
            ax.plot([], [], "o", mfc="none", mec="red", label=f"regression (beyond {100 * threshold:g} %)")
        if shown and all(v > 0 for s in shown for v in s["values"] if v is not None):
            ax.set_yscale("log")  # a relative move, the threshold's measure, is one height everywhere
            ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
            ax.yaxis.set_minor_locator(LogLocator(subs=(2, 5)))
            ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
            ax.tick_params(axis="y", which="both", labelsize=7)
        ax.set_title(title, fontsize=9)
        if shown:
            ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1))
    bottom = axes[-1, 0]
    bottom.set_xticks(range(len(commits)), [c["hash"] for c in commits], rotation=45, fontsize=7)
    for tick, commit in zip(bottom.get_xticklabels(), commits, strict=True):
        tick.set_color("0.6" if commit.get("failed") else "black")
    select = f"; selection -k {data['select']!r}" if data.get("select") else ""
    fig.suptitle(
        f"{len(commits)} commits, measured {data['date']} on {data['machine']['cpu']}{select}", fontsize=9
    )
    fig.tight_layout()
    plots.save_figure(fig, path)
    return path


def largest_move(data: dict[str, Any]) -> float | None:
    """The largest relative move of any unit between two consecutive commits that measured it: the
    history's own noise floor when the kernels did not change between them."""
    moves = [
        abs(new / old - 1.0)
        for series in data["series"]
        for old, new in itertools.pairwise(v for v in series["values"] if v is not None)
        if old
    ]
    return max(moves, default=None)
