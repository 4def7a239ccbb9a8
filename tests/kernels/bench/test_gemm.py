"""One-thread GEMM of given products: its FLOP count, what it times, and bad products refused by name."""

import numpy as np
import pytest

from lab.kernels.bench import gemm


def test_the_flop_count_is_a_forward_and_a_backward_product_of_each_shape():
    assert gemm.gemm_flops([(10, 3, 4, "float64"), (5, 2, 1, "float32")]) == 4 * 10 * 3 * 4 + 4 * 5 * 2 * 1


@pytest.mark.parametrize("dtype", gemm.DTYPES)
def test_a_time_is_positive_and_finite(dtype):
    seconds = gemm.gemm_seconds([(33, 7, 5, dtype), (9, 3, 1, "float64")], rounds=2)
    assert np.isfinite(seconds) and seconds > 0


def test_it_times_both_products_of_each_shape_in_its_dtype_on_one_blas_thread_and_keeps_the_best(monkeypatch):
    made, limits, times = [], [], iter([3.0, 1.0, 2.0])

    def products(operands):
        for x, w in operands:
            made.append((x.shape, w.shape, x.dtype, w.dtype))

    monkeypatch.setattr(gemm, "_products", products)
    monkeypatch.setattr(gemm, "_timed", lambda operands: (products(operands), next(times))[1])
    monkeypatch.setattr(gemm, "threadpool_limits", lambda *a: limits.append(a) or _Null())
    assert gemm.gemm_seconds([(6, 4, 3, "float32")], rounds=3) == 1.0  # the best of 3 rounds
    assert made == [((6, 4), (3, 4), np.float32, np.float32)] * 4  # one warm-up, then 3 rounds
    assert limits == [(1, "blas")]


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_each_round_makes_the_forward_and_the_backward_product():
    x, w = np.ones((5, 3)), np.ones((2, 3))
    seen = []

    class Recorded(np.ndarray):
        def __matmul__(self, other):
            seen.append((self.shape, other.shape))
            return (np.asarray(self) @ np.asarray(other)).view(Recorded)

    gemm._products([(x.view(Recorded), w.view(Recorded))])
    assert seen == [((5, 3), (3, 2)), ((2, 5), (5, 3))]  # Z = X Wᵀ, then Zᵀ X


@pytest.mark.parametrize(
    ("products", "rounds", "error", "name"),
    [
        ([(4, 3, 2, "int8")], 1, ValueError, r"products\[0\] dtype"),
        ([(4, 3, 2, "float64"), (0, 3, 2, "float64")], 1, ValueError, r"products\[1\] rows"),
        ([(4, 3, 0, "float64")], 1, ValueError, r"products\[0\] cols"),
        ([(4, 3.0, 2, "float64")], 1, TypeError, r"products\[0\] inner"),
        ([(4, 3, 2)], 1, ValueError, r"products\[0\] must be"),
        ([5], 1, ValueError, r"products\[0\] must be"),
        ([], 1, ValueError, "products"),
        ([(4, 3, 2, "float64")], 0, ValueError, "rounds"),
    ],
)
def test_bad_products_name_the_parameter(products, rounds, error, name):
    with pytest.raises(error, match=name):
        gemm.gemm_seconds(products, rounds)
