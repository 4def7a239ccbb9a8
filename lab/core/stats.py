"""Confidence intervals for Monte-Carlo verdicts (CLAIMS.md: Clopper–Pearson, Hoeffding, normal).

Every function checks its arguments first (`lab.core.validate`): counts are integers (a bool or
a float such as 2.5 is a TypeError), levels lie in (0, 1), data are finite; the error names the
argument and what is allowed.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from lab.core import validate
from lab.core.errors import InputError

DEFAULT_LEVEL = 0.99

METHODS = ("Clopper–Pearson", "Hoeffding", "normal (t)", "chi-square", "t (fitted slope)", "exact")

__all__ = [
    "DEFAULT_LEVEL",
    "METHODS",
    "clopper_pearson",
    "hoeffding",
    "interval_basis",
    "normal_mean",
    "power_law_fit",
]


def _check_level(level: float) -> float:
    return validate.real(level, "level", low=0.0, high=1.0, low_open=True, high_open=True)


def interval_basis(method: str, level: float, n: int, of: str = "samples") -> dict[str, object]:
    """How a record's interval was made, stored as its `extra["interval"]` so pages print it, never type it.

    method one of METHODS; level in (0, 1) (a Bonferroni-corrected level as used); n >= 1 the sample size
    the interval rests on, counted in units `of` ("samples", "runs", "pairs", ...).
    """
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}, got {method!r}")
    _check_level(level)
    n = validate.integer(n, "n", low=1)
    if not isinstance(of, str) or not of:
        raise InputError(f"of must be a non-empty unit name such as 'samples', got {of!r}")
    return {"method": method, "level": float(level), "n": n, "of": of}


def clopper_pearson(successes: int, trials: int, level: float = DEFAULT_LEVEL) -> tuple[float, float]:
    """Exact two-sided binomial interval for a proportion (successes out of trials).

    successes and trials are integers (Python or NumPy) with 0 <= successes <= trials, trials >= 1.
    """
    trials = validate.integer(trials, "trials", low=1)
    successes = validate.integer(successes, "successes", low=0, high=trials)
    _check_level(level)
    tail = (1.0 - level) / 2.0
    lo = 0.0 if successes == 0 else float(stats.beta.ppf(tail, successes, trials - successes + 1))
    hi = 1.0 if successes == trials else float(stats.beta.ppf(1 - tail, successes + 1, trials - successes))
    return lo, hi


def hoeffding(
    mean: float, n: int, low: float, high: float, level: float = DEFAULT_LEVEL
) -> tuple[float, float]:
    """Two-sided Hoeffding interval for the mean of n iid variables bounded in [low, high].

    low < high finite, mean finite in [low, high] (the mean of such variables), n an integer >= 1.
    """
    _check_level(level)
    n = validate.integer(n, "n", low=1)
    validate.real(low, "low")
    if not validate.real(high, "high") > low:
        raise InputError(f"high must be > low = {low}, got {high}")
    validate.real(mean, "mean", low=float(low), high=float(high))
    half = (high - low) * math.sqrt(math.log(2.0 / (1.0 - level)) / (2.0 * n))
    return mean - half, mean + half


def normal_mean(samples: np.ndarray, level: float = DEFAULT_LEVEL) -> tuple[float, float]:
    """Normal-approximation interval for a mean (t quantile), for n >= 2 finite real samples (any shape)."""
    _check_level(level)
    validate.array(samples, "samples", cast=False)
    values = np.asarray(samples, dtype=float).ravel()
    if values.size < 2:
        raise InputError(f"samples must hold at least 2 values, got {values.size}")
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
    for name, value in (("x", x), ("y", y)):
        a = validate.array(value, name, cast=False)
        if a.size and not np.all(a > 0):
            raise InputError(f"{name} must be positive and finite for a power-law fit, got min {a.min()}")
    x, y = (np.asarray(v, dtype=float).ravel() for v in (x, y))
    if x.size < 3:
        raise InputError(f"x must hold at least 3 points, got {x.size}")
    if y.size != x.size:
        raise InputError(f"y must have as many points as x ({x.size}), got {y.size}")
    if np.unique(x).size < 2:
        raise InputError("x must take at least two distinct values")
    fit = stats.linregress(np.log(x), np.log(y))
    half = float(stats.t.ppf(0.5 + level / 2.0, x.size - 2) * fit.stderr)
    return float(fit.slope), (float(fit.slope) - half, float(fit.slope) + half), float(fit.intercept)
