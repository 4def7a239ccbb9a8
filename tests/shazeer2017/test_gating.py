"""Noisy top-k gating (lab.shazeer2017.gating) and its two Numba kernels against their NumPy twins."""

import math

import numba
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import special, stats

from lab.kernels import gating as kernels
from lab.shazeer2017 import gating

EPS = np.finfo(np.float64).eps
H_STEP = 1e-30


def problem(seed, n=9, d=4, M=7, noise=0.5):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(n, d)),
        rng.normal(size=(d, M)),
        noise * rng.normal(size=(d, M)),
        rng.normal(size=(n, M)),
    )


def complex_step(f, x, V):
    return np.imag(f(x + 1j * H_STEP * V)) / H_STEP


tied_logits = st.integers(1, 9).flatmap(
    lambda M: st.tuples(
        arrays(np.float64, (3, M), elements=st.sampled_from([-1e6, -1.0, 0.0, 0.5, 1.0, 1e6])),
        st.integers(1, M),
    )
)


# ---------------------------------------------------------------------------- gate


def test_tie_rule_keeps_lowest_index():
    H = np.array([[1.0, 2.0, 2.0, 2.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(
        gating.top_k_mask(H, 2), [[False, True, True, False, False], [True, True, False, False, False]]
    )
    np.testing.assert_array_equal(gating.top_k_gates(H, 2), [[0, 0.5, 0.5, 0, 0], [0.5, 0.5, 0, 0, 0]])


def test_gate_is_finite_at_extreme_gaps_and_underflows_honestly():
    G = gating.top_k_gates(np.array([[1e6, -1e6, 0.0], [1e300, -1e300, 1e300]]), 2)
    assert np.all(np.isfinite(G))
    np.testing.assert_array_equal(G, [[1.0, 0.0, 0.0], [0.5, 0.0, 0.5]])
    # the kept gate at 0 is e^{-1e6}: below every double, so it is 0 although it is kept
    np.testing.assert_array_equal(gating.top_k_mask(np.array([[1e6, -1e6, 0.0]]), 2), [[True, False, True]])


def test_gate_matches_softmax_of_masked_logits():
    rng = np.random.default_rng(0)
    H = rng.normal(size=(6, 5))
    masked = np.where(gating.top_k_mask(H, 3), H, -np.inf)
    np.testing.assert_allclose(gating.top_k_gates(H, 3), special.softmax(masked, axis=1), rtol=1e-14)


def test_gate_accepts_one_row_and_k_equal_M():
    H = np.array([0.3, -1.0, 2.0])
    np.testing.assert_allclose(gating.top_k_gates(H, 3), np.exp(H) / np.exp(H).sum(), rtol=1e-14)
    np.testing.assert_array_equal(gating.top_k_gates(H, 1), [0.0, 0.0, 1.0])


@pytest.mark.parametrize("k", [0, 4, -1])
def test_k_out_of_range_is_a_value_error_naming_k(k):
    with pytest.raises(ValueError, match="k must be an integer in"):
        gating.top_k_gates(np.zeros((2, 3)), k)


@pytest.mark.parametrize("k", [1.0, True, "2"])
def test_k_of_wrong_type_is_a_type_error(k):
    with pytest.raises(TypeError, match="k must be an integer"):
        gating.top_k_mask(np.zeros((2, 3)), k)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_logits_are_rejected(bad):
    with pytest.raises(ValueError, match="H must be finite"):
        gating.top_k_gates(np.array([[0.0, bad]]), 1)


def test_shape_mismatch_and_bad_backend_are_rejected():
    z = np.zeros((2, 3))
    with pytest.raises(ValueError, match="raw_noise must have shape"):
        gating.noisy_logits(z, np.zeros((2, 4)), z)
    with pytest.raises(ValueError, match="backend"):
        gating.gate_and_load(z, z, z, 1, backend="torch")
    with pytest.raises(ValueError, match="x must have"):
        gating.load_loss_and_gradients(np.zeros((2, 5)), z.T, z.T, z, 1)


def test_noisy_logits_follow_the_definition():
    x, W_g, W_noise, xi = problem(1)
    H = gating.noisy_logits(x @ W_g, x @ W_noise, xi)
    np.testing.assert_allclose(H, x @ W_g + xi * np.log1p(np.exp(x @ W_noise)), rtol=1e-13)
    G = gating.noisy_top_k_gating(x, W_g, W_noise, xi, 3)
    np.testing.assert_array_equal(G, gating.top_k_gates(H, 3))


def test_softplus_and_logistic_are_stable_and_exact():
    z = np.array([-800.0, -30.0, 0.0, 30.0, 800.0])
    np.testing.assert_allclose(gating.softplus(z), np.logaddexp(0.0, z), rtol=1e-15)
    np.testing.assert_allclose(gating.logistic(z), special.expit(z), rtol=1e-15)
    np.testing.assert_allclose(complex_step(gating.softplus, z, 1.0), gating.logistic(z), rtol=1e-15)


# ---------------------------------------------------------------------------- kth_excluding and P


@given(tied_logits)
@example((np.array([[2.0, 2.0, 2.0, 1.0]] * 3), 2))
def test_kth_excluding_is_the_kth_largest_of_the_others(case):
    H, k = case
    M = H.shape[1]
    value, index = gating.kth_excluding(H, k)
    for r in range(H.shape[0]):
        for i in range(M):
            others = np.delete(H[r], i)
            want = np.sort(others)[::-1][k - 1] if k < M else -np.inf
            assert value[r, i] == want
            if k < M:
                assert index[r, i] != i and H[r, index[r, i]] == want


def test_smooth_load_is_phi_of_the_standardized_gap():
    x, W_g, W_noise, xi = problem(2)
    clean, scale = x @ W_g, gating.softplus(x @ W_noise)
    H = clean + xi * scale
    threshold, _ = gating.kth_excluding(H, 2)
    np.testing.assert_allclose(
        gating.smooth_load(clean, scale, H, 2), stats.norm.cdf((clean - threshold) / scale), rtol=1e-13
    )


def test_smooth_load_is_one_for_k_equal_M_and_finite_at_tiny_scale():
    rng = np.random.default_rng(3)
    clean, H = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    np.testing.assert_array_equal(gating.smooth_load(clean, np.ones((4, 3)), H, 3), 1.0)
    P = gating.smooth_load(clean, np.full((4, 3), 1e-320), H, 1)
    assert set(np.unique(P)) <= {0.0, 1.0}
    loss = gating.load_loss(clean, np.full((4, 3), 1e-320), H, 1)
    assert np.all(np.isfinite(loss.d_scale)) and np.all(np.isfinite(loss.d_H))


def test_zero_noise_scale_is_rejected():
    z = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"^scale must be > 0"):
        gating.smooth_load(z, z, z, 1)
    with pytest.raises(ValueError, match=r"^W_noise must keep the raw noise logits"):
        gating.load_loss_and_gradients(np.ones((2, 1)), np.zeros((1, 3)), np.full((1, 3), -800.0), z, 1)


# ---------------------------------------------------------------------------- losses and gradients


def test_cv_squared_is_population_variance_over_mean_squared():
    v = np.array([1.0, 2.0, 6.0, 3.0])
    assert gating.cv_squared(v) == pytest.approx(np.var(v) / np.mean(v) ** 2, rel=1e-15)
    for j in range(v.size):
        e = np.eye(v.size)[j]
        assert gating.cv_squared_gradient(v)[j] == pytest.approx(
            complex_step(gating.cv_squared, v, e), rel=1e-13
        )
    with pytest.raises(ValueError, match="mean of v is 0"):
        gating.cv_squared(np.array([1.0, -1.0]))


def test_importance_is_the_column_sum_of_the_gate():
    H = np.random.default_rng(4).normal(size=(10, 6))
    G = gating.top_k_gates(H, 2)
    np.testing.assert_allclose(gating.importance(G), G.sum(axis=0))
    loss = gating.importance_loss(H, 2, w=0.3)
    assert loss.loss == pytest.approx(0.3 * np.var(G.sum(0)) / np.mean(G.sum(0)) ** 2, rel=1e-14)


@pytest.mark.parametrize("k", [2, 3, 6])
def test_importance_gradient_in_the_logits_equals_complex_step(k):
    H = np.random.default_rng(5).normal(size=(10, 6))
    V = np.random.default_rng(6).normal(size=H.shape)
    d_H = gating.importance_loss(H, k, w=2.0).d_H
    assert np.sum(d_H * V) == pytest.approx(
        complex_step(lambda h: gating.importance_loss(h, k, 2.0).loss, H, V)
    )


def test_importance_gradient_vanishes_for_top1():
    # k = 1: Shazeer's gate G is one-hot, piecewise constant in H (the π-gated loss below is not)
    H = np.random.default_rng(7).normal(size=(10, 6))
    loss = gating.importance_loss(H, 1)
    assert loss.loss > 0 and np.all(loss.d_H == 0)


@pytest.mark.parametrize("k", [1, 2, 6])
def test_softmax_gate_importance_gradient_equals_complex_step(k):
    H = np.random.default_rng(12).normal(size=(10, 6))
    V = np.random.default_rng(13).normal(size=H.shape)
    d_H = gating.softmax_gate_importance_loss(H, k, w=2.0).d_H
    assert np.sum(d_H * V) == pytest.approx(
        complex_step(lambda h: gating.softmax_gate_importance_loss(h, k, 2.0).loss, H, V), rel=1e-12
    )


def test_softmax_gate_importance_is_nonzero_at_top1_sums_to_zero_and_is_shazeers_at_k_equal_M():
    H = np.random.default_rng(14).normal(size=(10, 6))
    top1 = gating.softmax_gate_importance_loss(H, 1)
    pi = gating.top_k_gates(H, 6)
    kept = gating.top_k_mask(H, 1)
    imp = np.where(kept, pi, 0).sum(axis=0)
    assert top1.loss == pytest.approx(np.var(imp) / np.mean(imp) ** 2, rel=1e-14)
    assert np.linalg.norm(top1.d_H) > 1e-3
    np.testing.assert_allclose(top1.d_H.sum(axis=1), 0, atol=1e-15)  # Lemma E.1 of Chen et al.
    full, shazeer = gating.softmax_gate_importance_loss(H, 6, 0.5), gating.importance_loss(H, 6, 0.5)
    assert full.loss == pytest.approx(shazeer.loss, rel=1e-14)
    np.testing.assert_allclose(full.d_H, shazeer.d_H, rtol=1e-12, atol=1e-17)


@pytest.mark.parametrize("k, w", [(0, 1.0), (7, 1.0), (1, float("nan"))])
def test_softmax_gate_importance_rejects_bad_k_and_w(k, w):
    with pytest.raises(ValueError, match=r"\bk\b|\bw\b"):
        gating.softmax_gate_importance_loss(np.zeros((3, 6)), k, w)


@pytest.mark.parametrize("k", [1, 2, 4])
def test_load_partials_in_the_logits_equal_complex_step(k):
    rng = np.random.default_rng(8 + k)
    clean, scale, H = rng.normal(size=(12, 5)), 0.2 + rng.random((12, 5)), rng.normal(size=(12, 5))
    loss = gating.load_loss(clean, scale, H, k, w=1.5)

    def f(c=clean, s=scale, h=H):
        return gating.load_loss(c, s, h, k, 1.5).loss

    V = rng.normal(size=H.shape)
    assert np.sum(loss.d_clean * V) == pytest.approx(complex_step(lambda c: f(c=c), clean, V), rel=1e-12)
    assert np.sum(loss.d_scale * V) == pytest.approx(complex_step(lambda s: f(s=s), scale, V), rel=1e-12)
    assert np.sum(loss.d_H * V) == pytest.approx(complex_step(lambda h: f(h=h), H, V), rel=1e-12)
    # the threshold flow reaches exactly the two threshold experts of each row
    assert np.all((loss.d_H != 0).sum(axis=1) <= 2)


def test_load_loss_is_zero_with_zero_gradient_for_k_equal_M():
    loss = gating.load_loss(np.zeros((3, 4)), np.ones((3, 4)), np.ones((3, 4)), 4)
    assert loss.loss == 0 and not np.any(loss.d_clean) and not np.any(loss.d_scale) and not np.any(loss.d_H)


@pytest.mark.parametrize(
    "fn",
    [
        gating.importance_loss_and_gradients,
        gating.softmax_gate_importance_loss_and_gradients,
        gating.load_loss_and_gradients,
    ],
)
@pytest.mark.parametrize("weight", ["W_g", "W_noise"])
def test_router_gradients_equal_complex_step_and_central_differences(fn, weight):
    x, W_g, W_noise, xi = problem(9, n=40)
    result = fn(x, W_g, W_noise, xi, 3, 0.7)
    grad = result.grad_W_g if weight == "W_g" else result.grad_W_noise
    V = np.random.default_rng(10).normal(size=W_g.shape)

    def loss(W):
        return fn(x, W, W_noise, xi, 3, 0.7).loss if weight == "W_g" else fn(x, W_g, W, xi, 3, 0.7).loss

    W0 = W_g if weight == "W_g" else W_noise
    scale = np.linalg.norm(grad) * np.linalg.norm(V)
    assert abs(np.sum(grad * V) - complex_step(loss, W0, V)) <= 1e3 * EPS * scale
    h = EPS ** (1 / 3)
    assert abs(np.sum(grad * V) - (loss(W0 + h * V) - loss(W0 - h * V)) / (2 * h)) <= 1e-7 * scale


def test_dropping_the_threshold_path_changes_the_gradient():
    x, W_g, W_noise, xi = problem(11, n=40)
    clean, raw = x @ W_g, x @ W_noise
    part = gating.load_loss(clean, gating.softplus(raw), clean + xi * gating.softplus(raw), 2)
    full = gating.router_gradients(x, raw, xi, part.d_clean, part.d_scale, part.d_H)
    cut = gating.router_gradients(x, raw, xi, part.d_clean, part.d_scale, 0 * part.d_H)
    assert np.linalg.norm(full[0] - cut[0]) > 0.1 * np.linalg.norm(full[0])


# ---------------------------------------------------------------------------- kernels vs twins


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-13), (np.float32, 2e-6)])
@pytest.mark.parametrize("shape, k", [((7, 5), 1), ((7, 5), 2), ((13, 9), 4), ((3, 5), 5), ((1, 1), 1)])
def test_gate_and_load_kernel_matches_twin(shape, k, dtype, rtol):
    rng = np.random.default_rng(12)
    clean, raw, xi = (rng.normal(size=shape).astype(dtype) for _ in range(3))
    G, P = gating.gate_and_load(clean, raw, xi, k, backend="numba")
    G2, P2 = gating.gate_and_load(clean, raw, xi, k, backend="numpy")
    assert G.dtype == dtype and P.dtype == dtype
    np.testing.assert_array_equal(G > 0, G2 > 0)
    np.testing.assert_allclose(G, G2, rtol=rtol, atol=rtol * 1e-3)
    np.testing.assert_allclose(P, P2, rtol=rtol, atol=rtol * 1e-3)


@given(tied_logits)
def test_gate_kernel_matches_twin_on_ties_and_gaps(case):
    H, k = case
    zeros = np.zeros_like(H)
    G, _ = kernels.noisy_top_k_gate_and_load(H, zeros, zeros, k)
    np.testing.assert_allclose(G, gating.top_k_gates(H, k), rtol=1e-15, atol=0)


def test_numba_backend_rejects_underflowing_noise_scale():
    z = np.zeros((2, 3))
    with pytest.raises(ValueError, match="raw_noise"):
        gating.gate_and_load(z, np.full((2, 3), -800.0), z, 1)


@pytest.mark.parametrize("resample_all", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape, k", [((3, 5), 2), ((2, 7), 1), ((1, 3), 3)])
def test_membership_kernel_matches_twin_exactly(shape, k, dtype, resample_all):
    rng = np.random.default_rng(13)
    clean, xi = rng.normal(size=shape).astype(dtype), rng.normal(size=shape).astype(dtype)
    scale = (0.1 + rng.random(shape)).astype(dtype)
    args = (clean, scale, xi, k, 257, 21, resample_all)
    np.testing.assert_array_equal(
        gating.top_k_membership_counts(*args, backend="numba"),
        gating.top_k_membership_counts(*args, backend="numpy"),
    )


def test_membership_kernel_is_deterministic_and_thread_count_free():
    rng = np.random.default_rng(14)
    clean, xi, scale = rng.normal(size=(3, 6)), rng.normal(size=(3, 6)), np.ones((3, 6))
    first = gating.top_k_membership_counts(clean, scale, xi, 2, 2000, 5, True)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        single = gating.top_k_membership_counts(clean, scale, xi, 2, 2000, 5, True)
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(first, single)
    assert not np.array_equal(first, gating.top_k_membership_counts(clean, scale, xi, 2, 2000, 6, True))


def test_membership_frequencies_with_all_noise_resampled_sum_to_k():
    # resampling every ξ: memberships per draw sum to k, so the expected row sum is k·draws
    rng = np.random.default_rng(15)
    clean, xi, scale = rng.normal(size=(2, 5)), rng.normal(size=(2, 5)), np.ones((2, 5))
    counts = gating.top_k_membership_counts(clean, scale, xi, 2, 40_000, 1, True)
    sd = math.sqrt(5 * 40_000 * 0.25)
    assert np.all(np.abs(counts.sum(axis=1) - 2 * 40_000) < 5 * sd)


@pytest.mark.parametrize(
    "bad, error",
    [
        ({"draws": 0}, ValueError),
        ({"draws": 2.5}, TypeError),
        ({"seed": -1}, ValueError),
        ({"seed": 2**64}, ValueError),
        ({"seed": 1.0}, TypeError),
        ({"resample_all": 1}, TypeError),
    ],
)
@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_membership_arguments_are_validated(bad, error, backend):
    z = np.zeros((1, 3))
    args = {"draws": 10, "seed": 0} | bad
    with pytest.raises(error, match=next(iter(bad))):
        gating.top_k_membership_counts(z, np.ones((1, 3)), z, 1, **args, backend=backend)


@pytest.mark.parametrize("seed", [2**63 - 1, 2**63, 2**64 - 1, np.uint64(2**64 - 1)])
def test_membership_seeds_cover_64_bits_on_both_backends(seed):
    rng = np.random.default_rng(16)
    clean, xi = rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    args = (clean, np.ones((2, 4)), xi, 2, 300, seed, True)
    counts = gating.top_k_membership_counts(*args, backend="numba")
    np.testing.assert_array_equal(counts, gating.top_k_membership_counts(*args, backend="numpy"))
    assert np.all((0 <= counts) & (counts <= 300)) and counts.sum() > 0
