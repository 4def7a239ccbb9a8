"""Noisy top-k gating kernels (Shazeer et al. 2017) beside their NumPy twins: gate/load, C2 Monte Carlo."""

import numpy as np
import pytest

from lab import kernels
from lab.shazeer2017 import gating

N, M, K = 16_000, 64, 2
MC_ROWS, MC_EXPERTS, MC_DRAWS = 8, 16, 4000


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    clean, raw_noise, xi = rng.normal(size=(N, M)), rng.normal(size=(N, M)), rng.normal(size=(N, M))
    G, P = kernels.backend("numpy").noisy_top_k_gate_and_load(clean, raw_noise, xi, K)
    return {"clean": clean, "raw_noise": raw_noise, "xi": xi, "G": G, "P": P}


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_gate_and_load(benchmark, problem, backend):
    benchmark.group = "noisy_top_k_gate_and_load"
    p = problem

    def run():
        return gating.gate_and_load(p["clean"], p["raw_noise"], p["xi"], K, backend=backend)

    run()  # compile (Numba) before timing
    G, P = benchmark(run)
    np.testing.assert_array_equal(G > 0, p["G"] > 0)
    assert np.all(np.count_nonzero(G, axis=1) == K)
    np.testing.assert_allclose(G, p["G"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(P, p["P"], rtol=1e-12, atol=1e-15)
    benchmark.extra_info["kernel"] = "noisy_top_k_gate_and_load"
    benchmark.extra_info["rows_x_experts"] = N * M


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_top_k_membership_counts(benchmark, backend):
    benchmark.group = "top_k_membership_counts"
    rng = np.random.default_rng(1)
    clean, xi = rng.normal(size=(MC_ROWS, MC_EXPERTS)), rng.normal(size=(MC_ROWS, MC_EXPERTS))
    scale = 0.5 + rng.random((MC_ROWS, MC_EXPERTS))
    args = (clean, scale, xi, K, MC_DRAWS, 3, True)

    def run():
        return gating.top_k_membership_counts(*args, backend=backend)

    run()  # compile (Numba) before timing
    counts = benchmark.pedantic(run, rounds=3, iterations=1)
    np.testing.assert_array_equal(counts, kernels.backend("numba").top_k_membership_counts(*args))
    assert np.all(np.abs(counts.sum(axis=1) - K * MC_DRAWS) < 5 * np.sqrt(MC_EXPERTS * MC_DRAWS * 0.25))
    benchmark.extra_info["kernel"] = "top_k_membership_counts"
    benchmark.extra_info["draws_x_experts_squared"] = MC_ROWS * MC_EXPERTS * MC_DRAWS * MC_EXPERTS
