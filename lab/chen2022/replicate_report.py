"""A replication's report: its table beside the paper's numbers, the table as a figure, and Fig. 3 and
Figs 5–6 as PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from lab.chen2022 import data
from lab.chen2022.baselines import single_config
from lab.chen2022.tables import TARGET_HELP, TARGETS, Cell
from lab.core import plots
from lab.core.schema import INT, LIST, NUMBER, TEXT, Each


def write_figures(stem: str, records: list[dict], out: Path) -> list[Path]:
    """Fig. 3 (dispatch entropy over training) and Figs 5–6 (feature/centre learning curves) as PNG."""
    moe = [r for r in records if r["model"].startswith("moe") and r.get("history")]
    if not moe:
        return []
    plt = plots.pyplot()
    written = []
    fig, ax = plt.subplots(figsize=(6, 4))
    for (model, s), colour in zip(
        sorted({(r["model"], r["setting"]) for r in moe}), plt.cm.tab10.colors * 4, strict=False
    ):
        runs = [r for r in moe if r["model"] == model and r["setting"] == s]
        for r in runs:
            ax.plot(r["history"]["step"], r["history"]["dispatch_entropy"], color=colour, alpha=0.25, lw=0.8)
        shortest = min(len(r["history"]["step"]) for r in runs)
        mean = np.mean([r["history"]["dispatch_entropy"][:shortest] for r in runs], axis=0)
        ax.plot(runs[0]["history"]["step"][:shortest], mean, color=colour, lw=2, label=f"{model}-{s}")
    ax.set_xlabel("training step")
    ax.set_ylabel("dispatch entropy (6.1), training set")
    ax.legend(fontsize=8)
    fig.subplots_adjust(left=0.11, right=0.97, bottom=0.12, top=0.96)  # fixed: tight_layout cost a third
    written.append(out / f"{stem}_entropy.png")
    plots.save_figure(fig, written[-1])
    for model in sorted({r["model"] for r in moe if "curves" in r}):
        first = min(
            (r for r in moe if r["model"] == model and "curves" in r), key=lambda r: (r["setting"], r["seed"])
        )
        fig, axes = plt.subplots(2, 2, figsize=(9, 6), sharex=True)
        titles = {
            "expert_feature": "max_j ⟨w_m,j, v_k⟩",
            "expert_center": "max_j ⟨w_m,j, c_k⟩",
            "router_feature": "⟨θ_m, v_k⟩",
            "router_center": "⟨θ_m, c_k⟩",
        }
        steps = first["curves"]["step"]
        for ax, (key, title) in zip(axes.ravel(), titles.items(), strict=True):
            values = np.asarray(first["curves"][key])  # (records, M, K)
            for k in range(values.shape[2]):
                ax.plot(steps, values[:, :, k], color=plt.cm.tab10.colors[k], lw=0.8)
            ax.set_title(title, fontsize=9)
        for ax in axes[1]:
            ax.set_xlabel("training step")
        fig.suptitle(f"{model}, setting {first['setting']}, seed {first['seed']} (colour = k)", fontsize=10)
        fig.subplots_adjust(left=0.07, right=0.98, bottom=0.09, top=0.9, hspace=0.25, wspace=0.2)
        slug = model.replace(" ", "_").replace("(", "").replace(")", "")
        written.append(out / f"{stem}_curves_{slug}.png")
        plots.save_figure(fig, written[-1])
    return written


# the colour of each variant's cells in a table's figure (`cells_figure`)
VARIANT_COLOURS = {"paper": "tab:blue", "reference-code": "tab:orange"}


def cells_figure(target: str, summaries: dict[str, dict]) -> Any:
    """A replicated table as a figure, one panel per setting: per cell and variant (`summaries`: variant ->
    its summary) the test accuracy's mean ± sample sd over the finite runs (the summary's `cells`), each
    seed's run a dot (a diverged run a cross), beside the paper's value ± its sd (a black diamond)."""
    if target not in TARGETS:
        raise ValueError(f"target must be one of {sorted(TARGETS)}, got {target!r}")
    if not summaries or not set(summaries) <= set(VARIANT_COLOURS):
        raise ValueError(
            f"summaries must map some of {list(VARIANT_COLOURS)} to a summary, got {list(summaries)}"
        )
    stored = {v: {(c["cell"], c["setting"]): c for c in s["cells"]} for v, s in summaries.items()}
    settings = sorted({setting for cells in stored.values() for _, setting in cells})
    rows = [
        cell
        for cell in TARGETS[target]
        if any(cell.label == label for c in stored.values() for label, _ in c)
    ]
    plt = plots.pyplot()
    fig, axes = plt.subplots(
        1,
        len(settings),
        figsize=(max(9.0, 3.6 * len(settings) + 2.2), 1.0 + 0.55 * len(rows)),
        sharey=True,
        squeeze=False,
    )
    offsets = np.linspace(-0.18, 0.18, len(summaries) + 1)
    for ax, s in zip(axes[0], settings, strict=True):
        for y, cell in enumerate(rows):
            if s in cell.paper:
                accuracy, sd = cell.paper[s][:2]
                ax.errorbar(accuracy, y + offsets[0], xerr=sd, fmt="D", color="black", ms=5, capsize=2)
            for dy, (variant, summary) in zip(offsets[1:], summaries.items(), strict=True):
                _variant_cell(
                    ax, y + dy, cell, s, summary["runs"], stored[variant].get((cell.label, s)), variant
                )
        gamma, sigma_p = data.setting(s).gamma, data.setting(s).sigma_p
        ax.set_title(f"setting {s}: γ ~ U({gamma.low:g}, {gamma.high:g}), σ_p = {sigma_p:g}", fontsize=8)
        ax.set_xlabel("test accuracy (%)")
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_yticks(range(len(rows)), [cell.label for cell in rows], fontsize=7)
    axes[0][0].invert_yaxis()
    handles = [plt.Line2D([], [], marker="D", color="black", ls="", label="paper ± its sd")]
    handles += [
        plt.Line2D(
            [],
            [],
            marker="o",
            color=VARIANT_COLOURS[v],
            label=f"lab, variant {v}: mean ± sd (dots: seeds, x: diverged)",
        )
        for v in summaries
    ]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=7, frameon=False)
    seeds = sorted({s["config"]["seeds"] for s in summaries.values()})
    fig.suptitle(
        f"{TARGET_HELP[target]}: the lab's cells ({'/'.join(map(str, seeds))} seeds) beside the paper's",
        fontsize=9,
    )
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


def _variant_cell(
    ax: Any, y: float, cell: Cell, setting: int, runs: list[dict], stats: dict | None, variant: str
):
    """One variant's cell in a panel of `cells_figure`: its runs as dots (crosses where they diverged)
    and the summary's mean ± sd of the finite runs."""
    colour = VARIANT_COLOURS[variant]
    mine = [r for r in runs if r["setting"] == setting and in_cell(r, cell)]
    for diverged, marker in ((False, "o"), (True, "x")):
        xs = [r["test_accuracy"] for r in mine if (r.get("diverged_at") is not None) == diverged]
        ax.scatter(xs, [y] * len(xs), s=10, marker=marker, color=colour, alpha=0.35, linewidths=0.8)
    finite = stats and stats["finite_test_accuracy"]
    if finite:
        ax.errorbar(finite["mean"], y, xerr=finite["std"], fmt="o", color=colour, ms=5, capsize=2)


def _mean_std(values: list[float]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (None for a single run)."""
    arr = np.asarray(values, dtype=float)
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else None


def _stats(values: list[float]) -> dict | None:
    """{"mean", "std"} of `values` (`_mean_std`), None when there are none."""
    if not values:
        return None
    mean, std = _mean_std(values)
    return {"mean": mean, "std": std}


def _fmt(mean: float, std: float | None, digits: int) -> str:
    return f"{mean:.{digits}f}" if std is None else f"{mean:.{digits}f} ± {std:.{digits}f}"


def in_cell(record: dict, cell: Cell) -> bool:
    """Whether a run record is a run of `cell` (its model and parameters)."""
    return record["model"] == cell.model and all(record.get(k) == v for k, v in cell.params.items())


def cell_statistics(target: str, records: list[dict]) -> list[dict]:
    """Per cell (table row, in the target's order) and setting the paper reports and the runs hold,
    over its runs: how many and how many diverged, the test accuracy of all of them and of the finite
    ones, the dispatch entropy where measured, the mean step count. A summary stores these as `cells`."""
    cells = []
    for cell in TARGETS[target]:
        for s in sorted(cell.paper):
            rows = [r for r in records if r["setting"] == s and in_cell(r, cell)]
            if not rows:
                continue
            finite = [r["test_accuracy"] for r in rows if r.get("diverged_at") is None]
            cells.append(
                {
                    "cell": cell.label,
                    "setting": s,
                    "runs": len(rows),
                    "diverged": len(rows) - len(finite),
                    "test_accuracy": _stats([r["test_accuracy"] for r in rows]),
                    "finite_test_accuracy": _stats(finite),
                    "dispatch_entropy": _stats(
                        [r["dispatch_entropy"] for r in rows if r["dispatch_entropy"] is not None]
                    ),
                    "steps": float(np.mean([r["steps"] for r in rows])),
                }
            )
    return cells


PAIR_LEVEL = 0.95  # two-sided level of a paired difference's Student-t interval
# Per target, two cells compared seed by seed (a seed's two runs see the same data): (first, second).
PAIRED_CELLS = {"table3": ("single (nonlinear), 128 filters", "single (nonlinear), 512 filters")}


def paired_difference(first: list[float], second: list[float]) -> tuple[float, float, float]:
    """Mean of second − first over paired seeds and its two-sided `PAIR_LEVEL` Student-t interval."""
    diff = np.asarray(second, dtype=float) - np.asarray(first, dtype=float)
    mean = float(diff.mean())
    if diff.size < 2:
        return mean, float("nan"), float("nan")
    half = float(stats.t.ppf(0.5 + PAIR_LEVEL / 2, diff.size - 1) * diff.std(ddof=1) / np.sqrt(diff.size))
    return mean, mean - half, mean + half


def accuracy_by_seed(records: list[dict], cell: Cell, setting: int) -> dict[int, float]:
    """The test accuracy of each seed's run of `cell` at `setting`: the runs a paired comparison pairs."""
    return {r["seed"]: r["test_accuracy"] for r in records if r["setting"] == setting and in_cell(r, cell)}


def cell_pairs(target: str, records: list[dict]) -> list[dict]:
    """Per setting the paper reports, the target's `PAIRED_CELLS` over the seeds both ran (two or more):
    each cell's mean test accuracy, the mean paired difference (second − first) with its interval and
    its level, and the paper's difference of the two cells. A summary stores these as `pairs`."""
    if target not in PAIRED_CELLS:
        return []
    cells = {cell.label: cell for cell in TARGETS[target]}
    first, second = (cells[label] for label in PAIRED_CELLS[target])
    pairs = []
    for s in sorted(second.paper):
        a, b = (accuracy_by_seed(records, c, s) for c in (first, second))
        seeds = sorted(set(a) & set(b))
        if len(seeds) < 2:
            continue
        x, y = [a[seed] for seed in seeds], [b[seed] for seed in seeds]
        mean, low, high = paired_difference(x, y)
        pairs.append(
            {
                "first": first.label,
                "second": second.label,
                "setting": s,
                "seeds": len(seeds),
                "first_mean": float(np.mean(x)),
                "second_mean": float(np.mean(y)),
                "difference": mean,
                "interval": [low, high],
                "level": PAIR_LEVEL,
                "paper_difference": second.paper[s][0] - first.paper[s][0],
            }
        )
    return pairs


def linear_singles(target: str, records: list[dict]) -> list[dict]:
    """Per filter count J, the linear single CNNs that kept their training loss: runs, the range of the
    last training loss, the largest seed sd of a setting's test accuracy (None with one seed per
    setting), and Adam's rate lr, by which u = Σ_j a_j w_j moves up to J·lr per coordinate in one step.
    A summary stores these as `linear_singles`."""
    by_filters: dict[int, list[dict]] = {}
    for r in records:
        if r["model"] == "single (linear)" and r.get("history", {}).get("loss"):
            by_filters.setdefault(r["filters"], []).append(r)
    rows = []
    for filters, runs in sorted(by_filters.items()):
        last = [r["history"]["loss"][-1] for r in runs]
        by_setting: dict[int, list[float]] = {}
        for r in runs:
            by_setting.setdefault(r["setting"], []).append(r["test_accuracy"])
        sds = [float(np.std(accs, ddof=1)) for accs in by_setting.values() if len(accs) > 1]
        rows.append(
            {
                "filters": filters,
                "runs": len(runs),
                "last_loss": [min(last), max(last)],
                "largest_seed_sd": max(sds) if sds else None,
                "lr": single_config(runs[0]["variant"], activation="linear").lr,
            }
        )
    return rows


def stopping_points(target: str, records: list[dict]) -> list[dict]:
    """Per single-CNN cell whose runs stop by the authors' loss rule (the reference-code variant), over
    the settings the paper reports: runs, how many stopped early, steps (min, median, max), test
    accuracy (min, max), and the rule: first tested at step `stop_start`, stopping on a loss more than
    `stop_rise` above its minimum. A summary stores these as `stopping`."""
    rows = []
    for cell in (c for c in TARGETS[target] if c.model.startswith("single")):
        runs = [r for r in records if r["setting"] in cell.paper and in_cell(r, cell)]
        rule = single_config(runs[0]["variant"]) if runs else None
        if rule is None or rule.stopping == "none":
            continue
        steps, accuracy = [r["steps"] for r in runs], [r["test_accuracy"] for r in runs]
        rows.append(
            {
                "cell": cell.label,
                "runs": len(runs),
                "stopped_early": sum(bool(r["stopped_early"]) for r in runs),
                "steps": [min(steps), float(np.median(steps)), max(steps)],
                "test_accuracy": [min(accuracy), max(accuracy)],
                "stop_start": rule.stop_start,
                "stop_rise": rule.expert.stop_rise,
            }
        )
    return rows


# What a summary stores beside its runs, each computed from them where the summary is written.
SUMMARY_STATISTICS = {
    "cells": cell_statistics,
    "pairs": cell_pairs,
    "linear_singles": linear_singles,
    "stopping": stopping_points,
}


SUMMARY_RUN = {"model": TEXT, "setting seed steps": INT, "test_accuracy": NUMBER, "dispatch_entropy?": NUMBER}
SUMMARY = {  # the schema of a target's summary `replicate` writes (what the docs read of it)
    "config": {"target variant tier": TEXT, "seeds": INT},
    "runs": Each(SUMMARY_RUN, "run", least=1),
    " ".join(SUMMARY_STATISTICS): LIST,
}


def summary_statistics(target: str, records: list[dict]) -> dict[str, list[dict]]:
    """Every statistic of `SUMMARY_STATISTICS` over a target's runs, as a summary stores them."""
    return {name: statistic(target, records) for name, statistic in SUMMARY_STATISTICS.items()}


def format_table(target: str, records: list[dict]) -> str:
    """Markdown: per setting, each cell's mean ± std over seeds beside the paper's value and the diff."""
    return format_cells(target, cell_statistics(target, records))


def format_cells(target: str, cells: list[dict]) -> str:
    """`format_table` from a target's `cell_statistics`."""
    papers = {cell.label: cell.paper for cell in TARGETS[target]}
    lines = []
    for s in sorted({c["setting"] for c in cells}):
        lines += [
            f"\n**Setting {s}** ({data.setting(s).gamma} for γ, σ_p = {data.setting(s).sigma_p})\n",
            "| model | seeds | test accuracy (%) | paper | diff | dispatch entropy | paper | diff | steps |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for c in (c for c in cells if c["setting"] == s):
            p_acc, p_acc_std, p_ent, p_ent_std = papers[c["cell"]][s]
            runs, finite = c["runs"], c["finite_test_accuracy"]
            if finite is None:
                paper = _fmt(p_acc, p_acc_std, 2)
                lines.append(f"| {c['cell']} | {runs} | all diverged | {paper} | – | NA | NA | – | – |")
                continue
            acc = finite["mean"]
            diverged = f" ({c['diverged']} of {runs} diverged)" if c["diverged"] else ""
            acc_txt = _fmt(acc, finite["std"], 2) + diverged
            ent_txt, p_ent_txt, ent_diff = "NA", "NA", "–"
            if c["dispatch_entropy"] is not None:
                ent = c["dispatch_entropy"]["mean"]
                ent_txt = _fmt(ent, c["dispatch_entropy"]["std"], 3)
                if p_ent is not None:
                    p_ent_txt, ent_diff = _fmt(p_ent, p_ent_std, 3), f"{ent - p_ent:+.3f}"
            lines.append(
                f"| {c['cell']} | {runs} | {acc_txt} | {_fmt(p_acc, p_acc_std, 2)} | "
                f"{acc - p_acc:+.2f} | {ent_txt} | {p_ent_txt} | {ent_diff} | {c['steps']:.0f} |"
            )
    return "\n".join(lines).lstrip("\n")
