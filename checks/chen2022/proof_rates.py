"""B14: the steps of Theorem 4.2's proof that no verdict judges at reachable d, reported with their category.

Rate steps (E.3, E.4's rate, E.6, E.7, E.8, E.12, E.13) state a power of σ0 with hidden polylog factors: their
quantities are measured along monitored runs at d = 50 over σ0 in the theorem's range
[d^(−1/3), d^(−0.01)], and the fitted exponent is reported beside the stated one. Undecidable steps
(E.5, E.9, E.14, E.16, E.17, E.18) are bounded only by Õ(d^−c) with c ≤ 0.005: their quantities are
measured at σ0 = d^(−1/3) over several d and the fitted d-exponent is reported. Steps of the
router-learning stage (T1, T2] have no step to measure when that stage is empty, which it is at
every reachable d (findings: the d study); they say so. The monitors are `lab.chen2022.proof_monitors`.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from lab.chen2022.data import setting
from lab.chen2022.data_views import uniform_moment
from lab.chen2022.proof_monitors import ProofSchedule, monitored_run, theorem_config, theorem_sigma0
from lab.core.descriptions import load_claims
from lab.core.records import Record, report_record
from lab.core.registry import register
from lab.core.stats import interval_basis, power_law_fit

DESCRIPTIONS = load_claims(Path(__file__).with_suffix(".toml"))  # what its claims say, as data

CLAIM = "B14"
RATE_D = 50
ETA, M, J = 0.02, 8, 16
LEVEL = 0.95  # the level of every fitted exponent's Student-t interval


def sigma0_grid(d: int, points: int = 4) -> np.ndarray:
    """σ0 from d^(−1/3) to d^(−0.01), geometric: Theorem 4.2's range of initialization scales."""
    return np.geomspace(d ** (-1 / 3), d ** (-0.01), points)


def exploration_run(d: int, sigma0: float, seed: int) -> dict:
    """A monitored run to T1 + 1 at dimension d and scale σ0 (Thm 4.2's other conditions)."""
    cfg = dataclasses.replace(theorem_config(d, M=M, J=J, eta=ETA), sigma0=float(sigma0))
    T1 = ProofSchedule(d, M, ETA, float(sigma0)).T1
    return monitored_run(d, seed, cfg=dataclasses.replace(cfg, steps=T1 + 1, record_every=T1 + 1))


def exploration_quantities(run: dict) -> dict[str, float]:
    """Each rate or undecidable quantity of one run, read at or up to T1 (App. E.1)."""
    sched, s, st = run["schedule"], run["series"], run["step_series"]
    T1, sigma0, eta = sched.T1, sched.sigma0, sched.eta
    norms = np.array(st["expert_gradient_norm"])  # (T1 + 1, M)
    lead = np.abs(np.array(st["profession_gradient"]))
    share = np.divide(lead, norms, out=np.full_like(lead, np.nan), where=norms > 0)  # no data: no share
    crossed = norms >= sigma0**1.8
    first = np.where(crossed.any(axis=0), crossed.argmax(axis=0), T1 + 1)  # T⁽ᵐ⁾ (E.7), T1 + 1 if never
    after = [share[t, m] for m in range(norms.shape[1]) for t in range(first[m] + 1, T1 + 1)]
    after = [a for a in after if np.isfinite(a)]
    half = range(max(T1 // 2, 1), T1)
    data = setting(1)
    coefficient = uniform_moment(data.alpha.low, data.alpha.high, 3) / (2 * data.K * run["config"].M ** 2)
    pre = np.array(st["profession_preactivation"])[T1 // 2]
    e5 = np.array(st["profession_gradient"])[T1 // 2] / (3 * pre**2) / -coefficient
    return {
        "h_inf_T1": s["h_inf"][T1],
        "routing_deviation_T1": s["routing_deviation"][T1],
        "alignment_T1": s["profession_alignment"][T1],
        "other_projection_T1": s["other_projection_over_sigma0"][T1] * sigma0,
        "early_experts": float(np.mean(first < 0.01 * T1)),
        "median_share_after_T_m": float(np.median(after)) if after else math.nan,
        "growth_ratio": min(s["profession_alignment"][t] / (eta * t) for t in half) if half else math.nan,
        "e5_relative_error": float(np.median(np.abs(e5 - 1))),
        "center_only_gap_T1": s["center_only_gap"][T1],
        "profession_spread_T1": s["profession_spread"][T1],
        "min_center_gap_T1": s["min_center_gap"][T1],
    }


# (lemma, quantity, the rate it is held to, the stated exponent): fitted along σ0 at d = 50
RATES = (
    ("E.3", "h_inf_T1", "‖h(x_i)‖∞ at T1 = Õ(σ0^1.5)", 1.5),
    ("E.4", "routing_deviation_T1", "max_{i,m} |P(m_{i,t} = m) − 1/M| at T1 = Õ(σ0^1.5)", 1.5),
    ("E.6", "alignment_T1", "⟨w_{m,j*}, v_{k*}⟩ at T1 = O(σ0^0.5) (the least over experts)", 0.5),
    ("E.6", "other_projection_T1", "every other projection at T1 = Õ(σ0)", 1.0),
)
# the same along d at σ0 = d^(−1/3); a quantity of the stage [T1, T2] is read at T1 (see OUT_OF_RANGE)
UNDECIDABLE = (
    (
        "E.5",
        "e5_relative_error",
        "|⟨∇_{w_{m,j*}} L, v_{k*}⟩/σ′ ÷ (−E[α³]/(2KM²)) − 1| at T1/2 = Õ(d^−0.005)",
        -0.005,
    ),
    (
        "E.9",
        "center_only_gap_T1",
        "‖h(x_i) − h(x̄_i)‖∞ = O(d^−0.001) (read at T1: the stage is empty)",
        -0.001,
    ),
    ("E.14", "center_only_gap_T1", "δ_Θ = max_i ‖h(x̄_i) − h(x_i)‖∞ = Õ(d^−0.005) (read at T1)", -0.005),
    ("E.16", "profession_spread_T1", "Δ_Θ within professions = Õ(d^−0.001) (read at T1)", -0.001),
)
# Steps stated for T1 ≤ t ≤ T2 whose quantity is read at T1: with T2 < T1 the range is empty, so the value
# is a trend with no reading against the lemma (E.9 and E.14 read the same quantity)
OUT_OF_RANGE = ("E.9", "E.14", "E.16")
EMPTY_STAGE = (
    ("E.12", "⟨w_{m,j*}, v_{k*}⟩ ≥ (1 − O(σ0^0.1))ηt and other projections Õ(σ0) on (T1, T2]", "rate"),
    ("E.13", "|f_m(x_i) − f_m(x̂_i)| = Õ(σ0³) on (T1, T2]", "rate"),
    ("E.17", "⟨∇_{θ_m} L, c_k⟩ ≥ Ω(η³t³/(KM³)) + Õ(d^−0.005) for m ∉ M_k on (T1, T2]", "undecidable"),
)


def _fit(x: np.ndarray, values: np.ndarray) -> tuple[float | None, tuple[float, float] | None, int]:
    """The exponent of values ≈ c·x^a over the runs whose value is positive and finite (None if < 3, or
    if every such value is the same: a slope fitted to a constant has a zero-width interval)."""
    keep = np.isfinite(values) & (values > 0)
    if keep.sum() < 3 or np.unique(x[keep]).size < 2 or _constant(values[keep]) is not None:
        return None, None, int(keep.sum())
    slope, ci, _ = power_law_fit(x[keep], values[keep], level=LEVEL)
    return slope, ci, int(keep.sum())


def _constant(values: np.ndarray) -> float | None:
    """The common value when every value is the same (to round-off), else None."""
    finite = values[np.isfinite(values)]
    if finite.size and np.allclose(finite, finite[0], rtol=1e-12, atol=0.0):
        return float(finite[0])
    return None


def _reading(slope: float | None, ci: tuple[float, float] | None, stated: float, axis: str) -> str:
    """How a fitted exponent compares with an upper bound O(x^stated): it must fall at least as fast.

    Along σ0 (→ 0) that asks slope ≥ stated; along d (→ ∞), slope ≤ stated. An interval holding both the
    stated exponent and 0 cannot tell the stated decay from none: uninformative."""
    if slope is None or ci is None:
        return "too few positive values to fit an exponent"
    if ci[0] <= stated <= ci[1] and ci[0] <= 0.0 <= ci[1]:
        return (
            "uninformative: the interval contains both the stated exponent and 0 (no decay), so it cannot "
            "tell them apart"
        )
    faster, slower = (ci[0] > stated, ci[1] < stated) if axis == "σ0" else (ci[1] < stated, ci[0] > stated)
    if faster:
        return f"falls faster than the stated rate along {axis} (the interval excludes it): consistent"
    if slower:
        return (
            f"falls more slowly than the stated rate along {axis} over this range (the interval excludes it)"
        )
    return "consistent with the stated rate (the interval contains it)"


def _key(lemma: str, quantity: str) -> str:
    """A record key from the lemma and the quantity's name: ("E.3", "h_inf_T1") -> "e3-h-inf-t1"."""
    prefix, name = lemma.replace(".", "").lower(), quantity.replace("_", "-").lower()
    return name if name.startswith(f"{prefix}-") else f"{prefix}-{name}"


def _constant_reading(value: float, runs: int, params: dict) -> str:
    """The reading of a quantity that takes one value in every run: it does not fall, and no exponent is
    fitted; for E.4's routing deviation, 1 − 1/M means some sample's expert is chosen with probability 1."""
    said = f"does not fall: {value:.4g} in all {runs} runs"
    if math.isclose(value, 1 - 1 / params["M"], rel_tol=1e-12):
        said += " (= 1 − 1/M: for some sample one expert is chosen with probability 1, so no near-uniform "
        said += f"router at T1 at d = {params['d']})"
    return said + "; no exponent fitted"


def _reports(xs, rows, table, axis: str, category: str, params: dict) -> list[Record]:
    """One report per quantity of `table`: its fitted exponent along `axis`, the stated one as bound, the
    fit's interval basis in extra; a quantity with one value in every run is reported as that value,
    unfitted; a step of OUT_OF_RANGE shows its fit with no reading."""
    records = []
    for lemma, key, statement, stated in table:
        values = np.array([r[key] for r in rows], dtype=float)
        slope, ci, used = _fit(xs, values)
        constant = _constant(values)
        extra = {"x": xs.tolist(), "values": [v if np.isfinite(v) else None for v in values]}
        if ci is not None:
            extra["interval"] = interval_basis("t (fitted slope)", LEVEL, used, of="runs")
        if constant is not None:
            reading = _constant_reading(constant, values.size, params)
            extra["constant_value"] = constant
        elif lemma in OUT_OF_RANGE:
            same = [other for other, k, _, _ in table if k == key and other != lemma]
            reading = "read at T1, outside the lemma's range T1 ≤ t ≤ T2 (empty: T2 < T1): no reading"
            reading += f"; the same measurement as Lemma {same[0]}" if same else ""
        else:
            reading = _reading(slope, ci, stated, axis)
        records.append(
            report_record(
                claim=CLAIM,
                key=_key(lemma, key),
                statement=f"Lemma {lemma}: {statement}; exponent along {axis}",
                category=category,
                params={**params, "runs_fitted": used},
                measured=slope,
                bound=stated,
                ci=ci,
                note=f"{category}: {reading}",
                extra=extra,
            )
        )
    return records


def _least_by(xs, values) -> dict[str, float]:
    """The least finite value at each x of the grid."""
    out: dict[str, float] = {}
    for x, v in zip(xs, values, strict=True):
        if np.isfinite(v):
            out[f"{x:.4g}"] = min(out.get(f"{x:.4g}", math.inf), float(v))
    return out


@register(CLAIM, name="checks.proof_rates.verify_exploration_rates", training_kernels=True)
def verify_exploration_rates(seed: int, tier: str) -> list[Record]:
    """E.3, E.4, E.6, E.7, E.8 over Thm 4.2's σ0 range at d = 50; E.12, E.13: their stage is empty."""
    seeds = 3 if tier == "quick" else 10
    grid = sigma0_grid(RATE_D)
    pairs = [(s0, seed + r) for s0 in grid for r in range(seeds)]
    rows = [exploration_quantities(exploration_run(RATE_D, s0, sd)) for s0, sd in pairs]
    xs = np.array([s0 for s0, _ in pairs])
    params = {"d": RATE_D, "sigma0": grid.tolist(), "seeds": seeds, "M": M, "J": J, "eta": ETA}
    params |= {"n": 80 * RATE_D, "level": LEVEL}
    early = np.array([r["early_experts"] for r in rows])
    growth = np.array([r["growth_ratio"] for r in rows])
    first_steps = [0.01 * ProofSchedule(RATE_D, M, ETA, float(s0)).T1 for s0 in grid]  # 0.01·T1 per σ0
    lo, hi = min(first_steps), max(first_steps)
    at_zero = "; below 1 step, so before 0.01·T1 means at t = 0" if hi < 1 else ""
    e7 = report_record(
        claim=CLAIM,
        key="e7",
        statement="Lemma E.7: T⁽ᵐ⁾ (first ‖∇_{W_m} L‖_F ≥ σ0^1.8) < 0.01·T1 for every expert; their share",
        category="rate",
        params=params,
        measured=float(early.mean()),
        bound=1.0,
        note="rate: T⁽ᵐ⁾ = Õ(η⁻¹σ0^0.8) hides its constant; measured is the share of experts whose gradient "
        "reaches σ0^1.8 before 0.01·T1 (the lemma: all), the least per σ0 in extra; 0.01·T1 is "
        f"{lo:.2g}–{hi:.2g} steps on this grid{at_zero}",
        extra={
            "one_percent_of_T1_in_steps": [lo, hi],
            "share_by_sigma0": _least_by(xs, early),
            "projection_share_after_T_m": _least_by(xs, [r["median_share_after_T_m"] for r in rows]),
        },
    )
    e8 = report_record(
        claim=CLAIM,
        key="e8",
        statement="Lemma E.8: ⟨w_{m,j*}, v_{k*}⟩ ≥ (1 − σ0^0.1)ηt for T1/2 ≤ t < T1; the least ratio to ηt",
        category="rate",
        params=params,
        measured=float(np.nanmin(growth)),
        bound=1 - grid.max() ** 0.1,
        note="rate: the least ⟨w_{m,j*}, v_{k*}⟩/(ηt) over runs, experts and t, beside the weakest floor "
        "1 − σ0^0.1 of the grid; the proof reaches only (1 − O(σ0^0.1))",
        extra={"least_ratio_by_sigma0": _least_by(xs, growth)},
    )
    return [*_reports(xs, rows, RATES, "σ0", "rate", params), e7, e8, *_empty_stage(grid, params, "rate")]


@register(CLAIM, name="checks.proof_rates.verify_undecidable_steps", training_kernels=True)
def verify_undecidable_steps(seed: int, tier: str) -> list[Record]:
    """E.5, E.9, E.14, E.16, E.18: values and d-exponents at σ0 = d^(−1/3); E.17: its stage is empty."""
    ds, seeds = ((50, 100), 3) if tier == "quick" else ((50, 100, 200), 5)
    pairs = [(d, seed + r) for d in ds for r in range(seeds)]
    rows = [exploration_quantities(exploration_run(d, theorem_sigma0(d), sd)) for d, sd in pairs]
    xs = np.array([d for d, _ in pairs], dtype=float)
    params = {"d": list(ds), "seeds": seeds, "M": M, "J": J, "eta": ETA, "n_per_d": 80, "level": LEVEL}
    gaps = np.array([r["min_center_gap_T1"] for r in rows])
    e18 = report_record(
        claim=CLAIM,
        key="e18",
        statement="Lemma E.18: at T2 every m ∉ M_k trails the best ⟨θ_m′, c_k⟩ by Ω(K⁻¹M⁻⁹) (read at T1)",
        category="undecidable",
        params=params,
        measured=float(gaps.min()),
        bound=1 / (setting(1).K * M**9),
        note=f"undecidable: the least centre gap over runs beside K⁻¹M⁻⁹ (hidden constant); in "
        f"{int((gaps > 0).sum())} of {gaps.size} runs every m ∉ M_k trails at T1; T2 = 0 here, so the "
        "lemma's time does not occur",
        extra={"gaps": gaps.tolist()},
    )
    empty = _empty_stage([theorem_sigma0(d) for d in ds], params, "undecidable")
    return [*_reports(xs, rows, UNDECIDABLE, "d", "undecidable", params), e18, *empty]


def _empty_stage(sigma0s, params: dict, category: str) -> list[Record]:
    """The steps of (T1, T2] in `category`: no run has a step there (T2 ≤ T1 at every σ0 tried)."""
    T1 = min(ProofSchedule(RATE_D, M, ETA, float(s)).T1 for s in sigma0s)
    T2 = ProofSchedule(RATE_D, M, ETA, 1.0).T2
    return [
        report_record(
            claim=CLAIM,
            key=_key(lemma, "empty_stage"),
            statement=f"Lemma {lemma}: {statement}",
            category=category,
            params=params,
            measured=None,
            note=f"{category}: the stage (T1, T2] is empty (T2 = ⌊1/(ηM²)⌋ = {T2} < T1, T1 ≥ {T1}), so no "
            "step can be measured",
        )
        for lemma, statement, kind in EMPTY_STAGE
        if kind == category
    ]
