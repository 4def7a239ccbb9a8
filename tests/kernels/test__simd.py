"""`empty_aligned` and `zeros_aligned`: the shape and dtype asked for, C-contiguous, data on a vector
boundary."""

from __future__ import annotations

import numpy as np
import pytest

from lab.kernels._simd import VECTOR_BYTES, empty_aligned, zeros_aligned


@pytest.mark.parametrize("shape", [(0,), (1,), (3, 5), (64, 50, 8), (2, 1, 50, 521), (17, 0, 3)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("make", [empty_aligned, zeros_aligned])
def test_an_aligned_array_starts_on_a_vector_boundary(shape, dtype, make):
    out = make(shape, dtype)
    assert out.shape == shape and out.dtype == dtype and out.flags.c_contiguous and out.flags.writeable
    assert out.size == 0 or out.ctypes.data % VECTOR_BYTES == 0  # an empty array has no data to align


def test_zeros_aligned_is_zero_and_each_array_its_own():
    a, b = zeros_aligned((1000, 8), np.float64), zeros_aligned((1000, 8), np.float64)
    assert not a.any()
    a[:] = 1.0
    assert not b.any() and not np.shares_memory(a, b)
