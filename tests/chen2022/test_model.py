"""The MoE layer: stable gate and loss, exact gradients (E.1)/(E.2) against complex-step derivatives."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from checks.chen2022.substrate import check_gradients, complex_step_gradient
from lab.chen2022.model import (
    MoEParams,
    gate_values,
    init_params,
    logistic_loss,
    logistic_loss_derivative,
    noisy_routes,
    perturbed_loss,
    perturbed_loss_gradients,
)
from lab.kernels.activations import ACTIVATIONS, activation


def test_softmax_and_logistic_loss_stay_finite_at_extreme_logits():
    h = np.array([[1e300, -1e300, 0.0], [-1e308, -1e308, -1e308], [700.0, 710.0, -800.0]])
    pi = gate_values(h)
    assert np.all(np.isfinite(pi)) and np.allclose(pi.sum(axis=1), 1.0)
    np.testing.assert_allclose(pi[1], 1 / 3)
    z = np.array([-1e300, -50.0, 0.0, 50.0, 1e300])
    loss = logistic_loss(z)
    assert np.all(np.isfinite(loss))
    np.testing.assert_allclose(loss[[0, 2, 4]], [1e300, np.log(2.0), 0.0])
    slope = logistic_loss_derivative(z)
    np.testing.assert_allclose(slope[[0, 2, 4]], [-1.0, -0.5, 0.0])


@pytest.mark.parametrize("act", sorted(ACTIVATIONS))
def test_activation_derivatives_match_complex_step(act):
    sigma, sigma_prime = activation(act)
    z = np.linspace(-3, 3, 13) + 0.05
    cs = np.imag(sigma(z + 1e-30j)) / 1e-30
    np.testing.assert_allclose(sigma_prime(z), cs, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("act", sorted(ACTIVATIONS))
@pytest.mark.parametrize("scale", [1e-3, 0.7])
def test_exact_gradients_match_complex_step(act, scale):
    record = check_gradients(np.random.default_rng(7), scale=scale, act=act, backend="numpy")
    assert record.verdict == "holds", record.measured


@pytest.mark.parametrize("act", ["cubic", "linear", "tanh"])
def test_numba_backend_matches_numpy(act):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(57, 5, 11))
    y = rng.choice([-1, 1], 57)
    params = MoEParams(Theta=rng.normal(size=(11, 3)), W=rng.normal(size=(3, 4, 11)) * 0.3)
    routes = rng.integers(0, 3, 57)
    for a, b in zip(
        perturbed_loss_gradients(x, y, params, routes, act, "numpy"),
        perturbed_loss_gradients(x, y, params, routes, act, "numba"),
        strict=True,
    ):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-14)


def test_negative_control_mutated_gradient_is_detected():
    record = check_gradients(
        np.random.default_rng(0), scale=0.7, act="cubic", backend="numpy", mutate="drop-gate-factor"
    )
    assert record.verdict == "violated"


@given(seed=st.integers(0, 2**32 - 1), M=st.integers(1, 6))
def test_routes_are_argmax_of_perturbed_logits(seed, M):
    rng = np.random.default_rng(seed)
    h, r = rng.normal(size=(20, M)), rng.uniform(size=(20, M))
    routes = noisy_routes(h, r)
    assert np.all((h + r)[np.arange(20), routes] == (h + r).max(axis=1))


def test_complex_step_of_a_known_function():
    point = np.array([[0.3, -1.2], [2.0, 0.5]])
    grad = complex_step_gradient(lambda p: np.sum(p**3), point)
    np.testing.assert_allclose(grad, 3 * point**2, rtol=1e-15)


def test_init_and_shapes_validate():
    params = init_params(8, 16, 50, 1e-3, np.random.default_rng(0))
    assert params.Theta.shape == (50, 8) and np.all(params.Theta == 0) and params.W.shape == (8, 16, 50)
    assert abs(params.W.std() - 1e-3) < 1e-4
    with pytest.raises(ValueError, match="sigma0"):
        init_params(2, 2, 4, -1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="Theta"):
        MoEParams(Theta=np.zeros((4, 3)), W=np.zeros((2, 2, 4)))
    with pytest.raises(ValueError, match="backend"):
        x = np.zeros((2, 3, 4))
        perturbed_loss_gradients(x, np.ones(2), params_small(), np.zeros(2, dtype=int), backend="gpu")
    with pytest.raises(ValueError, match=r"^act must be one of 'celu', 'cubic'"):
        perturbed_loss(np.zeros((2, 3, 4)), np.ones(2), params_small(), np.zeros(2, dtype=int), act="swish")


def params_small():
    return MoEParams(Theta=np.zeros((4, 2)), W=np.zeros((2, 2, 4)))
