"""Sec. 4.1 of Makkuva et al. 2020 (D5): L4 still recovers A* with w* not ⊥ a* and with mixture inputs.

"Still recovers" is a claim about typical behaviour, judged as a recovery rate over random instances
(`checks.makkuva2020.rates`): each instance draws its own w* (or μ), init and SGD stream.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from checks.makkuva2020.assumptions import ASSUMPTIONS, EPS_REC, REG, SGD_LR, one_blas_thread
from checks.makkuva2020.rates import rate_record, run_instances
from lab.core.descriptions import load_claims, load_findings
from lab.core.records import Record
from lab.core.registry import register
from lab.makkuva2020.fit import init_params, regression_error, sgd_l4
from lab.makkuva2020.gated_regression import GatedRegression, GaussianInput, GaussianMixtureInput, paper_model
from lab.makkuva2020.losses import output_transforms

DESCRIPTIONS = load_claims(Path(__file__).with_suffix(".toml"))  # what its claims say, as data
FINDINGS = load_findings(Path(__file__).with_suffix(".findings.toml"))  # where the paper and the lab part

# Instances per tier, sized from seeds 0-19 (quick). The sphere recovered in 239 of 240 runs (one ended
# at E_reg 0.066, seed 2): n = 12 tolerates one failure, n = 8 would have tolerated none. The mixture
# recovered in 140/160 runs at p = 0.1, 158/160 at p = 0.3, 160/160 at p = 0.5; the worst seed had 4
# failures in 24, and n = 24 (8 per p) tolerates five. The control plans the mixture's n and stops
# once its failures decide the verdict (6 runs when all fail).
TIERS = {
    "quick": {"sphere": 12, "per_p": 8, "ps": (0.1, 0.3, 0.5), "steps": 800},
    "full": {"sphere": 16, "per_p": 6, "ps": (0.1, 0.2, 0.3, 0.4, 0.5), "steps": 1500},
}
D = 10
TRANSFORMS = output_transforms(0.05)
RATE_SOURCE = (
    "Sec. 4.1's 'L4 still recovers' in the relaxed settings gives no failure frequency: read as "
    "'typically recovers' (more often than not), rate >= 1/2 (checks.makkuva2020.rates)"
)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def _fit(model, inputs, rng, steps: int) -> float:
    """E_reg after online SGD on eq. (6) from a random init; a diverged run is E_reg = 1 (the maximum)."""
    A0, _ = init_params(model.k, model.d, rng)
    try:
        A_end = sgd_l4(A0, model, inputs, TRANSFORMS, REG, rng, lr=SGD_LR, steps=steps).A[-1]
    except FloatingPointError:
        return 1.0
    return regression_error(A_end, model.A)[0]


def _params(cfg) -> dict:
    return {
        **ASSUMPTIONS,
        "k": 2,
        "d": D,
        "sigma": 0.05,
        "sgd_lr": SGD_LR,
        "sgd_steps": cfg["steps"],
        "eps": EPS_REC,
        "recovered": f"E_reg <= {EPS_REC}",
    }


def _sphere_record(rng, cfg) -> Record:
    """Premise: the recovery rate with w* uniform on the sphere (one w*, init and SGD stream per instance)."""
    e_reg: list[float] = []

    def instance(_: int) -> bool:
        w = _unit(rng.standard_normal(D))
        e_reg.append(_fit(GatedRegression(np.eye(D)[:2], w[None], 0.05), GaussianInput(D), rng, cfg["steps"]))
        return e_reg[-1] <= EPS_REC

    outcomes = run_instances(instance, cfg["sphere"])
    return rate_record(
        claim="D5",
        key="sphere-w",
        statement=f"L4 recovers A* (E_reg <= {EPS_REC}) with w* uniform on the sphere (not ⊥ a*): "
        "recovery rate >= 1/2",
        kind="premise",
        params={**_params(cfg), "instance": "w* uniform on the unit sphere, random init, fresh SGD stream"},
        outcomes=outcomes,
        planned=cfg["sphere"],
        source=RATE_SOURCE,
        extra={"e_reg": e_reg, "max_e_reg": max(e_reg)},
    )


def _mixture_record(rng, cfg) -> Record:
    """Premise: the recovery rate under p N(μ, I) + (1 − p) N(−μ, I), p in turn, μ fresh per instance."""
    ps, model = cfg["ps"], paper_model(2, D)
    runs: list[tuple[float, float]] = []

    def instance(i: int) -> bool:
        p = ps[i % len(ps)]
        inputs = GaussianMixtureInput(_unit(rng.standard_normal(D)), p)
        runs.append((p, _fit(model, inputs, rng, cfg["steps"])))
        return runs[-1][1] <= EPS_REC

    planned = cfg["per_p"] * len(ps)
    outcomes = run_instances(instance, planned)
    per_p = {
        str(p): {
            "recovered": sum(e <= EPS_REC for q, e in runs if q == p),
            "of": sum(q == p for q, _ in runs),
            "max_e_reg": max(e for q, e in runs if q == p),
        }
        for p in ps
    }
    return rate_record(
        claim="D5",
        key="mixture-input",
        statement=f"L4 recovers A* (E_reg <= {EPS_REC}) for x ~ p N(mu, I) + (1-p) N(-mu, I), |mu| = 1: "
        "recovery rate >= 1/2",
        kind="premise",
        params={
            **_params(cfg),
            "p": list(ps),
            "instance": "p in turn, mu uniform on the unit sphere, random init, fresh SGD stream",
        },
        outcomes=outcomes,
        planned=planned,
        source=RATE_SOURCE,
        extra={"per_p": per_p, "e_reg": [e for _, e in runs], "max_e_reg": max(e for _, e in runs)},
        note="eq. (7) fails for the mixture (D1): the minimiser is biased, so E_reg has a floor "
        "(near the threshold at p = 0.1)",
    )


def _far_record(rng, cfg) -> Record:
    """Control: the mixture's rule and planned n with μ = 1.75 a_1*, stopped once its failures decide it."""
    model = paper_model(2, D)
    e_reg: list[float] = []

    def instance(_: int) -> bool:
        e_reg.append(_fit(model, GaussianMixtureInput(1.75 * model.A[0], 0.5), rng, cfg["steps"]))
        return e_reg[-1] <= EPS_REC

    planned = cfg["per_p"] * len(cfg["ps"])
    return rate_record(
        claim="D5",
        key="control-far-mixture",
        statement="same rule, x ~ N(mu, I)/2 + N(-mu, I)/2, mu = 1.75 a_1*: non-recovery detected",
        kind="negative-control",
        params={**_params(cfg), "p": 0.5, "mu": "1.75 a_1*", "instance": "random init, fresh SGD stream"},
        outcomes=run_instances(instance, planned, curtail=True),
        planned=planned,
        source=RATE_SOURCE,
        extra={
            "e_reg": e_reg,
            "diverged": sum(e == 1.0 for e in e_reg),
            "legend": {"diverged": "runs that diverged (their E_reg set to 1)"},
        },
        note="broken premise: x is far from Gaussian along a regressor (mean 0, variance 4.06, bimodal "
        "along a_1*), so eq. (7)'s Hermite moment identities fail badly and L4's minimiser is not A*",
    )


@register("D5", name="checks.makkuva.check_d5")
@one_blas_thread
def check_d5(seed: int, tier: str) -> list[Record]:
    """Sec. 4.1: L4's recovery rate with w* random on the sphere and with two-Gaussian-mixture inputs."""
    rng = np.random.default_rng(seed)
    cfg = TIERS[tier]
    return [_sphere_record(rng, cfg), _mixture_record(rng, cfg), _far_record(rng, cfg)]
