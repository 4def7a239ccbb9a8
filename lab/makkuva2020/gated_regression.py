"""Makkuva et al. 2020: the gated regression MoE of eq. (1), its inputs (Sec. 3, 4.1), GRU as a MoE (Sec. 2).

y = Σ_i z_i g(⟨a_i*, x⟩) + ξ,  ξ ~ N(0, σ²),  P[z_i = 1 | x] = softmax_i(⟨w_1*, x⟩, …, ⟨w_{k−1}*, x⟩, 0).

Conventions the paper leaves implicit (each is a finding of the lab, see the README section):

* W* convention. Softmax gating is invariant to adding one vector to every w_i, so only
  differences are identifiable; the paper fixes w_k* = 0 and stores W ∈ R^{(k−1)×d}. Here
  `GatedRegression.W` holds those k − 1 rows and the zero row is implicit. An estimator that
  recovers the experts in another order π has its own "last" expert, so the truth it must be
  compared with (and that L_log converges to) is the re-referenced w̃_i = w*_{π(i)} − w*_{π(k)},
  not W* itself (`rereferenced_gating`).
* Regressors are unit vectors, ‖a_i*‖ = 1: the output transforms Q4, Q2 of eq. (5) are
  normalised for that (derivation in `lab.makkuva2020.losses`); with other norms eq. (7) fails.
* Arrays indexed by expert and sample are expert-major, shape (k, n): reductions over the
  k experts are then elementwise operations across k rows (several times faster than
  reducing the short last axis of an (n, k) array).
* E[p_m*(x)] (the weights in eq. (7) and Γ of Theorem 1) has no closed form for k ≥ 3; it is
  computed here by Gauss–Hermite quadrature over the row space of W (at most k − 1 dimensions),
  exact up to quadrature error for Gaussian and Gaussian-mixture x.

GRU (Sec. 2, eq. (4)). With binary gates, the paper replaces the candidate state
g(U_h x + W_h (r ⊙ h)) by the 2-MoE (1 − r) ⊙ g(U_h x) + r ⊙ g(U_h x + W_h h). Coordinate i of
the two agrees iff Σ_j (W_h)_{ij} (r_j − r_i) h_j = 0 (g injective), i.e. when the reset gate is
constant across the hidden coordinates that row i of W_h reads — always for a scalar state or a
diagonal W_h, not in general (`gru_step`, `hierarchical_moe_step`; checked in D6). With sigmoid
gates, eq. (4) is multilinear in (z_i, r_i), so it equals the expectation of its binary-gated
version over independent Bernoulli(z_i), Bernoulli(r_i) gates; the sigmoid GRU itself is not
(g(U_h x + W_h (r ⊙ h)) ≠ E over r of the same with binary r, by Jensen).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy import special

from lab.kernels.activations import activation

MAX_QUADRATURE_NODES = 250_000


class InputDistribution(Protocol):
    """A distribution of x in R^d that can be sampled and is a finite mixture of N(m_c, I_d)."""

    d: int

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray: ...

    def components(self) -> list[tuple[float, np.ndarray]]: ...


def _check_n(n: int) -> None:
    if not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")


@dataclass(frozen=True)
class GaussianInput:
    """x ~ N(0, I_d): the input distribution of Theorems 1–4."""

    d: int

    def __post_init__(self) -> None:
        if not isinstance(self.d, int | np.integer) or self.d < 1:
            raise ValueError(f"d must be an integer >= 1, got {self.d!r}")

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        _check_n(n)
        return rng.standard_normal((n, self.d))

    def components(self) -> list[tuple[float, np.ndarray]]:
        return [(1.0, np.zeros(self.d))]


@dataclass(frozen=True)
class GaussianMixtureInput:
    """x ~ p N(μ, I_d) + (1 − p) N(−μ, I_d): the non-Gaussian input of Sec. 4.1."""

    mu: np.ndarray
    p: float

    def __post_init__(self) -> None:
        mu = np.asarray(self.mu, dtype=float)
        if mu.ndim != 1 or mu.size < 1 or not np.all(np.isfinite(mu)):
            raise ValueError(f"mu must be a finite vector, got shape {mu.shape}")
        if not (np.isfinite(self.p) and 0.0 <= self.p <= 1.0):
            raise ValueError(f"p must lie in [0, 1], got {self.p}")
        object.__setattr__(self, "mu", mu)

    @property
    def d(self) -> int:
        return self.mu.size

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        _check_n(n)
        sign = np.where(rng.random(n) < self.p, 1.0, -1.0)
        return sign[:, None] * self.mu + rng.standard_normal((n, self.d))

    def components(self) -> list[tuple[float, np.ndarray]]:
        return [(self.p, self.mu), (1.0 - self.p, -self.mu)]


@dataclass(frozen=True)
class GatedRegression:
    """Eq. (1): regressors A* (k, d), gating W* (k − 1, d) with w_k* = 0, noise σ, activation g."""

    A: np.ndarray
    W: np.ndarray
    sigma: float
    activation: str = "linear"

    def __post_init__(self) -> None:
        A = np.asarray(self.A, dtype=float)
        W = np.asarray(self.W, dtype=float)
        if A.ndim != 2 or A.shape[0] < 2:
            raise ValueError(f"A must have shape (k, d) with k >= 2, got {A.shape}")
        if W.shape != (A.shape[0] - 1, A.shape[1]):
            raise ValueError(f"W must have shape (k - 1, d) = {(A.shape[0] - 1, A.shape[1])}, got {W.shape}")
        if not (np.all(np.isfinite(A)) and np.all(np.isfinite(W))):
            raise ValueError("A and W must be finite")
        if not (np.isfinite(self.sigma) and self.sigma >= 0):
            raise ValueError(f"sigma must be a finite number >= 0, got {self.sigma}")
        activation(self.activation)
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "W", W)

    @property
    def k(self) -> int:
        return self.A.shape[0]

    @property
    def d(self) -> int:
        return self.A.shape[1]


def paper_model(k: int, d: int = 10, sigma: float = 0.05) -> GatedRegression:
    """Sec. 4 data generation: a_i* = e_i (i ≤ k), w_i* = e_{k+i} (i ≤ k − 1), g = Id, σ = 0.05."""
    if not isinstance(k, int | np.integer) or k < 2:
        raise ValueError(f"k must be an integer >= 2, got {k!r}")
    if not isinstance(d, int | np.integer) or d < 2 * k - 1:
        raise ValueError(f"d must be an integer >= 2k - 1 = {2 * k - 1}, got {d!r}")
    eye = np.eye(d)
    return GatedRegression(A=eye[:k], W=eye[k : 2 * k - 1], sigma=sigma)


def gate_logits(W: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Logits (⟨w_1, x⟩, …, ⟨w_{k−1}, x⟩, 0) of the softmax gate, expert-major: shape (k, n)."""
    return np.concatenate([W @ x.T, np.zeros((1, x.shape[0]))], axis=0)


def log_sum_exp(L: np.ndarray) -> np.ndarray:
    """log Σ_i exp(L_i) over the expert axis 0 of an (k, n) array; finite at any finite logits."""
    top = L.max(axis=0)
    return top + np.log(np.exp(L - top).sum(axis=0))


def gate_probabilities(W: np.ndarray, x: np.ndarray) -> np.ndarray:
    """p_i(x) = softmax_i(Wx, 0), shape (k, n); finite at any finite logits."""
    L = gate_logits(W, x)
    return np.exp(L - log_sum_exp(L))


def expert_outputs(A: np.ndarray, x: np.ndarray, act: str = "linear") -> np.ndarray:
    """g(⟨a_i, x⟩) for every expert, shape (k, n)."""
    g, _ = activation(act)
    return g(A @ x.T)


@dataclass(frozen=True)
class Sample:
    """n draws of eq. (1): inputs x (n, d), outputs y (n,), chosen expert z (n,) in 0..k−1."""

    x: np.ndarray
    y: np.ndarray
    z: np.ndarray


def sample(model: GatedRegression, inputs: InputDistribution, n: int, rng: np.random.Generator) -> Sample:
    """Draw (x, y) from eq. (1): x from `inputs`, z ~ softmax gate, y = g(⟨a_z*, x⟩) + ξ."""
    if inputs.d != model.d:
        raise ValueError(f"inputs.d must equal the model's d = {model.d}, got {inputs.d}")
    x = inputs.sample(n, rng)
    p = gate_probabilities(model.W, x)
    z = np.minimum((rng.random(n) > np.cumsum(p, axis=0)).sum(axis=0), model.k - 1)
    f = expert_outputs(model.A, x, model.activation)
    y = f[z, np.arange(n)] + model.sigma * rng.standard_normal(n)
    return Sample(x=x, y=y, z=z)


def _row_space_rule(W: np.ndarray, nodes: int):
    """Orthonormal basis Q (r, d) of W's row space and a Gauss–Hermite rule (u, weights) for N(0, I_r).

    Logits depend on x only through Qx, so E[f(Wx)] over x ~ N(m, I_d) is Σ_q w_q f(W(m + Qᵀu_q)).
    `nodes` points per axis, capped so the grid has at most MAX_QUADRATURE_NODES points.
    """
    _, sing, Vt = np.linalg.svd(W, full_matrices=False)
    Q = Vt[sing > 1e-12 * max(1.0, sing.max(initial=0.0))]
    r = Q.shape[0]
    if r == 0:
        return Q, np.zeros((1, 0)), np.ones(1)
    t, w = hermegauss(max(2, min(nodes, int(MAX_QUADRATURE_NODES ** (1.0 / r)))))
    u = np.stack(np.meshgrid(*([t] * r), indexing="ij"), axis=-1).reshape(-1, r)
    weights = np.prod(
        np.stack(np.meshgrid(*([w / w.sum()] * r), indexing="ij"), axis=-1).reshape(-1, r), axis=1
    )
    return Q, u, weights


def expected_gates(W: np.ndarray, inputs: InputDistribution, nodes: int = 64) -> np.ndarray:
    """E_x[p_m(x)] for m = 1..k by Gauss–Hermite quadrature over W's row space (eq. (7), Γ of Theorem 1)."""
    W = np.asarray(W, dtype=float)
    if W.ndim != 2 or W.shape[1] != inputs.d:
        raise ValueError(f"W must have shape (k - 1, d={inputs.d}), got {W.shape}")
    Q, u, weights = _row_space_rule(W, nodes)
    return sum(prob * gate_probabilities(W, mean + u @ Q) @ weights for prob, mean in inputs.components())


def gate_fisher_information(W: np.ndarray, nodes: int = 64) -> np.ndarray:
    """E[(diag p − ppᵀ) ⊗ x xᵀ] for x ~ N(0, I_d): the σ → 0 limit of the Hessian of L_log at W* (eq. 8).

    With x = Qᵀu + x_⊥ (u ~ N(0, I_r) independent of x_⊥), the expectation is
    Qᵀ E[M(u) u uᵀ] Q + E[M] ⊗ (I − QᵀQ), M = diag p − ppᵀ over the k − 1 free logits.
    """
    W = np.asarray(W, dtype=float)
    km, d = W.shape
    Q, u, weights = _row_space_rule(W, nodes)
    p = gate_probabilities(W, u @ Q)[:-1]  # (k − 1, nodes)
    M = (p[:, None, :] * (np.eye(km)[:, :, None] - p[None, :, :])) * weights  # (j, l, node)
    inner = np.einsum("jlq,qa,qb->jalb", M, u, u)  # E[M u uᵀ] in (j, a, l, b)
    fisher = np.einsum("jalb,ap,bq->jplq", inner, Q, Q)
    fisher += np.einsum("jl,pq->jplq", M.sum(axis=-1), np.eye(d) - Q.T @ Q)
    return fisher.reshape(km * d, km * d)


def rereferenced_gating(W: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """Gating of the experts taken in order `perm`, re-referenced to the last one: w_{π(i)} − w_{π(k)}."""
    full = np.vstack([W, np.zeros((1, W.shape[1]))])[np.asarray(perm)]
    return full[:-1] - full[-1]


@dataclass(frozen=True)
class GRUParams:
    """GRU weights (Cho et al. 2014): update gate (U_z, W_z), reset gate (U_r, W_r), candidate (U_h, W_h)."""

    U_z: np.ndarray
    W_z: np.ndarray
    U_r: np.ndarray
    W_r: np.ndarray
    U_h: np.ndarray
    W_h: np.ndarray


def gru_gates(params: GRUParams, x: np.ndarray, h: np.ndarray, gate: str) -> tuple[np.ndarray, np.ndarray]:
    """Update and reset gates z, r: sigmoid, or its binary threshold 1{· ≥ 0} (Sec. 2)."""
    pre_z = params.U_z @ x + params.W_z @ h
    pre_r = params.U_r @ x + params.W_r @ h
    if gate == "binary":
        return (pre_z >= 0).astype(float), (pre_r >= 0).astype(float)
    if gate == "sigmoid":
        return special.expit(pre_z), special.expit(pre_r)
    raise ValueError(f"gate must be 'binary' or 'sigmoid', got {gate!r}")


def gru_update(params: GRUParams, x, h, z, r, act: str = "tanh") -> np.ndarray:
    """h_t = (1 − z) ⊙ h + z ⊙ g(U_h x + W_h (r ⊙ h)) for given gate values (Cho et al. 2014)."""
    g, _ = activation(act)
    return (1.0 - z) * h + z * g(params.U_h @ x + params.W_h @ (r * h))


def hierarchical_moe_update(params: GRUParams, x, h, z, r, act: str = "tanh") -> np.ndarray:
    """Eq. (4) for given gate values: (1 − z) ⊙ h + z ⊙ ((1 − r) ⊙ g(U_h x) + r ⊙ g(U_h x + W_h h))."""
    g, _ = activation(act)
    return (1.0 - z) * h + z * ((1.0 - r) * g(params.U_h @ x) + r * g(params.U_h @ x + params.W_h @ h))


def gru_step(params: GRUParams, x: np.ndarray, h: np.ndarray, gate: str = "binary", act: str = "tanh"):
    """One GRU step with sigmoid or binary gates (Sec. 2)."""
    return gru_update(params, x, h, *gru_gates(params, x, h, gate), act)


def hierarchical_moe_step(
    params: GRUParams, x: np.ndarray, h: np.ndarray, gate: str = "binary", act: str = "tanh"
) -> np.ndarray:
    """One step of the depth-2 hierarchical MoE of eq. (4), gates as in the GRU."""
    return hierarchical_moe_update(params, x, h, *gru_gates(params, x, h, gate), act)
