"""Load-balancing losses for the router of Algorithm 1 (Tables 10–11), as losses of the router output h.

"switch" (Fedus et al., as in the authors' code): coef · M · Σ_m f_m P_m with f_m the fraction of
samples routed to m and P_m = mean_i π_m(x_i); f is piecewise constant, so the gradient flows
through P only. "importance" (Shazeer et al., `lab.shazeer2017.gating.importance_loss` with k = M, where
Softmax(KeepTopK(h, M)) = π): coef · CV(Σ_i π(x_i))². Both see h only through the softmax, so
Σ_m ∂/∂h_m = 0 and Lemma E.1 (Σ_m θ_m conserved) still holds with them.

Shazeer's smooth *load* loss assumes Gaussian gating noise with a learnt scale; Algorithm 1 routes
with Unif[0,1] noise, so it is not offered here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lab.chen2022.model import gate_values
from lab.shazeer2017 import gating


def switch_loss(h: np.ndarray, routes: np.ndarray, coef: float) -> tuple[float, np.ndarray]:
    """Switch loss coef·M·Σ_m f_m P_m and its gradient with respect to h (n, M)."""
    n, M = h.shape
    pi = gate_values(h)
    frac = np.bincount(routes, minlength=M) / n
    value = coef * M * float(frac @ pi.mean(axis=0))
    # ∂/∂h_{i,k} of (1/n) Σ_m f_m π_{i,m} = π_{i,k} (f_k − Σ_m f_m π_{i,m}) / n
    grad = coef * M / n * pi * (frac[None, :] - (pi @ frac)[:, None])
    return value, grad


def importance_loss(h: np.ndarray, routes: np.ndarray, coef: float) -> tuple[float, np.ndarray]:
    """Importance loss coef·CV(Σ_i π(x_i))² and its gradient with respect to h (n, M); routes are unused."""
    result = gating.importance_loss(h, h.shape[1], coef)
    return float(result.loss), result.d_H


def no_loss(h: np.ndarray, routes: np.ndarray, coef: float) -> tuple[float, np.ndarray]:
    """No balancing: value 0 and gradient 0."""
    return 0.0, np.zeros_like(h)


LOSSES = {"none": no_loss, "switch": switch_loss, "importance": importance_loss}


def loss_and_gradient(name: str, h: np.ndarray, routes: np.ndarray, coef: float) -> tuple[float, np.ndarray]:
    """Value and ∂/∂h of the named balancing loss ("none", "switch", "importance")."""
    if name not in LOSSES:
        raise ValueError(f"load balancing must be one of {tuple(LOSSES)}, got {name!r}")
    return LOSSES[name](h, routes, coef)


def router_terms(name: str, coef: float) -> tuple[Callable[[np.ndarray, np.ndarray], np.ndarray], ...]:
    """∂/∂h (n, M) of the named balancing loss as a function of (h, routes): none for "none"."""
    if name == "none":
        return ()
    loss = LOSSES[name]
    return (lambda h, routes: loss(h, routes, coef)[1],)
