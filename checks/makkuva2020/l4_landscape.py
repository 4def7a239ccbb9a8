"""Eq. (7) and Theorems 1–2 of Makkuva et al. 2020: the population L4 (D1) and its landscape (D2).

D1 checks that the sample L4 of eq. (6) tends to the closed form eq. (7); D2 that every SOSP of
eq. (7) is a global minimiser and that SGD on eq. (6) recovers A*, and reports where the sample L4 is
unbounded below (the scope of Theorem 2).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy import stats

from checks.makkuva2020.assumptions import ASSUMPTIONS, EPS_REC, LEVEL, REG, SGD_LR, one_blas_thread
from checks.makkuva2020.rates import rate_record, run_instances
from lab.core.descriptions import load_claims, load_findings
from lab.core.records import Record, report_record, upper_bound_record
from lab.core.registry import register
from lab.core.stats import clopper_pearson, interval_basis, normal_mean
from lab.makkuva2020.fit import gd_population_l4, init_params, regression_error, sgd_l4
from lab.makkuva2020.gated_regression import (
    GatedRegression,
    GaussianInput,
    GaussianMixtureInput,
    expected_gates,
    paper_model,
    sample,
)
from lab.makkuva2020.losses import (
    L4Regularisers,
    optimal_scale,
    output_transforms,
    population_l4,
    population_l4_gradient,
    population_l4_hessian,
    sample_l4,
    transform_means,
)

DESCRIPTIONS = load_claims(Path(__file__).with_suffix(".toml"))  # what its claims say, as data
FINDINGS = load_findings(Path(__file__).with_suffix(".findings.toml"))  # where the paper and the lab part

GD_STEPS = 1000
# Reps of the regressor-along-w* control at the largest n. Its gap is about -0.29 with a per-rep sd of
# about 0.14 at n = 10^5 (measured over 40 reps); with the premise's 6 reps the 99% t-interval's
# half-width (4.03 sd / sqrt 6 = 0.23) is close to the gap, and at seeds 6 and 7 it covered 0 (MISSED).
# 24 reps bring the expected half-width to 0.08 (2.81 sd / sqrt 24), under a third of the gap. At the
# full tier n = 10^6 already gives a half-width of about 0.04 with 12 reps.
CONTROL_REPS = {"quick": 24, "full": 12}
RATE_REASON = "holds iff 0 lies in the gap's CI at the largest n and -1/2 in the CI of the fitted rate"
SOSP_REASON = "holds iff GD found at least one SOSP and none of them is spurious (measured = spurious SOSPs)"


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


def _gap_record(key, kind, statement, params, gaps, rate_ok: bool | None = None, **fields) -> Record:
    """0 ∈ the 99% CI of mean(L̂4 − eq. 7) ⇔ eq. (7) holds at this n; with `rate_ok` (−1/2 in the
    rate's CI) both must hold, and the record is judged by that pair (RATE_REASON)."""
    lo, hi = normal_mean(gaps, LEVEL)
    basis = interval_basis("normal (t)", LEVEL, np.size(gaps), of="repetitions")
    fields["extra"] = {**fields.pop("extra", {}), "interval": basis}
    return Record(
        claim="D1",
        key=key,
        statement=statement,
        kind=kind,
        params=params,
        measured=float(np.mean(gaps)),
        bound=0.0,
        ci=(lo, hi),
        verdict="holds" if lo <= 0.0 <= hi and rate_ok is not False else "violated",
        rule="equal" if rate_ok is None else "judged",
        reason=None if rate_ok is None else RATE_REASON,
        **fields,
    )


@register("D1", name="checks.makkuva.check_d1")
@one_blas_thread
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
        "sample-l4-converges",
        "premise",
        "sample L4 (eq. 6) -> eq. (7): 0 in the CI at the largest n, -1/2 in the rate's CI (a* ⊥ w*)",
        params,
        gaps[0],
        rate_ok=rate_ci[0] <= -0.5 <= rate_ci[1],
        note=f"rate {fit.slope:.3f} (99% CI [{rate_ci[0]:.3f}, {rate_ci[1]:.3f}]): log|gap| on log n",
        extra={"table": table, "rate": fit.slope, "rate_ci": rate_ci},
    )
    records = [premise]
    constant_gap = gaps[1] - gaps[0]
    tmeans = transform_means(A, gauss, hermite.c)
    records.append(
        _gap_record(
            "q4-constant-gaussian",
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
            "control-aligned-regressor",
            "negative-control",
            "eq. (7) with a regressor along w* (a_1* = w_1*): gap must be detected",
            {**params, "n": n_max, "a_1": "w_1*", "reps": CONTROL_REPS[tier]},
            _l4_gaps(bent, gauss, A_bent, n_max, CONTROL_REPS[tier], rng, [hermite])[0],
            note="reps sized so the 99% CI's expected half-width is under a third of the gap (~ -0.29)",
        )
    )
    mixture = GaussianMixtureInput(np.ones(10) / math.sqrt(10), 0.3)
    A_mix = optimal_scale(expected_gates(model.W, mixture), REG)[:, None] * model.A
    records.append(
        _gap_record(
            "control-mixture-input",
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
            key="control-q4-constant-mixture",
            statement="Q4's constant does not change L4 under mixture x: exact effect must be detected",
            kind="negative-control",
            params={**params, "p": 0.3, "mu": "ones/sqrt(d)", "method": "exact (Appell: E[H4(m+g)] = m^4)"},
            measured=abs(effect),
            bound=0.0,
            rtol=1e-12,
            extra={
                "effect_paper_minus_hermite": float(effect),
                "legend": {"effect_paper_minus_hermite": "L4 with the paper's constant minus with Hermite's"},
            },
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


def _sgd_runs(reg, runs_per_k, steps, rng, curtail: bool = False) -> list[dict]:
    """Online SGD on eq. (6) from random inits, k = 2 and 3 in turn, `runs_per_k` each; with curtail it
    stops once the recovery-rate rule over all 2·runs_per_k runs is decided (checks.makkuva2020.rates)."""
    tr = output_transforms(0.05)
    ks = [2, 3] * runs_per_k
    runs: list[dict] = []

    def run(i: int) -> bool:
        model = paper_model(ks[i])
        pi = expected_gates(model.W, GaussianInput(10))
        A0, _ = init_params(ks[i], 10, rng)
        A_end = sgd_l4(A0, model, GaussianInput(10), tr, reg, rng, lr=SGD_LR, steps=steps).A[-1]
        report = _end_point_report(A_end[None], model.A, pi, reg)[0]
        runs.append({"k": ks[i], **{key: report[key] for key in ("e_reg", "grad", "lam_min")}})
        runs[-1]["recovered"] = report["e_reg"] <= EPS_REC
        return runs[-1]["recovered"]

    run_instances(run, len(ks), curtail=curtail)
    return runs


# Fig. 1's L4 stage (k = 3, `checks/makkuva2020/fig1.py`) at the quick tier over base seeds 0-19: the one run
# that ended above the threshold (found when the seeds were swept; kept in D2's sgd-recovery record).
FIG1_STAGE_FAILURE = {"k": 3, "tier": "quick", "runs": 60, "failed": 1, "e_reg": 0.052, "seed": 4}


@register("D2", name="checks.makkuva.check_d2")
@one_blas_thread
def check_d2(seed: int, tier: str) -> list[Record]:
    """Theorem 1: SOSPs of eq. (7) are global (A* up to P, sign, Γ); SGD on eq. (6) recovers A*."""
    rng = np.random.default_rng(seed)
    inits = 30 if tier == "quick" else 200
    steps = 1200 if tier == "quick" else 2000
    # per k; n = 12 runs tolerate one failure (rates.py). Quick tier, seeds 0-19: 240 of 240 recovered,
    # but Fig. 1's identical L4 stage (k = 3) ended at E_reg 0.052 once in 60 runs (seed 4).
    sgd_runs = 6 if tier == "quick" else 8
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
            key="sosp-global",
            statement="every SOSP GD finds on eq. (7) is a global minimiser P D Γ^-1 A*",
            kind="premise",
            params=params,
            measured=float(spurious),
            bound=0.0,
            ci=clopper_pearson(spurious, max(sosp, 1), LEVEL),
            verdict="holds" if spurious == 0 and sosp > 0 else "violated",
            rule="judged",
            reason=SOSP_REASON,
            note="CI: Clopper-Pearson for the rate of spurious SOSPs among those found",
            extra={
                "per_k": per_k,
                "sosp_found": sosp,
                "interval": interval_basis("Clopper–Pearson", LEVEL, max(sosp, 1), of="SOSPs"),
            },
        )
    ]
    sgd = _sgd_runs(REG, sgd_runs, steps, rng)
    records.append(
        rate_record(
            claim="D2",
            key="sgd-recovery",
            statement=f"SGD on eq. (6) (batch 1024) from random inits recovers A* (E_reg <= {EPS_REC}): "
            "recovery rate >= 1/2",
            kind="premise",
            params={
                **params,
                "sgd_lr": SGD_LR,
                "schedule": "lr/4 after half",
                "sgd_steps": steps,
                "sgd_runs_per_k": sgd_runs,
                "instance": "k in {2, 3}, random init, fresh SGD stream",
                "eps": EPS_REC,
            },
            outcomes=[r["recovered"] for r in sgd],
            planned=2 * sgd_runs,
            unit="runs",
            extra={
                "runs": sgd,
                "max_e_reg": max(r["e_reg"] for r in sgd),
                "fig1_stage": FIG1_STAGE_FAILURE,
            },
            note="grad / lam_min: population eq. (7) at the SGD end point; the same L4 stage as Fig. 1's "
            "(k = 3), where one quick-tier run in 60 ended at E_reg 0.052 (seed 4)",
        )
    )
    milder = L4Regularisers(-0.5, REG.lam, REG.delta)
    mild = _landscape(milder, inits, (2, 3), rng)
    bad, found, info = _landscape(L4Regularisers(-2.0, REG.lam, REG.delta), inits, (2, 3), rng)
    records.append(
        Record(
            claim="D2",
            key="control-wrong-sign-mu",
            statement="wrong-sign mu = -2: the premise's logic must find spurious SOSPs",
            kind="negative-control",
            params={**params, "mu": -2.0},
            measured=float(bad),
            bound=0.0,
            ci=clopper_pearson(bad, max(found, 1), LEVEL),
            verdict="holds" if bad == 0 and found > 0 else "violated",
            rule="judged",
            reason=SOSP_REASON,
            extra={
                "per_k": info,
                "mu_minus_half": {
                    "mu": milder.mu,
                    "spurious_sosp": mild[0],
                    "sosp": mild[1],
                    "per_k": mild[2],
                },
                "interval": interval_basis("Clopper–Pearson", LEVEL, max(found, 1), of="SOSPs"),
            },
            note="mu = -0.5 (also the wrong sign) finds no spurious SOSP: the sparse rows still win for "
            "|mu| < 1 (k = 2: spread rows cost 2 + 2|mu| vs 4|mu|), so the sign alone is not the condition",
        )
    )
    bad, found, info = _landscape(L4Regularisers(REG.mu, 0.0, REG.delta), inits, (2, 3), rng)
    records.append(
        Record(
            claim="D2",
            key="control-no-lambda",
            statement="no lambda-term (lam = 0): eq. (7) unbounded below; GD must end at a degenerate point",
            kind="negative-control",
            params={**params, "lam": 0.0},
            measured=float(bad),
            bound=0.0,
            verdict="holds" if bad == 0 and found > 0 else "violated",
            rule="judged",
            reason=SOSP_REASON,
            extra={"per_k": info},
            note="with lam = 0 no minimiser of the form ±c a* exists; GD from small inits stops at A = 0",
        )
    )
    records.append(_finite_sample_unbounded(rng, 10**5 if tier == "quick" else 10**6))
    return records


def _finite_sample_unbounded(rng, n) -> Record:
    """Where the sample L̂4 is unbounded below: along A = t·v e_1ᵀ, v ⊥ span(A*) (a report on Thm 2's scope).

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
            "far_point": "A = 1.2 t_escape v e_1^T",
            "lhat_far_minus_lhat_glob": sample_l4(A_far, s.x, s.y, tr, REG) - at_glob,
        }
    negative = int(np.sum(a < 0))
    extra |= {
        "negative_directions": negative,
        "interval": interval_basis("Clopper–Pearson", LEVEL, len(V), of="directions"),
    }
    return report_record(
        claim="D2",
        key="sample-bounded-below",
        statement="scope of Thm 2: fraction of directions v ⊥ span(A*) along which the sample L4 (eq. 6) "
        "has a negative quartic coefficient (unbounded below there)",
        category="scope",
        params={**ASSUMPTIONS, "k": model.k, "d": 10, "sigma": model.sigma, "n": n, "directions": len(V)},
        measured=negative / len(V),
        ci=clopper_pearson(negative, len(V), LEVEL),
        extra=extra,
        note="Thm 2's second sentence (SGD on the sample loss converges near a global minimum in polynomial "
        "time) is a global statement about it, with no bounded domain stated in the main text: outside "
        "span(A*) the quartic coefficient -mu*mean(Q4 t2) + lam*mean(Q2 t3)^2 is a zero-mean O(n^-1/2) "
        "fluctuation (eq. (7) has 0 there), negative along some directions of a sample; CI: Clopper-Pearson "
        "for the share of directions v ⊥ span(A*) with a < 0, given this one sample",
    )
