"""Invalid inputs of `lab.core.stats`: counts, levels, bounds and samples."""

from __future__ import annotations

import numpy as np

from checks.strategies.invalid import Case, arrays, choices, combine, counts, reals, values

LEVEL = reals(0.0, 1.0, low_open=True, high_open=True)


def _positive_points(a: np.ndarray, kwargs: dict) -> list:
    return values(lambda kw: np.r_[a[:-1], 0.0], lambda kw: np.r_[a[:-1], -1.0])(a, kwargs) + values(
        a[:2], related=True
    )(a, kwargs)


CASES = {
    "lab.core.stats.clopper_pearson": Case(
        lambda w: {"successes": int(w.rng.integers(0, 11)), "trials": 10, "level": 0.99},
        {
            "successes": counts(0, lambda kw: kw["trials"]),
            "trials": counts(1),
            "level": LEVEL,
        },
    ),
    "lab.core.stats.hoeffding": Case(
        lambda w: {"mean": float(w.rng.random()), "n": 10, "low": 0.0, "high": 1.0, "level": 0.99},
        {
            "mean": reals(0.0, 1.0),
            "n": counts(1),
            "low": combine(reals(), values(1.0, 2.0, related=True)),
            "high": combine(reals(), values(-1.0, 0.0, related=True)),
            "level": LEVEL,
        },
        related=("low", "high"),
    ),
    "lab.core.stats.normal_mean": Case(
        lambda w: {"samples": w.normal(w.n + 1), "level": 0.99},
        {
            "samples": arrays(ndim=False, extra=lambda a, kw: values(a[:1], a[:0])(a, kw)),
            "level": LEVEL,
        },
    ),
    "lab.core.stats.power_law_fit": Case(
        lambda w: {"x": np.arange(1.0, 6.0), "y": w.positive(5), "level": 0.95},
        {
            "x": arrays(ndim=False, extra=_positive_points),
            "y": arrays(ndim=False, extra=_positive_points),
            "level": LEVEL,
        },
        related=("x", "y"),
    ),
    "lab.core.stats.interval_basis": Case(
        lambda w: {"method": "Clopper–Pearson", "level": 0.95, "n": 20, "of": "runs"},
        {"method": choices(), "level": LEVEL, "n": counts(1), "of": values("", 3, None)},
    ),
}

EXEMPT: dict[str, str] = {}
