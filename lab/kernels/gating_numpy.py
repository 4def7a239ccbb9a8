"""Plain NumPy twins of the gating kernels in `lab.kernels.gating`: same signatures, same results.

They are the formulas of `lab.kernels.top_k` (complex-capable) and the counter-based noise
of `lab.kernels.routed_numpy`, so the Monte Carlo counts equal the kernel's bit for bit. They check
their arguments with the kernels' own checks (`lab.kernels._checks`): the same errors on both backends.
"""

from __future__ import annotations

import numpy as np

from lab.kernels import _checks
from lab.kernels.routed_numpy import noise, stream_key
from lab.kernels.top_k import keep_top_k, smooth_load, softplus, top_k_gates

__all__ = ["noisy_top_k_gate_and_load", "top_k_membership_counts"]


def noisy_top_k_gate_and_load(clean, raw_noise, xi, k):
    """Twin of `gating.noisy_top_k_gate_and_load`: G = Softmax(KeepTopK(H, k)) and P(x, i) by the formulas."""
    clean, raw_noise, xi, k = _checks.noisy_top_k_gate_and_load(clean, raw_noise, xi, k)
    scale = softplus(raw_noise)
    H = clean + xi * scale
    return top_k_gates(H, k), smooth_load(clean, scale, H, k)


def top_k_membership_counts(clean, scale, xi, k, draws, seed, resample_all):
    """Twin of `gating.top_k_membership_counts`: same noise indices, membership by `keep_top_k`."""
    clean, scale, xi, k, draws, seed, resample_all = _checks.top_k_membership_counts(
        clean, scale, xi, k, draws, seed, resample_all
    )
    n, M = clean.shape
    key = stream_key(seed)
    counts = np.zeros((n, M), dtype=np.int64)
    fixed = (clean + scale * xi).astype(np.float64)
    for r in range(n):
        for i in range(M):
            base = ((r * M + i) * draws + np.arange(draws, dtype=np.uint64)) * np.uint64(M)
            if resample_all:
                index = (base[:, None] + np.arange(M, dtype=np.uint64)).ravel()
                H = clean[r] + scale[r] * noise(key, index, 1, 1.0, 0.0).reshape(draws, M)
            else:
                H = np.repeat(fixed[r][None, :], draws, axis=0)
                H[:, i] = clean[r, i] + scale[r, i] * noise(key, base + np.uint64(i), 1, 1.0, 0.0)
            counts[r, i] = np.count_nonzero(keep_top_k(H, k)[1][:, i])
    return counts
