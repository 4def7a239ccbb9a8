"""Structured (Def. 3.1) beside dense: Algorithm 1's step, the 512-filter single CNN, the noise-patch kernel.

Targets: structured step ≤ 30 % of the dense step and ≤ 3 ms on 2 cores (setting 1, n = 16,000,
float64); 512-filter single CNN structured ≤ 30 % of dense; the noise-patch kernel at ≥ 60 % of the
one-thread DGEMM rate of the same shape, per core (SGEMM for float32). They are targets, not
assertions: each benchmark asserts only that its answer is right. Ratios mean something only within
one run (the machine is shared); `extra_info` records the FLOPs, the kernel's rate, the GEMM rates,
and what bounds a target: the structured step's ratio to dense with its expert pass taken off
(`ratio_to_dense_without_experts`) and the ratio of the two steps' dense products, the step's ratio at
equal FLOP rates (`flop_ratio_to_dense`), and a single CNN's pass against one-thread DGEMM of its noise
products."""

from __future__ import annotations

import dataclasses
import time

import numba
import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from lab.chen2022 import data, training
from lab.chen2022.baselines import single_config
from lab.chen2022.plan import resolve
from lab.kernels import backend

N, M, J, D, Q = 16_000, 8, 16, 50, 1
SINGLE_J = 512
SEED = 12345
P = data.setting(1).P  # patches of Def. 3.1 at setting 1
NOISE_FLOPS = 2 * 2 * N * Q * J * D  # forward and backward of the noise patches, 2 FLOPs per MAC
ROUTER_FLOPS = 2 * 2 * N * D * M  # h = sΘ and ∇Θ = sᵀ∂h, the same in both paths
# the step's dense products, structured ÷ dense (the signal patches' products with the 2K signals,
# 4·M·2K·J·d per step, are left out): the ratio of the two steps at equal FLOP rates
FLOP_RATIO = (NOISE_FLOPS + ROUTER_FLOPS) / (NOISE_FLOPS * P // Q + ROUTER_FLOPS)


def _best_interleaved(calls, rounds):
    """The minimum time (s) of each callable over `rounds` rounds, the calls alternating within a round.

    On a shared machine the load drifts within a run; alternating the calls lets it cancel out of their
    ratios."""
    best = [np.inf] * len(calls)
    for _ in range(rounds):
        for which, fn in enumerate(calls):
            start = time.perf_counter()
            fn()
            best[which] = min(best[which], time.perf_counter() - start)
    return best


def _record_ratio(benchmark, key, candidate_s, reference_s):
    """extra_info[key] = candidate ÷ reference, and both times in ms under `key_ms`."""
    benchmark.extra_info[key] = candidate_s / reference_s
    benchmark.extra_info[f"{key}_ms"] = [1e3 * candidate_s, 1e3 * reference_s]


@pytest.fixture(scope="module")
def setting1():
    rng = np.random.default_rng(0)
    config = data.setting(1)
    signals = data.make_signals(config, rng)
    return rng, signals, data.sample(config, signals, N, rng)


def _batches(setting1, cfg):
    _, signals, sample = setting1
    structured = dataclasses.replace(cfg, structured=True)
    return (training.prepare(sample, cfg), cfg), (training.prepare(sample, structured, signals), structured)


@pytest.fixture(scope="module")
def moe(setting1):
    rng = setting1[0]
    dense, structured = _batches(setting1, training.TrainConfig(M=M, J=J))
    W = training.init_experts(dense[1], D, rng)
    Theta = rng.normal(0.0, 0.3, size=(D, M))  # a router past its first steps: uneven routing
    return {"dense": dense, "structured": structured, "W": W, "Theta": Theta}


@pytest.mark.benchmark(group="algorithm1-step-structured")
@pytest.mark.parametrize("path", ["structured", "dense"])
@pytest.mark.parametrize("lib", ["numba", "numpy"])
def test_algorithm1_step(benchmark, record_rate, moe, path, lib):
    batch, cfg = moe[path]
    plan = resolve(dataclasses.replace(cfg, backend=lib))  # once per run, as in `training.train`
    with threadpool_limits(1, "blas"):  # as inside `training.train`
        W_next, Theta_next, step = benchmark.pedantic(
            training.algorithm1_step,
            args=(batch, moe["W"], moe["Theta"], SEED, plan),
            rounds=30 if lib == "numba" else 3,
            warmup_rounds=2 if lib == "numba" else 1,
        )
    record_rate(f"algorithm1_step_{path}_{lib}", NOISE_FLOPS * (P // Q if path == "dense" else 1))
    dense_batch, dense_cfg = moe["dense"]
    dense_plan = resolve(dataclasses.replace(dense_cfg, backend=lib))
    if path == "structured" and not benchmark.disabled:
        with threadpool_limits(1, "blas"):
            _step_beside_dense(
                benchmark,
                moe,
                (batch, plan),
                (dense_batch, dense_plan),
                step,
                rounds=20 if lib == "numba" else 3,
            )
    ref_W, ref_Theta, ref = training.algorithm1_step(dense_batch, moe["W"], moe["Theta"], SEED, dense_plan)
    np.testing.assert_array_equal(step.routes, ref.routes)
    np.testing.assert_allclose(W_next, ref_W, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(Theta_next, ref_Theta, rtol=1e-9, atol=1e-15)


def _step_beside_dense(benchmark, moe, structured, dense, step, rounds):
    """ratio_to_dense: the structured step's min time ÷ the dense step's; ratio_to_dense_without_experts:
    the same with the structured expert pass's min time (forward, loss and ∇W) taken off the step
    (the router, gate and updates are left), the ratio no faster expert kernel can go below;
    expert_pass_ratio_to_dense: the two expert passes alone, structured ÷ dense (the router is the
    same work in both: each reads the patch sum s). The four alternate; a difference of two
    minimums, the second can come out slightly negative where the rest is within the timing noise
    (the NumPy path)."""
    (batch, plan), (dense_batch, dense_plan) = structured, dense
    step_s, experts_s, dense_s, dense_experts_s = _best_interleaved(
        (
            lambda: training.algorithm1_step(batch, moe["W"], moe["Theta"], SEED, plan),
            lambda: plan.expert_pass(batch, moe["W"], step.routes, step.g),
            lambda: training.algorithm1_step(dense_batch, moe["W"], moe["Theta"], SEED, dense_plan),
            lambda: dense_plan.expert_pass(dense_batch, moe["W"], step.routes, step.g),
        ),
        rounds,
    )
    _record_ratio(benchmark, "ratio_to_dense", step_s, dense_s)
    benchmark.extra_info["flop_ratio_to_dense"] = FLOP_RATIO
    benchmark.extra_info["ratio_to_dense_without_experts"] = (step_s - experts_s) / dense_s
    benchmark.extra_info["expert_pass_ms"] = 1e3 * experts_s
    _record_ratio(benchmark, "expert_pass_ratio_to_dense", experts_s, dense_experts_s)


def _single(setting1, variant, J, activation="cubic"):
    cfg = single_config(variant, J=J, activation=activation).expert
    dense, structured = _batches(setting1, cfg)
    W = training.init_experts(cfg, D, np.random.default_rng(1))
    return {"dense": dense, "structured": structured, "W": W, "variant": variant, "J": J}


@pytest.fixture(scope="module", params=["paper", "reference-code"])
def single(setting1, request):
    return _single(setting1, request.param, SINGLE_J)


@pytest.fixture(scope="module")
def linear_single(setting1):
    """Table 1's linear single (128 filters): σ = identity, so it runs one filter on the patch sum."""
    return _single(setting1, "paper", 128, "linear")


@pytest.fixture(scope="module")
def tanh_single(setting1):
    """Table 7's tanh single (128 filters): its structured step reads σ from a `np.tanh` table."""
    return _single(setting1, "paper", 128, "tanh")


def _single_pass(benchmark, record_rate, single, path, name):
    """The single CNN's forward/backward (the Adam step's compute), M = 1, gate 1, beside the dense path;
    its answer checked against the NumPy twins' dense pass."""
    batch, cfg = single[path]
    plan = resolve(cfg)
    routes, gate = np.zeros(N, dtype=np.int64), np.ones(N)
    with threadpool_limits(1, "blas"):
        out = benchmark.pedantic(
            plan.expert_pass, args=(batch, single["W"], routes, gate), rounds=10, warmup_rounds=1
        )
    width = D + int(cfg.bias)
    # linear experts run one filter u = Σ_j a_j w_j on one patch (the patch sum), on either path
    filters = 1 if cfg.activation == "linear" else single["J"]
    patches = batch.xk.noise.shape[1] if path == "structured" else batch.xk.shape[1]
    record_rate(name, 2 * 2 * N * filters * width * patches)
    dense_batch, dense_cfg = single["dense"]
    dense_pass = resolve(dense_cfg).expert_pass
    if path == "structured" and not benchmark.disabled:
        noise = batch.xk.noise.reshape(-1, width)  # the pass's dense products, as one-thread DGEMM
        with threadpool_limits(1, "blas"):
            pass_s, dense_s, gemm_s = _best_interleaved(
                (
                    lambda: plan.expert_pass(batch, single["W"], routes, gate),
                    lambda: dense_pass(dense_batch, single["W"], routes, gate),
                    lambda: _gemms([noise], single["W"]),
                ),
                rounds=5,
            )
        _record_ratio(benchmark, "ratio_to_dense", pass_s, dense_s)
        benchmark.extra_info["time_to_dgemm"] = pass_s / gemm_s
        benchmark.extra_info["fraction_of_dgemm_same_shape_per_core"] = gemm_s / (
            pass_s * numba.get_num_threads()
        )
    reference = resolve(dataclasses.replace(dense_cfg, backend="numpy")).expert_pass
    ref = reference(dense_batch, single["W"], routes, gate)
    np.testing.assert_allclose(out.f, ref.f, rtol=1e-9, atol=1e-12 * np.max(np.abs(ref.f)))
    np.testing.assert_allclose(out.grad_W, ref.grad_W, rtol=1e-8, atol=1e-10 * np.max(np.abs(ref.grad_W)))


@pytest.mark.benchmark(group="single-cnn-512-structured")
@pytest.mark.parametrize("path", ["structured", "dense"])
def test_single_cnn_pass(benchmark, record_rate, single, path):
    """The 512-filter single CNN's pass, structured and dense."""
    _single_pass(benchmark, record_rate, single, path, f"single_cnn_{SINGLE_J}_{single['variant']}_{path}")


@pytest.mark.benchmark(group="single-cnn-tanh-structured")
@pytest.mark.parametrize("path", ["structured", "dense"])
def test_tanh_single_pass(benchmark, record_rate, tanh_single, path):
    """The 128-filter tanh single's pass: the structured step's `np.tanh` table beside the dense path."""
    _single_pass(benchmark, record_rate, tanh_single, path, f"single_cnn_128_tanh_{path}")


@pytest.mark.benchmark(group="single-cnn-linear")
def test_linear_single_pass(benchmark, record_rate, linear_single):
    """The 128-filter linear single's pass: the routed kernels with the one filter u = Σ_j a_j w_j on
    the patch sum, which is what either arithmetic runs for linear experts."""
    _single_pass(benchmark, record_rate, linear_single, "dense", "single_cnn_128_linear")


@pytest.fixture(scope="module")
def noise_only():
    """The noise patches of setting 1's shape alone (S = 0): the dense work left in a structured step."""
    rng = np.random.default_rng(2)
    noise = rng.normal(size=(N, Q, D)) / np.sqrt(D)
    arrays = (np.zeros((1, D)), np.zeros(D), np.zeros((N, 0), dtype=np.int64), np.zeros((N, 0)), noise)
    W = rng.normal(size=(M, J, D)) * 0.3
    return arrays, W, rng.integers(0, M, N), rng.normal(size=N)


def _gemms(blocks, W):
    """Forward Z = X_m W_mᵀ ((n_m, d) × (d, J)) and backward Zᵀ X_m ((J, n_m) × (n_m, d)) per expert."""
    for m, xm in enumerate(blocks):
        z = xm @ W[m].T
        z.T @ xm


def _on_one_thread(fn, *args):
    """fn(*args) with one Numba thread (as each `replicate --jobs 2` worker runs), the count restored."""
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        return fn(*args)
    finally:
        numba.set_num_threads(threads)


def _noise_patch_kernel(benchmark, record_rate, noise_only, lib, dtype, rtol):
    """structured_step on the noise patches only in `dtype`: forward and ∇W, and its rate per core
    against one-thread GEMM of the same shape and dtype (DGEMM, or SGEMM for float32)."""
    arrays, W, routes, coef = noise_only
    arrays = tuple(a.astype(dtype) if a.dtype.kind == "f" else a for a in arrays)
    W, coef = W.astype(dtype), coef.astype(dtype)
    kernels = backend(lib)
    with threadpool_limits(1, "blas"):
        f, grad = benchmark.pedantic(
            kernels.structured_step, args=(*arrays, W, routes, coef, 0, 0), rounds=30, warmup_rounds=2
        )
    gemm = "sgemm" if dtype == "float32" else "dgemm"
    record_rate(f"noise_patch_step_{lib}" + ("_float32" if dtype == "float32" else ""), NOISE_FLOPS)
    threads = numba.get_num_threads() if lib == "numba" else 1
    benchmark.extra_info["threads"] = threads
    if benchmark.stats is not None:
        benchmark.extra_info["gflops_per_core"] = benchmark.extra_info["gflops"] / threads
    x = arrays[-1].reshape(N * Q, D)
    blocks = [np.ascontiguousarray(x[routes == m]) for m in range(M)]
    if not benchmark.disabled:
        with threadpool_limits(1, "blas"):
            kernel_s, one_thread_s, gemm_s = _best_interleaved(
                (
                    lambda: kernels.structured_step(*arrays, W, routes, coef, 0, 0),
                    lambda: _on_one_thread(kernels.structured_step, *arrays, W, routes, coef, 0, 0),
                    lambda: _gemms(blocks, W),
                ),
                rounds=20,
            )
        # kernel time × threads ÷ GEMM time = GEMM rate ÷ the kernel's rate per core
        _record_ratio(benchmark, f"time_to_{gemm}", kernel_s, gemm_s)
        benchmark.extra_info[f"fraction_of_{gemm}_same_shape_per_core"] = gemm_s / (kernel_s * threads)
        benchmark.extra_info[f"fraction_of_{gemm}_same_shape_one_thread"] = gemm_s / one_thread_s
    ref_f, ref_grad = backend("numpy").routed_step(noise_only[0][-1], noise_only[1], routes, noise_only[3], 0)
    np.testing.assert_allclose(f, ref_f, rtol=rtol, atol=rtol * 1e-3 * np.max(np.abs(ref_f)))
    np.testing.assert_allclose(grad, ref_grad, rtol=rtol, atol=rtol * 1e-3 * np.max(np.abs(ref_grad)))


@pytest.mark.benchmark(group="noise-patch-kernel")
@pytest.mark.parametrize("lib", ["numba", "numpy"])
def test_noise_patch_kernel(benchmark, record_rate, noise_only, lib):
    """structured_step on the noise patches only: forward and ∇W, compared per core with 1-thread DGEMM."""
    _noise_patch_kernel(benchmark, record_rate, noise_only, lib, "float64", 1e-9)


@pytest.mark.benchmark(group="noise-patch-kernel-float32")
@pytest.mark.parametrize("lib", ["numba", "numpy"])
def test_noise_patch_kernel_float32(benchmark, record_rate, noise_only, lib):
    """The same in float32 (rows padded to whole vector strides), compared per core with 1-thread SGEMM."""
    _noise_patch_kernel(benchmark, record_rate, noise_only, lib, "float32", 1e-3)


@pytest.mark.benchmark(group="noise-patch-kernel")
def test_dgemm_of_the_same_shape(benchmark, record_rate, noise_only):
    """One-thread DGEMM with the noise kernel's FLOPs: Z = X Wᵀ and ∇ = Zᵀ X per expert (`_gemms`)."""
    arrays, W, routes, _ = noise_only
    x = arrays[-1].reshape(N * Q, D)
    blocks = [np.ascontiguousarray(x[routes == m]) for m in range(M)]
    with threadpool_limits(1, "blas"):
        benchmark.pedantic(_gemms, args=(blocks, W), rounds=30, warmup_rounds=2)
    record_rate("dgemm_noise_shape_1_thread", NOISE_FLOPS)
