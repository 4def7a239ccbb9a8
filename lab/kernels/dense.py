"""The dense NumPy formulas of the MoE layer of Chen et al. 2022 (Sec. 3.2–3.3): gate, experts, ℓ', (E.2).

One place for the formulas that the NumPy twins (`lab.kernels.routed_numpy`, `structured_numpy`)
compute and that the model's public functions check their arguments for and call. Unchecked: every
caller checks first (the model by `lab.core.validate`, the twins by `lab.kernels._checks`). Plain
NumPy, complex-capable, so the exact gradients can be tested against complex-step derivatives:
x (n, P, d), W (M, J, d), routes (n,) in [0, M), act an activation name.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from lab.kernels.activations import activation

__all__ = [
    "expert_gradient",
    "expert_outputs",
    "gate_values",
    "logistic_loss_derivative",
    "routed_expert_outputs",
]


def gate_values(h: np.ndarray) -> np.ndarray:
    """Route gate values π = softmax(h) along the last axis (Sec. 3.2), stable at any finite logits."""
    shifted = h - np.max(np.real(h), axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def expert_outputs(x: np.ndarray, W: np.ndarray, act: str) -> np.ndarray:
    """Every expert on every sample, f_m(x; W) = Σ_j Σ_p σ(⟨w_{m,j}, x⁽ᵖ⁾⟩) (3.1), shape (n, M)."""
    sigma, _ = activation(act)
    M, J, d = W.shape
    z = x @ W.reshape(M * J, d).T  # (n, P, M*J)
    return sigma(z).reshape(x.shape[0], x.shape[1], M, J).sum(axis=(1, 3))


def routed_expert_outputs(x: np.ndarray, W: np.ndarray, routes: np.ndarray, act: str) -> np.ndarray:
    """f_{m_i}(x_i; W) (3.1) for each sample's routed expert m_i, shape (n,)."""
    return np.take_along_axis(expert_outputs(x, W, act), routes[:, None], axis=1)[:, 0]


def logistic_loss_derivative(z: np.ndarray) -> np.ndarray:
    """ℓ'(z) = −1 / (1 + e^{z}) of the loss (3.3), in (−1, 0), finite everywhere; NaN propagates."""
    if not np.iscomplexobj(z):
        return -special.expit(-z)
    return -1.0 / (1.0 + np.exp(z))


def expert_gradient(
    x: np.ndarray, W: np.ndarray, routes: np.ndarray, coef: np.ndarray, act: str
) -> np.ndarray:
    """Σ_{i: m_i = m} coef_i Σ_p σ'(⟨w_{m,j}, x_i⁽ᵖ⁾⟩) x_i⁽ᵖ⁾ for every (m, j): the body of (E.2)."""
    _, sigma_prime = activation(act)
    grad = np.zeros(W.shape, dtype=np.result_type(x, W, coef))
    for m in range(W.shape[0]):
        mine = routes == m
        xm = x[mine]
        g = sigma_prime(xm @ W[m].T) * coef[mine, None, None]  # (n_m, P, J)
        grad[m] = np.einsum("npj,npd->jd", g, xm)
    return grad
