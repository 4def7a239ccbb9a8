"""Routing probabilities of noisy top-1 routing, p_m(h) = P(argmax_j {h_j + r_j} = m) (Lemma 5.1 / C.1).

Public API: the noise families `Uniform(low, high)`, `Gaussian(scale)` and `Gumbel(scale)` (each
with its density bound `kappa` of Lemma C.1 / Remark C.2), `routing_probabilities(h, noise)` and
`routing_jacobian(h, noise)` computed exactly or to quadrature precision (never by Monte Carlo),
and `routing_frequencies(h, noise, draws, seed)`, a Monte-Carlo estimate with simultaneous
Clopper–Pearson intervals from the perturbed-argmax kernel, to cross-check the exact values.

`h` is a vector (M,) or a batch (n, M) of gating outputs, M ≥ 1. The exact methods are:
Unif[a, b] piecewise-polynomial integration (`lab.chen2022.routing_exact.uniform_routing`), N(0, s²)
error-controlled log-space quadrature (`lab.chen2022.routing_exact.gaussian_routing`), Gumbel(0, β) the
Gumbel-max identity p = softmax(h/β) with Jacobian (diag p − p pᵀ)/β.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np

from lab.chen2022.routing_exact import _gaussian_routing, _uniform_routing
from lab.core import validate
from lab.core.stats import clopper_pearson
from lab.kernels import routed as kernels

__all__ = [
    "Gaussian",
    "Gumbel",
    "Noise",
    "RoutingFrequencies",
    "Uniform",
    "routing_frequencies",
    "routing_jacobian",
    "routing_probabilities",
]


def _positive_finite(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value}")
    return value


class Noise:
    """An iid routing-noise family r_j: density bound κ, kernel noise code, exact p and ∂p/∂h."""

    name: str

    @property
    def kappa(self) -> float:
        raise NotImplementedError

    @property
    def spread(self) -> float:
        """The noise's length scale: the width of uniform noise, the scale of Gaussian/Gumbel noise."""
        raise NotImplementedError

    def kernel_args(self) -> tuple[int, float, float]:
        """(noise code, a, b) for `lab.kernels.routed.perturbed_argmax` / `routing_counts`."""
        raise NotImplementedError

    def exact(self, h: np.ndarray, jacobian: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """p (n, M) and, if asked, ∂p/∂h (n, M, M) for a validated batch h (n, M)."""
        raise NotImplementedError


@dataclass(frozen=True)
class Uniform(Noise):
    """r ~ Unif[low, high]: density bound κ = 1/(high − low) (Remark C.2); the paper uses Unif[0, 1]."""

    low: float = 0.0
    high: float = 1.0
    name = "uniform"

    def __post_init__(self) -> None:
        for field in ("low", "high"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, Real):
                raise TypeError(f"{field} must be a real number, got {type(value).__name__}")
            if not math.isfinite(value):
                raise ValueError(f"{field} must be finite, got {value}")
        if not (self.high > self.low and math.isfinite(self.high - self.low)):
            raise ValueError(f"high must be > low with a finite width, got low={self.low}, high={self.high}")

    @property
    def width(self) -> float:
        return float(self.high) - float(self.low)

    @property
    def spread(self) -> float:
        return self.width

    @property
    def kappa(self) -> float:
        return 1.0 / self.width

    def kernel_args(self) -> tuple[int, float, float]:
        return kernels.NOISE_CODES["uniform"], float(self.low), float(self.high)

    def exact(self, h, jacobian):
        return _uniform_routing(h, self.width, jacobian)


@dataclass(frozen=True)
class Gaussian(Noise):
    """r ~ N(0, scale²): density bound κ = 1/(scale √(2π)) (Remark C.2)."""

    scale: float = 1.0
    name = "gaussian"

    def __post_init__(self) -> None:
        _positive_finite("scale", self.scale)

    @property
    def kappa(self) -> float:
        return 1.0 / (self.scale * math.sqrt(2.0 * math.pi))

    @property
    def spread(self) -> float:
        return float(self.scale)

    def kernel_args(self) -> tuple[int, float, float]:
        return kernels.NOISE_CODES["gaussian"], float(self.scale), 0.0

    def exact(self, h, jacobian):
        p, D = _gaussian_routing(h / self.scale, jacobian)
        return p, None if D is None else D / self.scale


@dataclass(frozen=True)
class Gumbel(Noise):
    """r ~ Gumbel(0, scale): density bound κ = 1/(e·scale); p = softmax(h/scale) (Gumbel-max identity)."""

    scale: float = 1.0
    name = "gumbel"

    def __post_init__(self) -> None:
        _positive_finite("scale", self.scale)

    @property
    def kappa(self) -> float:
        return 1.0 / (math.e * self.scale)

    @property
    def spread(self) -> float:
        return float(self.scale)

    def kernel_args(self) -> tuple[int, float, float]:
        return kernels.NOISE_CODES["gumbel"], float(self.scale), 0.0

    def exact(self, h, jacobian):
        with np.errstate(over="ignore"):  # (h − max h)/β may be −inf: exp gives 0, as it should
            z = (h - h.max(axis=1, keepdims=True)) / self.scale
        e = np.exp(z)
        p = e / e.sum(axis=1, keepdims=True)
        if not jacobian:
            return p, None
        return p, (p[:, :, None] * np.eye(h.shape[1]) - p[:, :, None] * p[:, None, :]) / self.scale


def _gates(h: object) -> tuple[np.ndarray, bool]:
    """Validate h (M,) or (n, M): finite reals with n, M ≥ 1; returns the batch and whether h was 1-D."""
    arr = np.asarray(h)
    if arr.dtype == bool or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise TypeError(f"h must be an array of real numbers, got dtype {arr.dtype}")
    if arr.ndim not in (1, 2) or arr.shape[-1] < 1 or (arr.ndim == 2 and arr.shape[0] < 1):
        raise ValueError(f"h must have shape (M,) or (n, M) with n, M >= 1, got shape {arr.shape}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError("h must be finite (no NaN or infinity)")
    return (arr[None, :] if arr.ndim == 1 else arr), arr.ndim == 1


def _noise(noise: object) -> Noise:
    if not isinstance(noise, Noise):
        raise TypeError(f"noise must be Uniform, Gaussian or Gumbel, got {type(noise).__name__}")
    return noise


def routing_probabilities(h, noise: Noise) -> np.ndarray:
    """p_m(h) = P(argmax_j {h_j + r_j} = m) (Lemma 5.1), shape of h; each row sums to 1."""
    batch, vector = _gates(h)
    p, _ = _noise(noise).exact(batch, jacobian=False)
    return p[0] if vector else p


def routing_jacobian(h, noise: Noise) -> np.ndarray:
    """∂p_m/∂h_k, shape (M, M) or (n, M, M): off-diagonal ≤ 0, rows sum to 0 (shift invariance)."""
    batch, vector = _gates(h)
    _, D = _noise(noise).exact(batch, jacobian=True)
    return D[0] if vector else D


@dataclass(frozen=True)
class RoutingFrequencies:
    """Monte-Carlo routing frequencies with simultaneous Clopper–Pearson intervals (Bonferroni over M)."""

    counts: np.ndarray
    draws: int
    level: float
    low: np.ndarray
    high: np.ndarray

    @property
    def frequencies(self) -> np.ndarray:
        return self.counts / self.draws

    def covers(self, p: np.ndarray) -> np.ndarray:
        """Which exact probabilities lie inside their intervals."""
        return (self.low <= p) & (p <= self.high)


def routing_frequencies(h, noise: Noise, draws: int, seed: int, level: float = 0.99) -> RoutingFrequencies:
    """Win counts of argmax_j {h_j + r_j} over `draws` kernel draws, with intervals jointly at `level`.

    h (M,) finite reals, draws an integer >= 1, seed an integer in [0, 2**64), level in (0, 1).
    """
    batch, vector = _gates(h)
    if not vector:
        raise ValueError(f"h must be one gate vector of shape (M,) here, got shape {batch.shape}")
    draws = validate.integer(draws, "draws", low=1)
    seed = validate.seed(seed)
    level = validate.real(level, "level", low=0.0, high=1.0, low_open=True, high_open=True)
    code, a, b = _noise(noise).kernel_args()
    counts = kernels.routing_counts(batch[0], draws, seed, code, a, b)
    M = counts.size
    each = 1.0 - (1.0 - level) / M
    bounds = np.array([clopper_pearson(int(k), int(draws), each) for k in counts])
    return RoutingFrequencies(counts, int(draws), float(level), bounds[:, 0], bounds[:, 1])
