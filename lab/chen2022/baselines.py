"""Single-model baselines of Tables 1, 3, 7, 8: one CNN (3.1) with J filters trained by Adam, full batch.

App. A.2: "We train single linear/nonlinear models by Adam ... with learning rate 0.01 and weight
decay 5e-4". The single CNN is the MoE's expert with M = 1 and gate value 1: its `expert_config()`
is resolved once per run by `lab.chen2022.plan.resolve`, so it shares the MoE's init, forward/backward
and input options (×10 inputs, bias, two-logit readout). The optimizer, the loss and the stopping
rule are the single model's own: the authors' code trains its single CNN with plain cross-entropy
on the two raw logits (the logistic loss of the margin l₁ − l₀; the double softmax belongs to the
MoE's forward only) and stops it before an update, from step 500 on, when the loss has risen 0.02
above its minimum (no floor clause). Weight decay is the L2 term added to the gradient, as in
PyTorch's Adam.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from lab.chen2022.data import Dataset, Signals
from lab.chen2022.metrics import accuracy
from lab.chen2022.plan import Batch, resolve
from lab.chen2022.training import TrainConfig, init_experts, prepare
from lab.core import validate
from lab.core.progress import Progress
from lab.kernels.activations import ODD_ACTIVATIONS

__all__ = [
    "SIGNED_READOUT",
    "SINGLE_REFERENCE_CODE",
    "STOPPING",
    "SingleConfig",
    "SingleResult",
    "single_accuracy",
    "single_config",
    "train_single",
]


@dataclass(frozen=True)
class SingleConfig:
    """A single CNN and its Adam run; the output/loss/input options mirror `TrainConfig`'s, and so do
    their defaults, declared there once (J, steps and init_bound are a single CNN's own)."""

    J: int = 128
    activation: str = TrainConfig.activation
    lr: float = 0.01
    weight_decay: float = 5e-4
    betas: tuple[float, float] = (0.9, 0.999)
    adam_eps: float = 1e-8
    steps: int = 800
    init: str = TrainConfig.init
    sigma0: float = TrainConfig.sigma0
    init_bound: float = 1.0 / math.sqrt(50.0)
    bias: bool = TrainConfig.bias
    input_scale: float = TrainConfig.input_scale
    readout: str = TrainConfig.readout
    loss: str = TrainConfig.loss
    stopping: str = "none"  # one of STOPPING
    stop_rise: float = TrainConfig.stop_rise
    stop_start: int = 500  # "after-warmup": the first step at which the rule is tested
    record_every: int = TrainConfig.record_every
    backend: str = TrainConfig.backend
    structured: bool = TrainConfig.structured  # the experts' arithmetic, as `TrainConfig`'s
    dtype: str = TrainConfig.dtype

    def __post_init__(self) -> None:
        for name in ("lr", "adam_eps"):
            validate.real(getattr(self, name), name, low=0.0, low_open=True)
        validate.real(self.weight_decay, "weight_decay", low=0.0)
        if not isinstance(self.betas, tuple | list) or len(self.betas) != 2:
            raise TypeError(f"betas must be two numbers in [0, 1), got {self.betas!r}")
        for b in self.betas:
            validate.real(b, "betas", low=0.0, high=1.0, high_open=True)
        if self.stopping not in STOPPING:
            raise ValueError(f"stopping must be one of {', '.join(STOPPING)}, got {self.stopping!r}")
        if isinstance(self.stop_start, bool) or not isinstance(self.stop_start, int) or self.stop_start < 0:
            raise ValueError(f"stop_start must be an integer >= 0, got {self.stop_start!r}")
        self.expert_config()  # validates the shared fields

    def expert_config(self) -> TrainConfig:
        """The equivalent one-expert `TrainConfig` (M = 1): shared init, forward/backward and stopping."""
        return TrainConfig(
            M=1,
            J=self.J,
            activation=self.activation,
            sigma0=self.sigma0,
            init_bound=self.init_bound,
            init=self.init,
            bias=self.bias,
            input_scale=self.input_scale,
            readout=self.readout,
            loss=self.loss,
            steps=self.steps,
            early_stopping=self.stopping == "moe",
            stop_rise=self.stop_rise,
            record_every=self.record_every,
            backend=self.backend,
            structured=self.structured,
            dtype=self.dtype,
        )


STOPPING = (
    "none",
    "moe",
    "after-warmup",
)  # all steps; the MoE's rule (plan.should_stop); the authors' single's
SIGNED_READOUT = "two-logit"  # a_j = −1 for the first J/2 filters, +1 for the rest
SINGLE_REFERENCE_CODE = {
    "input_scale": 10.0,
    "bias": True,
    "readout": "two-logit",
    "loss": "logistic",  # plain CE on the two raw logits
    "init": "uniform",
    "stopping": "after-warmup",
    "steps": 801,
}


def single_config(variant: str = "paper", **overrides: Any) -> SingleConfig:
    """SingleConfig for a variant; the authors' code uses Adam lr 0.003 for the linear model.

    A σ that is not odd (relu, celu, gelu) gets the signed readout a_j = ±1 of Thm 4.1's F unless
    `readout` is given: (3.1)'s plain sum of ReLU filters is ≥ 0 and cannot classify. For odd σ and
    a symmetric init the two readouts are the same model in law (a_j σ(z) = σ(a_j z)).
    """
    validate.choice(variant, "variant", ("paper", "reference-code"))
    base: dict[str, Any] = dict(SINGLE_REFERENCE_CODE) if variant == "reference-code" else {}
    if overrides.get("activation", SingleConfig.activation) not in ODD_ACTIVATIONS:
        base["readout"] = SIGNED_READOUT
    if variant == "reference-code" and overrides.get("activation") == "linear":
        base["lr"] = 0.003
    return SingleConfig(**{**base, **overrides})


@dataclass
class SingleResult:
    """Final filters (1, J, d [+1]), steps run, wall time and the loss/accuracy history."""

    W: np.ndarray
    steps: int
    seconds: float
    stopped_early: bool
    history: dict[str, list] = field(default_factory=dict)


def _config(cfg: object) -> None:
    """A `SingleConfig`, or anything that quacks like one (its `expert_config` and Adam's numbers)."""
    if not callable(getattr(cfg, "expert_config", None)):
        raise TypeError(f"cfg must be a SingleConfig, got {type(cfg).__name__}")


@threadpool_limits.wrap(limits=1, user_api="blas")
def train_single(
    data: Dataset,
    cfg: SingleConfig,
    seed: int,
    progress: bool = False,
    batch: Batch | None = None,
    signals: Signals | None = None,
) -> SingleResult:
    """Adam on the full batch for one CNN (options resolved once); deterministic for `seed`.

    `signals` are the data's (Def. 3.1), needed by `cfg.structured`. data a `Dataset`, cfg a
    `SingleConfig`, seed an integer >= 0, progress a bool, batch a prepared `Batch` or None."""
    validate.instance(data, "data", Dataset)
    _config(cfg)
    validate.integer(seed, "seed", low=0)
    validate.flag(progress, "progress")
    if batch is not None:
        validate.instance(batch, "batch", Batch)
    if signals is not None:
        validate.instance(signals, "signals", Signals)
    start = time.perf_counter()
    ecfg = cfg.expert_config()
    plan = resolve(ecfg)
    batch = batch if batch is not None else prepare(data, ecfg, signals)
    W = init_experts(ecfg, batch.s.shape[1], np.random.default_rng([seed, 0xB1]))
    first, second = np.zeros_like(W), np.zeros_like(W)
    routes, gate = np.zeros(batch.n, dtype=np.int64), np.ones(batch.n)
    hist: dict[str, list] = {"step": [], "loss": [], "train_accuracy": []}
    best, stopped, t = np.inf, False, 0
    b1, b2 = cfg.betas
    warmup = cfg.stop_start if cfg.stopping == "after-warmup" else cfg.steps  # no test before this step
    with Progress(cfg.steps, "single CNN (Adam)", enabled=progress, unit="step") as bar:
        for t in range(cfg.steps):
            out = plan.expert_pass(batch, W, routes, gate)
            loss = float(out.loss.mean())
            if t % cfg.record_every == 0 or t == cfg.steps - 1:
                hist["step"].append(t)
                hist["loss"].append(loss)
                hist["train_accuracy"].append(accuracy(batch.y * out.f))
            if t >= warmup and loss > best + cfg.stop_rise:  # the authors' single: tested before the update
                stopped = True
                break
            grad = out.grad_W + cfg.weight_decay * W
            first = b1 * first + (1 - b1) * grad
            second = b2 * second + (1 - b2) * grad * grad
            step_size = cfg.lr * math.sqrt(1 - b2 ** (t + 1)) / (1 - b1 ** (t + 1))
            W = W - step_size * first / (np.sqrt(second) + cfg.adam_eps * math.sqrt(1 - b2 ** (t + 1)))
            bar.step()
            best = min(best, loss)
            if plan.stop(loss, best):
                stopped = True
                break
    return SingleResult(W, t + 1, time.perf_counter() - start, stopped, hist)


def single_accuracy(result: SingleResult, test: Batch, cfg: SingleConfig) -> float:
    """Test accuracy (%) of a trained single CNN: P(y f(x) > 0); result of `train_single`, test a `Batch`."""
    validate.instance(result, "result", SingleResult)
    validate.instance(test, "test", Batch)
    _config(cfg)
    f, _ = resolve(cfg.expert_config()).experts.forward(test.xk, result.W, np.zeros(test.n, dtype=np.int64))
    return 100.0 * accuracy(test.y * f)
