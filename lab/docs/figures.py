"""Figures drawn from the committed results beside them (PNG; optional: none without matplotlib).

The pages only link them: `python -m lab docs` draws them, and `--check` asks only that they exist,
since matplotlib's bytes differ across its versions.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from lab.chen2022.sweep_studies import GD_RATE_SWEEPS, gd_papers, rate_rows
from lab.core import plots
from lab.docs.markdown import fixed
from lab.docs.results import Results

# Panels of the rates figure, (quantity, title, the proof's rate, its exponent in d): the d study's fitted
# quantities (the findings' table of exponents), and E.3's ratio beside E.3's ‖h‖∞.
RATE_PANELS = (
    ("h_inf_T1", "E.3: ‖h‖∞ at T1", "σ0^1.5 = d^(−1/2)", -0.5),
    ("h_inf_T1_over_sigma0_1_5", "E.3: ‖h‖∞(T1)/σ0^1.5", "O(1)", 0.0),
    ("other_projection_T1_over_sigma0", "E.6: largest other projection at T1, over σ0", "Õ(1)", 0.0),
    ("center_only_gap_end", "E.14: ‖h(x̄) − h(x)‖∞ at the end (after T2)", "Õ(d^−0.005)", -0.005),
    ("profession_spread_end", "E.16: Δ_Θ within professions at the end (after T2)", "Õ(d^−0.001)", -0.001),
)
# The figure of these quantities against d, relative to the results folder (linked by the d study's finding).
PROOF_CHAIN_FIGURE = "proof_chain/rates.png"
# Table 11's plain-GD rate study, relative to the results folder (linked by the tables-10-11 finding).
GD_RATE_FIGURE = "sweeps/table11_gd_rate.png"
COLUMNS = 3


def figure_paths(results: Results, folder: str | Path) -> list[Path]:
    """The figures the committed results call for: Theorem 4.2's rates, Table 11's plain-GD rate study."""
    paths = [] if results.proof_chain is None else [Path(folder) / PROOF_CHAIN_FIGURE]
    if any(name in results.sweeps for name, _ in GD_RATE_SWEEPS):
        paths.append(Path(folder) / GD_RATE_FIGURE)
    return paths


def write_figures(results: Results, folder: str | Path) -> list[Path]:
    """Draw every figure the results call for into `folder` (none, with a hint, without matplotlib)."""
    paths = figure_paths(results, folder)
    if paths and not plots.available():
        print(plots.PLOTS_HINT, file=sys.stderr)
        return []
    for path in paths:
        if path.name == Path(GD_RATE_FIGURE).name:
            gd_rate_figure(results, path)
        else:
            rates_figure(results.proof_chain, path)
    return paths


def gd_rate_figure(results: Results, path: str | Path) -> None:
    """Table 11's plain GD: test accuracy against the experts' rate, one panel per variant swept."""
    found = [(name, how) for name, how in GD_RATE_SWEEPS if name in results.sweeps]
    plt = plots.pyplot()
    fig, axes = plt.subplots(1, len(found), figsize=(6 * len(found), 4), squeeze=False)
    papers = gd_papers()
    for ax, (name, how) in zip(axes[0], found, strict=True):
        rows = rate_rows(results.sweeps[name])  # the mean per rate: the sweep report's statistics
        for lb, label, colour in (("switch", "with LB", "tab:blue"), ("none", "no LB", "tab:orange")):
            runs = [r for r in results.sweeps[name]["runs"] if r["params"]["load_balancing"] == lb]
            finite = [
                (r["params"]["eta"], r["metrics"]["test_accuracy"])
                for r in runs
                if "test_accuracy" in r["metrics"]
            ]
            wild = [r["params"]["eta"] for r in runs if "diverged_at" in r["metrics"]]
            means = [
                (row["eta"], row["mean"])
                for row in rows
                if row["load_balancing"] == lb and row["mean"] is not None
            ]
            if finite:
                ax.scatter(*zip(*finite, strict=True), s=14, color=colour, alpha=0.4, linewidths=0)
                ax.plot(*zip(*means, strict=True), "o-", color=colour, label=label)
            if wild:
                ax.scatter(wild, [45.0] * len(wild), marker="x", color=colour, label=f"{label}: diverged")
            ax.axhline(papers[lb][0], color=colour, ls="--", lw=1)
        ax.set_xscale("log")
        ax.set_xlabel("plain-GD expert rate η")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(f"Table 11, plain GD, {how} (dashed: the paper's rows)", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    plots.save_figure(fig, path)


def rates_figure(report: dict, path: str | Path) -> list[str]:
    """Theorem 4.2's quantities against d, one panel each, with the proof's rates; the panel titles.

    Medians and fits are the report's `analysis` (`lab.sweeps.proof_chain.proof_chain_fits`)."""
    d = np.array([r["params"]["d"] for r in report["runs"]], dtype=float)
    metrics = [r["metrics"] for r in report["runs"]]
    analysis = report["analysis"]
    ds = np.array(analysis["d"], dtype=float)
    plt = plots.pyplot()
    rows = -(-len(RATE_PANELS) // COLUMNS)
    fig, axes = plt.subplots(rows, COLUMNS, figsize=(4.6 * COLUMNS, 3.8 * rows), squeeze=False)
    for ax, (key, label, rate, exponent) in zip(axes.ravel(), RATE_PANELS, strict=False):
        values = np.array([m[key] for m in metrics], dtype=float)
        _rate_panel(ax, (d, values), ds, analysis["fits"][key], rate, exponent)
        ax.set_title(label, fontsize=9)
    for ax in axes.ravel()[len(RATE_PANELS) :]:
        fig.delaxes(ax)
    fig.suptitle(
        f"Theorem 4.2's proof along runs (Chen et al. 2022): {len(metrics)} runs of Algorithm 1 against d",
        fontsize=10,
    )
    fig.tight_layout()
    plots.save_figure(fig, path)
    return [label for _, label, _, _ in RATE_PANELS]


def _rate_panel(ax: Any, runs: tuple, ds: np.ndarray, fit: dict, rate: str, exponent: float) -> None:
    """One quantity: runs (d, value), median per d, fitted c·d^slope (the report's), the stated rate
    through the fit at the least d."""
    slope, (lo, hi), log_c = fit["slope"], fit["interval"], fit["log_c"]
    grid = np.geomspace(ds[0], ds[-1], 50)
    ax.scatter(*runs, s=12, color="tab:blue", alpha=0.25, linewidths=0, label="runs")
    ax.plot(ds, fit["median"], "D", color="tab:blue", ms=6, label="median over seeds")
    fitted = np.exp(log_c) * grid**slope
    fit_label = f"fit d^{fixed(slope, 2)} (95 % [{fixed(lo, 2)}, {fixed(hi, 2)}])"
    ax.plot(grid, fitted, color="tab:orange", lw=1.5, label=fit_label)
    ax.plot(grid, fitted[0] * (grid / grid[0]) ** exponent, "k--", lw=1, label=f"stated: {rate}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(ds, [f"{x:g}" for x in ds])
    ax.tick_params(axis="x", which="minor", bottom=False, labelbottom=False)
    ax.set_xlabel("d")
    ax.legend(fontsize=7)
