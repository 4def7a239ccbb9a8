"""Substrate checks every other claim stands on: Def. 3.1 data (A1), exact gradients (A5), Lemma E.1 (B7).

Each check is a plain function returning a `Record`; the registered entries at the bottom
run the premise and the negative control of each at the requested tier.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from scipy import stats

from lab.chen2022 import data_views
from lab.chen2022.data import (
    CENTER,
    FEATURE,
    FEATURE_NOISE,
    DataConfig,
    Dataset,
    Signals,
    make_signals,
    sample,
)
from lab.chen2022.model import (
    MoEParams,
    expert_gradient,
    gate_values,
    logistic_loss,
    logistic_loss_derivative,
    perturbed_loss,
    perturbed_loss_gradients,
    routed_expert_outputs,
    router_logits,
)
from lab.core.descriptions import load_claims
from lab.core.records import Record, upper_bound_record
from lab.core.registry import register

DESCRIPTIONS = load_claims(Path(__file__).with_suffix(".toml"))  # what its claims say, as data

EPS = float(np.finfo(np.float64).eps)
LEVEL = 0.99


# ---------------------------------------------------------------- A1: Def. 3.1 data


def role_violations(data: Dataset, signals: Signals) -> int:
    """Samples breaking Def. 3.1's roles: feature yαv_k, centre βc_k, feature noise εγv_k', k' ≠ k."""
    rows = np.arange(data.n)
    expected = {
        FEATURE: (data.y * data.alpha)[:, None] * signals.V[data.cluster],
        CENTER: data.beta[:, None] * signals.C[data.cluster],
        FEATURE_NOISE: (data.eps * data.gamma)[:, None] * signals.V[data.noise_cluster],
    }
    bad = data.noise_cluster == data.cluster
    for role, want in expected.items():
        got = data.x[rows, data.positions[:, role]]
        bad |= np.abs(got - want).max(axis=1) > 1e-12 * (1.0 + np.abs(want).max(axis=1))
    return int(bad.sum())


def noise_patches(data: Dataset) -> np.ndarray:
    """The P − 3 Gaussian patches of every sample, flattened."""
    return data_views.noise_patches(data).ravel()


def check_data_roles(config: DataConfig, data: Dataset, signals: Signals, kind: str, key: str) -> Record:
    """A1: every sample carries exactly the three signal patches of Def. 3.1, with k' ≠ k."""
    gram = np.vstack([signals.V, signals.C])
    orth = float(np.abs(gram @ gram.T - np.eye(2 * config.K)).max())
    measured = role_violations(data, signals) + (orth > 1e-12)
    return upper_bound_record(
        claim="A1",
        key=key,
        statement="Def. 3.1: one patch each yαv_k, βc_k, εγv_k' (k' ≠ k); 2K orthonormal signals",
        kind=kind,
        params={"n": data.n, "K": config.K, "P": config.P, "d": config.d, "orthonormality_error": orth},
        measured=measured,
        bound=0,
        note="measured = samples breaking a role (+1 if the signals are not orthonormal)",
    )


def check_noise_variance(config: DataConfig, data: Dataset, kind: str, key: str) -> Record:
    """A1: Gaussian patches have per-coordinate variance σ_p²/d (chi-square interval, n stated)."""
    z = noise_patches(data)
    dof = z.size
    s2 = float(np.mean(z**2))
    lo = s2 * dof / stats.chi2.ppf(0.5 + LEVEL / 2, dof)
    hi = s2 * dof / stats.chi2.ppf(0.5 - LEVEL / 2, dof)
    target = config.sigma_p**2 / config.d
    return Record(
        claim="A1",
        key=key,
        statement="Def. 3.1: the P−3 noise patches are N(0, σ_p²/d · I)",
        kind=kind,
        params={"coordinates": dof, "sigma_p": config.sigma_p, "d": config.d, "level": LEVEL},
        measured=s2,
        bound=target,
        ci=(lo, hi),
        verdict="holds" if lo <= target <= hi else "violated",
        rule="equal",
        note="CI: chi-square interval for the variance of zero-mean Gaussian coordinates",
    )


def sample_with_independent_noise_cluster(config, signals, n, rng) -> Dataset:
    """Mutated sampler (negative control): k' drawn independently of k, so k' = k happens."""
    data = sample(config, signals, n, rng)
    k_noise = rng.integers(0, config.K, size=n)
    x = data.x.copy()
    x[np.arange(n), data.positions[:, FEATURE_NOISE]] = (data.eps * data.gamma)[:, None] * signals.V[k_noise]
    return dataclasses.replace(data, x=x, noise_cluster=k_noise)


def with_unscaled_noise(data: Dataset) -> Dataset:
    """Mutated sample (negative control): noise patches N(0, σ_p² I) instead of N(0, σ_p²/d · I)."""
    x = data.x.copy()
    x[data_views.noise_mask(data)] *= np.sqrt(data.x.shape[2])
    return dataclasses.replace(data, x=x)


def sample_with_unscaled_noise(config, signals, n, rng) -> Dataset:
    """Mutated sampler (negative control): `with_unscaled_noise` of a fresh sample."""
    return with_unscaled_noise(sample(config, signals, n, rng))


@register("A1", name="checks.substrate.verify_data")
def verify_data(seed: int, tier: str) -> list[Record]:
    """A1 premise runs on setting 1 and a one-hot K=3, P=5 variant, and two mutated samplers."""
    rng = np.random.default_rng(seed)
    n = 4000 if tier == "quick" else 64000
    records = []
    for config in (DataConfig(), DataConfig(K=3, P=5, d=17, sigma_p=2.0, signals="one-hot")):
        signals = make_signals(config, rng)
        data = sample(config, signals, n, rng)
        records += [
            check_data_roles(config, data, signals, "premise", f"roles-{config.signals}"),
            check_noise_variance(config, data, "premise", f"noise-{config.signals}"),
        ]
    config = DataConfig()
    signals = make_signals(config, rng)
    records.append(
        check_data_roles(
            config,
            sample_with_independent_noise_cluster(config, signals, n, rng),
            signals,
            "negative-control",
            "control-independent-noise-cluster",
        )
    )
    unscaled = sample_with_unscaled_noise(config, signals, n, rng)
    records.append(check_noise_variance(config, unscaled, "negative-control", "control-unscaled-noise"))
    return records


# ---------------------------------------------------------------- A5: exact gradients


def routed_gate_values(x, Theta, routes) -> np.ndarray:
    """π_{m_i}(x_i): each sample's gate value at its routed expert."""
    return np.take_along_axis(gate_values(router_logits(x, Theta)), routes[:, None], axis=1)[:, 0]


def complex_step_gradient(loss, point: np.ndarray, step: float = 1e-30) -> np.ndarray:
    """∂loss/∂point by complex step, Im loss(point + i·h·e_k)/h: exact to rounding, no cancellation."""
    grad = np.empty(point.shape)
    flat = point.astype(complex).ravel()
    for k in range(flat.size):
        flat[k] += 1j * step
        grad.flat[k] = np.imag(loss(flat.reshape(point.shape))) / step
        flat[k] -= 1j * step
    return grad


def _problem(rng: np.random.Generator, n: int, M: int, J: int, scale: float, theta_scale: float):
    config = DataConfig(K=3, P=4, d=8)
    data = sample(config, make_signals(config, rng), n, rng)
    params = MoEParams(
        Theta=rng.normal(0, theta_scale, (config.d, M)), W=rng.normal(0, scale, (M, J, config.d))
    )
    routes = rng.integers(0, M, n)
    return data, params, routes


def check_gradients(rng, *, scale: float, act: str, backend: str, mutate: str | None = None) -> Record:
    """A5: (E.1) and (E.2) equal complex-step derivatives of (3.3) at fixed routes."""
    data, params, routes = _problem(rng, n=40, M=3, J=2, scale=scale, theta_scale=0.5)
    x, y = data.x, data.y
    g_theta, g_w = perturbed_loss_gradients(x, y, params, routes, act, backend=backend)
    if mutate == "drop-gate-factor":  # (E.2) without the gate value π_m: the classic slip
        pi_routed = routed_gate_values(x, params.Theta, routes)
        lp = logistic_loss_derivative(y * pi_routed * routed_expert_outputs(x, params.W, routes, act))
        g_w = expert_gradient(x, params.W, routes, lp * y / x.shape[0], act)
    elif mutate is not None:
        raise ValueError(f"mutate must be None or 'drop-gate-factor', got {mutate!r}")
    cs_theta = complex_step_gradient(
        lambda T: perturbed_loss(x, y, MoEParams(T, params.W), routes, act), params.Theta
    )
    cs_w = complex_step_gradient(
        lambda W: perturbed_loss(x, y, MoEParams(params.Theta, W), routes, act), params.W
    )
    err = max(
        np.abs(g_theta - cs_theta).max() / np.abs(cs_theta).max(),
        np.abs(g_w - cs_w).max() / np.abs(cs_w).max(),
    )
    return upper_bound_record(
        claim="A5",
        key=f"control-{mutate}" if mutate else f"{act}-{backend}-sigma{scale}",
        statement="(E.1), (E.2) are the exact gradients of the perturbed loss (3.3) (vs complex step)",
        kind="negative-control" if mutate else "premise",
        params={"sigma0": scale, "activation": act, "backend": backend, "mutation": mutate, "n": 40, "M": 3},
        measured=err,
        bound=1e-9,
        note="bound 1e-9 relative to the largest derivative: far above rounding (~1e-15), below any slip",
    )


@register("A5", name="checks.substrate.verify_gradients", training_kernels=True)
def verify_gradients(seed: int, tier: str) -> list[Record]:
    """A5 at initialization scale σ0 = 1e-3 and at a generic point; one mutated gradient."""
    rng = np.random.default_rng(seed)
    records = [
        check_gradients(rng, scale=scale, act=act, backend=backend)
        for scale in (1e-3, 0.7)
        for act, backend in (("cubic", "numpy"), ("cubic", "numba"), ("gelu", "numpy"))
    ]
    records.append(check_gradients(rng, scale=0.7, act="cubic", backend="numpy", mutate="drop-gate-factor"))
    return records


# ---------------------------------------------------------------- B7: Lemma E.1 at a point


def sigmoid_gate_loss(x, y, Theta, W, routes, act):
    """Perturbed loss (3.3) with per-expert sigmoid gates 1/(1 + e^{−h_m}): not shift-invariant."""
    h = router_logits(x, Theta)
    gate = 1.0 / (1.0 + np.exp(-np.take_along_axis(h, routes[:, None], axis=1)[:, 0]))
    return logistic_loss(y * gate * routed_expert_outputs(x, W, routes, act)).mean()


def check_router_sum(rng, *, gate: str = "softmax", mutate: str | None = None, n: int = 200) -> Record:
    """B7 (Lemma E.1): Σ_m ∇θ_m L⁽ᵗ⁾ = 0, relative to ‖∇Θ L⁽ᵗ⁾‖, at a random point and routes."""
    M = 4
    data, params, routes = _problem(rng, n=n, M=M, J=3, scale=0.5, theta_scale=1.0)
    x, y = data.x, data.y
    if gate == "sigmoid":
        g_theta = complex_step_gradient(
            lambda T: sigmoid_gate_loss(x, y, T, params.W, routes, "cubic"), params.Theta
        )
    elif gate == "softmax":
        g_theta, _ = perturbed_loss_gradients(x, y, params, routes, "cubic", backend="numpy")
    else:
        raise ValueError(f"gate must be 'softmax' or 'sigmoid', got {gate!r}")
    if mutate == "drop-softmax-term":  # (E.1) without −π_m: only the routed expert's term
        pi = gate_values(router_logits(x, params.Theta))
        g_theta = g_theta + router_softmax_term(x, y, params, routes, pi)
    elif mutate is not None:
        raise ValueError(f"mutate must be None or 'drop-softmax-term', got {mutate!r}")
    measured = float(np.linalg.norm(g_theta.sum(axis=1)) / np.linalg.norm(g_theta))
    return upper_bound_record(
        claim="B7",
        key=f"point-{mutate}" if mutate else f"point-{gate}",
        statement="Lemma E.1: Σ_m ∇θ_m L⁽ᵗ⁾ = 0 (router gradients sum to zero)",
        kind="premise" if gate == "softmax" and mutate is None else "negative-control",
        params={"gate": gate, "mutation": mutate, "n": n, "M": M},
        measured=measured,
        bound=64 * M * EPS,
        note="‖Σ_m ∇θ_m‖ / ‖∇Θ‖; bound: rounding level 64·M·eps",
    )


def router_softmax_term(x, y, params: MoEParams, routes, pi) -> np.ndarray:
    """Second sum of (E.1): (1/n) Σ_i ℓ'_i π_{m_i} y_i f_{m_i} π_m Σ_p x_i⁽ᵖ⁾; adding it mutates (E.1)."""
    f = routed_expert_outputs(x, params.W, routes, "cubic")
    pi_routed = routed_gate_values(x, params.Theta, routes)
    common = logistic_loss_derivative(y * pi_routed * f) * y * pi_routed * f / x.shape[0]
    return x.sum(axis=1).T @ (common[:, None] * pi)


@register("B7", name="checks.substrate.verify_router_sum")
def verify_router_sum(seed: int, tier: str) -> list[Record]:
    """B7 at a random point: the premise and two negative controls (sigmoid gates, mutated E.1)."""
    rng = np.random.default_rng(seed)
    return [
        check_router_sum(rng),
        check_router_sum(rng, gate="sigmoid"),
        check_router_sum(rng, mutate="drop-softmax-term"),
    ]
