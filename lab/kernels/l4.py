"""Numba kernel for the hot loop of Makkuva et al.: the minibatch gradient of L4 (eq. 6) in SGD.

A single serial pass over the samples (deterministic, no temporaries of size n); its NumPy
twin is `lab.kernels.l4_numpy.l4_gradient`, and `lab.makkuva2020.losses.sample_l4_gradient`
dispatches between them. Arrays may be float64 or float32.

The L_log gradient (eq. 8) has no kernel: a single-pass Numba version was measured slower than
the NumPy code (≈ 70 vs 50 ms at n = 10⁵ on the shared 2-core machine), whose cost is the
vectorised exp that a scalar loop cannot match.

`l4_gradient` checks its arguments with `lab.kernels._checks` (as the twin does) and runs the jitted
loop `_l4_gradient`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from lab.kernels import _checks

__all__ = ["l4_gradient"]


def l4_gradient(A, x, q4, q2, c, c_prime, mu, lam, delta):
    """Value and ∇_A of the sample L4 of eq. (6) given Q4(y), Q2(y) (twin: `lab.kernels.l4_numpy`)."""
    return _l4_gradient(*_checks.l4_gradient(A, x, q4, q2, c, c_prime, mu, lam, delta))


@njit(cache=True, error_model="numpy")
def _l4_gradient(A, x, q4, q2, c, c_prime, mu, lam, delta):
    """The single serial pass of `l4_gradient` (arguments checked by the caller)."""
    k, d = A.shape
    n = x.shape[0]
    norms = np.zeros(k, dtype=A.dtype)
    for i in range(k):
        for p in range(d):
            norms[i] += A[i, p] * A[i, p]
    G = A @ A.T
    tr_n = norms.sum()
    frob = (G * G).sum()
    norm4 = 3.0 * (norms * norms).sum()
    grad = np.zeros_like(A)
    g_r = np.zeros_like(A)
    r = np.zeros(k, dtype=A.dtype)
    P = np.zeros(k, dtype=A.dtype)
    z = np.zeros(d, dtype=A.dtype)
    coef = np.zeros(k, dtype=A.dtype)
    sum_w = 0.0
    sum_ws2 = 0.0
    sum_wp2 = np.zeros(k, dtype=A.dtype)
    sum_q2 = 0.0
    value = 0.0
    for s in range(n):
        w = q4[s] / (n * c)
        s2 = 0.0
        for i in range(k):
            acc = 0.0
            for p in range(d):
                acc += A[i, p] * x[s, p]
            P[i] = acc
            s2 += acc * acc
        zz = 0.0
        for p in range(d):
            acc = 0.0
            for i in range(k):
                acc += P[i] * A[i, p]
            z[p] = acc
            zz += acc * acc
        diag = 0.0
        for i in range(k):
            diag += P[i] ** 4 - 6.0 * norms[i] * P[i] * P[i]
            gp = 0.0
            for j in range(k):
                gp += G[i, j] * P[j]
            coef[i] = w * (
                4.0 * (s2 - tr_n) * P[i] - 8.0 * gp - (1.0 + mu) * (4.0 * P[i] ** 3 - 12.0 * norms[i] * P[i])
            )
            sum_wp2[i] += w * P[i] * P[i]
            r[i] += q2[s] * (P[i] * P[i] - norms[i])
        diag += norm4
        value += w * (s2 * s2 - 2.0 * tr_n * s2 - 4.0 * zz + tr_n * tr_n + 2.0 * frob - (1.0 + mu) * diag)
        for i in range(k):
            a = q2[s] * P[i]
            b = -8.0 * w * P[i]
            for p in range(d):
                grad[i, p] += coef[i] * x[s, p] + b * z[p]
                g_r[i, p] += a * x[s, p]
        sum_w += w
        sum_ws2 += w * s2
        sum_q2 += q2[s]
    GA = G @ A
    for i in range(k):
        ri = r[i] / (n * c_prime)
        scale_a = -4.0 * sum_ws2 + 4.0 * tr_n * sum_w - (1.0 + mu) * 12.0 * (norms[i] * sum_w - sum_wp2[i])
        value += lam * (ri - 1.0) ** 2 + 0.5 * delta * norms[i]
        for p in range(d):
            dr = 2.0 / (n * c_prime) * (g_r[i, p] - sum_q2 * A[i, p])
            grad[i, p] += scale_a * A[i, p] + 8.0 * sum_w * GA[i, p] + 2.0 * lam * (ri - 1.0) * dr
            grad[i, p] += delta * A[i, p]
    return value, grad
