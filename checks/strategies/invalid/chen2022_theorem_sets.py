"""Invalid inputs of `lab.chen2022.theorem_sets`: Theorem 4.2's sets M_k searched and judged."""

from __future__ import annotations

import numpy as np

from checks.strategies.invalid import Case, arrays, combine, flags, reals, values

K = 2


def _tables(w) -> dict:
    """A small valid run: M = w.M + 1 experts, K = 2 clusters, errors near the threshold."""
    M = w.M + 1
    return {
        "errors": 0.05 * w.rng.random((M, K)),
        "dispatch": w.rng.integers(1, 20, (K, M)),
        "max_error": 0.02,
        "routed_share": 0.98,
        "cover": bool(w.rng.integers(2)),
    }


TABLES = {
    "errors": arrays(axes=(0, 1), empty=(0, 1), extra=lambda a, kw: values(a + 1.5, a - 1.0)(a, kw)),
    "dispatch": arrays(
        axes=(0, 1), extra=lambda a, kw: values(-a, np.zeros_like(a), np.r_[a[:1] * 0, a[1:]])(a, kw)
    ),
    "max_error": reals(0.0, 1.0, high_open=True),
    "routed_share": reals(0.0, 1.0, low_open=True),
    "cover": flags(),
}
SHAPES = ("errors", "dispatch")  # a shorter or longer axis of one may be blamed on the other


def _partition(w) -> dict:
    kwargs = _tables(w)
    M = kwargs["errors"].shape[0]
    return {"sets": [[m for m in range(M) if m % K == k] for k in range(K)], **kwargs}


def _broken_sets(value, kwargs) -> list:
    M = kwargs["errors"].shape[0]
    return values("01", None, 3, value[:1], [*value, [0]], [[0, M], *value[1:]], [[-1], *value[1:]])(
        value, kwargs
    ) + values([[0.5], *value[1:]], [[True], *value[1:]], [[[0]], *value[1:]], label="dtype")(value, kwargs)


CASES = {
    "lab.chen2022.theorem_sets.theorem_sets": Case(_tables, TABLES, related=SHAPES),
    "lab.chen2022.theorem_sets.judge_sets": Case(
        _partition, {"sets": combine(_broken_sets), **TABLES}, related=SHAPES
    ),
}

EXEMPT = {"lab.chen2022.theorem_sets.TheoremSets": "the result of `theorem_sets` and `judge_sets`"}

__all__ = ["CASES", "EXEMPT"]
