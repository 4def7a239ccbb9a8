"""The performance targets of the structured path (Def. 3.1), judged by the benchmark summary's writer.

They are targets, reported on the performance page and never asserted: each benchmark asserts only
that its answer is right (`benchmarks/test_bench_structured.py`). `targets.toml` beside this module
is the one place their thresholds and descriptions are written (editable without Python); `judged`
holds each against a summary's benchmarks, and `report.summary` stores it under "targets".
"""

from __future__ import annotations

import operator
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

COMPARISONS = {"≤": operator.le, "≥": operator.ge}
SOURCE = Path(__file__).with_name("targets.toml")


@dataclass(frozen=True)
class Context:
    """A measure shown beside a target's value: what bounds the target, or how near GEMM its kernel runs."""

    measure: str  # a key of the benchmark's "measures"
    unit: str
    text: str  # what the value is, after it


@dataclass(frozen=True)
class BenchTarget:
    """A threshold on one measure of the benchmarks whose name fits `pattern` (`*` stands for any text)."""

    name: str
    pattern: str
    measure: str  # a key of the benchmark's "measures" in the summary, or "min_ms"
    comparison: str  # a key of COMPARISONS
    threshold: float
    unit: str  # "%" for a fraction, "ms" for a time, "×" for a multiple of `per`
    description: str
    context: tuple[Context, ...] = ()
    per: str | None = None  # a measure the value is divided by: the target is then a multiple of it

    def matches(self, bench_name: str) -> bool:
        """Whether a benchmark's name fits the pattern."""
        return re.fullmatch(".*".join(map(re.escape, self.pattern.split("*"))), bench_name) is not None

    def measured(self, bench: dict[str, Any]) -> float | None:
        """The benchmark's value of the measure in a summary, ÷ the measure `per` where one is named (None
        when the summary lacks either)."""
        found = bench.get("measures", {})
        value = bench.get("min_ms") if self.measure == "min_ms" else found.get(self.measure)
        if self.per is None or value is None:
            return value
        return None if not found.get(self.per) else value / found[self.per]

    def status(self, value: float | None) -> str:
        """Met or not met by a measured value; not measured without one."""
        if value is None:
            return "not measured"
        return "met" if COMPARISONS[self.comparison](value, self.threshold) else "not met"

    def judgment(self, bench: dict[str, Any] | None) -> dict[str, Any]:
        """The target against one benchmark of a summary (None: none fits), with the context it has."""
        value = self.measured(bench) if bench else None
        found = bench.get("measures", {}) if bench else {}
        return {
            "name": self.name,
            "description": self.description,
            "measure": self.measure,
            "per": self.per,
            "comparison": self.comparison,
            "threshold": self.threshold,
            "unit": self.unit,
            "benchmark": bench["name"] if bench else None,
            "measured": value,
            "status": self.status(value),
            "context": [
                {"measure": c.measure, "value": found[c.measure], "unit": c.unit, "text": c.text}
                for c in self.context
                if found.get(c.measure) is not None
            ],
        }


def load_targets(path: Path = SOURCE) -> tuple[BenchTarget, ...]:
    """The targets of a TOML file (`[[target]]` tables with `[[target.context]]`); a bad one is a
    `ValueError` naming the file, the target and the field."""
    targets = []
    for entry in tomllib.loads(path.read_text("utf-8")).get("target", []):
        where = f"{path.name}: target {entry.get('name')!r}"
        try:
            context = tuple(Context(**c) for c in entry.pop("context", []))
            target = BenchTarget(**entry, context=context)
        except TypeError as exc:
            raise ValueError(f"{where}: {exc}") from None
        if target.comparison not in COMPARISONS:
            raise ValueError(f"{where}: comparison must be ≤ or ≥, got {target.comparison!r}")
        targets.append(target)
    return tuple(targets)


BENCH_TARGETS = load_targets()


def judged(benchmarks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each target judged against every benchmark of a summary it fits; once as not measured if none."""
    rows = []
    for target in BENCH_TARGETS:
        fits = [b for b in benchmarks if target.matches(b["name"])]
        rows += [target.judgment(b) for b in fits or [None]]
    return rows
