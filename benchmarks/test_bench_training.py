"""One step of Algorithm 1 at setting 1 (n = 16,000, M = 8, J = 16) beside its dense NumPy twin.

Target (issue 5): ≤ 13 ms per step on the 2-core machine with the Numba kernels. JIT compilation
is never timed (warm-up rounds), and both steps are checked against each other.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from lab.chen2022 import data, training
from lab.chen2022.plan import resolve

N, M, J = 16_000, 8, 16
SEED = 12345
FLOPS = 4 * N * 4 * J * 50  # routed forward + backward: 2 FLOPs per MAC, P = 4 patches, d = 50


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    config = data.setting(1)
    signals = data.make_signals(config, rng)
    cfg = training.TrainConfig(M=M, J=J)
    batch = training.prepare(data.sample(config, signals, N, rng), cfg)
    W = training.init_experts(cfg, config.d, rng)
    Theta = rng.normal(0.0, 0.3, size=(config.d, M))  # a router past its first steps: uneven routing
    return batch, W, Theta, cfg


def _step(benchmark, problem, backend, rounds):
    batch, W, Theta, cfg = problem
    plan = resolve(dataclasses.replace(cfg, backend=backend))  # once per run, as in `training.train`
    with threadpool_limits(1, "blas"):  # as inside `training.train`
        return benchmark.pedantic(
            training.algorithm1_step, args=(batch, W, Theta, SEED, plan), rounds=rounds, warmup_rounds=2
        )


@pytest.mark.benchmark(group="algorithm1-step")
def test_step_numba(benchmark, problem, record_rate):
    W_next, Theta_next, step = _step(benchmark, problem, "numba", rounds=30)
    record_rate("algorithm1_step", FLOPS)
    batch, W, Theta, cfg = problem
    ref_W, ref_Theta, ref = training.algorithm1_step(
        batch, W, Theta, SEED, resolve(dataclasses.replace(cfg, backend="numpy"))
    )
    np.testing.assert_array_equal(step.routes, ref.routes)
    np.testing.assert_allclose(W_next, ref_W, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(Theta_next, ref_Theta, rtol=1e-9, atol=1e-15)


@pytest.mark.benchmark(group="algorithm1-step")
def test_step_numpy_twin(benchmark, problem, record_rate):
    W_next, Theta_next, step = _step(benchmark, problem, "numpy", rounds=3)
    record_rate("algorithm1_step_numpy", FLOPS)
    _batch, W, Theta, _ = problem
    moved = np.linalg.norm((W_next - W).reshape(M, -1), axis=1)
    np.testing.assert_allclose(moved[np.bincount(step.routes, minlength=M) > 0], 0.001, rtol=1e-9)
    np.testing.assert_allclose(Theta_next.sum(axis=1), Theta.sum(axis=1), atol=1e-12)  # Lemma E.1
