"""What this machine offers the commands that compute: the cores this process may use, and Dask."""

from __future__ import annotations

import importlib.util
import os
import sys


def machine_cores() -> int:
    """Cores this process may use (the default number of workers)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def dask_available(quiet: bool = False) -> bool:
    """True when `distributed` can be imported; otherwise say (unless quiet) that sweeps run in-process."""
    if importlib.util.find_spec("distributed") is not None:
        return True
    if not quiet:
        print("dask.distributed is not installed: running the sweep sequentially in-process", file=sys.stderr)
    return False
