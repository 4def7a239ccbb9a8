"""checks.strategies.routing: gate vectors and pairs (h, ĥ) for the routing checks B4–B6."""

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from checks.strategies.routing import MIN_STEP, gate_pairs, gate_vectors, separated


@given(gate_pairs(scale=0.5))
def test_pairs_are_distinct_and_not_too_close(pair):
    """The contract: ‖h − ĥ‖∞ >= MIN_STEP·scale exactly (no slack), for every kind of pair."""
    h, h_hat = pair
    assert h.shape == h_hat.shape and 2 <= h.size <= 64
    assert np.abs(h - h_hat).max() >= 0.5 * MIN_STEP
    assert np.all(np.isfinite(h)) and np.all(np.isfinite(h_hat))


@given(gate_pairs(scale=0.5, kinds=("far",), M=2))
def test_far_pairs_of_two_experts_are_not_too_close(pair):
    h, h_hat = pair
    assert np.abs(h - h_hat).max() >= 0.5 * MIN_STEP


# Counterexamples of the former strategy at scale 0.5 (floor 5e-7). A "far" pair drew two gate
# vectors that differed by 2.6e-260 (only exact equality was caught): such a pair is now replaced by
# h + step·u. A leader at 25 with the smallest step: 25 + 5e-7 − 25 rounds to 5e-7 (1 − 2.5e-9).
@example(h=[0.0, 0.0], u=[0.0, 1.0], lift=1.0)
@example(h=[25.0, 0.1], u=[1.0, 0.3], lift=1.0)
@example(h=[-25.0, 24.999, 3.0], u=[0.2, -1.0, 0.0], lift=1.0)
@given(
    h=st.lists(st.floats(-60.0, 60.0), min_size=2, max_size=9),
    u=st.lists(st.floats(-1.0, 1.0), min_size=9, max_size=9),
    lift=st.floats(1.0, 1e6),
)
def test_separated_reaches_the_floor_along_u(h, u, lift):
    h = np.asarray(h, dtype=float)
    u = np.asarray(u[: h.size], dtype=float)
    top = int(np.argmax(np.abs(u)))
    u[top] = -1.0 if u[top] < 0 else 1.0  # ‖u‖∞ = 1, as `_direction` draws it
    floor = 0.5 * MIN_STEP
    h_hat = separated(h, u, floor * lift, floor)
    assert floor <= np.abs(h_hat - h).max() <= floor * lift * (1 + 1e-5)  # a stretch undoes rounding only
    assert np.sign(h_hat[top] - h[top]) == u[top]


@given(gate_vectors(M=st.integers(1, 64), kinds=("gapped",), scale=2.0))
def test_gapped_vectors_have_an_expert_exactly_one_width_below(h):
    assert h.max() == 0.0
    assert h.size < 2 or np.any(h == -2.0)
