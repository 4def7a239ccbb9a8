"""The lab's kernel threads: `over_threads(kernel, count, *args)` runs `kernel(lo, hi, *args)`, a jitted,
GIL-free loop (or one in-place NumPy ufunc call, whose loop releases the GIL), on contiguous ranges of
[0, count), one range per thread. Every threaded kernel runs here; none uses Numba's `parallel=True`
(a test pins it).

Why not Numba's `parallel=True`: a kernel compiled with it costs about 2.7 times the compile CPU of the
same loop compiled serially (Numba's parallel-loop lowering and the outlined, re-optimised loop body;
`python -m lab kernels --compile-profile` measures it), and every fresh environment pays that. Its
threads also spin after each parallel region, so with both kinds of kernel in one process two pools
competed for two cores (Algorithm 1's dense step took 1.5 times as long). And a parallel kernel compiled
in the running process and the same kernel loaded from the cache differed in their last bits. A serial
loop over a range, with `nogil=True`, compiles once, gives the same bits compiled or cached, and runs on
as many threads as the caller gives it here.

The hand-over: a sleeping thread takes 10–25 µs to wake on a virtual machine, about a short kernel's
whole range. So each helper, once it has run a range, waits for the next one by testing an atomic
counter (in compiled code, GIL released, a pause between tests and sched_yield every `YIELD`, so that
a thread waiting for the core gets it) `SPIN` times, about 0.5 ms on idle cores here (longer when a
yield gives the core away), longer than most gaps between two kernels of a training step, and only
then sleeps on a condition. The caller waits for a helper's range the same way, `SHORT` times if the
helper had not yet started it (it may have no core), then sleeps on the condition, which a helper
notifies when it finishes. Two threads reaching for the GIL at once would put one of them to sleep, so
a helper posts its range finished from compiled code, after it has released the GIL (the caller takes
it at once), and a helper that sees a range posted pauses `SETTLE` times before it takes the GIL, so
that the caller has usually released it, in its own range. Row kernels take at least `ROWS` rows per
thread.

The thread count is `numba.get_num_threads()` of the calling thread, so `numba.set_num_threads` (a
sweep's task, a test) and `NUMBA_NUM_THREADS` govern these kernels as they govern Numba's. The ranges
cut [0, count) as Numba's static schedule does, and every kernel run here writes each index's result
to its own place (a row, or a chunk's buffer added later in chunk order), so no result depends on the
thread count; a call made while another thread's call holds the helpers runs its ranges on the calling
thread. The helpers are made on first use and forgotten in a forked child, whose copy has no threads;
they block SIGINT and SIGTERM, which the main thread takes, as in a process without them.

A helper never compiles: the thread that makes the helpers first compiles their hand-over (or loads it
from Numba's cache), and before a caller posts the ranges it runs the kernel on an empty range, so the
kernel's first call with these argument types compiles it, or loads it, on the calling thread, and the
helpers find it compiled. Compiling and loading take llvmlite's lock, which is not
interrupt-safe: a Ctrl-C landing in its Python code can leave it held by the main thread, and a helper
then waiting for it while the caller waits for the helper hung the process instead of ending it with 130.
So a kernel must write nothing on an empty range (every kernel run here loops over its range).
"""

from __future__ import annotations

import os
import platform
import signal
import sys
import threading
from collections.abc import Callable

import numba
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["ROWS", "compile_hand_over", "over_threads"]

ROWS = 256  # a row kernel's least rows per thread
SPIN = 16_384  # tests of a counter a waiting thread makes before it sleeps: about 0.5 ms here
SHORT = 1_024  # the caller's tests when its helper had not started its range: about 30 µs here
SETTLE = 100  # pauses a helper makes after a range was posted, before it takes the GIL: about 2 µs here
YIELD = 64  # tests between two offers of the core (sched_yield) while spinning
# a helper's row of the counters: posted and finished generation, 64 bytes apart, and whether the
# caller sleeps until that helper finishes
_POSTED, _DONE, _WAITING = 0, 8, 9
_PAUSE = platform.machine().lower() in ("x86_64", "amd64")
_SCHED_YIELD = sys.platform.startswith(("linux", "darwin"))


@intrinsic
def _load(typingctx, counters, helper, column):
    """counters[helper, column], a sequentially consistent atomic load."""

    def codegen(context, builder, signature, args):
        return builder.load_atomic(_address(context, builder, signature, args), ordering="seq_cst", align=8)

    return types.int64(counters, helper, column), codegen


@intrinsic
def _store(typingctx, counters, helper, column, value):
    """counters[helper, column] = value, a sequentially consistent atomic store: a store and then a load
    of another column are seen in that order by every thread (the helper's finish, the caller's sleep)."""

    def codegen(context, builder, signature, args):
        address = _address(context, builder, signature, args)
        builder.store_atomic(args[3], address, ordering="seq_cst", align=8)
        return context.get_dummy_value()

    return types.void(counters, helper, column, value), codegen


@intrinsic
def _pause(typingctx):
    """The x86 spin-wait hint (none elsewhere)."""

    def codegen(context, builder, signature, args):
        if _PAUSE:
            pause = ir.FunctionType(ir.VoidType(), [])
            builder.call(builder.module.declare_intrinsic("llvm.x86.sse2.pause", fnty=pause), [])
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def _offer_core(typingctx):
    """sched_yield(): another thread waiting for this core runs first (POSIX; nothing elsewhere)."""

    def codegen(context, builder, signature, args):
        if _SCHED_YIELD:
            signature_c = ir.FunctionType(ir.IntType(32), [])
            builder.call(cgutils.get_or_insert_function(builder.module, signature_c, "sched_yield"), [])
        return context.get_dummy_value()

    return types.void(), codegen


def _address(context, builder, signature, args):
    """The pointer to counters[helper, column] of a C-contiguous (helpers, 16) int64 array."""
    array = context.make_array(signature.args[0])(context, builder, args[0])
    flat = builder.add(builder.mul(args[1], context.get_constant(types.int64, 16)), args[2])
    return builder.gep(array.data, [flat])


@njit(cache=True, nogil=True)
def _await(counters, helper, column, old, spins, settle):
    """Test counters[helper, column] until it differs from `old` (then pause `settle` times), at most
    `spins` + 1 times, a pause between two tests and sched_yield every `YIELD`; the value seen."""
    for test in range(spins + 1):
        value = _load(counters, helper, column)
        if value != old:
            for _ in range(settle):
                _pause()
            return value
        _pause()
        if test % YIELD == YIELD - 1:
            _offer_core()
    return old


@njit(cache=True, nogil=True)
def _finish(counters, helper, generation, spins, settle):
    """Post `generation` finished, the GIL released, then await the next posted one (`_await`), or return
    −1 at once if the caller sleeps until this helper finishes (it is then to be woken)."""
    _store(counters, helper, _DONE, generation)
    if _load(counters, helper, _WAITING) != 0:
        return -1
    return _await(counters, helper, _POSTED, generation, spins, settle)


@njit(cache=True)
def _post(counters, helper, column, value):
    """counters[helper, column] = value, an atomic store (the GIL stays held)."""
    _store(counters, helper, column, value)


def compile_hand_over() -> None:
    """Compile the spin loop, the finish and the post, or load them from the cache, as a process's first
    threaded call does (`kernels --compile` and the compile profile call this: their children run on one
    thread)."""
    counters = np.zeros((1, 16), dtype=np.int64)
    _await(counters, 0, _DONE, 1, 1, 0)
    _finish(counters, 0, 0, 1, 0)
    _post(counters, 0, _WAITING, 0)


class _Helpers:
    """The process's helper threads, their counters, their tasks and the condition they sleep on."""

    def __init__(self, count: int) -> None:
        self.counters = np.zeros((count, 16), dtype=np.int64)
        self.tasks: list[tuple | None] = [None] * count  # (generation, kernel, lo, hi, args)
        self.errors: list[tuple[int, BaseException] | None] = [None] * count  # (generation, error)
        self.started = [0] * count  # the generation each helper last took up
        self.sleeping = [False] * count
        self.wake = threading.Condition()
        self.busy = threading.Lock()  # held by the one call using the helpers
        self.threads = []
        for helper in range(count):
            name = f"lab-kernel-{helper}"
            self.threads.append(threading.Thread(target=self._serve, args=(helper,), name=name, daemon=True))
            self.threads[-1].start()

    def _serve(self, helper: int) -> None:
        """A helper's life: await a posted generation, run its range, post it finished."""
        _no_interrupts()
        seen = 0
        posted = _await(self.counters, helper, _POSTED, seen, SPIN, SETTLE)
        while True:
            if posted == seen:
                with self.wake:
                    self.sleeping[helper] = True
                    while self.counters[helper, _POSTED] == seen:
                        self.wake.wait()
                    self.sleeping[helper] = False
                posted = int(self.counters[helper, _POSTED])
            task, self.started[helper] = self.tasks[helper], posted
            if task is not None and task[0] == posted:  # else the task of a later call: run at its turn
                _, kernel, lo, hi, args = task
                try:
                    kernel(lo, hi, *args)
                except BaseException as error:  # raised by the caller
                    self.errors[helper] = (posted, error)
            task = kernel = args = None  # the call's arrays are the caller's again
            seen = posted
            posted = _finish(self.counters, helper, seen, SPIN, SETTLE)
            if posted < 0:  # the caller set `_WAITING`, under `wake`, before its last look
                with self.wake:
                    self.wake.notify_all()
                posted = _await(self.counters, helper, _POSTED, seen, SPIN, SETTLE)

    def run(self, kernel: Callable, cuts: list[int], args: tuple) -> None:
        """kernel over cuts[t]..cuts[t + 1], the first range on the calling thread."""
        helpers = range(len(cuts) - 2)
        posted = [int(self.counters[helper, _POSTED]) + 1 for helper in helpers]
        try:
            # each task names its generation: a helper late for an interrupted call never runs the next
            # call's task as that call's
            for helper in helpers:
                self.tasks[helper] = (posted[helper], kernel, cuts[helper + 1], cuts[helper + 2], args)
            for helper in helpers:
                self.counters[helper, _POSTED] = posted[helper]
            # read after posting: a helper sets it before its last look
            if any(self.sleeping[helper] for helper in helpers):
                with self.wake:
                    self.wake.notify_all()
            kernel(cuts[0], cuts[1], *args)
        finally:
            for helper in helpers:
                self._await_finished(helper)
                self.tasks[helper] = None
        for helper in helpers:
            found, self.errors[helper] = self.errors[helper], None
            if found is not None and found[0] == posted[helper]:
                raise found[1]

    def _await_finished(self, helper: int) -> None:
        """Spin (`SPIN` tests, `SHORT` if the helper had not started its range), then sleep on `wake`,
        until the helper has finished the generation posted to it (it posts that without the GIL: no
        pause before taking it)."""
        posted = int(self.counters[helper, _POSTED])
        spins = SPIN if self.started[helper] == posted else SHORT
        if _await(self.counters, helper, _DONE, posted - 1, spins, 0) == posted:
            return
        with self.wake:
            try:
                _post(self.counters, helper, _WAITING, 1)  # then the last looks, each a fenced load
                self.wake.notify_all()  # a posted helper asleep (an interrupt between posting and waking)
                while _await(self.counters, helper, _DONE, posted - 1, 0, 0) != posted:
                    if not self.threads[helper].is_alive():
                        raise RuntimeError(f"the lab's kernel thread {helper} has ended")
                    self.wake.wait(1.0)
            finally:
                _post(self.counters, helper, _WAITING, 0)


_HELPERS: list[_Helpers] = []  # at most one, NUMBA_NUM_THREADS − 1 helpers
_LOCK = threading.Lock()


def _helpers() -> _Helpers:
    """The process's helpers, made on first use."""
    with _LOCK:
        if not _HELPERS:
            compile_hand_over()  # here, not on the new threads (see the module text)
            _HELPERS.append(_Helpers(max(1, numba.config.NUMBA_NUM_THREADS - 1)))
        return _HELPERS[0]


def _no_interrupts() -> None:
    """A helper thread blocks SIGINT and SIGTERM, so the process's signals reach the main thread as they
    did before any helper existed (Ctrl-C there raises KeyboardInterrupt once its kernel range returns)."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def _forget_helpers() -> None:
    """A forked child has none of the helpers, and a fresh lock (another thread may have held it)."""
    global _LOCK
    _HELPERS.clear()
    _LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_helpers)


def over_threads(kernel: Callable, count: int, *args, grain: int = 1) -> None:
    """kernel(lo, hi, *args) over [0, count) cut into `numba.get_num_threads()` contiguous ranges (fewer
    if a range would hold under `grain` indices), the first on the calling thread; returns when all are
    done, raising the first error. With helpers, kernel(0, 0, *args) runs first, on the calling thread
    (a first call compiles there, never on a helper: see the module text)."""
    threads = min(numba.get_num_threads(), max(1, count // grain))
    helpers, held = _helpers() if threads > 1 else None, False
    try:  # acquired inside: an interrupt right after the acquire still releases it
        held = helpers is not None and helpers.busy.acquire(blocking=False)
        if held:
            kernel(0, 0, *args)
            helpers.run(kernel, [count * t // threads for t in range(threads + 1)], args)
        else:
            kernel(0, count, *args)
    finally:
        if held:
            helpers.busy.release()
