"""Algorithm 1 and its options (lab.chen2022.training), load-balancing losses and single-CNN baselines."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from lab.chen2022 import baselines, data, load_balancing, model
from lab.chen2022 import plan as P
from lab.chen2022 import training as T
from lab.kernels import routed_numpy as twins
from lab.kernels.activations import activation

SMALL = data.DataConfig(K=2, P=4, d=8)


def _problem(n=40, seed=0, config=SMALL):
    rng = np.random.default_rng(seed)
    signals = data.make_signals(config, rng)
    return signals, data.sample(config, signals, n, rng)


def _loss(batch, W, Theta, routes, noise, cfg):
    """Mean loss of the MoE at fixed routes and noise (the value whose gradient the step uses)."""
    plan = P.resolve(cfg)
    h = batch.s @ Theta
    g, _ = plan.gate.values(h, routes, noise)
    f, _ = plan.experts.forward(batch.xk, W, routes)
    value = plan.loss.value_and_slope(batch.y * g * f)[0].mean()
    return value + load_balancing.loss_and_gradient(cfg.load_balancing, h, routes, cfg.lb_coef)[0]


def _gradients(batch, W, Theta, routes, noise, cfg):
    """∇W and ∇Θ as `algorithm1_step` computes them, at fixed routes and noise."""
    plan = P.resolve(cfg)
    h = batch.s @ Theta
    g, pi = plan.gate.values(h, routes, noise)
    out = plan.expert_pass(batch, W, routes, g)
    return out.grad_W, plan.router_gradient(batch.s, h, routes, g, pi, out.dF * out.f)


def _central_difference(fn, point, step=1e-6, directions=4, seed=0):
    """Directional derivatives of fn at point along random unit directions."""
    rng = np.random.default_rng(seed)
    dirs = rng.standard_normal((directions, *point.shape))
    dirs /= np.linalg.norm(dirs.reshape(directions, -1), axis=1).reshape(-1, *([1] * point.ndim))
    return dirs, np.array([(fn(point + step * u) - fn(point - step * u)) / (2 * step) for u in dirs])


OPTIONS = [
    {},
    {"bias": True},
    {"readout": "two-logit"},
    {"loss": "double-softmax-ce"},
    {"gate": "noisy-logit"},
    {"gate": "sigmoid"},
    {"load_balancing": "switch", "lb_coef": 0.3},
    {"load_balancing": "importance", "lb_coef": 0.3},
    {"activation": "linear", "bias": True},
    {"activation": "tanh", "readout": "two-logit", "bias": True},
    {"activation": "gelu", "readout": "two-logit"},  # not odd: two half-width kernel forwards
    dict(T.REFERENCE_CODE),
]


@pytest.mark.parametrize(
    "options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "stated"
)
def test_step_gradients_match_finite_differences(options):
    """∇W (E.2) and ∇Θ (E.1) of every option combination equal central differences of the loss."""
    cfg = T.variant_config("paper", M=3, J=4, backend="numpy", **options)
    _signals, ds = _problem()
    batch = T.prepare(ds, cfg)
    rng = np.random.default_rng(1)
    W = rng.normal(0, 0.4, size=(cfg.M, cfg.J, batch.xk.shape[2]))
    Theta = rng.normal(0, 0.3, size=(SMALL.d, cfg.M)) / cfg.input_scale
    routes = rng.integers(0, cfg.M, size=ds.n)
    noise = rng.uniform(0, 1, size=ds.n)
    grad_W, grad_Theta = _gradients(batch, W, Theta, routes, noise, cfg)
    for point, grad, fn in (
        (W, grad_W, lambda w: _loss(batch, w, Theta, routes, noise, cfg)),
        (Theta, grad_Theta, lambda th: _loss(batch, W, th, routes, noise, cfg)),
    ):
        dirs, fd = _central_difference(fn, point)
        analytic = np.tensordot(dirs, grad, axes=point.ndim)
        scale = np.abs(fd).max() + 1e-12
        np.testing.assert_allclose(analytic, fd, atol=1e-6 * scale + 1e-9, rtol=1e-5)


def test_fast_path_equals_model_gradients():
    """The stated model's step gives exactly lab.chen2022.model.perturbed_loss_gradients (E.1), (E.2)."""
    cfg = T.TrainConfig(M=3, J=4)
    _signals, ds = _problem(n=64)
    batch = T.prepare(ds, cfg)
    rng = np.random.default_rng(2)
    params = model.MoEParams(Theta=rng.normal(0, 0.2, (SMALL.d, 3)), W=rng.normal(0, 0.5, (3, 4, SMALL.d)))
    routes = rng.integers(0, 3, size=ds.n)
    grad_W, grad_Theta = _gradients(batch, params.W, params.Theta, routes, np.zeros(ds.n), cfg)
    ref_Theta, ref_W = model.perturbed_loss_gradients(ds.x, ds.y.astype(float), params, routes)
    np.testing.assert_allclose(grad_W, ref_W, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(grad_Theta, ref_Theta, rtol=1e-10, atol=1e-14)


def test_double_softmax_loss_is_cross_entropy_of_softmax_of_softmax():
    """loss="double-softmax-ce" equals CE(softmax(softmax(logits))) for two logits, with floor log(1+e⁻¹)."""
    rng = np.random.default_rng(3)
    logits = rng.normal(0, 3, size=(50, 2))
    y = rng.choice([-1.0, 1.0], size=50)
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    q = np.exp(p) / np.exp(p).sum(axis=1, keepdims=True)
    ce = -np.log(q[np.arange(50), (y > 0).astype(int)])
    double = P.resolve(T.TrainConfig(loss="double-softmax-ce")).loss
    loss, _ = double.value_and_slope(y * (logits[:, 1] - logits[:, 0]))
    np.testing.assert_allclose(loss, ce, rtol=1e-12)
    assert double.floor == pytest.approx(np.log1p(np.exp(-1.0)))
    huge, slope = double.value_and_slope(np.array([-1e300, 1e300]))
    assert np.all(np.isfinite(huge)) and np.all(np.isfinite(slope))


@pytest.mark.parametrize("bias", [False, True])
def test_linear_experts_collapse_to_patch_sum(bias):
    """For σ = identity the kernels run on s = Σ_p x⁽ᵖ⁾ (one patch): same f as the full patches."""
    _signals, ds = _problem()
    lin = T.TrainConfig(M=2, J=4, activation="linear", bias=bias, backend="numpy")
    batch = T.prepare(ds, lin)
    assert batch.xk.shape[1] == 1
    W = np.random.default_rng(4).normal(size=(2, 4, batch.xk.shape[2]))
    routes = np.arange(ds.n) % 2
    f, _ = P.resolve(lin).experts.forward(batch.xk, W, routes)
    full = ds.x if not bias else np.concatenate([ds.x, np.ones((*ds.x.shape[:2], 1))], axis=2)
    expected = twins.routed_forward(full, W, routes, 1)[0]
    np.testing.assert_allclose(f, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("act", ["cubic", "tanh", "gelu"])
@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_two_logit_readout_is_the_signed_filter_sum(act, backend):
    """f = Σ_j a_j Σ_p σ(⟨w_j, x⁽ᵖ⁾⟩ + b_j) whether the signs are folded into odd σ's filters or not."""
    _signals, ds = _problem()
    cfg = T.TrainConfig(M=2, J=4, activation=act, bias=True, readout="two-logit", backend=backend)
    batch = T.prepare(ds, cfg)
    W = np.random.default_rng(6).normal(size=(2, 4, batch.xk.shape[2]))
    routes = np.arange(ds.n) % 2
    sigma = activation(act)[0]
    signs = np.repeat([-1.0, 1.0], 2)  # a_j: logit 0, then logit 1
    z = np.einsum("npd,njd->npj", batch.xk, W[routes])
    expected = sigma(z).sum(axis=1) @ signs
    forward = P.resolve(cfg).experts.forward(batch.xk, W, routes)[0]
    np.testing.assert_allclose(forward, expected, rtol=1e-12, atol=1e-12)
    every = np.stack(
        [sigma(np.einsum("npd,jd->npj", batch.xk, W[m])).sum(axis=1) @ signs for m in (0, 1)], axis=1
    )
    np.testing.assert_allclose(T.all_expert_outputs(batch, W, cfg), every, rtol=1e-12, atol=1e-12)


def test_normalized_expert_step():
    """(3.4): each expert moves by exactly η in Frobenius norm; a zero gradient leaves it alone."""
    grad = np.random.default_rng(5).normal(size=(3, 4, 9))
    grad[1] = 0.0
    step = P.resolve(T.TrainConfig(M=3, J=4, eta=0.01)).update(grad)
    np.testing.assert_allclose(np.linalg.norm(step.reshape(3, -1), axis=1), [0.01, 0.0, 0.01])
    sum_norms = P.resolve(T.TrainConfig(M=3, J=4, eta=0.01, bias=True, normalization="sum-of-norms")).update(
        grad
    )
    parts = np.linalg.norm(sum_norms[:, :, :8].reshape(3, -1), axis=1) + np.linalg.norm(
        sum_norms[:, :, 8], axis=1
    )
    np.testing.assert_allclose(parts, [0.01, 0.0, 0.01])
    np.testing.assert_allclose(P.resolve(T.TrainConfig(expert_update="gd", eta=0.5)).update(grad), 0.5 * grad)


def test_routed_noise_is_the_noise_that_chose_the_route():
    """r_{m_i,i} recovered by routed_noise makes h + r maximal at the chosen expert."""
    h = np.random.default_rng(6).normal(0, 0.3, size=(500, 5))
    routes, noise = P.resolve(T.TrainConfig(M=5, gate="noisy-logit")).gate.route(h, 1234)
    r = twins.noise(twins.stream_key(1234), np.arange(500 * 5), 0, 0.0, 1.0).reshape(500, 5)
    np.testing.assert_array_equal(routes, np.argmax(h + r, axis=1))
    np.testing.assert_array_equal(noise, r[np.arange(500), routes])


def _run(cfg, seed=7, n=60):
    signals, ds = _problem(n=n, seed=seed)
    return T.train(ds, signals, cfg, seed)


class _Watched:
    """A config that records the fields read from it once `watching` is set."""

    def __init__(self, cfg):
        self.cfg, self.reads, self.watching = cfg, [], False

    def __getattr__(self, name):
        if self.watching:
            self.reads.append(name)
        return getattr(self.cfg, name)


def test_a_run_resolves_its_options_once_and_its_steps_read_no_option(monkeypatch):
    """train resolves the config once, before the first step; every step gets that plan, none reads cfg."""
    cfg = _Watched(T.variant_config("reference-code", M=3, J=4, activation="relu", steps=12, record_every=5))
    plans, stepped = [], []
    monkeypatch.setattr(T, "resolve", lambda c: plans.append(P.resolve(c)) or plans[-1])
    algorithm1_step = T.algorithm1_step

    def step(batch, W, Theta, seed, plan):
        cfg.watching = True
        stepped.append(plan)
        return algorithm1_step(batch, W, Theta, seed, plan)

    monkeypatch.setattr(T, "algorithm1_step", step)
    signals, ds = _problem(n=60)
    result = T.train(ds, signals, cfg, 3)
    assert len(plans) == 1 and result.plan is plans[0]
    assert len(stepped) == result.steps and all(p is plans[0] for p in stepped)
    assert cfg.reads == []  # readout, loss, activation, gate, update, balancing, backend: all in the plan


def test_a_single_cnn_run_resolves_its_options_once(monkeypatch):
    """train_single resolves its expert's config once; after its first pass it reads only Adam's numbers."""
    cfg = _Watched(baselines.single_config("reference-code", J=4, activation="gelu", steps=10))
    plans = []

    def resolve(c):
        plan = P.resolve(c)

        def expert_pass(*args):
            cfg.watching = True
            return plan.expert_pass(*args)

        plans.append(dataclasses.replace(plan, expert_pass=expert_pass))
        return plans[-1]

    monkeypatch.setattr(baselines, "resolve", resolve)
    result = baselines.train_single(_problem(n=60)[1], cfg, 0)
    assert len(plans) == 1 and result.steps >= 1
    assert set(cfg.reads) <= {"weight_decay", "lr", "adam_eps"}


@pytest.mark.parametrize(
    "options,experts,expert_pass,update,router_terms",
    [
        ({}, P.Experts, P.FusedPass, P.NormalizedGD, 0),
        ({"activation": "linear"}, P.LinearExperts, P.ExpertPass, P.NormalizedGD, 0),
        ({"activation": "relu", "readout": "two-logit"}, P.HalfLogitExperts, P.ExpertPass, P.NormalizedGD, 0),
        ({"activation": "tanh", "readout": "two-logit"}, P.Experts, P.ExpertPass, P.NormalizedGD, 0),
        ({"loss": "double-softmax-ce"}, P.Experts, P.ExpertPass, P.NormalizedGD, 0),
        (
            {"expert_update": "gd", "load_balancing": "switch", "lb_coef": 0.1},
            P.Experts,
            P.FusedPass,
            P.PlainGD,
            1,
        ),
    ],
)
def test_resolution_table(options, experts, expert_pass, update, router_terms):
    """The one place options are decided: the fused kernel only for the sum readout and the logistic loss."""
    plan = P.resolve(T.TrainConfig(**options))
    assert type(plan.experts) is experts and type(plan.expert_pass) is expert_pass
    assert type(plan.update) is update and len(plan.router_terms) == router_terms
    assert plan.stop is P.never_stop
    sum_of_norms = P.resolve(T.variant_config("reference-code"))
    assert sum_of_norms.update.norm is P.sum_of_norms and sum_of_norms.stop is not P.never_stop
    assert P.resolve(T.TrainConfig(normalization="sum-of-norms")).update.norm is P.frobenius  # no bias block


def test_training_is_deterministic_and_backends_agree():
    """Same seed, same numbers; the Numba and NumPy backends agree along a run."""
    cfg = T.TrainConfig(M=3, J=4, steps=30, eta=0.01, eta_r=1.0, record_every=5)
    a, b = _run(cfg), _run(cfg)
    np.testing.assert_array_equal(a.W, b.W)
    np.testing.assert_array_equal(a.Theta, b.Theta)
    c = _run(dataclasses.replace(cfg, backend="numpy"))
    np.testing.assert_allclose(c.W, a.W, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(c.Theta, a.Theta, rtol=1e-9, atol=1e-12)
    assert a.history["step"] == [0, 5, 10, 15, 20, 25, 29]


def test_lemma_e1_along_a_run_and_its_negative_controls():
    """Σ_m θ_m stays at round-off for shift-invariant gates and losses; sigmoid and h + r gates drift."""
    base = T.TrainConfig(M=4, J=4, steps=40, eta=0.01, eta_r=2.0, record_every=40)
    for options in (
        {},
        {"load_balancing": "switch", "lb_coef": 0.1},
        {"load_balancing": "importance", "lb_coef": 1},
    ):
        assert _run(dataclasses.replace(base, **options)).max_sum_theta_ratio < 1e-13
    for options in ({"gate": "sigmoid"}, {"gate": "noisy-logit"}):
        assert _run(dataclasses.replace(base, **options)).max_sum_theta_ratio > 1e-3


def test_same_init_and_uniform_init():
    rng = np.random.default_rng(8)
    W = T.init_experts(T.TrainConfig(M=4, J=3, same_init=True), 8, rng)
    assert np.all(W == W[0])
    U = T.init_experts(T.TrainConfig(M=4, J=3, init="uniform", init_bound=0.5, bias=True), 8, rng)
    assert U.shape == (4, 3, 9) and np.abs(U).max() <= 0.5


def test_early_stopping_rule():
    assert P.should_stop(0.5, 0.47, 0.0, 0.02)
    assert not P.should_stop(0.48, 0.47, 0.0, 0.02)
    assert P.should_stop(0.3140, 0.3139, 0.3133, 0.02)
    assert not P.should_stop(0.3139, 0.3139, 0.3133, 0.02)


def test_reference_code_variant_runs_and_stops_early():
    cfg = T.variant_config("reference-code", M=3, J=4, steps=300, record_every=50)
    assert cfg.input_scale == 10 and cfg.gate == "noisy-logit" and cfg.test_noise
    result = _run(cfg, n=80)
    assert result.steps <= 300 and np.isfinite(result.W).all()


def test_evaluate_reports_both_accuracies():
    cfg = T.TrainConfig(M=3, J=4, steps=20, record_every=10)
    signals, ds = _problem(n=60)
    result = T.train(ds, signals, cfg, 0)
    report = T.evaluate(result, T.prepare(ds, cfg), signals, cfg, 0)
    assert report["test_accuracy"] == report["test_accuracy_noise_free"]
    assert report["test_accuracy_routing"] == "noise-free"
    assert 0 <= report["test_accuracy_noisy"] <= 100
    assert np.sum(report["test_dispatch_noisy"]) == 60


@pytest.mark.parametrize(
    "field,value",
    [
        ("M", 0),
        ("eta", -1.0),
        ("sigma0", float("nan")),
        ("gate", "relu"),
        ("load_balancing", "bogus"),
        ("J", 3),
    ],
)
def test_bad_config_is_refused(field, value):
    options = {field: value} | ({"readout": "two-logit"} if field == "J" else {})
    with pytest.raises((ValueError, TypeError), match=field):
        T.TrainConfig(**options)
    with pytest.raises(ValueError, match="variant"):
        T.variant_config("nope")


def test_switch_loss_gradient_and_shift_invariance():
    rng = np.random.default_rng(9)
    h = rng.normal(size=(30, 4))
    routes = rng.integers(0, 4, size=30)
    _value, grad = load_balancing.switch_loss(h, routes, 0.7)
    np.testing.assert_allclose(grad.sum(axis=1), 0.0, atol=1e-15)
    dirs, fd = _central_difference(lambda z: load_balancing.switch_loss(z, routes, 0.7)[0], h)
    np.testing.assert_allclose(np.tensordot(dirs, grad, axes=2), fd, rtol=1e-6, atol=1e-10)
    with pytest.raises(ValueError, match="load balancing"):
        load_balancing.loss_and_gradient("nope", h, routes, 1.0)


@pytest.mark.parametrize(
    "act,variant", list(itertools.product(["linear", "cubic", "relu"], ["paper", "reference-code"]))
)
def test_single_baseline_adam_learns_a_separable_problem(act, variant):
    """A single CNN trained by Adam fits data where only one cluster exists (no feature noise conflict)."""
    config = data.DataConfig(K=2, P=4, d=8, gamma=data.UniformRange(0.05, 0.1))
    _signals, ds = _problem(n=200, config=config)
    cfg = baselines.single_config(variant, J=8, activation=act, steps=150)
    result = baselines.train_single(ds, cfg, 0)
    acc = baselines.single_accuracy(result, T.prepare(ds, cfg.expert), cfg)
    assert acc > 95.0
    assert result.history["loss"][-1] < result.history["loss"][0]


def test_single_models_with_a_non_odd_activation_get_the_signed_readout():
    """(3.1)'s plain sum of ReLU filters is ≥ 0, so relu/celu/gelu singles read out a_j = ±1 (Thm 4.1)."""
    assert baselines.single_config("paper", activation="relu").expert.readout == "two-logit"
    assert baselines.single_config("paper", activation="gelu").expert.readout == "two-logit"
    assert baselines.single_config("paper", activation="cubic").expert.readout == "sum"
    assert baselines.single_config("paper", activation="tanh").expert.readout == "sum"
    assert baselines.single_config("paper", activation="relu", readout="sum").expert.readout == "sum"


def test_reference_code_single_has_plain_ce_on_two_raw_logits():
    """The authors' single CNN: CE on (l₀, l₁) without a softmax in the forward = logistic loss of l₁ − l₀."""
    cfg = baselines.single_config("reference-code", activation="cubic")
    assert (cfg.expert.readout, cfg.expert.loss, cfg.stopping, cfg.stop_start) == (
        "two-logit",
        "logistic",
        "after-warmup",
        500,
    )
    loss = P.resolve(cfg.expert).loss
    logits = np.random.default_rng(3).normal(scale=20.0, size=(50, 2))
    y = np.where(np.arange(50) % 2 == 0, 1.0, -1.0)
    label = (y > 0).astype(int)
    ce = np.logaddexp(
        0.0, logits[np.arange(50), 1 - label] - logits[np.arange(50), label]
    )  # −log softmax(l)_y
    value, _ = loss.value_and_slope(y * (logits[:, 1] - logits[:, 0]))
    np.testing.assert_allclose(value, ce, rtol=1e-12, atol=1e-300)
    assert not cfg.expert.early_stopping  # the MoE's rule (with its floor clause) is not the single's


def test_single_after_warmup_stopping_is_tested_before_the_update_and_not_before_stop_start():
    """Adam at lr 5 raises the loss at once; the rule stops at the first step ≥ stop_start where it rose."""
    _signals, ds = _problem(n=60)
    base = {"J": 4, "activation": "cubic", "steps": 40, "lr": 5.0, "record_every": 1}
    ran = baselines.train_single(ds, baselines.single_config("reference-code", stopping="none", **base), 0)
    losses = ran.history["loss"]
    stopped = baselines.train_single(ds, baselines.single_config("reference-code", stop_start=5, **base), 0)
    assert not ran.stopped_early and ran.steps == 40
    first = next(t for t in range(5, 40) if losses[t] > min(losses[:t]) + 0.02)
    assert stopped.stopped_early and stopped.history["step"][-1] == first
    late = baselines.train_single(ds, baselines.single_config("reference-code", stop_start=40, **base), 0)
    assert not late.stopped_early and late.steps == 40


def test_single_config_validation():
    with pytest.raises(ValueError, match="stopping"):
        baselines.SingleConfig(stopping="early")
    with pytest.raises(ValueError, match="stop_start"):
        baselines.SingleConfig(stop_start=-1)
    with pytest.raises(ValueError, match="lr"):
        baselines.SingleConfig(lr=0.0)
    with pytest.raises(ValueError, match="activation"):
        baselines.single_config(activation="swish")
    with pytest.raises(ValueError, match="M = 1"):
        baselines.SingleConfig(T.TrainConfig(M=2))
    with pytest.raises(ValueError, match="stopping"):
        baselines.single_config(stopping="moe")  # the MoE's rule is the expert's: early_stopping=True
    assert baselines.single_config("reference-code", activation="linear").lr == 0.003


@pytest.mark.parametrize("backend", ["numba", "numpy"])
@pytest.mark.parametrize("structured", [True, False])
def test_a_run_whose_parameters_overflow_ends_as_diverged_on_both_backends(backend, structured):
    """Plain GD at rate 1e8 on cubic experts overflows within a few steps: the run stops at that step
    with the last finite parameters and says so, instead of raising or running on through NaN. Premise:
    the same run at the stated rate 0.001 does not diverge."""
    signals, train = _problem(n=64, seed=1)
    base = T.TrainConfig(M=4, J=4, steps=60, expert_update="gd", backend=backend, structured=structured)
    calm = T.train(train, signals, base, seed=0)
    assert calm.diverged_at is None and calm.steps == 60
    wild = T.train(train, signals, dataclasses.replace(base, eta=1e8), seed=0)
    assert wild.diverged_at is not None and wild.steps == wild.diverged_at + 1 < 60
    assert np.isfinite(wild.W).all() and np.isfinite(wild.Theta).all()
    assert all(np.isfinite(wild.history["loss"]))
