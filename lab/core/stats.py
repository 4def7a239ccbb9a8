"""Confidence intervals for Monte-Carlo verdicts (CLAIMS.md: Clopper–Pearson, Hoeffding, normal)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

DEFAULT_LEVEL = 0.99


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")


def clopper_pearson(successes: int, trials: int, level: float = DEFAULT_LEVEL) -> tuple[float, float]:
    """Exact two-sided binomial interval for a proportion (successes out of trials)."""
    _check_level(level)
    if trials <= 0:
        raise ValueError(f"trials must be >= 1, got {trials}")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must lie in [0, trials={trials}], got {successes}")
    tail = (1.0 - level) / 2.0
    lo = 0.0 if successes == 0 else float(stats.beta.ppf(tail, successes, trials - successes + 1))
    hi = 1.0 if successes == trials else float(stats.beta.ppf(1 - tail, successes + 1, trials - successes))
    return lo, hi


def hoeffding(
    mean: float, n: int, low: float, high: float, level: float = DEFAULT_LEVEL
) -> tuple[float, float]:
    """Two-sided Hoeffding interval for the mean of n iid variables bounded in [low, high]."""
    _check_level(level)
    if n <= 0:
        raise ValueError(f"n must be >= 1, got {n}")
    if not high > low:
        raise ValueError(f"need high > low, got [{low}, {high}]")
    half = (high - low) * math.sqrt(math.log(2.0 / (1.0 - level)) / (2.0 * n))
    return mean - half, mean + half


def normal_mean(samples: np.ndarray, level: float = DEFAULT_LEVEL) -> tuple[float, float]:
    """Normal-approximation interval for a mean (t quantile), for n >= 2 samples."""
    _check_level(level)
    values = np.asarray(samples, dtype=float).ravel()
    if values.size < 2:
        raise ValueError(f"need at least 2 samples, got {values.size}")
    if not np.all(np.isfinite(values)):
        raise ValueError("samples must be finite")
    mean = float(values.mean())
    half = float(
        stats.t.ppf(0.5 + level / 2.0, values.size - 1) * values.std(ddof=1) / math.sqrt(values.size)
    )
    return mean - half, mean + half


def power_law_fit(
    x: np.ndarray, y: np.ndarray, level: float = 0.95
) -> tuple[float, tuple[float, float], float]:
    """Least squares log y = a·log x + b: the exponent a, its Student-t interval at `level`, and b.

    How the lab compares a measured rate with a stated O(x^a): points must be positive and finite,
    at least 3, with at least two distinct x."""
    _check_level(level)
    x, y = (np.asarray(v, dtype=float).ravel() for v in (x, y))
    if x.size != y.size or x.size < 3:
        raise ValueError(f"need at least 3 (x, y) pairs of equal length, got {x.size} and {y.size}")
    if not (np.all(np.isfinite(x) & (x > 0)) and np.all(np.isfinite(y) & (y > 0))):
        raise ValueError("x and y must be positive and finite for a power-law fit")
    if np.unique(x).size < 2:
        raise ValueError("x must take at least two distinct values")
    fit = stats.linregress(np.log(x), np.log(y))
    half = float(stats.t.ppf(0.5 + level / 2.0, x.size - 2) * fit.stderr)
    return float(fit.slope), (float(fit.slope) - half, float(fit.slope) + half), float(fit.intercept)
