"""NumPy twin of `lab.kernels.bench.peak`: what the sixteen FMA chains leave in x, without the chains."""

from __future__ import annotations

import numpy as np
from numba import types

from lab.kernels._simd import LANES
from lab.kernels.bench.peak import CHAINS


def chains(dtype: str, steps: int) -> np.ndarray:
    """x = 1 after `steps` steps of 16 chains a ← a + x₀·v: every lane holds CHAINS·steps."""
    return np.full(LANES[getattr(types, dtype)], CHAINS * steps, dtype=dtype)
