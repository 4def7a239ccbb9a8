"""Hypothesis as an optimiser: the largest value of each score over seeded, generated inputs.

The one search helper of the checks (B4–B6, B12, D6). Generation is seeded (`hypothesis.seed`),
uses no example database and never shrinks, so the inputs drawn depend only on the seed, the
strategy and the example budget. Hypothesis also draws, about one time in twenty, constants it
collects from the source of every local module loaded so far, which would make a search's inputs
depend on unrelated code (adding a command module moved D6's worst case from 0.328 to 1.53); the
search runs with that pool empty (`without_local_constants`), so it does not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from hypothesis import HealthCheck, Phase, example, given, settings, target
from hypothesis import seed as hypothesis_seed
from hypothesis.internal.conjecture import providers


@contextmanager
def without_local_constants() -> Iterator[None]:
    """Hypothesis's pool of constants from the local source, empty (and its cache cleared) meanwhile."""
    if not hasattr(providers, "_get_local_constants"):  # the internal this relies on moved: say so
        raise RuntimeError("hypothesis.internal.conjecture.providers._get_local_constants is gone")
    collect = providers._get_local_constants
    providers._get_local_constants = providers.Constants
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = collect
        providers.CONSTANTS_CACHE.cache.clear()


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
        with without_local_constants():
            hypothesis_seed(seed)(search)()
    except _Stopped:
        pass
    return best
