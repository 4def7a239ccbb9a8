"""A replication's report: its table beside the paper's numbers, and Fig. 3 and Figs 5–6 as PNG."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lab.chen2022 import data
from lab.chen2022.tables import TARGETS, Cell
from lab.core import plots


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
    fig.tight_layout()
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
        fig.tight_layout()
        slug = model.replace(" ", "_").replace("(", "").replace(")", "")
        written.append(out / f"{stem}_curves_{slug}.png")
        plots.save_figure(fig, written[-1])
    return written


def _mean_std(values: list[float]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (None for a single run)."""
    arr = np.asarray(values, dtype=float)
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else None


def _fmt(mean: float, std: float | None, digits: int) -> str:
    return f"{mean:.{digits}f}" if std is None else f"{mean:.{digits}f} ± {std:.{digits}f}"


def _matches(record: dict, cell: Cell) -> bool:
    return record["model"] == cell.model and all(record.get(k) == v for k, v in cell.params.items())


def format_table(target: str, records: list[dict]) -> str:
    """Markdown: per setting, each cell's mean ± std over seeds beside the paper's value and the diff."""
    lines = []
    for s in sorted({r["setting"] for r in records}):
        lines += [
            f"\n**Setting {s}** ({data.setting(s).gamma} for γ, σ_p = {data.setting(s).sigma_p})\n",
            "| model | seeds | test accuracy (%) | paper | diff | dispatch entropy | paper | diff | steps |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for cell in TARGETS[target]:
            rows = [r for r in records if r["setting"] == s and _matches(r, cell)]
            if not rows or s not in cell.paper:
                continue
            p_acc, p_acc_std, p_ent, p_ent_std = cell.paper[s]
            finite = [r["test_accuracy"] for r in rows if r.get("diverged_at") is None]
            if not finite:
                paper = _fmt(p_acc, p_acc_std, 2)
                lines.append(f"| {cell.label} | {len(rows)} | all diverged | {paper} | – | NA | NA | – | – |")
                continue
            acc, acc_std = _mean_std(finite)
            diverged = len(rows) - len(finite)
            acc_txt = _fmt(acc, acc_std, 2) + (f" ({diverged} of {len(rows)} diverged)" if diverged else "")
            ents = [r["dispatch_entropy"] for r in rows if r["dispatch_entropy"] is not None]
            ent_txt, p_ent_txt, ent_diff = "NA", "NA", "–"
            if ents:
                ent, ent_std = _mean_std(ents)
                ent_txt = _fmt(ent, ent_std, 3)
                if p_ent is not None:
                    p_ent_txt, ent_diff = _fmt(p_ent, p_ent_std, 3), f"{ent - p_ent:+.3f}"
            steps = np.mean([r["steps"] for r in rows])
            lines.append(
                f"| {cell.label} | {len(rows)} | {acc_txt} | {_fmt(p_acc, p_acc_std, 2)} | "
                f"{acc - p_acc:+.2f} | {ent_txt} | {p_ent_txt} | {ent_diff} | {steps:.0f} |"
            )
    return "\n".join(lines).lstrip("\n")
