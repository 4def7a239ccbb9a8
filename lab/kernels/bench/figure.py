"""The benchmark summary as a figure: each kernel's fraction of the one-thread DGEMM rate, best first.

Drawn by `python -m lab bench-report --summary PATH` beside the summary (`PATH` with `.png`), or again
from the JSON alone with `--figure PATH`; the rates are the summary's `statistics.kernel_rates`
(NumPy twins and peak probes left out), and one-thread DGEMM is the line at 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lab.core import plots

ALT = (
    "Each benchmarked kernel's rate as a fraction of one-thread DGEMM on the same machine and run, best "
    "first, with the line at 1 (DGEMM itself)"
)


def draw(summary: dict[str, Any], path: Path) -> Path:
    """Horizontal bars of `kernel_rates.fractions`, with the median over kernels dashed."""
    plt = plots.pyplot()
    rates = summary["statistics"]["kernel_rates"]
    rows = rates["fractions"]
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.22 * len(rows)))
    ax.barh(range(len(rows)), [fraction for _, fraction in rows], color="C0")
    ax.set_yticks(range(len(rows)), [kernel for kernel, _ in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.4, -0.6)  # best on top
    ax.axvline(1.0, color="0.3", lw=1, label="one-thread DGEMM")
    if rates.get("median") is not None:
        ax.axvline(rates["median"], color="C1", ls="--", lw=1, label=f"median {rates['median']:.2f}")
    ax.set_xlabel("fraction of one-thread DGEMM (same run)")
    machine, commit = summary["machine"], (summary.get("commit") or {}).get("id") or "?"
    ax.set_title(f"{machine.get('cpu')}, {machine.get('cores')} cores; DGEMM "
                 f"{summary['dgemm_gflops']:.1f} GFLOP/s; commit {commit[:8]}", fontsize=8)  # fmt: skip
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    plots.save_figure(fig, path)
    return path
