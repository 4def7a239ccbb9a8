"""Patch-wise classifiers (`lab.chen2022.patchwise`) pinned exactly: round-off allowance, enumeration."""

import numpy as np
import pytest

from lab.chen2022.data import CENTER, FEATURE, FEATURE_NOISE, DataConfig, UniformRange, make_signals, sample
from lab.chen2022.patchwise import enumerated_error, search_aligned_lookup, summation_allowance

U = 2.0**-53  # unit round-off of float64


@pytest.mark.parametrize("P", [3, 4, 7])
def test_summation_allowance_is_gamma_4p_minus_1(P):
    # Higham's γ_n = n u / (1 − n u) with n = 4P − 1 for the 4P signed summands of an orbit.
    n = 4 * P - 1
    assert summation_allowance(P) == n * U / (1.0 - n * U)


def test_enumerated_error_averages_the_noise_free_points_at_the_midpoints():
    # Def. 3.1 with α, β, γ at their midpoints and zero noise patches: 4K(K−1) equally likely points.
    config = DataConfig(K=3, P=5, d=8)
    signals = make_signals(config, np.random.default_rng(0))
    seen = []

    def spy(x):
        seen.append(x.copy())
        return np.ones(x.shape[0])  # F ≡ 1 errs exactly where y = −1

    assert enumerated_error(spy, config, signals) == 0.5
    (x,) = seen
    assert x.shape == (4 * 3 * 2, 5, 8)
    feature, noise = x[:, FEATURE] @ signals.V.T, x[:, FEATURE_NOISE] @ signals.V.T
    centre = x[:, CENTER] @ signals.C.T
    alpha, beta, gamma = 1.25, 1.5, 1.75  # midpoints of U(0.5, 2), U(1, 2), U(0.5, 3)
    np.testing.assert_allclose(np.sort(np.abs(feature).max(axis=1)), alpha, rtol=1e-14)
    np.testing.assert_allclose(np.sort(centre.max(axis=1)), beta, rtol=1e-14)
    np.testing.assert_allclose(np.sort(np.abs(noise).max(axis=1)), gamma, rtol=1e-14)
    for coefficients in (feature, noise):  # y and ε each ±1, both signs equally often
        signs = np.sign(coefficients.sum(axis=1))
        assert sorted(set(signs)) == [-1.0, 1.0] and signs.sum() == 0
    assert np.all(np.argmax(np.abs(feature), axis=1) != np.argmax(np.abs(noise), axis=1))  # k ≠ k'
    assert np.all(x[:, 3:] == 0.0)


def test_the_lookup_search_keeps_integer_values_within_2k_plus_1():
    config = DataConfig(K=2, P=4, d=8, alpha=UniformRange(1, 2), gamma=UniformRange(1, 2))
    rng = np.random.default_rng(3)
    signals = make_signals(config, rng)
    data = sample(config, signals, 3000, rng)
    found = search_aligned_lookup(data, signals, [0.0], np.random.default_rng(4))
    assert np.all(found.table == np.round(found.table))
    assert np.abs(found.table).max() <= 2 * config.K + 1
