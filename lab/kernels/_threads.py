"""The lab's kernel threads: `over_threads(kernel, count, *args)` runs the jitted, GIL-free
`kernel(lo, hi, *args)` on contiguous ranges of [0, count), one range per thread. Every threaded kernel
runs here; none uses Numba's `parallel=True` (a test pins it).

Why not Numba's `parallel=True`: a kernel compiled with it costs about 2.7 times the compile CPU of the
same loop compiled serially (Numba's parallel-loop lowering and the outlined, re-optimised loop body;
`python -m lab kernels --compile-profile` measures it), and every fresh environment pays that. Its
threads also spin after each parallel region, so with both kinds of kernel in one process two pools
competed for two cores (Algorithm 1's dense step took 1.5 times as long). And a parallel kernel compiled
in the running process and the same kernel loaded from the cache differed in their last bits. A serial
loop over a range, with `nogil=True`, compiles once, gives the same bits compiled or cached, and runs on
as many threads as the caller gives it here. Row kernels take at least `ROWS` rows per thread: waking a
thread costs 10–50 µs.

The thread count is `numba.get_num_threads()` of the calling thread, so `numba.set_num_threads` (a
sweep's task, a test) and `NUMBA_NUM_THREADS` govern these kernels as they govern Numba's. The ranges
cut [0, count) as Numba's static schedule does, and every kernel run here writes each index's result
to its own place (a row, or a chunk's buffer added later in chunk order), so no result depends on the
thread count. The pool is made on first use and forgotten in a forked child, whose copy has no threads;
its threads block SIGINT and SIGTERM, which the main thread takes, as in a process without them.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numba

__all__ = ["ROWS", "over_threads"]

ROWS = 256  # a row kernel's least rows per thread: fewer cost less than waking a thread (10–50 µs)

_POOL: list[ThreadPoolExecutor] = []  # at most one, sized for NUMBA_NUM_THREADS − 1 helpers
_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """The process's helper threads, made on first use."""
    with _LOCK:
        if not _POOL:
            helpers = max(1, numba.config.NUMBA_NUM_THREADS - 1)
            pool = ThreadPoolExecutor(helpers, thread_name_prefix="lab-kernel", initializer=_no_interrupts)
            _POOL.append(pool)
        return _POOL[0]


def _no_interrupts() -> None:
    """A helper thread blocks SIGINT and SIGTERM, so the process's signals reach the main thread as they
    did before any helper existed (Ctrl-C there raises KeyboardInterrupt once its kernel range returns)."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def _forget_pool() -> None:
    _POOL.clear()


os.register_at_fork(after_in_child=_forget_pool)


def over_threads(kernel: Callable, count: int, *args, grain: int = 1) -> None:
    """kernel(lo, hi, *args) over [0, count) cut into `numba.get_num_threads()` contiguous ranges (fewer
    if a range would hold under `grain` indices), the first on the calling thread; returns when all are
    done, raising the first error."""
    threads = min(numba.get_num_threads(), max(1, count // grain))
    if threads <= 1:
        kernel(0, count, *args)
        return
    cuts = [count * t // threads for t in range(threads + 1)]
    futures = [_pool().submit(kernel, cuts[t], cuts[t + 1], *args) for t in range(1, threads)]
    try:
        kernel(cuts[0], cuts[1], *args)
    finally:
        errors = [future.exception() for future in futures]  # waits for every range
    for error in errors:
        if error is not None:
            raise error
