"""The routed kernels agree with their NumPy twins (odd shapes, float32 and float64), deterministically."""

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.kernels import backend
from lab.kernels.activations import ACTIVATION_CODES

kernels, twins = backend("numba"), backend("numpy")

shapes = st.tuples(
    st.integers(1, 40),  # n
    st.integers(3, 9),  # P
    st.integers(1, 23),  # d (not a multiple of 8 most of the time)
    st.integers(1, 5),  # M
    st.integers(1, 6),  # J
)
TOL = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: dict(rtol=2e-4, atol=2e-5)}


def _inputs(seed, n, P, d, M, J, dtype):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, P, d)).astype(dtype)
    W = (rng.normal(size=(M, J, d)) / np.sqrt(d)).astype(dtype)
    return rng, x, W, rng.integers(0, M, n)


@given(
    shape=shapes,
    seed=st.integers(0, 2**31),
    act=st.sampled_from(sorted(ACTIVATION_CODES)),
    dtype=st.sampled_from([np.float64, np.float32]),
)
def test_routed_forward_backward_step_and_dense_agree(shape, seed, act, dtype):
    n, P, _, M, J = shape
    code = ACTIVATION_CODES[act]
    rng, x, W, routes = _inputs(seed, *shape, dtype)
    coef = rng.normal(size=n).astype(dtype)
    f, z = kernels.routed_forward(x, W, routes, code)
    f2, z2 = twins.routed_forward(x, W, routes, code)
    assert f.dtype == dtype and z.shape == (n, P, J)
    np.testing.assert_allclose(z, z2, **TOL[dtype])
    np.testing.assert_allclose(f, f2, **TOL[dtype])
    g = kernels.routed_backward(x, z, routes, coef, M, code)
    np.testing.assert_allclose(g, twins.routed_backward(x, z, routes, coef, M, code), **TOL[dtype])
    fs, gs = kernels.routed_step(x, W, routes, coef, code)
    fs2, gs2 = twins.routed_step(x, W, routes, coef, code)
    np.testing.assert_allclose(fs, fs2, **TOL[dtype])
    np.testing.assert_allclose(gs, gs2, **TOL[dtype])
    np.testing.assert_allclose(
        kernels.dense_forward(x, W, code), twins.dense_forward(x, W, code), **TOL[dtype]
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("P, d, M, J", [(5, 13, 3, 5), (3, 50, 1, 1), (4, 8, 8, 16)])
def test_multi_chunk_reductions_agree_with_twins(P, d, M, J, dtype):
    """n large enough that the gradient reductions split the samples into several chunks.

    The reference is the twin in float64 on the same (rounded) inputs: over thousands of float32
    terms the float32 twin's own rounding error exceeds the float32 tolerance.
    """
    n = 2600
    rng, x, W, routes = _inputs(3, n, P, d, M, J, dtype)
    coef = rng.normal(size=n).astype(dtype)
    z = kernels.routed_forward(x, W, routes, 0)[1]
    x64, W64, z64, coef64 = (a.astype(np.float64) for a in (x, W, z, coef))
    np.testing.assert_allclose(
        kernels.routed_backward(x, z, routes, coef, M, 0),
        twins.routed_backward(x64, z64, routes, coef64, M, 0),
        **TOL[dtype],
    )
    fs, gs = kernels.routed_step(x, W, routes, coef, 0)
    fs2, gs2 = twins.routed_step(x64, W64, routes, coef64, 0)
    np.testing.assert_allclose(fs, fs2, **TOL[dtype])
    np.testing.assert_allclose(gs, gs2, **TOL[dtype])


@given(
    n=st.integers(1, 1500),
    M=st.integers(1, 9),
    seed=st.integers(0, 2**31),
    dtype=st.sampled_from([np.float64, np.float32]),
)
def test_softmax_logit_gradient_equals_its_twin_bit_for_bit(n, M, seed, dtype):
    """(E.1)'s ∂L/∂h in the twin's two roundings and order: equal, not close (training's bits rest on it)."""
    rng = np.random.default_rng(seed)
    pi, routes = rng.dirichlet(np.ones(M), size=n).astype(dtype), rng.integers(0, M, n)
    c = rng.normal(size=n) * 10.0 ** rng.integers(-30, 30, n)  # finite in float32 too
    dh = kernels.softmax_logit_gradient(pi, routes, c)
    assert dh.dtype == dtype
    np.testing.assert_array_equal(dh, twins.softmax_logit_gradient(pi, routes, c))


@given(
    n=st.integers(1, 1500),
    M=st.integers(1, 9),
    seed=st.integers(0, 2**31),
    scale=st.sampled_from([1.0, 1e3, 1e300]),
    dtype=st.sampled_from([np.float64, np.float32]),
)
def test_softmax_gate_agrees_with_twin_at_any_logit_scale(n, M, seed, scale, dtype):
    rng = np.random.default_rng(seed)
    h = (rng.normal(size=(n, M)) * min(scale, float(np.finfo(dtype).max) / 10)).astype(dtype)
    routes = rng.integers(0, M, n)
    g, pi = kernels.softmax_gate(h, routes)
    g2, pi2 = twins.softmax_gate(h, routes)
    assert np.all(np.isfinite(pi)) and pi.dtype == dtype
    np.testing.assert_allclose(pi, pi2, **TOL[dtype])
    np.testing.assert_allclose(g, g2, **TOL[dtype])


@given(
    n=st.integers(1, 300),
    M=st.integers(1, 40),
    seed=st.integers(0, 2**63 - 1),
    noise=st.sampled_from(sorted(kernels.NOISE_CODES)),
    dtype=st.sampled_from([np.float64, np.float32]),
    order=st.sampled_from(["C", "F"]),
    infinite=st.sampled_from([0.0, np.inf, -np.inf]),
)
def test_perturbed_argmax_is_bit_identical_to_twin(n, M, seed, noise, dtype, order, infinite):
    """Routes of either dtype and layout, a row of h may hold ±inf (the first of equal maxima wins)."""
    rng = np.random.default_rng(seed % 1000)
    h = rng.normal(size=(n, M))
    if infinite:
        h[rng.integers(0, n, 3), rng.integers(0, M, 3)] = infinite
    h = np.asarray(h, dtype=dtype, order=order)
    code = kernels.NOISE_CODES[noise]
    routes = kernels.perturbed_argmax(h, seed, code, 0.0 if code == 0 else 1.0, 1.0)
    np.testing.assert_array_equal(
        routes, twins.perturbed_argmax(h, seed, code, 0.0 if code == 0 else 1.0, 1.0)
    )
    counts = kernels.routing_counts(h[0], 997, seed, code, 0.5, 1.5)
    np.testing.assert_array_equal(counts, twins.routing_counts(h[0], 997, seed, code, 0.5, 1.5))
    assert counts.sum() == 997


def test_perturbed_argmax_compares_float32_logits_in_float64():
    """h_{i,1} is h_{i,0} + r_{i,0} − r_{i,1} rounded to float32: the sums tie in float32 and differ in
    float64, where the twin compares them, so a kernel comparing in float32 picks other routes."""
    seed, n = 5, 64
    r = twins.noise(twins.stream_key(seed), np.arange(2 * n), 0, 0.0, 1.0).reshape(n, 2)
    h = np.ones((n, 2), dtype=np.float32)
    h[:, 1] = 1.0 + r[:, 0] - r[:, 1]
    wide, narrow = h + r, (h + r).astype(np.float32)
    assert np.any((narrow[:, 0] == narrow[:, 1]) & (wide[:, 1] > wide[:, 0]))  # the case exists
    np.testing.assert_array_equal(kernels.perturbed_argmax(h, seed, 0, 0.0, 1.0), np.argmax(wide, axis=1))
    np.testing.assert_array_equal(twins.perturbed_argmax(h, seed, 0, 0.0, 1.0), np.argmax(wide, axis=1))


@pytest.mark.parametrize("noise", sorted(kernels.NOISE_CODES))
def test_noise_has_the_stated_distribution(noise):
    from scipy import stats

    code = kernels.NOISE_CODES[noise]
    draws = twins.noise(twins.stream_key(11), np.arange(200_000), code, 0.5 if code else 2.0, 3.0)
    reference = {
        "uniform": stats.uniform(2.0, 1.0),
        "gaussian": stats.norm(0, 0.5),
        "gumbel": stats.gumbel_r(0, 0.5),
    }[noise]
    assert stats.kstest(draws, reference.cdf).pvalue > 1e-3


def test_results_do_not_depend_on_thread_count():
    rng, x, W, routes = _inputs(5, 3001, 4, 50, 8, 16, np.float64)
    margin = rng.normal(size=3001)
    h = rng.normal(size=(3001, 8))
    z = twins.routed_forward(x, W, routes, 0)[1]
    before = numba.get_num_threads()
    runs = []
    try:
        for threads in (1, before):
            numba.set_num_threads(threads)
            runs.append(
                (
                    kernels.routed_step(x, W, routes, margin, 0),
                    kernels.routed_backward(x, z, routes, margin, 8, 0),
                    kernels.perturbed_argmax(h, 9, 0, 0.0, 1.0),
                    kernels.routing_counts(h[0], 5000, 9, 1, 1.0, 0.0),
                    kernels.softmax_gate(h[:, :7], routes % 7),
                )
            )
    finally:
        numba.set_num_threads(before)
    (f1, g1), b1, r1, c1, (gate1, pi1) = runs[0]
    (f2, g2), b2, r2, c2, (gate2, pi2) = runs[1]
    np.testing.assert_array_equal(gate1, gate2)
    np.testing.assert_array_equal(pi1, pi2)
    np.testing.assert_array_equal(f1, f2)
    np.testing.assert_array_equal(g1, g2)
    np.testing.assert_array_equal(b1, b2)
    np.testing.assert_array_equal(r1, r2)
    np.testing.assert_array_equal(c1, c2)


def test_same_seed_same_routes_different_seed_different_routes():
    h = np.zeros((1000, 8))
    a, b, c = (kernels.perturbed_argmax(h, s, 0, 0.0, 1.0) for s in (1, 1, 2))
    np.testing.assert_array_equal(a, b)
    assert np.mean(a != c) > 0.8


@given(
    seed=st.integers(0, 2**63 - 1),
    n=st.integers(0, 700),
    offset=st.integers(0, 2**62),
    code=st.sampled_from(sorted(kernels.NOISE_CODES.values())),
    dtype=st.sampled_from([np.int64, np.uint64]),
)
def test_noise_kernel_matches_twin(seed, n, offset, code, dtype):
    """Uniform draws are bit-identical; Gaussian and Gumbel draws agree to a few ulp.

    The transforms call log and cos: Numba calls the C library, NumPy its own SIMD loops, which on
    AVX-512 machines differ from the C library by an ulp (seen: 1.1e-16 at 0.86). 4 ulp of the
    result, or of a where a Gumbel draw is near 0 (log(−log u) cancels there), covers that."""
    key = twins.stream_key(seed)
    assert kernels.stream_key(seed) == key
    index = (np.arange(n, dtype=np.uint64) * np.uint64(7) + np.uint64(offset)).astype(dtype)
    a, b = (-1.5, 2.5) if code == 0 else (0.75, 0.0)
    draws = kernels.noise(key, index, code, a, b)
    assert draws.shape == (n,) and draws.dtype == np.float64
    twin = twins.noise(key, index, code, a, b)
    if code == kernels.NOISE_CODES["uniform"]:
        np.testing.assert_array_equal(draws, twin)
    else:
        ulp = 4 * np.finfo(np.float64).eps
        np.testing.assert_allclose(draws, twin, rtol=ulp, atol=ulp * a)


@pytest.mark.parametrize("lib", [kernels, twins], ids=lambda lib: lib.name)
def test_noise_rejects_an_unknown_code(lib):
    with pytest.raises(ValueError, match=r"^code must be one of 0 \(uniform\), 1 \(gaussian\), 2 \(gumbel\)"):
        lib.noise(lib.stream_key(1), np.arange(3), 3, 0.0, 1.0)


@pytest.mark.parametrize("lib", [kernels, twins], ids=lambda lib: lib.name)
def test_a_filter_width_other_than_d_is_refused_naming_d(lib):
    """x has P = 3 patches of d = 5: the message names d = 5 (not P) and W's shape."""
    x, W = np.zeros((2, 3, 5)), np.zeros((1, 2, 4))
    with pytest.raises(ValueError, match=r"d = x\.shape\[2\] = 5, got \(1, 2, 4\)"):
        lib.routed_forward(x, W, np.zeros(2, dtype=np.int64), 0)
