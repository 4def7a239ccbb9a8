"""Hypothesis strategies for Makkuva et al. 2020: GRU cells and their inputs (D6, eq. 4)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lab.makkuva2020.gated_regression import GRUParams

_ENTRY = st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False)


@st.composite
def gru_cases(draw, restrict: str = "none", max_dim: int = 4):
    """(GRUParams, x, h): hidden size m, input size p in 1..max_dim, entries in [-2, 2]; see D6."""
    m = 1 if restrict == "scalar" else draw(st.integers(1, max_dim))
    p = draw(st.integers(1, max_dim))
    shapes = {
        "U_z": (m, p),
        "W_z": (m, m),
        "U_r": (m, p),
        "W_r": (m, m),
        "U_h": (m, p),
        "W_h": (m, m),
        "x": (p,),
        "h": (m,),
    }
    flat = draw(
        arrays(np.float64, sum(math.prod(v) for v in shapes.values()), elements=_ENTRY, fill=st.nothing())
    )
    parts, start = {}, 0
    for name, shape in shapes.items():
        parts[name] = flat[start : start + math.prod(shape)].reshape(shape)
        start += math.prod(shape)
    if restrict == "diagonal":
        parts["W_h"] = np.diag(np.diag(parts["W_h"]))
    if restrict == "constant-reset":
        parts["U_r"] = np.repeat(parts["U_r"][:1], m, axis=0)
        parts["W_r"] = np.repeat(parts["W_r"][:1], m, axis=0)
    x, h = parts.pop("x"), parts.pop("h")
    return GRUParams(**parts), x, h
