"""Exact p(h) for M = 64 per h vector, and Monte-Carlo perturbed argmax throughput (kernel beside twin)."""

import numpy as np
import pytest
from scipy import integrate, special

from lab.chen2022.routing import Gaussian, Uniform, routing_probabilities
from lab.core.stats import clopper_pearson
from lab.kernels import backend

M_EXACT = 64
M_MC, DRAWS = 16, 200_000


def _quad_top(h, noise, experts):
    """scipy.integrate.quad of p_m = ∫ f(t − h_m) Π_{j≠m} F(t − h_j) dt for a few experts m."""
    if isinstance(noise, Uniform):
        pdf = lambda z: ((z >= 0) & (z <= 1)) / 1.0  # noqa: E731
        cdf = lambda z: np.clip(z, 0.0, 1.0)  # noqa: E731
        lo, hi = h.max(), h.max() + 1.0
        points = [x for x in sorted({*h, *(h + 1)}) if lo < x < hi]
    else:
        pdf = lambda z: np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)  # noqa: E731
        cdf = special.ndtr
        lo, hi = h.max() - 12.0, h.max() + 12.0
        points = list(np.linspace(lo + 4, hi - 4, 17))
    out = []
    for m in experts:
        others = np.delete(h, m)
        value, _ = integrate.quad(
            lambda t, m=m, others=others: pdf(t - h[m]) * np.prod(cdf(t - others)),
            lo,
            hi,
            points=points[:40],
            limit=500,
            epsabs=1e-15,
        )
        out.append(value)
    return np.array(out)


@pytest.mark.parametrize("noise", [Uniform(0.0, 1.0), Gaussian(1.0)], ids=["uniform", "gaussian"])
def test_exact_probabilities_64_experts(benchmark, noise):
    benchmark.group = "routing_probabilities M=64 (one h vector)"
    h = np.random.default_rng(0).normal(0.0, 0.5, M_EXACT)
    routing_probabilities(h, noise)  # warm caches (Gauss–Legendre nodes)
    p = benchmark(routing_probabilities, h, noise)
    assert abs(p.sum() - 1.0) <= 1e-12 and np.all(p >= 0)
    top = np.argsort(-h)[:3]
    np.testing.assert_allclose(p[top], _quad_top(h, noise, top), rtol=0, atol=1e-12)
    benchmark.extra_info["M"] = M_EXACT
    benchmark.extra_info["noise"] = repr(noise)


@pytest.fixture(scope="module")
def mc_problem():
    h = np.random.default_rng(1).normal(0.0, 0.3, M_MC)
    noise = Uniform(0.0, 1.0)
    code, a, b = noise.kernel_args()
    return {"h": h, "args": (DRAWS, 7, code, a, b), "p": routing_probabilities(h, noise)}


@pytest.mark.parametrize("impl", ["numba", "numpy"])
def test_perturbed_argmax_throughput(benchmark, mc_problem, impl):
    benchmark.group = "routing_counts (Monte-Carlo perturbed argmax)"
    fn, twin = backend(impl).routing_counts, backend("numpy").routing_counts
    h, args = mc_problem["h"], mc_problem["args"]
    fn(h, *args)  # compile (Numba) before timing
    counts = benchmark(fn, h, *args)
    assert counts.sum() == DRAWS
    np.testing.assert_array_equal(counts, twin(h, *args))  # the same counter-based noise
    level = 1 - 0.001 / M_MC  # every expert's exact p inside its interval, jointly at 99.9 %
    bounds = np.array([clopper_pearson(int(k), DRAWS, level) for k in counts])
    assert np.all((bounds[:, 0] <= mc_problem["p"]) & (mc_problem["p"] <= bounds[:, 1]))
    benchmark.extra_info["draws_x_experts"] = DRAWS * M_MC
    if benchmark.stats is not None:
        benchmark.extra_info["draws_x_experts_per_second"] = DRAWS * M_MC / benchmark.stats.stats.mean
