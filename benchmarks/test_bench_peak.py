"""The machine's peak multiply-add rate on one core, per dtype: the arithmetic limit of the timings.

The chains are `lab.kernels.bench.peak`'s (sixteen independent chains of 64-byte vector FMAs, no memory
traffic), which each replication timing also runs before and after each model. One-thread DGEMM is
no such limit here, since NumPy's OpenBLAS runs 32-byte vectors on this machine and the structured
kernels run 64-byte ones.
"""

from __future__ import annotations

import numpy as np
import pytest

from lab.kernels.bench import peak, peak_numpy


@pytest.mark.benchmark(group="peak-multiply-add")
@pytest.mark.parametrize("dtype", peak.DTYPES)
def test_peak_multiply_add_rate(benchmark, record_rate, dtype):
    """One core's FMA rate in `dtype`; the chains' sum is exact (small integers), so the loop ran."""
    result = {}

    def run():
        result["x"] = peak.chains(dtype, peak.STEPS)

    benchmark.pedantic(run, rounds=20, warmup_rounds=2)
    record_rate(f"peak_fma_{dtype}", peak.chain_flops(dtype))
    np.testing.assert_array_equal(result["x"], peak_numpy.chains(dtype, peak.STEPS))
