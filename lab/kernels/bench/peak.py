"""The machine's peak multiply-add rate on one core, per dtype: the arithmetic limit of the timings.

Sixteen independent chains of 64-byte vector FMAs (`lab.kernels._simd`), no memory traffic: as many
multiply-adds per second as one core's vector units retire. `peak_rate` times the best of several
rounds; a replication timing calls it before and after each model's runs, so its "× the arithmetic
floor" is a ratio within one run (`benchmarks/test_bench_peak.py` records the same rate).
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit, types

from lab.core import validate
from lab.kernels._simd import LANES, vadd, vfma, vload, vstore, vzero

STEPS = 200_000
CHAINS = 16
DTYPES = ("float64", "float32")


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


def chain_flops(dtype: str, steps: int = STEPS) -> float:
    """The FLOP of one `_chains` call (a multiply-add counts as two)."""
    return 2.0 * CHAINS * LANES[getattr(types, dtype)] * steps


def chains(dtype: str, steps: int = STEPS) -> np.ndarray:
    """One `_chains` call from x = 1: every lane ends at CHAINS·steps exactly (small integers)."""
    x = np.ones(LANES[getattr(types, dtype)], dtype=dtype)
    _chains(x, steps)
    return x


def peak_rate(dtype: str, rounds: int = 5, steps: int = STEPS) -> float:
    """One core's multiply-add rate in FLOP/s: the best of `rounds` timed `_chains` calls."""
    validate.choice(dtype, "dtype", DTYPES)
    validate.integer(rounds, "rounds", low=1)
    validate.integer(steps, "steps", low=1)
    chains(dtype, 1)  # compiled or loaded before the clock starts
    best = min(_timed(dtype, steps) for _ in range(rounds))
    return chain_flops(dtype, steps) / best


def _timed(dtype: str, steps: int) -> float:
    start = time.perf_counter()
    chains(dtype, steps)
    return time.perf_counter() - start
