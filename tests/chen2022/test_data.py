"""Def. 3.1 data: invariants, presets, validation, determinism."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from checks.chen2022.substrate import noise_patches, role_violations
from lab.chen2022.data import DataConfig, UniformRange, make_signals, sample, setting


@given(
    K=st.integers(2, 5),
    P=st.integers(3, 6),
    extra_d=st.integers(0, 7),
    signals=st.sampled_from(["orthonormal", "one-hot"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_every_sample_has_the_three_roles(K, P, extra_d, signals, seed):
    config = DataConfig(K=K, P=P, d=2 * K + extra_d, signals=signals)
    rng = np.random.default_rng(seed)
    sig = make_signals(config, rng)
    data = sample(config, sig, 64, rng)
    assert data.x.shape == (64, P, config.d)
    assert role_violations(data, sig) == 0
    basis = np.vstack([sig.V, sig.C])
    np.testing.assert_allclose(basis @ basis.T, np.eye(2 * K), atol=1e-12)
    assert np.all(np.sort(data.positions, axis=1) == np.sort(np.unique(data.positions, axis=1), axis=1))


def test_settings_match_appendix_a2():
    assert setting(1).gamma == UniformRange(0.5, 3.0) and setting(2).sigma_p == 2.0
    assert setting(3).gamma == setting(3).alpha == UniformRange(0.5, 2.0)
    assert {(c.K, c.P, c.d) for c in map(setting, (1, 2, 3, 4))} == {(4, 4, 50)}


def test_same_seed_same_data_and_shuffle_spreads_roles():
    config = setting(1)
    a, b = (
        sample(config, make_signals(config, np.random.default_rng(1)), 4000, np.random.default_rng(2))
        for _ in range(2)
    )
    np.testing.assert_array_equal(a.x, b.x)
    counts = np.bincount(a.positions[:, 0], minlength=4) / a.n
    assert np.all(np.abs(counts - 0.25) < 0.04)
    assert noise_patches(a).size == a.n * (config.P - 3) * config.d


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"K": 1}, "K"),
        ({"P": 2}, "P"),
        ({"d": 7}, "d"),
        ({"sigma_p": 0.0}, "sigma_p"),
        ({"signals": "random"}, "signals"),
    ],
)
def test_bad_config_names_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        DataConfig(**kwargs)


def test_bad_ranges_and_n():
    with pytest.raises(ValueError, match="low"):
        UniformRange(2.0, 1.0)
    with pytest.raises(ValueError, match="low"):
        UniformRange(0.0, 1.0)
    with pytest.raises(ValueError, match="n must"):
        sample(
            DataConfig(), make_signals(DataConfig(), np.random.default_rng(0)), 0, np.random.default_rng(0)
        )
    with pytest.raises(ValueError, match="setting"):
        setting(5)
