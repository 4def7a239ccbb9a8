"""Sweep task `proof-chain` (claims B9, B10): the d study of Theorem 4.2's proof chain along runs.

Declaration only, with defaults and a report table; the science is `lab.chen2022.proof_monitors` and
loads when a task runs. One task is one monitored run of Algorithm 1 at dimension d under the
theorem's conditions (σ0 = d^(−1/3), η_r = M²η, n = n_per_d·d).
"""

from __future__ import annotations

from typing import Any

from lab.sweeps.tasks import register_task, task_type

PROOF_CHAIN_DEFAULTS = {"d": 50, "M": 8, "J": 16, "eta": 0.02, "steps": 500, "n_per_d": 80, "seed": 0}
# Quantities of the d study fitted as c·d^slope over runs (the proof states a rate in d for each).
PROOF_CHAIN_FITTED = (
    "h_inf_T1",
    "h_inf_T1_over_sigma0_1_5",
    "other_projection_T1_over_sigma0",
    "center_only_gap_end",
    "profession_spread_end",
)
FIT_LEVEL = 0.95


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


def proof_chain_fits(values: dict[str, list[Any]], results: list[dict[str, Any]]) -> dict[str, Any]:
    """Sweep report's analysis: the values of d, and per fitted quantity its median over seeds at each d
    and its power-law fit c·d^slope over runs (slope, Student-t interval at FIT_LEVEL, log c)."""
    import numpy as np

    from lab.core.stats import power_law_fit

    d = np.array([r["d"] for r in results], dtype=float)
    ds = np.unique(d)
    fits = {}
    for key in PROOF_CHAIN_FITTED:
        y = np.array([r[key] for r in results], dtype=float)
        slope, (lo, hi), log_c = power_law_fit(d, y, level=FIT_LEVEL)
        median = [float(np.median(y[d == x])) for x in ds]
        fits[key] = {"slope": slope, "interval": [lo, hi], "log_c": log_c, "median": median}
    return {"level": FIT_LEVEL, "d": [int(x) for x in ds], "fits": fits}


@register_task(
    "proof-chain", defaults=PROOF_CHAIN_DEFAULTS, report=proof_chain_table, analysis=proof_chain_fits
)
def proof_chain(params: dict[str, Any]) -> dict[str, Any]:
    """One monitored run of Theorem 4.2's proof at dimension d: its chain verdicts and measured quantities."""
    from lab.chen2022 import proof_monitors

    p = task_type("proof-chain").with_defaults(params)
    cfg = proof_monitors.theorem_config(p["d"], M=p["M"], J=p["J"], eta=p["eta"], steps=p["steps"])
    return proof_monitors.summary(proof_monitors.monitored_run(p["d"], p["seed"], p["n_per_d"], cfg))
