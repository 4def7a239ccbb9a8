"""Invalid inputs of `lab.chen2022` metrics, routing probabilities and load-balancing losses."""

from __future__ import annotations

import numpy as np

from checks.strategies.invalid import (
    SEEDS,
    Case,
    arrays,
    choices,
    combine,
    counts,
    flags,
    instances,
    labels,
    reals,
    values,
)
from checks.strategies.invalid.chen2022 import CONFIG, mismatched_signals
from lab.chen2022.data import make_signals
from lab.chen2022.routing import Gaussian, Gumbel, Uniform

SCALE = reals(0.0, low_open=True)
LEVEL = reals(0.0, 1.0, low_open=True, high_open=True)
NOISES = (Uniform(0.0, 1.0), Gaussian(0.7), Gumbel(1.3))


def _noise(w) -> object:
    return NOISES[int(w.rng.integers(len(NOISES)))]


def _gates(w) -> np.ndarray:
    return w.normal(w.n, w.M)


def _balance(w) -> dict:
    return {"h": _gates(w), "routes": np.arange(w.n) % w.M, "coef": 0.1}


BALANCE = {
    "h": arrays(axes=(0,), empty=(0, 1)),
    "routes": labels(lambda kw: kw["h"].shape[1]),
    "coef": reals(0.0),
}
ROUTING = {"h": arrays(fewer=False, empty=(0, 1)), "noise": instances(Uniform)}
COUPLING = {  # two gate vectors (M,) of one length: a shorter, longer or empty one may blame either
    "h": arrays(axes=(0,), empty=(0,)),
    "h_hat": arrays(axes=(0,), empty=(0,)),
    "noise": instances(Uniform),
}


def _coupling_pair(w) -> dict:
    h = w.normal(w.M)
    return {"h": h, "h_hat": h + 0.1 * w.normal(w.M), "noise": _noise(w)}


CASES = {
    # ------------------------------------------------------------------ metrics
    "lab.chen2022.metrics.dispatch_counts": Case(
        lambda w: {"cluster": np.arange(w.n) % 2, "routes": np.arange(w.n) % w.M, "K": 2, "M": w.M},
        {
            "cluster": labels(lambda kw: kw["K"]),
            "routes": labels(lambda kw: kw["M"]),
            "K": combine(counts(1), values(1, related=True)),
            "M": combine(counts(1), values(1, related=True)),
        },
    ),
    "lab.chen2022.metrics.dispatch_entropy": Case(
        lambda w: {"counts": w.rng.integers(1, 5, (2, w.M))},
        {
            "counts": arrays(
                extra=lambda a, kw: values(-a, np.zeros_like(a), np.r_[a[:1] * 0 - 1, a[1:]])(a, kw)
            )
        },
    ),
    "lab.chen2022.metrics.professions": Case(
        lambda w: {"W0": w.normal(w.M, w.J, w.d + 1), "V": np.eye(w.d)[:2]},
        {
            "W0": arrays(
                empty=(0, 1), extra=lambda a, kw: values(a[..., : kw["V"].shape[1] - 1], related=True)(a, kw)
            ),
            "V": arrays(
                empty=(0,),
                extra=lambda a, kw: values(np.zeros((2, kw["W0"].shape[2] + 1)), related=True)(a, kw),
            ),
        },
    ),
    "lab.chen2022.metrics.profession_sets": Case(
        lambda w: {"k_star": np.arange(w.M) % 2, "K": 2},
        {"k_star": labels(lambda kw: kw["K"], axes=()), "K": combine(counts(1), values(1, related=True))},
    ),
    "lab.chen2022.metrics.accuracy": Case(
        lambda w: {"margins": w.normal(w.n)},
        {"margins": arrays(ndim=False, inf=False, extra=lambda a, kw: values(a[:0])(a, kw))},
    ),
    "lab.chen2022.metrics.expert_cluster_accuracy": Case(
        lambda w: {
            "y": w.rng.choice([-1.0, 1.0], w.n),
            "cluster": np.arange(w.n) % 2,
            "f_all": w.normal(w.n, w.M),
            "K": 2,
        },
        {
            "y": arrays(axes=(0,), inf=False),
            "cluster": combine(labels(2), values(lambda kw: np.zeros(kw["y"].size, dtype=int))),
            "f_all": arrays(axes=(0,), inf=False),
            "K": combine(counts(1), values(3, related=True)),
        },
    ),
    "lab.chen2022.metrics.signal_alignment": Case(
        lambda w: {
            "W": w.normal(w.M, w.J, CONFIG.d),
            "Theta": w.normal(CONFIG.d, w.M),
            "signals": make_signals(CONFIG, w.rng),
        },
        {
            "W": arrays(axes=(0,), empty=(1,), extra=lambda a, kw: values(a[..., :-1], related=True)(a, kw)),
            "Theta": arrays(axes=(0, 1)),
            "signals": mismatched_signals,
        },
    ),
    "lab.chen2022.metrics.expert_load": Case(lambda w: {"h": _gates(w)}, {"h": arrays(empty=(0, 1))}),
    # ------------------------------------------------------------------ routing
    "lab.chen2022.routing.Uniform": Case(
        lambda w: {"low": 0.0, "high": 1.0},
        {
            "low": combine(reals(), values(1.0, 2.0, related=True)),
            "high": combine(reals(), values(0.0, -1.0, related=True)),
        },
    ),
    "lab.chen2022.routing.Gaussian": Case(lambda w: {"scale": 0.7}, {"scale": SCALE}),
    "lab.chen2022.routing.Gumbel": Case(lambda w: {"scale": 1.3}, {"scale": SCALE}),
    "lab.chen2022.routing.routing_probabilities": Case(
        lambda w: {"h": _gates(w), "noise": _noise(w)}, ROUTING
    ),
    "lab.chen2022.routing.routing_jacobian": Case(lambda w: {"h": _gates(w), "noise": _noise(w)}, ROUTING),
    "lab.chen2022.routing.routing_frequencies": Case(
        lambda w: {"h": w.normal(w.M), "noise": _noise(w), "draws": 50, "seed": 3, "level": 0.99},
        {"h": arrays(empty=(0,)), "noise": instances(), "draws": counts(1), "seed": SEEDS, "level": LEVEL},
    ),
    "lab.chen2022.routing_coupling.argmax_change_probability": Case(_coupling_pair, COUPLING),
    "lab.chen2022.routing_coupling.union_bound": Case(_coupling_pair, COUPLING),
    "lab.chen2022.routing_coupling.coupling_terms": Case(
        _coupling_pair, {**COUPLING, "h_hat": combine(COUPLING["h_hat"], values(lambda kw: kw["h"]))}
    ),
    "lab.chen2022.routing_coupling.half_lifted_pair": Case(
        lambda w: {"M": w.M, "delta": 1e-3}, {"M": counts(2), "delta": SCALE}
    ),
    "lab.chen2022.routing_coupling.tie_change_rate": Case(
        lambda w: {"noise": _noise(w), "M": w.M, "lifted": w.M // 2},
        {"noise": instances(Uniform), "M": counts(2), "lifted": counts(0, lambda kw: kw["M"])},
    ),
    "lab.chen2022.routing_exact.legendre01": Case(lambda w: {"nodes": w.M}, {"nodes": counts(1)}),
    "lab.chen2022.routing_exact.uniform_routing": Case(
        lambda w: {"lo": _gates(w), "width": 1.0, "jacobian": bool(w.rng.integers(2))},
        {"lo": arrays(empty=(0, 1)), "width": SCALE, "jacobian": flags()},
    ),
    "lab.chen2022.routing_exact.gaussian_routing": Case(
        lambda w: {"x": _gates(w), "jacobian": bool(w.rng.integers(2))},
        {"x": arrays(empty=(0, 1)), "jacobian": flags()},
    ),
    "lab.chen2022.routing_exact.gaussian_self_sensitivity": Case(
        lambda w: {"x": _gates(w)},
        {"x": arrays(empty=(0, 1), extra=lambda a, kw: values(a[:, :1])(a, kw))},
    ),
    # ------------------------------------------------------------------ load balancing
    "lab.chen2022.load_balancing.switch_loss": Case(_balance, BALANCE),
    "lab.chen2022.load_balancing.importance_loss": Case(_balance, BALANCE),
    "lab.chen2022.load_balancing.no_loss": Case(_balance, BALANCE),
    "lab.chen2022.load_balancing.loss_and_gradient": Case(
        lambda w: {"name": ("none", "switch", "importance")[int(w.rng.integers(3))], **_balance(w)},
        {"name": choices("Switch"), **BALANCE},
    ),
    "lab.chen2022.load_balancing.router_terms": Case(
        lambda w: {"name": ("none", "switch", "importance")[int(w.rng.integers(3))], "coef": 0.1},
        {"name": choices("Switch"), "coef": reals(0.0)},
    ),
}

EXEMPT = {"lab.chen2022.routing_coupling.CouplingTerms": "the result of `coupling_terms`"}

__all__ = ["CASES", "EXEMPT", "NOISES"]
