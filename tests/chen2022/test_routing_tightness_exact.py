"""The search for Lemma 5.1's constant (`lab.chen2022.routing_tightness`) with its default starts."""

import numpy as np

from lab.chen2022.routing import Uniform
from lab.chen2022.routing_tightness import search_constant


def test_the_search_runs_all_eight_default_starts_and_stays_below_2_kappa():
    # Starts 4-8 are random spreads (0.05, 0.3, 1, 3, ...); the other tests use fewer starts.
    found = search_constant(Uniform(), M=3, starts=8, seed=0)
    assert found.starts == 8 and found.evaluations >= 8
    assert 0.0 < found.constant <= 2.0 * found.kappa * (1 + 1e-12)
    assert found.h.shape == (3,) and found.h[0] == 0.0 and np.all(np.isfinite(found.h))
