"""lab.chen2022.linear_optimum: the linear CNN's exact accuracy (Def. 3.1) against samples; classes; input."""

import numpy as np
import pytest

from lab.chen2022.data import DataConfig, UniformRange, setting
from lab.chen2022.linear_optimum import linear_accuracy, noise_scale, sampled_correct, search_optimum
from lab.core.stats import clopper_pearson

SMALL = DataConfig(K=2, P=5, d=8, alpha=UniformRange(1.0, 2.0), gamma=UniformRange(1.0, 2.0), sigma_p=2.0)
STRICT = 1.0 - 1e-6  # a fixed-seed test never trips on chance; the formula's errors are far larger


@pytest.mark.parametrize("bias", [0.0, -0.7])
@pytest.mark.parametrize("config", [setting(3), SMALL], ids=["setting-3", "noisy-small"])
def test_the_exact_accuracy_lies_in_the_interval_of_sampled_predictions(config, bias):
    """At a fixed u (and b) the quadrature accuracy lies in the CI of 60,000 predictions on sampled data."""
    rng = np.random.default_rng(11)
    coords = rng.normal(size=2 * config.K)
    right = sampled_correct(coords, config, bias, 60_000, rng)
    low, high = clopper_pearson(right, 60_000, STRICT)
    assert low <= linear_accuracy(coords, config, bias) <= high


def test_the_noise_along_the_signals_counts():
    """With σ_p = 2, P − 3 = 2 noise patches in d = 8 the noise's part along u moves the accuracy by more
    than the sampled interval: the formula without it (noise projected off the span) is refuted."""
    rng = np.random.default_rng(5)
    coords = np.array([1.0, 0.2, 0.0, 0.6])
    right = sampled_correct(coords, SMALL, 0.0, 60_000, rng)
    low, high = clopper_pearson(right, 60_000, STRICT)
    assert not low <= linear_accuracy(coords, SMALL, noise="projected") <= high
    assert noise_scale(coords, SMALL) == pytest.approx(np.sqrt(2 * 4 / 8 * np.sum(coords**2)))


def test_the_accuracy_is_scale_free_and_a_centre_only_u_is_at_chance():
    config = setting(3)
    coords = np.random.default_rng(2).normal(size=8)
    assert linear_accuracy(3.5 * coords, config, 3.5 * 0.4) == pytest.approx(
        linear_accuracy(coords, config, 0.4)
    )
    assert linear_accuracy(np.r_[np.zeros(4), np.ones(4)], config) == pytest.approx(0.5, abs=1e-12)


def test_u_zero_without_noise_predicts_the_sign_of_b_and_errs_on_half():
    """No noise and u = 0: f = b, right exactly when y b > 0 (probability 1/2), and never for b = 0."""
    zero = np.zeros(8)
    assert linear_accuracy(zero, setting(3), 1.0) == pytest.approx(0.5, abs=1e-12)
    assert linear_accuracy(zero, setting(3), 0.0, noise="projected") == 0.0


def test_the_bias_class_contains_the_bias_free_class():
    """b = 0 is the bias-free accuracy; the bias search (started from the bias-free optimum) is no worse."""
    coords = np.random.default_rng(4).normal(size=2 * SMALL.K)
    assert linear_accuracy(coords, SMALL, 0.0) == linear_accuracy(coords, SMALL)
    free = search_optimum(SMALL, False, 0, starts=2, popsize=3, maxiter=5)
    biased = search_optimum(SMALL, True, 0, starts=2, popsize=3, maxiter=5, start=free.coords)
    assert free.bias == 0.0
    assert biased.accuracy >= free.accuracy - 1e-12
    assert free.accuracy == pytest.approx(max(free.evolution_accuracy, free.local_accuracy))
    assert np.linalg.norm(free.coords) == pytest.approx(1.0)


def test_the_search_is_reproducible():
    first, again = (search_optimum(SMALL, True, 7, starts=1, popsize=2, maxiter=2) for _ in range(2))
    assert first.accuracy == again.accuracy and np.array_equal(first.coords, again.coords)


@pytest.mark.parametrize(
    ("call", "names"),
    [
        (lambda: linear_accuracy(np.zeros(3), SMALL), "coords"),
        (lambda: linear_accuracy(np.zeros(4), SMALL, nodes=0), "nodes"),
        (lambda: linear_accuracy(np.zeros(4), SMALL, bias=np.nan), "bias"),
        (lambda: linear_accuracy(np.zeros(4), SMALL, noise="none"), "noise"),
        (lambda: search_optimum(SMALL, 1, 0, 1, 2, 2), "with_bias"),
        (lambda: search_optimum(SMALL, True, 0, 1, 2, 2, start=np.zeros(5)), "start"),
        (lambda: sampled_correct(np.zeros(4), SMALL, 0.0, 0, np.random.default_rng(0)), "n"),
        (lambda: sampled_correct(np.zeros(4), SMALL, 0.0, 5, 0), "rng"),
    ],
)
def test_invalid_input_names_the_argument(call, names):
    with pytest.raises((ValueError, TypeError), match=f"^{names}"):
        call()
