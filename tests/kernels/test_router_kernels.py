"""The router's products h = sΘ and ∇Θ = sᵀ∂L/∂h (Sec. 3.2, E.1) agree with their NumPy twins."""

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.kernels import backend

kernels, twins = backend("numba"), backend("numpy")
TOL = {np.float64: dict(rtol=1e-12, atol=1e-12), np.float32: dict(rtol=1e-5, atol=1e-5)}


@given(
    n=st.integers(1, 300),  # across the 64 chunks, with blocks of four and a tail
    d=st.integers(1, 60),
    M=st.integers(1, 20),  # one vector, padded, or several (8 float64 or 16 float32 a vector)
    seed=st.integers(0, 2**31),
    dtype=st.sampled_from([np.float64, np.float32]),
)
def test_router_products_agree_with_twins(n, d, M, seed, dtype):
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(n, d)).astype(dtype)
    Theta, dh = rng.normal(size=(d, M)), rng.normal(size=(n, M))
    h, grad = kernels.router_logits(s, Theta), kernels.router_gradient(s, dh)
    assert h.dtype == grad.dtype == dtype and h.shape == (n, M) and grad.shape == (d, M)
    assert h.flags.c_contiguous and grad.flags.c_contiguous
    scale_h = np.sqrt(d) * np.abs(Theta).max()
    scale_g = np.sqrt(n) * np.abs(dh).max()
    np.testing.assert_allclose(h / scale_h, twins.router_logits(s, Theta) / scale_h, **TOL[dtype])
    np.testing.assert_allclose(grad / scale_g, twins.router_gradient(s, dh) / scale_g, **TOL[dtype])


def test_a_strided_patch_sum_gives_the_same_products():
    rng = np.random.default_rng(1)
    wide = rng.normal(size=(37, 2, 11))
    s, Theta, dh = wide[:, 0], rng.normal(size=(11, 8)), rng.normal(size=(37, 8))
    np.testing.assert_array_equal(kernels.router_logits(s, Theta), kernels.router_logits(s.copy(), Theta))
    np.testing.assert_array_equal(kernels.router_gradient(s, dh), kernels.router_gradient(s.copy(), dh))


def test_router_products_do_not_depend_on_the_thread_count():
    rng = np.random.default_rng(2)
    s, Theta, dh = rng.normal(size=(1001, 50)), rng.normal(size=(50, 8)), rng.normal(size=(1001, 8))
    before = numba.get_num_threads()
    try:
        results = []
        for threads in sorted({1, before}):
            numba.set_num_threads(threads)
            results.append((kernels.router_logits(s, Theta), kernels.router_gradient(s, dh)))
    finally:
        numba.set_num_threads(before)
    for h, grad in results[1:]:
        np.testing.assert_array_equal(h, results[0][0])
        np.testing.assert_array_equal(grad, results[0][1])


@pytest.mark.parametrize("lib", [kernels, twins], ids=lambda lib: lib.name)
def test_a_theta_of_another_d_is_refused_naming_d(lib):
    s = np.zeros((4, 5))
    with pytest.raises(ValueError, match=r"^Theta must have shape \(d, M\) with d = 5 from s"):
        lib.router_logits(s, np.zeros((6, 2)))
    with pytest.raises(ValueError, match=r"^dh must have shape \(n, M\) with n = 4 from s"):
        lib.router_gradient(s, np.zeros((3, 2)))
