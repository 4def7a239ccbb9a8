"""`over_threads`: one contiguous range per thread, every index once, errors raised, any thread count; the
helpers spin, then sleep, and a forked child or a second caller never waits on them."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import threading
import time

import numba
import numpy as np
import pytest
from numba import njit
from numba.core.dispatcher import Dispatcher

from lab.kernels import _threads
from lab.kernels._threads import over_threads


@njit(nogil=True, cache=False)
def _mark(lo, hi, seen, starts):
    """seen[i] += 1 for i in lo..hi − 1, and starts[lo] += 1 for a range that holds indices: each range
    writes its own places only, an empty one none."""
    for i in range(lo, hi):
        seen[i] += 1
    if hi > lo:
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
    assert starts.sum() == min(used, count)


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


def _two_threads_or_skip(threads):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one core")
    threads(2)


def test_many_calls_in_a_row_each_run_every_index_once(threads):
    """The helpers' counters hand over every call's range exactly once, call after call."""
    _two_threads_or_skip(threads)
    for count in [2, 3, 64, 1_000] * 250:
        seen, starts = np.zeros(count, dtype=np.int64), np.zeros(count + 1, dtype=np.int64)
        over_threads(_mark, count, seen, starts)
        assert (seen == 1).all() and starts.sum() == 2


def test_an_idle_helper_spins_a_bounded_time_then_sleeps_and_wakes_for_new_work(threads):
    """A helper spins about 0.5 ms after its range (`_threads.SPIN`), then sleeps on the condition; work
    posted then wakes it."""
    _two_threads_or_skip(threads)
    seen, starts = np.zeros(8, dtype=np.int64), np.zeros(9, dtype=np.int64)
    over_threads(_mark, 8, seen, starts)
    helpers = _threads._HELPERS[0]
    deadline = time.monotonic() + 5.0
    while not helpers.sleeping[0] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert helpers.sleeping[0]
    over_threads(_mark, 8, seen, starts)
    assert (seen == 2).all() and starts.sum() == 4


def test_a_call_while_another_holds_the_helpers_runs_on_the_calling_thread(threads):
    """A second caller does not wait for the helpers: its ranges run on its own thread, same results."""
    _two_threads_or_skip(threads)
    over_threads(_mark, 2, np.zeros(2, dtype=np.int64), np.zeros(3, dtype=np.int64))
    helpers = _threads._HELPERS[0]
    seen, starts = np.zeros(64, dtype=np.int64), np.zeros(65, dtype=np.int64)
    with helpers.busy:
        caller = threading.Thread(target=over_threads, args=(_mark, 64, seen, starts))
        caller.start()
        caller.join(10.0)
        assert not caller.is_alive()
    assert (seen == 1).all() and starts.sum() == 1


def _forked_ranges(_):
    seen, starts = np.zeros(64, dtype=np.int64), np.zeros(65, dtype=np.int64)
    numba.set_num_threads(2)
    over_threads(_mark, 64, seen, starts)
    return int(seen.sum()), int(starts.sum())


def test_a_forked_child_makes_its_own_helpers(threads):
    """A forked copy has none of its parent's threads: it makes its own helpers on first use."""
    _two_threads_or_skip(threads)
    over_threads(_mark, 2, np.zeros(2, dtype=np.int64), np.zeros(3, dtype=np.int64))
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.map(_forked_ranges, [0]) == [(64, 2)]


def test_compile_hand_over_compiles_the_spin_loop_the_finish_and_the_post():
    """`kernels --compile` and the compile profile run on one thread: they reach the spin loops through
    `compile_hand_over` alone."""
    _threads.compile_hand_over()
    assert _threads._await.signatures and _threads._finish.signatures and _threads._post.signatures


@njit(nogil=True, cache=False)
def _slow_past_the_first(lo, hi, seen, starts):
    """`_mark`, after about 20 million additions when the range is not the first."""
    total = 0.0
    if lo > 0:
        for k in range(20_000_000):
            total += k * 1e-9
    for i in range(lo, hi):
        seen[i] += 1
    if hi > lo:
        starts[lo] += 1 if total >= 0.0 else 2


def test_a_caller_outwaited_by_its_helper_sleeps_until_the_helper_wakes_it(threads):
    """A helper's range longer than the caller's spin: the caller sleeps on the condition and is woken."""
    _two_threads_or_skip(threads)
    seen, starts = np.zeros(64, dtype=np.int64), np.zeros(65, dtype=np.int64)
    over_threads(_slow_past_the_first, 64, seen, starts)
    assert (seen == 1).all() and starts.sum() == 2
    assert not _threads._HELPERS[0].counters[:, _threads._WAITING].any()


def test_a_helper_runs_a_task_only_at_the_generation_it_names(threads):
    """A helper late for an interrupted call finds the next call's task: it leaves it for that call's
    generation instead of running it twice."""
    _two_threads_or_skip(threads)
    over_threads(_mark, 2, np.zeros(2, dtype=np.int64), np.zeros(3, dtype=np.int64))
    helpers = _threads._HELPERS[0]
    seen, starts = np.zeros(64, dtype=np.int64), np.zeros(65, dtype=np.int64)
    with helpers.busy:
        generation = int(helpers.counters[0, _threads._POSTED]) + 1
        helpers.tasks[0] = (generation + 1, _mark, 0, 64, (seen, starts))
        helpers.counters[0, _threads._POSTED] = generation
        with helpers.wake:
            helpers.wake.notify_all()
        helpers._await_finished(0)
        helpers.tasks[0] = None
    assert not seen.any()


_HELD_LLVM_LOCK = """
import sys
import numba
import numpy as np
from llvmlite.binding import ffi
from numba import njit
from lab.kernels._threads import over_threads

@njit(nogil=True, cache=False)
def fresh(lo, hi, out):
    for i in range(lo, hi):
        out[i] = i

numba.set_num_threads(2)
ffi.lib._lock._lock.acquire()  # as a Ctrl-C in llvmlite's lock code leaves it: held by the main thread
out = np.zeros(1_000)
over_threads(fresh, out.shape[0], out)  # the helpers made now, the kernel compiled now
sys.exit(0 if (out == np.arange(1_000)).all() else 1)
"""


def test_helpers_made_and_a_kernel_first_called_while_the_main_thread_holds_llvms_lock_finish():
    """llvmlite's lock held by the main thread, as an interrupt in its lock code leaves it: the helpers'
    hand-over and the kernel compile on the main thread, whose lock is reentrant, so the call finishes;
    a helper that compiled waited for the lock while the caller waited for the helper."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one core")
    done = subprocess.run([sys.executable, "-c", _HELD_LLVM_LOCK], timeout=60, check=False)
    assert done.returncode == 0


def test_a_kernels_first_threaded_call_compiles_it_on_the_calling_thread_only(threads, monkeypatch):
    """The caller compiles a kernel's first call before it posts the ranges: no helper compiles."""
    _two_threads_or_skip(threads)
    over_threads(_mark, 2, np.zeros(2, dtype=np.int64), np.zeros(3, dtype=np.int64))  # the helpers exist
    compiled_on, compile = [], Dispatcher.compile

    def recorded(self, sig):
        compiled_on.append(threading.current_thread().name)
        return compile(self, sig)

    monkeypatch.setattr(Dispatcher, "compile", recorded)

    @njit(nogil=True, cache=False)
    def fresh(lo, hi, out):
        for i in range(lo, hi):
            out[i] = i

    out = np.zeros(1_000)
    over_threads(fresh, out.shape[0], out)
    assert (out == np.arange(1_000)).all()
    assert compiled_on and set(compiled_on) == {threading.current_thread().name}
