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
diagonal W_h, not in general (`gru_step`, `hierarchical_moe_step`; checked in D6). For the reset-after
form h̃ = g(U_h x + r ⊙ (W_h h)) (the form cuDNN and PyTorch use), coordinate i reads
g(U_h x + r_i (W_h h))_i, which is (1 − r_i) g(U_h x)_i + r_i g(U_h x + W_h h)_i for r_i ∈ {0, 1}:
eq. (4) is an exact identity there, so only the reset-before form the paper writes breaks it. With sigmoid
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

from lab.core import validate
from lab.core.errors import InputError
from lab.kernels.activations import ACTIVATIONS, activation

MAX_QUADRATURE_NODES = 250_000

__all__ = [
    "MAX_QUADRATURE_NODES",
    "GRUParams",
    "GatedRegression",
    "GaussianInput",
    "GaussianMixtureInput",
    "InputDistribution",
    "Sample",
    "expected_gates",
    "expert_outputs",
    "gate_fisher_information",
    "gate_logits",
    "gate_probabilities",
    "gru_gates",
    "gru_step",
    "gru_update",
    "hierarchical_moe_step",
    "hierarchical_moe_update",
    "log_sum_exp",
    "paper_model",
    "rereferenced_gating",
    "sample",
]

# Every public function and constructor checks its arguments once (`lab.core.validate`):
# finite real arrays of the documented shapes (W (k − 1, d), A (k, d), x (n, d)), integer sizes,
# σ >= 0, probabilities in [0, 1], names from their lists; internal callers use the `_` versions.


# Argument checks shared by this package's public functions (`lab.makkuva2020.losses` and `.fit` use
# them too), built on `lab.core.validate`: each returns the checked value, never a changed copy.


def _vector(value: object, name: str, d: int | None = None) -> np.ndarray:
    """A finite real vector (d,), d >= 1."""
    a = validate.array(value, name, ndim=1, labels="(d,)", nonempty=(0,), cast=False)
    if d is not None:
        validate.same_shape(name, a, (d,), f"(d,) with d = {d}")
    return a


def _rows(value: object, name: str, labels: str, d: int | None = None, nonempty=(0,)) -> np.ndarray:
    """A finite real matrix with `labels` axes, e.g. "(n, d)", and (if given) d columns."""
    a = validate.array(value, name, ndim=2, labels=labels, nonempty=nonempty, cast=False)
    if d is not None:
        validate.same_shape(name, a, (a.shape[0], d), f"{labels} with d = {d}")
    return a


def _per_sample(value: object, name: str, n: int) -> np.ndarray:
    a = validate.array(value, name, ndim=1, labels="(n,)", cast=False)
    validate.same_shape(name, a, (n,), "(n,) with n = len(x)")
    return a


def _act(value: object) -> str:
    return validate.choice(value, "act", ACTIVATIONS)


def _distribution(inputs: object) -> object:
    """An `InputDistribution`: an object with `d`, `sample(n, rng)` and `components()`."""
    if not all(hasattr(inputs, a) for a in ("d", "sample", "components")):
        raise TypeError(
            "inputs must be an InputDistribution (GaussianInput, GaussianMixtureInput: d, sample, "
            f"components), got {type(inputs).__name__}"
        )
    return inputs


def _regression(W, A, x, y, sigma, act, names=("W", "A")) -> tuple[np.ndarray, ...]:
    """W (k − 1, d), A (k, d), x (n, d), y (n,) real and finite, σ finite > 0, act an activation name.

    `names` are W's and A's names in the caller (e.g. W0, A0 in `lab.makkuva2020.fit.em`)."""
    w_name, a_name = names
    A = _rows(A, a_name, "(k, d)", nonempty=(0, 1))
    k, d = A.shape
    W = _rows(W, w_name, "(k - 1, d)", d, nonempty=())
    validate.same_shape(w_name, W, (k - 1, d), f"(k - 1, d) with (k, d) = {(k, d)} from {a_name}")
    x = _rows(x, "x", "(n, d)", d)
    y = _per_sample(y, "y", x.shape[0])
    validate.real(sigma, "sigma", low=0.0, low_open=True)
    _act(act)
    return W, A, x, y


class InputDistribution(Protocol):
    """A distribution of x in R^d that can be sampled and is a finite mixture of N(m_c, I_d)."""

    d: int

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray: ...

    def components(self) -> list[tuple[float, np.ndarray]]: ...


def _check_n(n: int, rng: object) -> None:
    validate.integer(n, "n", low=1)
    validate.generator(rng)


@dataclass(frozen=True)
class GaussianInput:
    """x ~ N(0, I_d): the input distribution of Theorems 1–4."""

    d: int

    def __post_init__(self) -> None:
        validate.integer(self.d, "d", low=1)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        _check_n(n, rng)
        return rng.standard_normal((n, self.d))

    def components(self) -> list[tuple[float, np.ndarray]]:
        return [(1.0, np.zeros(self.d))]


@dataclass(frozen=True)
class GaussianMixtureInput:
    """x ~ p N(μ, I_d) + (1 − p) N(−μ, I_d): the non-Gaussian input of Sec. 4.1."""

    mu: np.ndarray
    p: float

    def __post_init__(self) -> None:
        _vector(self.mu, "mu")
        mu = np.asarray(self.mu, dtype=float)
        if not 0.0 <= validate.real(self.p, "p") <= 1.0:
            raise InputError(f"p must lie in [0, 1], got {self.p}")
        object.__setattr__(self, "mu", mu)

    @property
    def d(self) -> int:
        return self.mu.size

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        _check_n(n, rng)
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
        A = _rows(self.A, "A", "(k, d) with k >= 2", nonempty=(1,))
        if A.shape[0] < 2:
            raise InputError(f"A must have shape (k, d) with k >= 2, got {A.shape}")
        W = validate.array(self.W, "W", ndim=2, labels="(k - 1, d)", cast=False)
        if W.shape != (A.shape[0] - 1, A.shape[1]):
            raise InputError(f"W must have shape (k - 1, d) = {(A.shape[0] - 1, A.shape[1])}, got {W.shape}")
        A, W = np.asarray(A, dtype=float), np.asarray(W, dtype=float)
        validate.real(self.sigma, "sigma", low=0.0)
        validate.choice(self.activation, "activation", ACTIVATIONS)
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
    validate.integer(k, "k", low=2)
    if validate.integer(d, "d") < 2 * k - 1:
        raise InputError(f"d must be an integer >= 2k - 1 = {2 * k - 1}, got {d!r}")
    eye = np.eye(d)
    return GatedRegression(A=eye[:k], W=eye[k : 2 * k - 1], sigma=sigma)


def _gating(W, x) -> tuple[np.ndarray, np.ndarray]:
    """W (k − 1, d) and x (n, d), real and finite (W may have no rows: k = 1)."""
    W = _rows(W, "W", "(k - 1, d)", nonempty=())
    return W, _rows(x, "x", "(n, d)", W.shape[1], nonempty=())


def gate_logits(W: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Logits (⟨w_1, x⟩, …, ⟨w_{k−1}, x⟩, 0) of the softmax gate, expert-major: shape (k, n)."""
    return _gate_logits(*_gating(W, x))


def _gate_logits(W: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.concatenate([W @ x.T, np.zeros((1, x.shape[0]))], axis=0)


def log_sum_exp(L: np.ndarray) -> np.ndarray:
    """log Σ_i exp(L_i) over the expert axis 0 of an (k, n) array, k >= 1; finite at any finite logits."""
    return _log_sum_exp(_rows(L, "L", "(k, n)"))


def _log_sum_exp(L: np.ndarray) -> np.ndarray:
    top = L.max(axis=0)
    return top + np.log(np.exp(L - top).sum(axis=0))


def gate_probabilities(W: np.ndarray, x: np.ndarray) -> np.ndarray:
    """p_i(x) = softmax_i(Wx, 0), shape (k, n); finite at any finite logits (W (k − 1, d), x (n, d))."""
    return _gate_probabilities(*_gating(W, x))


def _gate_probabilities(W: np.ndarray, x: np.ndarray) -> np.ndarray:
    L = _gate_logits(W, x)
    return np.exp(L - _log_sum_exp(L))


def expert_outputs(A: np.ndarray, x: np.ndarray, act: str = "linear") -> np.ndarray:
    """g(⟨a_i, x⟩) for every expert, shape (k, n); A (k, d), x (n, d) real and finite."""
    A = _rows(A, "A", "(k, d)")
    return _expert_outputs(A, _rows(x, "x", "(n, d)", A.shape[1], nonempty=()), _act(act))


def _expert_outputs(A: np.ndarray, x: np.ndarray, act: str) -> np.ndarray:
    g, _ = activation(act)
    return g(A @ x.T)


@dataclass(frozen=True)
class Sample:
    """n draws of eq. (1): inputs x (n, d), outputs y (n,), chosen expert z (n,) in 0..k−1."""

    x: np.ndarray
    y: np.ndarray
    z: np.ndarray


def sample(model: GatedRegression, inputs: InputDistribution, n: int, rng: np.random.Generator) -> Sample:
    """Draw (x, y) from eq. (1): x from `inputs`, z ~ softmax gate, y = g(⟨a_z*, x⟩) + ξ.

    model a `GatedRegression`, inputs an `InputDistribution` of its d, n an integer >= 1, rng a Generator."""
    validate.instance(model, "model", GatedRegression)
    _distribution(inputs)
    if inputs.d != model.d:
        raise InputError(f"inputs.d must equal the model's d = {model.d}, got {inputs.d}")
    _check_n(n, rng)
    x = inputs.sample(n, rng)
    p = _gate_probabilities(model.W, x)
    z = np.minimum((rng.random(n) > np.cumsum(p, axis=0)).sum(axis=0), model.k - 1)
    f = _expert_outputs(model.A, x, model.activation)
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
    """E_x[p_m(x)] for m = 1..k by Gauss–Hermite quadrature over W's row space (eq. (7), Γ of Theorem 1).

    W (k − 1, d) real and finite with the inputs' d, nodes an integer >= 1 (points per axis)."""
    _distribution(inputs)
    W = np.asarray(_rows(W, "W", "(k - 1, d)", inputs.d, nonempty=()), dtype=float)
    Q, u, weights = _row_space_rule(W, validate.integer(nodes, "nodes", low=1))
    return sum(prob * _gate_probabilities(W, mean + u @ Q) @ weights for prob, mean in inputs.components())


def gate_fisher_information(W: np.ndarray, nodes: int = 64) -> np.ndarray:
    """E[(diag p − ppᵀ) ⊗ x xᵀ] for x ~ N(0, I_d): the σ → 0 limit of the Hessian of L_log at W* (eq. 8).

    With x = Qᵀu + x_⊥ (u ~ N(0, I_r) independent of x_⊥), the expectation is
    Qᵀ E[M(u) u uᵀ] Q + E[M] ⊗ (I − QᵀQ), M = diag p − ppᵀ over the k − 1 free logits.
    W (k − 1, d) real and finite with k − 1, d >= 1, nodes an integer >= 1.
    """
    W = np.asarray(_rows(W, "W", "(k - 1, d)", nonempty=(0, 1)), dtype=float)
    km, d = W.shape
    Q, u, weights = _row_space_rule(W, validate.integer(nodes, "nodes", low=1))
    p = _gate_probabilities(W, u @ Q)[:-1]  # (k − 1, nodes)
    M = (p[:, None, :] * (np.eye(km)[:, :, None] - p[None, :, :])) * weights  # (j, l, node)
    inner = np.einsum("jlq,qa,qb->jalb", M, u, u)  # E[M u uᵀ] in (j, a, l, b)
    fisher = np.einsum("jalb,ap,bq->jplq", inner, Q, Q)
    fisher += np.einsum("jl,pq->jplq", M.sum(axis=-1), np.eye(d) - Q.T @ Q)
    return fisher.reshape(km * d, km * d)


def rereferenced_gating(W: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """Gating of the experts taken in order `perm`, re-referenced to the last one: w_{π(i)} − w_{π(k)}.

    W (k − 1, d) real and finite, perm a permutation of 0..k−1 (integers)."""
    W = _rows(W, "W", "(k - 1, d)", nonempty=())
    k = W.shape[0] + 1
    perm = validate.integers(perm, "perm", ndim=1, labels="(k,)", low=0, high=k, bound=f"k={k}")
    if sorted(perm.tolist()) != list(range(k)):
        raise InputError(f"perm must be a permutation of 0..k-1 = {k - 1}, got {perm.tolist()}")
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

    def __post_init__(self) -> None:
        U_z = _rows(self.U_z, "U_z", "(m, p)", nonempty=(0, 1))
        m, p = U_z.shape
        for name in ("U_r", "U_h"):
            validate.same_shape(name, _rows(getattr(self, name), name, "(m, p)"), (m, p), "(m, p) of U_z")
        for name in ("W_z", "W_r", "W_h"):
            validate.same_shape(name, _rows(getattr(self, name), name, "(m, m)"), (m, m), "(m, m) of U_z")


def _state(params: object, x: object, h: object) -> None:
    """params a `GRUParams` (m, p), input x (p,) and state h (m,), real and finite."""
    validate.instance(params, "params", GRUParams)
    for name in params.__dataclass_fields__:  # arrays can change after construction: still finite?
        validate.array(getattr(params, name), f"params.{name}", cast=False)
    m, p = params.U_z.shape
    _vector(x, "x", p)
    _vector(h, "h", m)


def _gates(z: object, r: object, m: int) -> None:
    """Gate values z and r (m,) in [0, 1] (binary or sigmoid)."""
    for name, value in (("z", z), ("r", r)):
        a = validate.array(value, name, ndim=1, labels="(m,)", cast=False, low=0.0, high=1.0)
        validate.same_shape(name, a, (m,), f"(m,) with m = {m} from params")


def gru_gates(params: GRUParams, x: np.ndarray, h: np.ndarray, gate: str) -> tuple[np.ndarray, np.ndarray]:
    """Update and reset gates z, r: sigmoid, or its binary threshold 1{· ≥ 0} (Sec. 2)."""
    _state(params, x, h)
    validate.choice(gate, "gate", ("binary", "sigmoid"))
    pre_z = params.U_z @ x + params.W_z @ h
    pre_r = params.U_r @ x + params.W_r @ h
    if gate == "binary":
        return (pre_z >= 0).astype(float), (pre_r >= 0).astype(float)
    if gate == "sigmoid":
        return special.expit(pre_z), special.expit(pre_r)
    raise ValueError(f"gate must be 'binary' or 'sigmoid', got {gate!r}")


RESETS = ("before", "after")  # r ⊙ h inside W_h (Cho et al. 2014, as Sec. 2 writes it), or r ⊙ (W_h h)


def gru_update(params: GRUParams, x, h, z, r, act: str = "tanh", reset: str = "before") -> np.ndarray:
    """h_t = (1 − z) ⊙ h + z ⊙ g(U_h x + W_h (r ⊙ h)) (reset before W_h, Sec. 2) or g(U_h x + r ⊙ (W_h h))."""
    _state(params, x, h)
    _gates(z, r, params.U_z.shape[0])
    _act(act)
    g, _ = activation(act)
    if reset == "before":
        return (1.0 - z) * h + z * g(params.U_h @ x + params.W_h @ (r * h))
    if reset == "after":
        return (1.0 - z) * h + z * g(params.U_h @ x + r * (params.W_h @ h))
    raise ValueError(f"reset must be one of {RESETS}, got {reset!r}")


def hierarchical_moe_update(params: GRUParams, x, h, z, r, act: str = "tanh") -> np.ndarray:
    """Eq. (4) for given gate values: (1 − z) ⊙ h + z ⊙ ((1 − r) ⊙ g(U_h x) + r ⊙ g(U_h x + W_h h))."""
    _state(params, x, h)
    _gates(z, r, params.U_z.shape[0])
    _act(act)
    g, _ = activation(act)
    return (1.0 - z) * h + z * ((1.0 - r) * g(params.U_h @ x) + r * g(params.U_h @ x + params.W_h @ h))


def gru_step(
    params: GRUParams, x: np.ndarray, h: np.ndarray, gate: str = "binary", act: str = "tanh", reset="before"
):
    """One GRU step with sigmoid or binary gates (Sec. 2), the reset gate before or after W_h."""
    return gru_update(params, x, h, *gru_gates(params, x, h, gate), act, reset)


def hierarchical_moe_step(
    params: GRUParams, x: np.ndarray, h: np.ndarray, gate: str = "binary", act: str = "tanh"
) -> np.ndarray:
    """One step of the depth-2 hierarchical MoE of eq. (4), gates as in the GRU."""
    return hierarchical_moe_update(params, x, h, *gru_gates(params, x, h, gate), act)
