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

Linear experts: f_m = ⟨Σ_j a_j w_{m,j}, s⟩ with s = Σ_p x⁽ᵖ⁾ when σ is the identity, so they are
computed from s alone (exact, and P·J times cheaper than the patch kernels).
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from lab.chen2022 import load_balancing
from lab.chen2022.data import Dataset, Signals
from lab.chen2022.metrics import accuracy, dispatch_counts, dispatch_entropy, signal_alignment
from lab.chen2022.model import logistic_loss, logistic_loss_derivative
from lab.kernels import routed as kernels
from lab.kernels import routed_numpy as twins
from lab.kernels.activations import ACTIVATION_CODES, ODD_ACTIVATIONS, activation

GATES = ("softmax", "noisy-logit", "sigmoid")
LOSSES = ("logistic", "double-softmax-ce")
READOUTS = ("sum", "two-logit")
INITS = ("gaussian", "uniform")
EXPERT_UPDATES = ("normalized", "gd")
NORMALIZATIONS = ("frobenius", "sum-of-norms")
BACKENDS = {"numba": kernels, "numpy": twins}
UNIFORM_NOISE = kernels.NOISE_CODES["uniform"]


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

    def __post_init__(self) -> None:
        for name in ("M", "J", "steps", "record_every"):
            value = getattr(self, name)
            if not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("eta", "eta_r", "sigma0", "input_scale", "init_bound", "stop_rise"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")
        if not (math.isfinite(self.lb_coef) and self.lb_coef >= 0):
            raise ValueError(f"lb_coef must be a finite number >= 0, got {self.lb_coef!r}")
        activation(self.activation)
        for name, allowed in (
            ("gate", GATES),
            ("loss", LOSSES),
            ("readout", READOUTS),
            ("init", INITS),
            ("expert_update", EXPERT_UPDATES),
            ("normalization", NORMALIZATIONS),
            ("load_balancing", load_balancing.LOSSES),
            ("backend", tuple(BACKENDS)),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.readout == "two-logit" and self.J % 2:
            raise ValueError(f"readout='two-logit' needs an even J, got J={self.J}")


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


@dataclass(frozen=True)
class Batch:
    """A dataset prepared once for the kernels: expert input xk, router input s = Σ_p x⁽ᵖ⁾, labels."""

    xk: np.ndarray  # (n, P or 1, d [+1]) — scaled, bias column appended, collapsed to s if σ linear
    s: np.ndarray  # (n, d) — scaled
    y: np.ndarray  # (n,) float ±1
    cluster: np.ndarray  # (n,)

    @property
    def n(self) -> int:
        return self.y.shape[0]


def prepare(data: Dataset, cfg: TrainConfig) -> Batch:
    """Scale inputs, append the bias coordinate, collapse to s for linear experts; s is computed once."""
    x = data.x * cfg.input_scale if cfg.input_scale != 1.0 else data.x
    s = x.sum(axis=1)
    xk = s[:, None, :] if cfg.activation == "linear" else x
    if cfg.bias:
        # the bias coordinate is 1 in every patch, P in the collapsed patch s: Σ_p (⟨w, x⁽ᵖ⁾⟩ + b)
        ones = np.full((*xk.shape[:2], 1), float(x.shape[1]) / xk.shape[1])
        xk = np.concatenate([xk, ones], axis=2)
    return Batch(np.ascontiguousarray(xk), s, data.y.astype(float), data.cluster)


def readout_signs(cfg: TrainConfig) -> np.ndarray:
    """a_j of f = Σ_j a_j Σ_p σ(⟨w_j, x⁽ᵖ⁾⟩ + b_j): all 1 (3.1), or −1/+1 for logit 0/1 (two-logit)."""
    a = np.ones(cfg.J)
    if cfg.readout == "two-logit":
        a[: cfg.J // 2] = -1.0
    return a


def init_experts(cfg: TrainConfig, d: int, rng: np.random.Generator) -> np.ndarray:
    """W⁽⁰⁾ (M, J, d [+1]): N(0, σ0²) (Algorithm 1) or U(±init_bound); identical experts if same_init."""
    width = d + int(cfg.bias)
    count = 1 if cfg.same_init else cfg.M
    if cfg.init == "gaussian":
        W = rng.normal(0.0, cfg.sigma0, size=(count, cfg.J, width))
    else:
        W = rng.uniform(-cfg.init_bound, cfg.init_bound, size=(count, cfg.J, width))
    return np.repeat(W, cfg.M, axis=0) if cfg.same_init else W


def output_loss(margin_raw: np.ndarray, cfg: TrainConfig) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample loss of y·F and its derivative in F·y: ℓ(yF) or ℓ(y tanh(F/2)) (double softmax + CE)."""
    if cfg.loss == "logistic":
        return logistic_loss(margin_raw), logistic_loss_derivative(margin_raw)
    t = np.tanh(0.5 * margin_raw)  # y·tanh(F/2) = tanh(yF/2) since y = ±1
    return logistic_loss(t), logistic_loss_derivative(t) * 0.5 * (1.0 - t * t)


def loss_floor(cfg: TrainConfig) -> float:
    """Infimum of the per-sample loss: 0 (logistic) or log(1 + e⁻¹) (double softmax + CE)."""
    return 0.0 if cfg.loss == "logistic" else float(np.log1p(np.exp(-1.0)))


@dataclass
class StepOutput:
    """One forward/backward pass: f_{m_i}(x_i), per-sample loss and ∂(mean loss)/∂F_i, ∇W."""

    f: np.ndarray
    loss: np.ndarray
    dF: np.ndarray
    grad_W: np.ndarray


def effective_filters(W: np.ndarray, cfg: TrainConfig) -> np.ndarray:
    """a_j w_j: with the two-logit readout and an odd σ, a_j σ(⟨w_j, x⟩) = σ(⟨a_j w_j, x⟩) exactly."""
    return W * readout_signs(cfg)[None, :, None] if cfg.readout == "two-logit" else W


def _sum_of_effective_filters(cfg: TrainConfig) -> bool:
    """True when f is the kernels' sum readout of `effective_filters`: sum readout, or an odd σ."""
    return cfg.readout == "sum" or cfg.activation in ODD_ACTIVATIONS


def expert_forward(batch: Batch, W: np.ndarray, routes: np.ndarray, cfg: TrainConfig):
    """f_{m_i}(x_i) = Σ_j a_j Σ_p σ(⟨w_{m_i,j}, x_i⁽ᵖ⁾⟩ + b_j) (3.1), and pre-activations z (n, P, J).

    Linear experts: f_m = ⟨Σ_j a_j w_{m,j}, s⟩ (the batch holds s as its only patch), so f costs one
    inner product per sample and z is not needed (None). Other odd σ: the kernel's sum readout of
    the effective filters a_j w_j, whose z = a_j ⟨w_j, x⟩ has the same σ'(z) (σ' is even). Two logits
    and a σ that is not odd: logit 1 − logit 0, each the kernel's sum readout of its half of the filters.
    """
    if cfg.activation == "linear":
        u = np.einsum("j,mjd->md", readout_signs(cfg), W)
        return np.einsum("nd,nd->n", batch.xk[:, 0], u[routes]), None
    forward, code = BACKENDS[cfg.backend].routed_forward, ACTIVATION_CODES[cfg.activation]
    if _sum_of_effective_filters(cfg):
        return forward(batch.xk, effective_filters(W, cfg), routes, code)
    half = W.shape[1] // 2
    f0, z0 = forward(batch.xk, np.ascontiguousarray(W[:, :half]), routes, code)
    f1, z1 = forward(batch.xk, np.ascontiguousarray(W[:, half:]), routes, code)
    return f1 - f0, np.concatenate([z0, z1], axis=2)


def expert_pass(batch: Batch, W: np.ndarray, routes: np.ndarray, gate: np.ndarray, cfg: TrainConfig):
    """Forward and ∇W of mean_i loss(y_i g_i f_{m_i}(x_i)) through the routed kernels (E.2)."""
    lib = BACKENDS[cfg.backend]
    act = ACTIVATION_CODES[cfg.activation]
    if cfg.readout == "sum" and cfg.loss == "logistic" and cfg.activation != "linear":
        f, grad_W = lib.routed_step(batch.xk, W, routes, batch.y * gate, act)  # fused: the stated model
        loss, slope = output_loss(batch.y * gate * f, cfg)
        return StepOutput(f, loss, slope * batch.y / batch.n, grad_W)
    f, z = expert_forward(batch, W, routes, cfg)
    loss, slope = output_loss(batch.y * gate * f, cfg)
    dF = slope * batch.y / batch.n
    coef = dF * gate
    if z is None:  # linear: ∇w_{m,j} = a_j Σ_{i: m_i = m} coef_i s_i, the same for every filter j
        by_expert = np.zeros((W.shape[0], batch.n))
        by_expert[routes, np.arange(batch.n)] = coef
        grad_W = np.broadcast_to((by_expert @ batch.xk[:, 0])[:, None, :], W.shape).copy()
    else:
        grad_W = lib.routed_backward(batch.xk, z, routes, coef, W.shape[0], act)
    return StepOutput(f, loss, dF, grad_W * readout_signs(cfg)[None, :, None])


def gate(h: np.ndarray, routes: np.ndarray, noise: np.ndarray, cfg: TrainConfig):
    """Gate value g_i of the routed expert: π_{m_i} (Sec. 3.2), h_{m_i} + r_{m_i} or sigmoid(h_{m_i}).

    Returns (g, π) with π the softmax for the softmax gate (reused by `router_gradient`), else None.
    """
    if cfg.gate == "softmax":
        return BACKENDS[cfg.backend].softmax_gate(h, routes)
    rows = np.arange(h.shape[0])
    if cfg.gate == "noisy-logit":
        return h[rows, routes] + noise, None
    return 0.5 * (1.0 + np.tanh(0.5 * h[rows, routes])), None  # per-expert sigmoid: not shift-invariant


def router_gradient(s: np.ndarray, routes: np.ndarray, g: np.ndarray, pi, dg: np.ndarray, cfg: TrainConfig):
    """∇Θ = Σ_i s_i ∂L/∂h_i (E.1) from ∂L/∂g_i; for softmax ∂π_{m_i}/∂h_m = π_{m_i}(1[m = m_i] − π_m)."""
    rows = np.arange(s.shape[0])
    if cfg.gate == "softmax":
        dh = -(dg * g)[:, None] * pi
        dh[rows, routes] += dg * g
    else:
        dh = np.zeros((s.shape[0], cfg.M))
        dh[rows, routes] = dg if cfg.gate == "noisy-logit" else dg * g * (1.0 - g)
    return s.T @ dh


def routed_noise(seed: int, routes: np.ndarray, M: int) -> np.ndarray:
    """r_{m_i, i}: the Unif[0,1] draw of each sample's chosen expert, as perturbed_argmax drew it."""
    index = np.arange(routes.shape[0], dtype=np.int64) * M + routes
    return twins.noise(twins.stream_key(seed), index, UNIFORM_NOISE, 0.0, 1.0)


def route(h: np.ndarray, seed: int | None, cfg: TrainConfig) -> tuple[np.ndarray, np.ndarray]:
    """Routes and the chosen noise: argmax(h + r) with r ~ Unif[0,1] from `seed`, or argmax h if None."""
    if seed is None:
        return np.argmax(h, axis=1), np.zeros(h.shape[0])
    routes = BACKENDS[cfg.backend].perturbed_argmax(h, seed, UNIFORM_NOISE, 0.0, 1.0)
    noise = routed_noise(seed, routes, h.shape[1]) if cfg.gate == "noisy-logit" else np.zeros(h.shape[0])
    return routes, noise


def expert_step(grad_W: np.ndarray, cfg: TrainConfig, d: int) -> np.ndarray:
    """Expert update: η ∇W_m / ‖∇W_m‖_F (3.4), sum-of-norms, or plain GD; a zero gradient is left alone."""
    if cfg.expert_update == "gd":
        return cfg.eta * grad_W
    M = grad_W.shape[0]
    if cfg.normalization == "sum-of-norms" and cfg.bias:
        w_part, b_part = grad_W[:, :, :d].reshape(M, -1), grad_W[:, :, d:].reshape(M, -1)
        norm = np.linalg.norm(w_part, axis=1) + np.linalg.norm(b_part, axis=1)
    else:
        norm = np.linalg.norm(grad_W.reshape(M, -1), axis=1)
    scale = np.divide(cfg.eta, norm, out=np.zeros(M), where=norm > 0)
    return grad_W * scale[:, None, None]


@dataclass
class Step:
    """What one step of Algorithm 1 saw: router output h, routes, gate values, expert pass."""

    h: np.ndarray
    routes: np.ndarray
    g: np.ndarray
    out: StepOutput


def algorithm1_step(batch: Batch, W: np.ndarray, Theta: np.ndarray, seed: int, cfg: TrainConfig):
    """One iteration of Algorithm 1: new noise (line 4), experts by (3.4) (line 5), router by (3.5) (line 6).

    Returns the updated (W, Θ) and what the step saw (h, routes, gate values, expert pass)."""
    h = batch.s @ Theta
    routes, noise = route(h, seed, cfg)
    g, pi = gate(h, routes, noise, cfg)
    out = expert_pass(batch, W, routes, g, cfg)
    grad_Theta = router_gradient(batch.s, routes, g, pi, out.dF * out.f, cfg)
    if cfg.load_balancing != "none":
        grad_Theta += batch.s.T @ load_balancing.gradient(cfg.load_balancing, h, routes, cfg.lb_coef)
    W_next = W - expert_step(out.grad_W, cfg, batch.s.shape[1])
    Theta_next = Theta - cfg.eta_r * grad_Theta
    return W_next, Theta_next, Step(h, routes, g, out)


# ------------------------------------------------------------------------------------ training


@dataclass
class TrainResult:
    """Final parameters, initial experts, history every `record_every` steps, steps run and wall time."""

    Theta: np.ndarray
    W: np.ndarray
    W0: np.ndarray
    steps: int
    seconds: float
    stopped_early: bool
    history: dict[str, list] = field(default_factory=dict)
    max_sum_theta_ratio: float = 0.0
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
    """Algorithm 1 (with the options of `cfg`) on the full batch `data`; deterministic for `seed`."""
    start = time.perf_counter()
    batch = batch if batch is not None else prepare(data, cfg)
    rng = np.random.default_rng([seed, 0xA1])
    d = signals.V.shape[1]
    W = init_experts(cfg, d, rng)
    W0 = W.copy()
    Theta = np.zeros((batch.s.shape[1], cfg.M))
    seeds = step_seeds(seed, cfg.steps)
    hist: dict[str, list] = {key: [] for key in ("step", "loss", "train_accuracy", "dispatch_entropy")}
    hist.update({key: [] for key in ("expert_feature", "expert_center", "router_feature", "router_center")})
    floor, best, stopped, max_ratio = loss_floor(cfg), np.inf, False, 0.0
    K = signals.V.shape[0]
    bar = progress_bar(cfg.steps, progress)
    t = 0
    for t in range(cfg.steps):
        W_next, Theta_next, step = algorithm1_step(batch, W, Theta, int(seeds[t]), cfg)
        loss = float(step.out.loss.mean())
        if t % cfg.record_every == 0 or t == cfg.steps - 1:
            _record(hist, t, loss, batch, step, K, cfg.M, W, Theta, signals)
        W, Theta = W_next, Theta_next
        norm = np.linalg.norm(Theta)
        if norm > 0:
            max_ratio = max(max_ratio, float(np.linalg.norm(Theta.sum(axis=1)) / norm))
        bar.update(1)
        best = min(best, loss)
        if cfg.early_stopping and should_stop(loss, best, floor, cfg.stop_rise):
            stopped = True
            break
    bar.close()
    return TrainResult(
        Theta=Theta,
        W=W,
        W0=W0,
        steps=t + 1,
        seconds=time.perf_counter() - start,
        stopped_early=stopped,
        history=hist,
        max_sum_theta_ratio=max_ratio,
        last_routes=step.routes,
        last_h=step.h,
    )


def should_stop(loss: float, best: float, floor: float, rise: float) -> bool:
    """The authors' loss-based stopping: the loss rose `rise` above its minimum, or sits at the floor
    (within 1e-3) without improving."""
    return loss > best + rise or (loss - floor < 1e-3 and loss > best)


def _record(hist, t, loss, batch, step: Step, K, M, W, Theta, signals) -> None:
    hist["step"].append(t)
    hist["loss"].append(loss)
    hist["train_accuracy"].append(accuracy(batch.y * step.g * step.out.f))
    hist["dispatch_entropy"].append(dispatch_entropy(dispatch_counts(batch.cluster, step.routes, K, M)))
    for key, value in signal_alignment(W, Theta, signals).items():
        hist[key].append(value.tolist())


class _NoBar:
    def update(self, _: int) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, enabled: bool):
    """A tqdm bar on stderr when enabled and stderr is a terminal (and tqdm is installed)."""
    if not enabled or not sys.stderr.isatty():
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, leave=False, unit="step", file=sys.stderr)


# ------------------------------------------------------------------------------------ evaluation


def moe_outputs(batch: Batch, Theta, W, cfg: TrainConfig, noise_seed: int | None):
    """Routes, gate values and routed expert outputs of an MoE on a batch (noise-free if seed is None)."""
    h = batch.s @ Theta
    routes, noise = route(h, noise_seed, cfg)
    g, _ = gate(h, routes, noise, cfg)
    return routes, g, expert_forward(batch, W, routes, cfg)[0]


def all_expert_outputs(batch: Batch, W: np.ndarray, cfg: TrainConfig) -> np.ndarray:
    """f_m(x_i) for every expert and sample, shape (n, M) (for per-expert accuracy on each Ω_k)."""
    if _sum_of_effective_filters(cfg):
        W_eff = effective_filters(W, cfg)
        return BACKENDS[cfg.backend].dense_forward(batch.xk, W_eff, ACTIVATION_CODES[cfg.activation])
    every = np.ones(batch.n, dtype=np.int64)
    return np.stack([expert_forward(batch, W, m * every, cfg)[0] for m in range(W.shape[0])], axis=1)


def evaluate(result: TrainResult, test: Batch, signals: Signals, cfg: TrainConfig, seed: int) -> dict:
    """Test accuracy noise-free (argmax h) and with Unif[0,1] noise, test dispatch tables, entropies."""
    K = signals.V.shape[0]
    noise_seed = evaluation_noise_seed(seed)
    report: dict[str, Any] = {}
    for name, s in (("noise_free", None), ("noisy", noise_seed)):
        routes, g, f = moe_outputs(test, result.Theta, result.W, cfg, s)
        counts = dispatch_counts(test.cluster, routes, K, cfg.M)
        report[f"test_accuracy_{name}"] = 100.0 * accuracy(test.y * g * f)
        report[f"test_errors_{name}"] = int(np.sum(test.y * g * f <= 0))
        report[f"test_dispatch_{name}"] = counts.tolist()
        report[f"test_dispatch_entropy_{name}"] = dispatch_entropy(counts)
    report["test_accuracy"] = report["test_accuracy_noisy" if cfg.test_noise else "test_accuracy_noise_free"]
    report["test_accuracy_routing"] = "noisy" if cfg.test_noise else "noise-free"
    return report
