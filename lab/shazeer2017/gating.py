"""Noisy top-k gating of Shazeer et al. (2017, paper 002): the gate, Importance, the smooth load estimator,
the balancing losses w·CV(·)² and their exact gradients.

The paper's objects, for a batch x (n, d) and M experts:

    clean logits   c = x W_g                          (n, M)
    raw noise      ρ = x W_noise,  noise scale s = Softplus(ρ)
    noisy logits   H = c + ξ ⊙ s,  ξ ~ N(0, I)
    gate           G = Softmax(KeepTopK(H, k))
    load estimator P(x, i) = Φ((c_i − kth_excluding(H, k, i)) / s_i)
    losses         L_importance = w·CV(Σ_x G(x))²,  L_load = w·CV(Σ_x P(x, ·))²

For comparison, `softmax_gate_importance_loss` builds Importance on the gate value Switch routing and
Chen et al. (Sec. 3.2) use, π_m(x) = Softmax(H(x))_m over all M experts on the kept experts only.

Tie rule. KeepTopK keeps exactly k experts per row: the experts ordered by decreasing H, equal
values by increasing index (the lowest index wins a tie, like `np.argmax` and
`lab.chen2022.model.noisy_routes`), and the first k of that order are kept. kth_excluding(H, k, i) is
the k-th largest value of {H_j : j ≠ i}. In the order above it is the expert at position k
(0-based) when i is kept and the expert at position k − 1 when it is not; that expert is
"the threshold expert" of i, and the gradient of P(x, i) through the threshold goes to it.
For k = M nothing is excluded: the threshold is −∞ and P(x, i) = 1.

CV is the standard deviation over the mean with the population variance (ddof = 0), as in the
authors' code (tensor2tensor `cv_squared`), but without its 1e-10 in the denominator: a zero
mean is reported as a ValueError.

Loss functions come at two levels. `importance_loss` and `load_loss` take logits and return the
loss with its partial derivatives with respect to those logits, so they compose with any
linear router (e.g. the router h = Θᵀ Σ_p x⁽ᵖ⁾ of Chen et al. with H = h + r). The
`*_and_gradients` functions add the chain rule to ∇W_g and ∇W_noise (`router_gradients`).

Inputs. Every public function checks its arguments once (`lab.core.validate`, or `_logits` here):
arrays of numbers with M >= 1 experts along the last axis, finite (NaN or inf is refused, never
propagated), of matching shapes, k an integer in [1, M], w a finite number. The losses and their
parts (`noisy_logits`, `smooth_load`, `cv_squared`, `cv_squared_gradient`, `importance`,
`importance_loss`, `softmax_gate_importance_loss`, `load_loss`, `router_gradients`,
`*_and_gradients`) accept complex input (selections use real parts), so gradients can be checked
by complex step. The selections and the gate itself (`decreasing_order`, `top_k_mask`, `top_k_gates`,
`kth_excluding`, `noisy_top_k_gating`) are real only: a complex logit is a TypeError, as is a bool or
string array. The scalar functions (`softplus`, `logistic`, `normal_cdf`, `normal_pdf`) are elementwise: only
the dtype is checked, and a NaN entry gives NaN there, as in NumPy. Internal callers use the
unchecked `_` implementations and formulas (`lab.kernels.top_k`), so nothing is checked twice.

`gate_and_load` and `top_k_membership_counts` run on a backend: the kernels of `lab.kernels.gating`
or their NumPy twins in `lab.kernels.gating_numpy`, which compute with the formulas this module calls
(`lab.kernels.top_k`). They validate their arguments first, the same way for both backends
(`lab.core.validate`): real finite (n, M) arrays with M >= 1 (no complex input: the kernels are
real), k in [1, M], raw_noise > -745 (Softplus > 0) and scale > 0, draws >= 1, seeds in [0, 2**64),
resample_all a bool.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from lab import kernels
from lab.core import validate
from lab.core.errors import InputError
from lab.kernels import top_k

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
# Softplus(ρ) underflows to 0 in double precision below this ρ (e^ρ < smallest subnormal).
_SOFTPLUS_UNDERFLOW = -745.0

__all__ = [
    "ImportanceLoss",
    "LoadLoss",
    "RouterLoss",
    "cv_squared",
    "cv_squared_gradient",
    "decreasing_order",
    "gate_and_load",
    "importance",
    "importance_loss",
    "importance_loss_and_gradients",
    "kth_excluding",
    "load_loss",
    "load_loss_and_gradients",
    "logistic",
    "noisy_logits",
    "noisy_top_k_gating",
    "normal_cdf",
    "normal_pdf",
    "router_gradients",
    "smooth_load",
    "softmax_gate_importance_loss",
    "softmax_gate_importance_loss_and_gradients",
    "softplus",
    "top_k_gates",
    "top_k_mask",
    "top_k_membership_counts",
]


class ImportanceLoss(NamedTuple):
    """L_importance and its gradient with respect to the noisy logits H."""

    loss: float
    d_H: np.ndarray


class LoadLoss(NamedTuple):
    """L_load and its partial derivatives with respect to c, s and H taken as independent inputs."""

    loss: float
    d_clean: np.ndarray
    d_scale: np.ndarray
    d_H: np.ndarray


class RouterLoss(NamedTuple):
    """A balancing loss with its gradients with respect to the router weights W_g and W_noise."""

    loss: float
    grad_W_g: np.ndarray
    grad_W_noise: np.ndarray


# ---------------------------------------------------------------------------- scalar functions


def softplus(z: np.ndarray) -> np.ndarray:
    """Softplus(z) = log(1 + e^z), finite for any finite z (and analytic for complex step); NaN propagates."""
    return top_k.softplus(_numbers(z, "z"))


def logistic(z: np.ndarray) -> np.ndarray:
    """Softplus'(z) = 1 / (1 + e^{−z}), finite for finite z (analytic for complex step); NaN propagates."""
    z = _numbers(z, "z")
    pos = np.real(z) > 0
    e = np.exp(np.where(pos, -z, z))
    return np.where(pos, 1.0 / (1.0 + e), e / (1.0 + e))


def normal_cdf(z: np.ndarray) -> np.ndarray:
    """Standard normal CDF Φ(z) = erfc(−z/√2)/2 (accurate in both tails, complex-capable); NaN propagates."""
    return top_k.normal_cdf(_numbers(z, "z"))


def normal_pdf(z: np.ndarray) -> np.ndarray:
    """Standard normal density φ(z) (elementwise, complex-capable); NaN propagates."""
    z = _numbers(z, "z")
    return _INV_SQRT_2PI * np.exp(-0.5 * z * z)


# ---------------------------------------------------------------------------- validation


def _numbers(z, name: str) -> np.ndarray:
    """An array of real or complex numbers (the elementwise functions): dtype only, O(1)."""
    return validate.array(z, name, finite=False, complex_ok=True, cast=False)


def _logits(a: np.ndarray, name: str, ndim: int | None = None, real: bool = False) -> np.ndarray:
    """Finite logits (..., M) with M >= 1: real or complex (real=True: real only); integers become float64."""
    a = np.asarray(a)
    if a.dtype.kind in "iu":
        a = a.astype(np.float64)
    if a.dtype.kind not in ("f" if real else "fc"):
        wanted = "real" if real else "real or complex"
        raise TypeError(f"{name} must be a {wanted} array, got dtype {a.dtype}")
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {a.shape}")
    if a.ndim < 1 or a.shape[-1] < 1:
        raise ValueError(f"{name} must have at least one expert along its last axis, got shape {a.shape}")
    if not validate.all_finite(a):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return a


def _same_shape(reference: np.ndarray, **arrays: np.ndarray) -> None:
    for name, a in arrays.items():
        if a.shape != reference.shape:
            raise ValueError(f"{name} must have shape {reference.shape}, got {a.shape}")


def _top_k(k: int, M: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise TypeError(f"k must be an integer in [1, M={M}], got {type(k).__name__} {k!r}")
    if not 1 <= k <= M:
        raise ValueError(f"k must be an integer in [1, M={M}], got {k}")
    return int(k)


def _weight(w) -> float:
    validate.real(w, "w")
    return w


def _scale(scale: np.ndarray) -> np.ndarray:
    if np.any(np.real(scale) <= 0):
        raise ValueError(
            "scale must be > 0 (the noise scale Softplus(x W_noise) underflows to 0 for raw noise logits "
            f"below {_SOFTPLUS_UNDERFLOW}; the authors' code adds 1e-2 to the scale)"
        )
    return scale


# ---------------------------------------------------------------------------- the gate


def noisy_logits(clean: np.ndarray, raw_noise: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """H(x)_i = (xW_g)_i + ξ_i · Softplus((xW_noise)_i) (Shazeer et al., noisy top-k gating)."""
    clean = _logits(clean, "clean")
    raw_noise = _logits(raw_noise, "raw_noise")
    xi = _logits(xi, "xi")
    _same_shape(clean, raw_noise=raw_noise, xi=xi)
    return clean + xi * softplus(raw_noise)


def decreasing_order(H: np.ndarray) -> np.ndarray:
    """Experts sorted by decreasing H along the last axis, ties by increasing index (the tie rule)."""
    return top_k.decreasing_order(_logits(H, "H", real=True))


def top_k_mask(H: np.ndarray, k: int) -> np.ndarray:
    """Support of KeepTopK(H, k): exactly k True per row, ties to the lowest index."""
    H = _logits(H, "H", real=True)
    return top_k.keep_top_k(H, _top_k(k, H.shape[-1]))[1]


def top_k_gates(H: np.ndarray, k: int) -> np.ndarray:
    """G = Softmax(KeepTopK(H, k)) along the last axis: zero off the top k, finite at any finite logits.

    The softmax subtracts the row maximum, so gaps like 1e6 give exact 0 < G ≤ 1 with no
    overflow; a kept gate more than ~745 below the row maximum underflows to 0 in double
    precision (its exact value is below the smallest subnormal), so "exactly k non-zeros" holds
    for the support (`top_k_mask`), and for the values wherever they are representable. H is real
    (a complex logit is a TypeError; the losses take complex H for complex-step derivatives).
    """
    H = _logits(H, "H", real=True)
    return top_k.top_k_gates(H, _top_k(k, H.shape[-1]))


def noisy_top_k_gating(x, W_g, W_noise, xi, k: int) -> np.ndarray:
    """G(x) = Softmax(KeepTopK(H(x), k)) for a batch x (n, d), W_g, W_noise (d, M), noise ξ (n, M); real."""
    *_, H = _router_logits(x, W_g, W_noise, xi, real=True)
    return top_k.top_k_gates(H, _top_k(k, H.shape[-1]))


def kth_excluding(H: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """kth_excluding(H, k, i) for every expert i, and the index of the expert holding that value.

    The value is the k-th largest of {H_j : j ≠ i}: position k of the tie-rule order when i is
    among the top k, position k − 1 otherwise. For k = M it is −∞ (index −1). H is real.
    """
    H = _logits(H, "H", real=True)
    k = _top_k(k, H.shape[-1])
    return top_k.kth_excluding(H, k, *top_k.keep_top_k(H, k))


def smooth_load(clean: np.ndarray, scale: np.ndarray, H: np.ndarray, k: int) -> np.ndarray:
    """P(x, i) = Φ((c_i − kth_excluding(H(x), k, i)) / s_i): P(i in the top k) over ξ_i alone."""
    clean = _logits(clean, "clean")
    scale = _scale(_logits(scale, "scale"))
    H = _logits(H, "H")
    _same_shape(clean, scale=scale, H=H)
    return top_k.smooth_load(clean, scale, H, _top_k(k, H.shape[-1]))


# ---------------------------------------------------------------------------- losses


def cv_squared(v: np.ndarray) -> float:
    """CV(v)² = Var(v) / mean(v)², population variance (the w·CV² of L_importance and L_load).

    v (M,) finite, M >= 1, real or complex; a zero mean is a ValueError."""
    return top_k.cv_squared(_logits(v, "v", ndim=1))


def cv_squared_gradient(v: np.ndarray) -> np.ndarray:
    """∂CV(v)²/∂v_j = 2 (v_j − μ − σ²/μ) / (M μ²), with μ = mean(v), σ² = Var(v); v as in `cv_squared`."""
    return top_k.cv_squared_gradient(_logits(v, "v", ndim=1))


def importance(G: np.ndarray) -> np.ndarray:
    """Importance(X) = Σ_{x∈X} G(x), shape (M,), for gates G (n, M) (finite, real or complex)."""
    return _logits(G, "G", ndim=2).sum(axis=0)


def importance_loss(H: np.ndarray, k: int, w: float = 1.0) -> ImportanceLoss:
    """L_importance = w·CV(Σ_x G(x))² with G = Softmax(KeepTopK(H, k)), and ∂L/∂H (n, M).

    With g_j = w ∂CV²/∂Importance_j, the softmax over the kept set gives
    ∂L/∂H_{x,i} = G_{x,i} (g_i − Σ_j G_{x,j} g_j), zero off the top k (the selection is
    piecewise constant). For k = 1 the gate is one-hot and the gradient is 0 everywhere.
    """
    H = _logits(H, "H", ndim=2)
    return ImportanceLoss(*top_k.importance_loss(H, _top_k(k, H.shape[-1]), _weight(w)))


def softmax_gate_importance_loss(H: np.ndarray, k: int, w: float = 1.0) -> ImportanceLoss:
    """L_importance on the gate value of Switch routing and of Chen et al. (Sec. 3.2,
    F = Σ_{m∈T_x} π_m f_m): w·CV(Σ_x g(x))² with g(x)_m = π_m(x)·[m kept], π = Softmax(H) over all M
    experts and the kept set KeepTopK(H, k); returns ∂L/∂H (n, M). H and w as in `importance_loss`.

    With c_j = w ∂CV²/∂Importance_j and s the kept mask, ∂L/∂H_{x,i} = π_i (s_i c_i − Σ_j s_j c_j π_j):
    non-zero at k = 1, where `importance_loss` (Shazeer's G, one-hot there) has none; its rows sum
    to 0, and for k = M it is `importance_loss`.
    """
    H = _logits(H, "H", ndim=2)
    return _softmax_gate_importance_loss(H, _top_k(k, H.shape[-1]), _weight(w))


def _softmax_gate_importance_loss(H: np.ndarray, k: int, w: float) -> ImportanceLoss:
    pi = top_k.top_k_gates(H, H.shape[-1])
    kept = top_k.keep_top_k(H, k)[1]
    imp = np.where(kept, pi, 0).sum(axis=0)
    c = np.where(kept, w * top_k.cv_squared_gradient(imp), 0)
    d_H = pi * (c - (pi * c).sum(axis=1, keepdims=True))
    return ImportanceLoss(w * top_k.cv_squared(imp), d_H)


def load_loss(clean: np.ndarray, scale: np.ndarray, H: np.ndarray, k: int, w: float = 1.0) -> LoadLoss:
    """L_load = w·CV(Σ_x P(x, ·))² and its partial derivatives with respect to c, s and H.

    With z_i = (c_i − T_i)/s_i, T_i = H_{τ(i)} the threshold expert's value (module docstring),
    g_i = w ∂CV²/∂Load_i and a_i = g_i φ(z_i)/s_i:

        ∂L/∂c_i = a_i,     ∂L/∂s_i = −a_i z_i,     ∂L/∂H_j = −Σ_{i: τ(i) = j} a_i.

    The last term is the flow through kth_excluding: in each row the kept experts share one
    threshold expert (position k of the order) and the others share another (position k − 1),
    so ∂L/∂H is non-zero in exactly those two columns. Through H = c + ξ s the total derivatives
    are ∂c_j + ∂H_j and ∂s_j + ξ_j ∂H_j (`router_gradients`). For k = M, P ≡ 1 and all are 0.
    """
    clean = _logits(clean, "clean", ndim=2)
    scale = _scale(_logits(scale, "scale", ndim=2))
    H = _logits(H, "H", ndim=2)
    _same_shape(clean, scale=scale, H=H)
    k = _top_k(k, H.shape[-1])
    w = _weight(w)
    dtype = np.result_type(clean, scale, H)
    zeros = np.zeros(clean.shape, dtype=dtype)
    if k == H.shape[-1]:
        return LoadLoss(0.0 * w, zeros, zeros.copy(), zeros.copy())
    order, mask = top_k.keep_top_k(H, k)
    threshold, _ = top_k.kth_excluding(H, k, order, mask)
    z = top_k.standardized_gap(clean, scale, threshold)
    load = normal_cdf(z).sum(axis=0)
    g = w * top_k.cv_squared_gradient(load)
    a = g * normal_pdf(z) / scale
    d_H = zeros
    np.put_along_axis(d_H, order[:, k : k + 1], -(a * mask).sum(axis=1, keepdims=True), axis=1)
    np.put_along_axis(d_H, order[:, k - 1 : k], -(a * ~mask).sum(axis=1, keepdims=True), axis=1)
    return LoadLoss(w * top_k.cv_squared(load), a, -a * z, d_H)


def router_gradients(x, raw_noise, xi, d_clean, d_scale, d_H) -> tuple[np.ndarray, np.ndarray]:
    """Chain rule to (∇W_g, ∇W_noise) for c = xW_g, ρ = xW_noise, s = Softplus(ρ), H = c + ξ s.

    x (n, d), the others (n, M); finite, real or complex."""
    x = _logits(x, "x", ndim=2)
    raw_noise = _logits(raw_noise, "raw_noise", ndim=2)
    if raw_noise.shape[0] != x.shape[0]:
        raise ValueError(
            f"raw_noise must have shape (n, M) with n = {x.shape[0]} from x, got {raw_noise.shape}"
        )
    xi, d_clean, d_scale, d_H = (
        _logits(a, name, ndim=2)
        for a, name in ((xi, "xi"), (d_clean, "d_clean"), (d_scale, "d_scale"), (d_H, "d_H"))
    )
    _same_shape(raw_noise, xi=xi, d_clean=d_clean, d_scale=d_scale, d_H=d_H)
    return _router_gradients(x, raw_noise, xi, d_clean, d_scale, d_H)


def _router_gradients(x, raw_noise, xi, d_clean, d_scale, d_H):
    d_c = d_clean + d_H
    d_rho = (d_scale + d_H * xi) * logistic(raw_noise)
    return x.T @ d_c, x.T @ d_rho


def _router_logits(x, W_g, W_noise, xi, real: bool = False):
    """x (n, d), W_g and W_noise (d, M), ξ (n, M), checked; returns x, c, ρ, ξ and H = c + ξ Softplus(ρ)."""
    x = _logits(x, "x", ndim=2, real=real)
    W_g = _logits(W_g, "W_g", ndim=2, real=real)
    W_noise = _logits(W_noise, "W_noise", ndim=2, real=real)
    _same_shape(W_g, W_noise=W_noise)
    if x.shape[1] != W_g.shape[0]:
        raise ValueError(f"x must have {W_g.shape[0]} columns (rows of W_g), got shape {x.shape}")
    xi = _logits(xi, "xi", ndim=2, real=real)
    if xi.shape != (x.shape[0], W_g.shape[1]):
        raise ValueError(f"xi must have shape (n, M) = {(x.shape[0], W_g.shape[1])}, got {xi.shape}")
    clean, raw_noise = x @ W_g, x @ W_noise
    return x, clean, raw_noise, xi, clean + xi * softplus(raw_noise)


def importance_loss_and_gradients(x, W_g, W_noise, xi, k: int, w: float = 1.0) -> RouterLoss:
    """L_importance for the noisy top-k router with its gradients ∇W_g, ∇W_noise (ξ held fixed)."""
    x, _, raw_noise, xi, H = _router_logits(x, W_g, W_noise, xi)
    loss, d_H = top_k.importance_loss(H, _top_k(k, H.shape[-1]), _weight(w))
    zeros = np.zeros_like(d_H)
    return RouterLoss(loss, *_router_gradients(x, raw_noise, xi, zeros, zeros, d_H))


def softmax_gate_importance_loss_and_gradients(x, W_g, W_noise, xi, k: int, w: float = 1.0) -> RouterLoss:
    """`softmax_gate_importance_loss` for the noisy top-k router with its ∇W_g, ∇W_noise (ξ held fixed)."""
    x, _, raw_noise, xi, H = _router_logits(x, W_g, W_noise, xi)
    loss, d_H = _softmax_gate_importance_loss(H, _top_k(k, H.shape[-1]), _weight(w))
    zeros = np.zeros_like(d_H)
    return RouterLoss(loss, *_router_gradients(x, raw_noise, xi, zeros, zeros, d_H))


def load_loss_and_gradients(x, W_g, W_noise, xi, k: int, w: float = 1.0) -> RouterLoss:
    """L_load for the noisy top-k router with its gradients ∇W_g, ∇W_noise (ξ held fixed)."""
    x, clean, raw_noise, xi, H = _router_logits(x, W_g, W_noise, xi)
    if raw_noise.size and np.min(np.real(raw_noise)) <= _SOFTPLUS_UNDERFLOW:
        raise ValueError(
            f"W_noise must keep the raw noise logits x W_noise > {_SOFTPLUS_UNDERFLOW} (below it the noise "
            f"scale Softplus underflows to 0), got {float(np.min(np.real(raw_noise)))}"
        )
    loss, d_clean, d_scale, d_H = load_loss(clean, softplus(raw_noise), H, k, w)
    return RouterLoss(loss, *_router_gradients(x, raw_noise, xi, d_clean, d_scale, d_H))


# ---------------------------------------------------------------------------- kernels and twins


def gate_and_load(
    clean, raw_noise, xi, k: int, backend: str = kernels.DEFAULT_BACKEND
) -> tuple[np.ndarray, np.ndarray]:
    """Gate G (n, M) and smooth load P (n, M) from clean logits, raw noise logits and ξ (all (n, M))."""
    lib = kernels.backend(backend)
    clean, raw_noise, xi = _real_logits(clean=clean, raw_noise=raw_noise, xi=xi)
    if raw_noise.size and np.min(raw_noise) <= _SOFTPLUS_UNDERFLOW:
        raise InputError(
            f"raw_noise must be > {_SOFTPLUS_UNDERFLOW} (below it the noise scale Softplus(raw_noise) "
            f"underflows to 0; the authors' code adds 1e-2 to the scale), got {float(np.min(raw_noise))}"
        )
    return lib.noisy_top_k_gate_and_load(clean, raw_noise, xi, _top_k(k, clean.shape[1]))


def _real_logits(**arrays) -> list[np.ndarray]:
    """Real finite (n, M) arrays of one shape, M >= 1, for the backends (`lab.core.validate`)."""
    (first, value), *rest = arrays.items()
    out = [validate.array(value, first, ndim=2, labels="(n, M)", nonempty=(1,))]
    for name, value in rest:
        a = validate.array(value, name, ndim=2, labels="(n, M)")
        _same_shape(out[0], **{name: a})
        out.append(a)
    return out


def top_k_membership_counts(
    clean,
    scale,
    xi,
    k: int,
    draws: int,
    seed: int,
    resample_all: bool = False,
    backend: str = kernels.DEFAULT_BACKEND,
) -> np.ndarray:
    """Counts (n, M) of draws in which expert i is in the top k of H = c + s ξ (C2's Monte Carlo).

    resample_all False redraws ξ_i only (others fixed at xi): counts/draws estimates P(x, i).
    resample_all True redraws every ξ_j: for k = 1, counts/draws estimates Lemma C.1's p_i.
    """
    lib = kernels.backend(backend)
    clean, scale, xi = _real_logits(clean=clean, scale=scale, xi=xi)
    if scale.size and np.min(scale) <= 0:
        raise InputError(f"scale must be > 0 (the noise scale s of H = c + s ξ), got {float(np.min(scale))}")
    k = _top_k(k, clean.shape[1])
    draws = validate.integer(draws, "draws", low=1)
    seed = validate.seed(seed)
    resample_all = validate.flag(resample_all, "resample_all")
    return lib.top_k_membership_counts(clean, scale, xi, k, draws, seed, resample_all)
