"""Single-model baselines of Tables 1, 3, 7, 8: one CNN (3.1) with J filters trained by Adam, full batch.

App. A.2: "We train single linear/nonlinear models by Adam ... with learning rate 0.01 and weight decay
5e-4". The single CNN is the MoE's expert with M = 1 and gate value 1: its config holds that expert's
`TrainConfig` (`SingleConfig.expert`), resolved once per run by `lab.chen2022.plan.resolve`, so it
shares the MoE's init, forward/backward and input options (×10 inputs, bias, two-logit readout). The
optimizer, the loss and the stopping rule are the single model's own: the authors' code trains its
single CNN with plain cross-entropy on the two raw logits (the logistic loss of the margin l₁ − l₀; the
double softmax belongs to the MoE's forward only) and stops it before an update, from step 500 on, when
the loss has risen 0.02 above its minimum (no floor clause). Weight decay is the L2 term added to the
gradient, as in PyTorch's Adam.
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
from lab.core.errors import InputError
from lab.core.progress import Progress
from lab.kernels.activations import ODD_ACTIVATIONS

__all__ = [
    "ADAM",
    "SIGNED_READOUT",
    "SINGLE_EXPERT",
    "SINGLE_REFERENCE_CODE",
    "STOPPING",
    "SingleConfig",
    "SingleResult",
    "single_accuracy",
    "single_config",
    "train_single",
]


SINGLE_EXPERT = {"M": 1, "J": 128, "steps": 800, "init_bound": 1.0 / math.sqrt(50.0)}  # a single CNN's own
STOPPING = ("none", "after-warmup")  # Adam's own rules: all steps; the authors' single's (`stop_start`)
SIGNED_READOUT = "two-logit"  # a_j = −1 for the first J/2 filters, +1 for the rest
ADAM = ("lr", "weight_decay", "betas", "adam_eps", "stopping", "stop_start")  # SingleConfig's own fields


@dataclass(frozen=True)
class SingleConfig:
    """A single CNN and its Adam run: `expert`, the MoE's expert with M = 1 (a `TrainConfig`, every option
    and default of the model, its input and output, its step budget and the MoE's stopping rule declared
    there once), and Adam's numbers with the single's own stopping rule."""

    expert: TrainConfig = field(default_factory=lambda: TrainConfig(**SINGLE_EXPERT))
    lr: float = 0.01
    weight_decay: float = 5e-4
    betas: tuple[float, float] = (0.9, 0.999)
    adam_eps: float = 1e-8
    stopping: str = "none"  # one of STOPPING
    stop_start: int = 500  # "after-warmup": the first step at which the rule is tested

    def __post_init__(self) -> None:
        validate.instance(self.expert, "expert", TrainConfig)
        if self.expert.M != 1:
            raise InputError(f"expert must have M = 1 (a single CNN), got M = {self.expert.M}")
        for name in ("lr", "adam_eps"):
            validate.real(getattr(self, name), name, low=0.0, low_open=True)
        validate.real(self.weight_decay, "weight_decay", low=0.0)
        if not isinstance(self.betas, tuple | list) or len(self.betas) != 2:
            raise TypeError(f"betas must be two numbers in [0, 1), got {self.betas!r}")
        for b in self.betas:
            validate.real(b, "betas", low=0.0, high=1.0, high_open=True)
        validate.choice(self.stopping, "stopping", STOPPING)
        validate.integer(self.stop_start, "stop_start", low=0)


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
    """SingleConfig for a variant, `overrides` naming Adam's fields (`ADAM`) or the expert's (`TrainConfig`);
    the authors' code uses Adam lr 0.003 for the linear model.

    A σ that is not odd (relu, celu, gelu) gets the signed readout a_j = ±1 of Thm 4.1's F unless
    `readout` is given: (3.1)'s plain sum of ReLU filters is ≥ 0 and cannot classify. For odd σ and
    a symmetric init the two readouts are the same model in law (a_j σ(z) = σ(a_j z)).
    """
    validate.choice(variant, "variant", ("paper", "reference-code"))
    base: dict[str, Any] = dict(SINGLE_REFERENCE_CODE) if variant == "reference-code" else {}
    if overrides.get("activation", TrainConfig.activation) not in ODD_ACTIVATIONS:
        base["readout"] = SIGNED_READOUT
    if variant == "reference-code" and overrides.get("activation") == "linear":
        base["lr"] = 0.003
    options = {**base, **overrides}
    adam = {name: options.pop(name) for name in ADAM if name in options}
    return SingleConfig(TrainConfig(**{**SINGLE_EXPERT, **options}), **adam)


@dataclass
class SingleResult:
    """Final filters (1, J, d [+1]), steps run, wall time and the loss/accuracy history."""

    W: np.ndarray
    steps: int
    seconds: float
    stopped_early: bool
    history: dict[str, list] = field(default_factory=dict)


def _config(cfg: object) -> None:
    """A `SingleConfig`, or anything that quacks like one (its `expert` and Adam's numbers)."""
    if not isinstance(getattr(cfg, "expert", None), TrainConfig):
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
    ecfg = cfg.expert
    plan = resolve(ecfg)
    batch = batch if batch is not None else prepare(data, ecfg, signals)
    W = init_experts(ecfg, batch.s.shape[1], np.random.default_rng([seed, 0xB1]))
    first, second = np.zeros_like(W), np.zeros_like(W)
    routes, gate = np.zeros(batch.n, dtype=np.int64), np.ones(batch.n)
    hist: dict[str, list] = {"step": [], "loss": [], "train_accuracy": []}
    best, stopped, t = np.inf, False, 0
    b1, b2 = cfg.betas
    steps, every, rise = ecfg.steps, ecfg.record_every, ecfg.stop_rise
    warmup = cfg.stop_start if cfg.stopping == "after-warmup" else steps  # no test before this step
    with Progress(steps, "single CNN (Adam)", enabled=progress, unit="step") as bar:
        for t in range(steps):
            out = plan.expert_pass(batch, W, routes, gate)
            loss = float(out.loss.mean())
            if t % every == 0 or t == steps - 1:
                hist["step"].append(t)
                hist["loss"].append(loss)
                hist["train_accuracy"].append(accuracy(batch.y * out.f))
            if t >= warmup and loss > best + rise:  # the authors' single: tested before the update
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
    f, _ = resolve(cfg.expert).experts.forward(test.xk, result.W, np.zeros(test.n, dtype=np.int64))
    return 100.0 * accuracy(test.y * f)
