"""Plain NumPy twins of the router kernels in `lab.kernels.router`: the two products as BLAS calls."""

from __future__ import annotations

from lab.kernels import _checks

__all__ = ["router_gradient", "router_logits"]


def router_logits(s, Theta):
    """h = s Θ (n, M): the router's logits Θᵀ Σ_p x⁽ᵖ⁾ of every sample (Sec. 3.2)."""
    s, Theta = _checks.router_logits(s, Theta)
    return s @ Theta.astype(s.dtype, copy=False)


def router_gradient(s, dh):
    """∇Θ = sᵀ ∂L/∂h (d, M): Σ_i s_i ∂L/∂h_iᵀ of (E.1)."""
    s, dh = _checks.router_gradient(s, dh)
    return s.T @ dh.astype(s.dtype, copy=False)
