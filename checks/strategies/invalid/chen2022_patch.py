"""Invalid inputs of `lab.chen2022` patch functions, the orbit argument (Thm 4.1) and the single CNN."""

from __future__ import annotations

import numpy as np

from checks.strategies.invalid import (
    Case,
    arrays,
    choices,
    combine,
    counts,
    flags,
    generators,
    instances,
    labels,
    reals,
    values,
)
from checks.strategies.invalid.chen2022 import (
    CONFIG,
    broken_config,
    broken_params,
    broken_signals,
    data_world,
    mismatched_signals,
)
from lab.chen2022.data import UniformRange
from lab.chen2022.model import MoEParams
from lab.chen2022.patch_functions import CNNFilter
from lab.chen2022.patch_optimum import DiscreteLaw
from lab.chen2022.patchwise import PatchAdditive, orbit

ACT = choices("relu ")
CALLABLES = instances(np.zeros(3))


def _cnn(w) -> CNNFilter:
    return CNNFilter(w.normal(3, CONFIG.d), w.normal(3), w.normal(3), "tanh")


def _with_signals(w, **more) -> dict:
    _, signals, data = data_world(w)
    return {"data": data, "signals": signals, **more}


def _orbit(w) -> dict:
    for _ in range(20):
        _, signals, data = data_world(w)
        if np.any(data.eps == -data.y):
            return {"F": PatchAdditive(_cnn(w)), "orb": orbit(data, signals, w.rng)}
    raise AssertionError("no sample with eps = -y in 20 draws")


def _broken_orbit_data(value, kwargs) -> list:
    agree = type(value)(*(getattr(value, f)[value.eps == value.y] for f in value.__dataclass_fields__))
    return instances(value.x)(value, kwargs) + values(agree)(value, kwargs)


RANGES = {"alpha": instances((0.5, 2.0)), "gamma": instances((0.5, 2.0))}
LAWS = {
    "alpha": instances(UniformRange(0.5, 2.0)),
    "gamma": instances(UniformRange(0.5, 2.0)),
}


def _laws(w) -> dict:
    return {"alpha": DiscreteLaw((1.0, 2.0), (0.25, 0.75)), "gamma": DiscreteLaw((1.0, 3.0), (0.5, 0.5))}


CONFIG_SIGNALS = {"config": broken_config, "signals": mismatched_signals}

CASES = {
    # ------------------------------------------------------------------ patch functions
    "lab.chen2022.patch_functions.projections": Case(
        lambda w: {"U": w.normal(2, w.d), "z": w.normal(w.n, w.P, w.d)},
        {"U": arrays(axes=(1,)), "z": arrays(ndim=False, fewer=True, axes=(-1,))},
    ),
    "lab.chen2022.patch_functions.CNNFilter": Case(
        lambda w: {"W": w.normal(3, w.d), "b": w.normal(3), "a": w.normal(3), "act": "relu"},
        {"W": arrays(axes=(0,)), "b": arrays(axes=(0,)), "a": arrays(axes=(0,)), "act": ACT},
    ),
    "lab.chen2022.patch_functions.ProjectionPolynomial": Case(
        lambda w: {"U": w.normal(2, w.d), "exponents": w.rng.integers(0, 3, (3, 2)), "coef": w.normal(3)},
        {
            "U": arrays(axes=(0,)),
            "exponents": labels(None, axes=(0, 1)),
            "coef": arrays(axes=(0,)),
        },
    ),
    "lab.chen2022.patch_functions.ProjectionLookup": Case(
        lambda w: {
            "U": w.normal(2, w.d),
            "edges": np.array([-1.0, 0.5]),
            "table": w.normal(2, 3),
            "min_cosine": None,
        },
        {
            "U": arrays(axes=(0,)),
            "edges": arrays(axes=(0,), extra=lambda a, kw: values(a[::-1])(a, kw)),
            "table": arrays(axes=(0, 1)),
            "min_cosine": values(np.nan, np.inf, "0.9", True, 0.5, np.sqrt(0.5), 1.5, 1 + 1j),
        },
    ),
    "lab.chen2022.patch_functions.signal_directions": Case(
        lambda w: {"signals": data_world(w)[1]}, {"signals": broken_signals}
    ),
    "lab.chen2022.patch_functions.random_cnn": Case(
        lambda w: {
            "rng": w.rng,
            "signals": data_world(w)[1],
            "J": 3,
            "act": "gelu",
            "bias_scale": 1.0,
            "signal_weight": 1.0,
        },
        {
            "rng": generators(),
            "signals": broken_signals,
            "J": counts(1),
            "act": ACT,
            "bias_scale": reals(0.0),
            "signal_weight": reals(0.0),
        },
    ),
    "lab.chen2022.patch_functions.random_polynomial": Case(
        lambda w: {"rng": w.rng, "signals": data_world(w)[1], "degree": 3, "terms": 2},
        {"rng": generators(), "signals": broken_signals, "degree": counts(1), "terms": counts(1)},
    ),
    "lab.chen2022.patch_functions.random_lookup": Case(
        lambda w: {"rng": w.rng, "signals": data_world(w)[1], "edges": [0.0, 0.7], "aligned": False},
        {"rng": generators(), "signals": broken_signals, "edges": arrays(fewer=False), "aligned": flags()},
    ),
    # ------------------------------------------------------------------ patchwise
    "lab.chen2022.patchwise.PatchAdditive": Case(lambda w: {"f": _cnn(w)}, {"f": CALLABLES}),
    "lab.chen2022.patchwise.PatchProduct": Case(lambda w: {"f": _cnn(w)}, {"f": CALLABLES}),
    "lab.chen2022.patchwise.RoutedMoE": Case(
        lambda w: {
            "params": MoEParams(w.normal(CONFIG.d, w.M), w.normal(w.M, w.J, CONFIG.d)),
            "act": "cubic",
        },
        {"params": lambda v, kw: broken_params(v, kw)[:-1], "act": ACT},
        blame={"params": ("params",)},
    ),
    "lab.chen2022.patchwise.orbit": Case(
        lambda w: _with_signals(w, rng=w.rng),
        {"data": _broken_orbit_data, "signals": mismatched_signals, "rng": generators()},
        related=("data", "signals"),
    ),
    "lab.chen2022.patchwise.orbit_margins": Case(_orbit, {"F": CALLABLES, "orb": instances()}),
    "lab.chen2022.patchwise.orbit_residual": Case(
        _orbit, {"F": combine(CALLABLES, values(lambda kw: kw["F"].f)), "orb": instances()}
    ),
    "lab.chen2022.patchwise.summation_allowance": Case(lambda w: {"P": w.P}, {"P": counts(3)}),
    "lab.chen2022.patchwise.error_rate": Case(
        lambda w: {"F": PatchAdditive(_cnn(w)), "data": data_world(w)[2], "level": 0.99, "chunk": 3},
        {
            "F": CALLABLES,
            "data": instances(),
            "level": reals(0.0, 1.0, low_open=True, high_open=True),
            "chunk": counts(1),
        },
    ),
    "lab.chen2022.patchwise.enumerated_error": Case(
        lambda w: {"F": PatchAdditive(_cnn(w)), "config": CONFIG, "signals": data_world(w)[1]},
        {"F": CALLABLES, **CONFIG_SIGNALS},
        related=("config", "signals"),
    ),
    "lab.chen2022.patchwise.overlap_mass": Case(
        lambda w: {"alpha": UniformRange(0.5, 2.0), "gamma": UniformRange(1.0, 3.0)}, RANGES
    ),
    "lab.chen2022.patchwise.orbit_floor": Case(
        lambda w: {"alpha": UniformRange(0.5, 2.0), "gamma": UniformRange(1.0, 3.0)}, RANGES
    ),
    "lab.chen2022.patchwise.attaining_witness": Case(
        lambda w: {"config": CONFIG, "signals": data_world(w)[1]},
        CONFIG_SIGNALS,
        related=("config", "signals"),
    ),
    "lab.chen2022.patchwise.relu_witness": Case(
        lambda w: {"config": CONFIG, "signals": data_world(w)[1], "ramp": 0.1},
        {**CONFIG_SIGNALS, "ramp": reals(0.0, 1.0, low_open=True, high_open=True)},
        related=("config", "signals"),
    ),
    "lab.chen2022.patchwise.feature_sum": Case(
        lambda w: {"signals": data_world(w)[1]}, {"signals": broken_signals}
    ),
    "lab.chen2022.patchwise.search_aligned_lookup": Case(
        lambda w: _with_signals(w, edges=np.array([0.0, 1.0]), rng=w.rng, restarts=1, sweeps=1),
        {
            "data": instances(),
            "signals": mismatched_signals,
            "edges": arrays(fewer=False),
            "rng": generators(),
            "restarts": counts(1),
            "sweeps": counts(0),
        },
        related=("data", "signals"),
    ),
    "lab.chen2022.patch_optimum.DiscreteLaw": Case(
        lambda w: {"values": (1.0, 2.0), "weights": (0.25, 0.75)},
        {
            "values": arrays(axes=(0,), extra=values((0.0, 2.0), (1.0, 1.0))),
            "weights": arrays(axes=(0,), extra=values((-0.25, 1.25), (0.5, 0.6))),
        },
        related=("values", "weights"),
    ),
    "lab.chen2022.patch_optimum.symmetric_mass": Case(_laws, LAWS),
    "lab.chen2022.patch_optimum.optimum": Case(
        lambda w: {**_laws(w), "K": 2, "beta": 1.0},
        {**LAWS, "K": counts(2, 6), "beta": reals(0.0, low_open=True)},
    ),
}

EXEMPT = {
    "lab.chen2022.patch_optimum.Optimum": "the result of `optimum`",
    "lab.chen2022.patchwise.Orbit": "the four points `orbit` returns (a result); classifiers check x",
    "lab.chen2022.patchwise.ErrorEstimate": "the result of `error_rate`",
    "lab.chen2022.baselines.SingleResult": "the result of `train_single`",
}

__all__ = ["CASES", "EXEMPT"]
