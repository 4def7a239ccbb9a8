"""Noisy top-k gating (`lab.shazeer2017.gating`) on any batch shape: experts on the last axis only."""

import numpy as np
import pytest

from lab.shazeer2017.gating import load_loss, smooth_load


@pytest.mark.parametrize("k", [1, 2, 4])
def test_smooth_load_of_one_example_and_of_nested_batches_equals_the_flat_batch(k):
    rng = np.random.default_rng(11)
    clean, H = rng.normal(size=(6, 5)), rng.normal(size=(6, 5))
    scale = rng.uniform(0.5, 2.0, size=(6, 5))
    flat = smooth_load(clean, scale, H, k)
    for i in range(6):  # one example: shape (M,)
        np.testing.assert_array_equal(smooth_load(clean[i], scale[i], H[i], k), flat[i])
    nested = smooth_load(*(a.reshape(2, 3, 5) for a in (clean, scale, H)), k)
    np.testing.assert_array_equal(nested.reshape(6, 5), flat)


@pytest.mark.parametrize("bad", [0.0, -1e-300, -0.5])
def test_a_scale_that_is_not_positive_is_refused_by_both_load_functions(bad):
    """s_i is a standard deviation (a Softplus output): a zero or negative scale is refused."""
    clean, H = np.zeros((2, 4)), np.array([[0.3, -0.2, 0.1, 0.0], [1.0, 0.5, -1.0, 0.2]])
    scale = np.ones((2, 4))
    scale[1, 2] = bad
    with pytest.raises(ValueError, match=r"^scale must be > 0"):
        smooth_load(clean, scale, H, 2)
    with pytest.raises(ValueError, match=r"^scale must be > 0"):
        load_loss(clean, scale, H, 2)
