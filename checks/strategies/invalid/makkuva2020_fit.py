"""Invalid inputs of `lab.makkuva2020.fit` (errors, GD, SGD, projected GD, EM) and of `fig1_experiment`."""

from __future__ import annotations

import dataclasses

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
from checks.strategies.invalid.makkuva2020 import MIXTURE, REG, TR
from lab.makkuva2020.fig1_experiment import METHODS, Fig1Config, InitRun, MethodRun
from lab.makkuva2020.gated_regression import GaussianInput, paper_model, sample

POSITIVE = reals(0.0, low_open=True)
LEVEL = reals(0.0, 1.0, low_open=True, high_open=True)
TINY = Fig1Config(
    sgd_steps=2, batch=16, em_n=60, em_iters=1, log_T=2, log_per_step=20, sign_n=40, record_every=1
)


def _model(w) -> dict:
    k, d = w.M, 2 * w.M
    return {"model": paper_model(k, d), "inputs": GaussianInput(d), "rng": w.rng}


def _broken_inputs(value, kwargs) -> list:
    return instances(value.d)(value, kwargs) + values(GaussianInput(value.d + 1), related=True)(value, kwargs)


STREAM = {"model": instances(), "inputs": _broken_inputs, "rng": generators()}
STEPS = {"lr": POSITIVE, "steps": counts(1), "batch": counts(1), "record_every": counts(1)}


def _fixed_sample(w) -> dict:
    model = paper_model(w.M, 2 * w.M)
    s = sample(model, GaussianInput(model.d), 30, w.rng)
    return {"model": model, "x": s.x, "y": s.y}


def _runs(w) -> list[InitRun]:
    def method() -> MethodRun:
        curve = w.rng.random(3)
        return MethodRun(float(curve[-1]), float(curve[-1]), np.arange(3.0), curve, np.arange(3.0), curve)

    return [
        InitRun(
            method(), method(), method(), np.eye(3, 10), np.arange(3), np.zeros((2, 2, 10)), np.zeros((2, 10))
        )
        for _ in range(2)
    ]


RUNS = combine(instances(), values([], [None], lambda kw: (*kw["runs"][:1], "x")))

CASES = {
    "lab.makkuva2020.fit.regression_error": Case(
        lambda w: {"A": w.normal(w.M, 4), "A_star": np.eye(w.M, 4)},
        {
            "A": arrays(axes=(0, 1), extra=lambda a, kw: values(np.ones((9, 4)), related=True)(a, kw)),
            "A_star": arrays(axes=(0, 1), empty=(0, 1)),
        },
    ),
    "lab.makkuva2020.fit.gating_error": Case(
        lambda w: {"W": w.normal(w.M - 1, 4), "W_star": np.eye(w.M - 1, 4), "perm": w.rng.permutation(w.M)},
        {
            "W": arrays(axes=(0, 1)),
            "W_star": arrays(axes=(0, 1), empty=(0, 1)),
            "perm": combine(
                labels(lambda kw: kw["W_star"].shape[0] + 1),
                values(lambda kw: np.zeros(kw["W"].shape[0] + 1, int)),
            ),
        },
    ),
    "lab.makkuva2020.fit.init_params": Case(
        lambda w: {"k": w.M, "d": 4, "rng": w.rng}, {"k": counts(1), "d": counts(1), "rng": generators()}
    ),
    "lab.makkuva2020.fit.gd_population_l4": Case(
        lambda w: {
            "A0": w.normal(2, w.M, 2 * w.M) * 0.3,
            "A_star": paper_model(w.M, 2 * w.M).A,
            "pi": np.full(w.M, 1.0 / w.M),
            "reg": REG,
            "lr": 0.05,
            "steps": 3,
        },
        {
            "A0": arrays(ndim=False, fewer=True, axes=(-1,), empty=(-2,)),
            "A_star": arrays(axes=(0, 1), empty=(0, 1)),
            "pi": MIXTURE,
            "reg": instances(),
            "lr": POSITIVE,
            "steps": counts(1),
        },
    ),
    "lab.makkuva2020.fit.minibatches": Case(
        lambda w: {**_model(w), "batch": 8}, {**STREAM, "batch": counts(1)}
    ),
    "lab.makkuva2020.fit.sgd_l4": Case(
        lambda w: {
            "A0": w.normal(w.M, 2 * w.M) * 0.5,
            **_model(w),
            "tr": TR,
            "reg": REG,
            "lr": 0.006,
            "steps": 2,
            "batch": 16,
            "record_every": 1,
        },
        {
            "A0": arrays(axes=(1,), empty=(0,)),
            **STREAM,
            "tr": instances(),
            "reg": instances(),
            **STEPS,
        },
        backends=True,
        call=lambda f, kw: f(**kw).A,
    ),
    "lab.makkuva2020.fit.resolve_signs": Case(
        lambda w: {"A": w.normal(w.M, 4), "x": w.normal(w.n, 4), "y": w.normal(w.n)},
        {"A": arrays(axes=(1,), empty=(0, 1)), "x": arrays(axes=(0, 1)), "y": arrays(axes=(0,))},
    ),
    "lab.makkuva2020.fit.projected_gd_l_log": Case(
        lambda w: {
            "W0": np.zeros((w.M - 1, 2 * w.M)),
            "A": paper_model(w.M, 2 * w.M).A,
            "x": (s := _fixed_sample(w))["x"],
            "y": s["y"],
            "sigma": 0.05,
            "R": 1.0,
            "lr": 1.0,
            "T": 3,
            "act": "linear",
        },
        {
            "W0": arrays(axes=(0, 1)),
            "A": arrays(axes=(0, 1), empty=(0, 1)),
            "x": arrays(axes=(0, 1), empty=(0,)),
            "y": arrays(axes=(0,)),
            "sigma": POSITIVE,
            "R": POSITIVE,
            "lr": POSITIVE,
            "T": combine(counts(1), values(lambda kw: kw["x"].shape[0] + 1, related=True)),
            "act": choices(),
        },
    ),
    "lab.makkuva2020.fit.sgd_l2": Case(
        lambda w: {
            "A0": w.normal(w.M, 2 * w.M) * 0.5,
            "W0": w.normal(w.M - 1, 2 * w.M) * 0.5,
            **_model(w),
            "lr": 0.1,
            "steps": 2,
            "batch": 16,
            "record_every": 1,
        },
        {"A0": arrays(axes=(0, 1), empty=(0,)), "W0": arrays(axes=(0, 1)), **STREAM, **STEPS},
        call=lambda f, kw: f(**kw).A,
    ),
    "lab.makkuva2020.fit.em": Case(
        lambda w: {
            "A0": w.normal(w.M, 2 * w.M) * 0.5,
            "W0": w.normal(w.M - 1, 2 * w.M) * 0.5,
            "x": (s := _fixed_sample(w))["x"],
            "y": s["y"],
            "iters": 1,
        },
        {
            "A0": arrays(axes=(0, 1), empty=(0, 1)),
            "W0": arrays(axes=(0, 1)),
            "x": arrays(axes=(0, 1), empty=(0,)),
            "y": arrays(axes=(0,), extra=lambda a, kw: values(np.ones_like(a))(a, kw)),
            "iters": counts(1),
        },
    ),
    "lab.makkuva2020.fit.contraction_factor": Case(
        lambda w: {"errors": 2.0 * 0.8 ** np.arange(12.0) + 1e-3, "floor": 3e-3, "level": 0.99},
        {
            "errors": arrays(extra=lambda a, kw: values(a[:2], np.r_[a[:-1], 0.0], -a)(a, kw)),
            "floor": reals(),
            "level": LEVEL,
        },
    ),
    # ------------------------------------------------------------------ Fig. 1
    "lab.makkuva2020.fig1_experiment.Fig1Config": Case(
        lambda w: dataclasses.asdict(TINY) | {"reg": TINY.reg},
        {
            "k": counts(1),
            "d": combine(counts(1), values(2, related=True)),
            "sigma": reals(0.0),
            "reg": instances((0.05, 4.0, 2.0)),
            "l4_lr": POSITIVE,
            "R": POSITIVE,
            "sgd_steps": counts(1),
            "em_iters": counts(1),
            "record_every": counts(1),
        },
        related=("k", "d"),
    ),
    "lab.makkuva2020.fig1_experiment.run_init": Case(
        lambda w: {"config": TINY, "seed": int(w.rng.integers(0, 100))},
        {"config": instances(dataclasses.asdict(TINY)), "seed": counts(0)},
        call=lambda f, kw: f(**kw).A_hat,
    ),
    "lab.makkuva2020.fig1_experiment.run_fig1": Case(
        lambda w: {"config": TINY, "seeds": [int(w.rng.integers(0, 100))], "progress": False},
        {
            "config": instances(),
            "seeds": values([-1], [1.5], "1", [[1]], [True], None),
            "progress": flags(),
        },
        call=lambda f, kw: [r.A_hat for r in f(**kw)],
    ),
    "lab.makkuva2020.fig1_experiment.fig1_table": Case(lambda w: {"runs": _runs(w)}, {"runs": RUNS}),
    "lab.makkuva2020.fig1_experiment.recovery_summary": Case(
        lambda w: {"runs": _runs(w), "eps": 0.05}, {"runs": RUNS, "eps": reals(0.0)}
    ),
    "lab.makkuva2020.fig1_experiment.mean_errors": Case(
        lambda w: {"runs": [{key: {"e_reg": 0.1, "e_gating": w.rng.random()} for key, _ in METHODS}] * 2},
        {"runs": values([], None, [[0.1]], [{"ours": {"e_reg": 0.1}}], [{key: {} for key, _ in METHODS}])},
    ),
    "lab.makkuva2020.fig1_experiment.plot_fig1": Case(
        lambda w: {"runs": _runs(w), "path": "makkuva_fig1.png"},
        {"runs": RUNS, "path": values(None, 1.5, object())},
        runs=False,  # writes a PNG (and needs matplotlib); its refusals come before any of that
    ),
}

EXEMPT = {
    "lab.makkuva2020.fit.Trajectory": "the result of the SGD and EM fits",
    "lab.makkuva2020.fit.ContractionFit": "the result of `contraction_factor`",
    "lab.makkuva2020.fig1_experiment.MethodRun": "one method's result inside an `InitRun`",
    "lab.makkuva2020.fig1_experiment.InitRun": "the result of `run_init` (functions taking runs check their "
    "type)",
    "lab.makkuva2020.fig1_experiment.replicate": "the `python -m lab replicate makkuva-fig1` entry point: "
    "its arguments come from the CLI's parser, which refuses bad ones (`lab.cli`)",
}

__all__ = ["CASES", "EXEMPT", "TINY"]
