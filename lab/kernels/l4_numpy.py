"""NumPy twin of the L4 kernel `lab.kernels.l4` (Makkuva et al. 2020, eq. 6): same signature and result."""

from __future__ import annotations

import numpy as np

from lab.kernels import _checks

__all__ = ["l4_gradient"]


def l4_gradient(A, x, q4, q2, c, c_prime, mu, lam, delta):
    """Value and ∇_A of the sample L4 of eq. (6) given Q4(y), Q2(y), by the chain rule through P = xAᵀ."""
    A, x, q4, q2, c, c_prime, mu, lam, delta = _checks.l4_gradient(A, x, q4, q2, c, c_prime, mu, lam, delta)
    n = x.shape[0]
    P = x @ A.T
    norms = np.sum(A * A, axis=1)
    G = A @ A.T
    s2 = np.sum(P * P, axis=1)
    tr_n = norms.sum()
    z = P @ A
    w = q4 / (n * c)
    all_pairs = s2 * s2 - 2 * tr_n * s2 - 4 * np.sum(z * z, axis=1) + tr_n**2 + 2 * np.sum(G * G)
    diag = np.sum(P**4, axis=1) - 6 * (P * P) @ norms + 3 * np.sum(norms**2)
    # ∇ of Σ_ij t1·c and Σ_i t2·c per sample, weighted by w and summed over samples
    g_pairs = (
        ((w * 4 * (s2 - tr_n))[:, None] * P).T @ x
        - 4 * np.sum(w * s2) * A
        - 8 * (w[:, None] * P).T @ z
        - 8 * (w[:, None] * (P @ G)).T @ x
        + w.sum() * (4 * tr_n * A + 8 * G @ A)
    )
    g_diag = (w[:, None] * (4 * P**3 - 12 * P * norms)).T @ x + (12 * (norms * w.sum() - w @ (P * P)))[
        :, None
    ] * A
    r = (q2 @ (P * P - norms)) / (n * c_prime)
    g_r = (2.0 / (n * c_prime)) * ((q2[:, None] * P).T @ x - q2.sum() * A)
    value = (
        np.sum(w * (all_pairs - (1 + mu) * diag)) + lam * np.sum((r - 1.0) ** 2) + 0.5 * delta * np.sum(A * A)
    )
    grad = g_pairs - (1 + mu) * g_diag + 2 * lam * (r - 1.0)[:, None] * g_r + delta * A
    return float(value), grad
