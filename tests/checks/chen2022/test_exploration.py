"""Premise and negative-control tests of B10 (Lemma E.4): near-uniform routing in the exploration stage."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from checks.chen2022 import exploration as ex
from checks.chen2022.routing_smoothness import PAPER_NOISE, exact_router, plain_argmax


@given(st.integers(2, 16), st.floats(1e-6, 0.5), st.integers(0, 2**32 - 1))
def test_near_uniform_routing_for_small_gates(M, size, seed):
    h = np.random.default_rng(seed).uniform(-size, size, (5, M))
    paper, sharp, _ = ex.uniformity_ratios(exact_router(PAPER_NOISE), h[None], 1.0)
    assert paper <= 1.0 and sharp <= 1.0
    assert ex.uniformity_ratios(plain_argmax, h[None], 1.0)[0] > 1.0 or size * M**2 >= 1 - 1 / M


def test_exploration_run_starts_at_zero_and_stays_small():
    history = ex.exploration_run(seed=1, steps=3, n=20)
    assert history.shape == (4, 20, 8)
    assert np.all(history[0] == 0.0) and np.abs(history[-1]).max() < 0.5


def test_registered_entry_is_as_expected():
    records = ex.verify_exploration(0, "quick")
    assert records and all(r.ok for r in records), [(r.statement, r.outcome) for r in records]
    assert {r.kind for r in records} == {"premise", "negative-control"}
