"""Claims D1–D6 of Makkuva et al. 2020 (CLAIMS.md, section D) and the `makkuva-fig1` replication target.

Assumptions every check states in its params (the paper leaves them open):
* regularisers μ = 0.05, λ = 4, δ = 2 — they satisfy the derived conditions λ·min π > μ > 0 and
  0 < δ < 4λ·min π (`lab.makkuva2020.losses`); δ = 2 rather than a small value because δ is the only
  restoring force outside span(A*) and sets SGD's noise floor there;
* ‖a_i*‖ = 1; W* convention w_k* = 0, compared after re-referencing to the estimate's last
  expert; "recovered" means E_reg ≤ 0.05 (correlation ≥ 0.95 with every true regressor).
BLAS is pinned to one thread inside the checks: on the shared 2-core machine a two-thread
OpenBLAS made the skinny (n × 10) products up to 20× slower.
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats
from threadpoolctl import threadpool_limits

from lab.core.records import Record, upper_bound_record
from lab.core.registry import register
from lab.core.stats import clopper_pearson, normal_mean
from lab.makkuva2020 import fig1 as makkuva_fig1
from lab.makkuva2020.fit import (
    contraction_factor,
    gating_error,
    gd_population_l4,
    init_params,
    projected_gd_l_log,
    regression_error,
    sgd_l4,
)
from lab.makkuva2020.gated_regression import (
    GatedRegression,
    GaussianInput,
    GaussianMixtureInput,
    GRUParams,
    expected_gates,
    gate_fisher_information,
    gru_gates,
    gru_step,
    hierarchical_moe_step,
    hierarchical_moe_update,
    paper_model,
    sample,
)
from lab.makkuva2020.losses import (
    L4Regularisers,
    l_log_hessian,
    optimal_scale,
    output_transforms,
    population_l4,
    population_l4_gradient,
    population_l4_hessian,
    sample_l4,
    transform_means,
)

REG = L4Regularisers(mu=0.05, lam=4.0, delta=2.0)
SGD_LR = 0.006
GD_STEPS = 1000
EPS_REC = 0.05
LEVEL = 0.99
ASSUMPTIONS = {
    "mu": REG.mu,
    "lam": REG.lam,
    "delta": REG.delta,
    "unit_regressors": True,
    "w_k": "0 (re-referenced to the estimate's last expert)",
}


def _one_blas_thread(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with threadpool_limits(limits=1, user_api="blas"):
            return func(*args, **kwargs)

    return wrapper


# ---------------------------------------------------------------- D1: sample L4 → eq. (7)


def _l4_gaps(model, inputs, A, n, reps, rng, transforms):
    """L̂4 − eq. (7) at A for `reps` fresh samples of size n, one row per transform set."""
    exact = population_l4(A, model.A, expected_gates(model.W, inputs), REG)
    gaps = np.empty((len(transforms), reps))
    for r in range(reps):
        s = sample(model, inputs, n, rng)
        for j, tr in enumerate(transforms):
            gaps[j, r] = sample_l4(A, s.x, s.y, tr, REG) - exact
    return gaps


def _gap_record(kind, statement, params, gaps, also: bool = True, **fields) -> Record:
    """0 ∈ the 99% CI of mean(L̂4 − eq. 7) (and `also`) ⇔ eq. (7) holds at this n (verdict)."""
    lo, hi = normal_mean(gaps, LEVEL)
    return Record(
        claim="D1",
        statement=statement,
        kind=kind,
        params=params,
        measured=float(np.mean(gaps)),
        bound=0.0,
        ci=(lo, hi),
        verdict="holds" if lo <= 0.0 <= hi and also else "violated",
        **fields,
    )


@register("D1", name="checks.makkuva.check_d1")
@_one_blas_thread
def check_d1(seed: int, tier: str) -> list[Record]:
    """Eq. (7): the sample L4 of eq. (6) tends to the closed form; controls break a* ⊥ w* or Gaussianity."""
    rng = np.random.default_rng(seed)
    ns = [10**2, 10**3, 10**4, 10**5] if tier == "quick" else [10**2, 10**3, 10**4, 10**5, 10**6]
    reps = 6 if tier == "quick" else 12
    sigma = 0.05
    hermite, paper = output_transforms(sigma), output_transforms(sigma, q4_constant="paper")
    model = paper_model(3, 10, sigma)
    gauss = GaussianInput(10)
    A = optimal_scale(expected_gates(model.W, gauss), REG)[:, None] * model.A
    params = {
        **ASSUMPTIONS,
        "k": 3,
        "d": 10,
        "sigma": sigma,
        "n": ns,
        "reps": reps,
        "A": "global minimiser of eq. (7)",
        "level": LEVEL,
    }
    table, logs = [], []
    for n in ns:
        gaps = _l4_gaps(model, gauss, A, n, reps, rng, [hermite, paper])
        lo, hi = normal_mean(gaps[0], LEVEL)
        table.append(
            {"n": n, "mean_gap": gaps[0].mean(), "rms_gap": math.sqrt(np.mean(gaps[0] ** 2)), "ci": [lo, hi]}
        )
        logs += [(math.log(n), math.log(abs(g))) for g in gaps[0]]
    fit = stats.linregress(*np.array(logs).T)
    half = stats.t.ppf(0.5 + LEVEL / 2, len(logs) - 2) * fit.stderr
    rate_ci = (fit.slope - half, fit.slope + half)
    premise = _gap_record(
        "premise",
        "sample L4 (eq. 6) -> eq. (7): 0 in the CI at the largest n, -1/2 in the rate's CI (a* ⊥ w*)",
        params,
        gaps[0],
        also=rate_ci[0] <= -0.5 <= rate_ci[1],
        note=f"rate {fit.slope:.3f} (99% CI [{rate_ci[0]:.3f}, {rate_ci[1]:.3f}]): log|gap| on log n",
        extra={"table": table, "rate": fit.slope, "rate_ci": rate_ci},
    )
    records = [premise]
    constant_gap = gaps[1] - gaps[0]
    tmeans = transform_means(A, gauss, hermite.c)
    records.append(
        _gap_record(
            "premise",
            "Q4's constant term does not change L4 for Gaussian x (E[t1] = E[t2] = 0)",
            {**params, "q4_constants": [hermite.q4_constant, paper.q4_constant]},
            constant_gap,
            note="L4 with the paper's constant minus L4 with the Hermite constant, same samples, largest n",
            extra={
                "exact_effect": (paper.q4_constant - hermite.q4_constant) * (tmeans[0] - REG.mu * tmeans[1]),
                "sd_ratio_paper_over_hermite": float(np.std(gaps[1]) / np.std(gaps[0])),
            },
        )
    )
    n_max = ns[-1]
    aligned = model.A.copy()
    aligned[0] = model.W[0]
    bent = GatedRegression(aligned, model.W, sigma)
    A_bent = optimal_scale(expected_gates(bent.W, gauss), REG)[:, None] * bent.A
    records.append(
        _gap_record(
            "negative-control",
            "eq. (7) with a regressor along w* (a_1* = w_1*): gap must be detected",
            {**params, "n": n_max, "a_1": "w_1*"},
            _l4_gaps(bent, gauss, A_bent, n_max, reps, rng, [hermite])[0],
        )
    )
    mixture = GaussianMixtureInput(np.ones(10) / math.sqrt(10), 0.3)
    A_mix = optimal_scale(expected_gates(model.W, mixture), REG)[:, None] * model.A
    records.append(
        _gap_record(
            "negative-control",
            "eq. (7) with two-Gaussian-mixture x (p = 0.3, mu = 1/sqrt(d)): gap must be detected",
            {**params, "n": n_max, "p": 0.3, "mu": "ones/sqrt(d)"},
            _l4_gaps(model, mixture, A_mix, n_max, reps, rng, [hermite])[0],
        )
    )
    mix_means = transform_means(A_mix, mixture, hermite.c)
    effect = (paper.q4_constant - hermite.q4_constant) * (mix_means[0] - REG.mu * mix_means[1])
    records.append(
        upper_bound_record(
            claim="D1",
            statement="Q4's constant does not change L4 under mixture x: exact effect must be detected",
            kind="negative-control",
            params={**params, "p": 0.3, "mu": "ones/sqrt(d)", "method": "exact (Appell: E[H4(m+g)] = m^4)"},
            measured=abs(effect),
            bound=0.0,
            rtol=1e-12,
        )
    )
    if tier == "full":
        half_bent = model.A.copy()
        half_bent[0] = (model.A[0] + model.W[0]) / math.sqrt(2)
        m45 = GatedRegression(half_bent, model.W, sigma)
        A45 = optimal_scale(expected_gates(m45.W, gauss), REG)[:, None] * m45.A
        g45 = _l4_gaps(m45, gauss, A45, n_max, reps, rng, [hermite])[0]
        records[2].extra["gap_45_degrees"] = {"mean": g45.mean(), "ci": normal_mean(g45, LEVEL)}
    return records


# ---------------------------------------------------------------- D2: Theorem 1 landscape


def _end_point_report(A_end, A_star, pi, reg):
    """Per end point: ‖∇L4‖, λ_min(∇²L4), E_reg, and whether it is a global minimiser of eq. (7)."""
    try:
        c = optimal_scale(pi, reg)
    except ValueError:
        c = None
    rows = []
    for A in A_end:
        grad = float(np.linalg.norm(population_l4_gradient(A, A_star, pi, reg)))
        lam_min = float(np.linalg.eigvalsh(population_l4_hessian(A, A_star, pi, reg))[0])
        e_reg, perm = regression_error(A, A_star)
        is_global = False
        if c is not None:
            signs = np.sign(np.sum(A * A_star[perm], axis=1))
            target = signs[:, None] * c[perm][:, None] * A_star[perm]
            is_global = bool(np.linalg.norm(A - target) <= 1e-6 * np.linalg.norm(target))
        rows.append(
            {
                "grad": grad,
                "lam_min": lam_min,
                "e_reg": e_reg,
                "norm": float(np.linalg.norm(A)),
                "sosp": grad <= 1e-8 and lam_min >= -0.5e-6,
                "global": is_global,
            }
        )
    return rows


def _gd_end_points(A0, A_star, pi, reg):
    """GD on eq. (7) from each start (batched; one by one if some diverge); returns (end points, diverged)."""
    with np.errstate(over="ignore", invalid="ignore"):
        try:
            return gd_population_l4(A0, A_star, pi, reg, lr=0.05, steps=GD_STEPS), 0
        except FloatingPointError:
            ends = []
            for start in A0:
                try:
                    ends.append(gd_population_l4(start, A_star, pi, reg, lr=0.05, steps=GD_STEPS))
                except FloatingPointError:
                    pass
            return np.array(ends).reshape(-1, *A0.shape[1:]), len(A0) - len(ends)


def _landscape(reg, inits, k_values, rng):
    """GD on eq. (7) from `inits` random starts per k: (#non-recovering end points, #SOSPs, per-k report).

    Non-recovering: an SOSP that is not a global minimiser ±c_m a*_π(i), or a run that diverged.
    """
    per_k, bad, sosp = {}, 0, 0
    for k in k_values:
        model = paper_model(k)
        pi = expected_gates(model.W, GaussianInput(model.d))
        A0 = rng.standard_normal((inits, k, model.d)) / math.sqrt(model.d)
        ends, diverged = _gd_end_points(A0, model.A, pi, reg)
        rows = _end_point_report(ends, model.A, pi, reg)
        spurious = sum(r["sosp"] and not r["global"] for r in rows)
        bad += spurious + diverged
        sosp += sum(r["sosp"] for r in rows)
        per_k[k] = {"sosp": sum(r["sosp"] for r in rows), "spurious_sosp": spurious, "diverged": diverged}
        if rows:
            per_k[k] |= {
                "max_grad": max(r["grad"] for r in rows),
                "lam_min_range": [min(r["lam_min"] for r in rows), max(r["lam_min"] for r in rows)],
                "max_e_reg": max(r["e_reg"] for r in rows),
                "max_norm": max(r["norm"] for r in rows),
            }
    return bad, sosp, per_k


@register("D2", name="checks.makkuva.check_d2")
@_one_blas_thread
def check_d2(seed: int, tier: str) -> list[Record]:
    """Theorem 1: SOSPs of eq. (7) are global (A* up to P, sign, Γ); SGD on eq. (6) recovers A*."""
    rng = np.random.default_rng(seed)
    inits = 30 if tier == "quick" else 200
    steps = 1200 if tier == "quick" else 2000
    sgd_runs = 1 if tier == "quick" else 3
    params = {
        **ASSUMPTIONS,
        "k": [2, 3],
        "d": 10,
        "sigma": 0.05,
        "inits": inits,
        "gd_lr": 0.05,
        "gd_steps": GD_STEPS,
    }
    params["criteria"] = (
        "SOSP: |grad| <= 1e-8, lam_min >= -5e-7; global: within 1e-6 (relative) of ±c_m a*_pi(i)"
    )
    spurious, sosp, per_k = _landscape(REG, inits, (2, 3), rng)  # spurious SOSPs + diverged runs
    for k, info in per_k.items():
        model = paper_model(k)
        pi = expected_gates(model.W, GaussianInput(10))
        info["Gamma"] = np.sqrt(pi)
        info["D"] = optimal_scale(pi, REG) * np.sqrt(pi)
    records = [
        Record(
            claim="D2",
            statement="every SOSP GD finds on eq. (7) is a global minimiser P D Γ^-1 A*",
            kind="premise",
            params=params,
            measured=float(spurious),
            bound=0.0,
            ci=clopper_pearson(spurious, max(sosp, 1), LEVEL),
            verdict="holds" if spurious == 0 and sosp > 0 else "violated",
            note="CI: Clopper-Pearson for the rate of spurious SOSPs among those found",
            extra={"per_k": per_k, "sosp_found": sosp},
        )
    ]
    sgd = []
    tr = output_transforms(0.05)
    for k in (2, 3):
        model = paper_model(k)
        pi = expected_gates(model.W, GaussianInput(10))
        for _ in range(sgd_runs):
            A0, _ = init_params(k, 10, rng)
            A_end = sgd_l4(A0, model, GaussianInput(10), tr, REG, rng, lr=SGD_LR, steps=steps).A[-1]
            report = _end_point_report(A_end[None], model.A, pi, REG)[0]
            sgd.append({"k": k, **{key: report[key] for key in ("e_reg", "grad", "lam_min")}})
    records.append(
        upper_bound_record(
            claim="D2",
            statement=f"SGD on eq. (6) (batch 1024) from random inits recovers A* (E_reg <= {EPS_REC})",
            kind="premise",
            params={
                **params,
                "sgd_lr": SGD_LR,
                "schedule": "lr/4 after half",
                "sgd_steps": steps,
                "sgd_runs_per_k": sgd_runs,
            },
            measured=max(r["e_reg"] for r in sgd),
            bound=EPS_REC,
            extra={"runs": sgd},
            note="grad / lam_min: population eq. (7) at the SGD end point",
        )
    )
    mild = _landscape(L4Regularisers(-0.5, REG.lam, REG.delta), inits, (2, 3), rng)
    bad, found, info = _landscape(L4Regularisers(-2.0, REG.lam, REG.delta), inits, (2, 3), rng)
    records.append(
        Record(
            claim="D2",
            statement="wrong-sign mu = -2: the premise's logic must find spurious SOSPs",
            kind="negative-control",
            params={**params, "mu": -2.0},
            measured=float(bad),
            bound=0.0,
            ci=clopper_pearson(bad, max(found, 1), LEVEL),
            verdict="holds" if bad == 0 and found > 0 else "violated",
            extra={"per_k": info, "mu=-0.5": {"spurious_sosp": mild[0], "sosp": mild[1], "per_k": mild[2]}},
            note="mu = -0.5 (also the wrong sign) finds no spurious SOSP: the sparse rows still win for "
            "|mu| < 1 (k = 2: spread rows cost 2 + 2|mu| vs 4|mu|), so the sign alone is not the condition",
        )
    )
    bad, found, info = _landscape(L4Regularisers(REG.mu, 0.0, REG.delta), inits, (2, 3), rng)
    records.append(
        Record(
            claim="D2",
            statement="no lambda-term (lam = 0): eq. (7) unbounded below; GD must end at a degenerate point",
            kind="negative-control",
            params={**params, "lam": 0.0},
            measured=float(bad),
            bound=0.0,
            verdict="holds" if bad == 0 and found > 0 else "violated",
            extra={"per_k": info},
            note="with lam = 0 no minimiser of the form ±c a* exists; GD from small inits stops at A = 0",
        )
    )
    records.append(_finite_sample_unbounded(rng, 10**5 if tier == "quick" else 10**6))
    return records


def _finite_sample_unbounded(rng, n) -> Record:
    """Thm 2 read literally: L̂4 is unbounded below along A = t·v e_1ᵀ, v ⊥ span(A*).

    Along that ray L̂4(t) = a t⁴ + b t² + λk with a = −μ·mean(Q4 t2(v)) + λ·mean(Q2 t3(v))² and
    b = δ/2 − 2λ·mean(Q2 t3(v)); for a < 0 it falls below L̂4 at the global minimiser of eq. (7)
    once t² exceeds the larger root of a s² + b s + λk − L̂4(A_glob) (checked with `sample_l4`).
    """
    model = paper_model(3)
    tr = output_transforms(model.sigma)
    s = sample(model, GaussianInput(10), n, rng)
    V = rng.standard_normal((64, 10))
    V[:, :3] = 0.0
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    P2 = (s.x @ V.T) ** 2  # t2(v, x) = (P2² − 6 P2 + 3)/c and t3(v, x) = (P2 − 1)/c' for unit v
    m4 = tr.Q4(s.y) @ ((P2 - 6.0) * P2 + 3.0) / (n * tr.c)
    m2 = tr.Q2(s.y) @ (P2 - 1.0) / (n * tr.c_prime)
    a = -REG.mu * m4 + REG.lam * m2**2
    extra = {"min_coefficient": float(a.min())}
    if a.min() < 0:
        j = int(np.argmin(a))
        b = REG.delta / 2 - 2 * REG.lam * m2[j]
        pi = expected_gates(model.W, GaussianInput(10))
        at_glob = sample_l4(optimal_scale(pi, REG)[:, None] * model.A, s.x, s.y, tr, REG)
        c0 = REG.lam * model.k - at_glob
        t_escape = math.sqrt((-b - math.sqrt(b * b - 4 * a[j] * c0)) / (2 * a[j]))
        A_far = np.zeros((3, 10))
        A_far[0] = 1.2 * t_escape * V[j]
        extra |= {
            "t_escape": t_escape,
            "Lhat(1.2 t_escape v) - Lhat(A_glob)": sample_l4(A_far, s.x, s.y, tr, REG) - at_glob,
        }
    negative = int(np.sum(a < 0))
    return Record(
        claim="D2",
        statement="Thm 2 read literally: the sample L4 (eq. 6) is bounded below like eq. (7)",
        kind="premise",
        params={**ASSUMPTIONS, "n": n, "directions": 64},
        measured=negative / len(V),
        bound=0.0,
        verdict="violated" if negative else "holds",
        finding=(
            "the sample L4 is unbounded below for every n: outside span(A*) its quartic coefficient "
            "-mu*mean(Q4 t2) + lam*mean(Q2 t3)^2 is a zero-mean O(n^-1/2) fluctuation, negative in about "
            "half the directions; landscape statements for the sample loss need a bounded domain"
        ),
        extra=extra,
        note="measured: fraction of v ⊥ span(A*) with a negative t^4 coefficient in Lhat(t v e_1^T)",
    )


# ---------------------------------------------------------------- D3 + D4: Fig. 1 pipeline


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
@_one_blas_thread
def check_fig1(seed: int, tier: str) -> list[Record]:
    """Thm 3/4 (projected GD on L_log, fitted ρ) and Fig. 1 (L4 + L_log vs ℓ2-SGD and EM): one pipeline."""
    config = makkuva_fig1.TIER_CONFIGS[tier]
    inits = 3 if tier == "quick" else 5
    seeds = [int(s) for s in np.random.SeedSequence(seed).generate_state(inits)]
    runs = makkuva_fig1.run_fig1(config, seeds)
    rng = np.random.default_rng(seed)
    params = {**ASSUMPTIONS, **{k: v for k, v in vars(config).items() if k != "reg"}, "inits": inits}
    records = _d3_records(runs[0], config, params, rng) + _d4_records(runs, params)
    return [*records, _d4_control(runs, config, params, rng)]


def _d3_records(run, config, params, rng) -> list[Record]:
    model = paper_model(config.k, config.d, config.sigma)
    errors = np.linalg.norm(run.log_path - run.W_target, axis=2).max(axis=1)
    plateau = _plateau(errors)
    fit = contraction_factor(errors, floor=2.0 * plateau)
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
        statement="projected GD on L_log (A = L4 estimate, sample splitting) contracts geometrically to W*",
        kind="premise",
        params={**params, "R": config.R, "verdict": verdict_logic, "decay_phase": "error > 2 x plateau"},
        measured=fit.rho,
        bound=1.0,
        ci=fit.ci,
        verdict="holds" if fit.ci[1] < 1.0 and ratio < 2**-0.5 else "violated",
        slack=1.0 / fit.rho,
        extra={
            "rho_fitted": fit.rho,
            "rho_predicted_from_hessian": rho_pred,
            "hessian_eigen_range": [h[0], h[-1]],
            "final_error": errors[-1],
            "plateau": plateau,
            "plateaus_m/4_m": plateaus,
            "plateau_ratio": ratio,
            "eps_reg (max|a-a*|/sigma^2)": eps_reg,
            "sqrt(dT log(Tk/0.01)/n)": stat_term,
            "W_target_norms": target_norms,
            "paper_R_1_covers_target": bool(np.all(target_norms <= 1.0)),
            "error_curve": errors,
        },
        note=f"rho {fit.rho:.3f} fitted over {fit.t_stop} steps vs max|1 - alpha h| = {rho_pred:.3f} at W*",
    )
    e = np.linalg.eigvalsh(gate_fisher_information(model.W))
    kappa = e[-1] / e[0]
    rho_limit = (kappa - 1) / (kappa + 1)
    little_o = Record(
        claim="D3",
        statement="Thm 3: rho_sigma = o_sigma(1) for GD with a fixed step (contraction -> 0 as sigma -> 0)",
        kind="premise",
        params={**params, "method": "sigma -> 0 Hessian = gate Fisher information, Gauss-Hermite quadrature"},
        measured=rho_limit,
        bound=0.0,
        verdict="holds" if rho_limit <= 1e-12 else "violated",
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
        statement="projection radius R that does not cover W* (R = min|w*|/2): convergence to W* must fail",
        kind="negative-control",
        params={**params, "R": small_R, "verdict": "plateau ratio < 2^-1/2 (limit is W*)"},
        measured=nc_ratio,
        bound=2**-0.5,
        verdict="holds" if nc_ratio < 2**-0.5 else "violated",
        extra={"plateaus_m/4_m": nc_plateaus, "gap |w*| - R": float(target_norms.min() - small_R)},
    )
    return [premise, little_o, control]


D4_LOGIC = (
    f"holds iff L4 + L_log recovers (E_reg, E_gating <= {EPS_REC}) in every init and the baseline ends "
    f"unrecovered (E_reg or E_gating > {EPS_REC}) in at least one: a witness of a bad local optimum"
)


def _recovered(method) -> bool:
    """A method's run recovers A* and W*: E_reg and E_gating both ≤ EPS_REC (Sec. 4's errors)."""
    return method.e_reg <= EPS_REC and method.e_gating <= EPS_REC


def _fig1_holds(runs, key: str) -> bool:
    """The lab's reading of Fig. 1 (D4_LOGIC) for the baseline `key` ("l2" or "em")."""
    return all(_recovered(r.ours) for r in runs) and not all(_recovered(getattr(r, key)) for r in runs)


def _d4_records(runs, params) -> list[Record]:
    """Fig. 1 as the lab reads it: ours recovers in every init and the baseline is stuck in at least one."""
    records = []
    for key, name in (("l2", "l2-SGD"), ("em", "EM")):
        stuck = [not _recovered(getattr(r, key)) for r in runs]
        diff = np.array(
            [[getattr(r, key).e_reg - r.ours.e_reg, getattr(r, key).e_gating - r.ours.e_gating] for r in runs]
        )
        extra = {
            "per_init": [
                {
                    "ours": [r.ours.e_reg, r.ours.e_gating],
                    name: [getattr(r, key).e_reg, getattr(r, key).e_gating],
                }
                for r in runs
            ],
            "mean_ours": [np.mean([r.ours.e_reg for r in runs]), np.mean([r.ours.e_gating for r in runs])],
            f"mean_{key}": [
                np.mean([getattr(r, key).e_reg for r in runs]),
                np.mean([getattr(r, key).e_gating for r in runs]),
            ],
        }
        if len(runs) >= 2:
            extra["paired_mean_diff_ci_reg_gating"] = [normal_mean(diff[:, j], LEVEL) for j in (0, 1)]
        records.append(
            Record(
                claim="D4",
                statement=f"Fig. 1: {name} gets stuck where L4 + L_log recovers A* and W* (same inits)",
                kind="premise",
                params={**params, "verdict": D4_LOGIC},
                measured=float(np.mean(stuck)),
                bound=0.0,
                ci=clopper_pearson(int(sum(stuck)), len(runs), LEVEL),
                verdict="holds" if _fig1_holds(runs, key) else "violated",
                finding=(
                    None
                    if key != "em"
                    else "EM (WLS experts, IRLS gates, sigma^2 estimated) recovers A* and W* from every "
                    "random init here (E_reg ~ 1e-5, below L4 + L_log's, similar E_gating); "
                    "Fig. 1's stuck EM does not reproduce"
                ),
                extra=extra,
                note="measured: fraction of inits where the baseline ends unrecovered (CI: Clopper-Pearson)",
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
    recovered = sum(_recovered(r.ours) for r in mutated)
    return Record(
        claim="D4",
        statement="Fig. 1 rule vs l2-SGD with L_log fed row 1 of the L4 estimate negated: must not hold",
        kind="negative-control",
        params={
            **params,
            "verdict": D4_LOGIC,
            "mutation": "a_1 -> -a_1 in A-hat after sign resolution (L_log's expert 1 has the wrong sign)",
        },
        measured=recovered / len(runs),
        bound=1.0,
        ci=clopper_pearson(recovered, len(runs), LEVEL),
        verdict="holds" if _fig1_holds(mutated, "l2") else "violated",
        extra={
            "e_gating_mutated": [r.ours.e_gating for r in mutated],
            "e_gating_ours": [r.ours.e_gating for r in runs],
            "e_reg_mutated (sign-blind, = ours)": [r.ours.e_reg for r in mutated],
        },
        note="measured: fraction of inits where the mutated L4 + L_log recovers (the rule needs all)",
    )


# ---------------------------------------------------------------- D5: Sec. 4.1 robustness


@register("D5", name="checks.makkuva.check_d5")
@_one_blas_thread
def check_d5(seed: int, tier: str) -> list[Record]:
    """Sec. 4.1: L4 still recovers A* with w* random on the sphere and with two-Gaussian-mixture inputs."""
    rng = np.random.default_rng(seed)
    trials = 2 if tier == "quick" else 5
    ps = (0.1, 0.3, 0.5) if tier == "quick" else (0.1, 0.2, 0.3, 0.4, 0.5)
    steps = 800 if tier == "quick" else 1500
    tr = output_transforms(0.05)
    d = 10
    params = {
        **ASSUMPTIONS,
        "k": 2,
        "d": d,
        "sigma": 0.05,
        "sgd_lr": SGD_LR,
        "sgd_steps": steps,
        "eps": EPS_REC,
    }

    def fit(model, inputs):
        """E_reg after online SGD on eq. (6) from a random init; a diverged run is E_reg = 1 (the maximum)."""
        A0, _ = init_params(2, d, rng)
        try:
            A_end = sgd_l4(A0, model, inputs, tr, REG, rng, lr=SGD_LR, steps=steps).A[-1]
        except FloatingPointError:
            return 1.0
        return regression_error(A_end, model.A)[0]

    sphere = []
    for _ in range(trials):
        w = rng.standard_normal(d)
        sphere.append(
            fit(GatedRegression(np.eye(d)[:2], (w / np.linalg.norm(w))[None], 0.05), GaussianInput(d))
        )
    mu = rng.standard_normal(d)
    mu /= np.linalg.norm(mu)
    model = paper_model(2, d)
    mixture = {p: fit(model, GaussianMixtureInput(mu, p)) for p in ps}
    far = [fit(model, GaussianMixtureInput(1.75 * model.A[0], 0.5)) for _ in range(trials)]
    return [
        upper_bound_record(
            claim="D5",
            statement=f"L4 recovers A* (E_reg <= {EPS_REC}) with w* uniform on the sphere (not ⊥ a*)",
            kind="premise",
            params={**params, "trials": trials, "verdict": "every trial recovered"},
            measured=max(sphere),
            bound=EPS_REC,
            extra={"e_reg": sphere},
        ),
        upper_bound_record(
            claim="D5",
            statement=f"L4 recovers A* (E_reg <= {EPS_REC}) for x ~ p N(mu, I) + (1-p) N(-mu, I), |mu| = 1",
            kind="premise",
            params={
                **params,
                "p": list(ps),
                "mu": "uniform on the unit sphere",
                "verdict": "every p recovered",
            },
            measured=max(mixture.values()),
            bound=EPS_REC,
            extra={"e_reg": {str(p): e for p, e in mixture.items()}},
            note="eq. (7) fails for the mixture (D1): the minimiser is biased, so E_reg has a floor",
        ),
        upper_bound_record(
            claim="D5",
            statement="same measurement, x ~ N(mu, I)/2 + N(-mu, I)/2, mu = 1.75 a_1*: non-recovery detected",
            kind="negative-control",
            params={
                **params,
                "trials": trials,
                "p": 0.5,
                "mu": "1.75 a_1*",
                "verdict": "every trial recovered",
            },
            measured=max(far),
            bound=EPS_REC,
            extra={"e_reg": far, "diverged (E_reg := 1)": sum(e == 1.0 for e in far)},
            note="broken premise: x is far from Gaussian along a regressor (mean 0, variance 4.06, bimodal "
            "along a_1*), so eq. (7)'s Hermite moment identities fail badly and L4's minimiser is not A*",
        ),
    ]


# ---------------------------------------------------------------- D6: GRU as a depth-2 MoE

_ENTRY = st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False)


@st.composite
def gru_cases(draw, restrict: str = "none", max_dim: int = 4):
    """(GRUParams, x, h): hidden size m, input size p in 1..max_dim, entries in [-2, 2]; see D6."""
    m = 1 if restrict == "scalar" else draw(st.integers(1, max_dim))
    p = draw(st.integers(1, max_dim))
    shapes = {
        "U_z": (m, p),
        "W_z": (m, m),
        "U_r": (m, p),
        "W_r": (m, m),
        "U_h": (m, p),
        "W_h": (m, m),
        "x": (p,),
        "h": (m,),
    }
    flat = draw(
        arrays(np.float64, sum(math.prod(v) for v in shapes.values()), elements=_ENTRY, fill=st.nothing())
    )
    parts, start = {}, 0
    for name, shape in shapes.items():
        parts[name] = flat[start : start + math.prod(shape)].reshape(shape)
        start += math.prod(shape)
    if restrict == "diagonal":
        parts["W_h"] = np.diag(np.diag(parts["W_h"]))
    if restrict == "constant-reset":
        parts["U_r"] = np.repeat(parts["U_r"][:1], m, axis=0)
        parts["W_r"] = np.repeat(parts["W_r"][:1], m, axis=0)
    x, h = parts.pop("x"), parts.pop("h")
    return GRUParams(**parts), x, h


def _gap(case, gate: str) -> float:
    params, x, h = case
    return float(np.max(np.abs(gru_step(params, x, h, gate) - hierarchical_moe_step(params, x, h, gate))))


def bernoulli_gap(case) -> float:
    """|E over independent Bernoulli gates of binary eq. (4) − eq. (4) with sigmoid gates|, enumerated."""
    params, x, h = case
    z, r = gru_gates(params, x, h, "sigmoid")
    m = h.size
    mean = np.zeros(m)
    for bits in range(4**m):
        b = np.array([(bits >> j) & 1 for j in range(2 * m)], dtype=float)
        bz, br = b[:m], b[m:]
        weight = np.prod(np.where(bz == 1, z, 1 - z)) * np.prod(np.where(br == 1, r, 1 - r))
        mean += weight * hierarchical_moe_update(params, x, h, bz, br)
    return float(np.max(np.abs(mean - hierarchical_moe_step(params, x, h, "sigmoid"))))


def _search(strategy, measure, examples: int, seed: int):
    """Largest `measure(case)` over Hypothesis-generated cases (seeded, no shrinking), with its case."""
    worst = [0.0, None]

    @hypothesis_seed(seed)
    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def run(case):
        value = measure(case)
        if value > worst[0] or worst[1] is None:
            worst[:] = [value, case]

    run()
    return worst[0], worst[1]


@register("D6", name="checks.makkuva.check_d6")
def check_d6(seed: int, tier: str) -> list[Record]:
    """Sec. 2, eq. (4): a binary-gated GRU step as a depth-2 hierarchical MoE; what holds with sigmoids."""
    examples = 50 if tier == "quick" else 500
    params = {
        "examples": examples,
        "entries": "[-2, 2]",
        "sizes": "1..4",
        "act": "tanh",
        "generator": "Hypothesis",
    }
    generic, case = _search(gru_cases(), lambda c: _gap(c, "binary"), examples, seed)
    params_c, x_c, h_c = case
    example = {
        "m": h_c.size,
        "reset_gate": gru_gates(params_c, x_c, h_c, "binary")[1],
        "W_h": params_c.W_h,
        "h": h_c,
    }
    records = [
        Record(
            claim="D6",
            statement="a GRU step with binary gates equals the hierarchical MoE of eq. (4) (any weights)",
            kind="premise",
            params=params,
            measured=generic,
            bound=0.0,
            verdict="holds" if generic == 0.0 else "violated",
            finding=(
                "eq. (4) replaces g(U_h x + W_h (r ⊙ h)) by (1-r) ⊙ g(U_h x) + r ⊙ g(U_h x + W_h h); "
                "coordinate i agrees only if sum_j (W_h)_ij (r_j - r_i) h_j = 0, e.g. a scalar state, a "
                "diagonal W_h or a reset gate "
                "constant across coordinates"
            ),
            extra={"worst_case": example},
        )
    ]
    restricted = {
        r: _search(gru_cases(r), lambda c: _gap(c, "binary"), examples, seed)[0]
        for r in ("scalar", "diagonal", "constant-reset")
    }
    records.append(
        upper_bound_record(
            claim="D6",
            statement="binary gates: GRU = eq. (4) exactly if the state is scalar, W_h diagonal or r uniform",
            kind="premise",
            params={**params, "restrictions": list(restricted)},
            measured=max(restricted.values()),
            bound=0.0,
            extra={"max_gap": restricted},
        )
    )
    records.append(
        upper_bound_record(
            claim="D6",
            statement="sigmoid gates: eq. (4) = its binary version averaged over independent Bernoulli gates",
            kind="premise",
            params={**params, "method": "exact enumeration of the 4^m gate patterns", "rtol": 1e-12},
            measured=_search(gru_cases(max_dim=3), bernoulli_gap, examples, seed)[0],
            bound=0.0,
            rtol=1e-12,
        )
    )
    records.append(
        upper_bound_record(
            claim="D6",
            statement="sigmoid gates: the GRU step itself equals eq. (4) (must be detected as false)",
            kind="negative-control",
            params=params,
            measured=_search(gru_cases(), lambda c: _gap(c, "sigmoid"), examples, seed)[0],
            bound=0.0,
            note="g(U_h x + W_h (r ⊙ h)) ≠ the r-average of g; only the Bernoulli-expectation form holds",
        )
    )
    return records
