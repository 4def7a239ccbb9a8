"""Numba kernels of the router's two products (Chen et al. 2022, Sec. 3.2 and (E.1)); twins in
`lab.kernels.router_numpy`.

The router's logits h_i = Θᵀ Σ_p x_i⁽ᵖ⁾ are the rows of s Θ, with s (n, d) the patch sums that
`training.prepare` computes once, and its gradient ∇Θ = Σ_i s_i ∂L/∂h_iᵀ (E.1) is sᵀ ∂L/∂h. With
M = 8 experts a row of Θ is one float64 machine vector (`lab.kernels._simd`), so h_i is d broadcast
multiply-adds into one register, eight samples at a time, and sᵀ ∂L/∂h adds eight samples'
s_{i,k} ∂L/∂h_i to row k of a d × M buffer per chunk of samples, per load and store of the row; wider
M takes several vectors. Each broadcast of s_{i,k} is a load: with four samples at a time the five
loads per four products bound the loop, and eight took the logits from 0.19 to 0.16 ms and the
gradient from 0.18 to 0.17 ms on one thread at setting 1, the same bits (a sample's sum keeps its
order). One-thread BLAS (OpenBLAS's small-N GEMM on a 16,000 × 50 matrix) took 0.35 ms and 0.39 ms.
Both are serial, GIL-free loops over a range of samples or chunks, run on the lab's threads
(`lab.kernels._threads.over_threads`).

Determinism is that of `lab.kernels._shared`: a row of h is one sample's sum in order of k whatever
the thread, and ∇Θ adds the chunks' buffers in chunk order. The entry points check their arguments
with `lab.kernels._checks`, pad M to whole vectors (Θ and ∂L/∂h are small or already padded) and
compute in the dtype of s.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from lab.kernels import _checks
from lab.kernels._shared import CHUNKS
from lab.kernels._simd import VECTOR_BYTES, empty_aligned, lanes, vfma, vload, vstore, vzero
from lab.kernels._threads import ROWS, over_threads
from lab.kernels.routed import _summed

__all__ = ["router_gradient", "router_logits"]


def _padded(a: np.ndarray, dtype) -> np.ndarray:
    """a (rows, M) in `dtype`, C-contiguous, its columns padded with zeros to whole vectors."""
    lanes = VECTOR_BYTES // np.dtype(dtype).itemsize
    width = -(-a.shape[1] // lanes) * lanes
    if width == a.shape[1]:
        return np.ascontiguousarray(a, dtype=dtype)
    out = np.zeros((a.shape[0], width), dtype=dtype)
    out[:, : a.shape[1]] = a
    return out


def router_logits(s, Theta):
    """h = s Θ (n, M): the router's logits Θᵀ Σ_p x⁽ᵖ⁾ of every sample (Sec. 3.2)."""
    s, Theta = _checks.router_logits(s, Theta)
    s = np.ascontiguousarray(s)
    padded = _padded(Theta, s.dtype)
    h = np.empty((s.shape[0], padded.shape[1]), dtype=s.dtype)  # aligned rows were no faster here
    over_threads(_logits_rows, s.shape[0], s, padded, h, grain=ROWS)
    return h if h.shape[1] == Theta.shape[1] else np.ascontiguousarray(h[:, : Theta.shape[1]])


def router_gradient(s, dh):
    """∇Θ = sᵀ ∂L/∂h (d, M): Σ_i s_i ∂L/∂h_iᵀ of (E.1)."""
    s, dh = _checks.router_gradient(s, dh)
    s = np.ascontiguousarray(s)
    padded = _padded(dh, s.dtype)
    buffers = empty_aligned((CHUNKS, s.shape[1], padded.shape[1]), s.dtype)
    over_threads(_gradient_chunks, CHUNKS, s, padded, buffers)
    grad = _summed(buffers)
    return grad if grad.shape[1] == dh.shape[1] else np.ascontiguousarray(grad[:, : dh.shape[1]])


@njit(cache=True, error_model="numpy", fastmath=True, nogil=True)
def _logits_rows(lo, hi, s, Theta, h):
    """Rows lo..hi − 1 of h (n, Mp) = s Θ for Θ (d, Mp), Mp whole vectors: per block of eight samples
    and vector of experts, eight sums of d broadcast multiply-adds (nine loads per eight products)."""
    d = s.shape[1]
    Mp = Theta.shape[1]
    hf, tf = h.reshape(-1), Theta.reshape(-1)
    step = lanes(s)
    for v in range(0, Mp, step):
        i = lo
        while i + 8 <= hi:
            a0, a1, a2, a3 = vzero(hf), vzero(hf), vzero(hf), vzero(hf)
            a4, a5, a6, a7 = vzero(hf), vzero(hf), vzero(hf), vzero(hf)
            for k in range(d):
                row = vload(tf, k * Mp + v)
                a0, a1 = vfma(a0, s[i, k], row), vfma(a1, s[i + 1, k], row)
                a2, a3 = vfma(a2, s[i + 2, k], row), vfma(a3, s[i + 3, k], row)
                a4, a5 = vfma(a4, s[i + 4, k], row), vfma(a5, s[i + 5, k], row)
                a6, a7 = vfma(a6, s[i + 6, k], row), vfma(a7, s[i + 7, k], row)
            vstore(hf, i * Mp + v, a0)
            vstore(hf, (i + 1) * Mp + v, a1)
            vstore(hf, (i + 2) * Mp + v, a2)
            vstore(hf, (i + 3) * Mp + v, a3)
            vstore(hf, (i + 4) * Mp + v, a4)
            vstore(hf, (i + 5) * Mp + v, a5)
            vstore(hf, (i + 6) * Mp + v, a6)
            vstore(hf, (i + 7) * Mp + v, a7)
            i += 8
        while i < hi:
            a0 = vzero(hf)
            for k in range(d):
                a0 = vfma(a0, s[i, k], vload(tf, k * Mp + v))
            vstore(hf, i * Mp + v, a0)
            i += 1


@njit(cache=True, error_model="numpy", fastmath=True, nogil=True)
def _gradient_chunks(lo, hi, s, dh, buffers):
    """Chunks lo..hi − 1 of `CHUNKS` of sᵀ dh (d, Mp) for dh (n, Mp), Mp whole vectors: chunk c adds eight
    samples' s_{i,k} dh_i, in order, to row k of buffers[c] per load and store (added in chunk order by the
    caller)."""
    n, d = s.shape
    Mp = dh.shape[1]
    df = dh.reshape(-1)
    step = lanes(s)
    for c in range(lo, hi):
        b = buffers[c].reshape(-1)
        b[:] = 0.0
        first, last = c * n // CHUNKS, (c + 1) * n // CHUNKS
        for v in range(0, Mp, step):
            i = first
            while i + 8 <= last:
                g0, g1 = vload(df, i * Mp + v), vload(df, (i + 1) * Mp + v)
                g2, g3 = vload(df, (i + 2) * Mp + v), vload(df, (i + 3) * Mp + v)
                g4, g5 = vload(df, (i + 4) * Mp + v), vload(df, (i + 5) * Mp + v)
                g6, g7 = vload(df, (i + 6) * Mp + v), vload(df, (i + 7) * Mp + v)
                for k in range(d):
                    acc = vload(b, k * Mp + v)
                    acc = vfma(acc, s[i, k], g0)
                    acc = vfma(acc, s[i + 1, k], g1)
                    acc = vfma(acc, s[i + 2, k], g2)
                    acc = vfma(acc, s[i + 3, k], g3)
                    acc = vfma(acc, s[i + 4, k], g4)
                    acc = vfma(acc, s[i + 5, k], g5)
                    acc = vfma(acc, s[i + 6, k], g6)
                    acc = vfma(acc, s[i + 7, k], g7)
                    vstore(b, k * Mp + v, acc)
                i += 8
            while i < last:
                g0 = vload(df, i * Mp + v)
                for k in range(d):
                    vstore(b, k * Mp + v, vfma(vload(b, k * Mp + v), s[i, k], g0))
                i += 1
