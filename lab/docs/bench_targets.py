"""The performance targets of the structured path (Def. 3.1), judged against a benchmark summary.

They are targets, reported on the performance page and never asserted: each benchmark asserts only
that its answer is right (`benchmarks/test_bench_structured.py`). `BENCH_TARGETS` is the one place
their thresholds are written.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from typing import Any

from lab.docs.markdown import in_unit as shown

COMPARISONS = {"≤": operator.le, "≥": operator.ge}


@dataclass(frozen=True)
class Context:
    """A measure shown beside a target's value: what bounds the target, or how near GEMM its kernel runs."""

    measure: str  # a key of the benchmark's "measures"
    unit: str
    text: str  # what the value is, after it

    def shown(self, bench: dict[str, Any]) -> str | None:
        """The value and its text, or None when the summary lacks the measure."""
        value = bench.get("measures", {}).get(self.measure)
        return None if value is None else f"{shown(value, self.unit)} {self.text}"


@dataclass(frozen=True)
class BenchTarget:
    """A threshold on one measure of the benchmarks whose name fits `pattern` (`*` stands for any text)."""

    name: str
    pattern: str
    measure: str  # a key of the benchmark's "measures" in the summary, or "min_ms"
    comparison: str  # a key of COMPARISONS
    threshold: float
    unit: str  # "%" for a fraction, "ms" for a time
    description: str
    context: tuple[Context, ...] = ()

    def matches(self, bench_name: str) -> bool:
        """Whether a benchmark's name fits the pattern."""
        return re.fullmatch(".*".join(map(re.escape, self.pattern.split("*"))), bench_name) is not None

    def measured(self, bench: dict[str, Any]) -> float | None:
        """The benchmark's value of the measure in a summary (None when the summary lacks it)."""
        return (
            bench.get("min_ms") if self.measure == "min_ms" else bench.get("measures", {}).get(self.measure)
        )

    def status(self, value: float | None) -> str:
        """Met or not met by a measured value; not measured without one."""
        if value is None:
            return "not measured"
        return "met" if COMPARISONS[self.comparison](value, self.threshold) else "not met"

    def shown(self, value: float | None) -> str:
        """A value of the measure in the target's unit (`-` for none)."""
        return shown(value, self.unit)

    def context_shown(self, bench: dict[str, Any]) -> str:
        """The context measures of one benchmark, joined (`-` for none)."""
        found = [text for c in self.context if (text := c.shown(bench)) is not None]
        return "; ".join(found) or "-"

    @property
    def bound(self) -> str:
        """The comparison and the threshold, in the target's unit."""
        return f"{self.comparison} {self.shown(self.threshold)}"


BENCH_TARGETS = (
    BenchTarget(
        name="Algorithm 1 step, structured ÷ dense",
        pattern="test_algorithm1_step[numba-structured]",
        measure="ratio_to_dense",
        comparison="≤",
        threshold=0.30,
        unit="%",
        description="Algorithm 1's step at setting 1 (n = 16,000, float64): structured against dense",
        context=(
            Context(
                "flop_ratio_to_dense",
                "%",
                "the steps' dense products, structured ÷ dense: the ratio at equal FLOP rates",
            ),
            Context(
                "ratio_to_dense_without_experts",
                "%",
                "with the expert pass's time taken off the step (router, gate and updates left)",
            ),
            Context("expert_pass_ms", "ms", "the expert pass alone"),
            Context("expert_pass_ratio_to_dense", "%", "the expert passes alone, structured ÷ dense"),
        ),
    ),
    BenchTarget(
        name="Algorithm 1 step, structured time",
        pattern="test_algorithm1_step[numba-structured]",
        measure="min_ms",
        comparison="≤",
        threshold=3.0,
        unit="ms",
        description="Algorithm 1's structured step at setting 1 (n = 16,000, float64) on 2 cores",
    ),
    BenchTarget(
        name="512-filter single CNN, structured ÷ dense",
        pattern="test_single_cnn_pass[*-structured]",
        measure="ratio_to_dense",
        comparison="≤",
        threshold=0.30,
        unit="%",
        description="The 512-filter single CNN's pass, structured against dense, per variant",
        context=(
            Context(
                "fraction_of_dgemm_same_shape_per_core",
                "%",
                "of one-thread DGEMM's rate on the pass's noise products, per core",
            ),
        ),
    ),
    BenchTarget(
        name="Noise-patch kernel, fraction of DGEMM per core",
        pattern="test_noise_patch_kernel[numba]",
        measure="fraction_of_dgemm_same_shape_per_core",
        comparison="≥",
        threshold=0.60,
        unit="%",
        description="The noise-patch kernel's rate per core against one-thread DGEMM of the same shape",
        context=(Context("fraction_of_dgemm_same_shape_one_thread", "%", "on one Numba thread"),),
    ),
    BenchTarget(
        name="Noise-patch kernel in float32, fraction of SGEMM per core",
        pattern="test_noise_patch_kernel_float32[numba]",
        measure="fraction_of_sgemm_same_shape_per_core",
        comparison="≥",
        threshold=0.60,
        unit="%",
        description="The same in float32 against one-thread SGEMM of the same shape",
        context=(Context("fraction_of_sgemm_same_shape_one_thread", "%", "on one Numba thread"),),
    ),
)


def target_rows(benchmarks: list[dict[str, Any]]) -> list[tuple[BenchTarget, dict[str, Any] | None]]:
    """Each target with every benchmark of the summary it fits; (target, None) if none."""
    rows = []
    for target in BENCH_TARGETS:
        rows += [(target, b) for b in benchmarks if target.matches(b["name"])] or [(target, None)]
    return rows


def named(name: str) -> BenchTarget:
    """The target called `name` in `BENCH_TARGETS`."""
    return next(t for t in BENCH_TARGETS if t.name == name)
