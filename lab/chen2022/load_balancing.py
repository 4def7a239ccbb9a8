"""Load-balancing losses for the router of Algorithm 1 (Tables 10–11), as losses of the router output h.

"switch" (Fedus et al., as in the authors' code): coef · M · Σ_m f_m P_m with f_m the fraction of
samples routed to m and P_m = mean_i π_m(x_i); f is piecewise constant, so the gradient flows
through P only. "importance" (Shazeer et al., `lab.kernels.top_k.importance_loss` with k = M, where
Softmax(KeepTopK(h, M)) = π): coef · CV(Σ_i π(x_i))². Both see h only through the softmax, so
Σ_m ∂/∂h_m = 0 and Lemma E.1 (Σ_m θ_m conserved) still holds with them.

Shazeer's smooth *load* loss assumes Gaussian gating noise with a learnt scale; Algorithm 1 routes
with Unif[0,1] noise, so it is not offered here.

The public functions check their arguments (`lab.core.validate`): h (n, M) real and finite with
n, M >= 1, routes (n,) integers in [0, M), coef a finite number >= 0, name one of `LOSSES`. The
terms `router_terms` hands to the training loop are checked once, when they are made (the name
and coef), and run the unchecked implementations at every step.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lab.core import validate
from lab.core.errors import InputError
from lab.kernels import top_k
from lab.kernels.dense import gate_values

__all__ = ["LOSSES", "importance_loss", "loss_and_gradient", "no_loss", "router_terms", "switch_loss"]


def _checked(h, routes, coef) -> tuple[np.ndarray, np.ndarray, float]:
    h = validate.array(h, "h", ndim=2, labels="(n, M)", nonempty=(0, 1), cast=False)
    routes = validate.index_array(routes, "routes", h.shape[0], h.shape[1])
    validate.real(coef, "coef", low=0.0)
    return h, routes, coef


def _coef(coef) -> float:
    validate.real(coef, "coef", low=0.0)
    return coef


def switch_loss(h: np.ndarray, routes: np.ndarray, coef: float) -> tuple[float, np.ndarray]:
    """Switch loss coef·M·Σ_m f_m P_m and its gradient with respect to h (n, M)."""
    return _switch_loss(*_checked(h, routes, coef))


def _switch_loss(h, routes, coef):
    n, M = h.shape
    pi = gate_values(h)
    frac = np.bincount(routes, minlength=M) / n
    value = coef * M * float(frac @ pi.mean(axis=0))
    # ∂/∂h_{i,k} of (1/n) Σ_m f_m π_{i,m} = π_{i,k} (f_k − Σ_m f_m π_{i,m}) / n
    grad = coef * M / n * pi * (frac[None, :] - (pi @ frac)[:, None])
    return value, grad


def importance_loss(h: np.ndarray, routes: np.ndarray, coef: float) -> tuple[float, np.ndarray]:
    """Importance loss coef·CV(Σ_i π(x_i))² and its gradient with respect to h (n, M); routes are
    unused (checked all the same, like every loss of `LOSSES`)."""
    return _importance_loss(*_checked(h, routes, coef))


def _importance_loss(h, routes, coef):
    loss, d_H = top_k.importance_loss(h, h.shape[1], coef)
    return float(loss), d_H


def no_loss(h: np.ndarray, routes: np.ndarray, coef: float) -> tuple[float, np.ndarray]:
    """No balancing: value 0 and gradient 0."""
    return _no_loss(*_checked(h, routes, coef))


def _no_loss(h, routes, coef):
    return 0.0, np.zeros_like(h)


LOSSES = {"none": no_loss, "switch": switch_loss, "importance": importance_loss}
_UNCHECKED = {"none": _no_loss, "switch": _switch_loss, "importance": _importance_loss}


def _name(name: object) -> str:
    if not (isinstance(name, str) and name in LOSSES):
        raise InputError(
            f"name must be a load balancing loss, one of {', '.join(map(repr, LOSSES))}; got {name!r}"
        )
    return name


def loss_and_gradient(name: str, h: np.ndarray, routes: np.ndarray, coef: float) -> tuple[float, np.ndarray]:
    """Value and ∂/∂h of the named balancing loss ("none", "switch", "importance")."""
    return LOSSES[_name(name)](h, routes, coef)


def router_terms(name: str, coef: float) -> tuple[Callable[[np.ndarray, np.ndarray], np.ndarray], ...]:
    """∂/∂h (n, M) of the named balancing loss as a function of (h, routes): none for "none".

    name and coef are checked here, once; the returned terms run unchecked at every training step."""
    if _name(name) == "none":
        _coef(coef)
        return ()
    loss, coef = _UNCHECKED[name], _coef(coef)
    return (lambda h, routes: loss(h, routes, coef)[1],)
