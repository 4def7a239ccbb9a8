"""The linear CNN's best accuracy on Def. 3.1's data (Thm 4.1's setting, Table 7's "Linear" row).

The class. A linear CNN Σ_j a_j Σ_p (⟨w_j, x⁽ᵖ⁾⟩ + b_j) is f(x) = ⟨u, s⟩ + b with s = Σ_p x⁽ᵖ⁾,
u = Σ_j a_j w_j and b = P Σ_j a_j b_j, whatever its number of filters J: one vector u and one scalar b.
(3.1) has no bias (b = 0, "bias-free"); the remark after Theorem 4.1 writes σ(w_jᵀx + b_j) ("scalar bias").

Its accuracy, exactly. With u_k = ⟨u, v_k⟩, c_k = ⟨u, c_k⟩ and ξ = Σ_{p>3} ξ_p the sum of the P − 3
Gaussian patches, y·f(x) = α u_k + y(β c_k + b) + (yε) γ u_k' + y⟨u, ξ⟩. The noise patches are
N(0, σ_p²/d · I_d) (Def. 3.1; `lab.chen2022.data.sample` draws them so, isotropic, never projected out
of the signals' span), so ⟨u, ξ⟩ ~ N(0, (P − 3) σ_p² ‖u‖² / d) with the whole ‖u‖², its part along the
signals included, and y⟨u, ξ⟩ has the same law. The 2K signals are orthonormal (`make_signals`), so a u
in their span has ‖u‖² = Σ_k (u_k² + c_k²); a part of u outside the span only adds noise variance and
can never help, so the class is (u_k, c_k, b). Given (k, k', y, yε, α, β, γ) the prediction is right
with probability Φ(m / s), m the margin's mean and s the noise's standard deviation; the accuracy
averages it over k, k' ≠ k, y, yε (uniform) and α, β, γ (Gauss–Legendre, `nodes` per strength; the
integrand is smooth because s > 0). Only the ratio matters: (λu, λb) predicts as (u, b).

The search. No symmetry argument reduces the problem (the accuracy is not concave in u), so the optimum
is searched for, not proven: differential evolution over a box holding every direction (|u_k|, |c_k|
≤ 1, |b| ≤ α + β + γ at their upper ends, beyond which sign(f) = sign(b) but for the noise), with a
fixed seed and its own polish (L-BFGS-B), and local searches (L-BFGS-B) from many random starts,
from equal feature weights and, for the bias class, from the bias-free optimum. The result is the best
found, a lower bound on the class's optimum. `sampled_correct` checks a found (u, b) on `sample`'s data.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from lab.chen2022.data import DataConfig, UniformRange, make_signals, sample
from lab.core import validate

NODES = 12  # Gauss–Legendre nodes per strength (α, β, γ)
NOISE_MODELS = ("isotropic", "projected")  # Def. 3.1's noise patches, or projected off the signals

__all__ = [
    "NODES",
    "NOISE_MODELS",
    "LinearOptimum",
    "linear_accuracy",
    "noise_scale",
    "sampled_correct",
    "search_optimum",
]


@dataclass(frozen=True)
class LinearOptimum:
    """The best f = ⟨u, s⟩ + b found: exact accuracy, u's signal coordinates (‖u‖ = 1), b, and the search."""

    accuracy: float
    coords: np.ndarray  # (2K,): ⟨u, v_1⟩ … ⟨u, v_K⟩, ⟨u, c_1⟩ … ⟨u, c_K⟩
    bias: float
    evolution_accuracy: float  # the best differential evolution found (polished)
    local_accuracy: float  # the best of the local starts
    evaluations: int
    nodes: int  # Gauss–Legendre nodes per strength of every evaluation


def _coords(coords: object, config: DataConfig, name: str = "coords") -> np.ndarray:
    a = validate.array(coords, name, ndim=1, labels="(2K,)")
    validate.same_shape(name, a, (2 * config.K,), "(2K,) of the config")
    return a


def noise_scale(coords: np.ndarray, config: DataConfig, noise: str = "isotropic") -> float:
    """Standard deviation of ⟨u, Σ_{p>3} ξ_p⟩ for u in the signals' span (Def. 3.1's N(0, σ_p²/d · I_d)).

    "isotropic": (P − 3) σ_p² ‖u‖² / d, the whole u seen by the noise; "projected": 0, the noise of a
    generator that removes the signals' span from the noise patches (not Def. 3.1's; a control)."""
    validate.instance(config, "config", DataConfig)
    coords = _coords(coords, config)
    validate.choice(noise, "noise", NOISE_MODELS)
    if noise == "projected":
        return 0.0
    return float(np.sqrt((config.P - 3) * config.sigma_p**2 / config.d * np.sum(coords**2)))


@functools.cache
def _legendre(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes and weights on [−1, 1], computed once per count (an eigenproblem: it took a
    third of a search's time when solved for each evaluation); read-only."""
    x, w = np.polynomial.legendre.leggauss(nodes)
    x.flags.writeable = w.flags.writeable = False
    return x, w


def _nodes(law: UniformRange, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes and weights (summing to 1) of Uniform(low, high)."""
    x, w = _legendre(nodes)
    return law.low + (x + 1) * (law.high - law.low) / 2, w / 2


def linear_accuracy(
    coords: np.ndarray, config: DataConfig, bias: float = 0.0, nodes: int = NODES, noise: str = "isotropic"
) -> float:
    """P(y(⟨u, s⟩ + b) > 0) on Def. 3.1's data, by quadrature over α, β, γ (the module docstring).

    coords (2K,) finite: ⟨u, v_k⟩ then ⟨u, c_k⟩; bias b finite; nodes in [1, 256]; noise one of
    NOISE_MODELS. u = 0 with the noise gone predicts sign(b): right exactly when y b > 0."""
    validate.instance(config, "config", DataConfig)
    coords = _coords(coords, config)
    bias = validate.real(bias, "bias")
    nodes = validate.integer(nodes, "nodes", low=1, high=256)
    scale = noise_scale(coords, config, noise)
    K = config.K
    k, k2 = (a.ravel() for a in np.nonzero(~np.eye(K, dtype=bool)))
    feature, centre, other = coords[k], coords[K + k], coords[k2]  # (K(K − 1),) each
    (a, wa), (b, wb), (g, wg) = (_nodes(law, nodes) for law in (config.alpha, config.beta, config.gamma))
    signs = np.array([-1.0, 1.0])
    y, e = signs[:, None, None, None, None, None], signs[None, :, None, None, None, None]
    a, b, g = a[:, None, None], b[None, :, None], g[None, None, :]
    margin = feature[:, None, None, None] * a + y * (centre[:, None, None, None] * b + bias)
    margin = margin + e * other[:, None, None, None] * g  # (2, 2, K(K − 1), n_α, n_β, n_γ)
    right = special.ndtr(margin / scale) if scale > 0 else (margin > 0).astype(float)
    weight = wa[:, None, None] * wb[None, :, None] * wg[None, None, :]
    return float(np.sum(right * weight) / (4 * k.size))


def _box(config: DataConfig, with_bias: bool) -> list[tuple[float, float]]:
    """Every direction of (u, b): |u_k|, |c_k| ≤ 1 and |b| up to the largest |⟨u, s⟩| without noise."""
    reach = config.alpha.high + config.beta.high + config.gamma.high
    return [(-1.0, 1.0)] * (2 * config.K) + ([(-reach, reach)] if with_bias else [])


def search_optimum(
    config: DataConfig,
    with_bias: bool,
    seed: int,
    starts: int,
    popsize: int,
    maxiter: int,
    nodes: int = NODES,
    start: np.ndarray | None = None,
) -> LinearOptimum:
    """The best `linear_accuracy` found by differential evolution (seeded, polished) and L-BFGS-B from
    equal feature weights, `start` (coords, with b = 0 appended for the bias class) and `starts` random
    points in the box. seed in [0, 2**64); starts >= 0; popsize, maxiter >= 1."""
    validate.instance(config, "config", DataConfig)
    with_bias = validate.flag(with_bias, "with_bias")
    seed = validate.seed(seed)
    starts = validate.integer(starts, "starts", low=0)
    popsize = validate.integer(popsize, "popsize", low=1)
    maxiter = validate.integer(maxiter, "maxiter", low=1)
    nodes = validate.integer(nodes, "nodes", low=1, high=256)
    start = None if start is None else _coords(start, config, "start")
    K = config.K
    box = _box(config, with_bias)
    calls = [0]

    def loss(z: np.ndarray) -> float:
        calls[0] += 1
        bias = z[2 * K] if with_bias else 0.0
        return -linear_accuracy(z[: 2 * K], config, bias, nodes)

    evolved = optimize.differential_evolution(
        loss, box, seed=np.random.default_rng(seed), popsize=popsize, maxiter=maxiter, tol=1e-8, polish=True
    )
    rng = np.random.default_rng([seed, 1])
    low, high = np.array(box).T
    tail = np.zeros(len(box) - 2 * K)  # b = 0 for the bias class
    firsts = [np.concatenate([np.ones(K), np.zeros(K), tail])]
    if start is not None:
        firsts.append(np.concatenate([start, tail]))
    local = [
        optimize.minimize(loss, x0, method="L-BFGS-B", bounds=box)
        for x0 in [*firsts, *rng.uniform(low, high, size=(starts, len(box)))]
    ]
    best_local = min(local, key=lambda r: r.fun)
    z = min([evolved, best_local], key=lambda r: r.fun).x
    norm = np.linalg.norm(z[: 2 * K])
    z = z / norm if norm > 0 else z
    bias = float(z[2 * K]) if with_bias else 0.0
    return LinearOptimum(
        accuracy=linear_accuracy(z[: 2 * K], config, bias, nodes),
        coords=z[: 2 * K].copy(),
        bias=bias,
        evolution_accuracy=-float(evolved.fun),
        local_accuracy=-float(best_local.fun),
        evaluations=calls[0],
        nodes=nodes,
    )


def sampled_correct(
    coords: np.ndarray, config: DataConfig, bias: float, n: int, rng: np.random.Generator, chunk: int = 20_000
) -> int:
    """Right predictions of f = ⟨u, s⟩ + b on n samples of `sample` (full dimension d, fresh signals), u
    built from its signal coordinates; drawn in chunks of at most `chunk` samples (n, chunk >= 1)."""
    validate.instance(config, "config", DataConfig)
    coords = _coords(coords, config)
    bias = validate.real(bias, "bias")
    n = validate.integer(n, "n", low=1)
    validate.generator(rng)
    chunk = validate.integer(chunk, "chunk", low=1)
    signals = make_signals(config, rng)
    u = coords[: config.K] @ signals.V + coords[config.K :] @ signals.C
    right = 0
    for size in [chunk] * (n // chunk) + ([n % chunk] if n % chunk else []):
        data = sample(config, signals, size, rng)
        right += int(np.sum(data.y * (data.x.sum(axis=1) @ u + bias) > 0))
    return right
