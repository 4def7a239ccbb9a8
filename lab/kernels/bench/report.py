"""Markdown regression report and small JSON summary of pytest-benchmark runs (`python -m lab bench-report`).

This module is the one place that reads pytest-benchmark's saved files (`.benchmarks/*/*.json`).
`--summary PATH` condenses the latest run into the file the docs render
(`results/bench/summary.json`): per benchmark the kernel, minimum and median time, GFLOP/s, the
fraction of the one-thread DGEMM rate and the speed-up over its NumPy twin, the ratios measured within
the run (`MEASURES`), plus the machine, the statistics across the run's benchmarks that the findings
show (`statistics`) and the performance targets judged against them (`targets.judged`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from lab.core.descriptions import load_findings
from lab.core.errors import InputError
from lab.core.schema import LIST, NUMBER, OBJECT, TEXT, Each
from lab.kernels.bench.targets import judged

SUMMARY_FORMAT = "moe-lab bench summary 1"
BENCHMARK = {
    "name kernel": TEXT,
    "min_ms? median_ms? gflops? fraction_of_dgemm? speedup_vs_numpy_twin?": NUMBER,
    "measures?": Each(NUMBER),  # by name; older summaries lack it
}
BENCH_TARGET = {  # a target judged against a benchmark (none: null), as `targets.judged` gives it
    "name description measure comparison unit status": TEXT,
    "threshold": NUMBER,
    "benchmark?": TEXT,
    "measured?": NUMBER,
    "context": Each({"measure unit text": TEXT, "value": NUMBER}, "context"),
}
BENCH_SUMMARY = {  # the schema of the summary `summary` gives (what the docs read of it)
    "machine": OBJECT,
    "benchmarks": Each(BENCHMARK, "benchmark"),
    "dgemm_gflops?": NUMBER,
    "statistics": {  # across the benchmarks (`statistics`)
        "kernel_rates": {"fractions": LIST, "median?": NUMBER, "rounds?": LIST},
        "peaks": Each({"gflops fraction_of_dgemm": NUMBER}),
        "algorithm1_step": {"min_ms? speedup_vs_numpy_twin?": NUMBER, "structured?": OBJECT},
    },
    "targets": Each(BENCH_TARGET, "target"),
}
# the lab's findings on its own kernels, which read the summary (`statistics`) and the replication timings
FINDINGS = load_findings(Path(__file__).with_suffix(".findings.toml"))
# extra_info fields a summary keeps under "measures": ratios and rates taken within one run.
MEASURES = (
    "ratio_to_dense",
    "flop_ratio_to_dense",
    "ratio_to_dense_without_experts",
    "expert_pass_ms",
    "expert_pass_ratio_to_dense",
    "fraction_of_dgemm_same_shape_per_core",
    "fraction_of_sgemm_same_shape_per_core",
    "fraction_of_dgemm_same_shape_one_thread",
    "fraction_of_sgemm_same_shape_one_thread",
    "gflops_per_core",
    "threads",
    "time_to_dgemm",
    "time_to_sgemm",
)


def saved_runs(folder: Path) -> list[Path]:
    """Saved benchmark runs (pytest-benchmark autosave files), oldest first."""
    return sorted(folder.glob("*/*.json"), key=lambda p: p.name)


def load_run(path: Path) -> dict[str, Any]:
    """One saved pytest-benchmark run; a damaged file is an InputError naming it."""
    try:
        run = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a readable pytest-benchmark file ({exc})") from None
    if not isinstance(run, dict) or not isinstance(run.get("benchmarks"), list):
        raise InputError(f"{path}: not a pytest-benchmark file (no 'benchmarks' list)")
    return run


def _minimum_ms(bench: dict) -> float:
    """A saved benchmark's minimum time in ms (a summary's entry stores it as `min_ms`)."""
    return 1e3 * bench["stats"]["min"] if "stats" in bench else bench["min_ms"]


def _parameters(name: str) -> list[str]:
    """The parametrisation ids of a benchmark's name, `test_x[router_logits-numpy]` → router_logits, numpy."""
    inside = name.partition("[")[2].removesuffix("]")
    return inside.split("-") if inside else []


def _numpy_parametrised(name: str) -> bool:
    """A benchmark parametrised as NumPy: `[numpy]`, `[numpy-dense]`, `[router_logits-numpy]`."""
    return "numpy" in _parameters(name)


def _twin_key(bench: dict) -> tuple[str | None, tuple[str, ...]]:
    """A benchmark's group and its other parametrisation ids: a kernel and its NumPy twin share it."""
    return bench["group"], tuple(p for p in _parameters(bench["name"]) if p not in ("numpy", "numba"))


def twin_minimums(benchmarks: list[dict]) -> dict[tuple[str | None, tuple[str, ...]], float]:
    """Minimum time (ms) of each NumPy twin (a benchmark parametrised `numpy`), by its `_twin_key`."""
    return {_twin_key(b): _minimum_ms(b) for b in benchmarks if _numpy_parametrised(b["name"])}


def speedup(bench: dict, twins: dict[tuple[str | None, tuple[str, ...]], float]) -> float | None:
    """How many times faster than its NumPy twin (the same group and other parametrisation ids; None for a
    twin or a benchmark without one)."""
    twin = twins.get(_twin_key(bench))
    return twin / _minimum_ms(bench) if twin and not _numpy_parametrised(bench["name"]) else None


def measures(extra: dict) -> dict[str, float]:
    """The fields of `MEASURES` in a benchmark's extra_info that are plain finite numbers."""
    return {key: extra[key] for key in MEASURES if _plain_number(extra.get(key))}


def _plain_number(value: Any) -> bool:
    """A finite int or float, not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _sorted(benchmarks: list[dict]) -> list[dict]:
    return sorted(benchmarks, key=lambda b: (b["group"] or "", b["name"]))


def report(latest: dict, previous: dict | None) -> str:
    """Table: kernel, this run, previous run, change, speed-up over the NumPy twin, fraction of DGEMM."""
    before = {b["fullname"]: b for b in (previous or {}).get("benchmarks", [])}
    twins = twin_minimums(latest["benchmarks"])
    rows = [
        "| benchmark | kernel | this run (ms, min) | previous (ms) | change | speed-up vs NumPy twin "
        "| fraction of DGEMM |",
        "|---|---|---|---|---|---|---|",
    ]
    for bench in _sorted(latest["benchmarks"]):
        now = _minimum_ms(bench)
        old = before.get(bench["fullname"])
        old_ms = _minimum_ms(old) if old else None
        change = f"{100 * (now / old_ms - 1):+.1f} %" if old_ms else "-"
        ratio = speedup(bench, twins)
        fraction = bench.get("extra_info", {}).get("fraction_of_dgemm")
        rows.append(
            f"| {bench['name']} | {bench.get('extra_info', {}).get('kernel', bench['group'])} | {now:.3f} | "
            f"{f'{old_ms:.3f}' if old_ms else '-'} | {change} | {f'{ratio:.1f}×' if ratio else '-'} | "
            f"{f'{100 * fraction:.0f} %' if fraction is not None else '-'} |"
        )
    machine = latest.get("machine_info", {})
    cpu = machine.get("cpu", {}).get("brand_raw", "unknown CPU")
    head = f"Benchmarks on {cpu}, {latest.get('datetime', '')}"
    return head + "\n\n" + "\n".join(rows) + "\n"


# Benchmarks the summary's statistics single out (`statistics`): the peak multiply-add probes (kernel
# `peak_fma_<dtype>`, `benchmarks/test_bench_peak.py`), Algorithm 1's step and its NumPy twin, its
# structured and dense paths, and DGEMM of the noise products' shape.
PEAK_PREFIX = "peak_fma_"
STEP, STEP_TWIN = "algorithm1_step", "algorithm1_step_numpy"
STRUCTURED_STEP, DENSE_STEP = "test_algorithm1_step[numba-structured]", "test_algorithm1_step[numba-dense]"
SAME_SHAPE_DGEMM = "test_dgemm_of_the_same_shape"


def _is_peak(bench: dict) -> bool:
    """The peak multiply-add probe, a rate and not a kernel."""
    return bench["kernel"].startswith(PEAK_PREFIX)


def _is_twin(bench: dict) -> bool:
    """A NumPy twin: parametrised `numpy` (`[numpy]`, `[numpy-dense]`, `[router_logits-numpy]`) or a kernel
    named `*_numpy`. A twin often shares its kernel's name, so letting one in overwrites the kernel's rate."""
    return _numpy_parametrised(bench["name"]) or bench["kernel"].endswith("_numpy")


def kernel_rates(benches: list[dict]) -> dict[str, Any]:
    """Each kernel's fraction of the one-thread DGEMM rate (NumPy twins and peak probes left out), best
    first, their median over kernels, and the least and most rounds of the benchmarks listed."""
    import numpy as np

    listed = [
        b for b in benches if b.get("fraction_of_dgemm") is not None and not _is_twin(b) and not _is_peak(b)
    ]
    fractions = {b["kernel"]: b["fraction_of_dgemm"] for b in listed}
    rounds = sorted({b["rounds"] for b in listed if b.get("rounds")})
    return {
        "fractions": sorted(([k, v] for k, v in fractions.items()), key=lambda kv: (-kv[1], kv[0])),
        "median": float(np.median(list(fractions.values()))) if fractions else None,
        "rounds": [rounds[0], rounds[-1]] if rounds else None,
    }


def peak_rates(benches: list[dict]) -> dict[str, dict[str, float]]:
    """One core's peak multiply-add rate by dtype (float64 first): GFLOP/s and its multiple of DGEMM's."""
    found: dict[str, dict] = {}
    for b in benches:
        if _is_peak(b) and b.get("gflops") and b.get("fraction_of_dgemm"):
            found.setdefault(b["kernel"].removeprefix(PEAK_PREFIX), b)
    return {
        dtype: {"gflops": found[dtype]["gflops"], "fraction_of_dgemm": found[dtype]["fraction_of_dgemm"]}
        for dtype in ("float64", "float32")
        if dtype in found
    }


def step_split(benches: list[dict]) -> dict[str, Any] | None:
    """Algorithm 1's step: its least time and speed-up over its NumPy twin, and the structured step ÷
    the dense one split into the expert pass and the rest, beside the FLOP ratio, the expert passes'
    ratio and the same-shape one-thread DGEMM on each of 2 cores ÷ the dense step (None without it)."""
    kernels = {b["kernel"]: b for b in reversed(benches)}  # the first of each kernel
    times = {b["name"]: b.get("min_ms") for b in benches}
    step, twin = kernels.get(STEP, {}), kernels.get(STEP_TWIN, {})
    found = next((b.get("measures", {}) for b in benches if b["name"] == STRUCTURED_STEP), {})
    ratio, rest = found.get("ratio_to_dense"), found.get("ratio_to_dense_without_experts")
    gemm, dense = times.get(SAME_SHAPE_DGEMM), times.get(DENSE_STEP)
    structured = None
    if ratio is not None and rest is not None:
        structured = {
            "ratio_to_dense": ratio,
            "rest": rest,
            "expert_pass": ratio - rest,
            "flop_ratio": found.get("flop_ratio_to_dense"),
            "expert_pass_ratio": found.get("expert_pass_ratio_to_dense"),
            "dgemm_two_cores": gemm / 2 / dense if gemm and dense else None,
        }
    step_ms, twin_ms = step.get("min_ms"), twin.get("min_ms")
    return {
        "min_ms": step_ms or None,
        "speedup_vs_numpy_twin": twin_ms / step_ms if step_ms and twin_ms else None,
        "structured": structured,
    }


def statistics(benches: list[dict]) -> dict[str, Any]:
    """What the findings say across one run's benchmarks (`kernel_rates`, `peak_rates`, `step_split`)."""
    return {
        "kernel_rates": kernel_rates(benches),
        "peaks": peak_rates(benches),
        "algorithm1_step": step_split(benches),
    }


def summary(run: dict, source: str) -> dict[str, Any]:
    """The small JSON the docs render: one entry per benchmark, the machine, the DGEMM reference rate, the
    statistics across the benchmarks (`statistics`) and the targets judged against them (`judged`).

    An entry holds "measures" only when its extra_info has some (see `measures`). The host name is left
    out on purpose; `source` is the saved run's file name.
    """
    twins = twin_minimums(run["benchmarks"])
    benches, dgemm = [], None
    for bench in _sorted(run["benchmarks"]):
        extra, stats = bench.get("extra_info", {}), bench["stats"]
        dgemm = dgemm if dgemm is not None else extra.get("dgemm_gflops")
        median, found = stats.get("median"), measures(extra)
        benches.append(
            {
                "name": bench["name"],
                "group": bench.get("group"),
                "kernel": extra.get("kernel", bench.get("group") or bench["name"]),
                "min_ms": _minimum_ms(bench),
                "median_ms": 1e3 * median if median is not None else None,
                "rounds": stats.get("rounds"),
                "flops": extra.get("flops"),
                "gflops": extra.get("gflops"),
                "fraction_of_dgemm": extra.get("fraction_of_dgemm"),
                "speedup_vs_numpy_twin": speedup(bench, twins),
            }
            | ({"measures": found} if found else {})
        )
    machine, commit = run.get("machine_info", {}), run.get("commit_info", {})
    cpu = machine.get("cpu", {})
    return {
        "format": SUMMARY_FORMAT,
        "source": source,
        "datetime": run.get("datetime"),
        "commit": {key: commit.get(key) for key in ("id", "branch", "dirty")},
        "machine": {
            "cpu": cpu.get("brand_raw"),
            "arch": cpu.get("arch_string_raw") or machine.get("machine"),
            "cores": cpu.get("count"),
            "system": " ".join(filter(None, (machine.get("system"), machine.get("release")))) or None,
            "python": machine.get("python_version"),
        },
        "dgemm_gflops": dgemm,
        "benchmarks": benches,
        "statistics": statistics(benches),
        "targets": judged(benches),
    }


def recomputed(data: dict[str, Any]) -> dict[str, Any]:
    """A written summary with its derived fields (each entry's speed-up over its NumPy twin, `statistics`
    and the judged targets) computed afresh from its own benchmarks, as `summary` computes them: how a
    summary written before a fix to these functions is brought up to date without re-running anything."""
    benches = data["benchmarks"]
    twins = twin_minimums(benches)
    benches = [b | {"speedup_vs_numpy_twin": speedup(b, twins)} for b in benches]
    return data | {"benchmarks": benches, "statistics": statistics(benches), "targets": judged(benches)}
