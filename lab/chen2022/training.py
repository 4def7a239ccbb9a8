"""Algorithm 1 of Chen et al. 2022 (Sec. 3.3) and the authors' coded departures from it, as options.

The stated model (variant "paper"): F(x) = π_{m_x}(x) f_{m_x}(x) with π = softmax(h), h = Θᵀ Σ_p x⁽ᵖ⁾,
f_m of (3.1) without bias, logistic loss on y F, W⁽⁰⁾ ~ N(0, σ0²), Θ⁽⁰⁾ = 0, a fresh Unif[0,1]
routing noise every step, experts by normalized GD (3.4), router by GD (3.5), full batch.

Every departure of the authors' code (REFERENCE_CODE.md) is one switch of `TrainConfig`, so they
can be turned on one at a time; `variant_config("reference-code")` turns all of them on:

    input_scale=10      inputs multiplied by 10
    bias=True           a bias per filter (carried as an extra input coordinate equal to 1)
    readout="two-logit" filters 0..J/2-1 feed logit 0, J/2..J-1 feed logit 1; f = logit1 − logit0
    loss="double-softmax-ce"  cross-entropy of softmax(logits) fed through a second softmax:
                        with two logits this is ℓ(y·tanh(F/2)) exactly (floor log(1 + e⁻¹))
    gate="noisy-logit"  gate value h_m + r_m of the chosen expert instead of π_m
    init="uniform"      W⁽⁰⁾ ~ U(±init_bound) instead of N(0, σ0²)
    normalization="sum-of-norms"  expert step divided by ‖∇W_m‖ + ‖∇b_m‖ instead of ‖∇(W_m, b_m)‖_F
    early_stopping=True loss-based stopping (rise of 0.02 above the minimum, or stuck at the floor)
    test_noise=True     the reported test accuracy routes with noise

Ablations and controls: expert_update="gd" (plain GD, Table 11), same_init (one W⁽⁰⁾ copied to every
expert, Table 10), load_balancing="switch"/"importance" with lb_coef (Tables 10–11), gate="sigmoid"
(per-expert sigmoid gates: not shift-invariant, a negative control for Lemma E.1).

`TrainConfig` is the validated, user-facing configuration (and the key of cached runs). A run
resolves it once, with `lab.chen2022.plan.resolve`, into a `Plan` of the objects that do the work;
`algorithm1_step` and the evaluation take that plan and test no option again.

Linear experts: f_m = ⟨Σ_j a_j w_{m,j}, s⟩ with s = Σ_p x⁽ᵖ⁾ when σ is the identity, so `prepare`
collapses the patches to s (exact, and P·J times cheaper than the patch kernels).

structured=True keeps the experts' input as Def. 3.1's structure (`lab.chen2022.structured`): three
patches per sample are a scalar times a signal, so only the P − 3 noise patches need the dense
kernels. The numbers agree with the dense path to rounding, not bit for bit; the default is dense.
Linear experts keep their collapse to s under either arithmetic: one d-vector per sample is already
less work than the structure's signal products plus a noise patch.

dtype="float32" runs the experts' arithmetic in single precision, as the authors' code does: their
inputs, filters, kernels and update. The router (its d × M parameters and its input s), the loss and
the metrics stay float64. The default is float64; verify and the theory checks never change it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from lab.chen2022 import load_balancing, structured
from lab.chen2022.data import Dataset, Signals, structure
from lab.chen2022.metrics import accuracy, dispatch_counts, dispatch_entropy, signal_alignment
from lab.chen2022.plan import (
    EXPERT_UPDATES,
    GATES,
    LOSSES,
    NORMALIZATIONS,
    READOUTS,
    Batch,
    Plan,
    StepOutput,
    resolve,
)
from lab.core import validate
from lab.core.errors import InputError
from lab.core.progress import Progress
from lab.kernels import BACKENDS
from lab.kernels.activations import activation

INITS = ("gaussian", "uniform")
DTYPES = ("float64", "float32")


@dataclass(frozen=True)
class TrainConfig:
    """Every knob of Algorithm 1 and of the authors' departures from it, with the lab's defaults.

    Defaults are the stated model with the learning rates of App. A.2 (η = 0.001, η_r = 0.1),
    σ0 = 0.01 and T = 1500 steps (see README: how these were chosen and what they reach).
    """

    M: int = 8
    J: int = 16
    activation: str = "cubic"
    eta: float = 0.001
    eta_r: float = 0.1
    sigma0: float = 0.01
    steps: int = 1500
    expert_update: str = "normalized"
    normalization: str = "frobenius"
    gate: str = "softmax"
    loss: str = "logistic"
    readout: str = "sum"
    bias: bool = False
    input_scale: float = 1.0
    init: str = "gaussian"
    init_bound: float = 1.414e-4
    same_init: bool = False
    early_stopping: bool = False
    stop_rise: float = 0.02
    test_noise: bool = False
    load_balancing: str = "none"
    lb_coef: float = 0.0
    record_every: int = 10
    backend: str = "numba"
    structured: bool = False
    dtype: str = "float64"

    def __post_init__(self) -> None:
        for name in ("M", "J", "steps", "record_every"):
            validate.integer(getattr(self, name), name, low=1)
        for name in ("eta", "eta_r", "sigma0", "input_scale", "init_bound", "stop_rise"):
            validate.real(getattr(self, name), name, low=0.0, low_open=True)
        validate.real(self.lb_coef, "lb_coef", low=0.0)
        activation(self.activation)
        for name, allowed in (
            ("gate", tuple(GATES)),
            ("loss", tuple(LOSSES)),
            ("readout", READOUTS),
            ("init", INITS),
            ("expert_update", EXPERT_UPDATES),
            ("normalization", tuple(NORMALIZATIONS)),
            ("load_balancing", tuple(load_balancing.LOSSES)),
            ("backend", BACKENDS),
            ("dtype", DTYPES),
        ):
            validate.choice(getattr(self, name), name, allowed)
        if self.readout == "two-logit" and self.J % 2:
            raise InputError(f"readout='two-logit' needs an even J, got J={self.J}")
        for name in ("bias", "same_init", "early_stopping", "test_noise", "structured"):
            validate.flag(getattr(self, name), name)


REFERENCE_CODE = {
    "input_scale": 10.0,
    "bias": True,
    "readout": "two-logit",
    "loss": "double-softmax-ce",
    "gate": "noisy-logit",
    "init": "uniform",
    "normalization": "sum-of-norms",
    "early_stopping": True,
    "test_noise": True,
    "steps": 501,
}
VARIANTS = {"paper": {}, "reference-code": REFERENCE_CODE}


def variant_config(variant: str = "paper", **overrides: Any) -> TrainConfig:
    """TrainConfig of a named variant ("paper" or "reference-code"), with any field overridden."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    return TrainConfig(**{**VARIANTS[variant], **overrides})


# ------------------------------------------------------------------------------------ model pieces


def prepare(data: Dataset, cfg: TrainConfig, signals: Signals | None = None) -> Batch:
    """Scale inputs, append the bias coordinate, collapse to s for linear experts; s is computed once.

    With cfg.structured the experts' input keeps Def. 3.1's structure (`structured.inputs`), which
    needs the signals, unless σ is linear; the router's s = Σ_p x⁽ᵖ⁾ is the same either way."""
    if cfg.structured and signals is None:
        raise ValueError("cfg.structured needs the signals of the data: prepare(data, cfg, signals)")
    x = data.x * cfg.input_scale if cfg.input_scale != 1.0 else data.x
    s = x.sum(axis=1)
    linear = cfg.activation == "linear"
    if cfg.structured and not linear:
        xk = structured.inputs(structure(data, signals), cfg.input_scale, cfg.bias)
        return Batch(xk.astype(cfg.dtype), s, data.y.astype(float), data.cluster)
    xk = s[:, None, :] if linear else x
    if cfg.bias:
        # the bias coordinate is 1 in every patch, P in the collapsed patch s: Σ_p (⟨w, x⁽ᵖ⁾⟩ + b)
        ones = np.full((*xk.shape[:2], 1), float(x.shape[1]) / xk.shape[1])
        xk = np.concatenate([xk, ones], axis=2)
    return Batch(np.ascontiguousarray(xk, dtype=cfg.dtype), s, data.y.astype(float), data.cluster)


def init_experts(cfg: TrainConfig, d: int, rng: np.random.Generator) -> np.ndarray:
    """W⁽⁰⁾ (M, J, d [+1]): N(0, σ0²) (Algorithm 1) or U(±init_bound); identical experts if same_init."""
    width = d + int(cfg.bias)
    count = 1 if cfg.same_init else cfg.M
    if cfg.init == "gaussian":
        W = rng.normal(0.0, cfg.sigma0, size=(count, cfg.J, width))
    else:
        W = rng.uniform(-cfg.init_bound, cfg.init_bound, size=(count, cfg.J, width))
    W = W.astype(cfg.dtype, copy=False)  # drawn in float64, so both dtypes start from the same W⁽⁰⁾
    return np.repeat(W, cfg.M, axis=0) if cfg.same_init else W


@dataclass
class Step:
    """What one step of Algorithm 1 saw: router output h, routes, gate values, expert pass."""

    h: np.ndarray
    routes: np.ndarray
    g: np.ndarray
    out: StepOutput


def algorithm1_step(batch: Batch, W: np.ndarray, Theta: np.ndarray, seed: int, plan: Plan):
    """One iteration of Algorithm 1: new noise (line 4), experts by (3.4) (line 5), router by (3.5) (line 6).

    Returns the updated (W, Θ) and what the step saw (h, routes, gate values, expert pass)."""
    h = plan.router_logits(batch.s, Theta)
    routes, noise = plan.gate.route(h, seed)
    g, pi = plan.gate.values(h, routes, noise)
    out = plan.expert_pass(batch, W, routes, g)
    grad_Theta = plan.router_gradient(batch.s, h, routes, g, pi, out.dF * out.f)
    W_next = (W - plan.update(out.grad_W)).astype(W.dtype, copy=False)  # the update's scale is float64
    return W_next, Theta - plan.eta_r * grad_Theta, Step(h, routes, g, out)


# ------------------------------------------------------------------------------------ training


@dataclass
class TrainResult:
    """Final parameters, initial experts, history every `record_every` steps, steps run, wall time, plan."""

    Theta: np.ndarray
    W: np.ndarray
    W0: np.ndarray
    steps: int
    seconds: float
    stopped_early: bool
    plan: Plan  # the options the run was resolved into (and is evaluated with)
    max_sum_theta_ratio: float  # max over steps of ‖Θ·1‖ / ‖Θ‖ (Lemma E.1: 0 for the softmax gate)
    history: dict[str, list] = field(default_factory=dict)
    diverged_at: int | None = None  # the step whose loss or update was not finite (W, Θ: the last finite)
    last_routes: np.ndarray | None = None  # the routes and router outputs of the last training step
    last_h: np.ndarray | None = None


def step_seeds(seed: int, steps: int) -> np.ndarray:
    """A fresh routing-noise seed for every step, derived from the run seed (Algorithm 1, line 4)."""
    return np.random.SeedSequence([seed, 0x5EED]).generate_state(steps, np.uint64) >> np.uint64(1)


def evaluation_noise_seed(seed: int) -> int:
    """Seed of the routing noise used to evaluate a run with noise (independent of the training noise)."""
    return int(np.random.SeedSequence([seed, 0x7E57]).generate_state(1, np.uint64)[0] >> np.uint64(1))


@threadpool_limits.wrap(limits=1, user_api="blas")  # small GEMMs: one BLAS thread beside Numba's
def train(
    data: Dataset,
    signals: Signals,
    cfg: TrainConfig,
    seed: int,
    progress: bool = False,
    batch: Batch | None = None,
) -> TrainResult:
    """Algorithm 1 with `cfg`'s options (resolved once) on the full batch `data`; deterministic for `seed`."""
    start = time.perf_counter()
    plan = resolve(cfg)
    batch = batch if batch is not None else prepare(data, cfg, signals)
    rng = np.random.default_rng([seed, 0xA1])
    W = init_experts(cfg, signals.V.shape[1], rng)
    W0 = W.copy()
    Theta = np.zeros((batch.s.shape[1], cfg.M))
    steps, every = cfg.steps, cfg.record_every
    seeds = step_seeds(seed, steps)
    hist: dict[str, list] = {key: [] for key in ("step", "loss", "train_accuracy", "dispatch_entropy")}
    hist.update({key: [] for key in ("expert_feature", "expert_center", "router_feature", "router_center")})
    best, stopped, max_ratio, t, diverged_at = np.inf, False, 0.0, 0, None
    overflow = np.errstate(over="ignore", invalid="ignore")  # `finite_step` ends a diverging run
    with Progress(steps, "Algorithm 1", enabled=progress, unit="step") as bar, overflow:
        for t in range(steps):
            W_next, Theta_next, step = algorithm1_step(batch, W, Theta, int(seeds[t]), plan)
            loss = float(step.out.loss.mean())
            if not finite_step(loss, W_next, Theta_next):
                diverged_at = t
                break
            if t % every == 0 or t == steps - 1:
                _record(hist, t, loss, batch, step, W, Theta, signals)
            W, Theta = W_next, Theta_next
            norm = np.linalg.norm(Theta)
            if norm > 0:
                max_ratio = max(max_ratio, float(np.linalg.norm(Theta.sum(axis=1)) / norm))
            bar.step()
            best = min(best, loss)
            if plan.stop(loss, best):
                stopped = True
                break
    return TrainResult(
        Theta=Theta,
        W=W,
        W0=W0,
        steps=t + 1,
        seconds=time.perf_counter() - start,
        stopped_early=stopped,
        plan=plan,
        history=hist,
        max_sum_theta_ratio=max_ratio,
        last_routes=step.routes,
        last_h=step.h,
        diverged_at=diverged_at,
    )


def finite_step(loss: float, *parameters: np.ndarray) -> bool:
    """Did a step keep its loss and every updated parameter finite (else the run has diverged)?"""
    return math.isfinite(loss) and all(np.isfinite(p).all() for p in parameters)


def _record(hist, t, loss, batch, step: Step, W, Theta, signals) -> None:
    hist["step"].append(t)
    hist["loss"].append(loss)
    hist["train_accuracy"].append(accuracy(batch.y * step.g * step.out.f))
    counts = dispatch_counts(batch.cluster, step.routes, signals.V.shape[0], W.shape[0])
    hist["dispatch_entropy"].append(dispatch_entropy(counts))
    for key, value in signal_alignment(W, Theta, signals).items():
        hist[key].append(value.tolist())


# ------------------------------------------------------------------------------------ evaluation


def moe_outputs(batch: Batch, Theta, W, plan: Plan, noise_seed: int | None):
    """Routes, gate values and routed expert outputs of an MoE on a batch (noise-free if seed is None)."""
    h = plan.router_logits(batch.s, Theta)
    routes, noise = plan.gate.route(h, noise_seed)
    g, _ = plan.gate.values(h, routes, noise)
    return routes, g, plan.experts.forward(batch.xk, W, routes)[0]


def all_expert_outputs(batch: Batch, W: np.ndarray, cfg: TrainConfig) -> np.ndarray:
    """f_m(x_i) (3.1) for every expert and sample under `cfg`'s options, shape (n, M) (accuracy on Ω_k)."""
    return resolve(cfg).experts.dense(batch.xk, W)


def evaluate(result: TrainResult, test: Batch, signals: Signals, cfg: TrainConfig, seed: int) -> dict:
    """Test accuracy noise-free (argmax h) and with Unif[0,1] noise, test dispatch tables, entropies."""
    K = signals.V.shape[0]
    noise_seed = evaluation_noise_seed(seed)
    report: dict[str, Any] = {}
    for name, s in (("noise_free", None), ("noisy", noise_seed)):
        routes, g, f = moe_outputs(test, result.Theta, result.W, result.plan, s)
        counts = dispatch_counts(test.cluster, routes, K, cfg.M)
        report[f"test_accuracy_{name}"] = 100.0 * accuracy(test.y * g * f)
        report[f"test_errors_{name}"] = int(np.sum(test.y * g * f <= 0))
        report[f"test_dispatch_{name}"] = counts.tolist()
        report[f"test_dispatch_entropy_{name}"] = dispatch_entropy(counts)
    report["test_accuracy"] = report["test_accuracy_noisy" if cfg.test_noise else "test_accuracy_noise_free"]
    report["test_accuracy_routing"] = "noisy" if cfg.test_noise else "noise-free"
    return report
