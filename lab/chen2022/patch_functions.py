"""Per-patch functions f: R^d → R for Theorem 4.1 of Chen et al. 2022 (F(x) = Σ_p f(x⁽ᵖ⁾), App. B).

Callables on arrays (..., d) → (...): two-layer CNN filter banks (`CNNFilter`, the experts below
Theorem 4.1), polynomials in projections (`ProjectionPolynomial`) and discontinuous lookup tables
on projections (`ProjectionLookup`, which covers thresholds and sign), with random members of each
family on the signal directions v_k, c_k. Every f gives the same bits for a patch wherever it sits
in the batch, which the orbit identity of `lab.chen2022.patchwise` needs.

Constructors and functions check their arguments (`lab.core.validate`): real finite arrays of the
documented shapes (no bool, complex or string arrays, no NaN or inf), integer counts, activation
names, scales finite and >= 0. Calling an f checks the patches z once (`projections`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lab.chen2022.data import Signals
from lab.core import validate
from lab.core.errors import InputError
from lab.kernels.activations import ACTIVATIONS, activation

__all__ = [
    "ALIGNED_COSINE",
    "CNNFilter",
    "PatchFunction",
    "ProjectionLookup",
    "ProjectionPolynomial",
    "projections",
    "random_cnn",
    "random_lookup",
    "random_polynomial",
    "signal_directions",
]

# |cos(z, u)| above which a patch counts as aligned with u: signal patches reach 1 − O(d·u), while
# a Gaussian noise patch gets there with probability ~ (2·10⁻⁹)^((d−1)/2), nil even for d = 4.
ALIGNED_COSINE = 1.0 - 1e-9

PatchFunction = Callable[[np.ndarray], np.ndarray]


def _array(value, name: str, labels: str) -> np.ndarray:
    """A real finite array of shape `labels` (e.g. "(J, d)"), as float64 (the conversion the classes made)."""
    ndim = len([axis for axis in labels.strip("()").split(",") if axis.strip()])
    validate.array(value, name, ndim=ndim, labels=labels, cast=False)
    return np.asarray(value, dtype=float)


def _contract(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Σ_i a[..., i] b[j, i] (or b[i] for 1-d b), the same bits for a row wherever it sits in `a`.

    BLAS matmul does not give that: on stacked small matrices its result depends on the row's
    position in the block (measured: up to 7e-15 apart for d = 50), which would break the exact
    cancellation of the orbit's margins. einsum without optimisation never calls BLAS.
    """
    return np.einsum("...i,ji->...j" if b.ndim == 2 else "...i,i->...", a, b)


def projections(U: np.ndarray, z: np.ndarray) -> np.ndarray:
    """⟨u_i, z⟩ for every row u_i of U and patch z: (..., d) → (..., m), the same bits anywhere in z.

    U (m, d) and z (..., d) real and finite."""
    return _projections(_array(U, "U", "(m, d)"), z)


def _projections(U: np.ndarray, z) -> np.ndarray:
    """`projections` for a checked U: z is checked here (once per call of an f)."""
    validate.array(z, "z", min_ndim=1, labels="(..., d)", cast=False)
    z = np.asarray(z, dtype=float)
    if z.shape[-1] != U.shape[1]:
        raise InputError(f"z must be patches with last axis d = {U.shape[1]}, got shape {z.shape}")
    return _contract(z, U)


@dataclass(frozen=True, eq=False)
class CNNFilter:
    """Two-layer CNN filter bank f(z) = Σ_j a_j σ(⟨w_j, z⟩ + b_j) (below Theorem 4.1); W is (J, d)."""

    W: np.ndarray
    b: np.ndarray
    a: np.ndarray
    act: str = "linear"

    def __post_init__(self) -> None:
        W = _array(self.W, "W", "(J, d)")
        b, a = _array(self.b, "b", "(J,)"), _array(self.a, "a", "(J,)")
        if b.shape != (W.shape[0],) or a.shape != (W.shape[0],):
            raise ValueError(f"b and a must have shape (J,) = ({W.shape[0]},), got {b.shape}, {a.shape}")
        validate.choice(self.act, "act", ACTIVATIONS)
        object.__setattr__(self, "W", W)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "a", a)

    def __call__(self, z: np.ndarray) -> np.ndarray:
        sigma, _ = activation(self.act)
        return _contract(sigma(_projections(self.W, z) + self.b), self.a)

    def describe(self) -> str:
        return f"{self.act} CNN, {self.W.shape[0]} filters with biases"


@dataclass(frozen=True, eq=False)
class ProjectionPolynomial:
    """f(z) = Σ_t c_t Π_i ⟨u_i, z⟩^{e_ti}: a polynomial in the projections on directions u_i (rows of U)."""

    U: np.ndarray
    exponents: np.ndarray
    coef: np.ndarray

    def __post_init__(self) -> None:
        U, coef = _array(self.U, "U", "(m, d)"), _array(self.coef, "coef", "(T,)")
        exponents = validate.integers(self.exponents, "exponents", ndim=2, labels="(T, m)", low=0)
        exponents = np.asarray(exponents, dtype=np.int64)
        if exponents.shape != (coef.shape[0], U.shape[0]):
            raise InputError(
                f"exponents must be non-negative integers of shape (T, m) = ({coef.shape[0]}, "
                f"{U.shape[0]}), got shape {exponents.shape}"
            )
        object.__setattr__(self, "U", U)
        object.__setattr__(self, "exponents", exponents)
        object.__setattr__(self, "coef", coef)

    def __call__(self, z: np.ndarray) -> np.ndarray:
        proj = _projections(self.U, z)
        powers = [np.ones_like(proj)]
        for _ in range(int(self.exponents.max(initial=0))):
            powers.append(powers[-1] * proj)
        table = np.stack(powers, axis=-1)  # (..., m, degree + 1): ⟨u_i, z⟩^e
        terms = table[..., np.arange(self.U.shape[0]), self.exponents]  # (..., T, m)
        return _contract(terms.prod(axis=-1), self.coef)

    def describe(self) -> str:
        return (
            f"polynomial of degree {int(self.exponents.sum(axis=1).max())} in {self.U.shape[0]} projections"
        )


@dataclass(frozen=True, eq=False)
class ProjectionLookup:
    """f(z) = Σ_i T[i, bin(⟨u_i, z⟩)]: lookup tables on projections (edges split R into E + 1 bins).

    Thresholds and sign are lookups with one edge. With `min_cosine`, a patch reads only the row of
    the direction it is aligned with (|⟨u_i, z⟩| ≥ min_cosine·‖z‖, at most one row for orthonormal
    u_i and min_cosine > 1/√2) and every non-aligned patch, e.g. Gaussian noise, gets f(z) = 0.
    """

    U: np.ndarray
    edges: np.ndarray
    table: np.ndarray
    min_cosine: float | None = None

    def __post_init__(self) -> None:
        U, edges, table = (
            _array(self.U, "U", "(m, d)"),
            _array(self.edges, "edges", "(E,)"),
            _array(self.table, "table", "(m, E + 1)"),
        )
        if edges.size and np.any(np.diff(edges) <= 0):
            raise InputError("edges must be strictly increasing")
        if table.shape != (U.shape[0], edges.size + 1):
            raise InputError(
                f"table must have shape (m, E + 1) = {(U.shape[0], edges.size + 1)}, got {table.shape}"
            )
        if self.min_cosine is not None:
            if isinstance(self.min_cosine, bool) or not isinstance(self.min_cosine, float | int | np.number):
                raise TypeError(f"min_cosine must be a number in (1/√2, 1] or None, got {self.min_cosine!r}")
            if not np.sqrt(0.5) < self.min_cosine <= 1.0:
                raise InputError(f"min_cosine must lie in (1/√2, 1] or be None, got {self.min_cosine}")
        object.__setattr__(self, "U", U)
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "table", table)

    def __call__(self, z: np.ndarray) -> np.ndarray:
        proj = _projections(self.U, z)
        values = self.table[np.arange(self.U.shape[0]), np.searchsorted(self.edges, proj, side="right")]
        if self.min_cosine is not None:
            norm = np.linalg.norm(z, axis=-1, keepdims=True)
            values = np.where((np.abs(proj) >= self.min_cosine * norm) & (norm > 0), values, 0.0)
        return values.sum(axis=-1)

    def describe(self) -> str:
        kind = "aligned-patch" if self.min_cosine is not None else "summed"
        return f"{kind} lookup on {self.U.shape[0]} projections, {self.edges.size + 1} bins"


def _signals(signals) -> Signals:
    """A `Signals` with finite V and C of one shape (K, d) (arrays can change after construction)."""
    validate.instance(signals, "signals", Signals)
    V = validate.array(signals.V, "signals.V", ndim=2, labels="(K, d)", nonempty=(0, 1), cast=False)
    C = validate.array(signals.C, "signals.C", ndim=2, labels="(K, d)", cast=False)
    validate.same_shape("signals.C", C, V.shape, "(K, d) of signals.V")
    return signals


def signal_directions(signals: Signals) -> np.ndarray:
    """The 2K signal directions v_1..v_K, c_1..c_K as rows (Def. 3.1)."""
    _signals(signals)
    return np.vstack([signals.V, signals.C])


def random_cnn(
    rng: np.random.Generator,
    signals: Signals,
    J: int,
    act: str,
    bias_scale: float = 1.0,
    signal_weight: float = 1.0,
) -> CNNFilter:
    """Random CNN filters: w_j = signal_weight·(Gaussian mix of v_k, c_k) + N(0, I/d); b_j, a_j Gaussian.

    J an integer >= 1, act an activation name, bias_scale and signal_weight finite and >= 0."""
    validate.generator(rng)
    validate.integer(J, "J", low=1)
    validate.choice(act, "act", ACTIVATIONS)
    validate.real(bias_scale, "bias_scale", low=0.0)
    validate.real(signal_weight, "signal_weight", low=0.0)
    U = signal_directions(signals)
    d = U.shape[1]
    W = signal_weight * rng.standard_normal((J, U.shape[0])) @ U + rng.standard_normal((J, d)) / np.sqrt(d)
    return CNNFilter(W, bias_scale * rng.standard_normal(J), rng.standard_normal(J), act)


def random_polynomial(
    rng: np.random.Generator, signals: Signals, degree: int, terms: int
) -> ProjectionPolynomial:
    """A random polynomial of total degree ≤ `degree` in the 2K projections ⟨v_k, z⟩, ⟨c_k, z⟩."""
    validate.generator(rng)
    validate.integer(degree, "degree", low=1)
    validate.integer(terms, "terms", low=1)
    U = signal_directions(signals)
    exponents = np.zeros((terms, U.shape[0]), dtype=np.int64)
    for t in range(terms):
        for i in rng.integers(0, U.shape[0], size=rng.integers(1, degree + 1)):
            exponents[t, i] += 1
    return ProjectionPolynomial(U, exponents, rng.standard_normal(terms))


def random_lookup(
    rng: np.random.Generator, signals: Signals, edges: np.ndarray, aligned: bool = False
) -> ProjectionLookup:
    """A lookup table with N(0, 1) entries on the 2K signal projections with the given bin edges.

    edges: finite real numbers (any order, repeats merged); aligned a bool."""
    validate.generator(rng)
    validate.array(edges, "edges", ndim=(0, 1), labels="(E,)", cast=False)
    validate.flag(aligned, "aligned")
    U = signal_directions(signals)
    edges = np.unique(np.asarray(edges, dtype=float))
    table = rng.standard_normal((U.shape[0], edges.size + 1))
    return ProjectionLookup(U, edges, table, ALIGNED_COSINE if aligned else None)
