"""Public Hypothesis strategies for Theorem 4.1 (B1, B2): data configs, per-patch f, non-additive F.

The per-patch functions come from very different families: two-layer CNN filter banks with every
activation, biases and output weights of either sign; polynomials in the projections ⟨v_k, z⟩,
⟨c_k, z⟩; and discontinuous lookups (thresholds, sign, tables with ties), summed over all
projections or read only on aligned patches.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lab.chen2022.data import DataConfig, Signals, UniformRange
from lab.chen2022.model import MoEParams
from lab.chen2022.patch_functions import ALIGNED_COSINE, ProjectionLookup, random_cnn, random_polynomial
from lab.kernels.activations import ACTIVATIONS

ACTIVATION_NAMES = tuple(ACTIVATIONS)
SMOOTH_ACTIVATIONS = ("cubic", "linear", "celu", "gelu", "tanh")  # never exactly 0 on a whole region
# σ with no saturation: tanh, GELU and CELU at large |⟨w, z⟩| make f exactly odd (±a) or exactly 0
# on the signal patches, and then Π_p f(x⁽ᵖ⁾) satisfies the orbit identity as well.
POLYNOMIAL_ACTIVATIONS = ("cubic", "linear")
seeds = st.integers(0, 2**32 - 1)
_table_values = st.one_of(st.integers(-3, 3).map(float), st.floats(-3.0, 3.0, allow_subnormal=False))


@st.composite
def uniform_ranges(draw, low: float = 0.2, high: float = 3.0) -> UniformRange:
    """U(a, b) with low ≤ a < b ≤ high and b − a ≥ 0.05."""
    a = draw(st.floats(low, high - 0.05))
    b = draw(st.floats(a + 0.05, high))
    return UniformRange(a, b)


@st.composite
def data_configs(draw, equal_strengths: bool = True) -> DataConfig:
    """Def. 3.1 configs with K ∈ [2, 4], P ∈ [3, 6], d ∈ [2K, 2K + 10]; D_α = D_γ unless told otherwise."""
    K, P = draw(st.integers(2, 4)), draw(st.integers(3, 6))
    d = draw(st.integers(2 * K, 2 * K + 10))
    alpha = draw(uniform_ranges())
    gamma = alpha if equal_strengths else draw(uniform_ranges())
    return DataConfig(
        K=K,
        P=P,
        d=d,
        alpha=alpha,
        beta=draw(uniform_ranges()),
        gamma=gamma,
        sigma_p=draw(st.floats(0.25, 2.0)),
        signals=draw(st.sampled_from(("orthonormal", "one-hot"))),
    )


def cnn_filters(
    signals: Signals, activations: tuple[str, ...] = ACTIVATION_NAMES, min_bias_scale: float = 0.0
) -> st.SearchStrategy:
    """Two-layer CNN filter banks Σ_j a_j σ(⟨w_j, z⟩ + b_j) with 1–8 filters, biases, a_j of either sign.

    min_bias_scale > 0 keeps the biases generic, so no f is odd (an odd f makes Π_p f(x⁽ᵖ⁾)
    satisfy the orbit identity too: flipping the feature and noise patches flips two signs).
    """
    return st.builds(
        lambda seed, J, act, bias, weight: random_cnn(
            np.random.default_rng(seed), signals, J, act, bias, weight
        ),
        seeds,
        st.integers(1, 8),
        st.sampled_from(activations),
        st.floats(min_bias_scale, 2.0),
        st.floats(0.5, 2.0),
    )


def projection_polynomials(signals: Signals) -> st.SearchStrategy:
    """Random polynomials of degree 1–4 with 1–6 terms in the 2K signal projections."""
    return st.builds(
        lambda seed, degree, terms: random_polynomial(np.random.default_rng(seed), signals, degree, terms),
        seeds,
        st.integers(1, 4),
        st.integers(1, 6),
    )


@st.composite
def projection_lookups(draw, signals: Signals) -> ProjectionLookup:
    """Discontinuous f: a threshold, the sign, or a table with up to 5 edges, summed or aligned-only."""
    kind = draw(st.sampled_from(("threshold", "sign", "table")))
    if kind == "sign":
        edges = np.zeros(1)
    else:
        size = 1 if kind == "threshold" else draw(st.integers(1, 5))
        edges = np.unique(draw(arrays(float, size, elements=st.floats(-3.0, 3.0, allow_subnormal=False))))
    U = np.vstack([signals.V, signals.C])
    table = draw(arrays(float, (U.shape[0], edges.size + 1), elements=_table_values))
    return ProjectionLookup(U, edges, table, ALIGNED_COSINE if draw(st.booleans()) else None)


def patch_functions(signals: Signals) -> st.SearchStrategy:
    """Any per-patch f from the three families (CNN, polynomial, lookup)."""
    return st.one_of(cnn_filters(signals), projection_polynomials(signals), projection_lookups(signals))


@st.composite
def moe_params(draw, d: int) -> MoEParams:
    """A routed MoE with 2–4 experts of 1–4 filters and a Gaussian router Θ (components on every signal)."""
    rng = np.random.default_rng(draw(seeds))
    M, J = draw(st.integers(2, 4)), draw(st.integers(1, 4))
    scale = draw(st.floats(0.5, 3.0))
    return MoEParams(Theta=scale * rng.standard_normal((d, M)), W=rng.standard_normal((M, J, d)) / np.sqrt(d))
