"""The exact optimum of Theorem 4.1's class, min over f of P(yF(x) ≤ 0) with F = Σ_p f(x⁽ᵖ⁾), for discrete
magnitude laws: a mixed-integer program over the values f takes on Def. 3.1's patches (App. B's setting).

A sample of Def. 3.1 is (y, k, k', ε, α, γ) with y, ε uniform signs, k uniform, k' ≠ k uniform, and
patches yα·v_k (feature), β·c_k (centre), εγ·v_k' (feature noise) and Gaussian noise. An f that reads
a patch's direction and signed magnitude is a table: a(s, j, t) = f(s·t·v_j) and c(j) = f(β·c_j). So
F = a(y, k, α) + c(k) + a(ε, k', γ) on the signal patches. The Gaussian patches cannot help: for a fixed
table their sum is a constant shift c of F, which the table can make itself (add c to every c(j)),
so E[error] ≥ min over tables; and f = 0 off the signal lines makes them contribute nothing. The centre
magnitude β is independent of everything else and enters F only through c(k); the program takes one β
(a lab choice: the orbit argument never uses it).

Scale: F and λF err alike, so "y·F > 0" is "y·F ≥ 1" for some table; each outcome ω gets a binary z_ω
with y·F_ω + BIG·z_ω ≥ 1, table values in [−BOUND, BOUND], and the program minimises Σ P(ω) z_ω (HiGHS
through `scipy.optimize.milp`). BOUND limits the tables searched; `optimum` reports whether the solution
touches it (then a larger BOUND could do better and the value is only an upper bound).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from lab.core import validate
from lab.core.errors import InputError
from lab.core.io import quiet_stdout

BOUND = 64.0  # |f| on every patch: wide enough that no optimum found here touches it (reported)
FLOOR_SHARE = 1.0 / 8.0  # App. B: P(yF ≤ 0) ≥ ω/8

__all__ = ["BOUND", "DiscreteLaw", "Optimum", "optimum", "symmetric_mass"]


@dataclass(frozen=True)
class DiscreteLaw:
    """A law on finitely many positive magnitudes: `values` with probabilities `weights` (summing to 1)."""

    values: tuple[float, ...]
    weights: tuple[float, ...]

    def __post_init__(self) -> None:
        values = validate.array(self.values, "values", ndim=1)
        weights = validate.array(self.weights, "weights", ndim=1)
        if values.size == 0 or values.shape != weights.shape:
            raise InputError(
                f"values and weights must be non-empty and of one length, got {self.values}, {self.weights}"
            )
        if np.any(values <= 0) or len(set(values.tolist())) != values.size:
            raise InputError(f"values must be distinct positive magnitudes, got {self.values}")
        if np.any(weights < 0) or abs(weights.sum() - 1.0) > 1e-12:
            raise InputError(f"weights must be non-negative and sum to 1, got {self.weights}")

    def mass(self, value: float) -> float:
        """P(magnitude = value), 0 off the support."""
        return dict(zip(self.values, self.weights, strict=True)).get(value, 0.0)


def _laws(alpha: object, gamma: object) -> None:
    for name, law in (("alpha", alpha), ("gamma", gamma)):
        if not isinstance(law, DiscreteLaw):
            raise TypeError(f"{name} must be a DiscreteLaw, got {type(law).__name__}")


def symmetric_mass(alpha: DiscreteLaw, gamma: DiscreteLaw) -> float:
    """ω: the mass of the largest part of the law of (α, γ) invariant under α ↔ γ (App. B's orbit argument),
    Σ_{a, g} min(p_α(a) p_γ(g), p_α(g) p_γ(a))."""
    _laws(alpha, gamma)
    support = sorted(set(alpha.values) | set(gamma.values))
    return float(
        sum(
            min(alpha.mass(a) * gamma.mass(g), alpha.mass(g) * gamma.mass(a))
            for a, g in itertools.product(support, support)
        )
    )


@dataclass(frozen=True)
class Optimum:
    """The program's answer: the error of the table it found (computed from the table), ω/8, and whether
    that table touches BOUND (which matters only where the error lies above ω/8, a proven floor: there
    a larger BOUND might do better)."""

    error: float
    floor: float  # ω/8
    at_bound: bool
    outcomes: int  # binaries of the program

    @property
    def gap(self) -> float:
        """error − ω/8: 0 where the orbit floor is the optimum."""
        return self.error - self.floor


def optimum(alpha: DiscreteLaw, gamma: DiscreteLaw, K: int = 2, beta: float = 1.0) -> Optimum:
    """min over patch-additive F of P(yF ≤ 0) under Def. 3.1 with α ~ `alpha`, γ ~ `gamma`, K ≥ 2 clusters."""
    _laws(alpha, gamma)
    K = validate.integer(K, "K", low=2, high=6)
    validate.real(beta, "beta", low=0.0, low_open=True)
    support = sorted(set(alpha.values) | set(gamma.values))
    T = len(support)
    a_index = {
        (s, j, t): (0 if s > 0 else 1) * K * T + j * T + support.index(t)
        for s in (1, -1)
        for j in range(K)
        for t in support
    }
    centre = 2 * K * T  # c(j) at centre + j
    tables = centre + K
    rows, probs = [], []
    for y, k, kk, eps, a, g in itertools.product(
        (1, -1), range(K), range(K), (1, -1), alpha.values, gamma.values
    ):
        p = 0.25 / (K * (K - 1)) * alpha.mass(a) * gamma.mass(g)
        if kk == k or p == 0.0:
            continue
        row = np.zeros(tables)
        row[a_index[y, k, a]] += y
        row[centre + k] += y
        row[a_index[eps, kk, g]] += y
        rows.append(row)
        probs.append(p)
    n = len(rows)
    big = 3 * BOUND + 1.0
    A = np.hstack([np.array(rows), big * np.eye(n)])
    cost = np.concatenate([np.zeros(tables), probs])
    integrality = np.concatenate([np.zeros(tables), np.ones(n)])
    bounds = Bounds(
        np.concatenate([-BOUND * np.ones(tables), np.zeros(n)]),
        np.concatenate([BOUND * np.ones(tables), np.ones(n)]),
    )
    with quiet_stdout():  # HiGHS prints a debug line of its own per solve
        result = milp(
            cost, constraints=LinearConstraint(A, lb=np.ones(n)), integrality=integrality, bounds=bounds
        )
    if not result.success:
        raise RuntimeError(f"the program did not solve: {result.message}")
    margins = np.array(rows) @ result.x[:tables]  # y·F of each outcome under the table found
    error = float(np.dot(probs, margins <= 0.0))  # that table's error, exactly, not the solver's z
    at_bound = bool(np.any(np.abs(result.x[:tables]) >= BOUND - 1e-6))
    return Optimum(
        error=error, floor=FLOOR_SHARE * symmetric_mass(alpha, gamma), at_bound=at_bound, outcomes=n
    )
