"""Findings page: the lab's own kernels, from the committed benchmark summaries and replication timings."""

from __future__ import annotations

import numpy as np

from lab.docs.bench_targets import named
from lab.docs.evidence import missing
from lab.docs.markdown import anchor, evidence, finding, fixed, num
from lab.docs.results import Results
from lab.docs.timing_section import (
    PEAK_PREFIX,
    TARGET_MINUTES,
    floor_minutes,
    model_times,
    peak_benchmarks,
    target_status,
)


def performance(results: Results) -> str:
    text = [anchor("performance"), "## The lab's own kernels"]
    rows = [b for s in results.bench for b in s.payload["benchmarks"]]
    fractions = {
        b["kernel"]: b["fraction_of_dgemm"]
        for b in rows
        if b.get("fraction_of_dgemm") is not None and not _is_twin(b) and not _is_peak(b)
    }
    if not fractions:
        text.append(
            "How close the kernels come to the one-thread DGEMM rate is read from the benchmark summary. "
            + missing("nox -s bench\npython -m lab bench-report --summary results/bench/summary.json")
        )
        return "\n\n".join(text)
    machine = results.bench[0].payload["machine"]
    rounds = sorted({b["rounds"] for b in rows if b.get("rounds")})
    scope = (
        f"one benchmark run on {machine.get('cpu', '?')} ({machine.get('cores', '?')} cores), the "
        f"minimum time over {rounds[0]}–{rounds[-1]} rounds per kernel; no interval"
        if rounds
        else "one benchmark run, minimum times; no interval"
    )
    best = sorted(fractions.items(), key=lambda kv: (-kv[1], kv[0]))
    rates = [
        "Fraction of the one-thread DGEMM rate per kernel in the committed benchmark summary "
        "([performance](performance.md)): "
        + ", ".join(f"`{k}` {num(100 * v)} %" for k, v in best)
        + f"; median over kernels {num(100 * float(np.median(list(fractions.values()))))} %."
    ]
    peaks = {dtype: b for dtype, b in peak_benchmarks(results).items() if b.get("fraction_of_dgemm")}
    if peaks:
        rates.append(
            "The one-thread DGEMM rate is not the machine's limit: one core's peak multiply-add rate "
            "(independent vector FMAs, the same run) is "
            + ", ".join(
                f"{num(b['gflops'])} GFLOP/s in {dtype} ({num(b['fraction_of_dgemm'])}× DGEMM's)"
                for dtype, b in peaks.items()
            )
            + "."
        )
    grade = evidence(("measured", scope))
    text.append(finding("kernel-rates", "Kernel rates against one-thread DGEMM", grade, *rates))
    step_text = []
    step = next((b for b in rows if b["kernel"] == "algorithm1_step"), None)
    twin = next((b for b in rows if b["kernel"] == "algorithm1_step_numpy"), None)
    if step is not None and step.get("min_ms"):
        sentence = (
            f"One Algorithm 1 step at the paper's size takes {fixed(step['min_ms'], 2)} ms "
            "(minimum over rounds)"
        )
        if twin is not None and twin.get("min_ms"):
            sentence += f", {num(twin['min_ms'] / step['min_ms'])}× faster than its NumPy twin"
        step_text.append(sentence + ".")
    if sentence := _step_bound(rows):
        step_text.append(sentence)
    if step_text:
        text.append(finding("algorithm1-step", "Algorithm 1's step", grade, *step_text))
    times = [
        sentence for name, record in results.timing if (sentence := _replication_time(results, name, record))
    ]
    if times:
        grade = evidence(("measured", "one timed invocation per file under `results/timing`, no interval"))
        text.append(finding("replication-time", "Replication wall time", grade, *times))
    return "\n\n".join(text)


def _replication_time(results: Results, name: str, record: dict) -> str | None:
    """The target invocation's wall time (record `name`) beside its floor, and which models the minutes
    above it are."""
    status, floor = target_status(record), floor_minutes(results, record)
    if status == "-" or floor is None:
        return None
    wall = record["wall_seconds"] / 60
    above: dict[str, float] = {"MoE": 0.0, "single CNN": 0.0}
    for t in model_times(results, record):
        above["MoE" if t.model.startswith("moe") else "single CNN"] += t.above_minutes or 0.0
    return (
        f"`replicate table1 table3 --seeds 10` in {record['dtype']} took {fixed(wall, 1)} min on "
        f"{record['cores']} cores (`{name}`; target ≤ {fixed(TARGET_MINUTES, 0)} min, {status}), "
        f"{wall / floor:.2f}× its arithmetic floor of {fixed(floor, 1)} min; of the minutes above the "
        f"floor, the MoE runs account for {fixed(above['MoE'], 1)} and the single CNNs for "
        f"{fixed(above['single CNN'], 1)} ([performance](performance.md))."
    )


def _step_bound(rows: list[dict]) -> str | None:
    """What bounds Algorithm 1's structured ÷ dense target: the step's time outside its expert pass."""
    target = named("Algorithm 1 step, structured ÷ dense")
    found = [b.get("measures", {}) for b in rows if target.matches(b["name"])]
    if not found or "ratio_to_dense_without_experts" not in found[0] or target.measure not in found[0]:
        return None
    ratio, rest = found[0][target.measure], found[0]["ratio_to_dense_without_experts"]
    verdict = (
        "so no faster expert kernel can meet the target: the router's product and gradient, the routing "
        "and the updates would have to shrink too"
        if rest >= target.threshold
        else f"so the expert pass would have to take at most {num(100 * (target.threshold - rest))} % of it"
    )
    text = (
        f"Algorithm 1's structured step takes {num(100 * ratio)} % of the dense step (target "
        f"{target.bound}); its expert pass takes {num(100 * (ratio - rest))} %, and the rest of the step "
        f"alone {num(100 * rest)} %, {verdict} (same run, calls alternating)."
    )
    if (flops := found[0].get("flop_ratio_to_dense")) is not None:
        text += (
            f" Counted in FLOP, the structured step's dense products (one noise patch, the router's two "
            f"products) are {num(100 * flops)} % of the dense step's (four patches, the same router): "
            + (
                "the target lies below the ratio of the arithmetic itself, so a structured step meets "
                "it only where the dense path does its products at a lower rate per FLOP."
                if flops > target.threshold
                else "the target is within reach of the arithmetic."
            )
        )
    if (experts := found[0].get("expert_pass_ratio_to_dense")) is not None:
        text += (
            f" The expert passes alone, structured against dense, take {num(100 * experts)} %: the rest of "
            "the step is the same work in both paths (the router reads the patch sum s in each)."
        )
    times = {b["name"]: b.get("min_ms") for b in rows}
    gemm, dense = times.get("test_dgemm_of_the_same_shape"), times.get("test_algorithm1_step[numba-dense]")
    if gemm and dense:
        text += (
            f" The expert pass's noise products alone, at one-thread DGEMM's speed on each of 2 cores, "
            f"would take {num(100 * gemm / 2 / dense)} % of the dense step (minimum times of the same run)."
        )
    return text


def _is_peak(bench: dict) -> bool:
    """The peak multiply-add probe (`benchmarks/test_bench_peak.py`), a rate and not a kernel."""
    return bench["kernel"].startswith(PEAK_PREFIX)


def _is_twin(bench: dict) -> bool:
    return "[numpy]" in bench["name"] or bench["kernel"].endswith("_numpy")
