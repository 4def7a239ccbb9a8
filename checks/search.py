"""Hypothesis as an optimiser: the largest value of each score over seeded, generated inputs.

The one search helper of the checks (B4–B6, B12, D6). Generation is seeded (`hypothesis.seed`),
uses no example database and never shrinks, so the inputs drawn depend only on the seed, the
strategy and the example budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from hypothesis import HealthCheck, Phase, example, given, settings, target
from hypothesis import seed as hypothesis_seed


class _Stopped(Exception):
    """Raised by the searched function when the `stop` score turns positive."""


def hypothesis_maximum(
    score: Callable[[object], dict[str, float]],
    strategy,
    examples: int,
    seed: int,
    pinned: Iterable = (),
    *,
    steer: bool = True,
    stop: str | None = None,
) -> dict[str, tuple[float, object]]:
    """Largest value of each score label over the `pinned` inputs and `examples` Hypothesis inputs.

    Returns {label: (value, input)}, the first input reaching the value. With `steer`, target()
    steers generation towards large values of every label but `stop`; a positive `stop` score ends
    the search at that input (a falsifying search: its input is the first counterexample).
    """
    best: dict[str, tuple[float, object]] = {}

    def search(value):
        for label, found in score(value).items():
            if steer and label != stop:
                target(found, label=label)
            if label not in best or found > best[label][0]:
                best[label] = (found, value)
        if stop is not None and best[stop][0] > 0:
            raise _Stopped

    search = given(strategy)(search)
    for value in pinned:
        search = example(value)(search)
    search = settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=False,
        phases=(Phase.explicit, Phase.generate, Phase.target) if steer else (Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
    )(search)
    try:
        hypothesis_seed(seed)(search)()
    except _Stopped:
        pass
    return best
