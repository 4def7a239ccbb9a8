"""Running a task: its function on a pinned number of threads, its outcome a stored row's, never a traceback.

A task is declared with `lab.core.tasks.register_task` (`fn(params) -> dict`, JSON-able, deterministic for
its params); `run_task` runs one in this process or in a worker, and its outcome is what the store
commits. Workers ignore Ctrl-C (`ctrl_c_ignored`), so this process takes it and ends them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
import time
import traceback
from collections.abc import Iterator
from typing import Any

from threadpoolctl import threadpool_limits

from lab.core.errors import interrupted
from lab.core.records import jsonable
from lab.core.tasks import TaskFunc


@contextlib.contextmanager
def pinned_threads(threads: int) -> Iterator[None]:
    """BLAS and Numba on `threads` threads inside the block (Numba's count restored after it), so that
    workers sharing a machine do not oversubscribe it."""
    import numba  # here, not at the top: `sweep status` needs the task declarations, not Numba

    before = numba.get_num_threads()
    try:
        with threadpool_limits(threads):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            yield
    finally:
        numba.set_num_threads(before)


@contextlib.contextmanager
def ctrl_c_ignored() -> Iterator[None]:
    """SIGINT ignored inside the block, and for good in every process started there (an ignored signal
    stays ignored across exec, and Python leaves it so), for starting worker processes: Ctrl-C reaches the
    whole process group, and a worker that took it would print its own traceback while this process takes
    it and ends them. A Ctrl-C inside the block is lost. Outside the main thread it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def run_task(fn: TaskFunc, params: dict[str, Any], threads: int = 1) -> dict[str, Any]:
    """Run one task on `threads` threads (BLAS and Numba pinned; default 1) and return its outcome.

    The outcome is `{"status": "done", "result": JSON text, ...}` or `{"status": "failed",
    "error": traceback, ...}`: an exception, a result that is not a dict, or a result that is not
    JSON (NaN, arrays of objects) is a failure, never a half-written record. KeyboardInterrupt and
    SystemExit propagate (they abort the sweep, they are not results of the task), and so does Ctrl-C
    that reaches the task disguised as another exception (`lab.core.errors.interrupted`).
    """
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
    start = time.perf_counter()
    try:
        with pinned_threads(threads):
            result = fn(params)
        if not isinstance(result, dict):
            raise TypeError(f"task result must be a dict, got {type(result).__name__}")
        text = json.dumps(jsonable(result, "result"), allow_nan=False)
        outcome = {"status": "done", "result": text, "error": None}
    except Exception as exc:
        if interrupted(exc):
            raise KeyboardInterrupt from exc
        outcome = {"status": "failed", "result": None, "error": traceback.format_exc()}
    outcome["seconds"] = time.perf_counter() - start
    outcome["worker"] = f"{socket.gethostname()}:{os.getpid()}"
    return outcome
