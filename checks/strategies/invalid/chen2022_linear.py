"""Invalid inputs of `lab.chen2022.linear_optimum`: the linear CNN's exact accuracy, search, sampled check."""

from __future__ import annotations

import dataclasses

from checks.strategies.invalid import (
    SEEDS,
    Case,
    arrays,
    choices,
    combine,
    counts,
    flags,
    generators,
    instances,
    reals,
    values,
)
from checks.strategies.invalid.chen2022 import CONFIG

COORDS = arrays(axes=(0,))  # (2K,): a shorter or longer one disagrees with the config (related)
CONFIG_BREAKS = combine(
    instances(dataclasses.asdict(CONFIG)), values(dataclasses.replace(CONFIG, K=3), related=True)
)
NODES = counts(1, 256)


def _coords(w) -> dict:
    return {"coords": w.normal(2 * CONFIG.K), "config": CONFIG}


CASES = {
    "lab.chen2022.linear_optimum.noise_scale": Case(
        lambda w: {**_coords(w), "noise": "isotropic"},
        {"coords": COORDS, "config": CONFIG_BREAKS, "noise": choices()},
        related=("coords", "config"),
    ),
    "lab.chen2022.linear_optimum.linear_accuracy": Case(
        lambda w: {**_coords(w), "bias": 0.5, "nodes": 3, "noise": "projected"},
        {"coords": COORDS, "config": CONFIG_BREAKS, "bias": reals(), "nodes": NODES, "noise": choices()},
        related=("coords", "config"),
    ),
    "lab.chen2022.linear_optimum.search_optimum": Case(
        lambda w: {
            "config": CONFIG,
            "with_bias": True,
            "seed": 0,
            "starts": 1,
            "popsize": 2,
            "maxiter": 1,
            "nodes": 2,
            "start": w.normal(2 * CONFIG.K),
        },
        {
            "config": CONFIG_BREAKS,
            "with_bias": flags(),
            "seed": SEEDS,
            "starts": counts(0),
            "popsize": counts(1),
            "maxiter": counts(1),
            "nodes": NODES,
            "start": COORDS,
        },
        related=("config", "start"),
    ),
    "lab.chen2022.linear_optimum.sampled_correct": Case(
        lambda w: {**_coords(w), "bias": -0.5, "n": w.n, "rng": w.rng, "chunk": 2},
        {
            "coords": COORDS,
            "config": CONFIG_BREAKS,
            "bias": reals(),
            "n": counts(1),
            "rng": generators(),
            "chunk": counts(1),
        },
        related=("coords", "config"),
    ),
}

EXEMPT = {"lab.chen2022.linear_optimum.LinearOptimum": "the result of `search_optimum`"}

__all__ = ["CASES", "EXEMPT"]
