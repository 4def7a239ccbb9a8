"""Table 10's σ0 sweep and Table 11's plain-GD rate sweeps (sweeps of the `replicate` task) beside the
paper's rows: each sweep report stores its groups' statistics (`lab.sweeps.report`); these functions
put them beside the paper's values and judge each rate, for the findings, and draw each rate sweep's
figure (`gd_rate_figure`, the `replicate` task's figure hook)."""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.chen2022.replicate_analysis import STALL_BELOW
from lab.chen2022.tables import TARGETS
from lab.core import plots

GD_RATE_SWEEPS = (("table11_gd_rate", "stated model"), ("table11_gd_rate_reference_code", "reference code"))


def gd_papers() -> dict[str, tuple[float, float]]:
    """The paper's plain-GD rows of Table 11 by load balancing: (mean, sd)."""
    return {
        cell.params["load_balancing"]: cell.paper[1][:2]
        for cell in TARGETS["table11"]
        if cell.params["expert_update"] == "gd"
    }


def rate_rows(report: dict) -> list[dict]:
    """Per (rate, load balancing), read from the sweep report's groups: runs, diverged runs, mean ± sd
    accuracy of the others (the report's statistics of `test_accuracy`), first divergence."""
    rows = []
    for group in report["groups"]:
        accuracy, diverged, steps = (
            group["metrics"].get(k) for k in ("test_accuracy", "diverged_at", "steps")
        )
        rows.append(
            {
                "eta": group["fields"]["eta"],
                "load_balancing": group["fields"]["load_balancing"],
                "runs": group["done"],
                "diverged": diverged["n"] if diverged else 0,
                "first_divergence": int(diverged["min"]) if diverged else None,
                "mean": accuracy["mean"] if accuracy else None,
                "sd": accuracy["std"] if accuracy else None,
                "steps": [int(steps["min"]), int(steps["max"])] if steps else None,
            }
        )
    return sorted(rows, key=lambda row: (row["eta"], row["load_balancing"]))


def _near(row: dict, paper: tuple[float, float]) -> bool:
    """The lab's mean is within 2 combined sd (the lab's over seeds, the paper's) of the paper's mean."""
    if row["mean"] is None or row["diverged"]:
        return False
    return abs(row["mean"] - paper[0]) <= 2 * float(np.hypot(row["sd"] or 0.0, paper[1]))


def _outcome(row: dict) -> str:
    """How a cell ended: every run diverged or stayed finite, and succeeded (mean ≥ STALL_BELOW) or not."""
    if row["mean"] is None:
        return "diverged"
    kind = "success" if row["mean"] >= STALL_BELOW else "failure"
    return kind + (f", {row['diverged']} diverged" if row["diverged"] else "")


def gd_rate_study(report: dict) -> dict[str, Any]:
    """A plain-GD rate sweep beside Table 11: its rows (`rate_rows`) with the paper's row, the difference
    and the outcome; the rates where the paper's pattern shows (GD succeeds with LB and fails without),
    where it shows only partly (`partial`: with LB some runs succeed and the rest diverge, without LB all
    diverge), where GD with LB succeeds, where both succeed, where GD without LB lands near the paper's
    row, and the rows whose runs stayed finite yet all stopped before the longest run's last step
    (`stopped_early`: a stopping rule, not divergence, ended them)."""
    papers = gd_papers()
    rows = [
        row | {"paper": papers[row["load_balancing"]], "outcome": _outcome(row)} for row in rate_rows(report)
    ]
    by = {(r["eta"], r["load_balancing"]): r for r in rows}
    etas = sorted({r["eta"] for r in rows})
    lb = next(k for k in papers if k != "none")
    longest = max((r["steps"][1] for r in rows if r["steps"]), default=0)

    def ok(eta, key):
        row = by.get((eta, key))
        return row is not None and row["outcome"] == "success"

    return {
        "rows": rows,
        "seeds": max(r["runs"] for r in rows),
        "success_from": STALL_BELOW,
        "paper_without_lb": papers["none"],
        "pattern": [e for e in etas if ok(e, lb) and (e, "none") in by and not ok(e, "none")],
        # with LB some runs finish at or above the threshold and the others diverge; without LB all diverge
        "partial": [
            by[e, lb]
            for e in etas
            if (e, lb) in by
            and by[e, lb]["outcome"].startswith("success,")
            and (e, "none") in by
            and by[e, "none"]["outcome"] == "diverged"
        ],
        "with_lb": [e for e in etas if ok(e, lb)],
        "both": [e for e in etas if ok(e, lb) and ok(e, "none")],
        "near": [e for e in etas if (e, "none") in by and _near(by[e, "none"], papers["none"])],
        "stopped_early": [r for r in rows if r["steps"] and not r["diverged"] and r["steps"][1] < longest],
    }


def gd_rate_figure(report: dict) -> Any:
    """A plain-GD rate sweep's figure (GD_RATE_SWEEPS): test accuracy against the experts' rate per seed,
    the mean per rate (`rate_rows`), diverged runs at the bottom, Table 11's rows dashed; None for another
    sweep of the `replicate` task (its report draws the generic chart)."""
    how = dict(GD_RATE_SWEEPS).get(report["sweep"])
    if how is None:
        return None
    plt = plots.pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    papers, rows = gd_papers(), rate_rows(report)
    for lb, label, colour in (("switch", "with LB", "tab:blue"), ("none", "no LB", "tab:orange")):
        runs = [r for r in report["runs"] if r["params"]["load_balancing"] == lb]
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
    return fig


def sigma0_rows(report: dict) -> list[dict]:
    """Table 10's M = 8 cells at other init scales: per group σ0, the LB coefficient, the seeds, the test
    accuracy's statistics (None when no run finished) and the paper's mean at σ0 = 0.01."""
    papers = {
        cell.params["lb_coef"]: cell.paper[1][0] for cell in TARGETS["table10"] if cell.params["M"] == 8
    }
    return [
        {
            "sigma0": group["fields"]["sigma0"],
            "lb_coef": group["fields"]["lb_coef"],
            "seeds": group["done"],
            "test_accuracy": group["metrics"].get("test_accuracy"),
            "paper": papers[group["fields"]["lb_coef"]],
        }
        for group in report["groups"]
    ]
