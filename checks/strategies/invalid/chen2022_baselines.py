"""Invalid inputs of `lab.chen2022.baselines`: the single CNN's config, training and accuracy."""

from __future__ import annotations

from checks.strategies.invalid import Case, choices, counts, flags, instances, reals, values
from checks.strategies.invalid.chen2022 import data_world
from lab.chen2022.baselines import single_config, train_single
from lab.chen2022.training import TrainConfig, prepare

TINY = {"J": 2, "steps": 2, "record_every": 1}  # the expert's
TINY_EXPERT = TrainConfig(M=1, **TINY)


def _single(w) -> dict:
    _, signals, data = data_world(w)
    return {
        "data": data,
        "cfg": single_config(**TINY),
        "seed": 0,
        "progress": False,
        "batch": None,
        "signals": signals,
    }


def _trained(w) -> dict:
    args = _single(w)
    cfg = args["cfg"]
    result = train_single(args["data"], cfg, 0)
    return {"result": result, "test": prepare(args["data"], cfg.expert, args["signals"]), "cfg": cfg}


CASES = {
    "lab.chen2022.baselines.SingleConfig": Case(
        lambda w: {
            "expert": TINY_EXPERT,
            "lr": 0.01,
            "weight_decay": 5e-4,
            "betas": (0.9, 0.999),
            "adam_eps": 1e-8,
            "stopping": "none",
            "stop_start": 500,
        },
        {
            "expert": instances(TrainConfig(M=2, **TINY)),
            "lr": reals(0.0, low_open=True),
            "adam_eps": reals(0.0, low_open=True),
            "weight_decay": reals(0.0),
            "betas": values((0.9,), (0.9, 1.0), (-0.1, 0.9), "ab", None, (0.9, "x"), (0.9, float("nan"))),
            "stopping": choices(),
            "stop_start": counts(0),
        },
    ),
    "lab.chen2022.baselines.single_config": Case(
        lambda w: {"variant": "paper"}, {"variant": choices("Paper")}
    ),
    "lab.chen2022.baselines.train_single": Case(
        _single,
        {
            "data": instances(),
            "cfg": instances(TINY_EXPERT),
            "seed": counts(0),
            "progress": flags(),
            "batch": values("x", 1.5, object()),
            "signals": values("x", 1.5),
        },
    ),
    "lab.chen2022.baselines.single_accuracy": Case(
        _trained, {"result": instances(), "test": instances(), "cfg": instances(TINY_EXPERT)}
    ),
}

__all__ = ["CASES"]
