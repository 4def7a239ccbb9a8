"""Makkuva et al. 2020, Sec. 3–4: GD on eq. (7), SGD on eq. (6), projected GD on L_log, ℓ2-SGD, EM, errors.

Choices the paper does not state (the lab's assumptions, stated by every check that uses them):

* Initialisation, shared by all methods: rows of A_0 and W_0 drawn N(0, I_d / d) (norm ≈ 1).
* SGD (eq. 6 and ℓ2) is online: fresh minibatches of 1024 from eq. (1) at every step (eqs. 5
  and 6 are expectations); step size lr for the first half of the steps, lr/4 for the second.
  On a fixed sample the empirical L4 is unbounded below: outside span(A*) its quartic
  coefficient is a zero-mean fluctuation and only δ/2‖A‖² holds A back, so full-batch GD on the
  sample L4 (n = 10⁵, δ = 0.1) started AT the population minimiser runs off to infinity (a
  finding; see D2).
* From L4 to L_log. L4 returns the rows P D Γ⁻¹ A* up to sign (module docstring of
  `lab.makkuva2020.losses`), so before L_log the rows are (i) normalised to unit length, which
  assumes ‖a_i*‖ = 1, and (ii) sign-resolved by the first moment: for g = Id and a* ⊥ w*,
  E[y ⟨a, x⟩] = Σ_m π_m ⟨a_m*, a⟩, so the sign of the sample mean of y⟨â_i, x⟩ is that of
  ⟨â_i, a*_{π(i)}⟩ (the paper defers to Ge et al.'s Algorithm 1; Remark 1).
* The experts then come in the order π of Â; L_log, with w_k = 0 for Â's last expert, converges
  to the re-referenced w*_{π(i)} − w*_{π(k)} (`gated_regression.rereferenced_gating`), and that
  is what E_gating and ‖W_t − W*‖ are measured against. Theorem 3's R must cover those norms
  (√2 for the paper's orthonormal w* when the zero expert moves), not ‖w_i*‖ ≤ 1.
* EM for this MoE (Jordan & Jacobs 1994), as a generalised EM: E-step posteriors r_i(x, y);
  M-step (a) experts by weighted least squares a_i = (Σ r_i x xᵀ)⁻¹ Σ r_i y x (g = Id), (b) a
  shared noise variance σ² = mean Σ_i r_i (y − ⟨a_i, x⟩)², (c) gates by one Newton (IRLS) step on
  Σ_n Σ_i r_i log p_i(x; W), halved until the objective does not decrease.
* E_reg (Sec. 4): 1 − max_π min_i |⟨â_i, a*_π(i)⟩| with both rows normalised. E_gating: "defined
  similarly" in the paper; here the gating rows are matched with the permutation the
  regressors chose (a gate is only meaningful with its expert) and compared after
  re-referencing, again sign-invariant and row-normalised.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from lab import kernels
from lab.core import validate
from lab.core.errors import InputError
from lab.makkuva2020.gated_regression import (
    GatedRegression,
    InputDistribution,
    _distribution,
    _gate_probabilities,
    _per_sample,
    _regression,
    _rows,
    rereferenced_gating,
    sample,
)
from lab.makkuva2020.losses import (
    L4Regularisers,
    OutputTransforms,
    _l2_loss_gradient,
    _l4_inputs,
    _l_log_gradient,
    _population_inputs,
    _population_l4_gradient,
    _posterior,
    _project_rows,
    _sample_l4_gradient,
    _softmax_curvature,
)

MAX_K_PERMUTATIONS = 8

__all__ = [
    "MAX_K_PERMUTATIONS",
    "ContractionFit",
    "Trajectory",
    "contraction_factor",
    "em",
    "gating_error",
    "gd_population_l4",
    "init_params",
    "minibatches",
    "projected_gd_l_log",
    "regression_error",
    "resolve_signs",
    "sgd_l2",
    "sgd_l4",
]

# Every fit checks all its arguments once, before its first step (`lab.core.validate`), and
# then runs the unchecked `_` implementations of `lab.makkuva2020.losses` at every step.


def _unit_rows(M: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(M, axis=-1, keepdims=True)
    return M / np.maximum(norms, np.finfo(float).tiny)


def regression_error(A: np.ndarray, A_star: np.ndarray) -> tuple[float, np.ndarray]:
    """E_reg = 1 − max_π min_i |⟨â_i, â*_π(i)⟩| (Sec. 4), rows normalised; returns (E_reg, π).

    A and A_star (k, d) real and finite, 1 <= k <= MAX_K_PERMUTATIONS."""
    A_star = _rows(A_star, "A_star", "(k, d)", nonempty=(0, 1))
    A = validate.array(A, "A", finite=False, cast=False)
    if A.ndim != 2 or A.shape != A_star.shape:
        raise InputError(f"A must have the shape of A_star {A_star.shape}, got {A.shape}")
    if A.shape[0] > MAX_K_PERMUTATIONS:
        raise InputError(f"k must be <= {MAX_K_PERMUTATIONS} for the permutation search, got {A.shape[0]}")
    validate.array(A, "A")
    A, A_star = np.asarray(A, dtype=float), np.asarray(A_star, dtype=float)
    cos = np.abs(_unit_rows(A) @ _unit_rows(A_star).T)
    k = A.shape[0]
    perms = np.array(list(itertools.permutations(range(k))))
    worst = cos[np.arange(k), perms].min(axis=1)
    best = int(np.argmax(worst))
    return float(1.0 - worst[best]), perms[best]


def gating_error(W: np.ndarray, W_star: np.ndarray, perm: np.ndarray) -> float:
    """E_gating: 1 − min_i |cos(ŵ_i, w*_{π(i)} − w*_{π(k)})| for the regressors' matching π (Sec. 4).

    W and W_star (k − 1, d) real and finite, perm a permutation of 0..k−1."""
    W_star = _rows(W_star, "W_star", "(k - 1, d)", nonempty=(0, 1))
    W = _rows(W, "W", "(k - 1, d)", nonempty=())
    if W.shape != W_star.shape:
        raise InputError(f"W must have the shape of W_star {W_star.shape}, got {W.shape}")
    W = np.asarray(W, dtype=float)
    perm = validate.integers(perm, "perm", ndim=1, labels="(k,)")
    if sorted(perm.tolist()) != list(range(W.shape[0] + 1)):
        raise InputError(f"perm must be a permutation of 0..{W.shape[0]}, got {perm.tolist()}")
    target = rereferenced_gating(W_star, perm)
    cos = np.abs(np.sum(_unit_rows(W) * _unit_rows(target), axis=1))
    return float(1.0 - cos.min())


def init_params(k: int, d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The shared initialisation (A_0 (k, d), W_0 (k − 1, d)), entries N(0, 1/d); k, d integers >= 1."""
    validate.integer(k, "k", low=1)
    validate.integer(d, "d", low=1)
    validate.generator(rng)
    return rng.standard_normal((k, d)) / math.sqrt(d), rng.standard_normal((k - 1, d)) / math.sqrt(d)


def _check_steps(**values: int) -> None:
    for name, value in values.items():
        validate.integer(value, name, low=1)


def _check_lr(lr: float) -> None:
    validate.real(lr, "lr", low=0.0, low_open=True)


def _stream(model: object, inputs: object, rng: object) -> None:
    """A `GatedRegression`, an `InputDistribution` of its d and a Generator: what `minibatches` draws from."""
    validate.instance(model, "model", GatedRegression)
    _distribution(inputs)
    if inputs.d != model.d:
        raise InputError(f"inputs.d must equal the model's d = {model.d}, got {inputs.d}")
    validate.generator(rng)


def gd_population_l4(
    A0: np.ndarray, A_star: np.ndarray, pi: np.ndarray, reg: L4Regularisers, lr: float, steps: int
) -> np.ndarray:
    """Gradient descent on eq. (7) from A0 of shape (..., k, d) (many inits at once); returns end points.

    A_star, pi and reg as in `lab.makkuva2020.losses.population_l4`, lr > 0, steps an integer >= 1."""
    _check_lr(lr)
    _check_steps(steps=steps)
    _, A_star, pi = _population_inputs(A0, A_star, pi, reg, name="A0")
    A = np.array(A0, dtype=float)
    for _ in range(steps):
        A -= lr * _population_l4_gradient(A, A_star, pi, reg)
    if not np.all(np.isfinite(A)):
        raise FloatingPointError("GD on eq. (7) diverged: reduce lr or check the regularisers' conditions")
    return A


@dataclass
class Trajectory:
    """Parameters recorded during a fit: snapshot j after `steps[j]` updates (SGD steps, EM iterations)."""

    steps: np.ndarray
    A: np.ndarray
    W: np.ndarray | None = None


def minibatches(model: GatedRegression, inputs: InputDistribution, rng: np.random.Generator, batch: int):
    """Endless fresh minibatches (x, y) of eq. (1), drawn 64 batches at a time (online SGD).

    Checked when called (not at the first batch): model, inputs of its d, rng, batch an integer >= 1."""
    _stream(model, inputs, rng)
    _check_steps(batch=batch)
    return _minibatches(model, inputs, rng, batch)


def _minibatches(model: GatedRegression, inputs: InputDistribution, rng: np.random.Generator, batch: int):
    while True:
        block = sample(model, inputs, 64 * batch, rng)
        for j in range(64):
            yield block.x[j * batch : (j + 1) * batch], block.y[j * batch : (j + 1) * batch]


def _step_size(lr: float, t: int, steps: int) -> float:
    """The SGD schedule: `lr` for the first half of the steps, lr / 4 for the second half."""
    return lr if 2 * t <= steps else lr / 4


def sgd_l4(
    A0: np.ndarray,
    model: GatedRegression,
    inputs: InputDistribution,
    tr: OutputTransforms,
    reg: L4Regularisers,
    rng: np.random.Generator,
    lr: float = 0.006,
    steps: int = 1000,
    batch: int = 1024,
    record_every: int = 50,
    backend: str = kernels.DEFAULT_BACKEND,
) -> Trajectory:
    """Online minibatch SGD on L4 of eq. (6) (fresh batches of 1024 as in Sec. 4); `steps` counts batches.

    Everything is checked before the first batch, the same way for both backends: the backend
    name, lr, the counts, model, inputs, tr, reg, rng and A0 (k, d) real and finite with d the
    model's input dimension. The steps then run unchecked (`_sample_l4_gradient`).
    """
    lib = kernels.backend(backend)  # a bad name fails before the first batch
    _check_lr(lr)
    _check_steps(steps=steps, batch=batch, record_every=record_every)
    _stream(model, inputs, rng)
    A0 = validate.array(A0, "A0", ndim=2, labels="(k, d)", nonempty=(0,))
    validate.same_shape("A0", A0, (A0.shape[0], model.d), f"(k, d) with d = {model.d} from the model")
    _l4_inputs(A0, np.zeros((1, model.d)), np.zeros(1), tr, reg)  # tr and reg, once
    A = np.array(A0, dtype=float)
    snaps, done = [A.copy()], [0.0]
    for t, (x, y) in enumerate(_minibatches(model, inputs, rng, batch), start=1):
        A -= _step_size(lr, t, steps) * _sample_l4_gradient(A, x, y, tr, reg, lib)[1]
        if not np.all(np.isfinite(A)):
            raise FloatingPointError(f"SGD on eq. (6) diverged at step {t}: reduce lr or raise delta")
        if t % record_every == 0 or t == steps:
            snaps.append(A.copy())
            done.append(float(t))
        if t == steps:
            return Trajectory(np.array(done), np.array(snaps))
    raise AssertionError("unreachable")


def resolve_signs(A: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Rows normalised and flipped so that mean y⟨â_i, x⟩ ≥ 0 (g = Id, a* ⊥ w*; module docstring).

    A (k, d), x (n, d), y (n,) real and finite."""
    A = _rows(A, "A", "(k, d)", nonempty=(0, 1))
    x = _rows(x, "x", "(n, d)", A.shape[1])
    _per_sample(y, "y", x.shape[0])
    A = _unit_rows(np.asarray(A, dtype=float))
    signs = np.where((A @ x.T) @ y >= 0, 1.0, -1.0)
    return A * signs[:, None]


def projected_gd_l_log(
    W0: np.ndarray,
    A: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    sigma: float,
    R: float,
    lr: float,
    T: int,
    act: str = "linear",
) -> np.ndarray:
    """W_{t+1} = Π_Ω(W_t − α ∇L_log^{(n/T)}(W_t, A)) on T fresh splits of the sample (Thm 4): W_0..W_T.

    W0, A, x, y, sigma and act as in `lab.makkuva2020.losses.l_log`, R and lr > 0, 1 <= T <= n."""
    _check_lr(lr)
    _check_steps(T=T)
    _, A, x, y = _regression(W0, A, x, y, sigma, act, names=("W0", "A"))
    validate.real(R, "R", low=0.0, low_open=True)
    if T > x.shape[0]:
        raise InputError(f"T must be <= the sample size n = {x.shape[0]}, got {T}")
    W = _project_rows(np.array(W0, dtype=float), R)
    path = [W.copy()]
    for chunk in np.array_split(np.arange(x.shape[0]), T):
        W = _project_rows(W - lr * _l_log_gradient(W, A, x[chunk], y[chunk], sigma, act)[1], R)
        path.append(W.copy())
    return np.array(path)


def sgd_l2(
    A0: np.ndarray,
    W0: np.ndarray,
    model: GatedRegression,
    inputs: InputDistribution,
    rng: np.random.Generator,
    lr: float = 0.1,
    steps: int = 1000,
    batch: int = 1024,
    record_every: int = 50,
) -> Trajectory:
    """Online minibatch SGD on the ℓ2 loss of Sec. 3.1 in (A, W) jointly; `steps` counts batches.

    A0 (k, d) and W0 (k − 1, d) real and finite with the model's k and d; the rest as in `sgd_l4`."""
    _check_lr(lr)
    _check_steps(steps=steps, batch=batch, record_every=record_every)
    _stream(model, inputs, rng)
    A0 = _rows(A0, "A0", "(k, d)", model.d, nonempty=(0,))
    W0 = _rows(W0, "W0", "(k - 1, d)", model.d, nonempty=())
    validate.same_shape("W0", W0, (A0.shape[0] - 1, model.d), f"(k - 1, d) with k = {A0.shape[0]} from A0")
    A, W = np.array(A0, dtype=float), np.array(W0, dtype=float)
    snaps_a, snaps_w, done = [A.copy()], [W.copy()], [0.0]
    for t, (x, y) in enumerate(_minibatches(model, inputs, rng, batch), start=1):
        _, grad_a, grad_w = _l2_loss_gradient(A, W, x, y, model.activation)
        eta = _step_size(lr, t, steps)
        A -= eta * grad_a
        W -= eta * grad_w
        if not (np.all(np.isfinite(A)) and np.all(np.isfinite(W))):
            raise FloatingPointError(f"SGD on the l2 loss diverged at step {t}: reduce lr")
        if t % record_every == 0 or t == steps:
            snaps_a.append(A.copy())
            snaps_w.append(W.copy())
            done.append(float(t))
        if t == steps:
            return Trajectory(np.array(done), np.array(snaps_a), np.array(snaps_w))
    raise AssertionError("unreachable")


def _gate_objective(W: np.ndarray, x: np.ndarray, r: np.ndarray) -> float:
    """Σ_n Σ_i r_i log p_i(x; W) / n: the gating part of EM's expected complete log-likelihood."""
    p = _gate_probabilities(W, x)
    return float(np.sum(r * np.log(np.maximum(p, np.finfo(float).tiny))) / x.shape[0])


def _newton_gate_step(W: np.ndarray, x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """One IRLS step for softmax gating with soft labels r, halved until the objective does not drop."""
    p = _gate_probabilities(W, x)[:-1]
    grad = ((r[:-1] - p) @ x / x.shape[0]).ravel()
    H = _softmax_curvature(x, p) + 1e-10 * np.eye(grad.size)
    step = np.linalg.solve(H, grad).reshape(W.shape)
    before = _gate_objective(W, x, r)
    for _ in range(30):
        if _gate_objective(W + step, x, r) >= before:
            return W + step
        step = step / 2
    return W


def em(A0: np.ndarray, W0: np.ndarray, x: np.ndarray, y: np.ndarray, iters: int = 100) -> Trajectory:
    """Generalised EM for eq. (1) with g = Id (M-step in the module docstring); one snapshot per iteration.

    A0 (k, d), W0 (k − 1, d), x (n, d), y (n,) real and finite, y not constant (its standard
    deviation is the first σ), iters an integer >= 1."""
    _check_steps(iters=iters)
    _regression(W0, A0, x, y, 1.0, "linear", names=("W0", "A0"))
    A, W = np.array(A0, dtype=float), np.array(W0, dtype=float)
    sigma = float(np.std(y))
    if not sigma > 0:
        raise InputError("y must not be constant: its standard deviation is EM's first noise level σ, got 0")
    snaps_a, snaps_w = [A.copy()], [W.copy()]
    for _ in range(iters):
        r = _posterior(W, A, x, y, sigma, "linear")
        for i in range(A.shape[0]):
            xr = x.T * r[i]
            A[i] = np.linalg.solve(xr @ x + 1e-10 * np.eye(x.shape[1]), xr @ y)
        resid = y - A @ x.T
        sigma = max(math.sqrt(float(np.sum(r * resid * resid)) / x.shape[0]), 1e-6)
        W = _newton_gate_step(W, x, r)
        snaps_a.append(A.copy())
        snaps_w.append(W.copy())
    return Trajectory(np.arange(iters + 1, dtype=float), np.array(snaps_a), np.array(snaps_w))


@dataclass(frozen=True)
class ContractionFit:
    """log ‖W_t − W*‖ ≈ log e_0 + t log ρ fitted over the decay phase t < t_stop, with a CI for ρ."""

    rho: float
    ci: tuple[float, float]
    t_stop: int


def contraction_factor(errors: np.ndarray, floor: float, level: float = 0.99) -> ContractionFit:
    """Least-squares ρ from ‖W_t − W*‖ while it stays above `floor` (the decay phase; Theorem 3).

    errors a 1-D array of >= 3 positive finite values, floor a finite number, level in (0, 1)."""
    validate.array(errors, "errors", ndim=1, labels="(T,)", cast=False)
    e = np.asarray(errors, dtype=float)
    if e.size < 3 or np.any(e <= 0):
        raise InputError("errors must be a 1-D array of >= 3 positive finite values")
    validate.real(floor, "floor")
    validate.real(level, "level", low=0.0, high=1.0, low_open=True, high_open=True)
    below = np.nonzero(e <= floor)[0]
    t_stop = int(below[0]) if below.size else e.size
    if t_stop < 3:
        raise ValueError(f"fewer than 3 points above floor={floor}: no decay phase to fit")
    t = np.arange(t_stop)
    fit = stats.linregress(t, np.log(e[:t_stop]))
    half = stats.t.ppf(0.5 + level / 2, t_stop - 2) * fit.stderr
    return ContractionFit(
        math.exp(fit.slope), (math.exp(fit.slope - half), math.exp(fit.slope + half)), t_stop
    )
