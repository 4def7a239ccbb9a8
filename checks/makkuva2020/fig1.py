"""Theorems 3–4 and Fig. 1 of Makkuva et al. 2020: GD on L_log (D3); L4 + L_log vs ℓ2-SGD and EM (D4).

One pipeline (`lab.makkuva2020.fig1_experiment.run_fig1`) feeds both claims: D3 reads its L_log stage, D4
compares its end points with the baselines started from the same inits.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from checks.makkuva2020.assumptions import ASSUMPTIONS, EPS_REC, LEVEL, one_blas_thread
from lab.core.descriptions import load_claims, load_findings
from lab.core.records import Record, lower_bound_record
from lab.core.registry import register
from lab.core.stats import clopper_pearson, interval_basis, normal_mean
from lab.makkuva2020 import fig1_experiment
from lab.makkuva2020.fit import contraction_factor, gating_error, projected_gd_l_log, regression_error
from lab.makkuva2020.gated_regression import GaussianInput, gate_fisher_information, paper_model, sample
from lab.makkuva2020.losses import l_log_hessian

DESCRIPTIONS = load_claims(Path(__file__).with_suffix(".toml"))  # what its claims say, as data
FINDINGS = load_findings(Path(__file__).with_suffix(".findings.toml"))  # where the paper and the lab part


def _plateau(errors: np.ndarray) -> float:
    """RMS of ‖W_t − W*‖ over the second half of the iterations (the stationary noise level)."""
    tail = errors[len(errors) // 2 :]
    return float(np.sqrt(np.mean(tail**2)))


def _consistency(run, config, R, rng):
    """Projected GD on L_log at n/T = m/4 and m: plateau ratio (≈ 1/2 if the limit is W*, → 1 if biased)."""
    model = paper_model(config.k, config.d, config.sigma)
    paths = {}
    for m in (config.log_per_step // 4, config.log_per_step):
        data = sample(model, GaussianInput(config.d), m * config.log_T, rng)
        W0 = np.zeros((config.k - 1, config.d))
        paths[m] = projected_gd_l_log(
            W0, run.A_hat, data.x, data.y, config.sigma, R, config.log_lr, config.log_T
        )
    plateaus = [_plateau(np.linalg.norm(p - run.W_target, axis=2).max(axis=1)) for p in paths.values()]
    return plateaus, plateaus[1] / plateaus[0]


@register("D3", "D4", name="checks.makkuva.check_fig1")
@one_blas_thread
def check_fig1(seed: int, tier: str) -> list[Record]:
    """Thm 3/4 (projected GD on L_log, fitted ρ) and Fig. 1 (L4 + L_log vs ℓ2-SGD and EM): one pipeline."""
    config = fig1_experiment.TIER_CONFIGS[tier]
    inits = 3 if tier == "quick" else 5
    seeds = [int(s) for s in np.random.SeedSequence(seed).generate_state(inits)]
    runs = fig1_experiment.run_fig1(config, seeds)
    rng = np.random.default_rng(seed)
    params = {**ASSUMPTIONS, **{k: v for k, v in vars(config).items() if k != "reg"}, "inits": inits}
    records = _d3_records(runs[0], config, params, rng) + _d4_records(runs, params)
    return [*records, _d4_control(runs, config, params, rng)]


def _d3_records(run, config, params, rng) -> list[Record]:
    """Thm 4's geometric contraction of projected GD on L_log, Thm 3's ρ_σ = o(1), and the small-R control."""
    model = paper_model(config.k, config.d, config.sigma)
    errors = np.linalg.norm(run.log_path - run.W_target, axis=2).max(axis=1)
    plateau = _plateau(errors)
    fit = contraction_factor(errors, floor=2.0 * plateau, level=LEVEL)
    held = sample(model, GaussianInput(config.d), 100_000, rng)
    h = np.linalg.eigvalsh(l_log_hessian(run.W_target, run.A_hat, held.x, held.y, config.sigma))
    rho_pred = float(np.max(np.abs(1.0 - config.log_lr * h)))
    plateaus, ratio = _consistency(run, config, config.R, rng)
    eps_reg = float(np.max(np.linalg.norm(run.A_hat - model.A[run.perm], axis=1)) / config.sigma**2)
    stat_term = math.sqrt(
        config.d
        * config.log_T
        * math.log(config.log_T * config.k / 0.01)
        / (config.log_T * config.log_per_step)
    )
    target_norms = np.linalg.norm(run.W_target, axis=1)
    verdict_logic = "holds iff the 99% CI of rho is below 1 and plateau(m)/plateau(m/4) < 2^-1/2"
    premise = Record(
        claim="D3",
        key="contracts",
        statement="projected GD on L_log (A = L4 estimate, sample splitting) contracts geometrically to W*",
        kind="premise",
        params={**params, "R": config.R, "verdict": verdict_logic, "decay_phase": "error > 2 x plateau"},
        measured=fit.rho,
        bound=1.0,
        ci=fit.ci,
        verdict="holds" if fit.ci[1] < 1.0 and ratio < 2**-0.5 else "violated",
        rule="judged",
        reason=verdict_logic,
        slack=1.0 / fit.rho,
        extra={
            "rho_fitted": fit.rho,
            "rho_predicted_from_hessian": rho_pred,
            "hessian_eigen_range": [h[0], h[-1]],
            "final_error": errors[-1],
            "plateau": plateau,
            "plateaus_m_over_4_and_m": plateaus,
            "plateau_ratio": ratio,
            "eps_reg": eps_reg,
            "stat_term": stat_term,
            "legend": {"eps_reg": "max|a-a*|/sigma^2", "stat_term": "sqrt(dT log(Tk/0.01)/n)"},
            "W_target_norms": target_norms,
            "paper_R_1_covers_target": bool(np.all(target_norms <= 1.0)),
            "error_curve": errors,
            "interval": interval_basis("t (fitted slope)", LEVEL, fit.t_stop, of="steps of the decay phase"),
        },
        note=f"rho {fit.rho:.3f} fitted over {fit.t_stop} steps vs max|1 - alpha h| = {rho_pred:.3f} at W*",
    )
    e = np.linalg.eigvalsh(gate_fisher_information(model.W))
    kappa = e[-1] / e[0]
    rho_limit = (kappa - 1) / (kappa + 1)
    little_o = Record(
        claim="D3",
        key="rho-vanishes",
        statement="Thm 3: rho_sigma = o_sigma(1) for GD with a fixed step (contraction -> 0 as sigma -> 0)",
        kind="premise",
        params={
            **params,
            "method": "sigma -> 0 Hessian = gate Fisher information, Gauss-Hermite quadrature",
            "rtol": 1e-12,
        },
        measured=rho_limit,
        bound=0.0,
        verdict="holds" if rho_limit <= 1e-12 else "violated",
        rule="upper",
        finding=(
            "as sigma -> 0 the Hessian of L_log at W* tends to the softmax-gate Fisher information, whose "
            "condition "
            f"number {kappa:.2f} > 1 bounds every fixed-step GD's contraction below by (kappa-1)/(kappa+1) = "
            f"{rho_limit:.2f}; rho_sigma does not vanish"
        ),
        extra={"fisher_eigen_range": [e[0], e[-1]], "kappa": kappa},
    )
    small_R = 0.5 * float(target_norms.min())
    nc_plateaus, nc_ratio = _consistency(run, config, small_R, rng)
    control = Record(
        claim="D3",
        key="control-small-radius",
        statement="projection radius R that does not cover W* (R = min|w*|/2): convergence to W* must fail",
        kind="negative-control",
        params={**params, "R": small_R, "verdict": "plateau ratio < 2^-1/2 (limit is W*)"},
        measured=nc_ratio,
        bound=2**-0.5,
        verdict="holds" if nc_ratio < 2**-0.5 else "violated",
        rule="strict-upper",
        extra={
            "plateaus_m_over_4_and_m": nc_plateaus,
            "radius_gap": float(target_norms.min() - small_R),
            "legend": {"radius_gap": "min|w*| - R"},
        },
    )
    return [premise, little_o, control]


D4_RATE_SOURCE = (
    "rate > 0: Fig. 1 (5 trials) shows l2-SGD and EM stuck in local optima but gives no frequency, so one "
    "init where the baseline ends stuck and L4 + L_log recovers witnesses the claim. L4's own recovery "
    "from random inits is typical, not certain (D2 measures its rate at these settings), so it is "
    "required in the witness init only; L_log's convergence is D3"
)
D4_LOGIC = (
    f"holds iff the {LEVEL:.0%} Clopper-Pearson interval of the witness rate excludes 0, i.e. in at least "
    f"one init L4 + L_log recovers (E_reg, E_gating <= {EPS_REC}) and the baseline ends unrecovered "
    f"(E_reg or E_gating > {EPS_REC}) from the same init: a bad local optimum the paper's method escapes"
)


def _recovered(method) -> bool:
    """A method's run recovers A* and W*: E_reg and E_gating both ≤ EPS_REC (Sec. 4's errors)."""
    return method.e_reg <= EPS_REC and method.e_gating <= EPS_REC


def _witnesses(runs, baseline: str) -> list[bool]:
    """Per init: L4 + L_log recovers and the `baseline` ("l2" or "em") does not (same init)."""
    return [_recovered(r.ours) and not _recovered(getattr(r, baseline)) for r in runs]


def _witness_record(runs, baseline: str, **fields) -> Record:
    """The lab's reading of Fig. 1 (D4_LOGIC) against the `baseline`, from the witness rate's interval."""
    found = _witnesses(runs, baseline)
    return lower_bound_record(
        claim="D4",
        measured=sum(found) / len(runs),
        bound=0.0,
        ci=clopper_pearson(sum(found), len(runs), LEVEL),
        strict=True,
        extra={
            **fields.pop("extra", {}),
            "interval": interval_basis("Clopper–Pearson", LEVEL, len(runs), of="inits"),
        },
        **fields,
    )


def _fig1_holds(runs, baseline: str) -> bool:
    """The lab's reading of Fig. 1 (D4_LOGIC) for the `baseline`."""
    return (
        _witness_record(runs, baseline, key="fig1", statement="", kind="premise", params={}).verdict
        == "holds"
    )


def _d4_records(runs, params) -> list[Record]:
    """Fig. 1 as the lab reads it: an init where the baseline is stuck and L4 + L_log recovers (rate > 0)."""
    params = {**params, "verdict": D4_LOGIC, "stated_rate": "> 0", "rate_source": D4_RATE_SOURCE}
    records = []
    for baseline, name in (("l2", "l2-SGD"), ("em", "EM")):
        diff = np.array(
            [
                [getattr(r, baseline).e_reg - r.ours.e_reg, getattr(r, baseline).e_gating - r.ours.e_gating]
                for r in runs
            ]
        )
        extra = {
            "per_init": [
                {
                    "ours": [r.ours.e_reg, r.ours.e_gating],
                    name: [getattr(r, baseline).e_reg, getattr(r, baseline).e_gating],
                }
                for r in runs
            ],
            "ours_recovered": sum(_recovered(r.ours) for r in runs),
            f"{baseline}_recovered": sum(_recovered(getattr(r, baseline)) for r in runs),
            "mean_ours": [np.mean([r.ours.e_reg for r in runs]), np.mean([r.ours.e_gating for r in runs])],
            f"mean_{baseline}": [
                np.mean([getattr(r, baseline).e_reg for r in runs]),
                np.mean([getattr(r, baseline).e_gating for r in runs]),
            ],
        }
        if len(runs) >= 2:
            extra["paired_mean_diff_ci_reg_gating"] = [normal_mean(diff[:, j], LEVEL) for j in (0, 1)]
        records.append(
            _witness_record(
                runs,
                baseline,
                key=f"stuck-{baseline}",
                statement=f"Fig. 1: {name} gets stuck where L4 + L_log recovers A* and W* (same inits)",
                kind="premise",
                params=params,
                finding=(
                    None
                    if baseline != "em"
                    else f"the lab's EM (WLS experts, IRLS gates, sigma^2 estimated; Sec. 4 does not say "
                    f"which EM) recovers A* and W* in {extra['em_recovered']} of {len(runs)} inits here: "
                    "Fig. 1's stuck EM is not seen, and so few inits bound its stuck rate only loosely (the "
                    "CI); the replication makkuva-fig1 measures the rate over more inits"
                ),
                extra=extra,
                note="measured: fraction of inits where L4 + L_log recovers and the baseline ends "
                "unrecovered (CI: Clopper-Pearson)",
            )
        )
    return records


def _d4_control(runs, config, params, rng) -> Record:
    """D4's rule against ℓ2-SGD with a mutated L4 + L_log: L_log (eq. 8) is fed Â with row 1 negated.

    E_reg is blind to signs, so only E_gating can reject it: the L_log stage is rerun from each init's
    W_0 on one fresh sample of log_T · log_per_step points (split as in Thm 4) with the wrong-signed expert.
    """
    model = paper_model(config.k, config.d, config.sigma)
    data = sample(model, GaussianInput(config.d), config.log_T * config.log_per_step, rng)
    mutated = []
    for run in runs:
        A_bad = run.A_hat.copy()
        A_bad[0] = -A_bad[0]
        e_reg, perm = regression_error(A_bad, model.A)
        path = projected_gd_l_log(
            run.log_path[0], A_bad, data.x, data.y, config.sigma, config.R, config.log_lr, config.log_T
        )
        gating = np.array([gating_error(w, model.W, perm) for w in path])
        ours = replace(run.ours, e_reg=e_reg, e_gating=gating[-1], curve_gating=gating)
        mutated.append(replace(run, ours=ours))
    return _witness_record(
        mutated,
        "l2",
        key="control-negated-expert",
        statement="Fig. 1 rule vs l2-SGD with L_log fed row 1 of the L4 estimate negated: must not hold",
        kind="negative-control",
        params={
            **params,
            "verdict": D4_LOGIC,
            "stated_rate": "> 0",
            "mutation": "a_1 -> -a_1 in A-hat after sign resolution (L_log's expert 1 has the wrong sign)",
        },
        extra={
            "mutated_recovered": sum(_recovered(r.ours) for r in mutated),
            "e_gating_mutated": [r.ours.e_gating for r in mutated],
            "e_gating_ours": [r.ours.e_gating for r in runs],
            "e_reg_mutated": [r.ours.e_reg for r in mutated],
            "legend": {"e_reg_mutated": "E_reg of the mutated runs (sign-blind, = ours)"},
        },
        note="measured: fraction of inits where the mutated L4 + L_log recovers and l2-SGD ends unrecovered",
    )
