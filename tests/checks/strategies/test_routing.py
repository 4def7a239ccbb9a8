"""checks.strategies.routing: gate vectors and pairs (h, ĥ) for the routing checks B4–B6."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from checks.strategies.routing import MIN_STEP, gate_pairs, gate_vectors


@given(gate_pairs(scale=0.5))
def test_pairs_are_distinct_and_not_too_close(pair):
    h, h_hat = pair
    assert h.shape == h_hat.shape and 2 <= h.size <= 64
    assert np.abs(h - h_hat).max() >= 0.5 * MIN_STEP * (1 - 1e-9)
    assert np.all(np.isfinite(h)) and np.all(np.isfinite(h_hat))


@given(gate_vectors(M=st.integers(1, 64), kinds=("gapped",), scale=2.0))
def test_gapped_vectors_have_an_expert_exactly_one_width_below(h):
    assert h.max() == 0.0
    assert h.size < 2 or np.any(h == -2.0)
