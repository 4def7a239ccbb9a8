"""The MoE layer's parameters (`lab.chen2022.model`) pinned exactly: sizes, Algorithm 1's initialisation."""

import numpy as np

from lab.chen2022.model import MoEParams, init_params


def test_params_report_their_sizes_and_init_is_algorithm_1_lines_1_2():
    params = init_params(M=3, J=4, d=11, sigma0=0.25, rng=np.random.default_rng(5))
    assert isinstance(params, MoEParams)
    assert (params.M, params.J) == (3, 4)
    assert params.W.shape == (3, 4, 11) and params.Theta.shape == (11, 3)
    assert np.array_equal(params.Theta, np.zeros((11, 3)))  # Θ⁽⁰⁾ = 0
    expected = np.random.default_rng(5).normal(0.0, 0.25, size=(3, 4, 11))  # W⁽⁰⁾ ~ N(0, σ0²)
    assert np.array_equal(params.W, expected)
