"""Checks C1–C3: noisy top-k gating of Shazeer et al. (2017, papers 001/002) and its relation to Lemma C.1.

C1  G = Softmax(KeepTopK(H, k)) has exactly k non-zeros summing to 1 and keeps the top-k order,
    over Hypothesis-generated logits with ties and ±1e6 gaps (NumPy gate and Numba kernel).
C2  The smooth load estimator P(x, i) equals the probability, over ξ_i alone, that expert i is
    in the top k (Monte Carlo resampling ξ_i only, Clopper–Pearson CIs). Also: noisy top-1 with
    constant noise scale s is Lemma C.1's Gaussian family, P(argmax = m) = Φ(Δh/(s√2)) for M = 2.
C3  The analytic gradients of L_importance and L_load w.r.t. W_g and W_noise equal complex-step
    derivatives; at top-1 L_importance has zero gradient with Shazeer's G and a non-zero one on the
    softmax gate π of the kept expert (Switch, Chen et al.).

Each registered check returns premise records and negative controls (mutated gate, the plain
k-th largest in place of kth_excluding, the threshold treated as a constant in the gradient,
the Gaussian closed form without its √2). Statistics: per-pair Clopper–Pearson intervals at
level 1 − 0.01/pairs (Bonferroni, family-wise 99 %).
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import numba
import numpy as np
from hypothesis import HealthCheck, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample
from hypothesis.extra.numpy import arrays

from checks.search import without_local_constants
from lab.core.descriptions import load_claims, load_findings
from lab.core.records import Record, lower_bound_record, upper_bound_record
from lab.core.registry import register
from lab.core.stats import clopper_pearson
from lab.kernels import gating as kernels
from lab.shazeer2017 import gating

DESCRIPTIONS = load_claims(Path(__file__).with_suffix(".toml"))  # what its claims say, as data
FINDINGS = load_findings(Path(__file__).with_suffix(".findings.toml"))  # where the paper and the lab part

EPS = float(np.finfo(np.float64).eps)
FAMILY_LEVEL = 0.99
# Kept gates at most this far below the row maximum are representable: e^−700 ≈ 1e-304 is normal.
REPRESENTABLE_GAP = 700.0
# Complex step has no subtractive cancellation: both sides carry only accumulated rounding of
# O(n·M·d) terms, each bounded by the Cauchy–Schwarz scale ‖∇L‖‖V‖; 1000 ulps of that scale.
GRADIENT_TOL = 1e3 * EPS
COMPLEX_STEP = 1e-30


# ---------------------------------------------------------------------------- C1: the gate


@st.composite
def gate_logits(draw, max_rows: int = 4, max_experts: int = 12) -> tuple[np.ndarray, int]:
    """(H (n, M), k): logits mixing small integers (ties), moderate floats and ±1e6 gaps."""
    M = draw(st.integers(1, max_experts))
    n = draw(st.integers(1, max_rows))
    k = draw(st.integers(1, M))
    element = st.one_of(
        st.integers(-2, 2).map(float),
        st.floats(-30.0, 30.0),
        st.sampled_from([-1e6, 1e6, 1e6 + 1.0]),
        st.floats(-1e6, 1e6),
    )
    return draw(arrays(np.float64, (n, M), elements=element)), k


# Pinned examples, always run first: all ties, a tie across the k boundary, ±1e6 gaps.
PINNED_LOGITS = [
    (np.zeros((2, 5)), 1),
    (np.array([[3.0, 1.0, 1.0, 1.0, 0.0]]), 2),
    (np.array([[1e6, -1e6, 0.0, 1e6 - 1.0]]), 3),
    (np.array([[-1e6, 1e6], [1e6, -1e6]]), 2),
]


def gate_violations(H: np.ndarray, k: int, G: np.ndarray, support: np.ndarray) -> list[str]:
    """C1's properties of a gate G with support `support` at logits H; the empty list means all hold."""
    problems = []
    if not np.all(np.isfinite(G)):
        return ["G is not finite"]
    if np.any(support.sum(axis=1) != k):
        problems.append("support does not have exactly k entries")
    if np.any(G < 0) or np.any(G[~support] != 0):
        problems.append("G is negative or non-zero off the support")
    if np.any(np.abs(G.sum(axis=1) - 1.0) > 4 * k * EPS):
        problems.append("G does not sum to 1 (tolerance 4k ulps)")
    for h, g, s in zip(H, G, support, strict=True):
        kept, dropped = np.flatnonzero(s), np.flatnonzero(~s)
        if kept.size and dropped.size:
            low = h[kept].min()
            if h[dropped].max() > low:
                problems.append("a dropped expert has larger H than a kept one")
            elif np.any(dropped[h[dropped] == low] < kept[h[kept] == low].max()):
                problems.append("tie rule broken: a lower index was dropped at the boundary value")
        hk, gk = h[kept], g[kept]
        by_h = np.argsort(hk, kind="stable")
        if np.any(np.diff(gk[by_h]) < 0) or np.any(
            (hk[:, None] == hk[None, :]) & (gk[:, None] != gk[None, :])
        ):
            problems.append("G does not keep the order of H on the kept experts")
        if np.any(gk[hk - h.max() >= -REPRESENTABLE_GAP] <= 0):
            problems.append("a kept gate with a representable value is zero")
    return problems


def threshold_mask_gate(H: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Mutated gate (negative control): keep every H ≥ the k-th largest value (more than k on ties)."""
    kth = -np.sort(-H, axis=1)[:, k - 1 : k]
    support = H >= kth
    e = np.where(support, np.exp(H - H.max(axis=1, keepdims=True)), 0.0)
    return e / e.sum(axis=1, keepdims=True), support


def unshifted_softmax_gate(H: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Mutated gate (negative control): softmax without subtracting the maximum (overflows at 1e6)."""
    support = gating.top_k_mask(H, k)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.where(support, np.exp(H), 0.0)
        return e / e.sum(axis=1, keepdims=True), support


def numpy_gate(H: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The lab's gate: `lab.shazeer2017.gating.top_k_gates` with its support `top_k_mask`."""
    return gating.top_k_gates(H, k), gating.top_k_mask(H, k)


def kernel_gate(H: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The Numba gate with ξ = 0 (so H = clean exactly); support from the NumPy tie rule.

    One thread: for a handful of rows the parallel launch costs more than the work, and on a
    loaded machine the threads' barrier dominates the check's time.
    """
    zeros = np.zeros_like(H)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        G, _ = kernels.noisy_top_k_gate_and_load(H, zeros, zeros, k)
    finally:
        numba.set_num_threads(threads)
    return G, gating.top_k_mask(H, k)


def first_counterexample(gate, seed: int, max_examples: int):
    """(counterexample or None, examples tried): pinned logits first, then Hypothesis's shrunk search."""
    tried = 0

    def violates(example) -> bool:
        nonlocal tried
        tried += 1
        H, k = example
        return bool(gate_violations(H, k, *gate(H, k)))

    for example in PINNED_LOGITS:
        if violates(example):
            return example, tried
    config = settings(
        max_examples=max_examples,
        database=None,
        derandomize=False,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    try:
        with without_local_constants():  # the draws depend on the seed only (checks.search)
            return find(gate_logits(), violates, settings=config, random=random.Random(seed)), tried
    except NoSuchExample:
        return None, tried


def check_gate(gate, name: str, kind: str, key: str, seed: int, max_examples: int) -> Record:
    """C1 record for one gate implementation: counterexamples found (0 means the claim held)."""
    found, tried = first_counterexample(gate, seed, max_examples)
    extra = {"examples_tried": tried}
    if found is not None:
        H, k = found
        extra |= {"counterexample_H": H, "counterexample_k": k, "reasons": gate_violations(H, k, *gate(H, k))}
    return upper_bound_record(
        claim="C1",
        key=key,
        statement=f"{name}: G = Softmax(KeepTopK(H, k)) keeps exactly k, sums to 1, keeps the order",
        kind=kind,
        params={
            "gate": name,
            "max_examples": max_examples,
            "pinned": len(PINNED_LOGITS),
            "sum_tol": "4k ulps",
        },
        measured=0 if found is None else 1,
        bound=0,
        note="measured = counterexamples found (Hypothesis, ties and ±1e6 gaps; shrunk one in extra)",
        extra=extra,
    )


@register("C1", name="checks.noisy_topk.verify_gate")
def verify_gate(seed: int, tier: str) -> list[Record]:
    """C1 on the NumPy gate and the Numba kernel; mutated gates (threshold mask, unshifted softmax)."""
    budget = 150 if tier == "quick" else 2000
    return [
        check_gate(numpy_gate, "numpy top_k_gates", "premise", "numpy-gate", seed, budget),
        check_gate(kernel_gate, "numba kernel", "premise", "numba-kernel", seed + 1, budget),
        check_gate(
            threshold_mask_gate,
            "mutant: keep H >= k-th largest",
            "negative-control",
            "control-threshold-mask",
            seed + 2,
            budget,
        ),
        check_gate(
            unshifted_softmax_gate,
            "mutant: softmax without max shift",
            "negative-control",
            "control-unshifted-softmax",
            seed + 3,
            budget,
        ),
    ]


# ---------------------------------------------------------------------------- C2: the load estimator


def kth_largest(H: np.ndarray, k: int) -> np.ndarray:
    """Mutated threshold (negative control): the plain k-th largest of H, not excluding expert i."""
    return np.broadcast_to(-np.sort(-H, axis=1)[:, k - 1 : k], H.shape)


def interval_record(
    claim: str,
    key: str,
    statement: str,
    kind: str,
    predicted: np.ndarray,
    counts: np.ndarray,
    draws: int,
    params: dict,
) -> Record:
    """Every predicted probability must lie in its Monte-Carlo Clopper–Pearson interval (Bonferroni)."""
    pairs = predicted.size
    level = 1.0 - (1.0 - FAMILY_LEVEL) / pairs
    bounds = np.array([clopper_pearson(int(c), draws, level) for c in counts.ravel()]).reshape(
        *counts.shape, 2
    )
    lo, hi = bounds[..., 0], bounds[..., 1]
    freq = counts / draws
    gap = np.maximum(np.maximum(lo - predicted, predicted - hi), 0.0)
    outside = gap > 0
    worst = np.unravel_index(
        np.argmax(gap) if outside.any() else np.argmax(np.abs(predicted - freq) / (hi - lo)), gap.shape
    )
    return Record(
        claim=claim,
        key=key,
        statement=statement,
        kind=kind,
        params={**params, "draws": draws, "pairs": pairs, "pair_level": level, "family_level": FAMILY_LEVEL},
        measured=float(freq[worst]),
        bound=float(predicted[worst]),
        ci=(float(lo[worst]), float(hi[worst])),
        verdict="violated" if outside.any() else "holds",
        rule="equal",
        note="measured = MC frequency, bound = predicted probability, at the worst pair; CI Clopper–Pearson",
        extra={
            "pairs_outside_ci": int(outside.sum()),
            "max_gap_outside_ci": float(gap.max()),
            "max_abs_difference": float(np.abs(predicted - freq).max()),
            "max_ci_half_width": float(((hi - lo) / 2).max()),
            "worst_pair": [int(v) for v in worst],
        },
    )


def load_problem(rng: np.random.Generator, n: int, d: int, M: int):
    """A random noisy top-k router: clean logits c, noise scale s, realized ξ and H = c + ξ s."""
    x = rng.normal(size=(n, d))
    W_g = rng.normal(size=(d, M)) / math.sqrt(d)
    W_noise = rng.normal(size=(d, M)) / math.sqrt(d)
    xi = rng.normal(size=(n, M))
    clean, scale = x @ W_g, gating.softplus(x @ W_noise)
    return clean, scale, xi, clean + xi * scale


@register("C2", name="checks.noisy_topk.verify_load_estimator")
def verify_load_estimator(seed: int, tier: str) -> list[Record]:
    """C2: P(x, i) vs resampling ξ_i only; negative control: the plain k-th largest as threshold."""
    rng = np.random.default_rng(seed)
    n, d, M, k = (4, 6, 8, 2) if tier == "quick" else (16, 6, 16, 3)
    draws = 100_000 if tier == "quick" else 1_000_000
    clean, scale, xi, H = load_problem(rng, n, d, M)
    counts = gating.top_k_membership_counts(clean, scale, xi, k, draws, int(rng.integers(2**62)))
    params = {"n": n, "d": d, "M": M, "k": k}
    statement = "P(x,i) = Φ((c_i − kth_excluding(H,k,i))/s_i) = P(i in top k) over ξ_i alone"
    mutant = gating.normal_cdf((clean - kth_largest(H, k)) / scale)
    return [
        interval_record(
            "C2",
            "load-estimator",
            statement,
            "premise",
            gating.smooth_load(clean, scale, H, k),
            counts,
            draws,
            params,
        ),
        interval_record(
            "C2",
            "control-plain-kth-largest",
            "mutant: threshold = plain k-th largest of H (not excluding i)",
            "negative-control",
            mutant,
            counts,
            draws,
            params,
        ),
    ]


def lemma_c1_gaps(tier: str) -> np.ndarray:
    """Logit gaps (h_1 − h_2)/s of the M = 2 cross-check."""
    gaps = [0.0, 0.25, -0.5, 1.0, 2.0, -3.0]
    return np.array(gaps if tier == "quick" else [*gaps, 0.1, -0.05, 4.0, -1.5])


@register("C2", name="checks.noisy_topk.verify_top1_is_lemma_c1_gaussian")
def verify_top1_is_lemma_c1_gaussian(seed: int, tier: str) -> list[Record]:
    """Noisy top-1 with constant scale s is Lemma C.1's Gaussian family: p_1 = Φ((h_1 − h_2)/(s√2)), M = 2."""
    rng = np.random.default_rng(seed)
    s = 0.8
    gaps = lemma_c1_gaps(tier)
    clean = np.stack([gaps * s, np.zeros_like(gaps)], axis=1)
    scale = np.full_like(clean, s)
    draws = 100_000 if tier == "quick" else 1_000_000
    counts = gating.top_k_membership_counts(
        clean, scale, np.zeros_like(clean), 1, draws, int(rng.integers(2**62)), resample_all=True
    )
    diff = clean - clean[:, ::-1]
    params = {"M": 2, "k": 1, "s": s, "gaps": gaps}
    return [
        interval_record(
            "C2",
            "top1-lemma-c1",
            "noisy top-1, constant scale s: P(argmax = m) = Φ((h_m − h_other)/(s√2)) (Lemma C.1 Gaussian)",
            "premise",
            gating.normal_cdf(diff / (s * math.sqrt(2.0))),
            counts,
            draws,
            params,
        ),
        interval_record(
            "C2",
            "control-top1-without-sqrt2",
            "mutant: closed form without √2, Φ((h_m − h_other)/s)",
            "negative-control",
            gating.normal_cdf(diff / s),
            counts,
            draws,
            params,
        ),
    ]


# ---------------------------------------------------------------------------- C3: gradients


def load_loss_without_threshold_path(x, W_g, W_noise, xi, k, w=1.0) -> gating.RouterLoss:
    """Mutated gradient (negative control): kth_excluding treated as a constant (no ∂L/∂H term)."""
    clean, raw_noise = x @ W_g, x @ W_noise
    H = gating.noisy_logits(clean, raw_noise, xi)
    loss, d_clean, d_scale, d_H = gating.load_loss(clean, gating.softplus(raw_noise), H, k, w)
    return gating.RouterLoss(loss, *gating.router_gradients(x, raw_noise, xi, d_clean, d_scale, 0 * d_H))


def gradient_errors(loss_fn, x, W_g, W_noise, xi, k, directions: int, rng) -> dict[str, float]:
    """Worst |⟨∇L, V⟩ − Im L(W + ihV)/h| / (‖∇L‖‖V‖) over random V, for W_g and W_noise; also central FD."""
    result = loss_fn(x, W_g, W_noise, xi, k)
    worst_cs, worst_fd = 0.0, 0.0
    for which, grad in (("W_g", result.grad_W_g), ("W_noise", result.grad_W_noise)):
        for _ in range(directions):
            V = rng.normal(size=W_g.shape)

            def at(t, V=V, which=which):
                if which == "W_g":
                    return loss_fn(x, W_g + t * V, W_noise, xi, k).loss
                return loss_fn(x, W_g, W_noise + t * V, xi, k).loss

            scale = max(np.linalg.norm(grad) * np.linalg.norm(V), np.finfo(float).tiny)
            analytic = float(np.sum(grad * V))
            complex_step = float(np.imag(at(1j * COMPLEX_STEP))) / COMPLEX_STEP
            h = EPS ** (1 / 3)
            central = (at(h) - at(-h)) / (2 * h)
            worst_cs = max(worst_cs, abs(analytic - complex_step) / scale)
            worst_fd = max(worst_fd, abs(analytic - central) / scale)
    return {"complex_step": worst_cs, "central_difference": worst_fd}


def _problem_params(x: np.ndarray, W_g: np.ndarray, k: int, **more) -> dict:
    """A C3 router problem's sizes (n inputs, d features, M experts, k kept) and the check's own values."""
    return {"n": x.shape[0], "d": x.shape[1], "M": W_g.shape[1], "k": k, **more}


def check_gradient(name: str, loss_fn, kind: str, key: str, problem, directions: int, rng) -> Record:
    """C3 record: relative complex-step error of the analytic gradient ≤ GRADIENT_TOL."""
    x, W_g, W_noise, xi, k = problem
    errors = gradient_errors(loss_fn, x, W_g, W_noise, xi, k, directions, rng)
    return upper_bound_record(
        claim="C3",
        key=key,
        statement=f"{name}: ∇ w.r.t. W_g, W_noise = complex-step derivative",
        kind=kind,
        params=_problem_params(
            x, W_g, k, directions=2 * directions, h=COMPLEX_STEP, tolerance="1000 ulps of ‖∇L‖‖V‖"
        ),
        measured=errors["complex_step"],
        bound=GRADIENT_TOL,
        note="measured = max |⟨∇L,V⟩ − Im L(W+ihV)/h| / (‖∇L‖‖V‖); extra: central difference, h = ε^(1/3)",
        extra={"central_difference_error": errors["central_difference"]},
    )


def directional_derivatives(loss_fn, problem, k: int, directions: int, rng) -> np.ndarray:
    """Complex-step ∂L/∂W_g along `directions` random V of unit Frobenius norm (no analytic gradient)."""
    x, W_g, W_noise, xi, _ = problem
    found = []
    for _ in range(directions):
        V = rng.normal(size=W_g.shape)
        V /= np.linalg.norm(V)
        found.append(np.imag(loss_fn(x, W_g + 1j * COMPLEX_STEP * V, W_noise, xi, k).loss) / COMPLEX_STEP)
    return np.array(found)


def top1_gradient_record(name: str, loss_fn, kind: str, key: str, problem, directions: int, rng) -> Record:
    """C3 at k = 1: the largest |∂L/∂W_g · V| over random unit V must exceed a round-off allowance.

    Complex step has no cancellation, so a zero gradient gives exactly 0; the allowance, 1000 ulps of
    ‖x‖_F (the size of ∂H/∂W_g along a unit V; w = 1), only guards rounding."""
    x, W_g, W_noise, xi, _ = problem
    derivatives = np.abs(directional_derivatives(loss_fn, problem, 1, directions, rng))
    result = loss_fn(x, W_g, W_noise, xi, 1)
    return lower_bound_record(
        claim="C3",
        key=key,
        statement=f"{name}, top-1 (k = 1): ∇ w.r.t. W_g is non-zero (complex step along random directions)",
        kind=kind,
        params=_problem_params(
            x,
            W_g,
            1,
            w=1.0,
            directions=directions,
            h=COMPLEX_STEP,
            allowance="1000 ulps of ‖x‖_F (unit ‖V‖_F)",
        ),
        measured=float(derivatives.max()),
        bound=GRADIENT_TOL * float(np.linalg.norm(x)),
        strict=True,
        note="measured = max over V of |Im L(W_g + ihV)/h|, ‖V‖_F = 1; extra: the analytic ‖∇_{W_g} L‖_F",
        extra={"loss": float(result.loss), "analytic_grad_W_g_norm": float(np.linalg.norm(result.grad_W_g))},
    )


@register("C3", name="checks.noisy_topk.verify_balancing_gradients")
def verify_balancing_gradients(seed: int, tier: str) -> list[Record]:
    """C3 for L_importance and L_load; negative control: the load gradient without the threshold path.

    At k = 1 also: L_importance on the softmax gate π of the kept expert (Switch; Chen et al. Sec. 3.2)
    has a non-zero gradient, and Shazeer's G (one-hot at k = 1), the control, has none."""
    rng = np.random.default_rng(seed)
    n, d, M, k = (64, 5, 8, 2) if tier == "quick" else (512, 7, 16, 3)
    directions = 4 if tier == "quick" else 16
    problem = (
        rng.normal(size=(n, d)),
        rng.normal(size=(d, M)),
        0.5 * rng.normal(size=(d, M)),
        rng.normal(size=(n, M)),
        k,
    )
    return [
        check_gradient(
            "L_importance",
            gating.importance_loss_and_gradients,
            "premise",
            "importance-loss",
            problem,
            directions,
            rng,
        ),
        check_gradient(
            "L_load", gating.load_loss_and_gradients, "premise", "load-loss", problem, directions, rng
        ),
        check_gradient(
            "mutant: L_load with kth_excluding held constant",
            load_loss_without_threshold_path,
            "negative-control",
            "control-load-without-threshold-path",
            problem,
            directions,
            rng,
        ),
        top1_gradient_record(
            "L_importance on the softmax gate π of the kept expert (Switch; Chen et al. Sec. 3.2)",
            gating.softmax_gate_importance_loss_and_gradients,
            "premise",
            "importance-top1-softmax-gate",
            problem,
            directions,
            rng,
        ),
        top1_gradient_record(
            "control: L_importance on Shazeer's G = Softmax(KeepTopK(H, 1)), one-hot",
            gating.importance_loss_and_gradients,
            "negative-control",
            "control-importance-top1-shazeer-gate",
            problem,
            directions,
            rng,
        ),
    ]
