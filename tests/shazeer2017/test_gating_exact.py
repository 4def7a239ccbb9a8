"""Noisy top-k gating (`lab.shazeer2017.gating`) on any batch shape: experts on the last axis only."""

import numpy as np
import pytest

from lab.shazeer2017.gating import smooth_load


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
