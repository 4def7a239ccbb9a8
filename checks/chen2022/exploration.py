"""Lemma E.4 (Chen et al. 2022, App. E; B10): routing stays near uniform in the exploration stage.

Along Algorithm 1 from Θ⁽⁰⁾ = 0 the gating outputs h stay small, so p(h) stays close to 1/M:
max_m |p_m − 1/M| ≤ M²‖h‖∞. Probabilities are exact (`lab.chen2022.routing`); the routers, the
mutated routers and the round-off allowance are those of `checks.chen2022.routing_smoothness`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from checks.chen2022.routing_smoothness import (
    PAPER_NOISE,
    ROUND_OFF,
    Router,
    exact_router,
    mixed_uniform_router,
    plain_argmax,
)
from lab.chen2022.data import make_signals, sample, setting
from lab.chen2022.model import MoEParams, init_params, perturbed_loss_gradients, router_logits
from lab.chen2022.proof_monitors import exploration_end
from lab.chen2022.routing import routing_probabilities
from lab.core.descriptions import load_claims, load_findings
from lab.core.records import Record, upper_bound_record
from lab.core.registry import register
from lab.kernels import routed as kernels

DESCRIPTIONS = load_claims(Path(__file__).with_suffix(".toml"))  # what its claims say, as data
FINDINGS = load_findings(Path(__file__).with_suffix(".findings.toml"))  # where the paper and the lab part

EXPLORATION = {"M": 8, "J": 4, "sigma0": 0.2, "eta": 0.01}  # η_r = M²η (Theorem 4.2)


def exploration_run(seed: int, steps: int, n: int) -> np.ndarray:
    """Gating outputs h(x_i; Θ⁽ᵗ⁾), shape (steps + 1, n, M), along Algorithm 1 on setting 1.

    Θ⁽⁰⁾ = 0, W⁽⁰⁾ ~ N(0, σ0²); experts by normalized GD (3.4) with step η, the router by GD
    (3.5) with η_r = M²η (Theorem 4.2); fresh Unif[0, 1] routing noise each step (the kernel).
    """
    M, J, sigma0, eta = (EXPLORATION[k] for k in ("M", "J", "sigma0", "eta"))
    rng = np.random.default_rng(seed)
    config = setting(1)
    data = sample(config, make_signals(config, rng), n, rng)
    params = init_params(M, J, config.d, sigma0, rng)
    code, a, b = PAPER_NOISE.kernel_args()
    history = [router_logits(data.x, params.Theta)]
    for _ in range(steps):
        routes = kernels.perturbed_argmax(history[-1], int(rng.integers(2**62)), code, a, b)
        grad_theta, grad_w = perturbed_loss_gradients(data.x, data.y, params, routes, backend="numpy")
        norms = np.linalg.norm(grad_w.reshape(M, -1), axis=1)
        step = np.divide(eta, norms, out=np.zeros(M), where=norms > 0)
        params = MoEParams(params.Theta - M**2 * eta * grad_theta, params.W - step[:, None, None] * grad_w)
        history.append(router_logits(data.x, params.Theta))
    return np.stack(history)


def uniformity_ratios(router: Router, history: np.ndarray, kappa: float) -> tuple[float, float, float]:
    """Over a run: max dev/(M²‖h‖∞ + round-off), max dev/(κ(max h − min h) + round-off), max dev."""
    h = history.reshape(-1, history.shape[-1])
    M = h.shape[1]
    dev = np.abs(router(h) - 1.0 / M).max(axis=1)
    paper = dev / (M**2 * np.abs(h).max(axis=1) + ROUND_OFF)
    sharp = dev / (kappa * (h.max(axis=1) - h.min(axis=1)) + ROUND_OFF)
    return float(paper.max()), float(sharp.max()), float(dev.max())


@register("B10", name="checks.routing_smoothness.verify_exploration")
def verify_exploration(seed: int, tier: str) -> list[Record]:
    """B10: max_m |P(m_{i,t} = m) − 1/M| ≤ M²‖h‖∞ along the exploration stage of a run."""
    steps, n = (40, 200) if tier == "quick" else (400, 1000)
    history = exploration_run(seed, steps, n)
    M, sigma0, eta = EXPLORATION["M"], EXPLORATION["sigma0"], EXPLORATION["eta"]
    T1 = exploration_end(sigma0, eta)  # end of the exploration stage (App. E.1)
    params = {
        "steps": steps,
        "n": n,
        **EXPLORATION,
        "eta_r": M**2 * eta,
        "setting": 1,
        "d": setting(1).d,
        "noise": repr(PAPER_NOISE),
        "seed": seed,
    }
    last = min(T1, steps)  # the run may stop before the stage ends
    stage = {
        "T1": T1,
        "sigma0^1.5": sigma0**1.5,
        "last_step_in_stage": last,
        "max_h_inf_in_stage": float(np.abs(history[: last + 1]).max()),
    }
    checkpoints = sorted({0, 1, steps // 4, steps // 2, steps})
    trajectory = {
        str(t): {
            "max_h_inf": float(np.abs(history[t]).max()),
            "max_deviation": float(np.abs(routing_probabilities(history[t], PAPER_NOISE) - 1 / M).max()),
        }
        for t in checkpoints
    }
    paper, sharp, dev = uniformity_ratios(exact_router(PAPER_NOISE), history, PAPER_NOISE.kappa)
    records = [
        upper_bound_record(
            claim="B10",
            key="lemma-e4",
            statement="Lemma E.4's proof step (Lemma 5.1 at ĥ = 0): max_m |p_m − 1/M| ≤ M²‖h‖∞ along the run",
            kind="premise",
            params=params,
            measured=paper,
            bound=1.0,
            note="measured = max over steps and samples of dev / (M²‖h‖∞ + round-off)",
            extra={"max_deviation": dev, "trajectory": trajectory, "exploration_stage": stage},
        ),
        upper_bound_record(
            claim="B10",
            key="sharpened",
            statement="sharpened: max_m |p_m − 1/M| ≤ κ(max h − min h) along the run",
            kind="premise",
            params=params,
            measured=sharp,
            bound=1.0,
            note="p(c·1) = 1/M and ‖h − c·1‖∞ = (max h − min h)/2 at the midrange c, then the 2κ bound",
        ),
    ]
    for key, label, router in (
        ("control-plain-argmax", "plain argmax (no noise)", plain_argmax),
        ("control-mixed-uniform", "r_0 ~ Unif[0, 1/2]", mixed_uniform_router(0.5)),
    ):
        paper, _, dev = uniformity_ratios(router, history, PAPER_NOISE.kappa)
        records.append(
            upper_bound_record(
                claim="B10",
                key=key,
                statement=f"Lemma E.4 along the same run under {label}",
                kind="negative-control",
                params={**params, "router": label},
                measured=paper,
                bound=1.0,
                extra={"max_deviation": dev},
            )
        )
    return records
