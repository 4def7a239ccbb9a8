"""Algorithm 1's inputs kept as the structure of Def. 3.1 (Chen et al. 2022): experts' kernels and router.

Three of the P patches of a sample are a scalar times one of the 2K orthonormal signals
(`data.StructuredBatch`); ⟨w, s·u⟩ = s⟨w, u⟩, so the experts need the R × J products ⟨w_{m,j}, u_r⟩
and the dense work on the P − 3 noise patches only (`lab.kernels.structured`). `inputs` is
`training.prepare` for a structured batch (×input_scale, the bias coordinate); `kernels(lib)` is a
backend whose routed kernels take these inputs, so the plan's experts, passes and gates run on them
unchanged. Linear experts do not use it: their collapse to s = Σ_p x⁽ᵖ⁾ is less work still. The
router's h = Θᵀ Σ_p x⁽ᵖ⁾ and ∇Θ (E.1) have structured forms too (`router_logits`, `router_gradient`);
they save nothing per step, because Σ_p x⁽ᵖ⁾ is one d-vector per sample that `training.prepare`
computes once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import SimpleNamespace

import numpy as np

from lab.chen2022.data import StructuredBatch


@dataclass(frozen=True)
class StructuredInputs:
    """The experts' input x_k of `training.prepare` as structure: signal patch t = s_t u_{r_t} + offset.

    `signals` (R, d [+1]) and `offset` (d [+1],) carry the bias coordinate (0 in the signals, 1 in the
    offset) when the experts have a bias; `noise` (n, Q, d [+1]) holds the noise patches with their
    bias coordinate 1. `noise_sum` (n, d) is Σ_q ξ_q without the bias coordinate, for the router.
    Everything is ×input_scale.
    """

    signals: np.ndarray
    offset: np.ndarray
    signal_index: np.ndarray
    signal_scale: np.ndarray
    noise: np.ndarray
    noise_sum: np.ndarray

    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        """The leading arguments of every structured kernel."""
        return self.signals, self.offset, self.signal_index, self.signal_scale, self.noise

    @property
    def shape(self) -> tuple[int, int, int]:
        """(n, patches, width) of the equivalent dense x_k: what callers of the dense kernels read."""
        return self.noise.shape[0], self.signal_index.shape[1] + self.noise.shape[1], self.noise.shape[2]

    def astype(self, dtype: str) -> StructuredInputs:
        """The same structure with the kernels' float arrays in `dtype` (`noise_sum` is the router's)."""
        return replace(
            self,
            **{
                k: getattr(self, k).astype(dtype, copy=False)
                for k in ("signals", "offset", "signal_scale", "noise")
            },
        )


def inputs(structure: StructuredBatch, input_scale: float, bias: bool) -> StructuredInputs:
    """`training.prepare` on a structured batch: the scaled parts and the bias coordinate."""
    n, Q, d = structure.noise.shape
    scale, noise = structure.signal_scale, structure.noise
    if input_scale != 1.0:
        scale, noise = scale * input_scale, noise * input_scale
    noise_sum = noise.sum(axis=1)
    signals, offset = structure.signals, np.zeros(d)
    if bias:
        signals = np.hstack([signals, np.zeros((signals.shape[0], 1))])
        offset = np.append(offset, 1.0)
        noise = np.concatenate([noise, np.ones((n, Q, 1))], axis=2)
    return StructuredInputs(
        signals=np.ascontiguousarray(signals),
        offset=offset,
        signal_index=np.ascontiguousarray(structure.signal_index, dtype=np.int64),
        signal_scale=np.ascontiguousarray(scale),
        noise=np.ascontiguousarray(noise),
        noise_sum=noise_sum,
    )


def kernels(lib: SimpleNamespace) -> SimpleNamespace:
    """Backend `lib` whose routed kernels (3.1), (E.2) take `StructuredInputs` for x: the structured ones."""

    def routed_forward(xk, W, routes, act):
        return lib.structured_forward(*xk.arrays, W, routes, act)

    def routed_backward(xk, z, routes, coef, M, act):
        return lib.structured_backward(*xk.arrays, z, routes, coef, M, act)

    def routed_step(xk, W, routes, margin_scale, act, loss=lib.MARGIN_LOSS_CODES["logistic"], readout=None):
        return lib.structured_step(*xk.arrays, W, routes, margin_scale, act, loss, readout)

    def dense_forward(xk, W, act):
        return lib.structured_dense_forward(*xk.arrays, W, act)

    replaced = dict(
        routed_forward=routed_forward,
        routed_backward=routed_backward,
        routed_step=routed_step,
        dense_forward=dense_forward,
    )
    return SimpleNamespace(**{**vars(lib), **replaced, "name": f"{lib.name}-structured"})


def router_logits(xk: StructuredInputs, Theta: np.ndarray) -> np.ndarray:
    """h = Θᵀ Σ_p x⁽ᵖ⁾ (Sec. 3.2) = Σ_t s_t Θᵀu_{r_t} + Θᵀ Σ_q ξ_q, shape (n, M)."""
    d = xk.noise_sum.shape[1]
    T = xk.signals[:, :d] @ Theta  # (R, M): Θᵀ u_r
    return np.einsum("nt,ntm->nm", xk.signal_scale, T[xk.signal_index]) + xk.noise_sum @ Theta


def router_gradient(xk: StructuredInputs, dh: np.ndarray) -> np.ndarray:
    """∇Θ = Σ_i (Σ_p x_i⁽ᵖ⁾) ∂L/∂h_iᵀ (E.1) = Σ_r u_r (Σ_{r_{i,t} = r} s_{i,t} ∂L/∂h_i)ᵀ + Σ_i ξ_i ∂L/∂h_iᵀ.

    ξ_i = Σ_q ξ_{i,q} is the sum of sample i's noise patches.
    """
    R, d = xk.signals.shape[0], xk.noise_sum.shape[1]
    onehot = np.eye(R)[xk.signal_index]  # (n, S, R)
    per_signal = np.einsum("ntr,nt,nm->rm", onehot, xk.signal_scale, dh)
    return xk.signals[:, :d].T @ per_signal + xk.noise_sum.T @ dh
