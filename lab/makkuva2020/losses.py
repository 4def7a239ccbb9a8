"""Makkuva et al. 2020, Sec. 3: Q4, Q2, t1, t2, t3 (eq. 5), L4 (eq. 6), its closed form (7), L_log (8), ℓ2.

Derivation of the transforms (what Appendix B would give). Let s ~ N(0, 1), He_j the
probabilists' Hermite polynomials (E[He_i He_j] = j! δ_ij), and H_j(x) the multivariate Hermite
tensors of x ~ N(0, I_d), so H_4(x)[u,u,v,v] = c·t1(u, v, x), H_4(x)[u⁴] = c·t2(u, x) and
H_2(x)[u,u] = c'·t3(u, x) (the brackets in the paper's t1, t2, t3 are exactly these contractions).

1. Given z = m and x, y = g(⟨a_m*, x⟩) + ξ. With q(s) = E_ξ[Q4(g(s) + ξ)] and ‖a_m*‖ = 1,
   E[Q4(y) | x] = Σ_m p_m*(x) q(⟨a_m*, x⟩).
2. If a* ⊥ w*, split x into its parts in span(A*), span(W*) and the rest: they are independent,
   p_m* depends on the second only, and H_4 factorises over the three parts. Hermite
   orthogonality then gives E[Q4(y) H_4(x)[u⁴]] = Σ_m E[p_m*] h_4 4! ⟨a_m*, u⟩⁴, where h_j is the
   j-th Hermite coefficient of q — PROVIDED h_1 = h_2 = h_3 = 0 (otherwise terms
   h_j E[p_m* H_{4−j}(x_W)] leak in). h_0 is the same for every expert, so it multiplies
   Σ_m p_m* = 1 and drops out because E[H_4(x)] = 0.
3. Hence (α, β, γ) solve the 3×3 linear system E[q He_j] = 0, j = 1, 2, 3, with
   E_ξ(g + ξ)² = g² + σ², E_ξ(g + ξ)³ = g³ + 3σ²g, E_ξ(g + ξ)⁴ = g⁴ + 6σ²g² + 3σ⁴, and
   c_{g,σ} = E[q(s) He_4(s)] = 4! h_4 makes the coefficient of eq. (7) exactly E[p_m*].
   Likewise Q2(y) = y² + δ₂ y with E[q₂ He_1] = 0 and c'_{g,σ} = E[q₂(s) He_2(s)] = 2 h_2.
4. g = Id: α = γ = δ₂ = 0, β = −6(1 + σ²), c_{Id,σ} = 24 and c'_{Id,σ} = 2 (independent of σ),
   i.e. Q4(y) = y⁴ − 6(1 + σ²) y² + const and Q2(y) = y² − (1 + σ²). The Hermite constant is the
   one with E[Q4(y)] = 0: 3(1 + σ²)². The paper prints 3 + 3σ⁴ − 6σ² (differs by 12σ²). The
   constant multiplies E[t1] = E[t2] = 0 under Gaussian x, so it does not change L4 (eq. 6 and 7
   agree with either); it adds zero-mean noise to the sample L4 and, for non-Gaussian x, a bias.

The system is solved by Gauss–Hermite quadrature with 200 nodes: exact for polynomial g (so for
g = Id the closed form above is reproduced to round-off; tested), ~1e-5 relative for activations
with a kink (relu, celu).

Closed form (eq. 7). With C = A A*ᵀ (C_im = ⟨a_i, a_m*⟩), π_m = E[p_m*], S_m = Σ_i C_im²,
F_m = Σ_i C_im⁴ and r_i = Σ_m π_m C_im², eq. (7) is
    L4(A) = Σ_m π_m (S_m² − (1 + μ) F_m) + λ Σ_i (r_i − 1)² + δ/2 ‖A‖_F²,
whose gradient and Hessian are computed through C (∇_A = (∂L/∂C) A* + δA).

What the regularisers must satisfy (derived from eq. 7, orthonormal A*; the paper only says
μ, λ, δ > 0). Necessary, each shown by one family of points:
(i) λ min_m π_m > μ: on the ray a_i = c a_m* (other rows 0) eq. (7) is
    π_m(λπ_m − μ) c⁴ + (δ/2 − 2λπ_m) c² + λk, unbounded below if λπ_m < μ (so for every μ > 0
    when λ = 0), and at λπ_m = μ when δ < 4λπ_m;
(ii) δ < 4λ min_m π_m, for minimisers a_i = ±c_m a*_{π(i)} with every c_m > 0: the same ray has
    its minimum at c_m² = (λπ_m − δ/4) / (π_m(λπ_m − μ)), which is 0 when δ ≥ 4λπ_m;
(iii) at k = 2 with π_1 = π_2, μ > −1: the rows ±c a_m* and the same rows turned by 45° in
    span(a_1*, a_2*) share the λ and δ terms, and the quartic terms are −μc⁴ against (1 − μ)c⁴/2,
    so for μ < −1 the turned rows are lower at every scale c (tested).
A = 0 is a stationary point where the Hessian of eq. (7) has eigenvalues δ − 4λπ_m (k each, rows
along a_m*) and δ (the k(d − k) directions outside span(A*); tested against finite differences).
So A = 0 is a local minimum only if δ ≥ 4λ max_m π_m (a strict one if δ > 4λ max_m π_m), a saddle
when 0 < δ < 4λ max_m π_m (a maximum within span(A*) when δ < 4λ min_m π_m): (ii) already rules
out the minimum. δ > 0 is the only force on the components of A outside span(A*).
Sufficient, not necessary: the paper's μ > 0 (with λ, δ chosen as in its Theorem 1) is what its
proof uses; the D2 check's wrong-sign control finds spurious end points of GD at μ = −2 but none at
μ = −0.5. The lab derives no sharp condition on μ for general k and π.
With (i) and (ii) the global minimisers are a_i = ±c_m a*_{π(i)}, i.e. D² = c_m² π_m =
(λπ_m − δ/4)/(λπ_m − μ) in Theorem 1 ((A†)ᵀ = P D Γ A*, Γ_mm = √π_m: the rows of A are
scaled by 1/Γ, so A must be renormalised before it is used as a regressor estimate).

Notation clash in the paper: δ names both Q2's linear coefficient and the ridge weight, α both
Q4's cubic coefficient and the L_log step size; here they are `q2_linear` and `delta`, `alpha`
and `lr`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.polynomial.hermite_e import hermegauss, hermeval

from lab import kernels
from lab.core import validate
from lab.core.errors import InputError
from lab.kernels.activations import activation
from lab.makkuva2020.gated_regression import (
    InputDistribution,
    _act,
    _distribution,
    _expert_outputs,
    _gate_logits,
    _gate_probabilities,
    _log_sum_exp,
    _regression,
    _rows,
    _vector,
)

QUADRATURE_NODES = 200
MIXTURE_TOL = 1e-6  # |Σ π − 1| allowed for mixture weights π = E[p*] (quadrature gives ~1e-15)

__all__ = [
    "MIXTURE_TOL",
    "QUADRATURE_NODES",
    "L4Regularisers",
    "OutputTransforms",
    "l2_loss_gradient",
    "l4_statistics",
    "l_log",
    "l_log_gradient",
    "l_log_hessian",
    "optimal_scale",
    "output_transforms",
    "population_l4",
    "population_l4_gradient",
    "population_l4_hessian",
    "posterior",
    "project_rows",
    "sample_l4",
    "sample_l4_gradient",
    "softmax_curvature",
    "t1",
    "t2",
    "t3",
    "transform_means",
]

# Arguments are checked once per public call (`lab.core.validate`): finite real arrays of the
# documented shapes, mixture weights π in [0, 1] summing to 1, σ, R > 0, c, c' ≠ 0, act a name. The
# fits of `lab.makkuva2020.fit` check once and call the unchecked `_` implementations at every step.


@dataclass(frozen=True)
class OutputTransforms:
    """Q4(y) = y⁴ + αy³ + βy² + γy + q4_constant, Q2(y) = y² + q2_linear·y + q2_constant (eq. 5); c, c'."""

    alpha: float
    beta: float
    gamma: float
    q4_constant: float
    q2_linear: float
    q2_constant: float
    c: float
    c_prime: float

    def __post_init__(self) -> None:
        for name in ("alpha", "beta", "gamma", "q4_constant", "q2_linear", "q2_constant"):
            validate.real(getattr(self, name), name)
        validate.real(self.c, "c", nonzero=True)
        validate.real(self.c_prime, "c_prime", nonzero=True)

    def Q4(self, y: np.ndarray) -> np.ndarray:
        return (((y + self.alpha) * y + self.beta) * y + self.gamma) * y + self.q4_constant

    def Q2(self, y: np.ndarray) -> np.ndarray:
        return (y + self.q2_linear) * y + self.q2_constant


def _gaussian_expectations(values, nodes: int) -> np.ndarray:
    """E[f(s) He_j(s)] for j = 0..4 and each row f of `values` at the Gauss–HermiteE nodes."""
    s, w = hermegauss(nodes)
    w = w / w.sum()
    he = np.stack([hermeval(s, np.eye(5)[j]) for j in range(5)])  # (5, nodes)
    return np.asarray(values(s)) @ (he * w).T


def output_transforms(sigma: float, act: str = "linear", q4_constant: str = "hermite") -> OutputTransforms:
    """Q4, Q2 of eq. (5) and c_{g,σ}, c'_{g,σ} from the Hermite conditions in the module docstring (cached).

    `q4_constant="hermite"` gives E[Q4(y)] = 0 (3(1 + σ²)² for g = Id); "paper" uses the printed
    3 + 3σ⁴ − 6σ² (g = Id only). sigma a finite number >= 0, act an activation name.
    """
    validate.real(sigma, "sigma", low=0.0)
    _act(act)
    validate.choice(q4_constant, "q4_constant", ("hermite", "paper"))
    if q4_constant == "paper" and act != "linear":
        raise InputError(f"q4_constant='paper' is printed for g = Id only (act='linear'), got act={act!r}")
    return _output_transforms(sigma, act, q4_constant)


@functools.lru_cache(maxsize=128)
def _output_transforms(sigma: float, act: str, q4_constant: str) -> OutputTransforms:
    s2 = sigma * sigma
    g, _ = activation(act)
    moments = _gaussian_expectations(
        lambda s: [
            g(s),
            g(s) ** 2 + s2,
            g(s) ** 3 + 3 * s2 * g(s),
            g(s) ** 4 + 6 * s2 * g(s) ** 2 + 3 * s2 * s2,
        ],
        QUADRATURE_NODES,
    )  # moments[p, j] = E[E_ξ(g + ξ)^(p+1) He_j]
    system = moments[[2, 1, 0], 1:4].T  # rows j = 1..3, columns (α, β, γ)
    if np.linalg.cond(system) > 1e10:
        raise ValueError(f"activation {act!r}: the Hermite system for Q4 is singular; Q4 cannot be derived")
    alpha, beta, gamma = np.linalg.solve(system, -moments[3, 1:4])
    q = moments[3] + alpha * moments[2] + beta * moments[1] + gamma * moments[0]
    if abs(moments[0, 1]) < 1e-12:
        raise ValueError(f"activation {act!r} has E[g'(s)] = 0; Q2 cannot be derived")
    q2_linear = -moments[1, 1] / moments[0, 1]
    q2 = moments[1] + q2_linear * moments[0]
    return OutputTransforms(
        alpha=float(alpha),
        beta=float(beta),
        gamma=float(gamma),
        q4_constant=float(-q[0]) if q4_constant == "hermite" else 3.0 + 3.0 * s2 * s2 - 6.0 * s2,
        q2_linear=float(q2_linear),
        q2_constant=float(-q2[0]),
        c=float(q[4]),
        c_prime=float(q2[2]),
    )


def t1(u: np.ndarray, v: np.ndarray, x: np.ndarray, c: float) -> np.ndarray:
    """t1(u, v, x) = H_4(x)[u, u, v, v] / c (Sec. 3.1), one value per row of x (n, d); u, v (d,), c ≠ 0."""
    u = _vector(u, "u")
    v = _vector(v, "v", u.size)
    x = _rows(x, "x", "(n, d)", u.size)
    validate.real(c, "c", nonzero=True)
    p, q, uu, vv, uv = x @ u, x @ v, u @ u, v @ v, u @ v
    return (p * p * q * q - uu * q * q - 4 * p * q * uv - vv * p * p + uu * vv + 2 * uv * uv) / c


def t2(u: np.ndarray, x: np.ndarray, c: float) -> np.ndarray:
    """t2(u, x) = H_4(x)[u⁴] / c = ((uᵀx)⁴ − 6‖u‖²(uᵀx)² + 3‖u‖⁴) / c (Sec. 3.1); u (d,), x (n, d), c ≠ 0."""
    u = _vector(u, "u")
    x = _rows(x, "x", "(n, d)", u.size)
    validate.real(c, "c", nonzero=True)
    p, uu = x @ u, u @ u
    return (p**4 - 6 * uu * p * p + 3 * uu * uu) / c


def t3(u: np.ndarray, x: np.ndarray, c_prime: float) -> np.ndarray:
    """t3(u, x) = H_2(x)[u, u] / c' = ((uᵀx)² − ‖u‖²) / c' (Sec. 3.1); u (d,), x (n, d), c' ≠ 0."""
    u = _vector(u, "u")
    x = _rows(x, "x", "(n, d)", u.size)
    validate.real(c_prime, "c_prime", nonzero=True)
    p = x @ u
    return (p * p - u @ u) / c_prime


@dataclass(frozen=True)
class L4Regularisers:
    """μ, λ, δ of eq. (6). Any finite μ and λ, δ ≥ 0 are accepted; see `conditions` for what works."""

    mu: float
    lam: float
    delta: float

    def __post_init__(self) -> None:
        for name in ("mu", "lam", "delta"):
            validate.real(getattr(self, name), name)
        for name in ("lam", "delta"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0 (lam and delta), got {self.lam}, {self.delta}")

    def conditions(self, pi: np.ndarray) -> dict[str, bool]:
        """The paper's μ > 0 (sufficient, not necessary) and the derived necessary conditions (module
        docstring) for gate weights π = E[p*]."""
        least = float(np.min(validate.probabilities(pi, "pi", tol=MIXTURE_TOL)))
        return {
            "mu > 0 (the paper's)": self.mu > 0,
            "lam * min(pi) > mu (bounded below)": self.lam * least > self.mu,
            "0 < delta < 4 lam min(pi) (every c_m > 0)": 0 < self.delta < 4 * self.lam * least,
        }


def transform_means(A: np.ndarray, inputs: InputDistribution, c: float) -> tuple[float, float]:
    """Exact E[Σ_{i≠j} t1(a_i, a_j, x)] and E[Σ_i t2(a_i, x)] for a mixture of N(m, I_d) inputs.

    Appell property of Hermite polynomials: E[H_4(m + g)] = m^{⊗4}, so E[t1(u, v, x)] =
    (uᵀm)²(vᵀm)²/c and E[t2(u, x)] = (uᵀm)⁴/c per component; both vanish for x ~ N(0, I_d). The
    constant term of Q4 changes L4 (eq. 6) by exactly const · (first − μ · second).
    A (k, d) with the inputs' d, inputs an `InputDistribution`, c ≠ 0.
    """
    _distribution(inputs)
    A = _rows(A, "A", "(k, d)", inputs.d)
    validate.real(c, "c", nonzero=True)
    off = diag = 0.0
    for prob, mean in inputs.components():
        s = (A @ mean) ** 2
        off += prob * (s.sum() ** 2 - np.sum(s * s))
        diag += prob * np.sum(s * s)
    return float(off / c), float(diag / c)


def l4_statistics(A: np.ndarray, x: np.ndarray, y: np.ndarray, tr: OutputTransforms):
    """Per-sample terms of eq. (6): Q4 Σ_{i≠j} t1(a_i, a_j), Q4 Σ_i t2(a_i), and Q2 t3(a_i) (n, k).

    Checked as in `sample_l4_gradient` (no regularisers here)."""
    return _l4_statistics(*_l4_inputs(A, x, y, tr, _NO_REG, cast=False), tr)


def _l4_statistics(A, x, y, tr):
    P = x @ A.T
    norms = np.sum(A * A, axis=1)
    G = A @ A.T
    s2 = np.sum(P * P, axis=1)
    tr_n = norms.sum()
    z = P @ A  # Aᵀp, so pᵀGp = ‖z‖²
    all_pairs = s2 * s2 - 2 * tr_n * s2 - 4 * np.sum(z * z, axis=1) + tr_n**2 + 2 * np.sum(G * G)
    diag = np.sum(P**4, axis=1) - 6 * (P * P) @ norms + 3 * np.sum(norms**2)
    q4 = tr.Q4(y)
    return q4 * (all_pairs - diag) / tr.c, q4 * diag / tr.c, tr.Q2(y)[:, None] * (P * P - norms) / tr.c_prime


def sample_l4(
    A: np.ndarray, x: np.ndarray, y: np.ndarray, tr: OutputTransforms, reg: L4Regularisers
) -> float:
    """Empirical L4 of eq. (6): expectations replaced by sample means (checked as `sample_l4_gradient`)."""
    A, x, y = _l4_inputs(A, x, y, tr, reg, cast=False)
    off, diag, psi = _l4_statistics(A, x, y, tr)
    return float(
        off.mean()
        - reg.mu * diag.mean()
        + reg.lam * np.sum((psi.mean(axis=0) - 1.0) ** 2)
        + 0.5 * reg.delta * np.sum(A * A)
    )


def sample_l4_gradient(
    A: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    tr: OutputTransforms,
    reg: L4Regularisers,
    backend: str = kernels.DEFAULT_BACKEND,
) -> tuple[float, np.ndarray]:
    """Empirical L4 of eq. (6) and its gradient in A (k, d) by `l4_gradient` of `kernels.backend(backend)`.

    Checked first, the same way for both backends: A (k, d), x (n, d) and y (n,) real and finite
    with k, d, n >= 1, `tr` an `OutputTransforms` with finite non-zero c, c', `reg` an
    `L4Regularisers`. A float32 A gives a float32 gradient on both backends.
    """
    lib = kernels.backend(backend)
    A, x, y = _l4_inputs(A, x, y, tr, reg)
    return _sample_l4_gradient(A, x, y, tr, reg, lib)


def _sample_l4_gradient(A, x, y, tr, reg, lib) -> tuple[float, np.ndarray]:
    value, grad = lib.l4_gradient(A, x, tr.Q4(y), tr.Q2(y), tr.c, tr.c_prime, reg.mu, reg.lam, reg.delta)
    return float(value), grad


_NO_REG = object()  # `l4_statistics` takes no regularisers


def _l4_inputs(A, x, y, tr, reg, cast: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The arguments of `sample_l4_gradient` (reg _NO_REG: none to check), checked (`lab.core.validate`)
    before any backend runs; cast=True turns integer arrays into float64 for the kernels."""
    validate.instance(tr, "tr", OutputTransforms)
    if reg is not _NO_REG:
        validate.instance(reg, "reg", L4Regularisers)
    for name in ("c", "c_prime"):
        if validate.real(getattr(tr, name), f"tr.{name}") == 0.0:
            raise ValueError(f"tr.{name} must be a finite non-zero number, got 0.0")
    A = validate.array(A, "A", ndim=2, labels="(k, d)", nonempty=(0, 1), cast=cast)
    x = validate.array(x, "x", ndim=2, labels="(n, d)", nonempty=(0,), cast=cast)
    validate.same_shape("x", x, (x.shape[0], A.shape[1]), f"(n, d) with d = {A.shape[1]} from A")
    y = validate.array(y, "y", ndim=1, labels="(n,)", cast=cast)
    validate.same_shape("y", y, (x.shape[0],), "(n,) with n = len(x)")
    return A, x, y


def _population_inputs(A, A_star, pi, reg, name: str = "A") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A (..., k, d), A* (k*, d) and π (k*,) real and finite, π mixture weights, reg `L4Regularisers`."""
    validate.instance(reg, "reg", L4Regularisers)
    A_star = _rows(A_star, "A_star", "(k*, d)", nonempty=(0, 1))
    A = validate.array(A, name, min_ndim=2, labels="(..., k, d)", nonempty=(-2,), cast=False)
    if A.shape[-1] != A_star.shape[1]:
        raise InputError(
            f"{name} must have shape (..., k, d) with d = {A_star.shape[1]} from A_star, got {A.shape}"
        )
    return A, A_star, validate.probabilities(pi, "pi", length=A_star.shape[0], tol=MIXTURE_TOL)


def _population_parts(A: np.ndarray, A_star: np.ndarray, pi: np.ndarray):
    C = A @ A_star.T
    C2 = C * C
    S = C2.sum(axis=-2)
    F = (C2 * C2).sum(axis=-2)
    r = C2 @ pi
    return C, C2, S, F, r


def population_l4(A: np.ndarray, A_star: np.ndarray, pi: np.ndarray, reg: L4Regularisers) -> np.ndarray:
    """Eq. (7) for A of shape (..., k, d): Σ_m π_m (S_m² − (1+μ)F_m) + λ Σ_i (r_i − 1)² + δ/2 ‖A‖².

    A* (k*, d) and mixture weights π (k*,) in [0, 1] summing to 1 (negative weights are refused)."""
    A, A_star, pi = _population_inputs(A, A_star, pi, reg)
    _, _, S, F, r = _population_parts(A, A_star, pi)
    return (
        (S * S - (1 + reg.mu) * F) @ pi
        + reg.lam * np.sum((r - 1.0) ** 2, axis=-1)
        + 0.5 * reg.delta * np.sum(A * A, axis=(-2, -1))
    )


def population_l4_gradient(A: np.ndarray, A_star: np.ndarray, pi: np.ndarray, reg: L4Regularisers):
    """∇_A of eq. (7) for A of shape (..., k, d): (∂L/∂C) A* + δA (arguments as in `population_l4`)."""
    return _population_l4_gradient(*_population_inputs(A, A_star, pi, reg), reg)


def _population_l4_gradient(A, A_star, pi, reg):
    C, C2, S, _, r = _population_parts(A, A_star, pi)
    dC = 4 * pi * C * (S[..., None, :] - (1 + reg.mu) * C2 + reg.lam * (r - 1.0)[..., :, None])
    return dC @ A_star + reg.delta * A


def population_l4_hessian(A: np.ndarray, A_star: np.ndarray, pi: np.ndarray, reg: L4Regularisers):
    """Hessian of eq. (7) in vec(A) (row-major), shape (k·d, k·d), at one A (k, d) (as `population_l4`)."""
    A, A_star, pi = _population_inputs(A, A_star, pi, reg)
    if A.ndim != 2:
        raise InputError(f"A must have shape (k, d) (one point, not a batch), got shape {A.shape}")
    k, d = A.shape
    km = A_star.shape[0]
    C, C2, S, _, r = _population_parts(A, A_star, pi)
    eye_k, eye_m = np.eye(k), np.eye(km)
    # H_C[i, m, j, n] = ∂²L / ∂C_im ∂C_jn
    same_m = 4 * pi * (2 * C[:, None, :] * C[None, :, :] + S * eye_k[:, :, None])  # (i, j, m)
    same_m -= 12 * (1 + reg.mu) * pi * C2 * eye_k[:, :, None]
    H = np.einsum("ijm,mn->imjn", same_m, eye_m)
    pc = pi * C  # (i, m)
    same_i = 4 * reg.lam * (2 * pc[:, :, None] * pc[:, None, :] + (r - 1.0)[:, None, None] * np.diag(pi))
    H += np.einsum("imn,ij->imjn", same_i, eye_k)
    HA = np.einsum("imjn,mp,nq->ipjq", H, A_star, A_star).reshape(k * d, k * d)
    return HA + reg.delta * np.eye(k * d)


def optimal_scale(pi: np.ndarray, reg: L4Regularisers) -> np.ndarray:
    """c_m with a_i = ±c_m a*_{π(i)} at the global minima of eq. (7), orthonormal A* (module docstring).

    pi mixture weights (k,) in [0, 1] summing to 1, reg `L4Regularisers`."""
    validate.instance(reg, "reg", L4Regularisers)
    pi = np.asarray(validate.probabilities(pi, "pi", tol=MIXTURE_TOL), dtype=float)
    num = reg.lam * pi - reg.delta / 4
    den = pi * (reg.lam * pi - reg.mu)
    if np.any(num <= 0) or np.any(den <= 0):
        raise ValueError(f"regularisers violate the derived conditions: {reg.conditions(pi)}")
    return np.sqrt(num / den)


def _log_joint(W: np.ndarray, A: np.ndarray, x: np.ndarray, y: np.ndarray, sigma: float, act: str):
    """log p_i(x) + log N(y | g(⟨a_i, x⟩), σ²), log p_i(x) (both (k, n)) and the former's log-sum-exp (n,)."""
    L = _gate_logits(W, x)
    log_p = L - _log_sum_exp(L)
    resid = (y - _expert_outputs(A, x, act)) / sigma
    joint = log_p - 0.5 * resid * resid - math.log(sigma * math.sqrt(2 * math.pi))
    return joint, log_p, _log_sum_exp(joint)


def l_log(W: np.ndarray, A: np.ndarray, x: np.ndarray, y: np.ndarray, sigma: float, act: str = "linear"):
    """Empirical L_log of eq. (8): −mean log Σ_i p_i(x) N(y | g(⟨a_i, x⟩), σ²); log-sum-exp stable.

    W (k − 1, d), A (k, d), x (n, d), y (n,) real and finite, σ > 0, act an activation name."""
    W, A, x, y = _regression(W, A, x, y, sigma, act)
    return float(-_log_joint(W, A, x, y, sigma, act)[2].mean())


def l_log_gradient(
    W: np.ndarray,
    A: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    sigma: float,
    act: str = "linear",
) -> tuple[float, np.ndarray]:
    """L_log of eq. (8) and ∇_W = mean[(p_j(x) − r_j(x, y)) x], r the posterior of z (k − 1 rows).

    Arguments as in `l_log`."""
    return _l_log_gradient(*_regression(W, A, x, y, sigma, act), sigma, act)


def _l_log_gradient(W, A, x, y, sigma, act) -> tuple[float, np.ndarray]:
    joint, log_p, ll = _log_joint(W, A, x, y, sigma, act)
    diff = np.exp(log_p[:-1]) - np.exp(joint[:-1] - ll)
    return float(-ll.mean()), diff @ x / x.shape[0]


def l_log_hessian(
    W: np.ndarray, A: np.ndarray, x: np.ndarray, y: np.ndarray, sigma: float, act: str = "linear"
):
    """∇²_W L_log of eq. (8) in vec(W) (row-major): mean of [(diag p − ppᵀ) − (diag r − rrᵀ)]_jl x xᵀ.

    Arguments as in `l_log`."""
    W, A, x, y = _regression(W, A, x, y, sigma, act)
    joint, log_p, ll = _log_joint(W, A, x, y, sigma, act)
    p, r = np.exp(log_p[:-1]), np.exp(joint[:-1] - ll)
    return _softmax_curvature(x, p) - _softmax_curvature(x, r)


def softmax_curvature(x: np.ndarray, p: np.ndarray) -> np.ndarray:
    """mean over samples of (diag p − ppᵀ) ⊗ x xᵀ for the k − 1 free gates p (k − 1, n), row-major vec(W).

    x (n, d) real and finite with n >= 1, p (k − 1, n) probabilities in [0, 1]."""
    x = _rows(x, "x", "(n, d)")
    p = validate.array(p, "p", ndim=2, labels="(k - 1, n)", cast=False, low=0.0, high=1.0)
    validate.same_shape("p", p, (p.shape[0], x.shape[0]), "(k - 1, n) with n = len(x)")
    return _softmax_curvature(x, p)


def _softmax_curvature(x: np.ndarray, p: np.ndarray) -> np.ndarray:
    km, d = p.shape[0], x.shape[1]
    H = np.empty((km, d, km, d))
    for j in range(km):
        for m in range(km):
            H[j, :, m, :] = (x.T * (p[j] * ((j == m) - p[m]))) @ x / x.shape[0]
    return H.reshape(km * d, km * d)


def posterior(W: np.ndarray, A: np.ndarray, x: np.ndarray, y: np.ndarray, sigma: float, act: str = "linear"):
    """r_i(x, y) = P[z = i | x, y] under eq. (1) with parameters (A, W, σ), shape (k, n) (EM's E-step).

    Arguments as in `l_log`."""
    return _posterior(*_regression(W, A, x, y, sigma, act), sigma, act)


def _posterior(W, A, x, y, sigma, act) -> np.ndarray:
    joint, _, ll = _log_joint(W, A, x, y, sigma, act)
    return np.exp(joint - ll)


def project_rows(W: np.ndarray, R: float) -> np.ndarray:
    """Π_Ω: each row w_i mapped to the ball ‖w_i‖ ≤ R (Sec. 3.2); W (k − 1, d) real and finite, R > 0."""
    W = _rows(W, "W", "(k - 1, d)", nonempty=())
    validate.real(R, "R", low=0.0, low_open=True)
    return _project_rows(W, R)


def _project_rows(W: np.ndarray, R: float) -> np.ndarray:
    norms = np.linalg.norm(W, axis=1, keepdims=True)
    return W * np.minimum(1.0, R / np.maximum(norms, np.finfo(float).tiny))


def l2_loss_gradient(
    A: np.ndarray, W: np.ndarray, x: np.ndarray, y: np.ndarray, act: str = "linear"
) -> tuple[float, np.ndarray, np.ndarray]:
    """ℓ2 = mean (ŷ(x) − y)² of Sec. 3.1 with ŷ = Σ p_i g(⟨a_i, x⟩), and its gradients in A and W.

    Arguments as in `l_log` (no σ)."""
    W, A, x, y = _regression(W, A, x, y, 1.0, act)
    return _l2_loss_gradient(A, W, x, y, act)


def _l2_loss_gradient(A, W, x, y, act) -> tuple[float, np.ndarray, np.ndarray]:
    g, g_prime = activation(act)
    pre = A @ x.T
    f = g(pre)
    p = _gate_probabilities(W, x)
    y_hat = np.sum(p * f, axis=0)
    e = (2.0 / x.shape[0]) * (y_hat - y)
    grad_A = (e * p * g_prime(pre)) @ x
    grad_W = (e * p[:-1] * (f[:-1] - y_hat)) @ x
    return float(np.mean((y_hat - y) ** 2)), grad_A, grad_W
