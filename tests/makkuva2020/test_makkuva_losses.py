"""Tests of lab.makkuva2020.losses: transforms (eq. 5), L4 (eq. 6), eq. (7), L_log (eq. 8), ℓ2, Numba twin."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.polynomial.hermite_e import hermegauss, hermeval

from lab.core.stats import normal_mean
from lab.makkuva2020.gated_regression import (
    GaussianInput,
    GaussianMixtureInput,
    expected_gates,
    paper_model,
    sample,
)
from lab.makkuva2020.losses import (
    L4Regularisers,
    l2_loss_gradient,
    l4_statistics,
    l_log,
    l_log_gradient,
    l_log_hessian,
    optimal_scale,
    output_transforms,
    population_l4,
    population_l4_gradient,
    population_l4_hessian,
    posterior,
    project_rows,
    sample_l4,
    sample_l4_gradient,
    t1,
    t2,
    t3,
    transform_means,
)

REG = L4Regularisers(0.05, 4.0, 2.0)


def _fd(f, X, E, h=1e-6):
    return (f(X + h * E) - f(X - h * E)) / (2 * h)


@pytest.mark.parametrize("sigma", [0.0, 0.05, 0.7])
def test_identity_transforms_closed_form(sigma):
    """g = Id: Q4 = y⁴ − 6(1+σ²)y² + 3(1+σ²)², Q2 = y² − (1+σ²), c = 24, c' = 2 (module docstring)."""
    tr = output_transforms(sigma)
    s2 = sigma**2
    assert tr.alpha == pytest.approx(0, abs=1e-12) and tr.gamma == pytest.approx(0, abs=1e-12)
    assert tr.beta == pytest.approx(-6 * (1 + s2)) and tr.q4_constant == pytest.approx(3 * (1 + s2) ** 2)
    assert tr.q2_linear == pytest.approx(0, abs=1e-12) and tr.q2_constant == pytest.approx(-(1 + s2))
    assert tr.c == pytest.approx(24) and tr.c_prime == pytest.approx(2)
    paper = output_transforms(sigma, q4_constant="paper")
    assert paper.q4_constant == pytest.approx(3 + 3 * s2 * s2 - 6 * s2)
    assert paper.q4_constant - tr.q4_constant == pytest.approx(-12 * s2)


@pytest.mark.parametrize(
    ("act", "rtol"), [("linear", 1e-8), ("tanh", 1e-8), ("cubic", 1e-8), ("gelu", 1e-8), ("celu", 1e-4)]
)
def test_hermite_conditions_hold(act, rtol):
    """q(s) = E_ξ Q4(g(s)+ξ) has zero Hermite coefficients 0..3 and E[q He_4] = c (independent quadrature).

    rtol: quadrature error; Gauss–Hermite is exact for polynomial g and slow for celu's kink in g''.
    """
    from lab.kernels.activations import activation

    sigma = 0.3
    tr = output_transforms(sigma, act)
    g, _ = activation(act)
    s, w = hermegauss(120)
    xi, v = hermegauss(40)
    w, v = w / w.sum(), v / v.sum()
    y = g(s)[:, None] + sigma * xi[None, :]
    q = tr.Q4(y) @ v
    q2 = tr.Q2(y) @ v
    he = [hermeval(s, np.eye(5)[j]) for j in range(5)]
    scale = np.abs(q).max()
    for j in range(4):
        assert abs(w @ (q * he[j])) < rtol * scale
    assert w @ (q * he[4]) == pytest.approx(tr.c, rel=rtol)
    assert abs(w @ (q2 * he[1])) < rtol * np.abs(q2).max() and abs(w @ q2) < rtol * np.abs(q2).max()
    assert w @ (q2 * he[2]) == pytest.approx(tr.c_prime, rel=rtol)


def test_transform_bad_input():
    with pytest.raises(ValueError, match="sigma"):
        output_transforms(-1.0)
    with pytest.raises(ValueError, match="q4_constant"):
        output_transforms(0.1, q4_constant="other")
    with pytest.raises(ValueError, match="g = Id"):
        output_transforms(0.1, "tanh", q4_constant="paper")
    with pytest.raises(ValueError, match=r"^act must be one of"):
        output_transforms(0.1, "swish")


def test_t_transforms_are_hermite_contractions():
    """t1(u, u) = t2(u); E[t1] = E[t2] = E[t3] = 0 and E[t2 (uᵀx)⁴] = 24‖u‖⁸/c under N(0, I) (CI)."""
    rng = np.random.default_rng(0)
    u, v = rng.standard_normal(4), rng.standard_normal(4)
    x = rng.standard_normal((400_000, 4))
    assert np.allclose(t1(u, u, x[:10], 24.0), t2(u, x[:10], 24.0))
    for values in (t1(u, v, x, 24.0), t2(u, x, 24.0), t3(u, x, 2.0)):
        lo, hi = normal_mean(values, 0.999)
        assert lo <= 0 <= hi
    lo, hi = normal_mean(t3(u, x, 2.0) * ((x @ u) ** 2 - u @ u), 0.999)
    assert lo <= (u @ u) ** 2 <= hi


def test_statistics_match_explicit_sums():
    rng = np.random.default_rng(1)
    tr = output_transforms(0.1)
    A, x, y = rng.standard_normal((3, 5)), rng.standard_normal((50, 5)), rng.standard_normal(50)
    off, diag, psi = l4_statistics(A, x, y, tr)
    q4 = tr.Q4(y)
    assert np.allclose(off, sum(q4 * t1(A[i], A[j], x, tr.c) for i in range(3) for j in range(3) if i != j))
    assert np.allclose(diag, sum(q4 * t2(A[i], x, tr.c) for i in range(3)))
    assert np.allclose(psi[:, 2], tr.Q2(y) * t3(A[2], x, tr.c_prime))


@given(st.integers(1, 4), st.integers(1, 6), st.integers(1, 40), st.integers(0, 2**31))
def test_sample_l4_gradient_matches_finite_differences(k, d, n, seed):
    rng = np.random.default_rng(seed)
    tr = output_transforms(0.2)
    A, x, y = rng.standard_normal((k, d)), rng.standard_normal((n, d)), rng.standard_normal(n)
    E = rng.standard_normal((k, d))
    value, grad = sample_l4_gradient(A, x, y, tr, REG, "numpy")
    assert value == pytest.approx(sample_l4(A, x, y, tr, REG), rel=1e-12, abs=1e-12)
    fd = _fd(lambda B: sample_l4(B, x, y, tr, REG), A, E)
    assert np.sum(grad * E) == pytest.approx(fd, rel=1e-5, abs=1e-6 * (1 + abs(value)))


@given(st.integers(1, 5), st.integers(1, 11), st.integers(1, 37), st.integers(0, 2**31))
def test_numba_kernel_agrees_with_numpy_twin(k, d, n, seed):
    rng = np.random.default_rng(seed)
    tr = output_transforms(0.05)
    A, x, y = rng.standard_normal((k, d)), rng.standard_normal((n, d)), rng.standard_normal(n)
    v1, g1 = sample_l4_gradient(A, x, y, tr, REG, "numpy")
    v2, g2 = sample_l4_gradient(A, x, y, tr, REG, "numba")
    scale = 1 + np.abs(g1).max()
    assert v2 == pytest.approx(v1, rel=1e-10, abs=1e-10)
    assert np.abs(g1 - g2).max() <= 1e-10 * scale
    _, g3 = sample_l4_gradient(
        A.astype(np.float32), x.astype(np.float32), y.astype(np.float32), tr, REG, "numba"
    )
    assert g3.dtype == np.float32 and np.abs(g1 - g3).max() <= 1e-3 * scale


def test_sample_l4_bad_backend():
    with pytest.raises(ValueError, match="backend"):
        sample_l4_gradient(np.ones((2, 2)), np.ones((3, 2)), np.ones(3), output_transforms(0.1), REG, "cuda")


def test_eq7_gradient_and_hessian_match_finite_differences():
    rng = np.random.default_rng(2)
    model = paper_model(3)
    pi = expected_gates(model.W, GaussianInput(10))
    A, E = rng.standard_normal((3, 10)), rng.standard_normal((3, 10))
    fd = _fd(lambda B: population_l4(B, model.A, pi, REG), A, E)
    assert np.sum(population_l4_gradient(A, model.A, pi, REG) * E) == pytest.approx(fd, rel=1e-7)
    H = population_l4_hessian(A, model.A, pi, REG)
    fd_h = _fd(lambda B: population_l4_gradient(B, model.A, pi, REG), A, E).ravel()
    assert np.allclose(H @ E.ravel(), fd_h, rtol=1e-6, atol=1e-6) and np.allclose(H, H.T)
    batch = rng.standard_normal((4, 3, 10))
    assert np.allclose(
        population_l4(batch, model.A, pi, REG), [population_l4(b, model.A, pi, REG) for b in batch]
    )


@pytest.mark.parametrize("q4_constant", ["hermite", "paper"])
def test_sample_l4_converges_to_eq7(q4_constant):
    """Eq. (7) inside the 99.9% CI of the sample L4 over 8 samples of 5·10⁴ (either constant of Q4)."""
    rng = np.random.default_rng(3)
    model = paper_model(2)
    tr = output_transforms(model.sigma, q4_constant=q4_constant)
    pi = expected_gates(model.W, GaussianInput(10))
    A = rng.standard_normal((2, 10)) / math.sqrt(10)
    gaps = [
        sample_l4(A, *_xy(model, 50_000, rng), tr, REG) - population_l4(A, model.A, pi, REG) for _ in range(8)
    ]
    lo, hi = normal_mean(np.array(gaps), 0.999)
    assert lo <= 0 <= hi


def _xy(model, n, rng):
    s = sample(model, GaussianInput(model.d), n, rng)
    return s.x, s.y


def test_global_minimiser_of_eq7():
    """±c_m a*_{π(i)}: zero gradient, Hessian ≻ 0 (smallest eigenvalue δ), rows scaled by D/Γ."""
    model = paper_model(3)
    pi = expected_gates(model.W, GaussianInput(10))
    c = optimal_scale(pi, REG)
    A = (c * np.array([1, -1, 1]))[[2, 0, 1], None] * model.A[[2, 0, 1]]
    assert np.abs(population_l4_gradient(A, model.A, pi, REG)).max() < 1e-12
    assert np.linalg.eigvalsh(population_l4_hessian(A, model.A, pi, REG))[0] == pytest.approx(REG.delta)
    D2 = (REG.lam * pi - REG.delta / 4) / (REG.lam * pi - REG.mu)
    assert np.allclose(c * np.sqrt(pi), np.sqrt(D2))


def test_regulariser_conditions():
    pi = np.array([0.5, 0.5])
    assert all(REG.conditions(pi).values())
    bad = L4Regularisers(0.05, 0.0, 2.0).conditions(pi)
    assert not bad["lam * min(pi) > mu (bounded below)"]
    with pytest.raises(ValueError, match="conditions"):
        optimal_scale(pi, L4Regularisers(0.05, 0.0, 2.0))
    with pytest.raises(ValueError, match="lam and delta"):
        L4Regularisers(0.1, -1.0, 0.1)
    with pytest.raises(ValueError, match="mu"):
        L4Regularisers(float("nan"), 1.0, 0.1)
    z = np.zeros((2, 10))
    model = paper_model(2)
    assert np.linalg.eigvalsh(population_l4_hessian(z, model.A, pi, REG))[0] == pytest.approx(
        REG.delta - 4 * REG.lam * 0.5
    )


def _finite_difference_hessian(f, n: int, h: float = 1e-4) -> np.ndarray:
    """Central second differences of f: R^n -> R at 0 (exact for a quartic up to O(h^2) round-off)."""
    steps = h * np.eye(n)
    H = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            pp, pm = f(steps[i] + steps[j]), f(steps[i] - steps[j])
            mp, mm = f(-steps[i] + steps[j]), f(-steps[i] - steps[j])
            H[i, j] = (pp - pm - mp + mm) / (4 * h * h)
    return H


@pytest.mark.parametrize("delta", [0.5, 1.0, 1.5, 2.5])
def test_hessian_of_eq7_at_zero(delta):
    """At A = 0 the Hessian of eq. (7) has eigenvalues δ − 4λπ_m (k each) and δ (k(d − k), outside span A*).

    With 4λπ = (0.8, 1.2, 2): δ = 2.5 makes A = 0 a strict local minimum, δ = 1 and 1.5 a saddle (so
    δ < 4λ min π is not what keeps A = 0 from being a minimum), δ = 0.5 a maximum within span(A*) and
    still a saddle in the whole space."""
    k, d, lam = 3, 6, 1.0
    A_star, pi = np.eye(k, d), np.array([0.2, 0.3, 0.5])
    reg = L4Regularisers(0.05, lam, delta)
    H = _finite_difference_hessian(lambda v: float(population_l4(v.reshape(k, d), A_star, pi, reg)), k * d)
    eigen = np.linalg.eigvalsh(H)
    expected = np.sort(np.r_[np.repeat(delta - 4 * lam * pi, k), np.full(k * (d - k), delta)])
    assert np.allclose(eigen, expected, atol=1e-6)
    assert np.allclose(H, population_l4_hessian(np.zeros((k, d)), A_star, pi, reg), atol=1e-6)
    assert (eigen.min() > 0) == (delta > 4 * lam * pi.max())  # else a saddle: δ > 0 outside span(A*)
    assert (np.sum(eigen < 0) == k * k) == (delta < 4 * lam * pi.min())  # a maximum within span(A*)


@pytest.mark.parametrize(("mu", "sparse_wins"), [(0.05, True), (-0.5, True), (-2.0, False)])
def test_wrong_sign_mu_up_to_minus_one(mu, sparse_wins):
    """k = 2, π = (½, ½): rows along a_1*, a_2* against the same rows turned by 45° in their span. The λ and δ
    terms agree; the quartic ones are −μc⁴ and (1 − μ)c⁴/2, so the rows along A* win at every scale
    exactly when μ > −1: μ > −1 is necessary there, μ > 0 (the paper's) is not."""
    A_star, pi = np.eye(2, 4), np.array([0.5, 0.5])
    reg = L4Regularisers(mu, 4.0, 2.0)
    turned = np.array([[1.0, 1.0, 0, 0], [1.0, -1.0, 0, 0]]) / math.sqrt(2)
    for c in (0.5, 1.0, 2.0):
        gap = population_l4(c * turned, A_star, pi, reg) - population_l4(c * A_star, A_star, pi, reg)
        assert gap == pytest.approx(c**4 * (1 + mu) / 2)
        assert (gap > 0) == sparse_wins


def test_transform_means_exact():
    rng = np.random.default_rng(4)
    A = rng.standard_normal((3, 4))
    inputs = GaussianMixtureInput(rng.standard_normal(4), 0.3)
    off, diag = transform_means(A, inputs, 24.0)
    assert transform_means(A, GaussianInput(4), 24.0) == (0.0, 0.0)
    x = inputs.sample(400_000, rng)
    mc = sum(t1(A[i], A[j], x, 24.0) for i in range(3) for j in range(3) if i != j)
    lo, hi = normal_mean(mc, 0.999)
    assert lo <= off <= hi
    lo, hi = normal_mean(sum(t2(A[i], x, 24.0) for i in range(3)), 0.999)
    assert lo <= diag <= hi


def test_l_log_gradient_hessian_and_posterior():
    rng = np.random.default_rng(5)
    model = paper_model(3)
    x, y = _xy(model, 3000, rng)
    W, E = rng.standard_normal((2, 10)) * 0.5, rng.standard_normal((2, 10))
    value, grad = l_log_gradient(W, model.A, x, y, model.sigma)
    assert value == pytest.approx(l_log(W, model.A, x, y, model.sigma))
    assert np.sum(grad * E) == pytest.approx(
        _fd(lambda V: l_log(V, model.A, x, y, model.sigma), W, E), rel=1e-6
    )
    fd_h = _fd(lambda V: l_log_gradient(V, model.A, x, y, model.sigma)[1], W, E).ravel()
    assert np.allclose(l_log_hessian(W, model.A, x, y, model.sigma) @ E.ravel(), fd_h, rtol=1e-5, atol=1e-7)
    r = posterior(W, model.A, x, y, model.sigma)
    assert np.allclose(r.sum(axis=0), 1.0) and np.all(r >= 0)


def test_l_log_finite_at_extreme_logits_and_bad_sigma():
    model = paper_model(2)
    x, y = _xy(model, 100, np.random.default_rng(6))
    value, grad = l_log_gradient(np.full((1, 10), 1e150), model.A, x, y, model.sigma)
    assert math.isfinite(value) and np.all(np.isfinite(grad))
    with pytest.raises(ValueError, match="sigma"):
        l_log(np.zeros((1, 10)), model.A, x, y, 0.0)


def test_project_rows():
    W = np.array([[3.0, 4.0], [0.1, 0.0], [0.0, 0.0]])
    P = project_rows(W, 1.0)
    assert np.allclose(P, [[0.6, 0.8], [0.1, 0.0], [0.0, 0.0]])
    assert np.allclose(project_rows(P, 1.0), P)
    with pytest.raises(ValueError, match="R"):
        project_rows(W, 0.0)


def test_l2_gradients_match_finite_differences():
    rng = np.random.default_rng(7)
    model = paper_model(3)
    x, y = _xy(model, 200, rng)
    A, W = rng.standard_normal((3, 10)), rng.standard_normal((2, 10))
    EA, EW = rng.standard_normal((3, 10)), rng.standard_normal((2, 10))
    _, gA, gW = l2_loss_gradient(A, W, x, y)
    assert np.sum(gA * EA) == pytest.approx(_fd(lambda B: l2_loss_gradient(B, W, x, y)[0], A, EA), rel=1e-6)
    assert np.sum(gW * EW) == pytest.approx(_fd(lambda V: l2_loss_gradient(A, V, x, y)[0], W, EW), rel=1e-6)
    _, gA_tanh, _ = l2_loss_gradient(A, W, x, y, "tanh")
    fd = _fd(lambda B: l2_loss_gradient(B, W, x, y, "tanh")[0], A, EA)
    assert np.sum(gA_tanh * EA) == pytest.approx(fd, rel=1e-6)
