"""The search for Lemma 5.1's constant (`lab.chen2022.routing_tightness`) with its default starts."""

import numpy as np

from lab.chen2022.routing import Uniform
from lab.chen2022.routing_tightness import _starts, search_constant


def test_the_search_runs_all_eight_default_starts_and_stays_below_2_kappa():
    # Starts 4-8 are random spreads (0.05, 0.3, 1, 3, ...); the other tests use fewer starts.
    found = search_constant(Uniform(), M=3, starts=8, seed=0)
    assert found.starts == 8 and found.evaluations >= 8
    assert 0.0 < found.constant <= 2.0 * found.kappa * (1 + 1e-12)
    assert found.h.shape == (3,) and found.h[0] == 0.0 and np.all(np.isfinite(found.h))


def test_the_random_starts_cycle_through_the_four_documented_spreads():
    """Starts 4 on are N(μ, s²) draws with s cycling 0.05, 0.3, 1.0, 3.0 (near-ties first, then wide)."""
    starts = _starts(400, 11, np.random.default_rng(0))
    assert [len(s) for s in starts] == [399] * 11
    spreads = [float(np.std(s)) for s in starts[4:8]]
    np.testing.assert_allclose(spreads, [0.05, 0.3, 1.0, 3.0], rtol=0.15)
