"""The wall and CPU time of one command invocation, from the clocks read at its start (`Stopwatch`)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass


def cpu_seconds() -> float:
    """User and system time of this process and of its finished children (the `--jobs` workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@dataclass(frozen=True)
class Stopwatch:
    """The wall and CPU clocks read when an invocation starts; `elapsed` gives the seconds since."""

    wall: float
    cpu: float

    @classmethod
    def start(cls) -> Stopwatch:
        """Started now."""
        return cls(time.perf_counter(), cpu_seconds())

    def elapsed(self) -> tuple[float, float]:
        """The wall and CPU seconds since the start."""
        return time.perf_counter() - self.wall, cpu_seconds() - self.cpu
