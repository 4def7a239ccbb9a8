"""Numba pieces shared by the kernel modules: the fixed chunk count, the counter-based noise and the
four-row update of an expert's gradient (`_add_four_rows`).

Determinism: results never depend on the number of threads. Parallel reductions split the
samples into a fixed number of chunks (`CHUNKS`), reduce each chunk into its own buffer and
add the buffers in order. Random noise comes from a counter-based generator (SplitMix64 of
seed and draw index), so draw (i, m) has the same value whichever thread makes it, and the
NumPy twins (`lab.kernels.routed_numpy.noise`) reproduce it bit for bit.

Numba's cache does not follow imports: after editing this module, delete the kernels' cache
files (`lab/kernels/__pycache__/*.nbi`, `*.nbc`) so that kernels inlining it recompile.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

uint64 = np.uint64

CHUNKS = 64
NOISE_CODES = {"uniform": 0, "gaussian": 1, "gumbel": 2}

_GOLDEN = uint64(0x9E3779B97F4A7C15)
_MIX1 = uint64(0xBF58476D1CE4E5B9)
_MIX2 = uint64(0x94D049BB133111EB)
_TWO_POW_M53 = 1.0 / 9007199254740992.0


@njit(cache=True, error_model="numpy", inline="always")
def _mix(z):
    z = (z ^ (z >> uint64(30))) * _MIX1
    z = (z ^ (z >> uint64(27))) * _MIX2
    return z ^ (z >> uint64(31))


@njit(cache=True, error_model="numpy", inline="always")
def _uniform01(key, index):
    """Counter-based U(0, 1): SplitMix64 output number `index` of the stream keyed by `key`."""
    z = _mix(key + (uint64(index) + uint64(1)) * _GOLDEN)
    return (float(z >> uint64(11)) + 0.5) * _TWO_POW_M53


@njit(cache=True, error_model="numpy")
def stream_key(seed):
    """Key of the noise stream for an integer seed (the twin is `lab.kernels.routed_numpy.stream_key`)."""
    return _mix(uint64(seed) * _GOLDEN + _GOLDEN)


@njit(cache=True, error_model="numpy", inline="always")
def draw(key, index, code, a, b):
    """Draw number `index` of stream `key`: uniform [a, b), N(0, a²) or Gumbel(0, a) by `NOISE_CODES`."""
    if code == 0:
        return a + (b - a) * _uniform01(key, index)
    if code == 1:
        u1 = _uniform01(key, uint64(2) * uint64(index))
        u2 = _uniform01(key, uint64(2) * uint64(index) + uint64(1))
        return a * math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
    return -a * math.log(-math.log(_uniform01(key, index)))


@njit(cache=True, error_model="numpy", inline="always")
def _add_four_rows(x0, x1, x2, x3, c0, c1, c2, c3, grad):
    """grad[j] += c0[j] x0 + c1[j] x1 + c2[j] x2 + c3[j] x3 for every filter j of grad (J, d): four
    inputs' terms of (E.2) by tiles of four filters, each row of grad loaded and stored once per
    sixteen products (with two filters the loop was bound by the stores)."""
    d, J = x0.shape[0], grad.shape[0]
    j = 0
    while j + 4 <= J:
        a0, a1, a2, a3 = c0[j], c1[j], c2[j], c3[j]
        b0, b1, b2, b3 = c0[j + 1], c1[j + 1], c2[j + 1], c3[j + 1]
        e0, e1, e2, e3 = c0[j + 2], c1[j + 2], c2[j + 2], c3[j + 2]
        f0, f1, f2, f3 = c0[j + 3], c1[j + 3], c2[j + 3], c3[j + 3]
        r0, r1, r2, r3 = grad[j], grad[j + 1], grad[j + 2], grad[j + 3]
        for k in range(d):
            v0, v1, v2, v3 = x0[k], x1[k], x2[k], x3[k]
            r0[k] += a0 * v0 + a1 * v1 + a2 * v2 + a3 * v3
            r1[k] += b0 * v0 + b1 * v1 + b2 * v2 + b3 * v3
            r2[k] += e0 * v0 + e1 * v1 + e2 * v2 + e3 * v3
            r3[k] += f0 * v0 + f1 * v1 + f2 * v2 + f3 * v3
        j += 4
    while j < J:
        a0, a1, a2, a3 = c0[j], c1[j], c2[j], c3[j]
        r0 = grad[j]
        for k in range(d):
            r0[k] += a0 * x0[k] + a1 * x1[k] + a2 * x2[k] + a3 * x3[k]
        j += 1
