"""Numba pieces shared by the kernel modules: the fixed chunk count and the counter-based noise.

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


@njit(cache=True, inline="always")
def _mix(z):
    z = (z ^ (z >> uint64(30))) * _MIX1
    z = (z ^ (z >> uint64(27))) * _MIX2
    return z ^ (z >> uint64(31))


@njit(cache=True, inline="always")
def _uniform01(key, index):
    """Counter-based U(0, 1): SplitMix64 output number `index` of the stream keyed by `key`."""
    z = _mix(key + (uint64(index) + uint64(1)) * _GOLDEN)
    return (float(z >> uint64(11)) + 0.5) * _TWO_POW_M53


@njit(cache=True)
def stream_key(seed):
    """Key of the noise stream for an integer seed (the twin is `lab.kernels.routed_numpy.stream_key`)."""
    return _mix(uint64(seed) * _GOLDEN + _GOLDEN)


@njit(cache=True, inline="always")
def draw(key, index, code, a, b):
    """Draw number `index` of stream `key`: uniform [a, b), N(0, a²) or Gumbel(0, a) by `NOISE_CODES`."""
    if code == 0:
        return a + (b - a) * _uniform01(key, index)
    if code == 1:
        u1 = _uniform01(key, uint64(2) * uint64(index))
        u2 = _uniform01(key, uint64(2) * uint64(index) + uint64(1))
        return a * math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
    return -a * math.log(-math.log(_uniform01(key, index)))
