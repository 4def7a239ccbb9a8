"""Tests of lab.chen2022.routing_tightness.swap_worst_start (Lemma C.3's M = 2 worst case)."""

import numpy as np
import pytest

from lab.chen2022.routing import Uniform
from lab.chen2022.routing_exact import uniform_routing
from lab.chen2022.routing_tightness import swap_worst_start


def test_swap_worst_start_reaches_half_of_kappa_m_squared_for_uniform_noise():
    noise = Uniform(0.0, 1.0)
    h = swap_worst_start(noise)
    p, _ = uniform_routing(h[None, :] + noise.low, np.full((1, 2), noise.high - noise.low))
    share = abs(p[0, 0] - p[0, 1]) / (noise.kappa * 4 * abs(h[0] - h[1]))
    assert 0.4999 < share <= 0.5


def test_swap_worst_start_rejects_bad_gap():
    with pytest.raises(ValueError, match="gap"):
        swap_worst_start(Uniform(0.0, 1.0), gap=0.0)
