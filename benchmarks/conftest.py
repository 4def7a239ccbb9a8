"""Benchmark helpers: the machine's 1-thread DGEMM rate, measured once per run, and FLOP-rate bookkeeping."""

import time

import numpy as np
import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(scope="session")
def dgemm_gflops() -> float:
    """Practical peak: best of 7 one-thread DGEMMs of 768 × 768 matrices, in GFLOP/s."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(768, 768)), rng.normal(size=(768, 768))
    with threadpool_limits(1):
        a @ b
        best = min(_timed(lambda: a @ b) for _ in range(7))
    return 2 * 768**3 / best / 1e9


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


@pytest.fixture
def record_rate(benchmark, dgemm_gflops):
    """Call after `benchmark(...)`: store kernel name, GFLOP/s and fraction of DGEMM in extra_info."""

    def record(kernel: str, flops: float) -> None:
        benchmark.extra_info["kernel"] = kernel
        benchmark.extra_info["flops"] = flops
        benchmark.extra_info["dgemm_gflops"] = dgemm_gflops
        if benchmark.stats is not None:  # absent under --benchmark-disable
            rate = flops / benchmark.stats.stats.min / 1e9
            benchmark.extra_info["gflops"] = rate
            benchmark.extra_info["fraction_of_dgemm"] = rate / dgemm_gflops

    return record
