"""Exact routing probabilities (lab.chen2022.routing): quadrature oracles, closed forms, Jacobians, MC."""

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy import integrate, special, stats

from checks.strategies.routing import gate_vectors
from lab.chen2022.routing import (
    Gaussian,
    Gumbel,
    Uniform,
    routing_frequencies,
    routing_jacobian,
    routing_probabilities,
)
from lab.chen2022.routing_exact import uniform_routing
from lab.chen2022.routing_tightness import exact_constant, local_constant, search_constant, self_sensitivity
from lab.kernels import routed as kernels

uniforms = st.builds(lambda low, width: Uniform(low, low + width), st.floats(-3.0, 3.0), st.floats(0.05, 4.0))
gaussians = st.builds(Gaussian, st.floats(0.05, 4.0))
gumbels = st.builds(Gumbel, st.floats(0.05, 4.0))
noises = st.one_of(uniforms, gaussians, gumbels)


@st.composite
def noise_and_gates(draw, noise_strategy=noises, M=None):
    noise = draw(noise_strategy)
    return noise, draw(gate_vectors(M=M, scale=noise.spread))


def scipy_distribution(noise):
    if isinstance(noise, Uniform):
        return stats.uniform(noise.low, noise.width)
    if isinstance(noise, Gaussian):
        return stats.norm(0.0, noise.scale)
    return stats.gumbel_r(0.0, noise.scale)


def density_and_cdf(noise):
    """Plain closed-form f and F of the noise (fast scalars for quad; checked against scipy.stats)."""
    if isinstance(noise, Uniform):
        return (
            lambda z: ((z >= noise.low) & (z <= noise.high)) * noise.kappa,
            lambda z: np.clip((z - noise.low) / noise.width, 0.0, 1.0),
        )
    s = noise.scale
    if isinstance(noise, Gaussian):
        return lambda z: np.exp(-0.5 * (z / s) ** 2) * noise.kappa, lambda z: special.ndtr(z / s)
    return (
        lambda z: np.exp(-z / s - np.exp(-z / s)) / s,
        lambda z: np.exp(-np.exp(-z / s)),
    )


def quad_probabilities(h, noise):
    """Independent oracle: p_m = ∫ f(t − h_m) Π_{j≠m} F(t − h_j) dt by scipy.integrate.quad."""
    pdf, cdf = density_and_cdf(noise)
    s = noise.spread
    if isinstance(noise, Uniform):
        lo, hi = h.max() + noise.low, h.max() + noise.high
        points = [x for x in sorted({*(h + noise.low), *(h + noise.high)}) if lo < x < hi]
    else:
        lo, hi = h.max() - 12 * s, h.max() + 40 * s
        points = list(h.max() + s * np.linspace(-6, 6, 13))
    out = []
    for m in range(h.size):
        others = np.delete(h, m)

        def f(t, m=m, others=others):
            return pdf(t - h[m]) * np.prod(cdf(t - others))

        value, _ = integrate.quad(f, lo, hi, points=points or None, limit=500, epsabs=1e-15, epsrel=1e-14)
        out.append(value)
    return np.array(out)


def test_oracle_densities_match_scipy_stats():
    z = np.linspace(-3, 5, 41)
    for noise in (Uniform(-1, 2), Gaussian(0.7), Gumbel(1.3)):
        pdf, cdf = density_and_cdf(noise)
        inside = np.abs(z - noise.low) > 1e-9 if isinstance(noise, Uniform) else slice(None)
        np.testing.assert_allclose(pdf(z)[inside], scipy_distribution(noise).pdf(z)[inside], rtol=1e-12)
        np.testing.assert_allclose(cdf(z), scipy_distribution(noise).cdf(z), rtol=1e-12, atol=1e-300)


# ---------------------------------------------------------------- exact values against oracles


@given(noise_and_gates(uniforms, M=st.integers(1, 7)))
def test_uniform_matches_quadrature(case):
    noise, h = case
    p = routing_probabilities(h, noise)
    assert np.abs(p - quad_probabilities(h, noise)).max() <= 1e-12
    assert abs(p.sum() - 1.0) <= 1e-12


@given(noise_and_gates(gaussians, M=st.integers(1, 5)))
def test_gaussian_matches_quadrature(case):
    noise, h = case
    p = routing_probabilities(h, noise)
    assert np.abs(p - quad_probabilities(h, noise)).max() <= 1e-12


@given(noise_and_gates(gumbels, M=st.integers(1, 5)))
def test_gumbel_max_identity_matches_the_integral(case):
    """softmax(h/β) is the integral ∫ f Π F for Gumbel noise: the general formula's built-in oracle."""
    noise, h = case
    assert np.abs(routing_probabilities(h, noise) - quad_probabilities(h, noise)).max() <= 1e-12


ULP_BELOW_1 = 2.0**-53  # spacing of doubles in [1/2, 1)


# Fuzz counterexamples of the former single bound |p − Φ| <= 1e-15. Near 1 the quadrature lost
# digits: 2.7e-15 (24 ulp) at gap −7.5675 (p ≈ 1 − 4e-8) and 1.3e-15 at gap −3.15625, where a
# double holds Φ to 1 ulp; a clear winner is now 1 − the other's p (routing_exact._complement_leader),
# exact there. Between 1/2 and 15/16 the quadrature's own accuracy (~2e-15 relative) is the limit:
# 1.7e-15 (15 ulp) at gap −1.41466.
@example(gap=-7.567468494353289, scale=0.4909444958586775)
@example(gap=-3.15625, scale=1.0)
@example(gap=-1.414661977521435, scale=3.383987591404121)
@given(st.floats(-40.0, 40.0), st.floats(0.05, 4.0))
def test_gaussian_two_experts_closed_form(gap, scale):
    """M = 2: p_2 = Φ((h_2 − h_1)/(s√2)), also far in the tail (relative accuracy down to 1e-300)."""
    p = routing_probabilities([gap * scale, 0.0], Gaussian(scale))
    want = special.ndtr(-gap / math.sqrt(2.0))
    assert abs(p[1] - want) <= 36 * ULP_BELOW_1  # 4e-15: the quadrature's accuracy (GAUSSIAN_TOL 1e-14)
    if want >= 15 / 16:  # a clear winner: within a few ulp of the correctly rounded Φ
        assert abs(p[1] - want) <= 4 * ULP_BELOW_1
    if want > 1e-300:
        assert abs(p[1] - want) <= 1e-11 * want
    assert abs(p.sum() - 1.0) <= 36 * ULP_BELOW_1


@given(noise_and_gates())
def test_rows_are_distributions_for_up_to_64_experts(case):
    noise, h = case
    p = routing_probabilities(h, noise)
    assert p.shape == h.shape and np.all(p >= 0) and np.all(p <= 1)
    assert abs(p.sum() - 1.0) <= 1e-12


@given(noise_and_gates(), st.data())
def test_permutation_and_shift(case, data):
    noise, h = case
    perm = np.asarray(data.draw(st.permutations(range(h.size))))
    shift = data.draw(st.floats(-10.0, 10.0)) * noise.spread
    p = routing_probabilities(h, noise)
    np.testing.assert_allclose(routing_probabilities(h[perm], noise), p[perm], rtol=0, atol=1e-13)
    np.testing.assert_allclose(routing_probabilities(h + shift, noise), p, rtol=0, atol=1e-12)


@pytest.mark.parametrize("noise", [Uniform(0, 1), Gaussian(0.7), Gumbel(0.4)], ids=repr)
def test_batch_equals_rows_and_ties_are_uniform(noise):
    rng = np.random.default_rng(3)
    for M in (1, 2, 5, 64):
        h = rng.normal(size=(4, M))
        batch = routing_probabilities(h, noise)
        rows = np.stack([routing_probabilities(row, noise) for row in h])
        np.testing.assert_allclose(batch, rows, rtol=0, atol=1e-14)  # a batch shares one window
        np.testing.assert_allclose(routing_probabilities(np.full(M, 2.5), noise), 1.0 / M, rtol=0, atol=1e-14)


def test_uniform_gaps_give_exact_zeros_and_huge_values_stay_finite():
    p = routing_probabilities([0.0, -1.0, -0.5, -1e300, -1.0 - 1e-12], Uniform(0, 1))
    assert p[1] == 0.0 and p[3] == 0.0 and p[4] == 0.0 and p[2] > 0
    assert routing_probabilities([1e12, 1e12 - 1.0], Uniform(0, 1)).tolist() == [1.0, 0.0]
    np.testing.assert_allclose(routing_probabilities([1e12, 1e12 - 0.5], Uniform(0, 1)), [0.875, 0.125])
    for noise in (Uniform(0, 1), Gaussian(1.0), Gumbel(1.0)):
        p = routing_probabilities([1e308, -1e308, 0.0], noise)
        assert np.all(np.isfinite(p)) and p[1:].tolist() == [0.0, 0.0] and abs(p[0] - 1.0) <= 1e-15
    assert routing_probabilities([3.0], Gaussian(2.0)).tolist() == [1.0]


def test_non_identical_uniform_supports():
    """Expert 0 on [0, 1/2], expert 1 on [0, 1] at equal gates: p_0 = P(r_1 < r_0) = E r_0 = 1/4."""
    p, _ = uniform_routing(np.zeros((1, 2)), np.array([0.5, 1.0]))
    np.testing.assert_allclose(p[0], [0.25, 0.75], rtol=0, atol=1e-15)


def test_kappa_is_the_density_maximum():
    for noise in (Uniform(-1, 3), Gaussian(0.3), Gumbel(2.0)):
        dist = scipy_distribution(noise)
        grid = np.linspace(-5 * noise.spread, 5 * noise.spread, 200001)
        assert dist.pdf(grid).max() == pytest.approx(noise.kappa, rel=1e-6)
    assert Uniform(-1, 3).kappa == 0.25
    assert Gaussian(2.0).kappa == 1 / (2 * math.sqrt(2 * math.pi))
    assert Gumbel(0.5).kappa == 2 / math.e


# ---------------------------------------------------------------- Jacobian


@given(noise_and_gates(M=st.integers(1, 9)), st.integers(0, 2**32 - 1))
def test_jacobian_matches_finite_differences(case, seed):
    """Full matrix and a random direction (as jax check_grads), central differences."""
    noise, h = case
    M = h.size
    J = routing_jacobian(h, noise)
    assert J.shape == (M, M)
    assert np.abs(J.sum(axis=1)).max() <= 1e-12 * noise.kappa
    assert np.all(J - np.diag(np.diag(J)) <= 1e-15 * noise.kappa)
    step = 1e-6 * noise.spread

    def central(u):
        upper, lower = routing_probabilities(h + step * u, noise), routing_probabilities(h - step * u, noise)
        return (upper - lower) / (2 * step)

    fd = np.stack([central(e) for e in np.eye(M)], axis=1)
    # the uniform Jacobian has kinks (C¹ but not C²), so central differences are first-order there
    tol = (5e-5 if isinstance(noise, Uniform) else 1e-7) * noise.kappa
    assert np.abs(J - fd).max() <= tol
    u = np.random.default_rng(seed).uniform(-1, 1, M)
    assert np.abs(J @ u - central(u)).max() <= tol * M


def test_jacobian_batch_and_closed_forms():
    h = np.random.default_rng(0).normal(size=(3, 6))
    for noise in (Uniform(0, 2), Gaussian(1.5), Gumbel(0.5)):
        batch = routing_jacobian(h, noise)
        assert batch.shape == (3, 6, 6)
        np.testing.assert_allclose(batch[1], routing_jacobian(h[1], noise), rtol=0, atol=1e-15)
    # M = 2 uniform at a tie: ∂p_1/∂h_1 = κ; Gaussian: φ(0)/(s√2)
    np.testing.assert_allclose(routing_jacobian([0.0, 0.0], Uniform(0, 2)), [[0.5, -0.5], [-0.5, 0.5]])
    g = 1 / (1.5 * math.sqrt(2) * math.sqrt(2 * math.pi))
    np.testing.assert_allclose(routing_jacobian([0.0, 0.0], Gaussian(1.5)), [[g, -g], [-g, g]], rtol=1e-13)
    assert routing_jacobian([4.0], Uniform(0, 1)).tolist() == [[0.0]]


# ---------------------------------------------------------------- Monte Carlo cross-check


@pytest.mark.parametrize("noise", [Uniform(-0.5, 1.5), Gaussian(0.8), Gumbel(0.6)], ids=repr)
@pytest.mark.parametrize("M", [3, 64])
def test_monte_carlo_intervals_cover_the_exact_values(noise, M):
    h = np.random.default_rng(M).normal(0.0, noise.spread, M)
    draws = 2_000_000 // M
    freq = routing_frequencies(h, noise, draws, seed=17, level=0.999)
    assert freq.counts.sum() == draws and freq.draws == draws and abs(freq.frequencies.sum() - 1) < 1e-12
    assert np.all(freq.covers(routing_probabilities(h, noise))), (freq.low, freq.high)
    code, a, b = noise.kernel_args()
    assert np.array_equal(freq.counts, kernels.routing_counts(h, draws, 17, code, a, b))


# ----------------------------------------------- sharpened Lemma 5.1 (lab.chen2022.routing_tightness)


@given(noise_and_gates())
def test_local_constant_never_exceeds_two_kappa(case):
    """The theorem of lab.chen2022.routing_tightness: max_m ‖∇p_m(h)‖₁ ≤ 2κ at every h."""
    noise, h = case
    assert local_constant(h, noise) <= 2 * noise.kappa * (1 + 1e-12)


def _check_self_sensitivity(noise, h):
    x = h / noise.spread
    value, grad = self_sensitivity(x, noise)
    assert value == pytest.approx(routing_jacobian(h, noise)[0, 0] * noise.spread, abs=1e-12)
    step = 1e-7
    fd = [
        (self_sensitivity(x + step * e, noise)[0] - self_sensitivity(x - step * e, noise)[0]) / (2 * step)
        for e in np.eye(x.size)
    ]
    assert np.abs(grad - fd).max() <= 1e-6


@given(noise_and_gates(st.one_of(gaussians, gumbels), M=st.integers(2, 9)))
def test_self_sensitivity_is_the_jacobian_diagonal_with_its_gradient(case):
    _check_self_sensitivity(*case)


def test_uniform_self_sensitivity_away_from_kinks():
    """The uniform objective is piecewise polynomial; random continuous gates avoid its kinks."""
    rng = np.random.default_rng(5)
    for M in (2, 3, 6, 9):
        for _ in range(5):
            _check_self_sensitivity(Uniform(0, 1.5), rng.uniform(-1.5, 1.5, M))


def test_search_reaches_the_exact_constants():
    for noise in (Uniform(0, 2), Gumbel(0.5)):
        found = search_constant(noise, 3, starts=2, seed=0)
        assert found.constant == pytest.approx(exact_constant(noise, 3), rel=1e-9)
        assert local_constant(found.h, noise) == pytest.approx(found.constant)
    gauss = search_constant(Gaussian(1.0), 2, starts=2, seed=0)
    assert gauss.constant == pytest.approx(math.sqrt(2) * Gaussian(1.0).kappa, rel=1e-9)
    assert search_constant(Gaussian(1.0), 1).constant == 0.0 == exact_constant(Uniform(0, 1), 1)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda: Uniform(1.0, 0.0), ValueError, "high must be > low"),
        (lambda: Uniform(0.0, math.inf), ValueError, "high"),
        (lambda: Uniform(-1e308, 1e308), ValueError, "finite width"),
        (lambda: Uniform("0", 1.0), TypeError, "low"),
        (lambda: Gaussian(0.0), ValueError, "scale"),
        (lambda: Gaussian(math.nan), ValueError, "scale"),
        (lambda: Gumbel(-1.0), ValueError, "scale"),
        (lambda: Gumbel(True), TypeError, "scale"),
        (lambda: routing_probabilities([0.0, math.nan], Uniform()), ValueError, "h must be finite"),
        (lambda: routing_probabilities([[0.0, math.inf]], Gaussian()), ValueError, "h must be finite"),
        (lambda: routing_probabilities(np.zeros((2, 2, 2)), Gumbel()), ValueError, "shape"),
        (lambda: routing_probabilities(np.zeros(0), Uniform()), ValueError, "shape"),
        (lambda: routing_probabilities(np.zeros((0, 3)), Uniform()), ValueError, "shape"),
        (lambda: routing_probabilities(["a", "b"], Uniform()), TypeError, "h must be"),
        (lambda: routing_probabilities([1j, 0], Uniform()), TypeError, "h must be"),
        (lambda: routing_probabilities([0.0, 1.0], "uniform"), TypeError, "noise"),
        (lambda: routing_jacobian([0.0, 1.0], None), TypeError, "noise"),
        (lambda: routing_frequencies([0.0, 1.0], Uniform(), 0, 1), ValueError, "draws"),
        (lambda: routing_frequencies([0.0, 1.0], Uniform(), 10, -1), ValueError, "seed"),
        (lambda: routing_frequencies([0.0, 1.0], Uniform(), 10, 1, level=1.0), ValueError, "level"),
        (lambda: routing_frequencies([0.0, 1.0], Uniform(), 10, 1, level=0.0), ValueError, "level"),
        (lambda: routing_frequencies(np.zeros((2, 2)), Uniform(), 10, 1), ValueError, "one gate vector"),
        (lambda: search_constant(Uniform(), 0), ValueError, "M"),
        (lambda: search_constant(Uniform(), 2, starts=0), ValueError, "starts"),
    ],
)
def test_bad_input_names_the_parameter(make, error, match):
    with pytest.raises(error, match=match):
        make()
