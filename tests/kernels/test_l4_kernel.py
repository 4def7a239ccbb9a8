"""The L4 kernel (Makkuva et al. eq. 6) agrees with its NumPy twin (odd shapes, float32 and float64)."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lab.kernels import l4 as kernels
from lab.kernels import l4_numpy as twins

CONSTANTS = (24.0, 2.0, 0.05, 4.0, 2.0)  # c, c', μ, λ, δ


def _problem(seed, k, d, n):
    rng = np.random.default_rng(seed)
    A, x = rng.standard_normal((k, d)) / np.sqrt(d), rng.standard_normal((n, d))
    y = rng.standard_normal(n)
    return A, x, y**4 - 6 * y**2 + 3, y**2 - 1  # Q4, Q2 of the identity link at σ = 0


@given(st.integers(1, 5), st.integers(1, 11), st.integers(1, 37), st.integers(0, 2**31))
def test_l4_kernel_agrees_with_twin(k, d, n, seed):
    A, x, q4, q2 = _problem(seed, k, d, n)
    v1, g1 = twins.l4_gradient(A, x, q4, q2, *CONSTANTS)
    v2, g2 = kernels.l4_gradient(A, x, q4, q2, *CONSTANTS)
    scale = 1 + np.abs(g1).max()
    assert isinstance(v1, float) and g1.shape == g2.shape == (k, d)
    assert abs(v2 - v1) <= 1e-10 * (1 + abs(v1))
    assert np.abs(g1 - g2).max() <= 1e-10 * scale


@given(st.integers(1, 5), st.integers(1, 11), st.integers(1, 37), st.integers(0, 2**31))
def test_l4_kernel_in_float32_agrees_with_twin_in_float64(k, d, n, seed):
    A, x, q4, q2 = (a.astype(np.float32) for a in _problem(seed, k, d, n))
    v1, g1 = twins.l4_gradient(*(a.astype(np.float64) for a in (A, x, q4, q2)), *CONSTANTS)
    v3, g3 = kernels.l4_gradient(A, x, q4, q2, *CONSTANTS)
    scale = 1 + np.abs(g1).max()
    assert g3.dtype == np.float32 and np.abs(g1 - g3).max() <= 1e-3 * scale
    assert abs(v3 - v1) <= 1e-3 * (1 + abs(v1))
