"""The machine's peak multiply-add rate on one core, per dtype: the arithmetic limit of the timings.

Sixteen independent chains of 64-byte vector FMAs (`lab.kernels._simd`), no memory traffic: as many
multiply-adds per second as one core's vector units retire. The performance page divides the
replications' FLOP by this rate for their arithmetic floor (`lab.docs.timing_section`); one-thread
DGEMM is no such limit here, since NumPy's OpenBLAS runs 32-byte vectors on this machine and the
structured kernels run 64-byte ones.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit, types

from lab.kernels._simd import LANES, vadd, vfma, vload, vstore, vzero

STEPS = 200_000
CHAINS = 16


@njit(cache=True)
def _chains(x, steps):
    """x[:lanes] = the sum of 16 chains a ← a + x₀·v over `steps` steps (v = x[:lanes]), so none is dead."""
    v, s = vload(x, 0), x[0]
    a0, a1, a2, a3 = vzero(x), vzero(x), vzero(x), vzero(x)
    a4, a5, a6, a7 = vzero(x), vzero(x), vzero(x), vzero(x)
    b0, b1, b2, b3 = vzero(x), vzero(x), vzero(x), vzero(x)
    b4, b5, b6, b7 = vzero(x), vzero(x), vzero(x), vzero(x)
    for _ in range(steps):
        a0, a1, a2, a3 = vfma(a0, s, v), vfma(a1, s, v), vfma(a2, s, v), vfma(a3, s, v)
        a4, a5, a6, a7 = vfma(a4, s, v), vfma(a5, s, v), vfma(a6, s, v), vfma(a7, s, v)
        b0, b1, b2, b3 = vfma(b0, s, v), vfma(b1, s, v), vfma(b2, s, v), vfma(b3, s, v)
        b4, b5, b6, b7 = vfma(b4, s, v), vfma(b5, s, v), vfma(b6, s, v), vfma(b7, s, v)
    a = vadd(vadd(vadd(a0, a1), vadd(a2, a3)), vadd(vadd(a4, a5), vadd(a6, a7)))
    b = vadd(vadd(vadd(b0, b1), vadd(b2, b3)), vadd(vadd(b4, b5), vadd(b6, b7)))
    vstore(x, 0, vadd(a, b))


@pytest.mark.benchmark(group="peak-multiply-add")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_peak_multiply_add_rate(benchmark, record_rate, dtype):
    """One core's FMA rate in `dtype`; the chains' sum is exact (small integers), so the loop ran."""
    lanes = LANES[getattr(types, dtype)]
    x = np.zeros(lanes, dtype=dtype)

    def run():
        x[:] = 1.0
        _chains(x, STEPS)

    benchmark.pedantic(run, rounds=20, warmup_rounds=2)
    record_rate(f"peak_fma_{dtype}", 2.0 * CHAINS * lanes * STEPS)
    np.testing.assert_array_equal(x, np.full(lanes, CHAINS * STEPS, dtype=dtype))
