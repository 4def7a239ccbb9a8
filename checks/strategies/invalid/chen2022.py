"""Invalid inputs of `lab.chen2022`: the MoE layer, the data, the metrics, routing and load balancing.

The patch functions, the orbit argument and the single-model baselines are in `chen2022_patch`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from checks.strategies.invalid import (
    Broken,
    Case,
    World,
    arrays,
    choices,
    combine,
    counts,
    elementwise,
    flags,
    generators,
    instances,
    labels,
    reals,
    values,
)
from lab.chen2022.data import DataConfig, Signals, UniformRange, make_signals, sample
from lab.chen2022.model import MoEParams

CONFIG = DataConfig(K=2, P=4, d=6)
SCALE = reals(0.0, low_open=True)
LEVEL = reals(0.0, 1.0, low_open=True, high_open=True)


def data_world(w: World):
    """(config, signals, data) of Def. 3.1 with K = 2, P = 4, d = 6 and n = 4..7 samples."""
    signals = make_signals(CONFIG, w.rng)
    return CONFIG, signals, sample(CONFIG, signals, w.n + 2, w.rng)


def broken_signals(value, kwargs) -> list:
    """Signals of the wrong type, or with a NaN (arrays can change after construction)."""
    nan = Signals(value.V.copy(), value.C.copy())
    nan.V[0, 0] = np.nan
    return instances(value.V)(value, kwargs) + values(nan, label="nan")(value, kwargs)


def mismatched_signals(value, kwargs) -> list:
    """`broken_signals`, and signals of another d than the config's or the data's (related)."""
    other = make_signals(dataclasses.replace(CONFIG, d=CONFIG.d + 1), np.random.default_rng(0))
    return broken_signals(value, kwargs) + values(other, related=True, label="other d")(value, kwargs)


def broken_config(value, kwargs) -> list:
    return instances(dataclasses.asdict(value))(value, kwargs) + values(
        dataclasses.replace(value, d=value.d + 1), related=True
    )(value, kwargs)


def _zero_d(a: np.ndarray, kwargs: dict) -> list:
    return [Broken("0-d", a.flat[0], True)]


def _params(w: World, d: int | None = None) -> MoEParams:
    d = w.d if d is None else d
    return MoEParams(Theta=w.normal(d, w.M), W=w.normal(w.M, w.J, d) * 0.5)


def broken_params(value, kwargs) -> list:
    nan = MoEParams(value.Theta.copy(), value.W.copy())
    nan.W[0, 0, 0] = np.nan
    inf = MoEParams(value.Theta.copy() + np.inf, value.W)
    d = value.W.shape[2] + 1
    other = MoEParams(np.zeros((d, value.M)), np.zeros((value.M, value.J, d)))
    return (
        instances((value.Theta, value.W))(value, kwargs)
        + values(nan, inf)(value, kwargs)
        + values(other, related=True)(value, kwargs)
    )


def _loss_args(w: World) -> dict:
    return {
        "x": w.normal(w.n, w.P, w.d),
        "y": w.rng.choice([-1.0, 1.0], w.n),
        "params": _params(w),
        "routes": w.index(w.M, w.n),
        "act": "cubic",
    }


M_OF = {"routes": lambda kw: kw["params"].M if "params" in kw else kw["W"].shape[0]}
X3 = arrays(axes=(2,), complex_ok=True)
W3 = arrays(axes=(2,), complex_ok=True)
ACT = choices("relu ")
LOSS_BREAKS = {
    "x": arrays(axes=(0, 2), empty=(0, 1), complex_ok=True),
    "y": arrays(axes=(0,), complex_ok=True),
    "params": broken_params,
    "routes": labels(M_OF["routes"]),
    "act": ACT,
}
PARAMS_BLAME = {"params": ("params", "W", "Theta")}

CASES = {
    # ------------------------------------------------------------------ model
    "lab.chen2022.model.MoEParams": Case(
        lambda w: {"Theta": w.normal(w.d, w.M), "W": w.normal(w.M, w.J, w.d)},
        {
            "Theta": combine(
                arrays(nan=False, inf=False, complex_ok=True, axes=(0, 1)),
                values(lambda kw: kw["Theta"].tolist()),
            ),
            "W": combine(arrays(nan=False, inf=False, complex_ok=True), values(lambda kw: kw["W"].tolist())),
        },
    ),
    "lab.chen2022.model.init_params": Case(
        lambda w: {"M": w.M, "J": w.J, "d": w.d, "sigma0": 0.01, "rng": w.rng},
        {"M": counts(1), "J": counts(1), "d": counts(1), "sigma0": SCALE, "rng": generators()},
    ),
    "lab.chen2022.model.router_logits": Case(
        lambda w: {"x": w.normal(w.n, w.P, w.d), "Theta": w.normal(w.d, w.M)},
        {"x": X3, "Theta": arrays(axes=(0,), empty=(1,), complex_ok=True)},
    ),
    "lab.chen2022.model.gate_values": Case(
        lambda w: {"h": w.normal(w.n, w.M)},
        {"h": arrays(ndim=False, fewer=False, empty=(1,), complex_ok=True, extra=_zero_d)},
    ),
    "lab.chen2022.model.expert_outputs": Case(
        lambda w: {"x": w.normal(w.n, w.P, w.d), "W": w.normal(w.M, w.J, w.d), "act": "relu"},
        {"x": X3, "W": W3, "act": ACT},
    ),
    "lab.chen2022.model.routed_expert_outputs": Case(
        lambda w: {
            "x": w.normal(w.n, w.P, w.d),
            "W": w.normal(w.M, w.J, w.d),
            "routes": w.index(w.M, w.n),
            "act": "cubic",
        },
        {"x": arrays(axes=(0, 2), complex_ok=True), "W": W3, "routes": labels(M_OF["routes"]), "act": ACT},
    ),
    "lab.chen2022.model.noisy_routes": Case(
        lambda w: {"h": w.normal(w.n, w.M), "r": w.rng.random((w.n, w.M))},
        {"h": arrays(ndim=False, fewer=True, empty=(1,)), "r": arrays(axes=(0, 1))},
    ),
    "lab.chen2022.model.logistic_loss": Case(lambda w: {"z": w.normal(w.n)}, {"z": elementwise()}),
    "lab.chen2022.model.logistic_loss_derivative": Case(lambda w: {"z": w.normal(w.n)}, {"z": elementwise()}),
    "lab.chen2022.model.perturbed_loss": Case(_loss_args, LOSS_BREAKS, blame=PARAMS_BLAME),
    "lab.chen2022.model.perturbed_loss_gradients": Case(
        _loss_args,
        {**LOSS_BREAKS, "x": arrays(axes=(0, 2), empty=(0, 1)), "y": arrays(axes=(0,))},
        blame=PARAMS_BLAME,
        backends=True,
    ),
    "lab.chen2022.model.expert_gradient": Case(
        lambda w: {
            "x": w.normal(w.n, w.P, w.d),
            "W": w.normal(w.M, w.J, w.d),
            "routes": w.index(w.M, w.n),
            "coef": w.normal(w.n),
            "act": "tanh",
        },
        {
            "x": arrays(axes=(0, 2), complex_ok=True),
            "W": W3,
            "routes": labels(M_OF["routes"]),
            "coef": arrays(axes=(0,), complex_ok=True, nan=False, inf=False),  # NaN propagates: documented
            "act": ACT,
        },
    ),
    # ------------------------------------------------------------------ data
    "lab.chen2022.data.UniformRange": Case(
        lambda w: {"low": 0.5, "high": 2.0},
        {
            "low": combine(reals(0.0, low_open=True), values(2.0, 3.0, related=True)),
            "high": combine(reals(), values(0.5, 0.1, related=True)),
        },
    ),
    "lab.chen2022.data.DataConfig": Case(
        lambda w: {
            "K": 2,
            "P": 4,
            "d": 6,
            "alpha": UniformRange(0.5, 2.0),
            "beta": UniformRange(1.0, 2.0),
            "gamma": UniformRange(0.5, 3.0),
            "sigma_p": 1.0,
            "signals": "one-hot",
            "shuffle": True,
        },
        {
            "K": counts(2),
            "P": counts(3),
            "d": combine(counts(), values(3, related=True)),
            "alpha": instances((0.5, 2.0)),
            "beta": instances((1.0, 2.0)),
            "gamma": instances((0.5, 3.0)),
            "sigma_p": SCALE,
            "signals": choices("random"),
            "shuffle": flags(),
        },
        related=("K", "d"),
    ),
    "lab.chen2022.data.setting": Case(
        lambda w: {"number": int(w.rng.integers(1, 5))}, {"number": values(0, 5, 1.0, True, "1", None)}
    ),
    "lab.chen2022.data.Signals": Case(
        lambda w: {"V": w.normal(2, w.d), "C": w.normal(2, w.d)},
        {"V": arrays(empty=(0, 1), axes=(0, 1)), "C": arrays(axes=(0, 1))},
    ),
    "lab.chen2022.data.make_signals": Case(
        lambda w: {"config": CONFIG, "rng": w.rng}, {"config": instances(), "rng": generators()}
    ),
    "lab.chen2022.data.sample": Case(
        lambda w: {"config": CONFIG, "signals": make_signals(CONFIG, w.rng), "n": w.n, "rng": w.rng},
        {"config": broken_config, "signals": mismatched_signals, "n": counts(1), "rng": generators()},
        related=("config", "signals"),
    ),
    "lab.chen2022.data.structure": Case(
        lambda w: (lambda _, signals, data: {"data": data, "signals": signals})(*data_world(w)),
        {"data": instances(), "signals": mismatched_signals},
    ),
}

EXEMPT = {
    "lab.chen2022.data.Dataset": "the samples `sample` returns (a result); functions that take one check it",
    "lab.chen2022.data.StructuredBatch": "the structure `structure` returns (a result)",
    "lab.chen2022.routing.Noise": "the abstract base of Uniform, Gaussian and Gumbel (not instantiated)",
    "lab.chen2022.routing.RoutingFrequencies": "the result of `routing_frequencies`",
}

__all__ = [
    "CASES",
    "CONFIG",
    "EXEMPT",
    "broken_config",
    "broken_params",
    "broken_signals",
    "data_world",
    "mismatched_signals",
]
