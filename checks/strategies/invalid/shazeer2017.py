"""Invalid inputs of `lab.shazeer2017.gating`: logits, noise scales, k, weights, counts and seeds."""

from __future__ import annotations

import numpy as np

from checks.strategies.invalid import (
    SEEDS,
    Case,
    arrays,
    combine,
    counts,
    elementwise,
    flags,
    reals,
    values,
)

K = counts(1, lambda kw: _experts(kw))
W = reals()


def _experts(kwargs: dict) -> int:
    for name in ("H", "clean", "xi"):
        if name in kwargs:
            return np.asarray(kwargs[name]).shape[-1]
    raise AssertionError(kwargs)


def _k(w) -> int:
    return int(w.rng.integers(1, w.M + 1))


def logits(*, complex_ok: bool, axes=(0, 1)):
    """An (n, M) logit array that must match others: every break, shapes related."""
    return arrays(complex_ok=complex_ok, axes=axes, empty=(1,))


def selection(a: np.ndarray, kwargs: dict) -> list:
    return values(np.float64(1.0))(a, kwargs)


def _scale_breaks(a: np.ndarray, kwargs: dict) -> list:
    zero, negative = a.copy(), a.copy()
    zero.flat[0], negative.flat[-1] = 0.0, -1.0
    return values(zero, negative)(a, kwargs)


H_REAL = arrays(ndim=False, fewer=False, empty=(1,), extra=selection)
SCALE_BREAKS = arrays(complex_ok=True, axes=(0, 1), empty=(1,), extra=_scale_breaks)


def _gate(w) -> dict:
    return {"H": w.normal(w.n, w.M), "k": _k(w)}


def _load(world, **more) -> dict:
    w = world
    return {
        "clean": w.normal(w.n, w.M),
        "scale": w.positive(w.n, w.M),
        "H": w.normal(w.n, w.M),
        "k": _k(w),
        **more,
    }


def _router(w) -> dict:
    return {
        "x": w.normal(w.n, w.d),
        "W_g": w.normal(w.d, w.M),
        "W_noise": w.normal(w.d, w.M) * 0.1,
        "xi": w.normal(w.n, w.M),
        "k": _k(w),
        "w": 0.5,
    }


ROUTER = {
    "x": arrays(complex_ok=True, axes=(0, 1)),
    "W_g": arrays(complex_ok=True, axes=(0, 1)),
    "W_noise": arrays(complex_ok=True, axes=(0, 1)),
    "xi": arrays(complex_ok=True, axes=(0, 1)),
    "k": K,
    "w": W,
}
ROUTER_REAL = {name: arrays(axes=(0, 1)) for name in ("x", "W_g", "W_noise", "xi")}
LOAD = {
    "clean": logits(complex_ok=True),
    "scale": SCALE_BREAKS,
    "H": logits(complex_ok=True),
    "k": K,
}


def _kernel(w, **more) -> dict:
    return {"clean": w.normal(w.n, w.M), "xi": w.normal(w.n, w.M), "k": _k(w), **more}


IMPORTANCE = Case(
    lambda w: {**_gate(w), "w": 0.5},
    {"H": arrays(complex_ok=True, empty=(1,)), "k": K, "w": W},
    related=("H", "k"),
)

CASES = {
    "lab.shazeer2017.gating.softplus": Case(lambda w: {"z": w.normal(w.n)}, {"z": elementwise()}),
    "lab.shazeer2017.gating.logistic": Case(lambda w: {"z": w.normal(w.n)}, {"z": elementwise()}),
    "lab.shazeer2017.gating.normal_cdf": Case(lambda w: {"z": w.normal(w.n)}, {"z": elementwise()}),
    "lab.shazeer2017.gating.normal_pdf": Case(lambda w: {"z": w.normal(w.n)}, {"z": elementwise()}),
    "lab.shazeer2017.gating.noisy_logits": Case(
        lambda w: {"clean": w.normal(w.n, w.M), "raw_noise": w.normal(w.n, w.M), "xi": w.normal(w.n, w.M)},
        {name: logits(complex_ok=True) for name in ("clean", "raw_noise", "xi")},
    ),
    "lab.shazeer2017.gating.decreasing_order": Case(lambda w: {"H": w.normal(w.n, w.M)}, {"H": H_REAL}),
    "lab.shazeer2017.gating.top_k_mask": Case(_gate, {"H": H_REAL, "k": K}, related=("H", "k")),
    "lab.shazeer2017.gating.top_k_gates": Case(_gate, {"H": H_REAL, "k": K}, related=("H", "k")),
    "lab.shazeer2017.gating.kth_excluding": Case(_gate, {"H": H_REAL, "k": K}, related=("H", "k")),
    "lab.shazeer2017.gating.noisy_top_k_gating": Case(
        lambda w: {name: v for name, v in _router(w).items() if name != "w"}, {**ROUTER_REAL, "k": K}
    ),
    "lab.shazeer2017.gating.smooth_load": Case(_load, LOAD),
    "lab.shazeer2017.gating.cv_squared": Case(
        lambda w: {"v": w.positive(w.M)},
        {"v": arrays(complex_ok=True, empty=(0,), extra=lambda a, kw: values(np.r_[a, -a.sum()])(a, kw))},
    ),
    "lab.shazeer2017.gating.cv_squared_gradient": Case(
        lambda w: {"v": w.positive(w.M)},
        {"v": arrays(complex_ok=True, empty=(0,), extra=lambda a, kw: values(np.r_[a, -a.sum()])(a, kw))},
    ),
    "lab.shazeer2017.gating.importance": Case(
        lambda w: {"G": w.rng.random((w.n, w.M))}, {"G": arrays(complex_ok=True, empty=(1,))}
    ),
    "lab.shazeer2017.gating.importance_loss": IMPORTANCE,
    "lab.shazeer2017.gating.softmax_gate_importance_loss": IMPORTANCE,
    "lab.shazeer2017.gating.load_loss": Case(
        lambda w: _load(w, w=0.5),
        {name: arrays(complex_ok=True, axes=(0, 1), empty=(1,)) for name in ("clean", "H")}
        | {"scale": SCALE_BREAKS, "k": K, "w": W},
    ),
    "lab.shazeer2017.gating.router_gradients": Case(
        lambda w: {
            "x": w.normal(w.n, w.d),
            **{name: w.normal(w.n, w.M) for name in ("raw_noise", "xi", "d_clean", "d_scale", "d_H")},
        },
        {"x": arrays(complex_ok=True, axes=(0,))}
        | {
            name: arrays(complex_ok=True, axes=(0, 1))
            for name in ("raw_noise", "xi", "d_clean", "d_scale", "d_H")
        },
    ),
    "lab.shazeer2017.gating.importance_loss_and_gradients": Case(_router, ROUTER),
    "lab.shazeer2017.gating.softmax_gate_importance_loss_and_gradients": Case(_router, ROUTER),
    "lab.shazeer2017.gating.load_loss_and_gradients": Case(_router, ROUTER),
    "lab.shazeer2017.gating.gate_and_load": Case(
        lambda w: _kernel(w, raw_noise=w.normal(w.n, w.M)),
        {
            "clean": logits(complex_ok=False),
            "raw_noise": combine(
                logits(complex_ok=False), values(lambda kw: np.full_like(kw["clean"], -800.0))
            ),
            "xi": logits(complex_ok=False),
            "k": K,
        },
        backends=True,
    ),
    "lab.shazeer2017.gating.top_k_membership_counts": Case(
        lambda w: _kernel(
            w, scale=w.positive(w.n, w.M), draws=20, seed=11, resample_all=bool(w.rng.integers(2))
        ),
        {
            "clean": logits(complex_ok=False),
            "scale": combine(logits(complex_ok=False), _scale_breaks),
            "xi": logits(complex_ok=False),
            "k": K,
            "draws": counts(1),
            "seed": SEEDS,
            "resample_all": flags(),
        },
        backends=True,
    ),
}

EXEMPT = {
    "lab.shazeer2017.gating.ImportanceLoss": "the (loss, d_H) result of `importance_loss`",
    "lab.shazeer2017.gating.LoadLoss": "the (loss, d_clean, d_scale, d_H) result of `load_loss`",
    "lab.shazeer2017.gating.RouterLoss": "the (loss, grad_W_g, grad_W_noise) result of the router losses",
}

__all__ = ["CASES", "EXEMPT"]
