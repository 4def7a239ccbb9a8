"""The dense NumPy formulas of noisy top-k gating (Shazeer et al. 2017): KeepTopK, the gate, the smooth
load estimator, CV² and the importance loss.

One place for the formulas that the gating twins (`lab.kernels.gating_numpy`) compute and that the
models' gates and losses check their arguments for and call. Unchecked: every caller checks first.
Logits H (n, M) or (..., M), experts along the last axis, k in [1, M]; complex-capable where a
gradient is checked by complex step (selections use real parts).

Tie rule. KeepTopK keeps exactly k experts per row: the experts ordered by decreasing H, equal values
by increasing index (the lowest index wins a tie, like `np.argmax`), and the first k of that order.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

__all__ = [
    "cv_squared",
    "cv_squared_gradient",
    "decreasing_order",
    "importance_loss",
    "keep_top_k",
    "kth_excluding",
    "normal_cdf",
    "smooth_load",
    "softplus",
    "standardized_gap",
    "top_k_gates",
]

_SQRT_HALF = math.sqrt(0.5)
# |z| beyond which Φ(z) is exactly 0 or 1 and φ(z), z·φ(z) are exactly 0 in double precision:
# capping the standardized gap there changes no value and avoids inf·0 for tiny noise scales.
_Z_CAP = 64.0


def softplus(z: np.ndarray) -> np.ndarray:
    """Softplus(z) = log(1 + e^z), the noise scale of H (Shazeer et al., eq. 4), finite for finite z."""
    pos = np.real(z) > 0
    return np.where(pos, z, 0) + np.log1p(np.exp(np.where(pos, -z, z)))


def normal_cdf(z: np.ndarray) -> np.ndarray:
    """Standard normal CDF Φ(z) = erfc(−z/√2)/2, accurate in both tails; NaN propagates."""
    return 0.5 * special.erfc(-z * _SQRT_HALF)


def decreasing_order(H: np.ndarray) -> np.ndarray:
    """Experts sorted by decreasing H along the last axis, ties by increasing index (the tie rule)."""
    return np.argsort(-np.real(H), axis=-1, kind="stable")


def keep_top_k(H: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The tie-rule order and the support of KeepTopK(H, k) (eq. 5), exactly k True per row."""
    order = decreasing_order(H)
    mask = np.zeros(H.shape, dtype=bool)
    np.put_along_axis(mask, order[..., :k], True, axis=-1)
    return order, mask


def top_k_gates(H: np.ndarray, k: int) -> np.ndarray:
    """G = Softmax(KeepTopK(H, k)) (eq. 3) along the last axis: zero off the top k, finite at finite H."""
    order, mask = keep_top_k(H, k)
    peak = np.take_along_axis(H, order[..., :1], axis=-1)
    e = np.where(mask, np.exp(H - peak), 0)
    return e / e.sum(axis=-1, keepdims=True)


def kth_excluding(
    H: np.ndarray, k: int, order: np.ndarray, mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """kth_excluding(H, k, i) of eq. 8, the k-th largest of {H_j : j ≠ i}, and its expert (−∞ at k = M)."""
    if k == H.shape[-1]:
        return np.full(H.shape, -np.inf, dtype=H.dtype), np.full(H.shape, -1, dtype=np.int64)
    index = np.where(mask, order[..., k : k + 1], order[..., k - 1 : k])
    return np.take_along_axis(H, index, axis=-1), index


def standardized_gap(clean: np.ndarray, scale: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """z_i = (c_i − kth_excluding(H, k, i)) / s_i, the argument of Φ in P(x, i) (eq. 9), capped at 64."""
    with np.errstate(over="ignore"):
        z = (clean - threshold) / scale
    return np.where(np.abs(np.real(z)) > _Z_CAP, np.sign(np.real(z)) * _Z_CAP, z)


def smooth_load(clean: np.ndarray, scale: np.ndarray, H: np.ndarray, k: int) -> np.ndarray:
    """P(x, i) = Φ((c_i − kth_excluding(H(x), k, i)) / s_i) (eq. 9): P(i in the top k) over ξ_i alone."""
    if k == H.shape[-1]:
        return np.ones_like(clean)
    threshold, _ = kth_excluding(H, k, *keep_top_k(H, k))
    return normal_cdf(standardized_gap(clean, scale, threshold))


def cv_squared(v: np.ndarray):
    """CV(v)² = Var(v) / mean(v)², population variance (the w·CV² of L_importance and L_load, eqs. 7, 11)."""
    mean = v.mean()
    if np.real(mean) == 0:
        raise ValueError("v must have a non-zero mean: CV(v)² is undefined, the mean of v is 0")
    centred = v - mean
    return (centred * centred).mean() / (mean * mean)


def cv_squared_gradient(v: np.ndarray) -> np.ndarray:
    """∂CV(v)²/∂v_j = 2 (v_j − μ − σ²/μ) / (M μ²), with μ = mean(v), σ² = Var(v)."""
    mean = v.mean()
    if np.real(mean) == 0:
        raise ValueError("v must have a non-zero mean: CV(v)² is undefined, the mean of v is 0")
    centred = v - mean
    var = (centred * centred).mean()
    return 2.0 * (centred - var / mean) / (v.size * mean * mean)


def importance_loss(H: np.ndarray, k: int, w: float) -> tuple[float, np.ndarray]:
    """L_importance = w·CV(Σ_x G(x))² (eqs. 6–7) with G = Softmax(KeepTopK(H, k)), and ∂L/∂H (n, M)."""
    G = top_k_gates(H, k)
    imp = G.sum(axis=0)
    g = w * cv_squared_gradient(imp)
    d_H = G * (g - (G * g).sum(axis=1, keepdims=True))
    return w * cv_squared(imp), d_H
