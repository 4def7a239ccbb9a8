"""Numba kernels of noisy top-k gating (Shazeer et al. 2017); twins in `lab.kernels.gating_numpy`.

The noise is that of `lab.kernels._shared`, and one thread computes each row (each cell of the
counts) whole, so both kernels give the same result at any thread count. The names in `__all__`
check their arguments with `lab.kernels._checks` (the checks of the NumPy twins too) and run the
jitted loops `_gate_and_load_rows` and `_membership_counts_cells` on the lab's threads
(`lab.kernels._threads`); `lab.shazeer2017.gating` validates the data (finite, real) and dispatches
here.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from lab.kernels import _checks
from lab.kernels._shared import draw, stream_key
from lab.kernels._threads import ROWS, over_threads

__all__ = ["noisy_top_k_gate_and_load", "top_k_membership_counts"]

_SQRT_HALF = math.sqrt(0.5)


def noisy_top_k_gate_and_load(clean, raw_noise, xi, k):
    """G = Softmax(KeepTopK(H, k)) and the smooth load P(x, i) for real inputs (`_gate_and_load_rows`)."""
    clean, raw_noise, xi, k = _checks.noisy_top_k_gate_and_load(clean, raw_noise, xi, k)
    G, P = np.zeros(clean.shape, dtype=clean.dtype), np.ones(clean.shape, dtype=clean.dtype)
    over_threads(_gate_and_load_rows, clean.shape[0], clean, raw_noise, xi, k, G, P, grain=ROWS)
    return G, P


@njit(cache=True, error_model="numpy", nogil=True)
def _gate_and_load_rows(lo, hi, clean, raw_noise, xi, k, G, P):
    """Rows lo..hi − 1: the noisy top-k gate G = Softmax(KeepTopK(H, k)) and the smooth
    load P(x, i) of Shazeer et al. (2017), into G (zeros) and P (ones).

    H = clean + ξ·Softplus(raw_noise); P(x, i) = Φ((clean_i − kth_excluding(H, k, i)) / Softplus(raw_i)).
    Rows are independent (no reduction), so the result does not depend on the thread count. Ties
    in H go to the lowest expert index (the rule of `lab.shazeer2017.gating`). Arithmetic inside
    is float64.
    """
    M = clean.shape[1]
    kept_len = min(k + 1, M)
    H = np.empty(M)
    scale = np.empty(M)
    kept = np.empty(M, dtype=np.bool_)
    top = np.empty(kept_len, dtype=np.int64)
    for r in range(lo, hi):
        filled = 0
        for j in range(M):
            z = np.float64(raw_noise[r, j])  # float() would keep float32
            s = z + math.log1p(math.exp(-z)) if z > 0 else math.log1p(math.exp(z))
            scale[j] = s
            v = clean[r, j] + xi[r, j] * s
            H[j] = v
            kept[j] = False
            if filled < kept_len:
                pos = filled
                filled += 1
            elif v > H[top[kept_len - 1]]:
                pos = kept_len - 1
            else:
                continue
            while pos > 0 and v > H[top[pos - 1]]:
                top[pos] = top[pos - 1]
                pos -= 1
            top[pos] = j
        peak = H[top[0]]
        total = 0.0
        for q in range(k):
            kept[top[q]] = True
            total += math.exp(H[top[q]] - peak)
        for q in range(k):
            G[r, top[q]] = math.exp(H[top[q]] - peak) / total
        if k < M:
            inside = H[top[k]]
            outside = H[top[k - 1]]
            for j in range(M):
                threshold = inside if kept[j] else outside
                P[r, j] = 0.5 * math.erfc(-(clean[r, j] - threshold) / scale[j] * _SQRT_HALF)


def top_k_membership_counts(clean, scale, xi, k, draws, seed, resample_all):
    """Monte Carlo for C2: counts (n, M) of draws with expert i in the top k (`_membership_counts_cells`)."""
    clean, scale, xi, k, draws, seed, resample_all = _checks.top_k_membership_counts(
        clean, scale, xi, k, draws, seed, resample_all
    )
    counts = np.zeros(clean.shape, dtype=np.int64)
    args = (clean, scale, xi, k, draws, _checks.numba_seed(seed), resample_all, counts)
    over_threads(_membership_counts_cells, counts.size, *args)
    return counts


@njit(cache=True, error_model="numpy", nogil=True)
def _membership_counts_cells(lo, hi, clean, scale, xi, k, draws, seed, resample_all, counts):
    """Monte Carlo for C2, cells p = r·M + i in lo..hi − 1: how often expert i is in the top k of
    H = clean + scale·ξ in row r, into counts (n, M).

    resample_all False: only ξ_i is redrawn (N(0, 1)), every other ξ_j stays at xi[r, j], so
    counts / draws estimates the smooth load P(x, i) of Shazeer et al. resample_all True:
    every ξ_j is redrawn, so for k = 1 counts / draws estimates p_i of Lemma C.1 (Gaussian
    noise with scale `scale`). Membership is the definition of KeepTopK: fewer than k experts
    j ≠ i beat i, where j beats i if H_j > H_i or H_j = H_i with j < i. Draw (r, i, t) of
    expert j uses noise index ((r·M + i)·draws + t)·M + j; each (r, i) is counted by one
    thread, so counts do not depend on the thread count.
    """
    M = clean.shape[1]
    key = stream_key(seed)
    for p in range(lo, hi):
        r = p // M
        i = p - r * M
        hits = 0
        for t in range(draws):
            base = (p * draws + t) * M
            hi = clean[r, i] + scale[r, i] * draw(key, base + i, 1, 1.0, 0.0)
            rank = 0
            for j in range(M):
                if j == i:
                    continue
                if resample_all:
                    hj = clean[r, j] + scale[r, j] * draw(key, base + j, 1, 1.0, 0.0)
                else:
                    hj = clean[r, j] + scale[r, j] * xi[r, j]
                if hj > hi or (hj == hi and j < i):
                    rank += 1
            if rank < k:
                hits += 1
        counts[r, i] = hits
