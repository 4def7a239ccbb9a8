"""Invalid inputs of `lab.makkuva2020`: the gated regression model, its inputs and GRU, and the losses.

The fits and Fig. 1 are in `makkuva2020_fit`.
"""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np

from checks.strategies.invalid import (
    Case,
    arrays,
    choices,
    combine,
    counts,
    generators,
    instances,
    labels,
    reals,
    values,
)
from lab.makkuva2020 import gated_regression as gr
from lab.makkuva2020.gated_regression import GaussianInput, GRUParams, paper_model
from lab.makkuva2020.losses import L4Regularisers, output_transforms

REG = L4Regularisers(mu=0.05, lam=4.0, delta=2.0)
TR = output_transforms(0.1)
NONZERO = combine(reals(), values(0.0))
SIGMA = reals(0.0, low_open=True)
ACT = choices("linear ")


def regression(w) -> dict:
    """A model with k = 2..3 experts in d = 2k, its inputs and a sample (x (n, d), y (n,))."""
    k, d = w.M, 2 * w.M
    model = paper_model(k, d)
    return {"model": model, "inputs": GaussianInput(d), "x": w.normal(w.n + 2, d), "y": w.normal(w.n + 2)}


def _mixture(a: np.ndarray, kwargs: dict) -> list:
    negative = a.copy()
    negative[0], negative[-1] = -0.25, negative[-1] + negative[0] + 0.25
    return values(negative, 2 * a, a / 2)(a, kwargs)


MIXTURE = arrays(extra=_mixture)


def _l4(w, **more) -> dict:
    r = regression(w)
    return {"A": w.normal(w.M, r["x"].shape[1]), "x": r["x"], "y": r["y"], "tr": TR, **more}


L4 = {
    "A": arrays(axes=(1,), empty=(0, 1)),
    "x": arrays(axes=(0, 1), empty=(0,)),
    "y": arrays(axes=(0,)),
    "tr": instances(dataclasses.asdict(TR)),
}


def _population(w) -> dict:
    model = paper_model(w.M, 2 * w.M)
    return {
        "A": w.normal(w.M, 2 * w.M),
        "A_star": model.A,
        "pi": np.full(w.M, 1.0 / w.M),
        "reg": REG,
    }


POPULATION = {
    "A": arrays(ndim=False, fewer=True, axes=(-1,), empty=(-2,)),
    "A_star": arrays(axes=(0, 1), empty=(0, 1)),
    "pi": MIXTURE,
    "reg": instances((0.05, 4.0, 2.0)),
}


def _log(w, **more) -> dict:
    r = regression(w)
    return {
        "W": w.normal(w.M - 1, 2 * w.M),
        "A": r["model"].A,
        "x": r["x"],
        "y": r["y"],
        "sigma": 0.3,
        "act": "linear",
        **more,
    }


LOG = {
    "W": arrays(axes=(0, 1)),
    "A": arrays(axes=(0, 1), empty=(0, 1)),
    "x": arrays(axes=(0, 1), empty=(0,)),
    "y": arrays(axes=(0,)),
    "sigma": SIGMA,
    "act": ACT,
}


def _gru(w) -> dict:
    m, p = w.M, 2
    params = GRUParams(
        U_z=w.normal(m, p),
        W_z=w.normal(m, m),
        U_r=w.normal(m, p),
        W_r=w.normal(m, m),
        U_h=w.normal(m, p),
        W_h=w.normal(m, m),
    )
    return {"params": params, "x": w.normal(p), "h": w.normal(m)}


def _broken_gru(value, kwargs) -> list:
    nan = GRUParams(**{f: getattr(value, f).copy() for f in value.__dataclass_fields__})
    nan.W_h[0, 0] = np.nan
    return instances(dataclasses.asdict(value))(value, kwargs) + values(nan)(value, kwargs)


GRU = {"params": _broken_gru, "x": arrays(axes=(0,), empty=(0,)), "h": arrays(axes=(0,), empty=(0,))}
GATES = arrays(axes=(0,), extra=lambda a, kw: values(a + 1.5, a - 1.5)(a, kw))


def _updates(w) -> dict:
    args = _gru(w)
    m = args["h"].size
    return {**args, "z": w.rng.random(m), "r": (w.rng.random(m) > 0.5).astype(float), "act": "tanh"}


def _resets(fn) -> dict:
    return {"reset": "after"} if "reset" in inspect.signature(fn).parameters else {}


def _broken_inputs(value, kwargs) -> list:
    return instances(value.d)(value, kwargs) + values(GaussianInput(value.d + 1), related=True)(value, kwargs)


CASES = {
    # ------------------------------------------------------------------ gated regression and inputs
    "lab.makkuva2020.gated_regression.GaussianInput": Case(lambda w: {"d": 2 * w.M}, {"d": counts(1)}),
    "lab.makkuva2020.gated_regression.GaussianMixtureInput": Case(
        lambda w: {"mu": w.normal(2 * w.M), "p": 0.3},
        {"mu": arrays(empty=(0,)), "p": reals(0.0, 1.0)},
    ),
    "lab.makkuva2020.gated_regression.GatedRegression": Case(
        lambda w: {"A": w.normal(w.M, 4), "W": w.normal(w.M - 1, 4), "sigma": 0.1, "activation": "linear"},
        {
            "A": arrays(axes=(0, 1), empty=(1,), extra=lambda a, kw: values(a[:1], related=True)(a, kw)),
            "W": arrays(axes=(0, 1)),
            "sigma": reals(0.0),
            "activation": choices(),
        },
    ),
    "lab.makkuva2020.gated_regression.paper_model": Case(
        lambda w: {"k": w.M, "d": 2 * w.M, "sigma": 0.05},
        {
            "k": counts(2),
            "d": combine(counts(), values(lambda kw: 2 * kw["k"] - 2, related=True)),
            "sigma": reals(0.0),
        },
        related=("k", "d"),
    ),
    "lab.makkuva2020.gated_regression.gate_logits": Case(
        lambda w: {"W": w.normal(w.M - 1, 4), "x": w.normal(w.n, 4)},
        {"W": arrays(axes=(1,)), "x": arrays(axes=(1,))},
    ),
    "lab.makkuva2020.gated_regression.log_sum_exp": Case(
        lambda w: {"L": w.normal(w.M, w.n)}, {"L": arrays(empty=(0,))}
    ),
    "lab.makkuva2020.gated_regression.gate_probabilities": Case(
        lambda w: {"W": w.normal(w.M - 1, 4), "x": w.normal(w.n, 4)},
        {"W": arrays(axes=(1,)), "x": arrays(axes=(1,))},
    ),
    "lab.makkuva2020.gated_regression.expert_outputs": Case(
        lambda w: {"A": w.normal(w.M, 4), "x": w.normal(w.n, 4), "act": "relu"},
        {"A": arrays(axes=(1,)), "x": arrays(axes=(1,)), "act": ACT},
    ),
    "lab.makkuva2020.gated_regression.sample": Case(
        lambda w: {
            **{k: v for k, v in regression(w).items() if k in ("model", "inputs")},
            "n": w.n,
            "rng": w.rng,
        },
        {"model": instances(), "inputs": _broken_inputs, "n": counts(1), "rng": generators()},
    ),
    "lab.makkuva2020.gated_regression.expected_gates": Case(
        lambda w: {"W": paper_model(w.M, 2 * w.M).W, "inputs": GaussianInput(2 * w.M), "nodes": 8},
        {"W": arrays(axes=(1,)), "inputs": _broken_inputs, "nodes": counts(1)},
    ),
    "lab.makkuva2020.gated_regression.gate_fisher_information": Case(
        lambda w: {"W": w.normal(w.M - 1, 3), "nodes": 8}, {"W": arrays(empty=(0, 1)), "nodes": counts(1)}
    ),
    "lab.makkuva2020.gated_regression.rereferenced_gating": Case(
        lambda w: {"W": w.normal(w.M - 1, 4), "perm": w.rng.permutation(w.M)},
        {
            "W": arrays(),
            "perm": combine(
                labels(lambda kw: kw["W"].shape[0] + 1),
                values(lambda kw: np.zeros(kw["W"].shape[0] + 1, int)),
            ),
        },
        related=("W", "perm"),
    ),
    "lab.makkuva2020.gated_regression.GRUParams": Case(
        lambda w: dataclasses.asdict(_gru(w)["params"]),
        {name: arrays(axes=(0, 1)) for name in ("U_z", "W_z", "U_r", "W_r", "U_h", "W_h")},
    ),
    "lab.makkuva2020.gated_regression.gru_gates": Case(
        lambda w: {**_gru(w), "gate": "sigmoid"}, {**GRU, "gate": choices("Binary")}
    ),
    "lab.makkuva2020.gated_regression.gru_update": Case(
        lambda w: {**_updates(w), **_resets(gr.gru_update)},
        {
            **GRU,
            "z": GATES,
            "r": GATES,
            "act": ACT,
            **({"reset": choices()} if _resets(gr.gru_update) else {}),
        },
    ),
    "lab.makkuva2020.gated_regression.hierarchical_moe_update": Case(
        _updates, {**GRU, "z": GATES, "r": GATES, "act": ACT}
    ),
    "lab.makkuva2020.gated_regression.gru_step": Case(
        lambda w: {**_gru(w), "gate": "binary", "act": "tanh", **_resets(gr.gru_step)},
        {**GRU, "gate": choices(), "act": ACT, **({"reset": choices()} if _resets(gr.gru_step) else {})},
    ),
    "lab.makkuva2020.gated_regression.hierarchical_moe_step": Case(
        lambda w: {**_gru(w), "gate": "binary", "act": "tanh"}, {**GRU, "gate": choices(), "act": ACT}
    ),
    # ------------------------------------------------------------------ losses
    "lab.makkuva2020.losses.OutputTransforms": Case(
        lambda w: dataclasses.asdict(TR),
        {name: (NONZERO if name in ("c", "c_prime") else reals()) for name in dataclasses.asdict(TR)},
    ),
    "lab.makkuva2020.losses.output_transforms": Case(
        lambda w: {
            "sigma": 0.1,
            "act": "linear",
            "q4_constant": ("hermite", "paper")[int(w.rng.integers(2))],
        },
        {"sigma": reals(0.0), "act": ACT, "q4_constant": choices()},
    ),
    "lab.makkuva2020.losses.t1": Case(
        lambda w: {"u": w.normal(4), "v": w.normal(4), "x": w.normal(w.n, 4), "c": 24.0},
        {
            "u": arrays(axes=(0,), empty=(0,)),
            "v": arrays(axes=(0,)),
            "x": arrays(axes=(1,), empty=(0,)),
            "c": NONZERO,
        },
    ),
    "lab.makkuva2020.losses.t2": Case(
        lambda w: {"u": w.normal(4), "x": w.normal(w.n, 4), "c": 24.0},
        {"u": arrays(axes=(0,), empty=(0,)), "x": arrays(axes=(1,), empty=(0,)), "c": NONZERO},
    ),
    "lab.makkuva2020.losses.t3": Case(
        lambda w: {"u": w.normal(4), "x": w.normal(w.n, 4), "c_prime": 2.0},
        {"u": arrays(axes=(0,), empty=(0,)), "x": arrays(axes=(1,), empty=(0,)), "c_prime": NONZERO},
    ),
    "lab.makkuva2020.losses.L4Regularisers": Case(
        lambda w: {"mu": 0.05, "lam": 4.0, "delta": 2.0},
        {"mu": reals(), "lam": reals(0.0), "delta": reals(0.0)},
    ),
    "lab.makkuva2020.losses.transform_means": Case(
        lambda w: {"A": w.normal(w.M, 4), "inputs": GaussianInput(4), "c": 24.0},
        {"A": arrays(axes=(1,)), "inputs": _broken_inputs, "c": NONZERO},
    ),
    "lab.makkuva2020.losses.l4_statistics": Case(_l4, L4),
    "lab.makkuva2020.losses.sample_l4": Case(
        lambda w: _l4(w, reg=REG), {**L4, "reg": instances((0.05, 4.0, 2.0))}
    ),
    "lab.makkuva2020.losses.sample_l4_gradient": Case(
        lambda w: _l4(w, reg=REG), {**L4, "reg": instances((0.05, 4.0, 2.0))}, backends=True
    ),
    "lab.makkuva2020.losses.population_l4": Case(_population, POPULATION),
    "lab.makkuva2020.losses.population_l4_gradient": Case(_population, POPULATION),
    "lab.makkuva2020.losses.population_l4_hessian": Case(
        _population, {**POPULATION, "A": arrays(axes=(1,), empty=(0,))}
    ),
    "lab.makkuva2020.losses.optimal_scale": Case(
        lambda w: {"pi": np.full(w.M, 1.0 / w.M), "reg": REG},
        {"pi": MIXTURE, "reg": instances((0.05, 4.0, 2.0))},
    ),
    "lab.makkuva2020.losses.l_log": Case(_log, LOG),
    "lab.makkuva2020.losses.l_log_gradient": Case(_log, LOG),
    "lab.makkuva2020.losses.l_log_hessian": Case(_log, LOG),
    "lab.makkuva2020.losses.posterior": Case(_log, LOG),
    "lab.makkuva2020.losses.softmax_curvature": Case(
        lambda w: {"x": w.normal(w.n, 3), "p": w.rng.random((w.M - 1, w.n)) / w.M},
        {
            "x": arrays(axes=(0,), empty=(0,)),
            "p": arrays(axes=(1,), extra=lambda a, kw: values(a + 1.0, -a - 0.1)(a, kw)),
        },
    ),
    "lab.makkuva2020.losses.project_rows": Case(
        lambda w: {"W": w.normal(w.M - 1, 4), "R": 1.0}, {"W": arrays(), "R": SIGMA}
    ),
    "lab.makkuva2020.losses.l2_loss_gradient": Case(
        lambda w: {k: v for k, v in _log(w).items() if k != "sigma"},
        {k: v for k, v in LOG.items() if k != "sigma"},
    ),
}

EXEMPT = {
    "lab.makkuva2020.gated_regression.InputDistribution": "a Protocol (GaussianInput, GaussianMixtureInput)",
    "lab.makkuva2020.gated_regression.Sample": "the result of `sample`",
}

__all__ = ["CASES", "EXEMPT", "MIXTURE", "REG", "TR", "regression"]
