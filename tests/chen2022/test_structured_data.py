"""Def. 3.1's structure (`data.structure`): it rebuilds x bit for bit and leaves `sample` unchanged."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.chen2022.data import SIGNAL_ROLES, DataConfig, make_signals, sample, setting, structure


@given(
    K=st.integers(2, 5),
    P=st.integers(3, 7),
    extra_d=st.integers(0, 5),
    signals=st.sampled_from(["orthonormal", "one-hot"]),
    shuffle=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_structure_rebuilds_x_exactly(K, P, extra_d, signals, shuffle, seed):
    config = DataConfig(K=K, P=P, d=2 * K + extra_d, signals=signals, shuffle=shuffle)
    rng = np.random.default_rng(seed)
    sig = make_signals(config, rng)
    data = sample(config, sig, 37, rng)
    batch = structure(data, sig)
    S = len(SIGNAL_ROLES)
    assert batch.signal_index.shape == batch.signal_scale.shape == batch.signal_position.shape == (37, S)
    assert batch.noise.shape == (37, P - S, config.d) and batch.noise_position.shape == (37, P - S)
    np.testing.assert_array_equal(batch.dense(), data.x)  # bit for bit: the same products s · u
    positions = np.sort(np.concatenate([batch.signal_position, batch.noise_position], axis=1), axis=1)
    np.testing.assert_array_equal(positions, np.tile(np.arange(P), (37, 1)))
    np.testing.assert_array_equal(batch.signal_index[:, 0], data.cluster)  # y α v_k
    np.testing.assert_array_equal(batch.signal_index[:, 1], K + data.cluster)  # β c_k
    np.testing.assert_array_equal(batch.signal_index[:, 2], data.noise_cluster)  # ε γ v_k'
    np.testing.assert_array_equal(batch.signal_scale[:, 1], data.beta)


def test_sample_is_unchanged_by_the_structure():
    """`structure` draws nothing: the data and the next draws of the generator are those without it."""
    config = setting(1)
    a_rng, b_rng = np.random.default_rng(7), np.random.default_rng(7)
    signals = make_signals(config, a_rng)
    make_signals(config, b_rng)
    a = sample(config, signals, 500, a_rng)
    b = sample(config, signals, 500, b_rng)
    structure(b, signals)
    np.testing.assert_array_equal(a.x, b.x)
    assert a_rng.integers(2**62) == b_rng.integers(2**62)


def test_a_wrong_signal_index_does_not_rebuild_x():
    """Negative control: the exact comparison above fails when one signal index is off by one."""
    config = setting(1)
    rng = np.random.default_rng(3)
    signals = make_signals(config, rng)
    data = sample(config, signals, 50, rng)
    batch = structure(data, signals)
    batch.signal_index[0, 0] = (batch.signal_index[0, 0] + 1) % (2 * config.K)
    with pytest.raises(AssertionError):
        np.testing.assert_array_equal(batch.dense(), data.x)
