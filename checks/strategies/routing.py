"""Hypothesis strategies for gating outputs h and pairs (h, ĥ): the inputs of the routing checks B4–B6.

Public API shared by the checks and the tests. Every strategy takes the noise `scale` (the width
of uniform noise, the scale of Gaussian/Gumbel noise) so that "close", "tied" and "far ahead"
mean the same thing for every noise family. Values on the dyadic grid scale·k/8 make gaps of
exactly one noise width exact in floating point.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

EXPERT_COUNTS = st.one_of(st.integers(2, 8), st.sampled_from([16, 32, 64]), st.integers(2, 64))
VECTOR_KINDS = ("spread", "ties", "leader", "gapped")
PAIR_KINDS = ("close", "tie", "leader", "far")
MIN_STEP = 1e-6  # smallest ‖h − ĥ‖∞ of `gate_pairs`, in noise scales: exact p keeps the ratio to ~1e-8
DRAWN = 8  # coordinates drawn one by one (searchable by target and shrinking); the rest from a seed


def _sizes(M: int | st.SearchStrategy[int] | None) -> st.SearchStrategy[int]:
    if M is None:
        return EXPERT_COUNTS
    return M if isinstance(M, st.SearchStrategy) else st.just(int(M))


def _values(draw, m: int, elements: st.SearchStrategy, fill) -> np.ndarray:
    """m values: the first DRAWN one by one, the rest by `fill(rng, k)` from a drawn NumPy seed."""
    head = draw(st.lists(elements, min_size=min(m, DRAWN), max_size=min(m, DRAWN)))
    if m <= DRAWN:
        return np.asarray(head, dtype=float)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return np.r_[np.asarray(head, dtype=float), fill(rng, m - DRAWN)]


@st.composite
def gate_vectors(draw, M=None, scale: float = 1.0, kinds=VECTOR_KINDS) -> np.ndarray:
    """One h (M,): spread values, many ties, one expert far ahead, or gaps of ≥ one noise width."""
    m = draw(_sizes(M))
    kind = draw(st.sampled_from(kinds))
    if kind == "spread":
        h = _values(draw, m, st.floats(-2.0, 2.0), lambda rng, k: rng.uniform(-2.0, 2.0, k))
    elif kind == "ties":
        h = _values(draw, m, st.integers(-12, 0), lambda rng, k: rng.integers(-12, 1, k)) / 8
    elif kind == "leader":
        h = _values(draw, m, st.floats(-1.0, 1.0), lambda rng, k: rng.uniform(-1.0, 1.0, k))
        h[0] = draw(st.floats(1.0, 50.0))
    else:  # "gapped": a top expert at 0 and (M ≥ 2) one expert exactly one width below
        h = _values(draw, m, st.integers(-40, 0), lambda rng, k: rng.integers(-40, 1, k)) / 8
        h[:2] = (0.0, -1.0)[:m]
    return scale * h[draw(st.permutations(range(m)))]


@st.composite
def _direction(draw, m: int) -> np.ndarray:
    """A direction u with ‖u‖∞ = 1 (one coordinate set to ±1)."""
    u = _values(draw, m, st.floats(-1.0, 1.0), lambda rng, k: rng.uniform(-1.0, 1.0, k))
    u[draw(st.integers(0, m - 1))] = draw(st.sampled_from([-1.0, 1.0]))
    return u


def separated(h: np.ndarray, u: np.ndarray, step: float, floor: float) -> np.ndarray:
    """ĥ = h + t·u with t = step, or t stretched by factors 1 + 2⁻²⁰ until ‖ĥ − h‖∞ >= floor.

    With ‖u‖∞ = 1 and step >= floor the stretch only undoes rounding: h + step·u − h can come out
    below step when |h_j| is large (one ulp of 50 is 7e-15, of the order of 1e-9 · MIN_STEP).
    """
    h_hat = h + step * u
    while np.abs(h_hat - h).max() < floor:
        step *= 1.0 + 2.0**-20
        h_hat = h + step * u
    return h_hat


@st.composite
def gate_pairs(draw, M=None, scale: float = 1.0, kinds=PAIR_KINDS) -> tuple[np.ndarray, np.ndarray]:
    """(h, ĥ) with ‖h − ĥ‖∞ >= MIN_STEP·scale: close pairs, pairs straddling a tie, a leader, far pairs.

    The lower bound is the strategies' contract: the Lipschitz ratio ‖Δp‖/‖Δh‖ of the checks is
    0/0-sensitive, and exact p (error ~1e-15) keeps it to ~1e-8 only for ‖Δh‖∞ >= MIN_STEP·scale.
    """
    m = draw(_sizes(M))
    kind = draw(st.sampled_from(kinds))
    step = scale * 10.0 ** draw(st.floats(np.log10(MIN_STEP), 0.0))
    floor = MIN_STEP * scale
    if kind == "far":
        h = draw(gate_vectors(m, scale, ("spread", "ties")))
        h_hat = draw(gate_vectors(m, scale, ("spread", "ties")))
        if np.abs(h - h_hat).max() < floor:  # drawn (nearly) equal: a close pair instead
            h_hat = separated(h, draw(_direction(m)), step, floor)
        return h, h_hat
    if kind == "tie":  # the top two tied; ĥ lifts one of them against the rest (all of it, or randomly)
        h = draw(gate_vectors(m, scale, ("spread", "ties")))
        first, second = np.argsort(-h, kind="stable")[:2]
        h[second] = h[first]
        u = -np.ones(m) if draw(st.booleans()) else draw(_direction(m))
        u[first], u[second] = 1.0, -1.0
        return h, separated(h, u, step, floor)
    h = draw(gate_vectors(m, scale, ("leader",) if kind == "leader" else ("spread", "ties", "leader")))
    return h, separated(h, draw(_direction(m)), step, floor)


def tie_pairs(scale: float = 1.0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pinned pairs: M = 2, 8, 64 tied experts, ĥ lifts the last one against all others by the smallest step.

    For uniform noise these reach 2κ(1 − (2·MIN_STEP)^{M−1}/M), the supremum 2κ up to ~1e-6; a
    noiseless argmax (ties to the lowest index) jumps from expert 0 to expert M − 1.
    """
    pairs = []
    for m in (2, 8, 64):
        u = -np.ones(m)
        u[-1] = 1.0
        pairs.append((np.zeros(m), MIN_STEP * scale * u))
    return pairs


def tie_vectors(scale: float = 1.0) -> list[np.ndarray]:
    """Pinned gate vectors with exact and near ties (M = 2, 3 and 64)."""
    return [np.zeros(2), scale * np.array([0.0, MIN_STEP, -1.0]), np.zeros(64)]
