"""The MoE layer's parameters (`lab.chen2022.model`) pinned exactly: sizes, Algorithm 1's initialisation."""

import numpy as np

from lab.chen2022.model import MoEParams, init_params, logistic_loss, logistic_loss_derivative


def test_params_report_their_sizes_and_init_is_algorithm_1_lines_1_2():
    params = init_params(M=3, J=4, d=11, sigma0=0.25, rng=np.random.default_rng(5))
    assert isinstance(params, MoEParams)
    assert (params.M, params.J) == (3, 4)
    assert params.W.shape == (3, 4, 11) and params.Theta.shape == (11, 3)
    assert np.array_equal(params.Theta, np.zeros((11, 3)))  # Θ⁽⁰⁾ = 0
    expected = np.random.default_rng(5).normal(0.0, 0.25, size=(3, 4, 11))  # W⁽⁰⁾ ~ N(0, σ0²)
    assert np.array_equal(params.W, expected)


def test_the_complex_step_branch_of_the_logistic_loss_is_its_analytic_extension():
    """ℓ and ℓ' on complex z equal their real values at real z, and Im ℓ(z + ih)/h = ℓ'(z) (complex step)."""
    z = np.array([-30.0, -2.0, 0.0, 0.3, 5.0])
    step = 1e-30
    assert np.array_equal(logistic_loss_derivative(z + 0j).real, logistic_loss_derivative(z))
    np.testing.assert_allclose(logistic_loss_derivative(z + 0j).real, -1.0 / (1.0 + np.exp(z)), rtol=1e-15)
    np.testing.assert_allclose(
        logistic_loss(z + 1j * step).imag / step, logistic_loss_derivative(z), rtol=1e-14
    )
    second = np.exp(z) / (1.0 + np.exp(z)) ** 2  # ℓ″(z) > 0: ℓ is convex
    np.testing.assert_allclose(logistic_loss_derivative(z + 1j * step).imag / step, second, rtol=1e-13)
