"""lab.sweeps.tasks.run_task: Ctrl-C aborts the sweep wherever it lands, even inside a Numba kernel."""

import os
import signal
import threading

import numpy as np
import pytest
from numba import njit

from lab.core.errors import interrupted
from lab.sweeps.tasks import run_task


@njit(cache=False)
def _spin(steps):
    """A kernel that runs for a while, then returns a tuple of arrays, as the training steps do."""
    out = np.empty(1)
    s = 0.0
    for _ in range(steps):
        s = s * 0.999999 + 1.0
    out[0] = s
    return out, np.empty(2)


def test_a_task_failure_is_a_failed_outcome_not_an_interrupt():
    outcome = run_task(lambda params: 1 / 0, {})
    assert outcome["status"] == "failed" and "ZeroDivisionError" in outcome["error"]


def test_an_interrupt_disguised_as_another_error_propagates():
    def disguised(params):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise SystemError("CPUDispatcher(<f>) returned a result with an exception set") from exc

    with pytest.raises(KeyboardInterrupt):
        run_task(disguised, {})


def _interrupt_during(call):
    """Call `call` with SIGINT sent to this process 0.2 s in, during the kernel (about a second)."""
    _spin(10)
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        return call()
    finally:
        timer.cancel()


STEPS = 400_000_000  # about a second at any speed this suite runs on


@pytest.mark.skipif(os.name != "posix", reason="SIGINT to oneself")
def test_sigint_during_a_numba_kernel_comes_out_disguised():
    """Boxing the returned tuple calls back into Python, where the pending SIGINT fires; the error is lost
    on the way out and the dispatcher raises SystemError from the KeyboardInterrupt."""
    with pytest.raises(SystemError) as caught:
        _interrupt_during(lambda: _spin(STEPS))
    assert interrupted(caught.value)


@pytest.mark.skipif(os.name != "posix", reason="SIGINT to oneself")
def test_sigint_during_a_numba_kernel_aborts_the_task():
    with pytest.raises(KeyboardInterrupt):
        _interrupt_during(lambda: run_task(lambda params: {"s": float(_spin(STEPS)[0][0])}, {}))
