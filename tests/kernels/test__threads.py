"""`over_threads`: one contiguous range per thread, every index once, errors raised, any thread count."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba import njit

from lab.kernels._threads import over_threads


@njit(nogil=True, cache=False)
def _mark(lo, hi, seen, starts):
    """seen[i] += 1 for i in lo..hi − 1, and starts[lo] += 1: each range writes its own places only."""
    for i in range(lo, hi):
        seen[i] += 1
    starts[lo] += 1


@njit(nogil=True, cache=False)
def _refuse(lo, hi, seen):
    if lo > 0:
        raise ValueError("a range past the first")


@pytest.fixture
def threads():
    before = numba.get_num_threads()
    yield numba.set_num_threads
    numba.set_num_threads(before)


@pytest.mark.parametrize("count", [0, 1, 2, 3, 17, 64])
@pytest.mark.parametrize("used", [1, 2])
def test_every_index_is_run_once_in_as_many_ranges_as_threads(threads, count, used):
    if used > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("one core")
    threads(used)
    seen, starts = np.zeros(count, dtype=np.int64), np.zeros(count + 1, dtype=np.int64)
    over_threads(_mark, count, seen, starts)
    assert (seen == 1).all()
    assert starts.sum() == max(1, min(used, count))


@pytest.mark.parametrize(("count", "ranges"), [(255, 1), (511, 1), (512, 2), (10_000, 2)])
def test_a_range_holds_at_least_grain_indices(threads, count, ranges):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one core")
    threads(2)
    seen, starts = np.zeros(count, dtype=np.int64), np.zeros(count + 1, dtype=np.int64)
    over_threads(_mark, count, seen, starts, grain=256)
    assert (seen == 1).all() and starts.sum() == ranges


def test_an_error_in_another_threads_range_is_raised(threads):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one core")
    threads(2)
    with pytest.raises(ValueError, match="a range past the first"):
        over_threads(_refuse, 8, np.zeros(1))
