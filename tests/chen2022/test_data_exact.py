"""Def. 3.1 data pinned exactly: the default is setting 1 of App. A.2, and each refusal names its bound."""

import numpy as np
import pytest

from lab.chen2022.data import DataConfig, UniformRange, setting


def test_the_default_config_is_setting_1_of_app_a2():
    # App. A.2: K = 4 clusters, P = 4 patches, d = 50, α ~ U(0.5, 2), β ~ U(1, 2), γ ~ U(0.5, 3), σ_p = 1.
    config = DataConfig()
    assert config == setting(1)
    assert (config.K, config.P, config.d, config.sigma_p) == (4, 4, 50, 1.0)
    assert (config.alpha, config.beta, config.gamma) == (
        UniformRange(0.5, 2.0),
        UniformRange(1.0, 2.0),
        UniformRange(0.5, 3.0),
    )


def test_a_too_small_dimension_is_refused_with_the_bound_2k():
    with pytest.raises(ValueError, match=r"^d must be an integer >= 2K = 6, got 5$"):
        DataConfig(K=3, d=5)


@pytest.mark.parametrize("low, high", [(0.5, np.inf), (-np.inf, 1.0), (np.nan, 1.0), (0.5, np.nan)])
def test_a_range_with_one_infinite_or_nan_end_is_refused(low, high):
    with pytest.raises(ValueError, match="must be finite"):
        UniformRange(low, high)
