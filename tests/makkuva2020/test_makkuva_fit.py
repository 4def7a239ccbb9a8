"""Tests of lab.makkuva2020.fit: E_reg / E_gating invariances, the optimisers of Sec. 3–4, EM, the ρ fit."""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.makkuva2020.fit import (
    contraction_factor,
    em,
    gating_error,
    gd_population_l4,
    init_params,
    projected_gd_l_log,
    regression_error,
    resolve_signs,
    sgd_l2,
    sgd_l4,
)
from lab.makkuva2020.gated_regression import (
    GaussianInput,
    expected_gates,
    paper_model,
    rereferenced_gating,
    sample,
)
from lab.makkuva2020.losses import L4Regularisers, l2_loss_gradient, l_log, optimal_scale, output_transforms

REG = L4Regularisers(0.05, 4.0, 2.0)


@given(st.integers(2, 5), st.integers(0, 2**31))
def test_regression_error_invariances(k, seed):
    """E_reg is invariant to row permutation, sign flips and positive row scaling; zero at A*."""
    rng = np.random.default_rng(seed)
    A_star = rng.standard_normal((k, 7))
    A = rng.standard_normal((k, 7))
    perm = rng.permutation(k)
    signs = rng.choice([-1.0, 1.0], size=k)
    scale = rng.uniform(0.1, 10, size=k)
    e, _ = regression_error(A, A_star)
    e2, _ = regression_error((signs * scale)[:, None] * A[perm], A_star)
    assert e == pytest.approx(e2, abs=1e-12)
    e0, p0 = regression_error((signs * scale)[:, None] * A_star[perm], A_star)
    assert e0 == pytest.approx(0.0, abs=1e-12) and np.array_equal(p0, perm)
    assert 0.0 <= e <= 1.0


def test_regression_error_is_max_over_permutations():
    rng = np.random.default_rng(0)
    A, A_star = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    unit = lambda M: M / np.linalg.norm(M, axis=1, keepdims=True)  # noqa: E731
    cos = np.abs(unit(A) @ unit(A_star).T)
    brute = max(min(cos[i, p[i]] for i in range(3)) for p in itertools.permutations(range(3)))
    assert regression_error(A, A_star)[0] == pytest.approx(1 - brute)


def test_error_bad_input():
    with pytest.raises(ValueError, match="shape"):
        regression_error(np.ones((2, 3)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="finite"):
        regression_error(np.full((2, 3), np.nan), np.ones((2, 3)))
    with pytest.raises(ValueError, match="k must be"):
        regression_error(np.ones((9, 3)), np.ones((9, 3)))
    with pytest.raises(ValueError, match="perm"):
        gating_error(np.ones((2, 3)), np.ones((2, 3)), [0, 0, 1])


def test_gating_error_rereferences_with_the_experts_permutation():
    model = paper_model(3)
    for perm in itertools.permutations(range(3)):
        W_hat = rereferenced_gating(model.W, perm)
        assert gating_error(2.0 * W_hat, model.W, np.array(perm)) == pytest.approx(0.0, abs=1e-12)
        assert gating_error(-W_hat, model.W, np.array(perm)) == pytest.approx(0.0, abs=1e-12)
    wrong = rereferenced_gating(model.W, [2, 0, 1])
    assert gating_error(wrong, model.W, np.array([0, 1, 2])) > 0.1
    assert gating_error(np.zeros((2, 10)), model.W, np.array([0, 1, 2])) == pytest.approx(1.0)


def test_gd_on_eq7_reaches_the_global_minimiser():
    model = paper_model(3)
    pi = expected_gates(model.W, GaussianInput(10))
    A0 = np.random.default_rng(1).standard_normal((5, 3, 10)) / np.sqrt(10)
    ends = gd_population_l4(A0, model.A, pi, REG, lr=0.05, steps=2000)
    c = optimal_scale(pi, REG)
    for A in ends:
        e, perm = regression_error(A, model.A)
        assert e < 1e-12
        assert np.allclose(np.linalg.norm(A, axis=1), c[perm])
    with pytest.raises(FloatingPointError, match="diverged"), np.errstate(all="ignore"):
        gd_population_l4(10 * A0[0], model.A, pi, REG, lr=5.0, steps=50)
    with pytest.raises(ValueError, match="lr"):
        gd_population_l4(A0, model.A, pi, REG, lr=-1.0, steps=1)


def test_sgd_l4_recovers_k2():
    model = paper_model(2)
    rng = np.random.default_rng(2)
    A0, _ = init_params(2, 10, rng)
    traj = sgd_l4(A0, model, GaussianInput(10), output_transforms(model.sigma), REG, rng, steps=600)
    assert regression_error(traj.A[-1], model.A)[0] < 0.05 < regression_error(traj.A[0], model.A)[0]
    assert traj.steps[-1] == 600 and len(traj.steps) == len(traj.A)
    with pytest.raises(ValueError, match="steps"):
        sgd_l4(A0, model, GaussianInput(10), output_transforms(model.sigma), REG, rng, steps=0)


def test_resolve_signs_and_l_log_pipeline():
    """Rows flipped by the first moment, then projected GD on L_log stays in Ω and lowers L_log."""
    model = paper_model(3)
    rng = np.random.default_rng(3)
    s = sample(model, GaussianInput(10), 60_000, rng)
    A_hat = resolve_signs(np.array([-2.0, 1.0, -0.5])[:, None] * model.A, s.x[:10_000], s.y[:10_000])
    assert np.allclose(A_hat, model.A)
    path = projected_gd_l_log(np.zeros((2, 10)), A_hat, s.x[10_000:], s.y[10_000:], model.sigma, 1.0, 2.0, 25)
    assert path.shape == (26, 2, 10) and np.all(np.linalg.norm(path, axis=2) <= 1.0 + 1e-12)
    assert l_log(path[-1], A_hat, s.x, s.y, model.sigma) < l_log(path[0], A_hat, s.x, s.y, model.sigma)
    assert gating_error(path[-1], model.W, np.arange(3)) < 0.05
    with pytest.raises(ValueError, match="T must"):
        projected_gd_l_log(np.zeros((2, 10)), A_hat, s.x[:5], s.y[:5], model.sigma, 1.0, 1.0, 6)


def test_em_recovers_and_sgd_l2_lowers_the_loss():
    model = paper_model(3)
    rng = np.random.default_rng(4)
    A0, W0 = init_params(3, 10, rng)
    s = sample(model, GaussianInput(10), 5000, rng)
    traj = em(A0, W0, s.x, s.y, iters=15)
    e, perm = regression_error(traj.A[-1], model.A)
    assert e < 1e-3 and gating_error(traj.W[-1], model.W, perm) < 0.05
    l2 = sgd_l2(A0, W0, model, GaussianInput(10), rng, steps=100, record_every=100)
    assert l2_loss_gradient(l2.A[-1], l2.W[-1], s.x, s.y)[0] < l2_loss_gradient(A0, W0, s.x, s.y)[0]


def test_contraction_factor_recovers_a_known_rate():
    t = np.arange(40)
    errors = 2.0 * 0.8**t + 1e-3
    fit = contraction_factor(errors, floor=3e-3)
    assert fit.rho == pytest.approx(0.8, abs=0.01) and fit.ci[0] <= 0.8 + 0.01 and fit.ci[1] < 1
    with pytest.raises(ValueError, match="fewer than 3"):
        contraction_factor(errors, floor=10.0)
    with pytest.raises(ValueError, match="positive"):
        contraction_factor(np.array([1.0, 0.0, 1.0]), floor=0.1)
