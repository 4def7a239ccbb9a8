"""Plain NumPy twins of the structured kernels in `lab.kernels.structured`: same signatures, same results.

A batch of Def. 3.1 (Chen et al. 2022) given by its structure (`lab.chen2022.data.StructuredBatch`):
patch t < S of sample i is signal_scale[i, t] · signals[signal_index[i, t]] + offset, the other Q = P − S
patches are `noise[i]`, kept whole. Since ⟨w, s·u + o⟩ = s⟨w, u⟩ + ⟨w, o⟩, the signal patches need only
the R × J products ⟨w_{m,j}, u_r⟩ of each expert (`signal_products`), and their gradient terms of (E.2)
add up as one scalar per (signal, filter) before one small product with the signals; only the noise
patches go through the dense formulas (the routed twins of `lab.kernels.routed_numpy`). The `offset`
carries the constant input coordinates (the bias coordinate 1 of `training.prepare`, or 0).

Pre-activations z (n, S + Q, J) list the signal patches first (in `signal_index` order), then the
noise patches. Every function checks its arguments with `lab.kernels._checks`, as the kernels do.
"""

from __future__ import annotations

import numpy as np

from lab.kernels import _checks
from lab.kernels._checks import MARGIN_LOSS_CODES
from lab.kernels.activations import ACTIVATIONS, sech2
from lab.kernels.dense import logistic_loss_derivative
from lab.kernels.routed_numpy import routed_backward, routed_forward

__all__ = [
    "MARGIN_LOSS_CODES",
    "structured_backward",
    "structured_dense_forward",
    "structured_forward",
    "structured_step",
]

_NAMES = list(ACTIVATIONS)


def signal_products(signals: np.ndarray, offset: np.ndarray, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """G (M, R, J) = ⟨w_{m,j}, u_r⟩ and b (M, J) = ⟨w_{m,j}, o⟩: all the signal patches need (Def. 3.1)."""
    return np.ascontiguousarray(np.einsum("mjd,rd->mrj", W, signals)), W @ offset


def signal_gradient(signals, offset, A, B) -> np.ndarray:
    """Σ_r A_{m,r,j} u_r + B_{m,j} o: the signal patches' part of (E.2) from their scalars, (M, J, d)."""
    return np.einsum("mrj,rd->mjd", A, signals) + B[:, :, None] * offset


def _signal_z(signals, offset, index, scale, W, routes):
    """z_{i,t,j} = s_{i,t} ⟨w_{m_i,j}, u_{r_{i,t}}⟩ + ⟨w_{m_i,j}, o⟩ for the S signal patches, (n, S, J)."""
    G, b = signal_products(signals, offset, W)
    return scale[:, :, None] * G[routes[:, None], index] + b[routes][:, None, :]


def _signal_scalars(index, scale, g, routes, M, R):
    """A (M, R, J) = Σ_{m_i = m} Σ_{r_{i,t} = r} s_{i,t} g_{i,t,j} , B (M, J) = Σ_{m_i = m} Σ_t g_{i,t,j}."""
    S, J = index.shape[1], g.shape[2]
    A = np.zeros((M, R, J), dtype=g.dtype)
    B = np.zeros((M, J), dtype=g.dtype)
    onehot = np.eye(R, dtype=g.dtype)
    for m in range(M):
        mine = routes == m
        A[m] = np.einsum("ntr,ntj->rj", onehot[index[mine]], g[mine] * scale[mine, :, None])
        B[m] = g[mine].reshape(-1, J).sum(axis=0) if S else 0.0
    return A, B


def _cast(dtype, *arrays):
    return [np.asarray(a, dtype=dtype) for a in arrays]


def structured_forward(signals, offset, signal_index, signal_scale, noise, W, routes, act):
    """Twin of `kernels.structured_forward`: f_{m_i}(x_i) (3.1) from the structure, and z (n, S + Q, J)."""
    signals, offset, index, scale, noise, W, routes, act = _checks.structured_forward(
        signals, offset, signal_index, signal_scale, noise, W, routes, act
    )
    signals, offset, scale, W = _cast(noise.dtype, signals, offset, scale, W)
    sigma, _ = ACTIVATIONS[_NAMES[act]]
    z_signal = _signal_z(signals, offset, index, scale, W, routes)
    f_noise, z_noise = routed_forward(noise, W, routes, act)
    f = sigma(z_signal).sum(axis=(1, 2)) + f_noise
    return f.astype(noise.dtype), np.concatenate([z_signal, z_noise], axis=1)


def structured_backward(signals, offset, signal_index, signal_scale, noise, z, routes, coef, M, act):
    """Twin of `kernels.structured_backward`: Σ_{i: m_i = m} coef_i Σ_p σ'(z_{i,p,j}) x_i⁽ᵖ⁾ (E.2)."""
    signals, offset, index, scale, noise, z, routes, coef, M, act = _checks.structured_backward(
        signals, offset, signal_index, signal_scale, noise, z, routes, coef, M, act
    )
    signals, offset, scale, coef = _cast(noise.dtype, signals, offset, scale, coef)
    S = index.shape[1]
    _, sigma_prime = ACTIVATIONS[_NAMES[act]]
    g = sigma_prime(z[:, :S]) * coef[:, None, None]
    A, B = _signal_scalars(index, scale, g, routes, M, signals.shape[0])
    noise_part = routed_backward(noise, np.ascontiguousarray(z[:, S:]), routes, coef, M, act)
    return (noise_part + signal_gradient(signals, offset, A, B)).astype(noise.dtype)


def margin_slope(margin: np.ndarray, loss: int) -> np.ndarray:
    """d loss / d margin for `MARGIN_LOSS_CODES`: ℓ'(m), or ℓ'(t)(1 − t²)/2 with t = tanh(m/2) (3.3)."""
    if loss == 0:
        return logistic_loss_derivative(margin)
    return logistic_loss_derivative(np.tanh(0.5 * margin)) * 0.5 * sech2(0.5 * margin)


def structured_step(
    signals, offset, signal_index, signal_scale, noise, W, routes, margin_scale, act, loss, readout=None
):
    """Twin of `kernels.structured_step`: f = Σ_j a_j Σ_p σ(z_{p,j}) and ∇_W of mean_i loss(s_i f_i)
    (3.3) by (E.2), a = `readout` (all 1 if None)."""
    args = _checks.structured_step(
        signals, offset, signal_index, signal_scale, noise, W, routes, margin_scale, act, loss, readout
    )
    signals, offset, index, scale, noise, W, routes, margin_scale, act, loss, readout = args
    _, z = structured_forward(signals, offset, index, scale, noise, W, routes, act)
    sigma, _ = ACTIVATIONS[_NAMES[act]]
    f = (sigma(z).sum(axis=1) @ readout.astype(noise.dtype)).astype(noise.dtype)
    coef = margin_slope(margin_scale * f, loss) * margin_scale / noise.shape[0]
    grad = structured_backward(signals, offset, index, scale, noise, z, routes, coef, W.shape[0], act)
    return f, (grad * readout[None, :, None]).astype(noise.dtype)


def structured_dense_forward(signals, offset, signal_index, signal_scale, noise, W, act):
    """Twin of `kernels.structured_dense_forward`: f_m(x_i) for every expert m (3.1), shape (n, M)."""
    signals, offset, index, scale, noise, W, act = _checks.structured_dense_forward(
        signals, offset, signal_index, signal_scale, noise, W, act
    )
    every = np.ones(noise.shape[0], dtype=np.int64)
    columns = [
        structured_forward(signals, offset, index, scale, noise, W, m * every, act)[0]
        for m in range(W.shape[0])
    ]
    return np.stack(columns, axis=1).reshape(noise.shape[0], W.shape[0])
