"""B13's measurements of Theorem 4.2's explicit proof steps: exact on hand-made cases, tight where stated."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from checks.chen2022 import lemma_ratios as L
from lab.chen2022 import data
from lab.chen2022.data_views import uniform_moment
from lab.chen2022.model import MoEParams, perturbed_loss_gradients
from lab.chen2022.routing import Uniform


def _sample(n=60, d=12, seed=0):
    config = data.DataConfig(d=d)
    rng = np.random.default_rng(seed)
    signals = data.make_signals(config, rng)
    return config, signals, data.sample(config, signals, n, rng)


def test_concentration_sums_match_a_loop_over_the_samples():
    config, _, batch = _sample()
    devs, ranges = L.concentration_sums(batch, config)
    K, n = config.K, batch.n
    assert devs.size == ranges.size == 4 * K + 4 * K * (K - 1)
    expected = []
    for k in range(K):
        rows = [i for i in range(n) if batch.cluster[i] == k]
        expected += [
            sum(batch.y[i] * batch.beta[i] ** 3 for i in rows),
            sum(batch.alpha[i] ** 3 for i in rows) - uniform_moment(0.5, 2.0, 3) * n / K,
            sum(batch.y[i] * batch.eps[i] * batch.gamma[i] ** 3 for i in rows),
            sum(batch.beta[i] for i in rows) - 1.5 * n / K,
        ]
        for k2 in (j for j in range(K) if j != k):
            for sign in (1, -1):
                part = [i for i in rows if batch.noise_cluster[i] == k2 and batch.y[i] == sign * batch.eps[i]]
                expected += [
                    sum(batch.y[i] * batch.alpha[i] for i in part),
                    sum(batch.eps[i] * batch.gamma[i] for i in part),
                ]
    np.testing.assert_allclose(devs, np.abs(expected), rtol=1e-12, atol=1e-12)


def test_init_alignment_ratio_is_the_stated_constant():
    vectors = np.array([[2.0, 0.0], [0.0, 1.0]])
    W0 = np.array([[[0.3, 0.1]]])  # one filter
    z = math.sqrt(2 * math.log(2 * 2 / 0.05))
    assert L.init_alignment_ratio(W0, vectors, 0.1, 0.05) == pytest.approx(
        max(0.6 / (0.2 * z), 0.1 / (0.1 * z))
    )


def test_the_chosen_gate_floor_is_exact_and_tight():
    """Unif[0, 1]: the lowest reachable expert sits just under 1 below the top; exact π·eM, → 1 as M grows."""
    h = np.array([[0.0, -1 + 1e-9, -50.0, -50.0]])
    pi_low = math.exp(-1 + 1e-9) / (1 + math.exp(-1 + 1e-9) + 2 * math.exp(-50))
    assert L.chosen_gate_floor_ratio(h, Uniform(0.0, 1.0)) == pytest.approx(pi_low * math.e * 4)
    assert L.chosen_gate_floor_ratio(np.array([[0.0, -1.0 + 1e-12]]), Uniform(0.0, 1.0)) >= 1.0
    tight = np.array([[*([0.0] * 7), -1 + 1e-9]])  # M = 8: seven at the top, one just reachable
    assert L.chosen_gate_floor_ratio(tight, Uniform(0.0, 1.0)) == pytest.approx(
        8 / (7 + 1 / math.e), rel=1e-6
    )


def test_the_chosen_gate_floor_bounds_every_sampled_route():
    rng = np.random.default_rng(0)
    h = rng.normal(0, 3, size=(400, 6))
    routes = np.argmax(h[None] + rng.uniform(size=(200, 400, 6)), axis=2)
    pi = np.exp(h - h.max(axis=1, keepdims=True))
    pi /= pi.sum(axis=1, keepdims=True)
    sampled = np.take_along_axis(pi, routes.T, axis=1).min() * math.e * 6
    assert sampled >= L.chosen_gate_floor_ratio(h, Uniform(0.0, 1.0)) * (1 - 1e-12)


def test_the_softmax_constant_one_half_is_attained():
    """M = 2 at h ≈ 0: |Δπ| = σ(2ε) − 1/2 ≈ ε/2 = ‖Δh‖∞/2, so E.11's gate ratio → 1 (the bound is sharp)."""
    eps = 1e-3
    gates, routes = L.centre_gate_ratios(np.array([[eps, -eps]]), np.zeros((1, 2)), Uniform(0.0, 1.0))
    assert 0.999 < gates <= 1.0 and routes <= 1.0
    # E.15 at M = 2: tanh(Δ/2)/(2Δ) → 1/4
    assert L.pair_gate_ratio(np.array([[1e-6, 0.0]])) == pytest.approx(0.25, rel=1e-6)


def test_top_two_rate_counts_by_hand():
    draws = np.array([[1.0, 0.95, -3.0], [1.0, 0.5, 0.2], [-1.0, -0.99, -5.0]])
    assert L.top_two_rate(draws, 0.1) == 1  # only the first row: 0.95 ≥ 0.9 (a⁽¹⁾ < 0 cannot count)


@given(
    S=st.floats(1.0, 4.0),
    G=st.floats(0.05, 2.0),
    y0=st.floats(1e-2, 5e-2),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_race_keeps_y_under_the_derived_bound(S, G, y0, seed):
    C = np.random.default_rng(seed).uniform(0.2, 2.0, size=100_000)
    y, eps = L.tensor_power_race(S * (1 + G) * y0, y0, S, 1e-2, C, 1.0)
    assert eps < G and y < (1 + G) * y0 / (G - eps)


def test_the_race_runs_away_when_x0_is_too_small_and_refuses_a_short_sequence():
    C = np.ones(100_000)
    assert L.tensor_power_race(0.25 * 2e-2, 1e-2, 1.0, 1e-2, C, 1.0)[0] == math.inf
    with pytest.raises(ValueError, match="C must be long enough"):
        L.tensor_power_race(1e-3, 1e-4, 1.0, 1e-2, np.ones(3), 1.0)


def test_route_gradient_pieces_sum_to_the_models_gradients():
    """For any routes, Σ_i of the per-sample pieces is the exact gradient (E.1), (E.2) projected on V."""
    _, signals, batch = _sample(n=30, d=12, seed=5)
    rng = np.random.default_rng(1)
    W, Theta = rng.normal(0, 0.5, (3, 2, 12)), rng.normal(0, 0.5, (12, 3))
    V = np.vstack([signals.V, signals.C])
    a, b = L.route_gradient_pieces(batch.x, batch.y.astype(float), W, Theta, V)
    routes = rng.integers(0, 3, batch.n)
    g_theta, g_w = perturbed_loss_gradients(
        batch.x, batch.y.astype(float), MoEParams(Theta, W), routes, backend="numpy"
    )
    hot = np.eye(3)[routes]
    np.testing.assert_allclose(np.einsum("nm,nmjv->mjv", hot, a), g_w @ V.T, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(
        b[np.arange(batch.n), routes].sum(axis=0), (V @ g_theta).T, rtol=1e-10, atol=1e-14
    )


def test_route_concentration_is_zero_for_a_single_expert():
    _, signals, batch = _sample(n=20, d=12, seed=2)
    V = np.vstack([signals.V, signals.C])
    W, Theta = np.random.default_rng(0).normal(0, 0.3, (1, 2, 12)), np.zeros((12, 1))
    a, b = L.route_gradient_pieces(batch.x, batch.y.astype(float), W, Theta, V)
    ratios = L.route_concentration_ratios(a, b, np.ones((20, 1)), np.zeros((3, 20), dtype=int), 0.05)
    assert np.all(ratios == 0)
