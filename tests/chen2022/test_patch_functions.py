"""lab.chen2022.patch_functions: the per-patch families f (CNN filters, polynomials, lookups)."""

import numpy as np
import pytest

from lab.chen2022.data import DataConfig, make_signals, sample, setting
from lab.chen2022.patch_functions import (
    ALIGNED_COSINE,
    CNNFilter,
    ProjectionLookup,
    ProjectionPolynomial,
    random_cnn,
    random_lookup,
    random_polynomial,
)
from lab.chen2022.patchwise import PatchAdditive
from lab.kernels.activations import ACTIVATIONS, activation


@pytest.mark.parametrize("act", list(ACTIVATIONS))
def test_cnn_filter_is_the_two_layer_cnn_formula(act):
    rng = np.random.default_rng(1)
    W, b, a = rng.standard_normal((3, 7)), rng.standard_normal(3), rng.standard_normal(3)
    z = rng.standard_normal((4, 5, 7))
    sigma, _ = activation(act)
    expected = sum(a[j] * sigma(z @ W[j] + b[j]) for j in range(3))
    np.testing.assert_allclose(CNNFilter(W, b, a, act)(z), expected, rtol=1e-12, atol=1e-12)


def test_polynomial_in_projections():
    rng = np.random.default_rng(2)
    U = np.linalg.qr(rng.standard_normal((6, 3)))[0].T
    poly = ProjectionPolynomial(U, [[2, 0, 1], [0, 0, 0], [1, 3, 0]], [1.5, -2.0, 0.5])
    z = rng.standard_normal((10, 6))
    p = z @ U.T
    expected = 1.5 * p[:, 0] ** 2 * p[:, 2] - 2.0 + 0.5 * p[:, 0] * p[:, 1] ** 3
    np.testing.assert_allclose(poly(z), expected, rtol=1e-12)


def test_lookup_thresholds_sign_and_alignment():
    U = np.eye(4)[:2]
    sign = ProjectionLookup(U, [0.0], [[-1.0, 1.0], [-2.0, 2.0]])
    z = np.array([[0.5, -0.1, 3, 4], [0.0, 0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(sign(z), [1.0 - 2.0, 1.0 + 2.0])  # side="right": 0 goes to the upper bin
    aligned = ProjectionLookup(U, [0.0], [[-1.0, 1.0], [-2.0, 2.0]], ALIGNED_COSINE)
    z = np.array([[0.0, -2.0, 0.0, 0.0], [3.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(aligned(z), [-2.0, 1.0, 0.0, 0.0])


def test_random_families_are_finite_and_deterministic():
    config, rng = DataConfig(K=3, P=5, d=14), np.random.default_rng(0)
    signals = make_signals(config, rng)
    data = sample(config, signals, 400, rng)
    for make in (
        lambda r: random_cnn(r, signals, 5, "gelu"),
        lambda r: random_polynomial(r, signals, 4, 6),
        lambda r: random_lookup(r, signals, [-1.0, 0.0, 1.0], aligned=True),
    ):
        a, b = (PatchAdditive(make(np.random.default_rng(9)))(data.x) for _ in range(2))
        assert np.all(np.isfinite(a))
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("P", [3, 5, 6])
def test_f_gives_the_same_bits_for_a_patch_wherever_it_sits(P):
    """The orbit identity is exact only if f(z) does not depend on z's position in the batch."""
    config, rng = DataConfig(K=3, P=P, d=50), np.random.default_rng(0)
    signals = make_signals(config, rng)
    z = rng.standard_normal((P * 300, config.d))
    moved = np.roll(z, 1, axis=0)  # every patch one slot further: another row of its P-block
    for f in (
        random_cnn(rng, signals, 1, "relu"),
        random_cnn(rng, signals, 3, "cubic"),
        random_polynomial(rng, signals, 3, 5),
        random_lookup(rng, signals, [-1.0, 0.0, 1.0]),
    ):
        here = f(z.reshape(-1, P, config.d)).ravel()
        there = np.roll(f(moved.reshape(-1, P, config.d)).ravel(), -1)
        np.testing.assert_array_equal(here, there)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: CNNFilter(np.ones((2, 3)), np.ones(3), np.ones(2)), "b and a"),
        (lambda: CNNFilter(np.ones((2, 3)), np.ones(2), np.ones(2), "sigmoid"), "act"),
        (lambda: CNNFilter(np.full((2, 3), np.nan), np.ones(2), np.ones(2)), "W"),
        (lambda: ProjectionPolynomial(np.eye(2), [[-1, 0]], [1.0]), "exponents"),
        (lambda: ProjectionLookup(np.eye(2), [1.0, 0.0], np.ones((2, 3))), "edges"),
        (lambda: ProjectionLookup(np.eye(2), [0.0], np.ones((2, 3))), "table"),
        (lambda: ProjectionLookup(np.eye(2), [0.0], np.ones((2, 2)), 0.5), "min_cosine"),
        (
            lambda: random_cnn(
                np.random.default_rng(0), make_signals(setting(1), np.random.default_rng(0)), 0, "relu"
            ),
            "J",
        ),
    ],
)
def test_bad_arguments_name_the_parameter(make, name):
    with pytest.raises(ValueError, match=name):
        make()


def test_projections_need_the_patch_dimension():
    with pytest.raises(ValueError, match="last axis d = 3"):
        CNNFilter(np.ones((2, 3)), np.ones(2), np.ones(2))(np.ones((4, 5)))
