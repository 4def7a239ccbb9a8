"""The MoE layer of Chen et al. 2022 (Sec. 3.2–3.3): router, gate, experts, loss (3.3), gradients (E.1)–(E.2).

Every function here is plain NumPy and works for complex inputs too, so the exact gradients
can be tested against complex-step derivatives. The Numba kernels in `lab.kernels.routed` are
the fast twins of `expert_outputs`/`routed_expert_outputs` and of the expert gradient; their
NumPy twins in `lab.kernels.routed_numpy` compute with the formulas this module calls,
`lab.kernels.dense`.

Arguments are checked once at each public function (`lab.core.validate`): x (n, P, d), W (M, J, d),
Θ (d, M) with M >= 1, y and coefficients (n,) (n, P >= 1 for the loss), real or complex and finite
(no NaN or inf), routes (n,) integers in [0, M), act an activation name. The module's own
composite functions call the unchecked formulas (`lab.kernels.dense`, `_router_logits`), so nothing
is checked twice. The elementwise `logistic_loss` and its derivative check only the dtype: NaN
propagates, as in NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab import kernels
from lab.core import validate
from lab.kernels import dense
from lab.kernels.activations import ACTIVATION_CODES, ACTIVATIONS

__all__ = [
    "MoEParams",
    "expert_gradient",
    "expert_outputs",
    "gate_values",
    "init_params",
    "logistic_loss",
    "logistic_loss_derivative",
    "noisy_routes",
    "perturbed_loss",
    "perturbed_loss_gradients",
    "routed_expert_outputs",
    "router_logits",
]


@dataclass
class MoEParams:
    """Router Θ (d, M) and expert filters W (M, J, d): w_{m,j} = W[m, j]."""

    Theta: np.ndarray
    W: np.ndarray

    def __post_init__(self) -> None:
        """A container: shapes and dtypes are checked here, finiteness by the functions that compute."""
        for name in ("W", "Theta"):
            value = getattr(self, name)
            if not isinstance(value, np.ndarray):
                raise TypeError(f"{name} must be a NumPy array, got {type(value).__name__}")
            if value.dtype.kind not in "iufc":
                raise TypeError(
                    f"{name} must be an array of real or complex numbers, got dtype {value.dtype}"
                )
        if self.W.ndim != 3:
            raise ValueError(f"W must have shape (M, J, d), got {self.W.shape}")
        if self.Theta.ndim != 2:
            raise ValueError(f"Theta must have shape (d, M), got {self.Theta.shape}")
        M, _, d = self.W.shape
        if self.Theta.shape != (d, M):
            raise ValueError(f"Theta must have shape (d, M) = {(d, M)}, got {self.Theta.shape}")

    @property
    def M(self) -> int:
        return self.W.shape[0]

    @property
    def J(self) -> int:
        return self.W.shape[1]


def init_params(M: int, J: int, d: int, sigma0: float, rng: np.random.Generator) -> MoEParams:
    """Algorithm 1, lines 1–2: W⁽⁰⁾ ~ N(0, σ0²) entrywise, Θ⁽⁰⁾ = 0."""
    for name, value in (("M", M), ("J", J), ("d", d)):
        validate.integer(value, name, low=1)
    validate.real(sigma0, "sigma0", low=0.0, low_open=True)
    validate.generator(rng)
    return MoEParams(Theta=np.zeros((d, M)), W=rng.normal(0.0, sigma0, size=(M, J, d)))


def _act(act: object) -> str:
    return validate.choice(act, "act", ACTIVATIONS)


def _x(x) -> np.ndarray:
    return validate.array(x, "x", ndim=3, labels="(n, P, d)", complex_ok=True, cast=False)


def _W(W, d: int, name: str = "W") -> np.ndarray:
    W = validate.array(W, name, ndim=3, labels="(M, J, d)", complex_ok=True, cast=False)
    validate.same_shape(name, W, (*W.shape[:2], d), f"(M, J, d) with d = {d} from x")
    return W


def router_logits(x: np.ndarray, Theta: np.ndarray) -> np.ndarray:
    """Gating output h(x; Θ) = Σ_p Θᵀ x⁽ᵖ⁾ (Sec. 3.2), shape (n, M)."""
    x = _x(x)
    Theta = validate.array(
        Theta, "Theta", ndim=2, labels="(d, M)", nonempty=(1,), complex_ok=True, cast=False
    )
    validate.same_shape("Theta", Theta, (x.shape[2], Theta.shape[1]), f"(d, M) with d = {x.shape[2]} from x")
    return _router_logits(x, Theta)


def _router_logits(x: np.ndarray, Theta: np.ndarray) -> np.ndarray:
    return x.sum(axis=1) @ Theta


def gate_values(h: np.ndarray) -> np.ndarray:
    """Route gate values π = softmax(h) along the last axis, stable at any finite logits.

    h (..., M) with M >= 1, finite (NaN or inf is refused, not propagated)."""
    h = validate.array(h, "h", min_ndim=1, labels="(..., M)", nonempty=(-1,), complex_ok=True, cast=False)
    return dense.gate_values(h)


def expert_outputs(x: np.ndarray, W: np.ndarray, act: str = "cubic") -> np.ndarray:
    """Every expert on every sample, f_m(x; W) = Σ_j Σ_p σ(⟨w_{m,j}, x⁽ᵖ⁾⟩) (3.1), shape (n, M)."""
    x = _x(x)
    return dense.expert_outputs(x, _W(W, x.shape[2]), _act(act))


def routed_expert_outputs(x: np.ndarray, W: np.ndarray, routes: np.ndarray, act: str = "cubic") -> np.ndarray:
    """f_{m_i}(x_i; W) for each sample's routed expert m_i, shape (n,); routes (n,) in [0, M)."""
    x = _x(x)
    W = _W(W, x.shape[2])
    routes = validate.index_array(routes, "routes", x.shape[0], W.shape[0])
    return dense.routed_expert_outputs(x, W, routes, _act(act))


def noisy_routes(h: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Top-1 routing m_i = argmax_m {h_m(x_i) + r_{m,i}} (Sec. 3.3); ties go to the lowest index.

    h (..., M) with M >= 1 and noise r of the same shape, real and finite."""
    h = validate.array(h, "h", min_ndim=1, labels="(..., M)", nonempty=(-1,), cast=False)
    r = validate.array(r, "r", cast=False)
    validate.same_shape("r", r, h.shape, "the shape of h")
    return np.argmax(h + r, axis=-1)


def logistic_loss(z: np.ndarray) -> np.ndarray:
    """ℓ(z) = log(1 + e^{−z}), finite for |z| up to 1e300 (and analytic for complex-step).

    Real z: max(−z, 0) + log1p(e^{−|z|}), the form of np.logaddexp(0, −z) in seven SIMD ufunc
    calls (7× faster at n = 16,000; it agrees to one rounding). Elementwise: only the dtype is
    checked (real or complex numbers); a NaN entry gives NaN there, as in NumPy."""
    z = validate.array(z, "z", finite=False, complex_ok=True, cast=False)
    if not np.iscomplexobj(z):
        return np.maximum(-z, 0.0) + np.log1p(np.exp(-np.abs(z)))
    out = np.empty_like(z)
    pos = np.real(z) >= 0
    out[pos] = np.log1p(np.exp(-z[pos]))
    out[~pos] = -z[~pos] + np.log1p(np.exp(z[~pos]))
    return out


def logistic_loss_derivative(z: np.ndarray) -> np.ndarray:
    """ℓ'(z) = −1 / (1 + e^{z}), in (−1, 0), finite everywhere (elementwise: NaN propagates, as in NumPy)."""
    return dense.logistic_loss_derivative(validate.array(z, "z", finite=False, complex_ok=True, cast=False))


def perturbed_loss(x, y, params: MoEParams, routes: np.ndarray, act: str = "cubic") -> float:
    """Perturbed empirical loss L⁽ᵗ⁾ (3.3) = mean ℓ(y_i π_{m_i}(x_i) f_{m_i}(x_i)) for given routes.

    Checked like `perturbed_loss_gradients`, but real or complex (complex-step derivatives)."""
    x, y, params, routes = _gradient_inputs(x, y, params, routes, complex_ok=True)
    act = _act(act)
    pi = dense.gate_values(_router_logits(x, params.Theta))
    pi_routed = np.take_along_axis(pi, routes[:, None], axis=1)[:, 0]
    f = dense.routed_expert_outputs(x, params.W, routes, act)
    return logistic_loss(y * pi_routed * f).mean()


def perturbed_loss_gradients(
    x: np.ndarray,
    y: np.ndarray,
    params: MoEParams,
    routes: np.ndarray,
    act: str = "cubic",
    backend: str = kernels.DEFAULT_BACKEND,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact gradients of (3.3): ∇_Θ by (E.1), shape (d, M), and ∇_W by (E.2), shape (M, J, d).

    f and (E.2) come from `routed_step` of `lab.kernels.backend(backend)`: the Numba kernel, or
    its NumPy twin, which is `routed_expert_outputs` and `expert_gradient`. The arguments are
    checked first, the same way for both backends (`_gradient_inputs`): real finite arrays
    x (n, P, d) with n, P >= 1, y (n,), params a `MoEParams` with finite Θ and W, routes (n,)
    integers in [0, M). Unlike the rest of this module it takes no complex input (the Numba
    kernel is real); complex-step derivatives go through `perturbed_loss`.
    """
    lib = kernels.backend(backend)
    _act(act)  # a bad name is a ValueError on both backends
    x, y, params, routes = _gradient_inputs(x, y, params, routes)
    n = x.shape[0]
    s = x.sum(axis=1)
    pi = dense.gate_values(s @ params.Theta)
    pi_routed = np.take_along_axis(pi, routes[:, None], axis=1)[:, 0]
    # (E.2): ∇w_{m,j} = (1/n) Σ_{i: m_i = m} ℓ'_i π_m y_i Σ_p σ'(⟨w_{m,j}, x_i⁽ᵖ⁾⟩) x_i⁽ᵖ⁾
    f, grad_w = lib.routed_step(x, params.W, routes, y * pi_routed, ACTIVATION_CODES[act])
    lp = logistic_loss_derivative(y * pi_routed * f)
    # (E.1): ∇θ_m = (1/n) Σ_i ℓ'_i π_{m_i} y_i f_{m_i} (1[m_i = m] − π_m) Σ_p x_i⁽ᵖ⁾
    common = lp * y * pi_routed * f / n
    onehot = np.zeros_like(pi)
    onehot[np.arange(n), routes] = 1.0
    grad_theta = s.T @ (common[:, None] * (onehot - pi))
    return grad_theta, grad_w


def _gradient_inputs(
    x, y, params, routes, complex_ok: bool = False
) -> tuple[np.ndarray, np.ndarray, MoEParams, np.ndarray]:
    """The arguments of `perturbed_loss_gradients` (real, integers become float64 for the kernels) or of
    `perturbed_loss` (complex_ok: real or complex, kept as they are), checked before any backend runs."""
    validate.instance(params, "params", MoEParams)
    kind = {"complex_ok": True, "cast": False} if complex_ok else {}
    W = validate.array(params.W, "params.W", ndim=3, labels="(M, J, d)", nonempty=(0,), **kind)
    Theta = validate.array(params.Theta, "params.Theta", ndim=2, labels="(d, M)", **kind)
    M, _, d = W.shape
    validate.same_shape("params.Theta", Theta, (d, M), "(d, M)")
    x = validate.array(x, "x", ndim=3, labels="(n, P, d)", nonempty=(0, 1), **kind)
    validate.same_shape("x", x, (x.shape[0], x.shape[1], d), f"(n, P, d) with d = {d} from W")
    y = validate.array(y, "y", ndim=1, labels="(n,)", **kind)
    validate.same_shape("y", y, (x.shape[0],), "(n,) with n = len(x)")
    routes = validate.index_array(routes, "routes", x.shape[0], M)
    if W is not params.W or Theta is not params.Theta:
        params = MoEParams(Theta=Theta, W=W)
    return x, y, params, routes


def expert_gradient(
    x: np.ndarray, W: np.ndarray, routes: np.ndarray, coef: np.ndarray, act: str
) -> np.ndarray:
    """Σ_{i: m_i = m} coef_i Σ_p σ'(⟨w_{m,j}, x_i⁽ᵖ⁾⟩) x_i⁽ᵖ⁾ for every (m, j): the body of (E.2).

    x (n, P, d), W (M, J, d) real or complex and finite, routes (n,) in [0, M), coef (n,) numbers,
    act an activation name. coef alone may hold NaN or ±inf, which propagate into the gradient as in
    the Numba kernel: the NumPy backend's `routed_step` calls its formula (`lab.kernels.dense`) with the
    coefficients of a training step, and a diverging step must reach training's divergence test on both
    backends."""
    x = _x(x)
    W = _W(W, x.shape[2])
    routes = validate.index_array(routes, "routes", x.shape[0], W.shape[0])
    coef = validate.array(coef, "coef", ndim=1, labels="(n,)", complex_ok=True, cast=False, finite=False)
    validate.same_shape("coef", coef, (x.shape[0],), "(n,) with n = len(x)")
    return dense.expert_gradient(x, W, routes, coef, _act(act))
