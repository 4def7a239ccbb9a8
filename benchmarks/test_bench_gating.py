"""Noisy top-k gate + smooth load estimator on 16,000 × 64 experts: Numba kernel beside its NumPy twin."""

import numpy as np
import pytest

from lab.shazeer2017 import gating

N, M, K = 16_000, 64, 2


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    clean, raw_noise, xi = rng.normal(size=(N, M)), rng.normal(size=(N, M)), rng.normal(size=(N, M))
    G, P = gating.noisy_top_k_gate_and_load_numpy(clean, raw_noise, xi, K)
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
