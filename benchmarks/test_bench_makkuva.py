"""Makkuva et al. benchmarks: one SGD step of L4 (batch 1024), one full-sample L_log gradient (n = 10⁵).

L4: the Numba kernel beside its NumPy twin (same group). L_log: NumPy only — a single-pass
Numba kernel was measured slower than NumPy's vectorised exp, so there is no kernel to compare.
Each benchmark warms up first and asserts its result against an independent computation.
"""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from lab.makkuva2020.gated_regression import GaussianInput, paper_model, sample
from lab.makkuva2020.losses import (
    L4Regularisers,
    l_log,
    l_log_gradient,
    output_transforms,
    sample_l4_gradient,
)

REG = L4Regularisers(0.05, 4.0, 2.0)


@pytest.fixture(scope="module")
def blas_one_thread():
    with threadpool_limits(limits=1, user_api="blas"):
        yield


@pytest.fixture(scope="module")
def batch():
    model = paper_model(3)
    rng = np.random.default_rng(0)
    s = sample(model, GaussianInput(10), 1024, rng)
    A = rng.standard_normal((3, 10)) / np.sqrt(10)
    tr = output_transforms(model.sigma)
    reference = sample_l4_gradient(A, s.x, s.y, tr, REG, "numpy")[1]
    return A, s.x, s.y, tr, reference


@pytest.mark.benchmark(group="makkuva-l4-sgd-step-1024")
@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_l4_sgd_step(benchmark, record_rate, blas_one_thread, batch, backend):
    A, x, y, tr, reference = batch

    def step():
        return A - 0.006 * sample_l4_gradient(A, x, y, tr, REG, backend)[1]

    new = benchmark.pedantic(step, rounds=50, iterations=1, warmup_rounds=3)
    assert np.allclose(new, A - 0.006 * reference, rtol=1e-12, atol=1e-12)
    k, d = A.shape
    record_rate("l4_gradient", 10.0 * k * d * x.shape[0])  # ≈ 10 kd flops per sample


@pytest.mark.benchmark(group="makkuva-l-log-gradient-1e5")
def test_l_log_full_gradient(benchmark, record_rate, blas_one_thread):
    model = paper_model(3)
    rng = np.random.default_rng(1)
    s = sample(model, GaussianInput(10), 100_000, rng)
    W = rng.standard_normal((2, 10)) * 0.5
    value, grad = benchmark.pedantic(
        lambda: l_log_gradient(W, model.A, s.x, s.y, model.sigma), rounds=10, iterations=1, warmup_rounds=2
    )
    assert value == pytest.approx(l_log(W, model.A, s.x, s.y, model.sigma), rel=1e-12)
    E = rng.standard_normal((2, 10))
    h = 1e-6
    fd = (
        l_log(W + h * E, model.A, s.x, s.y, model.sigma) - l_log(W - h * E, model.A, s.x, s.y, model.sigma)
    ) / (2 * h)
    assert np.sum(grad * E) == pytest.approx(fd, rel=1e-6)
    record_rate("makkuva_losses.l_log_gradient (NumPy, no kernel)", 6.0 * 3 * 10 * s.x.shape[0])
