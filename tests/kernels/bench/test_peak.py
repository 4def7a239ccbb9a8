"""The peak-rate chains agree with their NumPy twin, and bad arguments are refused by name."""

import numpy as np
import pytest

from lab.kernels.bench import peak, peak_numpy


@pytest.mark.parametrize("dtype", peak.DTYPES)
@pytest.mark.parametrize("steps", [1, 7, 1001])
def test_the_chains_leave_what_the_twin_says(dtype, steps):
    got = peak.chains(dtype, steps)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, peak_numpy.chains(dtype, steps))


def test_a_rate_is_positive_and_finite():
    rate = peak.peak_rate("float64", rounds=2, steps=1000)
    assert np.isfinite(rate) and rate > 0


@pytest.mark.parametrize(
    ("kwargs", "name"), [({"dtype": "int8"}, "dtype"), ({"rounds": 0}, "rounds"), ({"steps": -1}, "steps")]
)
def test_bad_arguments_name_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        peak.peak_rate(**({"dtype": "float64"} | kwargs))
