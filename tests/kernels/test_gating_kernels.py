"""The noisy top-k gating kernels agree with their NumPy twins (odd shapes, float32 and float64)."""

import numba
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from lab.kernels import gating as kernels
from lab.kernels import gating_numpy as twins

problems = st.tuples(st.integers(1, 23), st.integers(1, 11), st.integers(0, 2**31)).flatmap(
    lambda nMs: st.tuples(st.just(nMs), st.integers(1, nMs[1]))
)


def _normal(seed, shape, dtype, count):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape).astype(dtype) for _ in range(count)]


@example(problem=((2, 4, 0), 1), dtype=np.float32)  # P = 9.3e-75 in float64 is 0 in float32
@given(problem=problems, dtype=st.sampled_from([np.float64, np.float32]))
def test_gate_and_load_kernel_agrees_with_twin(problem, dtype):
    """The kernel computes in float64 inside and stores in the inputs' dtype, so float32 inputs are
    compared with the twin in float64, rounded to float32 (a load below 1e-45 is 0 in float32)."""
    (n, M, seed), k = problem
    clean, raw, xi = _normal(seed, (n, M), dtype, 3)
    G, P = kernels.noisy_top_k_gate_and_load(clean, raw, xi, k)
    G2, P2 = (
        a.astype(dtype)
        for a in twins.noisy_top_k_gate_and_load(*(a.astype(np.float64) for a in (clean, raw, xi)), k)
    )
    assert G.dtype == dtype and P.dtype == dtype and G.shape == P.shape == (n, M)
    np.testing.assert_array_equal(G > 0, G2 > 0)
    assert np.all(np.count_nonzero(G, axis=1) == k)
    rtol = 1e-13 if dtype == np.float64 else 1.2e-7
    atol = 1e-300 if dtype == np.float64 else 2 * np.finfo(np.float32).smallest_subnormal
    np.testing.assert_allclose(G, G2, rtol=rtol, atol=atol)
    np.testing.assert_allclose(P, P2, rtol=rtol, atol=atol)


def test_gate_and_load_kernel_rejects_what_it_cannot_compute():
    z = np.zeros((2, 3))
    with pytest.raises(ValueError, match="raw_noise"):
        kernels.noisy_top_k_gate_and_load(z, np.full((2, 3), -800.0), z, 1)
    with pytest.raises(TypeError, match="clean must be an array of float32 or float64"):
        kernels.noisy_top_k_gate_and_load(z + 0j, z, z, 1)
    with pytest.raises(TypeError, match="xi must be an array of real numbers"):
        twins.noisy_top_k_gate_and_load(z, z, z + 0j, 1)


@given(
    problem=problems.filter(lambda p: p[0][0] <= 4 and p[0][1] <= 7),
    draws=st.integers(1, 97),
    resample_all=st.booleans(),
    dtype=st.sampled_from([np.float64, np.float32]),
)
def test_membership_kernel_is_bit_identical_to_twin(problem, draws, resample_all, dtype):
    (n, M, seed), k = problem
    clean, xi = _normal(seed, (n, M), dtype, 2)
    scale = (0.1 + np.random.default_rng(seed + 1).random((n, M))).astype(dtype)
    args = (clean, scale, xi, k, draws, seed, resample_all)
    counts = kernels.top_k_membership_counts(*args)
    assert counts.dtype == np.int64 and np.all((0 <= counts) & (counts <= draws))
    np.testing.assert_array_equal(counts, twins.top_k_membership_counts(*args))


def test_gating_kernels_do_not_depend_on_thread_count():
    clean, raw, xi = _normal(4, (3001, 9), np.float64, 3)
    scale = np.ones((3, 9))
    before = numba.get_num_threads()
    runs = []
    try:
        for threads in (1, before):
            numba.set_num_threads(threads)
            runs.append(
                (
                    *kernels.noisy_top_k_gate_and_load(clean, raw, xi, 3),
                    kernels.top_k_membership_counts(clean[:3], scale, xi[:3], 2, 500, 8, True),
                )
            )
    finally:
        numba.set_num_threads(before)
    for one, many in zip(*runs, strict=True):
        np.testing.assert_array_equal(one, many)
