"""Hypothesis strategies for Theorem 4.2's sets M_k: expert error tables and dispatch count tables.

An instance is what a trained run gives `lab.chen2022.theorem_sets`: errors (M, K) of expert m on
cluster Ω_k and dispatch (K, M) counts of Ω_k routed to expert m. Errors come from a small grid that
holds the threshold itself (`THRESHOLD`), so "≤" is exercised at equality; dispatch is either spread
(any counts) or specialised (each cluster sent mostly to one expert, as a trained router does), so
both outcomes of the search occur often.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

THRESHOLD = 0.02  # the error grid below holds it exactly (and 1 − it as a share of 50 samples)
ERRORS = (0.0, 0.01, THRESHOLD, 0.03, 0.5)


@st.composite
def theorem_tables(draw, max_M: int = 6, max_K: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """(errors (M, K), dispatch (K, M)) with 1 ≤ K ≤ max_K, K ≤ M ≤ max_M, every dispatch row positive."""
    K = draw(st.integers(1, max_K))
    M = draw(st.integers(K, max_M))
    errors = np.array(draw(st.lists(st.sampled_from(ERRORS), min_size=M * K, max_size=M * K))).reshape(M, K)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if draw(st.booleans()):  # specialised: 49 or 50 of 50 samples of Ω_k to one expert, the rest anywhere
        dispatch = np.zeros((K, M), dtype=np.int64)
        for k in range(K):
            main = int(rng.integers(M))
            dispatch[k, main] = 50 - draw(st.integers(0, 2))
            dispatch[k] += np.bincount(rng.integers(M, size=50 - dispatch[k, main]), minlength=M)
    else:
        dispatch = rng.integers(0, 6, (K, M))
        dispatch[:, 0] += 1
    return errors, dispatch


__all__ = ["ERRORS", "THRESHOLD", "theorem_tables"]
