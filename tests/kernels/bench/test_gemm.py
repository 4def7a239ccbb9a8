"""One-thread GEMM of given products: its FLOP count, a positive time, and bad products refused by name."""

import numpy as np
import pytest

from lab.kernels.bench import gemm


def test_the_flop_count_is_a_forward_and_a_backward_product_of_each_shape():
    assert gemm.gemm_flops([(10, 3, 4, "float64"), (5, 2, 1, "float32")]) == 4 * 10 * 3 * 4 + 4 * 5 * 2 * 1


@pytest.mark.parametrize("dtype", gemm.DTYPES)
def test_a_time_is_positive_and_finite(dtype):
    seconds = gemm.gemm_seconds([(33, 7, 5, dtype), (9, 3, 1, "float64")], rounds=2)
    assert np.isfinite(seconds) and seconds > 0


@pytest.mark.parametrize(
    ("products", "rounds", "error", "name"),
    [
        ([(4, 3, 2, "int8")], 1, ValueError, r"products\[0\] dtype"),
        ([(4, 3, 2, "float64"), (0, 3, 2, "float64")], 1, ValueError, r"products\[1\] rows"),
        ([(4, 3.0, 2, "float64")], 1, TypeError, r"products\[0\] inner"),
        ([], 1, ValueError, "products"),
        ([(4, 3, 2, "float64")], 0, ValueError, "rounds"),
    ],
)
def test_bad_products_name_the_parameter(products, rounds, error, name):
    with pytest.raises(error, match=name):
        gemm.gemm_seconds(products, rounds)
