"""Numba kernels of the routed MoE layer (Chen et al. 2022, Sec. 3); twins in `lab.kernels.routed_numpy`.

Determinism and the counter-based noise are those of `lab.kernels._shared`: reductions over
samples use a fixed number of chunks, and draw (i, m) of a noise stream does not depend on the
thread that makes it, so every result here is independent of the thread count. The loops that pay for
a thread's hand-over (the forward, the backward, the fused step, every expert on every sample, the routing
counts, the perturbed argmax, the softmax gate's exponentials and normalisation) are serial, GIL-free
loops over a range of samples or chunks, which `lab.kernels._threads.over_threads` runs on the lab's
threads (a third of the compile time of `parallel=True`); the cheaper ones (the noise, the gate's shift,
the buffer sum) run serially on the calling thread.

Activation codes follow `lab.kernels.activations.ACTIVATION_CODES`: 0 cubic, 1 linear, 2 relu,
3 celu, 4 gelu, 5 tanh. Noise codes follow `NOISE_CODES`: uniform on [a, b), Gaussian with
mean 0 and standard deviation a, Gumbel with location 0 and scale a.

The names in `__all__` are Python entry points: each checks its arguments once with
`lab.kernels._checks` (codes, counts, seeds in [0, 2**64), shapes, routes in [0, M)), the same
checks its NumPy twin runs, and then calls the jitted loop of the same name with a leading
underscore (and a `_rows` or `_chunks` suffix where it runs on the lab's threads). The jitted loops
trust their arguments; nothing outside this module calls them.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from lab.kernels import _checks
from lab.kernels._shared import CHUNKS, NOISE_CODES, _add_four_rows, draw, uint64
from lab.kernels._shared import stream_key as _stream_key
from lab.kernels._threads import ROWS, over_threads

__all__ = [
    "NOISE_CODES",
    "dense_forward",
    "noise",
    "perturbed_argmax",
    "routed_backward",
    "routed_forward",
    "routed_step",
    "routing_counts",
    "softmax_gate",
    "softmax_logit_gradient",
    "stream_key",
]

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@njit(cache=True, error_model="numpy")
def _noise(key, index, code, a, b):
    """Draws number `index` (1-d) of stream `key`: uniform [a, b), N(0, a²), Gumbel(0, a) by `NOISE_CODES`."""
    if code < 0 or code > 2:
        raise ValueError("noise code must be 0, 1 or 2")
    stream = uint64(key)
    out = np.empty(index.shape[0])
    for t in range(index.shape[0]):
        out[t] = draw(stream, index[t], code, a, b)
    return out


@njit(cache=True, error_model="numpy", inline="always")
def _sigma(z, code):
    if code == 0:
        return z * z * z
    if code == 1:
        return z
    if code == 2:
        return z if z > 0 else 0.0 * z
    if code == 3:
        return z if z > 0 else math.expm1(z)
    if code == 4:
        return z * 0.5 * (1.0 + math.erf(z * _SQRT_HALF))
    return math.tanh(z)


@njit(cache=True, error_model="numpy", inline="always")
def _sigma_prime(z, code):
    if code == 0:
        return 3.0 * z * z
    if code == 1:
        return 1.0 + 0.0 * z
    if code == 2:
        return 1.0 + 0.0 * z if z > 0 else 0.0 * z
    if code == 3:
        return 1.0 + 0.0 * z if z > 0 else math.exp(z)
    if code == 4:
        return 0.5 * (1.0 + math.erf(z * _SQRT_HALF)) + z * _INV_SQRT_2PI * math.exp(-0.5 * z * z)
    return _sech2(z)


@njit(cache=True, error_model="numpy", inline="always")
def _sech2(z):
    """tanh' z = sech² z as 4u/(1 + u)², u = e^{−2|z|}: full precision where 1 − tanh² z cancels."""
    u = math.exp(-2.0 * abs(z))
    return 4.0 * u / ((1.0 + u) * (1.0 + u))


def _reduction_chunks(n: int) -> int:
    """Number of sample chunks for a reduction over n samples: a function of n only, never of threads."""
    return max(1, min(CHUNKS, n // 512))


@njit(cache=True, error_model="numpy", inline="always")
def _expert_on_sample(x, i, W, m, zrow, act):
    """z_{p,j} = ⟨w_{m,j}, x_i⁽ᵖ⁾⟩ into zrow (P, J); returns f_m(x_i) = Σ_{p,j} σ(z_{p,j}).

    Tiles of four patches by four filters: each vectorised pass over d loads eight rows and
    accumulates sixteen dot products, so every load feeds two products or more.
    """
    P, d = x.shape[1], x.shape[2]
    J = W.shape[1]
    p = 0
    while p + 4 <= P:
        x0, x1, x2, x3 = x[i, p], x[i, p + 1], x[i, p + 2], x[i, p + 3]
        j = 0
        while j + 4 <= J:
            u0, u1, u2, u3 = W[m, j], W[m, j + 1], W[m, j + 2], W[m, j + 3]
            s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = 0.0
            s20 = s21 = s22 = s23 = s30 = s31 = s32 = s33 = 0.0
            for k in range(d):
                a0, a1, a2, a3 = x0[k], x1[k], x2[k], x3[k]
                b0, b1, b2, b3 = u0[k], u1[k], u2[k], u3[k]
                s00 += a0 * b0
                s01 += a0 * b1
                s02 += a0 * b2
                s03 += a0 * b3
                s10 += a1 * b0
                s11 += a1 * b1
                s12 += a1 * b2
                s13 += a1 * b3
                s20 += a2 * b0
                s21 += a2 * b1
                s22 += a2 * b2
                s23 += a2 * b3
                s30 += a3 * b0
                s31 += a3 * b1
                s32 += a3 * b2
                s33 += a3 * b3
            zrow[p, j], zrow[p, j + 1], zrow[p, j + 2], zrow[p, j + 3] = s00, s01, s02, s03
            zrow[p + 1, j], zrow[p + 1, j + 1], zrow[p + 1, j + 2], zrow[p + 1, j + 3] = s10, s11, s12, s13
            zrow[p + 2, j], zrow[p + 2, j + 1], zrow[p + 2, j + 2], zrow[p + 2, j + 3] = s20, s21, s22, s23
            zrow[p + 3, j], zrow[p + 3, j + 1], zrow[p + 3, j + 2], zrow[p + 3, j + 3] = s30, s31, s32, s33
            j += 4
        while j < J:
            u = W[m, j]
            s0 = s1 = s2 = s3 = 0.0
            for k in range(d):
                s0 += u[k] * x0[k]
                s1 += u[k] * x1[k]
                s2 += u[k] * x2[k]
                s3 += u[k] * x3[k]
            zrow[p, j], zrow[p + 1, j], zrow[p + 2, j], zrow[p + 3, j] = s0, s1, s2, s3
            j += 1
        p += 4
    while p < P:
        for j in range(J):
            s0 = 0.0
            for k in range(d):
                s0 += W[m, j, k] * x[i, p, k]
            zrow[p, j] = s0
        p += 1
    total = 0.0
    for p in range(P):
        for j in range(J):
            total += _sigma(zrow[p, j], act)
    return total


@njit(cache=True, error_model="numpy", inline="always")
def _sigma_and_prime(z, code):
    """(σ(z), σ'(z)) with one transcendental call where they share it (tanh, GELU, CELU).

    CELU's σ'(z) = e^z for z ≤ 0 comes as expm1(z) + 1: off by at most one rounding of 1 (1e-16)."""
    if code == 5:
        return math.tanh(z), _sech2(z)
    if code == 4:
        half = 0.5 * (1.0 + math.erf(z * _SQRT_HALF))
        return z * half, half + z * _INV_SQRT_2PI * math.exp(-0.5 * z * z)
    if code == 3 and z <= 0:
        e = math.expm1(z)
        return e, e + 1.0
    return _sigma(z, code), _sigma_prime(z, code)


@njit(cache=True, error_model="numpy", inline="always")
def _slopes(z, scale, act, g):
    """g (P, J) = scale · σ'(z): the per-patch, per-filter coefficients of sample i's term of (E.2)."""
    for p in range(z.shape[0]):
        for j in range(z.shape[1]):
            g[p, j] = scale * _sigma_prime(z[p, j], act)


@njit(cache=True, error_model="numpy")
def _logistic_slope(margin):
    """ℓ'(margin) = −1 / (1 + e^{margin}) of (3.3), without overflow: one exp, no branch on the sign
    (a branch on a random sign mispredicts half the time)."""
    e = math.exp(-abs(margin))  # e^{margin} or e^{−margin}, whichever is at most 1
    return -(1.0 if margin < 0 else e) / (1.0 + e)


@njit(cache=True, error_model="numpy", inline="always")
def _add_expert_gradient(x, i, g, grad):
    """grad (J, d) += Σ_p g_{p,j} x_i⁽ᵖ⁾: sample i's term of (E.2) with g from `_slopes`, four patches
    at a time (`_add_four_rows`)."""
    P, d = x.shape[1], x.shape[2]
    J = g.shape[1]
    p = 0
    while p + 4 <= P:
        _add_four_rows(
            x[i, p], x[i, p + 1], x[i, p + 2], x[i, p + 3], g[p], g[p + 1], g[p + 2], g[p + 3], grad
        )
        p += 4
    while p < P:
        for j in range(J):
            a0, r0 = g[p, j], grad[j]
            for k in range(d):
                r0[k] += a0 * x[i, p, k]
        p += 1


@njit(cache=True, error_model="numpy")
def _sum_buffers(flat):
    """Σ_c flat[c] of (chunks, entries), each entry summed over c in increasing order (callers pass their
    buffers flat, so one specialization per dtype serves every shape)."""
    total = flat[0].copy()
    for c in range(1, flat.shape[0]):
        for e in range(flat.shape[1]):
            total[e] += flat[c, e]
    return total


def _summed(buffers: np.ndarray) -> np.ndarray:
    """Σ_c buffers[c] in chunk order, in the shape of one buffer (`_sum_buffers`)."""
    return _sum_buffers(buffers.reshape(buffers.shape[0], -1)).reshape(buffers.shape[1:])


@njit(cache=True, error_model="numpy", fastmath=True, nogil=True)
def _routed_forward_rows(lo, hi, x, W, routes, act, f, z):
    """Samples lo..hi − 1 through their routed experts: f_{m_i}(x_i) (3.1) and z_i (P, J) into f, z."""
    for i in range(lo, hi):
        f[i] = _expert_on_sample(x, i, W, routes[i], z[i], act)


@njit(cache=True, error_model="numpy", fastmath=True, nogil=True)
def _routed_backward_chunks(lo, hi, chunks, x, z, routes, coef, act, buffers):
    """Chunks lo..hi − 1 of the sum in (E.2): Σ_{i in chunk c, m_i = m} coef_i Σ_p σ'(z_{i,p}) x_i⁽ᵖ⁾ into
    buffers[c, m] (M, J, d)."""
    n, P = x.shape[0], x.shape[1]
    g = np.empty((P, z.shape[2]), dtype=x.dtype)
    for c in range(lo, hi):
        mine = buffers[c]
        for i in range(c * n // chunks, (c + 1) * n // chunks):
            _slopes(z[i], coef[i], act, g)
            _add_expert_gradient(x, i, g, mine[routes[i]])


@njit(cache=True, error_model="numpy", fastmath=True, nogil=True)
def _routed_step_chunks(lo, hi, chunks, x, W, routes, margin_scale, act, f, buffers):
    """Chunks lo..hi − 1 of the fused forward and backward of mean_i ℓ(s_i f_{m_i}(x_i)), ℓ logistic:
    f_i into f, and Σ_i ℓ'(s_i f_i) s_i / n · Σ_p σ'(z) x_i⁽ᵖ⁾ of chunk c into buffers[c, m_i] (E.2)."""
    n, P = x.shape[0], x.shape[1]
    zrow = np.empty((P, W.shape[1]), dtype=x.dtype)
    for c in range(lo, hi):
        mine = buffers[c]
        for i in range(c * n // chunks, (c + 1) * n // chunks):
            m = routes[i]
            f[i] = _expert_on_sample(x, i, W, m, zrow, act)
            margin = margin_scale[i] * f[i]
            _slopes(zrow, _logistic_slope(margin) * margin_scale[i] / n, act, zrow)
            _add_expert_gradient(x, i, zrow, mine[m])


@njit(cache=True, error_model="numpy")
def _shifted_logits(h):
    """h_{i,m} − max_m h_{i,m}: exponents of softmax(h) that are at most 0, so e^x cannot overflow."""
    n, M = h.shape
    out = np.empty_like(h)
    for i in range(n):
        peak = h[i, 0]
        for m in range(1, M):
            x = h[i, m]
            peak = x if x > peak else peak  # max(peak, x) for every x, NaN included; a faster select
        for m in range(M):
            out[i, m] = h[i, m] - peak
    return out


def _exp_rows(lo, hi, e):
    """Rows lo..hi − 1 of e ← exp(e) in place: NumPy's SIMD loop, which releases the GIL."""
    np.exp(e[lo:hi], out=e[lo:hi])


@njit(cache=True, error_model="numpy", nogil=True)
def _normalised_gate_rows(lo, hi, e, routes, g):
    """Rows lo..hi − 1 of π = e / Σ_m e (in place; e > 0 with a 1 in every row) and g_i = π_{i, m_i}."""
    M = e.shape[1]
    for i in range(lo, hi):
        total = 0.0
        for m in range(M):
            total += e[i, m]
        for m in range(M):
            e[i, m] /= total
        g[i] = e[i, routes[i]]


@njit(cache=True, error_model="numpy")
def _softmax_logit_gradient(pi, routes, c):
    """∂L/∂h_{i,m} = c_i (1[m = m_i] − π_{i,m}) (E.1): −c_i π_{i,m}, then c_i added at m_i (the twin's
    two roundings, in its order: no fused multiply-add, `fastmath` off)."""
    n, M = pi.shape
    dh = np.empty((n, M), dtype=pi.dtype)
    for i in range(n):
        for m in range(M):
            dh[i, m] = -c[i] * pi[i, m]
        dh[i, routes[i]] += c[i]
    return dh


@njit(cache=True, error_model="numpy", fastmath=True, nogil=True)
def _dense_forward_rows(lo, hi, x, W, act, out):
    """Every expert on samples lo..hi − 1, f_m(x_i) (3.1), into out (n, M)."""
    zrow = np.empty((x.shape[1], W.shape[1]), dtype=x.dtype)
    for i in range(lo, hi):
        for m in range(W.shape[0]):
            out[i, m] = _expert_on_sample(x, i, W, m, zrow, act)


@njit(cache=True, error_model="numpy", nogil=True)
def _perturbed_argmax_rows(lo, hi, h, seed, noise_code, a, b, routes):
    """Top-1 routes argmax_m {h_{i,m} + r_{i,m}} of samples lo..hi − 1 into routes, noise r drawn here
    (a row's draws are made before its comparisons, so the hashing of uniform draws vectorises)."""
    M = h.shape[1]
    key = _stream_key(seed)
    v = np.empty(M, dtype=np.float64)
    for i in range(lo, hi):
        for m in range(M):
            v[m] = h[i, m] + draw(key, i * M + m, noise_code, a, b)
        best = -np.inf
        arg = 0
        for m in range(M):
            if v[m] > best:
                best = v[m]
                arg = m
        routes[i] = arg


@njit(cache=True, error_model="numpy", nogil=True)
def _routing_counts_chunks(lo, hi, h, draws, seed, noise_code, a, b, counts):
    """Chunks lo..hi − 1 of `CHUNKS`: how often each expert wins argmax_m {h_m + r_m} over chunk c's
    draws of the noise, into counts[c] (M,)."""
    M = h.shape[0]
    key = _stream_key(seed)
    for c in range(lo, hi):
        for t in range(c * draws // CHUNKS, (c + 1) * draws // CHUNKS):
            best = -np.inf
            arg = 0
            for m in range(M):
                v = h[m] + draw(key, t * M + m, noise_code, a, b)
                if v > best:
                    best = v
                    arg = m
            counts[c, arg] += 1


# ------------------------------------------------------------------ checked entry points (see `_checks`)


def stream_key(seed):
    """Key of the noise stream for a seed in [0, 2**64) (twin: `lab.kernels.routed_numpy.stream_key`)."""
    return _stream_key(_checks.numba_seed(_checks.stream_key(seed)))


def noise(key, index, code, a, b):
    """Draws number `index` (1-d) of stream `key`: uniform [a, b), N(0, a²), Gumbel(0, a) by `NOISE_CODES`."""
    key, index, code, a, b = _checks.noise(key, index, code, a, b)
    return _noise(np.uint64(key), index, code, a, b)


def routed_forward(x, W, routes, act):
    """Each sample through its routed expert only: f_{m_i}(x_i) (3.1) and pre-activations z (n, P, J)."""
    x, W, routes, act = _checks.routed_forward(x, W, routes, act)
    n, P = x.shape[0], x.shape[1]
    f, z = np.empty(n, dtype=x.dtype), np.empty((n, P, W.shape[1]), dtype=x.dtype)
    over_threads(_routed_forward_rows, n, x, W, routes, act, f, z, grain=ROWS)
    return f, z


def routed_backward(x, z, routes, coef, M, act):
    """Σ_{i: m_i = m} coef_i Σ_p σ'(z_{i,p,j}) x_i⁽ᵖ⁾ for each (m, j): the sum in (E.2), shape (M, J, d)."""
    x, z, routes, coef, M, act = _checks.routed_backward(x, z, routes, coef, M, act)
    chunks = _reduction_chunks(x.shape[0])
    buffers = np.zeros((chunks, M, z.shape[2], x.shape[2]), dtype=x.dtype)
    over_threads(_routed_backward_chunks, chunks, chunks, x, z, routes, coef, act, buffers)
    return _summed(buffers)


def routed_step(x, W, routes, margin_scale, act):
    """f (n,) and ∇_W of (3.3) by (E.2) for the logistic loss, in one pass (see `_routed_step`)."""
    x, W, routes, margin_scale, act = _checks.routed_step(x, W, routes, margin_scale, act)
    chunks = _reduction_chunks(x.shape[0])
    f = np.empty(x.shape[0], dtype=x.dtype)
    buffers = np.zeros((chunks, *W.shape[:2], x.shape[2]), dtype=x.dtype)
    over_threads(_routed_step_chunks, chunks, chunks, x, W, routes, margin_scale, act, f, buffers)
    return f, _summed(buffers)


def softmax_gate(h, routes):
    """π = softmax(h) row by row and g_i = π_{i, m_i}: the gate of Sec. 3.2, stable at any finite logits.

    The exponentials are NumPy's SIMD np.exp, on the lab's threads, between two jitted passes: about
    0.11 ms at n = 16,000, M = 8 on two threads, where Numba's scalar exp call took 0.56 ms."""
    h, routes = _checks.softmax_gate(h, routes)
    e, g = _shifted_logits(h), np.empty(h.shape[0], dtype=h.dtype)
    over_threads(_exp_rows, h.shape[0], e, grain=ROWS)
    over_threads(_normalised_gate_rows, h.shape[0], e, routes, g, grain=ROWS)
    return g, e


def softmax_logit_gradient(pi, routes, c):
    """∂L/∂h (n, M) of the softmax gate from c_i = ∂L/∂g_i · g_i (E.1): g_i = π_{m_i} gives
    ∂g_i/∂h_{i,m} = g_i (1[m = m_i] − π_{i,m}). One serial pass (0.16 ms as NumPy's fancy-indexed add)."""
    pi, routes, c = _checks.softmax_logit_gradient(pi, routes, c)
    return _softmax_logit_gradient(pi, routes, c)


def dense_forward(x, W, act):
    """Every expert on every sample, f_m(x_i) (3.1), shape (n, M)."""
    x, W, act = _checks.dense_forward(x, W, act)
    out = np.empty((x.shape[0], W.shape[0]), dtype=x.dtype)
    over_threads(_dense_forward_rows, x.shape[0], x, W, act, out, grain=ROWS)
    return out


def perturbed_argmax(h, seed, noise_code, a, b):
    """Top-1 routes argmax_m {h_{i,m} + r_{i,m}} for a batch h (n, M), noise r of stream `seed`."""
    h, seed, noise_code, a, b = _checks.perturbed_argmax(h, seed, noise_code, a, b)
    routes = np.empty(h.shape[0], dtype=np.int64)
    args = (h, _checks.numba_seed(seed), noise_code, a, b, routes)
    over_threads(_perturbed_argmax_rows, h.shape[0], *args, grain=ROWS)
    return routes


def routing_counts(h, draws, seed, noise_code, a, b):
    """How often each expert wins argmax_m {h_m + r_m} over `draws` noise draws for one h (M,)."""
    h, draws, seed, noise_code, a, b = _checks.routing_counts(h, draws, seed, noise_code, a, b)
    counts = np.zeros((CHUNKS, h.shape[0]), dtype=np.int64)
    over_threads(_routing_counts_chunks, CHUNKS, h, draws, _checks.numba_seed(seed), noise_code, a, b, counts)
    return counts.sum(axis=0)
