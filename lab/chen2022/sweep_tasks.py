"""The science of the lab's sweep tasks (declared with their defaults in `lab.chen2022.declarations`).

`routing_probability` (Lemma 5.1): Monte-Carlo p_1(h) with a Clopper–Pearson interval beside the
exact value where one exists.

`routing_tightness` (Lemma 5.1 / C.1; claims B4-B6, B10): the best constant c found for
|p_m(h) − p_m(ĥ)| ≤ c‖h − ĥ‖∞ by `lab.chen2022.routing_tightness.search_constant` (L-BFGS-B on the exact
Jacobian from `starts` starts), in units of κ, beside the paper's κM², the lab's proven 2κ and the
known L*. Verdicts come from an explicit pair (h, ĥ): a bound B is "violated" when that pair has
‖p(h) − p(ĥ)‖∞ > B‖h − ĥ‖∞ + ROUND_OFF with exact p, and "holds" when the search found no such pair.

`floor_attainment` (Theorem 4.1 and its ω/8 extension; claims B1, B2): the Monte-Carlo test error
of one patch-additive model F(x) = Σ_p f(x⁽ᵖ⁾) from `lab.chen2022.patchwise` with a Clopper–Pearson
interval, beside the orbit floor ω/8 (1/8 when D_α = D_γ). The floor is "attained" when the
interval contains it, and "violated" when the interval lies below it.

Each function takes the task's params with its defaults filled in.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from lab.chen2022.data import DataConfig, UniformRange, make_signals, sample, setting
from lab.chen2022.patch_functions import PatchFunction
from lab.chen2022.patchwise import (
    PatchAdditive,
    attaining_witness,
    enumerated_error,
    error_rate,
    feature_sum,
    orbit_floor,
    overlap_mass,
    relu_witness,
    search_aligned_lookup,
)
from lab.chen2022.routing import Gaussian, Gumbel, Noise, Uniform, routing_jacobian, routing_probabilities
from lab.chen2022.routing_exact import GAUSSIAN_TOL
from lab.chen2022.routing_tightness import exact_constant, proven_constant, search_constant
from lab.core.stats import clopper_pearson
from lab.kernels import routed as kernels

NOISES: dict[str, Callable[[float], Noise]] = {
    "uniform": lambda scale: Uniform(0.0, scale),
    "gaussian": Gaussian,
    "gumbel": Gumbel,
}
ROUND_OFF = 4.0 * GAUSSIAN_TOL  # absolute error allowed on ‖p(h) − p(ĥ)‖∞: 2·GAUSSIAN_TOL on each p
WITNESS_STEP = 1e-6  # ‖ĥ − h‖∞ of the witness pair, in noise scales

MODELS = ("witness", "relu-cnn", "lookup-search", "linear-cnn")


# ---------------------------------------------------------------- validation


def _int(params: dict[str, Any], name: str, least: int) -> int:
    value = params[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    return value


def _real(params: dict[str, Any], name: str, low: float, high: float = math.inf) -> float:
    """A finite real in (low, high) (open at both ends)."""
    value = params[name]
    if isinstance(value, bool) or not isinstance(value, int | float) or not low < value < high:
        raise ValueError(f"{name} must be a real number in ({low:g}, {high:g}), got {value!r}")
    return float(value)


def _choice(params: dict[str, Any], name: str, allowed: tuple[str, ...]) -> str:
    if params[name] not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {params[name]!r}")
    return params[name]


def _range(params: dict[str, Any], name: str, default: UniformRange) -> UniformRange:
    """[low, high] with 0 < low < high from the params, or the setting's range when absent (None)."""
    value = params[name]
    if value is None:
        return default
    if (
        not isinstance(value, list)
        or len(value) != 2
        or any(isinstance(v, bool) or not isinstance(v, int | float) for v in value)
        or not 0 < value[0] < value[1] < math.inf
    ):
        raise ValueError(f"{name} must be [low, high] with 0 < low < high (or absent), got {value!r}")
    return UniformRange(float(value[0]), float(value[1]))


# ---------------------------------------------------------------- routing-probability (Lemma 5.1)


def exact_win_probability(M: int, gap: float, noise: str, a: float, b: float) -> float | None:
    """p_1(h) of Lemma 5.1 for h = (gap, 0, ..., 0): exact for uniform and Gumbel noise, else None."""
    if noise == "uniform":
        g = min(gap / (b - a), 1.0)  # P(max of M-1 uniforms < U + g), U uniform on [0, 1)
        return 1.0 if g >= 1.0 else (1.0 - g**M) / M + g
    if noise == "gumbel":
        return 1.0 / (1.0 + (M - 1) * math.exp(-gap / a))  # Gumbel-max: softmax(h / a)
    return None


def routing_probability(params: dict[str, Any]) -> dict[str, Any]:
    """Monte-Carlo p_1(h) = P(argmax_m {h_m + r_m} = 1) (Lemma 5.1) with a 99 % Clopper–Pearson CI."""
    M, gap, noise, draws = params["M"], float(params["gap"]), params["noise"], params["draws"]
    a, b = float(params["a"]), float(params["b"])
    if not isinstance(M, int) or M < 2:
        raise ValueError(f"M must be an integer >= 2, got {M!r}")
    if not isinstance(draws, int) or draws < 1:
        raise ValueError(f"draws must be an integer >= 1, got {draws!r}")
    if noise not in kernels.NOISE_CODES:
        raise ValueError(f"noise must be one of {sorted(kernels.NOISE_CODES)}, got {noise!r}")
    if not (b > a if noise == "uniform" else a > 0):
        raise ValueError(f"noise scale: need b > a (uniform) or a > 0, got a={a}, b={b}")
    h = np.zeros(M)
    h[0] = gap
    counts = kernels.routing_counts(h, draws, params["seed"], kernels.NOISE_CODES[noise], a, b)
    wins = int(counts[0])
    lo, hi = clopper_pearson(wins, draws)
    exact = exact_win_probability(M, gap, noise, a, b)
    return {
        "p1": wins / draws,
        "ci": [lo, hi],
        "exact": exact,
        "covered": None if exact is None else lo <= exact <= hi,
        "counts": counts.tolist(),
    }


# ---------------------------------------------------------------- routing-tightness (Lemma 5.1)


def witness_pair(h: np.ndarray, noise: Noise) -> tuple[np.ndarray, np.ndarray, float]:
    """(h, ĥ, ‖p(h) − p(ĥ)‖∞) with ĥ = h + ε·sign(∇p_m(h)) for the row m of largest ‖∇p_m‖₁ (Lemma 5.1).

    A concrete pair: its ratio ‖Δp‖∞/‖Δh‖∞ is a lower bound on the smallest valid constant L*,
    within O(ε) of the local constant at h; ε = WITNESS_STEP noise scales.
    """
    jacobian = routing_jacobian(h, noise)
    m = int(np.argmax(np.abs(jacobian).sum(axis=1)))
    h_hat = h + WITNESS_STEP * noise.spread * np.sign(jacobian[m])
    p = routing_probabilities(np.stack([h, h_hat]), noise)
    return h, h_hat, float(np.abs(p[0] - p[1]).max())


def _bound_verdict(change: float, step: float, constant: float) -> str:
    """'violated' iff the pair breaks ‖Δp‖∞ ≤ constant·‖Δh‖∞ by more than ROUND_OFF."""
    return "violated" if change > constant * step + ROUND_OFF else "holds"


def routing_tightness(params: dict[str, Any]) -> dict[str, Any]:
    """Best constant c of Lemma 5.1 found by the search, /κ, beside κM², 2κ and L*; the bound c·κ tested."""
    name = _choice(params, "noise", tuple(NOISES))
    noise = NOISES[name](_real(params, "scale", 0.0))
    M = _int(params, "M", 2)
    starts = _int(params, "starts", 1)
    seed = _int(params, "seed", 0)
    c = _real(params, "c", 0.0)
    kappa = noise.kappa
    search = search_constant(noise, M, starts, seed)
    h, h_hat, change = witness_pair(search.h, noise)
    step = float(np.abs(h_hat - h).max())
    exact = exact_constant(noise, M)
    bounds = {"tested": c * kappa, "paper": kappa * M**2, "lab": proven_constant(noise)}
    return {
        "noise": name,
        "scale": noise.spread,
        "M": M,
        "starts": starts,
        "seed": seed,
        "c": c,
        "kappa": kappa,
        "best_constant": search.constant,
        "best_over_kappa": search.constant / kappa,
        "witness_over_kappa": change / step / kappa,
        "exact_over_kappa": None if exact is None else exact / kappa,
        "shortfall": None if exact is None else 1.0 - search.constant / exact,
        "paper_bound": bounds["paper"],
        "lab_bound": bounds["lab"],
        "tested_bound": bounds["tested"],
        "slack_paper": bounds["paper"] / search.constant,
        "slack_lab": bounds["lab"] / search.constant,
        "verdict_paper": _bound_verdict(change, step, bounds["paper"]),
        "verdict_lab": _bound_verdict(change, step, bounds["lab"]),
        "verdict_tested": _bound_verdict(change, step, bounds["tested"]),
        "tested_violated": _bound_verdict(change, step, bounds["tested"]) == "violated",
        "evaluations": search.evaluations,
        "h": h,
        "h_hat": h_hat,
    }


# ---------------------------------------------------------------- floor-attainment (Theorem 4.1)


def _data_config(params: dict[str, Any]) -> DataConfig:
    """The setting (1-4) with α, β, γ replaced where the params give a range."""
    number = params["setting"]
    if isinstance(number, bool) or number not in (1, 2, 3, 4):
        raise ValueError(f"setting must be one of 1, 2, 3, 4, got {number!r}")
    base = setting(number)
    return replace(
        base,
        alpha=_range(params, "alpha", base.alpha),
        beta=_range(params, "beta", base.beta),
        gamma=_range(params, "gamma", base.gamma),
    )


def search_edges(config: DataConfig) -> np.ndarray:
    """Bin edges of the lookup search: 0, ±the ends of supp α and supp γ, ±the thirds of their overlap I."""
    low, high = max(config.alpha.low, config.gamma.low), min(config.alpha.high, config.gamma.high)
    ends = [config.alpha.low, config.alpha.high, config.gamma.low, config.gamma.high]
    thirds = [low + (high - low) * j / 3 for j in (1, 2)] if high > low else []
    return np.unique([0.0, *(s * e for s in (-1.0, 1.0) for e in ends + thirds)])


def _model(
    params: dict[str, Any], config: DataConfig, signals, rng: np.random.Generator
) -> tuple[PatchFunction, dict[str, Any]]:
    """The per-patch f of the chosen model (params already validated), and what to record about it."""
    model = params["model"]
    if model == "witness":
        return attaining_witness(config, signals), {}
    if model == "relu-cnn":
        f = relu_witness(config, signals, float(params["ramp"]))
        return f, {"filters": f.W.shape[0]}
    if model == "linear-cnn":
        f = feature_sum(signals)
        return f, {"filters": f.W.shape[0]}
    edges = search_edges(config)
    train = sample(config, signals, params["n"], rng)  # drawn after the test set, never overlapping it
    f = search_aligned_lookup(train, signals, edges, rng, restarts=params["restarts"])
    return f, {"edges": edges, "table": f.table, "train_error": error_rate(PatchAdditive(f), train).rate}


def floor_attainment(params: dict[str, Any]) -> dict[str, Any]:
    """Test error of one patch-additive model (Theorem 4.1) with a Clopper–Pearson CI beside the floor ω/8."""
    config = _data_config(params)
    model = _choice(params, "model", MODELS)
    n = _int(params, "n", 1)
    level = _real(params, "level", 0.0, 1.0)
    seed = _int(params, "seed", 0)
    _real(params, "ramp", 0.0, 1.0)
    _int(params, "restarts", 1)
    omega = overlap_mass(config.alpha, config.gamma)
    floor = orbit_floor(config.alpha, config.gamma)
    tested = floor if params["floor"] is None else params["floor"]
    if isinstance(tested, bool) or not isinstance(tested, int | float) or not 0.0 <= tested <= 1.0:
        raise ValueError(f"floor must be a number in [0, 1] (or absent for ω/8), got {tested!r}")
    rng = np.random.default_rng(seed)
    signals = make_signals(config, rng)
    data = sample(config, signals, n, rng)  # the test set: the same for every model at this seed
    f, about = _model(params, config, signals, rng)
    F = PatchAdditive(f)
    estimate = error_rate(F, data, level)
    lo, hi = estimate.ci
    exact = (
        enumerated_error(F, config, signals) if model == "witness" and config.alpha == config.gamma else None
    )
    return {
        "setting": params["setting"],
        "alpha": [config.alpha.low, config.alpha.high],
        "beta": [config.beta.low, config.beta.high],
        "gamma": [config.gamma.low, config.gamma.high],
        "sigma_p": config.sigma_p,
        "model": model,
        "describe": f.describe(),
        "seed": seed,
        "n": n,
        "level": level,
        "errors": estimate.errors,
        "error": estimate.rate,
        "ci": [lo, hi],
        "ci_low": lo,
        "ci_high": hi,
        "exact_error": exact,
        "omega": omega,
        "orbit_floor": floor,
        "floor": tested,
        "attained": bool(lo <= tested <= hi),
        "floor_verdict": "violated" if hi < tested else "holds",
        **about,
    }
