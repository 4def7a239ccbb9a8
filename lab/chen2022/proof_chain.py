"""The d study of Theorem 4.2's proof chain along runs (sweep task `proof-chain`, claims B9, B10).

Its report table, the analysis across runs the report stores, its figure and the finding that reads them
(`proof_chain.findings.toml`); the task is declared with its defaults in `lab.chen2022.declarations`, and
the science is `lab.chen2022.proof_monitors`, which loads when a task runs. One task is one monitored run
of Algorithm 1 at dimension d under the theorem's conditions (σ0 = d^(−1/3), η_r = M²η, n = n_per_d·d).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from lab.core.descriptions import load_findings
from lab.core.schema import INT, LIST, NUMBER, OBJECT, POSITIVE, TEXT, Each

# the d study's finding, which reads the report this task's sweep writes
FINDINGS = load_findings(Path(__file__).with_name("proof_chain.findings.toml"))

# Quantities of the d study fitted as c·d^slope over runs (the proof states a rate in d for each).
PROOF_CHAIN_FITTED = (
    "h_inf_T1",
    "h_inf_T1_over_sigma0_1_5",
    "other_projection_T1_over_sigma0",
    "center_only_gap_end",
    "profession_spread_end",
)
FIT_LEVEL = 0.95
PROOF_CHAIN_REPORT = {  # the schema of this task's sweep report (what the docs read of it)
    "task_tables": TEXT,
    "runs": Each(
        {
            "params": {"d": INT},
            "metrics": {
                "T1 T2 routing_follows_professions professions_predict routed_share_end": NUMBER,
                " ".join(PROOF_CHAIN_FITTED): POSITIVE,  # fitted on log–log axes: positive in every run
            },
        },
        "run",
    ),
}
PROOF_CHAIN_ANALYSIS = {  # the schema of the report's `analysis` (`proof_chain_analysis`)
    "level": NUMBER,
    "d": LIST,
    "fits": {" ".join(PROOF_CHAIN_FITTED): {"slope log_c": NUMBER, "interval median": LIST}},
    "counts": {"runs T1 T2": LIST, "holds holds_nonempty": Each(LIST)},
    "schedule e3_ratio routing": OBJECT,
}


def proof_chain_table(values: dict[str, list[Any]], results: list[dict[str, Any]]) -> str:
    """Sweep report: one row per d, counts over seeds of routing by M_k, specialisation and first failures."""
    by_d: dict[int, list[dict[str, Any]]] = {}
    for r in results:
        by_d.setdefault(r["d"], []).append(r)
    lines = [
        "Per d, over seeds: T1 and T2 of the proof, how many runs route each Ω_k into M_k, how many have "
        "every expert of M_k accurate on Ω_k, the first failing explicit step, and E.3's ‖h‖∞ at T1 over "
        "σ0^1.5.",
        "",
        "| d | n | seeds | T1 | T2 | routes by M_k | professions predict | first failure | ‖h‖∞(T1)/σ0^1.5 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for d, rows in sorted(by_d.items()):
        firsts = sorted({str(r["first_failure"]) for r in rows})
        ratio = [r["h_inf_T1_over_sigma0_1_5"] for r in rows]
        lines.append(
            f"| {d} | {rows[0]['n']} | {len(rows)} | {rows[0]['T1']} | {rows[0]['T2']} "
            f"| {sum(r['routing_follows_professions'] for r in rows)}/{len(rows)} "
            f"| {sum(r['professions_predict'] for r in rows)}/{len(rows)} | {', '.join(firsts)} "
            f"| {min(ratio):.3g}–{max(ratio):.3g} |"
        )
    return "\n".join(lines)


def proof_chain_fits(values: dict[str, list[Any]], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The values of d, and per fitted quantity its median over seeds at each d and its power-law fit
    c·d^slope over runs (slope, Student-t interval at FIT_LEVEL, log c). A quantity that is 0 in some run
    (Δ_Θ when every M_k has one expert) has no log–log fit and is left out."""
    import numpy as np

    from lab.core.stats import power_law_fit

    d = np.array([r["d"] for r in runs], dtype=float)
    ds = np.unique(d)
    fits = {}
    for key in PROOF_CHAIN_FITTED:
        y = np.array([r[key] for r in runs], dtype=float)
        if not (y > 0).all():
            continue
        slope, (lo, hi), log_c = power_law_fit(d, y, level=FIT_LEVEL)
        median = [float(np.median(y[d == x])) for x in ds]
        fits[key] = {"slope": slope, "interval": [lo, hi], "log_c": log_c, "median": median}
    return {"level": FIT_LEVEL, "d": [int(x) for x in ds], "fits": fits}


# Steps counted per d in the d study (how many runs satisfy each): D.4, routing by M_k, professions, E.18.
PROOF_CHAIN_COUNTED = ("chain.D.4", "routing_follows_professions", "professions_predict", "chain.E.18")
NONEMPTY = "chain.D.4"  # Lemma D.4 in a run: every M_k non-empty, without which Ω_k cannot be routed into M_k
E3_RATIO = "h_inf_T1_over_sigma0_1_5"  # E.3 at T1 as ‖h‖∞/σ0^1.5, the ratio the proof keeps O(1)
SECOND_STAGE_M = (
    2,
    4,
)  # values of M at which the stage schedule states its threshold on d (beside the study's)


def _by_d(runs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The runs grouped by d, in increasing d."""
    groups: dict[int, list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault(int(r["d"]), []).append(r)
    return [groups[d] for d in sorted(groups)]


def _count(runs: list[dict[str, Any]], key: str) -> int:
    """How many runs satisfy a counted step (its value is 1)."""
    return sum(r.get(key) == 1.0 for r in runs)


def _nonempty(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs whose every M_k is non-empty (D.4 holds): the only ones where Ω_k can be routed into M_k."""
    return [r for r in runs if r.get(NONEMPTY) == 1.0]


def proof_chain_counts(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per d, in increasing d: the runs, T1 and T2 (one value per d), the runs satisfying each counted
    step of the chain (D.4, routing by M_k, professions predicting, E.18), and the same counts among the
    runs whose every M_k is non-empty (`holds_nonempty`, out of `holds["chain.D.4"]`)."""
    groups = _by_d(runs)
    return {
        "runs": [len(g) for g in groups],
        "T1": [g[0]["T1"] for g in groups],
        "T2": [g[0]["T2"] for g in groups],
        "holds": {key: [_count(g, key) for g in groups] for key in PROOF_CHAIN_COUNTED},
        "holds_nonempty": {key: [_count(_nonempty(g), key) for g in groups] for key in PROOF_CHAIN_COUNTED},
    }


def all_nonempty_probability(K: int, M: int) -> float:
    """P(every M_k non-empty) when the professions k*_m of M experts are iid uniform on [K] (Def. D.3 at a
    Gaussian initialization): the share of surjections, by inclusion–exclusion over the empty sets."""
    import math

    return float(sum((-1) ** j * math.comb(K, j) * (1 - j / K) ** M for j in range(K + 1)))


def stage_schedule(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The stage schedule of Sec. 5 over the study: runs with T1 < T2, the thresholds d > M¹² for the
    stage (T1, T2] at σ0 = d^(−1/3), ηM² (T2 = 0 when above 1) and σ0^0.5·M² = T1/T2 at the largest d;
    the runs routing by M_k and with professions predicting, over all runs and over those whose every M_k
    is non-empty (`nonempty`), K and the chance `p_all_nonempty` of that for iid uniform professions."""
    from lab.chen2022.data import setting
    from lab.chen2022.proof_monitors import ProofSchedule, d_for_second_stage, theorem_sigma0

    M, eta, d_max = runs[0]["M"], runs[0]["eta"], max(r["d"] for r in runs)
    K, nonempty = setting(1).K, _nonempty(runs)  # monitored runs are setting 1's data
    m = SECOND_STAGE_M[0]
    d = 2 * round(d_for_second_stage(m))  # twice the least M's threshold, at the study's η
    example = ProofSchedule(d=d, M=m, eta=eta, sigma0=theorem_sigma0(d))
    return {
        "runs": len(runs),
        "ordered": sum(r["T1"] < r["T2"] for r in runs),
        "routed": _count(runs, "routing_follows_professions"),
        "predicted": _count(runs, "professions_predict"),
        "nonempty": len(nonempty),
        "routed_nonempty": _count(nonempty, "routing_follows_professions"),
        "predicted_nonempty": _count(nonempty, "professions_predict"),
        "K": K,
        "p_all_nonempty": all_nonempty_probability(K, M),
        "M": M,
        "eta": eta,
        "eta_M2": eta * M**2,
        "second_stage_d": [[m, d_for_second_stage(m)] for m in (*SECOND_STAGE_M, M)],
        "d_max": d_max,
        "floor_ratio_d_max": d_max ** (-1 / 6) * M**2,
        "second_stage_example": {"d": d, "M": m, "T1": example.T1, "T2": example.T2},
    }


def e3_ratio(runs: list[dict[str, Any]], fit: dict[str, Any]) -> dict[str, Any]:
    """E.3 at T1 as ‖h‖∞/σ0^1.5 over the runs: its range, the runs (and values of d) where it is at most 1,
    and the d at which its fit c·d^slope reaches 1 when the fit falls (interval below 0), else None."""
    import math

    ratio = [r[E3_RATIO] for r in runs]
    below = [r["d"] for r in runs if r[E3_RATIO] <= 1]
    falls = fit["interval"][1] < 0
    return {
        "min": min(ratio),
        "max": max(ratio),
        "at_most_one": len(below),
        "d_at_most_one": sorted(set(below)),
        "reaches_one_at_d": math.exp(-fit["log_c"] / fit["slope"]) if falls else None,
    }


def routing_trend(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per d, the least share of a cluster Ω_k routed into M_k at the end: mean and sd over seeds (sd None
    with one run), the mean over the runs whose every M_k is non-empty (`share_nonempty`, None without
    one; a run with an empty M_k has share 0), whether the mean is higher at the largest d than at the
    least (`rises`) and whether it rises at every step of d (`monotone`)."""
    import numpy as np

    groups = _by_d(runs)
    share = [float(np.mean([r["routed_share_end"] for r in g])) for g in groups]
    sd = [float(np.std([r["routed_share_end"] for r in g], ddof=1)) if len(g) > 1 else None for g in groups]
    nonempty = [[r["routed_share_end"] for r in _nonempty(g)] for g in groups]
    return {
        "share": share,
        "sd": sd,
        "share_nonempty": [float(np.mean(s)) if s else None for s in nonempty],
        "rises": share[-1] > share[0],
        "monotone": all(b > a for a, b in itertools.pairwise(share)),
    }


def sharpened_schedule(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """T2 re-derived under the lab's routing constant 2κ (`router_learning_end_sharpened`): the factor 2κ,
    T2 at the study's (η, M) beside the stated T2 and the ⌊η⁻¹M⁻⁴⌋ Lemma 5.1's κM² supports; per M the
    thresholds on d for T1 < T2 of the three (stated, sharpened, κM²) at σ0 = d^(−1/3), and their log10 at
    σ0 = d^(−0.01); the sharpened stage at twice the least M's threshold (None if beyond 10^15)."""
    from lab.chen2022.metrics import UNIFORM_ROUTING
    from lab.chen2022.proof_monitors import (
        ProofSchedule,
        d_for_second_stage,
        log10_d_for_second_stage,
        recursion_end,
        router_learning_end,
        router_learning_end_sharpened,
        theorem_sigma0,
    )
    from lab.chen2022.routing_tightness import proven_constant

    M, eta, kappa = runs[0]["M"], runs[0]["eta"], UNIFORM_ROUTING.kappa
    factor = proven_constant(UNIFORM_ROUTING)  # 2κ: T2 = ⌊η⁻¹M⁻²/(2κ)⌋
    factors = (lambda m: 1.0, lambda m: factor, lambda m: kappa * m * m)  # stated, sharpened, κM²
    thresholds = [
        [m]
        + [d_for_second_stage(m, f(m)) for f in factors]
        + [log10_d_for_second_stage(m, f(m), power=200) for f in factors]
        for m in (*SECOND_STAGE_M, M)
    ]
    m = SECOND_STAGE_M[0]
    d = 2 * round(d_for_second_stage(m, factor))
    example = ProofSchedule(d=d, M=m, eta=eta, sigma0=theorem_sigma0(d), schedule="sharpened")
    return {
        "factor": factor,
        "T2_stated": router_learning_end(eta, M),
        "T2_sharpened": router_learning_end_sharpened(eta, M),
        "T2_paper_constant": recursion_end(kappa * M * M, M * M * eta),
        "thresholds": thresholds,
        "example": {"d": d, "M": m, "T1": example.T1, "T2": example.T2},
    }


def proof_chain_analysis(values: dict[str, list[Any]], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Sweep report's analysis: the fits in d (`proof_chain_fits`), the counts per d, the stage schedule,
    E.3's ratio and the routing trend, each run's parameters and results flattened; for runs under the
    re-derived schedule also `sharpened_schedule`."""
    fits = proof_chain_fits(values, runs)
    sharpened = {"sharpened": sharpened_schedule(runs)} if runs[0].get("schedule") == "sharpened" else {}
    return (
        fits
        | {
            "counts": proof_chain_counts(runs),
            "schedule": stage_schedule(runs),
            "e3_ratio": e3_ratio(runs, fits["fits"][E3_RATIO]),
            "routing": routing_trend(runs),
        }
        | sharpened
    )


def report_runs(report: dict[str, Any]) -> list[dict[str, Any]]:
    """A report's runs as the analysis reads them: each run's metrics and its parameters."""
    return [{**r["metrics"], **r["params"]} for r in report["runs"]]


# Panels of the report's figure, (quantity, title, the proof's rate, its exponent in d): the fitted quantities
# (the finding's table of exponents), and E.3's ratio beside E.3's ‖h‖∞.
RATE_PANELS = (
    ("h_inf_T1", "E.3: ‖h‖∞ at T1", "σ0^1.5 = d^(−1/2)", -0.5),
    ("h_inf_T1_over_sigma0_1_5", "E.3: ‖h‖∞(T1)/σ0^1.5", "O(1)", 0.0),
    ("other_projection_T1_over_sigma0", "E.6: largest other projection at T1, over σ0", "Õ(1)", 0.0),
    ("center_only_gap_end", "E.14: ‖h(x̄) − h(x)‖∞ at the end (after T2)", "Õ(d^−0.005)", -0.005),
    ("profession_spread_end", "E.16: Δ_Θ within professions at the end (after T2)", "Õ(d^−0.001)", -0.001),
)
COLUMNS = 3


def proof_chain_figure(report: dict[str, Any]) -> Any:
    """Sweep report's figure: Theorem 4.2's quantities against d, one panel each (RATE_PANELS), with the
    proof's rates; medians and fits are the report's `analysis` (`proof_chain_fits`)."""
    import numpy as np

    from lab.core import plots

    d = np.array([r["params"]["d"] for r in report["runs"]], dtype=float)
    metrics = [r["metrics"] for r in report["runs"]]
    analysis = report["analysis"]
    ds = np.array(analysis["d"], dtype=float)
    plt = plots.pyplot()
    rows = -(-len(RATE_PANELS) // COLUMNS)
    fig, axes = plt.subplots(rows, COLUMNS, figsize=(4.6 * COLUMNS, 3.8 * rows), squeeze=False)
    for ax, (key, label, rate, exponent) in zip(axes.ravel(), RATE_PANELS, strict=False):
        values = np.array([m[key] for m in metrics], dtype=float)
        if key not in analysis["fits"]:  # 0 in some run: the runs alone, on a linear axis
            ax.scatter(d, values, s=12, color="tab:blue", alpha=0.5, linewidths=0)
            ax.set_xscale("log")
            ax.set_xticks(ds, [f"{x:g}" for x in ds])
            ax.tick_params(axis="x", which="minor", bottom=False, labelbottom=False)
            ax.set_xlabel("d")
            ax.set_title(f"{label} (not fitted: 0 in some run)", fontsize=9)
            continue
        _rate_panel(ax, (d, values), ds, analysis["fits"][key], analysis["level"], (rate, exponent))
        ax.set_title(label, fontsize=9)
    for ax in axes.ravel()[len(RATE_PANELS) :]:
        fig.delaxes(ax)
    fig.suptitle(
        f"Theorem 4.2's proof along runs (Chen et al. 2022): {len(metrics)} runs of Algorithm 1 against d",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def _rate_panel(ax: Any, runs: tuple, ds: Any, fit: dict, level: float, stated: tuple[str, float]) -> None:
    """One quantity: runs (d, value), median per d, fitted c·d^slope with its interval at `level` (the
    report's), the stated rate (its text, its exponent) through the fit at the least d."""
    import numpy as np

    (rate, exponent), slope, (lo, hi), log_c = stated, fit["slope"], fit["interval"], fit["log_c"]
    grid = np.geomspace(ds[0], ds[-1], 50)
    ax.scatter(*runs, s=12, color="tab:blue", alpha=0.25, linewidths=0, label="runs")
    ax.plot(ds, fit["median"], "D", color="tab:blue", ms=6, label="median over seeds")
    fitted = np.exp(log_c) * grid**slope
    fit_label = f"fit d^{slope:.2f} ({100 * level:g} % [{lo:.2f}, {hi:.2f}])"
    ax.plot(grid, fitted, color="tab:orange", lw=1.5, label=fit_label)
    ax.plot(grid, fitted[0] * (grid / grid[0]) ** exponent, "k--", lw=1, label=f"stated: {rate}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(ds, [f"{x:g}" for x in ds])
    ax.tick_params(axis="x", which="minor", bottom=False, labelbottom=False)
    ax.set_xlabel("d")
    ax.legend(fontsize=7)
