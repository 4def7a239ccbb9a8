"""Lemma C.1's proof under its own coupling: the argmax-change probability and the union bound over pairs.

The proof (Chen et al. 2022, App. C) draws one noise vector r for both gate vectors h and ĥ, bounds
each coordinate by the probability that the argmax changes,

    |p_i − p̂_i| ≤ P(argmax_m {ĥ_m + r_m} ≠ argmax_m {h_m + r_m}) =: q(h, ĥ),

and bounds q by a union bound over the pairs (m1, m2), C(m1, m2) = (ĥ_m2 − ĥ_m1 + h_m2 − h_m1)/2,

    q ≤ Σ_{m1<m2} P(|r_m1 − r_m2 − C(m1, m2)| ≤ ‖ĥ − h‖∞) =: U(h, ĥ) ≤ κM²‖ĥ − h‖∞,

each of the M(M − 1)/2 terms being at most 2κ‖ĥ − h‖∞. This module computes ‖p − p̂‖∞, q and U
exactly, so the three can be compared on the same pairs (the lab proves ‖p − p̂‖∞ ≤ 2κ‖ĥ − h‖∞ for
every M: `lab.chen2022.routing_tightness`).

**q as routing probabilities.** With continuous noise, m wins under both h and ĥ iff
r_j < r_m + min(h_m − h_j, ĥ_m − ĥ_j) for every j ≠ m, which is the event "m wins" for the gates
g⁽ᵐ⁾_j = max(h_j − h_m, ĥ_j − ĥ_m) (g⁽ᵐ⁾_m = 0). So q = Σ_m [p_m(h) − p_m(g⁽ᵐ⁾)], exact with the
lab's exact routing probabilities. At M = 2 the argmax can change in one direction only, so
q = ‖p − p̂‖∞ ≤ 2κ‖ĥ − h‖∞ there.

**U in closed form.** P(|D − C| ≤ ε) = G(C + ε) − G(C − ε), G the law of D = r_1 − r_2:
triangular on [−w, w] for Unif of width w, N(0, 2s²) for N(0, s²), Logistic(0, β) for Gumbel(0, β).

**The tied pair.** At h = 0 (the router at Θ = 0, Sec. 5) and ĥ = δ·s, s lifting a experts by +δ
and lowering b = M − a by −δ, the argmax changes iff the winner r_W is lowered and a lifted expert
lies within 2δ below it: q = b ∫ f F^{b−1} [F^a − F(· − 2δ)^a] dt, so as δ → 0

    q / (κδ) → 2ab ∫ f² F^{M−2} dt / κ      (`tie_change_rate`),

M(M − 1)∫ f² F^{M−2} being the density at 0 of the gap between the two largest noises. For
Unif[0, w] this is 2ab/(M − 1), M²/(2(M − 1)) ≈ M/2 at a = b = M/2: q grows like M. For
Gumbel(0, β) it is 2e·ab/M² ≤ e/2 for every M (e/2 at a = b = M/2), because ∫ f² F^{M−2} dt =
1/(βM²) exactly and κ = 1/(eβ). (The top-two gap of M iid Gumbels is not Exp(1/β) for finite M:
P(gap > g) = M/(1 + (M − 1)e^{g/β}), whose density at 0 is (M − 1)/(Mβ); Exp(1/β) only as M → ∞.)
For N(0, s²) it grows slowly (the top gap shrinks like s/√(2 log M)). U grows like
M(M − 1)∫ f²/κ for all three: the union bound, not the coupling event, carries the M².
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import integrate, special, stats

from lab.chen2022.routing import Gaussian, Gumbel, Noise, Uniform, routing_probabilities
from lab.core import validate
from lab.core.errors import InputError

__all__ = [
    "CouplingTerms",
    "argmax_change_probability",
    "coupling_terms",
    "half_lifted_pair",
    "tie_change_rate",
    "union_bound",
]

FAMILIES = (Uniform, Gaussian, Gumbel)


def _noise(noise: object) -> Noise:
    return validate.instance(noise, "noise", FAMILIES)


def _pair(h: object, h_hat: object) -> tuple[np.ndarray, np.ndarray]:
    """Two gate vectors (M,) of one length, real and finite, M >= 1."""
    h = validate.array(h, "h", ndim=1, labels="(M,)", nonempty=(0,))
    h_hat = validate.array(h_hat, "h_hat", ndim=1, labels="(M,)", nonempty=(0,))
    if h_hat.shape != h.shape:
        raise InputError(f"h_hat must have h's shape {h.shape}, got shape {h_hat.shape}")
    return h.astype(np.float64), h_hat.astype(np.float64)


def _argmax_change(h: np.ndarray, h_hat: np.ndarray, noise: Noise) -> float:
    both = np.maximum(h[None, :] - h[:, None], h_hat[None, :] - h_hat[:, None])  # row m: g⁽ᵐ⁾
    stays = np.diag(routing_probabilities(both, noise))
    return float(np.sum(routing_probabilities(h, noise) - stays))


def argmax_change_probability(h, h_hat, noise: Noise) -> float:
    """q = P(argmax_m {h_m + r_m} ≠ argmax_m {ĥ_m + r_m}) with one r for both (proof of Lemma C.1), exact.

    h, h_hat (M,) finite reals of one length; noise Uniform, Gaussian or Gumbel.
    """
    h, h_hat = _pair(h, h_hat)
    return _argmax_change(h, h_hat, _noise(noise))


def _difference_cdf(x: np.ndarray, noise: Noise) -> np.ndarray:
    """G(x) = P(r_1 − r_2 ≤ x) for iid r_1, r_2 from `noise`."""
    if isinstance(noise, Uniform):
        u = np.clip(x / noise.width, -1.0, 1.0)
        return np.where(u <= 0.0, (1.0 + u) ** 2 / 2.0, 1.0 - (1.0 - u) ** 2 / 2.0)
    if isinstance(noise, Gaussian):
        return special.ndtr(x / (noise.scale * math.sqrt(2.0)))
    return special.expit(x / noise.scale)


def _union_bound(h: np.ndarray, h_hat: np.ndarray, noise: Noise) -> float:
    step = float(np.abs(h_hat - h).max())
    m1, m2 = np.triu_indices(h.size, k=1)
    C = (h_hat[m2] - h_hat[m1] + h[m2] - h[m1]) / 2.0
    return float(np.sum(_difference_cdf(C + step, noise) - _difference_cdf(C - step, noise)))


def union_bound(h, h_hat, noise: Noise) -> float:
    """U = Σ_{m1<m2} P(|r_m1 − r_m2 − C(m1, m2)| ≤ ‖ĥ − h‖∞): the union bound of Lemma C.1's proof, exact.

    h, h_hat (M,) finite reals of one length; noise Uniform, Gaussian or Gumbel.
    """
    h, h_hat = _pair(h, h_hat)
    return _union_bound(h, h_hat, _noise(noise))


@dataclass(frozen=True)
class CouplingTerms:
    """The proof's chain on one pair, each term per κ‖ĥ − h‖∞: routing ≤ change ≤ union, and paper = M²."""

    noise: str
    M: int
    kappa: float
    step: float
    routing: float  # ‖p − p̂‖∞ / (κ‖ĥ − h‖∞): at most 2 (lab's theorem)
    change: float  # q / (κ‖ĥ − h‖∞)
    union: float  # U / (κ‖ĥ − h‖∞)
    paper: int  # M²: Lemma C.1's constant per κ


def coupling_terms(h, h_hat, noise: Noise) -> CouplingTerms:
    """‖p − p̂‖∞, q and U of Lemma C.1's proof per κ‖ĥ − h‖∞, exact, beside the paper's M².

    h, h_hat (M,) finite reals of one length with h_hat ≠ h; noise Uniform, Gaussian or Gumbel. The
    ratios carry the exact values' round-off (~1e-14) divided by κ‖ĥ − h‖∞.
    """
    h, h_hat = _pair(h, h_hat)
    noise = _noise(noise)
    step = float(np.abs(h_hat - h).max())
    if step == 0.0:
        raise InputError("h_hat must differ from h (the ratios are per ‖ĥ − h‖∞)")
    per = noise.kappa * step
    p = routing_probabilities(np.stack([h, h_hat]), noise)
    return CouplingTerms(
        noise=noise.name,
        M=h.size,
        kappa=noise.kappa,
        step=step,
        routing=float(np.abs(p[0] - p[1]).max()) / per,
        change=_argmax_change(h, h_hat, noise) / per,
        union=_union_bound(h, h_hat, noise) / per,
        paper=h.size**2,
    )


def half_lifted_pair(M: int, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """h = 0 (Θ = 0, Sec. 5) and ĥ = δ·s, s = +1 on the first ⌊M/2⌋ experts and −1 on the others.

    M an integer >= 2, delta a finite number > 0.
    """
    M = validate.integer(M, "M", low=2)
    delta = validate.real(delta, "delta", low=0.0, low_open=True)
    s = np.where(np.arange(M) < M // 2, 1.0, -1.0)
    return np.zeros(M), delta * s


def _tie_density(noise: Noise, M: int) -> float:
    """∫ f² F^{M−2} dt / κ: the density at 0 of the top-two gap of M iid noises, over M(M − 1)κ."""
    if isinstance(noise, Uniform):
        return 1.0 / (M - 1)
    if isinstance(noise, Gumbel):
        return math.e / M**2
    # standardised N(0, 1): κ = φ(0); the integrand is below 1e-30 outside [−12, 12]
    value, _ = integrate.quad(
        lambda t: stats.norm.pdf(t) ** 2 * stats.norm.cdf(t) ** (M - 2) / stats.norm.pdf(0.0),
        -12.0,
        12.0,
        epsabs=1e-15,
        epsrel=1e-12,
        limit=200,
    )
    return value


def tie_change_rate(noise: Noise, M: int, lifted: int) -> float:
    """lim_{δ→0} q/(κδ) at h = 0, ĥ = δ·s with `lifted` experts at +δ: 2ab ∫ f² F^{M−2} dt / κ.

    noise Uniform, Gaussian or Gumbel; M an integer >= 2; lifted an integer in [0, M].
    """
    noise = _noise(noise)
    M = validate.integer(M, "M", low=2)
    lifted = validate.integer(lifted, "lifted", low=0, high=M)
    return 2.0 * lifted * (M - lifted) * _tie_density(noise, M)
