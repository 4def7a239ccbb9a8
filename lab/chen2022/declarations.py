"""Chen et al.'s sweep tasks, declared without their science (`lab.core.registry.LIGHT_MODULE`), so that
`python -m lab sweep status` and `sweep report` find them without importing it; each task imports its
science when it runs.

`routing-probability` (Lemma 5.1) draws p_1(h) by Monte Carlo; `routing-tightness` (claims B4-B6, B10)
searches the smallest constant of Lemma 5.1; `floor-attainment` (claims B1, B2) measures one patch-additive
model's test error beside the orbit floor ω/8 of Theorem 4.1. Their science is `lab.chen2022.sweep_tasks`,
which stamps their results (`code_root`), and the searches' report tables and figure are
`lab.chen2022.searches`. `proof-chain` (claims B9, B10) is one monitored run of Algorithm 1 for the d study
of Theorem 4.2's proof chain: its report, analysis, figure and finding are `lab.chen2022.proof_chain`, its
science `lab.chen2022.proof_monitors`.
"""

from __future__ import annotations

from typing import Any

from lab.chen2022.proof_chain import proof_chain_analysis, proof_chain_figure, proof_chain_table
from lab.chen2022.searches import attainment_table, tightness_figure, tightness_table
from lab.core.tasks import register_task, task_type

SEARCHES = "lab.chen2022.sweep_tasks"  # the science of the first three tasks, whose code stamps their results
TIGHTNESS_DEFAULTS = {"noise": "uniform", "scale": 1.0, "M": 8, "starts": 8, "c": 2.0, "seed": 0}
ATTAINMENT_DEFAULTS = {
    "setting": 3,
    "alpha": None,
    "beta": None,
    "gamma": None,
    "model": "witness",
    "n": 20_000,
    "level": 0.99,
    "floor": None,
    "ramp": 0.1,
    "restarts": 10,
    "seed": 0,
}
PROOF_CHAIN_DEFAULTS = {
    "d": 50,
    "M": 8,
    "J": 16,
    "eta": 0.02,
    "steps": 500,
    "n_per_d": 80,
    "seed": 0,
    "schedule": "stated",  # T2 as App. E.2 states it, or "sharpened": re-derived under the constant 2κ
}


@register_task(
    "routing-probability",
    defaults={"M": 8, "gap": 0.0, "noise": "uniform", "a": 0.0, "b": 1.0, "draws": 100_000, "seed": 0},
    code_root=SEARCHES,
)
def routing_probability(params: dict[str, Any]) -> dict[str, Any]:
    """Monte-Carlo p_1(h) = P(argmax_m {h_m + r_m} = 1) (Lemma 5.1) with a 99 % Clopper–Pearson CI."""
    from lab.chen2022 import sweep_tasks

    return sweep_tasks.routing_probability(params)


@register_task(
    "routing-tightness",
    defaults=TIGHTNESS_DEFAULTS,
    report=tightness_table,
    figure=tightness_figure,
    code_root=SEARCHES,
)
def routing_tightness(params: dict[str, Any]) -> dict[str, Any]:
    """Best constant c of Lemma 5.1 found by the search, /κ, beside κM², 2κ and L*; the bound c·κ tested."""
    from lab.chen2022 import sweep_tasks

    return sweep_tasks.routing_tightness(task_type("routing-tightness").with_defaults(params))


@register_task("floor-attainment", defaults=ATTAINMENT_DEFAULTS, report=attainment_table, code_root=SEARCHES)
def floor_attainment(params: dict[str, Any]) -> dict[str, Any]:
    """Test error of one patch-additive model (Theorem 4.1) with a Clopper–Pearson CI beside the floor ω/8."""
    from lab.chen2022 import sweep_tasks

    return sweep_tasks.floor_attainment(task_type("floor-attainment").with_defaults(params))


@register_task(
    "proof-chain",
    defaults=PROOF_CHAIN_DEFAULTS,
    report=proof_chain_table,
    analysis=proof_chain_analysis,
    figure=proof_chain_figure,
    code_root="lab.chen2022.proof_monitors",  # the runs' science: the report's code never moves them
)
def proof_chain(params: dict[str, Any]) -> dict[str, Any]:
    """One monitored run of Theorem 4.2's proof at dimension d: its chain verdicts and measured quantities."""
    from lab.chen2022 import proof_monitors

    p = task_type("proof-chain").with_defaults(params)
    cfg = proof_monitors.theorem_config(p["d"], M=p["M"], J=p["J"], eta=p["eta"], steps=p["steps"])
    run = proof_monitors.monitored_run(p["d"], p["seed"], p["n_per_d"], cfg, p["schedule"])
    return proof_monitors.summary(run)
