"""The smallest valid constant of Lemma 5.1 / C.1, L*(M) = sup ‖p(h) − p(ĥ)‖∞ / ‖h − ĥ‖∞, and a search for it.

Lemma C.1 bounds L* by κM², κ the density bound of the noise. The bound is loose by a factor of
at least M²/2: L* ≤ 2κ for every M.

**Theorem (sharpened Lemma C.1).** Let r_1, …, r_M be independent and let r_m have a density
bounded by κ. Then |p_m(h) − p_m(ĥ)| ≤ 2κ‖h − ĥ‖∞ for all h, ĥ ∈ R^M.

*Proof.* Let ε = ‖h − ĥ‖∞, Y = max_{j≠m} (h_j + r_j) and D = Y − h_m, so p_m(h) = P(r_m > D)
(ties have probability 0). p_m is increasing in h_m and decreasing in every other h_j, so
p_m(ĥ) lies between the values at h + ε(e_m − Σ_{j≠m} e_j) and h − ε(e_m − Σ_{j≠m} e_j), which are
P(r_m > D − 2ε) and P(r_m > D + 2ε). D is independent of r_m, hence
0 ≤ P(r_m > D − 2ε) − P(r_m > D) = E[P(D − 2ε < r_m ≤ D | D)] ≤ 2κε, and the same on the other
side. □

**Where the constant comes from.** p is Lipschitz, so L* = sup_h max_m ‖∇p_m(h)‖₁. The
off-diagonal entries ∂p_m/∂h_k = −∫ f(t − h_m) f(t − h_k) Π_{j≠m,k} F(t − h_j) dt are ≤ 0 and each
row sums to 0, so ‖∇p_m‖₁ = 2 ∂p_m/∂h_m = 2 E[f(Y − h_m)]: twice the density of r_m averaged
over the law of the best competitor. Hence L* = 2 sup_h max_m E f(Y − h_m) ≤ 2κ, and L*(M) is
non-decreasing in M (an expert sent to −∞ drops out).

- Unif[a, b], κ = 1/(b − a): E f(Y − h_m) = κ P(a ≤ Y − h_m ≤ b) = κ whenever h_m ties with
  max_{j≠m} h_j. So **L*(M) = 2κ exactly for every M ≥ 2** (a supremum, approached as ĥ → h at a
  tie: for M tied experts and ĥ = h + ε(e_m − Σ_{j≠m} e_j) the ratio is 2κ(1 − (2εκ)^{M−1}/M)).
- Gumbel(0, β), κ = 1/(eβ): p = softmax(h/β), ‖∇p_m‖₁ = 2p_m(1 − p_m)/β ≤ 1/(2β), reached at
  p_m = 1/2, so **L*(M) = 1/(2β) = (e/2)κ ≈ 1.36κ for every M ≥ 2**. The maximum of Gumbels is
  Gumbel with the same β (max-stability): more experts never sharpen Y.
- N(0, s²), κ = 1/(s√(2π)): L*(2) = √2 κ (the difference of two noises is N(0, 2s²)). The
  maximum of M − 1 tied Gaussian competitors concentrates (its spread shrinks like
  s/√(2 log M)), so E φ_s(Y − c) → κ and L*(M) increases slowly towards 2κ, never beyond it.
  Measured L*/κ = 1.414, 1.544, 1.604, 1.699, 1.758, 1.798, 1.827 for M = 2, 3, 4, 8, 16, 32, 64;
  (2 − L*/κ)·log(M − 1) grows from 0.59 (M = 8) to 0.72 (M = 64), towards the π²/12 ≈ 0.82 of
  the extreme-value heuristic L* ≈ 2κ(1 − π²/(24 log M)). The search finds the maximum with every
  competitor tied and h_m just ahead of them; that is a numerical finding, not a proof.

Every value of ‖∇p_m(h)‖₁ is a lower bound on L*, and 2κ is an upper bound; the search
maximises ∂p_0/∂h_0 (by symmetry m = 0) by L-BFGS-B from many starts and re-evaluates the best
point with the exact Jacobian of `lab.chen2022.routing.routing_jacobian`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from lab.chen2022.routing import Gaussian, Gumbel, Noise, Uniform, routing_jacobian
from lab.chen2022.routing_exact import gaussian_self_sensitivity
from lab.core import validate

BOX = 8.0  # competitors are searched in [−BOX, BOX] noise scales around h_0 = 0


def local_constant(h, noise: Noise) -> np.ndarray:
    """max_m ‖∇p_m(h)‖₁ = 2 max_m ∂p_m/∂h_m: the ∞-norm Lipschitz constant of p at h, shape h[..., 0]."""
    return np.abs(routing_jacobian(h, noise)).sum(axis=-1).max(axis=-1)


def proven_constant(noise: Noise) -> float:
    """2κ: a valid Lipschitz constant for every M (the theorem above)."""
    return 2.0 * noise.kappa


def exact_constant(noise: Noise, M: int) -> float | None:
    """L*(M) where it is known in closed form: 2κ (uniform), 1/(2β) (Gumbel), 0 for M = 1."""
    if M == 1:
        return 0.0
    if isinstance(noise, Uniform):
        return 2.0 * noise.kappa
    if isinstance(noise, Gumbel):
        return 1.0 / (2.0 * noise.scale)
    return None


def self_sensitivity(x: np.ndarray, noise: Noise) -> tuple[float, np.ndarray]:
    """∂p_0/∂x_0 and its gradient for standardised gates x = h/scale (M,), M ≥ 2."""
    if isinstance(noise, Uniform):
        # ∂p_0/∂x_0 = P(0 ≤ Y − x_0 ≤ 1) = G(x_0 + 1) − G(x_0), G(y) = Π_{j≥1} clip(y − x_j, 0, 1)
        value, grad = 0.0, np.zeros_like(x)
        for y, sign in ((x[0] + 1.0, 1.0), (x[0], -1.0)):
            u = y - x[1:]
            F = np.clip(u, 0.0, 1.0)
            slope = ((u > 0) & (u < 1)).astype(float)
            others = np.array([np.prod(np.delete(F, k)) for k in range(F.size)])
            value += sign * np.prod(F)
            grad[1:] -= sign * slope * others
        grad[0] = -grad[1:].sum()
        return value, grad
    if isinstance(noise, Gumbel):
        e = np.exp(x - x.max())
        p = e / e.sum()
        dp0 = p[0] * ((np.arange(x.size) == 0) - p)
        return p[0] * (1.0 - p[0]), (1.0 - 2.0 * p[0]) * dp0
    if isinstance(noise, Gaussian):
        value, grad = gaussian_self_sensitivity(x[None, :])
        return float(value[0]), grad[0]
    raise TypeError(f"noise must be Uniform, Gaussian or Gumbel, got {type(noise).__name__}")


def _starts(M: int, starts: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Competitor gates x_1..x_{M−1}: a tie, a tie just behind, one-ahead, then random spreads."""
    found = [np.zeros(M - 1), np.full(M - 1, -0.5), np.r_[0.5, np.full(M - 2, -3.0)]]
    spreads = (0.05, 0.3, 1.0, 3.0)
    while len(found) < starts:
        spread = spreads[len(found) % len(spreads)]
        found.append(rng.normal(rng.uniform(-1, 0.5), spread, M - 1))
    return [np.clip(s, -BOX, BOX) for s in found[:starts]]


@dataclass(frozen=True)
class ConstantSearch:
    """Outcome of the deterministic search: the best constant (exact Jacobian) and where it is."""

    noise: str
    M: int
    kappa: float
    constant: float
    h: np.ndarray
    starts: int
    evaluations: int


def search_constant(noise: Noise, M: int, starts: int = 8, seed: int = 0) -> ConstantSearch:
    """Maximise ‖∇p_0(h)‖₁ over h (h_0 = 0) by L-BFGS-B from `starts` starts (deterministic for a seed)."""
    if isinstance(M, bool) or not isinstance(M, int | np.integer) or M < 1:
        raise ValueError(f"M must be an integer >= 1, got {M!r}")
    if isinstance(starts, bool) or not isinstance(starts, int | np.integer) or starts < 1:
        raise ValueError(f"starts must be an integer >= 1, got {starts!r}")
    scale = noise.spread
    if M == 1:
        return ConstantSearch(noise.name, 1, noise.kappa, 0.0, np.zeros(1), starts, 0)
    evaluations = 0

    def negative(rest: np.ndarray) -> tuple[float, np.ndarray]:
        nonlocal evaluations
        evaluations += 1
        value, grad = self_sensitivity(np.r_[0.0, rest], noise)
        return -value, -grad[1:]

    best_value, best_x = -math.inf, np.zeros(M)
    for x0 in _starts(M, starts, np.random.default_rng(seed)):
        res = optimize.minimize(
            negative,
            x0,
            jac=True,
            method="L-BFGS-B",
            bounds=[(-BOX, BOX)] * (M - 1),
            options={"maxiter": 200},
        )
        if -res.fun > best_value:
            best_value, best_x = -res.fun, np.r_[0.0, res.x]
    h = best_x * scale
    return ConstantSearch(noise.name, M, noise.kappa, float(local_constant(h, noise)), h, starts, evaluations)


def swap_worst_start(noise: Noise, gap: float = 1e-4) -> np.ndarray:
    """Lemma C.3's worst case at M = 2: h = (gap·spread, 0); |p_0 − p_1|/|h_0 − h_1| → 2∫f² as gap → 0+.

    2∫f² is 2κ for Unif[0, 1] (share 0.5 of κM² = 4κ), √2κ for Gaussian and eκ/2 for Gumbel noise, the
    exact constants at M = 2 of this module's docstring.
    """
    gap = validate.real(gap, "gap", low=0.0, high=0.5, low_open=True)
    return np.array([gap * noise.spread, 0.0])
