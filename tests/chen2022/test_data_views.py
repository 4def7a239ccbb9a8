"""The views of Chen et al.'s data that the proof reads: Uniform moments and the noise patches, by hand."""

import numpy as np
import pytest

from lab.chen2022 import data, data_views


def test_moments_of_a_uniform():
    assert data_views.uniform_moment(0.0, 1.0, 3) == pytest.approx(0.25)
    assert data_views.uniform_moment(1.0, 2.0, 1) == pytest.approx(1.5)
    assert data_views.uniform_moment(0.5, 2.0, 3) == pytest.approx((2**4 - 0.5**4) / (4 * 1.5))


def _sample(n, seed, d=12):
    config = data.DataConfig(d=d)
    rng = np.random.default_rng(seed)
    return data.sample(config, data.make_signals(config, rng), n, rng)


def test_noise_patches_are_the_patches_no_role_took():
    batch = _sample(n=7, seed=3)
    xi = data_views.noise_patches(batch)
    expected = [
        batch.x[i, p] for i in range(batch.n) for p in range(batch.x.shape[1]) if p not in batch.positions[i]
    ]
    np.testing.assert_array_equal(xi, np.array(expected))
