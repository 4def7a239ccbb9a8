"""The report tables and figure of the lab's searches: Lemma 5.1's sharpest constant and Theorem 4.1's floor
attainment.

No science at import (it loads when a task runs), so `sweep status` and `sweep report` start without it:
the sweep tasks are declared with their defaults in `lab.chen2022.declarations`, and their science is
`lab.chen2022.sweep_tasks`. `routing-tightness` (claims B4-B6, B10) searches the smallest constant of
Lemma 5.1; `floor-attainment` (claims B1, B2) measures one patch-additive model's test error beside the
orbit floor ω/8 of Theorem 4.1.
"""

from __future__ import annotations

from typing import Any


def tightness_table(values: dict[str, list[Any]], results: list[dict[str, Any]]) -> str:
    """Sweep report: one row per (noise, scale, M, starts, c), the best constant over its seeds, verdicts.

    Rows in grid order; they come from the results' own fields (`values`, the spec's fields, is not needed).
    """
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault((r["noise"], r["scale"], r["M"], r["starts"], r["c"]), []).append(r)
    lines = [
        "Best constant found by the search (L-BFGS-B on the exact Jacobian), in units of κ, maximised "
        "over seeds; verdicts from an explicit pair (h, ĥ) with exact p (a violation is a counterexample).",
        "",
        "| noise | M | starts | seeds | best c/κ | L*/κ exact | paper κM²/κ | lab 2κ/κ | slack κM²/best "
        "| slack 2κ/best | tested c | verdict c·κ |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (noise, scale, M, starts, c), rows in groups.items():
        best = max(rows, key=lambda r: r["best_constant"])
        exact = "-" if best["exact_over_kappa"] is None else f"{best['exact_over_kappa']:.6f}"
        violated = sum(r["verdict_tested"] == "violated" for r in rows)
        verdict = f"violated ({violated}/{len(rows)} seeds)" if violated else "holds"
        label = noise if scale == 1.0 else f"{noise} (scale {scale:g})"
        lines.append(
            f"| {label} | {M} | {starts} | {len(rows)} | {best['best_over_kappa']:.6f} | {exact} "
            f"| {M**2} | 2 | {best['slack_paper']:.4g} | {best['slack_lab']:.6f} | {c:g} | {verdict} |"
        )
    return "\n".join(lines)


NOISE_COLOURS = {"uniform": "tab:blue", "gaussian": "tab:orange", "gumbel": "tab:green"}


def tightness_figure(report: dict[str, Any]) -> Any:
    """Sweep report's figure: Lemma 5.1's best constant found, /κ, against M per noise family (each seed's
    run a dot, the best over seeds a line, the closed-form L*/κ a ring where known) beside the paper's κM²
    and the lab's proven 2κ, on log axes and (right) zoomed below 2κ; drawn from the report's runs alone."""
    from lab.core import plots

    plt = plots.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12.0, 4.6))
    runs = [{**r["params"], **r["metrics"]} for r in report["runs"]]
    Ms = sorted({r["M"] for r in runs})
    for ax in axes:
        ax.plot(Ms, [M**2 for M in Ms], color="black", lw=1.2, label="paper: κM² (Lemma 5.1)")
        ax.plot(Ms, [2.0] * len(Ms), color="black", lw=1.2, ls="--", label="lab: 2κ (proven for every M)")
        for noise, colour in NOISE_COLOURS.items():
            _tightness_family(ax, [r for r in runs if r["noise"] == noise], noise, colour)
        ax.set_xscale("log", base=2)
        ax.set_xticks(Ms, [str(M) for M in Ms])
        ax.tick_params(axis="x", which="minor", bottom=False)
        ax.set_xlabel("number of experts M")
        ax.set_ylabel("Lipschitz constant / κ")
    axes[0].set_yscale("log")
    axes[0].set_title("Lemma 5.1's constant against M, per noise family (log scale)", fontsize=10)
    axes[0].legend(fontsize=7, loc="upper left")
    axes[1].set_ylim(1.0, 2.5)
    axes[1].set_title("the same below κM², linear scale (κM² ≥ 4 is off the panel)", fontsize=10)
    fig.tight_layout()
    return fig


def _tightness_family(ax: Any, runs: list[dict[str, Any]], noise: str, colour: str) -> None:
    """One noise family of `tightness_figure`: each run's best constant, the best over seeds, L* if known."""
    if not runs:
        return
    ax.scatter([r["M"] for r in runs], [r["best_over_kappa"] for r in runs], s=14, color=colour, alpha=0.5)
    at = sorted({r["M"] for r in runs})
    best = [max(r["best_over_kappa"] for r in runs if r["M"] == M) for M in at]
    ax.plot(at, best, color=colour, lw=1.5, marker="o", ms=3, label=f"{noise}: best found (max over seeds)")
    exact = sorted({(r["M"], r["exact_over_kappa"]) for r in runs if "exact_over_kappa" in r})
    if exact:
        M, value = zip(*exact, strict=True)
        ax.scatter(M, value, s=70, facecolors="none", edgecolors=colour, label=f"{noise}: L*/κ exact")


def attainment_table(values: dict[str, list[Any]], results: list[dict[str, Any]]) -> str:
    """Sweep report: one row per (setting, α, β, γ, σ_p, model, n, floor), the seeds' errors pooled.

    Rows in grid order; they come from the results' own fields (`values`, the spec's fields, is not needed).
    """
    from lab.core.stats import clopper_pearson

    groups: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        key = repr(
            [r[k] for k in ("setting", "alpha", "beta", "gamma", "sigma_p", "model", "n", "level", "floor")]
        )
        groups.setdefault(key, []).append(r)
    lines = [
        "Test error of each model; the pooled error adds the seeds' errors and test samples (each seed "
        "draws fresh signals and a fresh test set), with its Clopper–Pearson interval. Attained: the "
        "floor lies in the interval; violated: the interval lies below the floor.",
        "",
        "| setting | α | γ | σ_p | model | seeds | ω | floor | error (min-max over seeds) | pooled error "
        "[CI] | attained (seeds) | pooled verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for rows in groups.values():
        r = rows[0]
        errors, total = sum(x["errors"] for x in rows), sum(x["n"] for x in rows)
        lo, hi = clopper_pearson(errors, total, r["level"])
        rates = [x["error"] for x in rows]
        attained = sum(x["attained"] for x in rows)
        verdict = "attained" if lo <= r["floor"] <= hi else ("violated" if hi < r["floor"] else "above floor")
        lines.append(
            f"| {r['setting']} | U({r['alpha'][0]:g}, {r['alpha'][1]:g}) | U({r['gamma'][0]:g}, "
            f"{r['gamma'][1]:g}) | {r['sigma_p']:g} | {r['model']} | {len(rows)} | {r['omega']:.4g} "
            f"| {r['floor']:.4g} | {min(rates):.4f}-{max(rates):.4f} "
            f"| {errors / total:.4f} [{lo:.4f}, {hi:.4f}] | {attained}/{len(rows)} | {verdict} |"
        )
    return "\n".join(lines)
