"""The performance page's replication timings (`results/timing/*.json`) beside their arithmetic floor: the
values `templates/timing.md.j2` shows, from each record's FLOP per model and the bench summary's peak rate."""

from __future__ import annotations

from statistics import median
from typing import Any

from lab.chen2022.timing import ROUTER_DTYPE, by_model
from lab.docs.results import Results

TARGET_MINUTES = 15.0
TARGET_FLOOR_RATIO = 2.0  # wall time ÷ the arithmetic floor, for the same invocation
TARGET_TABLES = ["table1", "table3"]

PEAK_PREFIX = "peak_fma_"  # and the dtype: the kernel names of `benchmarks/test_bench_peak.py`


def _rate(results: Results, dtype: str) -> float | None:
    """The peak rate in FLOP/s per thread: the bench summary's `peak_fma_<dtype>` (None without one)."""
    for summary in results.bench.values():
        for bench in summary["benchmarks"]:
            if bench["kernel"] == PEAK_PREFIX + dtype and bench.get("gflops"):
                return bench["gflops"] * 1e9
    return None


def _model_rate(results: Results, record: dict[str, Any], model: dict[str, Any], router: bool = False):
    """A model's peak rate in FLOP/s per thread, in the record's dtype or (`router`) in the router's:
    calibrated around its runs in the record itself when it was (`peak_gflops`, `router_peak_gflops`),
    else the bench summary's (another run, maybe another machine). None without either."""
    name, dtype = ("router_peak_gflops", ROUTER_DTYPE) if router else ("peak_gflops", record["dtype"])
    if model.get(name):
        return model[name] * 1e9
    return _rate(results, dtype)


def model_floor_seconds(results: Results, record: dict[str, Any], model: dict[str, Any]) -> float | None:
    """A model's FLOP at one thread's peak rate: the experts' share in the record's dtype, the router's in
    `ROUTER_DTYPE` (None without a rate for a share that has FLOP)."""
    shares = {False: model["flops"] - model["router_flops"], True: model["router_flops"]}  # by `router`
    rates = {router: _model_rate(results, record, model, router) for router, flops in shares.items() if flops}
    if None in rates.values():
        return None
    return sum(shares[router] / rate for router, rate in rates.items())


def floor_minutes(results: Results, record: dict[str, Any], models: list | None = None) -> float | None:
    """The arithmetic floor of a timing record in minutes (None without runs or a peak rate), over the
    per-model totals `models` (the record's own unless given)."""
    models = record["models"] if models is None else models
    floors = [model_floor_seconds(results, record, m) for m in models]
    if not record["runs"] or None in floors:
        return None
    return sum(floors) / record["cores"] / 60


def _grouped(entries: list[dict[str, Any]], keys: tuple[str, ...], value: str) -> dict[tuple, list[float]]:
    """Each entry's `value` grouped by its values under `keys` (a record's calibrations or GEMM steps)."""
    groups: dict[tuple, list[float]] = {}
    for entry in entries:
        groups.setdefault(tuple(entry[k] for k in keys), []).append(entry[value])
    return groups


def _calibrations(record: dict[str, Any]) -> dict[tuple, list[float]]:
    """A record's calibrated peak rates (GFLOP/s) by model and dtype; empty if it did not calibrate."""
    return _grouped(record.get("calibration", []), ("model", "dtype"), "gflops")


def slower_peaks(record: dict[str, Any], model: dict[str, Any]) -> dict[str, float]:
    """A model's peak rates (`peak_gflops`, `router_peak_gflops`, as `lab.chen2022.timing.model_totals`
    names them) at the slower of the calibrations around its runs instead of the better: the host's
    rate at the slower end of them. Empty for a record that did not calibrate."""
    rates = _calibrations(record)
    names = {"peak_gflops": record["dtype"], "router_peak_gflops": ROUTER_DTYPE}
    return {name: min(rates[model["model"], d]) for name, d in names.items() if (model["model"], d) in rates}


def slower_floor_minutes(results: Results, record: dict[str, Any]) -> float | None:
    """The floor with each model at its slower calibrations (`slower_peaks`); None unless every model was
    calibrated in each dtype its FLOP need (a record made before calibration has no second reading)."""
    models = []
    for m in record["models"]:
        rates = slower_peaks(record, m)
        if not {"peak_gflops", *(["router_peak_gflops"] if m["router_flops"] else [])} <= rates.keys():
            return None
        models.append(m | rates)
    return floor_minutes(results, record, models)


def gemm_minutes(record: dict[str, Any], models: str = "") -> float | None:
    """The record's dense products at one-thread GEMM's speed on every core, in minutes: its models'
    `gemm_seconds` (of those whose name starts with `models`) ÷ the cores. A reference, not a bound (GEMM
    writes each product out whole; the lab's fused kernels do not). None unless every model timed its
    GEMM step."""
    if not record["runs"] or not all("gemm_seconds" in m for m in record["models"]):
        return None
    return (
        sum(m["gemm_seconds"] for m in record["models"] if m["model"].startswith(models))
        / record["cores"]
        / 60
    )


def is_target(record: dict[str, Any]) -> bool:
    """Whether the record is the targets' invocation: the stated model's tables × 10 seeds from an empty
    run store."""
    return (
        record["targets"] == TARGET_TABLES
        and (record["variant"], record["seeds"], record["tier"]) == ("paper", 10, "full")
        and record["run_files_at_start"] == 0
    )


def target_status(record: dict[str, Any]) -> str:
    """Met or not met (≤ `TARGET_MINUTES` of wall time) for the targets' invocation, else `-`."""
    if not is_target(record):
        return "-"
    return "met" if record["wall_seconds"] / 60 <= TARGET_MINUTES else "not met"


def floor_status(record: dict[str, Any], wall_over_floor: float | None) -> str:
    """Met or not met (wall time ≤ `TARGET_FLOOR_RATIO` × the floor) for the targets' invocation, else `-`."""
    if not is_target(record) or wall_over_floor is None:
        return "-"
    return "met" if wall_over_floor <= TARGET_FLOOR_RATIO else "not met"


def fastest_pace_seconds(runs: list[dict[str, Any]]) -> float:
    """The seconds of one model's `runs` had each gone at the fastest pace (seconds per step) among them on
    its setting: runs that share every configured size and differ in seed (and so in data, initial weights
    and an MoE's routes)."""
    fastest: dict[int, float] = {}
    for run in runs:
        pace = run["seconds"] / run["steps"]
        fastest[run["setting"]] = min(fastest.get(run["setting"], pace), pace)
    return sum(run["steps"] * fastest[run["setting"]] for run in runs)


def _gemm_of_peak(model: dict[str, Any]) -> float | None:
    """One-thread GEMM's rate on a model's products (its FLOP ÷ its GEMM time) as a fraction of the peak
    rate calibrated around its runs in their dtype; None without either."""
    if not (model.get("gemm_seconds") and model.get("peak_gflops")):
        return None
    return model["flops"] / model["gemm_seconds"] / (model["peak_gflops"] * 1e9)


def model_times(results: Results, record: dict[str, Any]) -> list[dict[str, Any]]:
    """Per model of one record: its stored totals, their rate per thread and, with peak rates, the
    fraction of the floor's rate they reached (floor ÷ run seconds per thread), their seconds beyond
    their own floor ÷ the jobs (minutes), their seconds ÷ the jobs as a multiple of the record's
    floor (`share`: the part of wall ÷ floor their runs account for), and their seconds at the fastest
    pace of each setting (`fastest_pace_seconds`) with the seconds' ratio to them (`spread`), and their
    ratio to the model's GEMM time (`gemm_ratio`, None without one) and GEMM's rate there as a fraction
    of its calibrated peak rate (`gemm_of_peak`)."""
    threads = max(1, record["threads"] // record["jobs"])  # as `replicate --jobs` gives each worker
    total = floor_minutes(results, record)
    runs = dict(by_model(record["runs"]))  # the models' runs, grouped as `model_totals` totals them
    found = []
    for m in record["models"]:
        fastest = fastest_pace_seconds(runs[m["model"]])
        floor = model_floor_seconds(results, record, m)
        per_thread = m["flops"] / m["seconds"] / threads
        above = None if floor is None else (m["seconds"] - floor / threads) / record["jobs"] / 60
        fraction = None if floor is None else floor / threads / m["seconds"]
        share = None if total is None else m["seconds"] / record["jobs"] / 60 / total
        found.append(
            m
            | {"per_thread": per_thread, "fraction": fraction, "above_minutes": above, "share": share}
            | {"fastest_seconds": fastest, "spread": m["seconds"] / fastest}
            | {"gemm_ratio": m["seconds"] / m["gemm_seconds"] if m.get("gemm_seconds") else None}
            | {"gemm_of_peak": _gemm_of_peak(m)}
        )
    return found


def at_fastest_paces(record: dict[str, Any], models: list[dict[str, Any]], floor: float | None):
    """Wall time ÷ the floor had every run of the record gone at its setting's fastest pace: the wall
    less the seconds above those paces ÷ the jobs (None without a floor)."""
    if floor is None:
        return None
    slower = sum(m["seconds"] - m["fastest_seconds"] for m in models) / record["jobs"]
    return (record["wall_seconds"] - slower) / 60 / floor


def same_code(results: Results, record: dict[str, Any]) -> bool | None:
    """Whether the committed runs of the record's targets were all made by its code (None without any)."""
    codes = {
        run.get("code")
        for rep in results.replications
        if rep.target in record["targets"]
        for run in rep.payload.get("runs", [])
    }
    return codes == {record["code"]} if codes else None


def machine_name(record: dict[str, Any]) -> str:
    """The record's CPU model and the CPU Numba compiled for, or "not recorded" (an older record)."""
    machine = record.get("machine")
    return f"{machine['cpu']} ({machine['numba_cpu']})" if machine else "not recorded"


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    """The median of the rows' values under `key`; None if any of them is None (no median of a part)."""
    values = [row[key] for row in rows]
    return None if None in values else median(values)


def _meeting(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]] | None:
    """The rows whose value under `key` is at most `TARGET_FLOOR_RATIO`; None if any value is None."""
    if any(row[key] is None for row in rows):
        return None
    return [row for row in rows if row[key] <= TARGET_FLOOR_RATIO]


def invocations(timing: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The targets' timed invocations with a floor, grouped by command, code, machine (`machine_name`) and
    cores: each group's invocations in ascending order of wall ÷ floor (`invocations`: name, wall minutes,
    floor, ratio, ratio at the fastest paces, and with the slower calibrations: the ratio at those paces
    (`favourable`), at the runs' own (`over_slower`) and the floors' ratio (`floor_drift`), and the GEMM
    time's values, `_gemm_values`), the medians of walls, floors and ratios, how many met each target and
    how many would have at the fastest paces (`paced_met`) and with the slower calibrations too
    (`favourable_met`, of the rows `favourable_meeting`; it and its median None unless every invocation
    has that reading), how many
    have a GEMM time (`gemm_timed`), and the record at the median ratio (`middle`: the higher of the two
    middle ones for an even count)."""
    groups: dict[tuple[str, str, str, int], list[dict[str, Any]]] = {}
    for t in timing:
        if t["status"] != "-" and t["floor"] is not None:
            r = t["record"]
            groups.setdefault((r["command"], r["code"], machine_name(r), r["cores"]), []).append(t)
    found = []
    for (command, code, machine, cores), members in groups.items():
        members = sorted(members, key=lambda t: (t["wall_over_floor"], t["name"]))
        rows = [
            {"name": t["name"], "wall": t["record"]["wall_seconds"] / 60, "floor": t["floor"]}
            | {key: t[name] for key, name in (("ratio", "wall_over_floor"), ("paced", "at_fastest_paces"))}
            | {key: t[key] for key in ("favourable", "over_slower", "floor_drift")}
            | {key: t[key] for key in GEMM_KEYS}
            for t in members
        ]
        meeting = {key: _meeting(rows, key) for key in ("paced", "favourable")}
        found.append(
            {"command": command, "code": code, "machine": machine, "cores": cores, "invocations": rows}
            | {
                f"median_{key}": _median(rows, key)
                for key in ("wall", "floor", "ratio", "paced", "favourable")
            }
            | {"minutes_met": sum(t["status"] == "met" for t in members)}
            | {"floor_met": sum(t["floor_status"] == "met" for t in members)}
            | {f"{key}_met": None if m is None else len(m) for key, m in meeting.items()}
            | {"favourable_meeting": meeting["favourable"] or []}
            | {"gemm_timed": sum(row["gemm_minutes"] is not None for row in rows)}
            | {"middle": members[len(members) // 2]}
        )
    return found


GEMM_KEYS = ("gemm_minutes", "gemm_over_floor", "singles_gemm", "over_gemm", "gemm_spread", "gemm_outran")


def _gemm_values(record: dict[str, Any], floor: float | None, models: list[dict[str, Any]]) -> dict[str, Any]:
    """The record's GEMM time (`gemm_minutes`), it and the single CNNs' share of it as multiples of the
    floor, wall time ÷ it, the largest ratio of the slower to the faster GEMM step timed around one
    model (`gemm_spread`), and the models whose runs took less than their GEMM time (`gemm_outran`, with
    `model_times`' `gemm_ratio`); None where either time is."""
    gemm = gemm_minutes(record)
    if None in (gemm, floor):
        return dict.fromkeys(GEMM_KEYS)
    steps = _grouped(record.get("gemm", []), ("model",), "step_seconds")
    return {
        "gemm_minutes": gemm,
        "gemm_over_floor": gemm / floor,
        "singles_gemm": gemm_minutes(record, "single") / floor,
        "over_gemm": record["wall_seconds"] / 60 / gemm,
        "gemm_spread": max((max(v) / min(v) for v in steps.values()), default=None),
        "gemm_outran": [m for m in models if m["gemm_ratio"] < 1],
    }


def timing_values(results: Results) -> dict[str, Any]:
    """The values of `templates/timing.md.j2`: the targets, each record (`name`, `record`) with its floor,
    wall time ÷ floor (also at the fastest paces; and over the floor at the slower calibrations,
    `slower_floor`, at those paces, `favourable`, and at the runs' own, `over_slower`; `floor_drift`, the
    slower floor ÷ the floor; the GEMM time and its multiples, `_gemm_values`), CPU use of the cores,
    the targets' status, code check and per-model times, and the targets' invocations grouped by
    command, code, machine and cores (`invocations`)."""
    timing = []
    for name, record in results.timing:
        floor = floor_minutes(results, record)
        over = None if floor is None else record["wall_seconds"] / 60 / floor
        models = model_times(results, record)
        slower = slower_floor_minutes(results, record)
        timing.append(
            {
                "name": name,
                "record": record,
                "floor": floor,
                "wall_over_floor": over,
                "cpu_use": record["cpu_seconds"] / record["wall_seconds"] / record["cores"],
                "status": target_status(record),
                "floor_status": floor_status(record, over),
                "same_code": same_code(results, record),
                "machine": machine_name(record),
                "models": models,
                "at_fastest_paces": at_fastest_paces(record, models, floor),
                "slower_floor": slower,
                "floor_drift": None if None in (floor, slower) else slower / floor,
                "over_slower": None if slower is None else record["wall_seconds"] / 60 / slower,
                "favourable": at_fastest_paces(record, models, slower),
            }
            | _gemm_values(record, floor, models)
        )
    return {
        "timing": timing,
        "invocations": invocations(timing),
        "target_minutes": TARGET_MINUTES,
        "target_floor_ratio": TARGET_FLOOR_RATIO,
        "target_tables": TARGET_TABLES,
        "router_dtype": ROUTER_DTYPE,
    }
