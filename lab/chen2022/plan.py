"""A `TrainConfig` resolved once into the objects that run Algorithm 1 (Chen et al. 2022, Sec. 3.3).

`resolve(cfg)` is the one place where the options are tested. It picks the kernels of the backend,
the experts' readout of (3.1) for the activation, the loss, the gate (Sec. 3.2) with its router
gradient (E.1), the expert update (3.4), the load-balancing terms and the stopping rule, and
returns them as a `Plan`. The step, the forward/backward and the evaluation call these objects and
never test an option again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from lab.chen2022 import load_balancing, structured
from lab.chen2022.model import logistic_loss, logistic_loss_derivative
from lab.kernels import backend
from lab.kernels.activations import ACTIVATION_CODES, ODD_ACTIVATIONS, sech2

READOUTS = ("sum", "two-logit")
EXPERT_UPDATES = ("normalized", "gd")

# ------------------------------------------------------------------------------------ loss


@dataclass(frozen=True)
class Loss:
    """A per-sample loss of the margin y·F (3.3), its derivative in y·F, and its infimum (stopping floor)."""

    value_and_slope: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
    floor: float


def logistic(margin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ℓ(yF) = log(1 + e^{−yF}) of (3.3) and its derivative."""
    return logistic_loss(margin), logistic_loss_derivative(margin)


def double_softmax_ce(margin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ℓ(y tanh(F/2)) = CE of softmax(softmax(two logits)) (the authors' code), and its derivative."""
    t = np.tanh(0.5 * margin)  # y·tanh(F/2) = tanh(yF/2) since y = ±1
    return logistic_loss(t), logistic_loss_derivative(t) * 0.5 * sech2(0.5 * margin)


LOSSES = {
    "logistic": Loss(logistic, 0.0),
    "double-softmax-ce": Loss(double_softmax_ce, float(np.log1p(np.exp(-1.0)))),
}

# ------------------------------------------------------------------------------------ experts


@dataclass(frozen=True, eq=False)
class Experts:
    """f_m = Σ_j a_j Σ_p σ(⟨w_{m,j}, x⁽ᵖ⁾⟩ + b_j) (3.1) as the kernels' sum readout of the filters a_j w_j.

    Exact for the sum readout (a_j = 1) and for an odd σ, where a_j σ(z) = σ(a_j z); the kernels'
    z = a_j ⟨w_j, x⟩ then has the same σ'(z) as ⟨w_j, x⟩ (σ' is even).
    """

    lib: SimpleNamespace
    act: int
    signs: np.ndarray  # a_j, shape (J,)

    def signed(self, W: np.ndarray) -> np.ndarray:
        """a_j w_j, the effective filters; also ∇W from the effective filters' gradient (chain rule)."""
        return W * self.signs[None, :, None]

    def forward(self, xk: np.ndarray, W: np.ndarray, routes: np.ndarray):
        """f_{m_i}(x_i) (3.1) and the pre-activations z (n, P, J) the backward pass needs."""
        return self.lib.routed_forward(xk, self.signed(W), routes, self.act)

    def backward(self, xk: np.ndarray, z, routes: np.ndarray, coef: np.ndarray, M: int) -> np.ndarray:
        """∇W = Σ_i coef_i ∂f_{m_i}(x_i)/∂W (E.2)."""
        return self.signed(self.lib.routed_backward(xk, z, routes, coef, M, self.act))

    def dense(self, xk: np.ndarray, W: np.ndarray) -> np.ndarray:
        """f_m(x_i) for every expert and sample, shape (n, M) (3.1)."""
        return self.lib.dense_forward(xk, self.signed(W), self.act)

    def fused_step(self, xk, W: np.ndarray, routes: np.ndarray, margin_scale: np.ndarray, loss: int):
        """f and ∇W (E.2) by the structured kernels' one pass, on the effective filters a_j w_j."""
        f, grad = self.lib.routed_step(xk, self.signed(W), routes, margin_scale, self.act, loss)
        return f, self.signed(grad)


class LinearExperts(Experts):
    """σ = identity: f_m = ⟨u_m, s⟩, u_m = Σ_j a_j w_{m,j} (3.1), on the batch's one patch s = Σ_p x⁽ᵖ⁾:
    the routed kernels with the one filter u_m per expert."""

    def filters(self, W: np.ndarray) -> np.ndarray:
        """u_m = Σ_j a_j w_{m,j}, shape (M, 1, d); `signed` broadcasts ∇u_m back to ∇w_{m,j} = a_j ∇u_m."""
        return np.einsum("j,mjd->md", self.signs, W)[:, None, :]

    def forward(self, xk, W, routes):
        return self.lib.routed_forward(xk, self.filters(W), routes, self.act)


class HalfLogitExperts(Experts):
    """Two logits, σ not odd: f = logit 1 − logit 0 (3.1), each the kernels' sum readout of its half."""

    def forward(self, xk, W, routes):
        half = W.shape[1] // 2
        f0, z0 = self.lib.routed_forward(xk, np.ascontiguousarray(W[:, :half]), routes, self.act)
        f1, z1 = self.lib.routed_forward(xk, np.ascontiguousarray(W[:, half:]), routes, self.act)
        return f1 - f0, np.concatenate([z0, z1], axis=2)

    def fused_step(self, xk, W, routes, margin_scale, loss):
        """The structured kernels' one pass with the readout a_j = ∓1: f = logit 1 − logit 0 (3.1)."""
        return self.lib.routed_step(xk, W, routes, margin_scale, self.act, loss, self.signs)

    def dense(self, xk, W):
        every = np.ones(xk.shape[0], dtype=np.int64)
        return np.stack([self.forward(xk, W, m * every)[0] for m in range(W.shape[0])], axis=1)


@dataclass(frozen=True)
class Batch:
    """A dataset prepared once for the kernels: expert input xk, router input s = Σ_p x⁽ᵖ⁾, labels."""

    xk: np.ndarray | structured.StructuredInputs  # (n, P or 1, d [+1]) — scaled, bias column appended,
    # collapsed to s if σ linear; else as `structured.StructuredInputs` if cfg.structured
    s: np.ndarray  # (n, d) — scaled
    y: np.ndarray  # (n,) float ±1
    cluster: np.ndarray  # (n,)

    @property
    def n(self) -> int:
        return self.y.shape[0]


@dataclass
class StepOutput:
    """One forward/backward pass: f_{m_i}(x_i), per-sample loss and ∂(mean loss)/∂F_i, ∇W."""

    f: np.ndarray
    loss: np.ndarray
    dF: np.ndarray
    grad_W: np.ndarray


@dataclass(frozen=True, eq=False)
class ExpertPass:
    """Forward and ∇W of mean_i loss(y_i g_i f_{m_i}(x_i)) (E.2): experts' forward, loss, backward."""

    experts: Experts
    loss: Loss

    def __call__(self, batch: Batch, W: np.ndarray, routes: np.ndarray, g: np.ndarray) -> StepOutput:
        f, z = self.experts.forward(batch.xk, W, routes)
        loss, slope = self.loss.value_and_slope(batch.y * g * f)
        dF = slope * batch.y / batch.n
        coef = (dF * g).astype(W.dtype, copy=False)  # the kernels' dtype (float32 runs)
        return StepOutput(f, loss, dF, self.experts.backward(batch.xk, z, routes, coef, W.shape[0]))


@dataclass(frozen=True, eq=False)
class FusedPass:
    """The stated model's pass (sum readout, logistic loss (3.3), σ not linear) in one kernel (E.2)."""

    lib: SimpleNamespace
    act: int

    def __call__(self, batch: Batch, W: np.ndarray, routes: np.ndarray, g: np.ndarray) -> StepOutput:
        f, grad_W = self.lib.routed_step(
            batch.xk, W, routes, (batch.y * g).astype(W.dtype, copy=False), self.act
        )
        loss, slope = logistic(batch.y * g * f)
        return StepOutput(f, loss, slope * batch.y / batch.n, grad_W)


@dataclass(frozen=True, eq=False)
class StructuredFusedPass:
    """Forward and ∇W (E.2) of mean_i loss(y_i g_i f_{m_i}(x_i)) in one pass over Def. 3.1's structure,
    for any loss of the margin the kernel knows (logistic, double softmax) and any experts' readout."""

    experts: Experts
    loss: Loss
    loss_code: int

    def __call__(self, batch: Batch, W: np.ndarray, routes: np.ndarray, g: np.ndarray) -> StepOutput:
        margin_scale = (batch.y * g).astype(W.dtype, copy=False)  # the kernels' dtype (float32 runs)
        f, grad = self.experts.fused_step(batch.xk, W, routes, margin_scale, self.loss_code)
        loss, slope = self.loss.value_and_slope(batch.y * g * f)
        return StepOutput(f, loss, slope * batch.y / batch.n, grad)


# ------------------------------------------------------------------------------------ gates


def _at_routes(h: np.ndarray, routes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """An (n, M) array that is `values` at (i, m_i) and 0 elsewhere."""
    out = np.zeros(h.shape)
    out[np.arange(h.shape[0]), routes] = values
    return out


@dataclass(frozen=True, eq=False)
class Gate:
    """Top-1 routing argmax_m (h_m + r_m), r ~ Unif[0,1] (Algorithm 1, line 4), and the routed gate.

    Each gate gives `values(h, routes, noise) -> (g, π or None)` and, for (E.1),
    `logit_gradient(h, routes, g, π, ∂L/∂g) -> ∂L/∂h`.
    """

    lib: SimpleNamespace

    def route(self, h: np.ndarray, seed: int | None) -> tuple[np.ndarray, np.ndarray]:
        """Routes and the noise the gate sees: argmax(h + r) with r from `seed`, or argmax h if None."""
        if seed is None:
            return np.argmax(h, axis=1), np.zeros(h.shape[0])
        routes = self.lib.perturbed_argmax(h, seed, self.lib.NOISE_CODES["uniform"], 0.0, 1.0)
        return routes, self.chosen_noise(seed, routes, h.shape[1])

    def chosen_noise(self, seed: int, routes: np.ndarray, M: int) -> np.ndarray:
        """The gate value does not see the routing noise."""
        return np.zeros(routes.shape[0])


class SoftmaxGate(Gate):
    """g_i = π_{m_i}(x_i), π = softmax(h) (Sec. 3.2); ∂π_{m_i}/∂h_m = π_{m_i}(1[m = m_i] − π_m) (E.1)."""

    def values(self, h, routes, noise):
        """(g, π): the routed gate values and the softmax (reused by `logit_gradient`)."""
        return self.lib.softmax_gate(h, routes)

    def logit_gradient(self, h, routes, g, pi, dg):
        """∂L/∂h (n, M) from ∂L/∂g."""
        return self.lib.softmax_logit_gradient(pi, routes, dg * g)


class NoisyLogitGate(Gate):
    """g_i = h_{m_i} + r_{m_i}, the chosen noisy logit (the authors' code): not shift-invariant."""

    def chosen_noise(self, seed, routes, M):
        """r_{m_i, i}: the Unif[0,1] draw of each sample's chosen expert, as perturbed_argmax drew it."""
        index = np.arange(routes.shape[0], dtype=np.int64) * M + routes
        key = np.uint64(self.lib.stream_key(seed))  # Numba returns the key as a Python int, maybe ≥ 2⁶³
        return self.lib.noise(key, index, self.lib.NOISE_CODES["uniform"], 0.0, 1.0)

    def values(self, h, routes, noise):
        return h[np.arange(h.shape[0]), routes] + noise, None

    def logit_gradient(self, h, routes, g, pi, dg):
        return _at_routes(h, routes, dg)


class SigmoidGate(Gate):
    """g_i = sigmoid(h_{m_i}) per expert: not shift-invariant, a negative control for Lemma E.1."""

    def values(self, h, routes, noise):
        return 0.5 * (1.0 + np.tanh(0.5 * h[np.arange(h.shape[0]), routes])), None

    def logit_gradient(self, h, routes, g, pi, dg):
        return _at_routes(h, routes, dg * g * (1.0 - g))


GATES = {"softmax": SoftmaxGate, "noisy-logit": NoisyLogitGate, "sigmoid": SigmoidGate}

# ------------------------------------------------------------------------------------ expert updates


def frobenius(grad_W: np.ndarray) -> np.ndarray:
    """‖∇W_m‖_F per expert, as in (3.4)."""
    return np.linalg.norm(grad_W.reshape(grad_W.shape[0], -1), axis=1)


def sum_of_norms(grad_W: np.ndarray) -> np.ndarray:
    """‖∇W_m‖_F + ‖∇b_m‖ per expert, the bias being the last coordinate (the authors' code)."""
    M = grad_W.shape[0]
    weights, bias = grad_W[:, :, :-1].reshape(M, -1), grad_W[:, :, -1:].reshape(M, -1)
    return np.linalg.norm(weights, axis=1) + np.linalg.norm(bias, axis=1)


NORMALIZATIONS = {"frobenius": frobenius, "sum-of-norms": sum_of_norms}


@dataclass(frozen=True)
class NormalizedGD:
    """Expert step η ∇W_m / ‖∇W_m‖ of (3.4) with the norm `norm`; an expert with zero gradient stays."""

    eta: float
    norm: Callable[[np.ndarray], np.ndarray]

    def __call__(self, grad_W: np.ndarray) -> np.ndarray:
        norm = self.norm(grad_W)
        scale = np.divide(self.eta, norm, out=np.zeros(grad_W.shape[0]), where=norm > 0)
        return grad_W * scale[:, None, None]


@dataclass(frozen=True)
class PlainGD:
    """Expert step η ∇W: plain GD instead of (3.4) (Table 11)."""

    eta: float

    def __call__(self, grad_W: np.ndarray) -> np.ndarray:
        return self.eta * grad_W


# ------------------------------------------------------------------------------------ stopping


def should_stop(loss: float, best: float, floor: float, rise: float) -> bool:
    """The authors' loss-based stopping: the loss rose `rise` above its minimum, or sits at the floor
    (within 1e-3) without improving."""
    return loss > best + rise or (loss - floor < 1e-3 and loss > best)


def never_stop(loss: float, best: float) -> bool:
    """Algorithm 1 runs all its T steps."""
    return False


# ------------------------------------------------------------------------------------ the plan


@dataclass(frozen=True, eq=False)
class Plan:
    """One run's options resolved: experts, their pass, loss, gate, expert update, router terms, stopping."""

    experts: Experts
    expert_pass: ExpertPass | FusedPass | StructuredFusedPass
    loss: Loss
    gate: Gate
    update: NormalizedGD | PlainGD
    router_terms: tuple[Callable[[np.ndarray, np.ndarray], np.ndarray], ...]  # ∂/∂h of load balancing
    eta_r: float
    stop: Callable[[float, float], bool]  # (loss, best loss so far) -> stop now?
    lib: SimpleNamespace  # the backend's kernels, for the router's two products

    def router_logits(self, s: np.ndarray, Theta: np.ndarray) -> np.ndarray:
        """h = Θᵀ Σ_p x⁽ᵖ⁾ (Sec. 3.2) of every sample, from the patch sums s (n, d)."""
        return self.lib.router_logits(s, Theta)

    def router_gradient(self, s, h, routes, g, pi, dg) -> np.ndarray:
        """∇Θ = Σ_i s_i ∂L/∂h_iᵀ (E.1) from ∂L/∂g, the load-balancing terms (Tables 10–11) added to ∂L/∂h."""
        dh = self.gate.logit_gradient(h, routes, g, pi, dg)
        for term in self.router_terms:
            dh += term(h, routes)
        return self.lib.router_gradient(s, dh)


def resolve(cfg) -> Plan:
    """The objects that run `cfg` (a `training.TrainConfig`): every option of Algorithm 1 and of the
    authors' code is decided here."""
    lib = backend(cfg.backend)
    experts_lib = structured.kernels(lib) if cfg.structured else lib  # x_k dense, or as Def. 3.1's structure
    act = ACTIVATION_CODES[cfg.activation]
    signs = np.ones(cfg.J, dtype=cfg.dtype)  # a_j: all 1 (3.1), or −1/+1 for the filters of logit 0/1
    if cfg.readout == "two-logit":
        signs[: cfg.J // 2] = -1.0
    signs.flags.writeable = False
    linear = cfg.activation == "linear"
    if linear:  # the collapse to s (`training.prepare`) under either arithmetic
        experts: Experts = LinearExperts(lib, act, signs)
    elif cfg.readout == "sum" or cfg.activation in ODD_ACTIVATIONS:
        experts = Experts(experts_lib, act, signs)
    else:
        experts = HalfLogitExperts(experts_lib, act, signs)
    loss = LOSSES[cfg.loss]
    fused = cfg.readout == "sum" and cfg.loss == "logistic" and not linear
    expert_pass: ExpertPass | FusedPass | StructuredFusedPass = ExpertPass(experts, loss)
    if cfg.structured and not linear:
        expert_pass = StructuredFusedPass(experts, loss, experts_lib.MARGIN_LOSS_CODES[cfg.loss])
    elif fused:
        expert_pass = FusedPass(lib, act)
    # without a bias column the expert has one block of parameters: sum-of-norms is the Frobenius norm
    norm = NORMALIZATIONS[cfg.normalization] if cfg.bias else frobenius
    return Plan(
        experts=experts,
        expert_pass=expert_pass,
        loss=loss,
        gate=GATES[cfg.gate](lib),
        update=PlainGD(cfg.eta) if cfg.expert_update == "gd" else NormalizedGD(cfg.eta, norm),
        router_terms=load_balancing.router_terms(cfg.load_balancing, cfg.lb_coef),
        eta_r=cfg.eta_r,
        stop=functools.partial(should_stop, floor=loss.floor, rise=cfg.stop_rise)
        if cfg.early_stopping
        else never_stop,
        lib=lib,
    )
