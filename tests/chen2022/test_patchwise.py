"""lab.chen2022.patchwise: patch-additive F, the App. B orbit, error rates, floors and witnesses."""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from lab.chen2022.data import DataConfig, UniformRange, make_signals, sample, setting
from lab.chen2022.model import MoEParams, expert_outputs, gate_values
from lab.chen2022.patch_functions import CNNFilter, ProjectionLookup, random_cnn
from lab.chen2022.patchwise import (
    FLOOR,
    PatchAdditive,
    PatchProduct,
    RoutedMoE,
    attaining_witness,
    enumerated_error,
    error_rate,
    feature_sum,
    orbit,
    orbit_floor,
    orbit_margins,
    orbit_residual,
    overlap_mass,
    relu_witness,
    search_aligned_lookup,
    summation_allowance,
)


def _setup(config=None, n=400, seed=0):
    config = config or DataConfig(K=3, P=5, d=14, alpha=UniformRange(0.5, 2.0), gamma=UniformRange(0.5, 2.0))
    rng = np.random.default_rng(seed)
    signals = make_signals(config, rng)
    return config, signals, sample(config, signals, n, rng), rng


def test_patch_additive_cnn_without_bias_is_the_papers_expert():
    config, _, data, rng = _setup()
    W = rng.standard_normal((1, 6, config.d))
    F = PatchAdditive(CNNFilter(W[0], np.zeros(6), np.ones(6), "cubic"))
    np.testing.assert_allclose(F(data.x), expert_outputs(data.x, W, "cubic")[:, 0], rtol=1e-10, atol=1e-10)


def test_product_and_routed_moe_formulas():
    config, signals, data, rng = _setup()
    f = random_cnn(rng, signals, 4, "tanh")
    np.testing.assert_allclose(PatchProduct(f)(data.x), np.prod(f(data.x), axis=1))
    params = MoEParams(rng.standard_normal((config.d, 3)), rng.standard_normal((3, 2, config.d)))
    h = data.x.sum(axis=1) @ params.Theta
    m = np.argmax(h, axis=1)
    expected = (
        gate_values(h)[np.arange(data.n), m] * expert_outputs(data.x, params.W, "cubic")[np.arange(data.n), m]
    )
    np.testing.assert_allclose(RoutedMoE(params)(data.x), expected)


def test_orbit_points_are_samples_of_d_with_eps_equal_minus_label():
    config, signals, data, rng = _setup(n=300)
    orb = orbit(data, signals, rng)
    chosen = np.flatnonzero(data.eps == -data.y)
    assert orb.x.shape == (4, chosen.size, config.P, config.d)
    V, C = signals.V, signals.C
    latents = (data.y, data.cluster, data.noise_cluster, data.alpha, data.beta, data.gamma)
    for i, (y, k, kk, a, b, g) in enumerate(zip(*(v[chosen] for v in latents), strict=True)):
        expected = [
            (y, [a * y * V[k], b * C[k], -g * y * V[kk]]),
            (-y, [-a * y * V[k], b * C[k], g * y * V[kk]]),
            (y, [g * y * V[kk], b * C[kk], -a * y * V[k]]),
            (-y, [-g * y * V[kk], b * C[kk], a * y * V[k]]),
        ]
        for point, (label, roles) in enumerate(expected):
            assert orb.labels[point, i] == label
            patches = orb.x[point, i]
            for role in roles:  # each role patch present exactly once; the rest are the sample's noise
                assert np.sum(np.all(np.abs(patches - role) < 1e-12, axis=1)) == 1
    np.testing.assert_array_equal(  # point 1 is the sample itself, reshuffled
        np.sort(orb.x[0].reshape(chosen.size, -1), axis=1),
        np.sort(data.x[chosen].reshape(chosen.size, -1), axis=1),
    )
    assert not np.array_equal(orb.x[0], data.x[chosen])  # the patch order was redrawn


def test_orbit_margins_cancel_for_additive_and_not_for_product():
    config, signals, data, rng = _setup()
    orb = orbit(data, signals, rng)
    witness = PatchAdditive(attaining_witness(config, signals))
    np.testing.assert_array_equal(orbit_margins(witness, orb).sum(axis=0), 0.0)  # exact halves
    f = random_cnn(rng, signals, 6, "celu")
    assert orbit_residual(PatchAdditive(f), orb).max() <= summation_allowance(config.P)
    assert np.median(orbit_residual(PatchProduct(f), orb)) > 1e-3


def test_residual_is_zero_not_nan_when_f_vanishes():
    config, signals, data, rng = _setup()
    zero = ProjectionLookup(np.eye(config.d)[:1], [], [[0.0]])
    assert np.array_equal(
        orbit_residual(PatchAdditive(zero), orbit(data, signals, rng)), np.zeros((data.eps == -data.y).sum())
    )


def test_orbit_needs_a_sample_with_eps_equal_minus_y():
    _, signals, data, rng = _setup(n=50)
    keep = data.eps == data.y
    only_agree = type(data)(*(getattr(data, f)[keep] for f in data.__dataclass_fields__))
    with pytest.raises(ValueError, match="ε = −y"):
        orbit(only_agree, signals, rng)


def test_summation_allowance():
    assert summation_allowance(4) == pytest.approx(15 * 2.0**-53)
    with pytest.raises(ValueError, match="P"):
        summation_allowance(2)


def test_error_rate_counts_ties_as_errors_and_has_a_ci():
    config, signals, data, _ = _setup()
    zero = PatchAdditive(ProjectionLookup(np.eye(config.d)[:1], [], [[0.0]]))
    assert error_rate(zero, data).errors == data.n
    estimate = error_rate(PatchAdditive(feature_sum(signals)), data)
    assert estimate.ci[0] <= estimate.rate <= estimate.ci[1] and estimate.n == data.n


def test_feature_sum_is_y_alpha_plus_eps_gamma_plus_noise():
    _, signals, data, _ = _setup()
    noise = np.array(
        [
            np.delete(data.x[i], data.positions[i], axis=0).sum(axis=0) @ signals.V.sum(axis=0)
            for i in range(data.n)
        ]
    )
    expected = data.y * data.alpha + data.eps * data.gamma + noise
    np.testing.assert_allclose(PatchAdditive(feature_sum(signals))(data.x), expected, atol=1e-12)


@given(a=st.floats(0.1, 3.0), wa=st.floats(0.05, 2.0), c=st.floats(0.1, 3.0), wc=st.floats(0.05, 2.0))
# Fuzz-found: equal ranges whose |I|**2 / |I|² rounded to 1 + 2⁻⁵², so the floor exceeded 1/8.
@example(a=0.5, wa=0.07526451143966051, c=0.5, wc=0.07526451143966051)
def test_overlap_mass_is_the_swap_invariant_mass(a, wa, c, wc):
    alpha, gamma = UniformRange(a, a + wa), UniformRange(c, c + wc)
    nodes = np.unique(
        np.concatenate([np.linspace(0.0, 5.2, 50), [alpha.low, alpha.high, gamma.low, gamma.high]])
    )
    mid, width = (nodes[:-1] + nodes[1:]) / 2, np.diff(nodes)  # the densities are constant on every cell
    pa = ((mid >= alpha.low) & (mid <= alpha.high)) / wa
    pg = ((mid >= gamma.low) & (mid <= gamma.high)) / wc
    integral = (np.minimum(np.outer(pa, pg), np.outer(pg, pa)) * np.outer(width, width)).sum()
    assert overlap_mass(alpha, gamma) == pytest.approx(integral, rel=1e-9, abs=1e-12)
    assert overlap_mass(alpha, gamma) == pytest.approx(overlap_mass(gamma, alpha))
    assert 0.0 <= orbit_floor(alpha, gamma) <= FLOOR


def test_floor_values():
    assert orbit_floor(UniformRange(0.5, 2), UniformRange(0.5, 2)) == FLOOR
    assert orbit_floor(setting(1).alpha, setting(1).gamma) == pytest.approx(0.6 / 8)
    assert orbit_floor(UniformRange(2, 3), UniformRange(0.5, 1)) == 0.0


@pytest.mark.parametrize("K", [2, 3, 4, 6])
def test_witness_error_is_exactly_one_eighth(K):
    config, signals, _, _ = _setup(
        DataConfig(K=K, P=4, d=2 * K + 3, alpha=UniformRange(1, 2), gamma=UniformRange(1, 2))
    )
    assert enumerated_error(PatchAdditive(attaining_witness(config, signals)), config, signals) == FLOOR


@pytest.mark.parametrize(
    ("alpha", "gamma"),
    [((0.5, 2.0), (0.5, 3.0)), ((1.0, 2.0), (1.5, 2.5)), ((2.0, 3.0), (0.5, 1.0)), ((0.5, 1.0), (2.0, 3.0))],
)
def test_witness_attains_the_partial_overlap_floor(alpha, gamma):
    config = DataConfig(alpha=UniformRange(*alpha), gamma=UniformRange(*gamma))
    _, signals, data, _ = _setup(config, n=20_000)
    estimate = error_rate(PatchAdditive(attaining_witness(config, signals)), data, level=0.999)
    floor = orbit_floor(config.alpha, config.gamma)
    assert estimate.ci[0] <= floor <= estimate.ci[1]


def test_relu_witness_matches_the_witness_on_signal_patches():
    config, signals, _, _ = _setup(
        DataConfig(K=3, P=4, d=10, alpha=UniformRange(1, 2), gamma=UniformRange(1, 2))
    )
    cnn, lookup = relu_witness(config, signals), attaining_witness(config, signals)
    assert cnn.W.shape == (4 * config.K, config.d)
    t = np.array([-1.9, -1.2, 1.2, 1.5, 1.9])  # inside the supports
    patches = np.concatenate([t[:, None, None] * U[None] for U in (signals.V, signals.C)], axis=1)
    np.testing.assert_allclose(cnn(patches), lookup(patches), atol=1e-12)


def test_search_finds_a_good_lookup_deterministically():
    _, signals, data, _ = _setup(
        DataConfig(K=2, P=4, d=8, alpha=UniformRange(1, 2), gamma=UniformRange(1, 2)), n=3000
    )
    found = [search_aligned_lookup(data, signals, [0.0], np.random.default_rng(4)) for _ in range(2)]
    np.testing.assert_array_equal(found[0].table, found[1].table)
    assert np.all(found[0].table == np.round(found[0].table))
    assert error_rate(PatchAdditive(found[0]), data).rate < 0.2  # the linear CNN gets 1/4


def test_relu_witness_ramp_must_lie_in_0_1():
    with pytest.raises(ValueError, match="ramp"):
        relu_witness(setting(3), make_signals(setting(3), np.random.default_rng(0)), ramp=1.5)


def test_shape_and_finiteness_errors():
    f = CNNFilter(np.ones((2, 3)), np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match="x must have shape"):
        PatchAdditive(f)(np.ones((4, 3)))
    with pytest.raises(ValueError, match="non-finite"):
        PatchAdditive(lambda x: np.full(x.shape[:2], np.inf))(np.ones((2, 3, 3)))


@given(low=st.floats(0.1, 3.0), width=st.floats(1e-3, 2.0))
def test_equal_ranges_have_overlap_mass_one_and_the_floor_one_eighth_exactly(low, width):
    """Regression: D_α = D_γ gives ω = 1 and ω/8 = 1/8 to the bit (a square over a product did not)."""
    same = UniformRange(low, low + width)
    assert overlap_mass(same, same) == 1.0 and orbit_floor(same, same) == FLOOR
    tricky = UniformRange(0.5, 0.5752645114396605)
    assert overlap_mass(tricky, tricky) == 1.0
