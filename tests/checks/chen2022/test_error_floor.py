"""B1, B2 (Theorem 4.1): orbit identity, pigeonhole, error floor, its negative controls and the checks."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from checks.chen2022 import error_floor
from checks.strategies.patchwise import (
    POLYNOMIAL_ACTIVATIONS,
    SMOOTH_ACTIVATIONS,
    cnn_filters,
    data_configs,
    moe_params,
    patch_functions,
    seeds,
    uniform_ranges,
)
from lab.chen2022.data import DataConfig, UniformRange, make_signals, sample
from lab.chen2022.patch_functions import CNNFilter, random_cnn
from lab.chen2022.patchwise import (
    FLOOR,
    PatchAdditive,
    PatchProduct,
    RoutedMoE,
    attaining_witness,
    error_rate,
    orbit,
    orbit_floor,
    orbit_margins,
    orbit_residual,
    summation_allowance,
)

STRICT = 1.0 - 1e-6  # CI level for per-example Monte-Carlo properties: fuzzing never trips on chance


@st.composite
def cases(draw, equal_strengths=True, functions=patch_functions):
    """(config, signals, f, rng): a Def. 3.1 config, its signals and a per-patch f."""
    config = draw(data_configs(equal_strengths))
    rng = np.random.default_rng(draw(seeds))
    signals = make_signals(config, rng)
    return config, signals, draw(functions(signals)), rng


def test_b1_product_of_an_odd_f_also_satisfies_the_identity():
    """Why the product control needs biases: Π_p f is invariant under the two sign flips of an orbit pair."""
    config = DataConfig(K=2, P=3, d=4)
    rng = np.random.default_rng(0)
    signals = make_signals(config, rng)
    odd = CNNFilter(rng.standard_normal((2, config.d)), np.zeros(2), rng.standard_normal(2), "cubic")
    orb = orbit(sample(config, signals, 200, rng), signals, rng)
    assert orbit_residual(PatchProduct(odd), orb).max() <= summation_allowance(config.P)


@given(cases())
def test_b1_orbit_margins_sum_to_zero_for_every_patch_additive_f(case):
    config, signals, f, rng = case
    orb = orbit(sample(config, signals, 200, rng), signals, rng)
    assert orbit_residual(PatchAdditive(f), orb).max() <= summation_allowance(config.P)


@given(cases())
def test_b1_pigeonhole_each_orbit_has_an_error(case):
    config, signals, f, rng = case
    F = PatchAdditive(f)
    orb = orbit(sample(config, signals, 200, rng), signals, rng)
    four, m, P, d = orb.x.shape
    scale = F.magnitude(orb.x.reshape(four * m, P, d)).reshape(four, m).sum(axis=0)
    ties = orbit_margins(F, orb) <= summation_allowance(config.P) * scale  # within rounding of 0
    assert np.all(ties.any(axis=0))


@given(cases(functions=lambda signals: cnn_filters(signals, POLYNOMIAL_ACTIVATIONS, min_bias_scale=0.5)))
def test_b1_negative_control_product_over_patches_breaks_the_identity(case):
    """Generic f: with an odd f (no bias and odd σ, or σ saturated at ±1) or an f that underflows to 0
    on a signal patch, the product satisfies the identity as well (see the test below)."""
    config, signals, f, rng = case
    orb = orbit(sample(config, signals, 200, rng), signals, rng)
    assert orbit_residual(PatchProduct(f), orb).max() > summation_allowance(config.P)


@given(data_configs(), seeds, st.data())
def test_b1_negative_control_routed_moe_breaks_the_identity(config, seed, data):
    rng = np.random.default_rng(seed)
    signals = make_signals(config, rng)
    F = RoutedMoE(data.draw(moe_params(config.d)), data.draw(st.sampled_from(SMOOTH_ACTIVATIONS)))
    orb = orbit(sample(config, signals, 200, rng), signals, rng)
    assert orbit_residual(F, orb).max() > summation_allowance(config.P)


@given(cases())
def test_b2_error_floor_holds_for_every_f_when_d_alpha_equals_d_gamma(case):
    config, signals, f, rng = case
    estimate = error_rate(PatchAdditive(f), sample(config, signals, 3000, rng), STRICT)
    record = error_floor.floor_record(
        key="k", kind="premise", statement="", params={}, estimate=estimate, bound=FLOOR
    )
    assert record.verdict == "holds", (estimate.rate, estimate.ci)


@given(cases(equal_strengths=False))
def test_b2_orbit_floor_holds_for_any_d_alpha_d_gamma(case):
    config, signals, f, rng = case
    estimate = error_rate(PatchAdditive(f), sample(config, signals, 3000, rng), STRICT)
    assert estimate.ci[1] >= orbit_floor(config.alpha, config.gamma)


@given(data_configs(equal_strengths=False), seeds)
def test_b2_witness_attains_the_orbit_floor(config, seed):
    rng = np.random.default_rng(seed)
    signals = make_signals(config, rng)
    estimate = error_rate(
        PatchAdditive(attaining_witness(config, signals)), sample(config, signals, 3000, rng), STRICT
    )
    assert estimate.ci[0] <= orbit_floor(config.alpha, config.gamma) <= estimate.ci[1]


@given(data_configs(), uniform_ranges(), seeds)
def test_b2_negative_control_disjoint_strengths_beat_the_floor(config, low_range, seed):
    """D_α above D_γ (disjoint supports): a simple f has error 0, the check reports the floor violated."""
    span = low_range.high - low_range.low
    gamma = type(low_range)(low_range.low / 4, low_range.low / 4 + span / 4)  # entirely below α's support
    config = DataConfig(
        K=config.K,
        P=config.P,
        d=config.d,
        alpha=low_range,
        beta=config.beta,
        gamma=gamma,
        sigma_p=config.sigma_p,
    )
    rng = np.random.default_rng(seed)
    signals = make_signals(config, rng)
    estimate = error_rate(
        PatchAdditive(attaining_witness(config, signals)), sample(config, signals, 3000, rng), STRICT
    )
    record = error_floor.floor_record(
        key="k", kind="negative-control", statement="", params={}, estimate=estimate, bound=FLOOR
    )
    assert record.verdict == "violated" and record.ok


@pytest.mark.parametrize(
    "entry",
    [
        error_floor.check_orbit_identity,
        error_floor.check_error_floor,
        error_floor.check_floor_attainment,
        error_floor.check_partial_overlap,
        error_floor.check_patch_optimum,
    ],
)
def test_registered_checks_are_all_as_expected(entry):
    records = entry(0, "quick")
    assert records and all(r.ok for r in records), [(r.statement, r.outcome) for r in records]
    assert {r.kind for r in records} == {"premise", "negative-control"}


def test_b1_product_of_a_saturated_f_also_satisfies_the_identity():
    """The fuzz-found case: a GELU filter that underflows to exactly 0 on a strong signal patch."""
    config = DataConfig(
        K=2, P=3, d=4, alpha=UniformRange(2.5, 3.0), gamma=UniformRange(2.5, 3.0), beta=UniformRange(1.0, 2.0)
    )
    rng = np.random.default_rng(0)
    signals = make_signals(config, rng)
    f = random_cnn(np.random.default_rng(233), signals, 1, "gelu", 1.0, 2.0)
    orb = orbit(sample(config, signals, 200, rng), signals, rng)
    assert orbit_residual(PatchProduct(f), orb).max() <= summation_allowance(config.P)


def test_b2_the_exact_optimum_check_fails_when_the_floor_it_is_held_to_is_wrong(monkeypatch):
    """A mutated floor (ω/8 doubled) must turn both optimum premises into failures."""
    real = error_floor.optimum

    def doubled(alpha, gamma, K):
        found = real(alpha, gamma, K=K)
        return type(found)(found.error, 2 * found.floor, found.at_bound, found.outcomes)

    monkeypatch.setattr(error_floor, "optimum", doubled)
    records = {r.key: r for r in error_floor.check_patch_optimum(0, "quick")}
    assert records["optimum-above-floor"].outcome == "FAIL"
