"""The one progress display: tqdm on a terminal when installed, plain lines otherwise, nothing when quiet."""

from __future__ import annotations

import importlib.util
import sys
import time
from typing import TextIO


class Progress:
    """Counts units of work towards `total` and shows it on stderr.

    On a terminal with tqdm installed it is a tqdm bar. Otherwise, when `lines` is set, each
    `step(label)` prints one plain line `[i/total] label (elapsed s)`; with `lines` unset a
    non-terminal gets nothing. `enabled=False` (--quiet) shows nothing at all.
    """

    def __init__(self, total: int, desc: str, *, enabled: bool = True, lines: bool = False, unit: str = "it"):
        self.total, self.desc, self.done = total, desc, 0
        self.stream: TextIO = sys.stderr
        self.start = time.perf_counter()
        self._bar = None
        self._lines = False
        if not enabled or total <= 0:
            return
        if self.stream.isatty() and importlib.util.find_spec("tqdm") is not None:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total, desc=desc, unit=unit, leave=False, file=self.stream, dynamic_ncols=True
            )
        else:
            self._lines = lines

    def step(self, label: str = "", count: int = 1) -> None:
        """Mark `count` units done; `label` names the unit just finished."""
        self.done += count
        if self._bar is not None:
            if label:
                self._bar.set_postfix_str(label, refresh=False)
            self._bar.update(count)
        elif self._lines:
            elapsed = time.perf_counter() - self.start
            print(f"[{self.done}/{self.total}] {label} ({elapsed:.1f} s)", file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
