"""Status and reports of a sweep (Markdown, JSON, PNG), built from the result store, never from memory.

A report groups the sweep's finished runs by the fields that vary (or the spec's [report]
group_by) and shows, per group and metric, the mean ± sample standard deviation (ddof = 1) over
its runs with n. Runs that are pending or failed are counted, never averaged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import lab
from lab.core import plots
from lab.core.errors import InputError
from lab.core.io import write_json_atomic, write_text_atomic
from lab.core.keys import contains, prefix_array
from lab.core.provenance import versions
from lab.core.schema import LIST, OBJECT, TEXT, Each
from lab.core.store import StoredTask, SweepStore
from lab.core.tasks import SweepTask, task_type
from lab.sweeps.sweep import SweepSpec, key_prefixes, task_code


@dataclass(frozen=True)
class SweepStatus:
    """Counts of a sweep's tasks in the store, and its failures."""

    total: int
    done: int
    failed: int
    stale: int
    compute_seconds: float
    failures: list[StoredTask]

    @property
    def pending(self) -> int:
        return self.total - self.done - self.failed - self.stale


def sweep_status(spec: SweepSpec, store: SweepStore, keep_stale: bool = False) -> SweepStatus:
    """How many of the sweep's tasks the store holds as done, failed or stale (from other code).

    The grid's keys (`key_prefixes`, 128 bits each, computed in bulk) and the store's rows of the
    task (`SweepStore.task_table`, read from the store's status index) are NumPy arrays compared by
    sort and search (`contains`): 16 bytes per task and about 26 per stored row. Compute time is
    summed over the grid's rows at nanosecond resolution.
    """
    table = store.task_table(spec.task, None if keep_stale else task_code(spec.task))
    grid = key_prefixes(spec)
    ours = contains(grid, table.prefix)
    failed, stale = ours & table.failed & ~table.stale, ours & table.stale
    keys = table.failed_keys
    failures = store.rows(key for key, keep in zip(keys, _in_grid(grid, keys), strict=True) if keep)
    return SweepStatus(
        total=len(grid),
        done=int(ours.sum() - failed.sum() - stale.sum()),
        failed=int(failed.sum()),
        stale=int(stale.sum()),
        compute_seconds=int(table.nanoseconds[ours].sum()) / 1e9,
        failures=failures,
    )


def _in_grid(grid: np.ndarray, keys: list[str]) -> np.ndarray:
    return contains(grid, prefix_array(bytes.fromhex("".join(key[:32] for key in keys))))


def format_status(spec: SweepSpec, store: SweepStore, status: SweepStatus) -> str:
    """A few lines: counts, store path, and the last line of each failure's error."""
    lines = [
        f"sweep {spec.name} (task {spec.task}, store {store.path}): {status.total} tasks, "
        f"{status.done} done, {status.failed} failed, {status.stale} stale, {status.pending} pending; "
        f"compute time {status.compute_seconds:.1f} s"
    ]
    for row in status.failures:
        lines.append(f"  failed {row.key[:12]} {_fields_text(row.params)}: {_last_line(row.error)}")
    if status.failed:
        lines.append("  (rerun with --retry-failed to run the failed tasks again)")
    if status.stale:
        lines.append(
            "  stale: results of other code (another lab version or numeric library); the next run "
            "recomputes them, --keep-stale keeps them on purpose"
        )
    return "\n".join(lines)


SWEEP_REPORT = {  # the schema of `build_report`'s report (what the docs read of it)
    "sweep task": TEXT,
    "groups": LIST,
    "runs": Each({"params metrics": OBJECT}, "run"),
    "counts": OBJECT,
}


def build_report(
    spec: SweepSpec, tasks: list[SweepTask], store: SweepStore, keep_stale: bool = False
) -> dict[str, Any]:
    """The report's content as JSON-able data: counts, grouped statistics, every run, every failure.

    Stale rows (computed by other code) are counted and never averaged, unless `keep_stale`.
    """
    status = sweep_status(spec, store, keep_stale)
    code = None if keep_stale else task_code(spec.task)
    rows = [r for r in store.rows(t.key for t in tasks) if code is None or r.code == code]
    runs = [r for r in rows if r.status == "done"]
    group_by = group_by_fields(spec, tasks)
    metrics = _metrics(spec, runs)
    groups: dict[str, dict[str, Any]] = {}
    by_key = {r.key: r for r in rows}
    for task in tasks:
        flat = _flatten(task.params)
        fields = {name: flat.get(name) for name in group_by}
        group = groups.setdefault(
            json.dumps(fields, sort_keys=True),
            {"fields": fields, "tasks": 0, "done": 0, "failed": 0, "values": {}},
        )
        group["tasks"] += 1
        row = by_key.get(task.key)
        if row is None:
            continue
        group[row.status] += 1
        if row.status == "done":
            result = dict(_numeric_leaves(row.result))
            for name in metrics:
                if name in result:
                    group["values"].setdefault(name, []).append(result[name])
    for group in groups.values():
        values = group.pop("values")
        group["metrics"] = {name: _summary(values[name]) for name in metrics if name in values}
    kind = task_type(spec.task)
    results = [r.result for r in runs]
    task_tables = kind.report(_spec_values(spec), results) if kind.report and runs else ""
    flat = [{**dict(_numeric_leaves(r.result)), **_flatten(r.params)} for r in runs]  # what analysis reads
    analysis = {"analysis": kind.analysis(_spec_values(spec), flat) if runs else {}} if kind.analysis else {}
    return {
        "sweep": spec.name,
        "description": spec.description,
        "task": spec.task,
        "spec": spec.source,
        "store": str(store.path),
        "lab_version": lab.__version__,
        "versions": versions(),
        "counts": {
            "tasks": status.total,
            "done": status.done,
            "failed": status.failed,
            "stale": status.stale,
            "pending": status.pending,
            "compute_seconds": status.compute_seconds,
        },
        "group_by": group_by,
        "metrics": metrics,
        "statistics": "mean and sample standard deviation (ddof = 1) over a group's finished runs",
        "groups": list(groups.values()),
        "task_tables": task_tables,
        **analysis,
        "runs_note": "each run's metrics; the full results are in the store (table tasks, column result)",
        "runs": [
            {
                "key": r.key,
                "params": r.params,
                "metrics": {k: v for k, v in _numeric_leaves(r.result) if k in metrics},
                "seconds": r.seconds,
                "worker": r.worker,
                "finished": r.finished,
                "lab_version": r.lab_version,
            }
            for r in runs
        ],
        "failures": [{"key": r.key, "params": r.params, "error": r.error} for r in status.failures],
    }


def format_markdown(report: dict[str, Any], figure: str | None = None) -> str:
    """The report as Markdown: header, one table row per group, failures."""
    counts = report["counts"]
    lines = [f"# Sweep `{report['sweep']}`", ""]
    if report["description"]:
        lines += [report["description"], ""]
    lines += [
        f"task `{report['task']}` · spec `{report['spec']}` · store `{report['store']}` · "
        f"lab {report['lab_version']}",
        "",
        f"{counts['tasks']} tasks: {counts['done']} done, {counts['failed']} failed, "
        f"{counts['stale']} stale, {counts['pending']} pending · "
        f"compute time {counts['compute_seconds']:.1f} s (sum over tasks)",
        "",
        f"Each cell: {report['statistics']}; n = finished runs of the row.",
        "",
    ]
    head = [*report["group_by"], "n", *report["metrics"]]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for group in report["groups"]:
        cells = [_value_text(group["fields"][name]) for name in report["group_by"]]
        cells.append(f"{group['done']}/{group['tasks']}")
        for name in report["metrics"]:
            stats = group["metrics"].get(name)
            cells.append("-" if stats is None else _stats_text(stats))
        lines.append("| " + " | ".join(cells) + " |")
    if figure:
        lines += ["", f"![{report['sweep']}]({figure})"]
    if report["task_tables"]:
        lines += ["", f"## Tables of task `{report['task']}`", "", report["task_tables"]]
    if report["failures"]:
        lines += ["", "## Failures", "", "| key | fields | error |", "|---|---|---|"]
        for failure in report["failures"]:
            lines.append(
                f"| {failure['key'][:12]} | {_fields_text(failure['params'])} | "
                f"{_last_line(failure['error']).replace('|', '/')} |"
            )
    return "\n".join(lines) + "\n"


def write_reports(report: dict[str, Any], out: str | Path) -> list[Path]:
    """Write <name>.md, <name>.json and (with matplotlib, `draw_figure`) <name>.png into `out`, atomically."""
    out = Path(out)
    name = report["sweep"]
    written = [write_json_atomic(out / f"{name}.json", report)]
    figure = draw_figure(report, out / f"{name}.png")
    written.append(write_text_atomic(out / f"{name}.md", format_markdown(report, figure and figure.name)))
    if figure:
        written.append(figure)
    return written


def draw_figure(report: dict[str, Any], path: Path) -> Path | None:
    """Draw the report's figure at `path` from the report alone: its task's own (`TaskType.figure`), else
    the generic bar chart; None without matplotlib or without anything to draw."""
    if not plots.available():
        return None
    own = task_type(report["task"]).figure
    fig = own(report) if own is not None else None
    if fig is None:
        return _plot(report, path)
    plots.save_figure(fig, path)
    return path


def _plot(report: dict[str, Any], path: Path) -> Path | None:
    """One horizontal bar chart per metric (up to six): group means with ± std error bars."""
    metrics = report["metrics"][:6]
    groups = [g for g in report["groups"] if g["metrics"]]
    if not metrics or not groups:
        return None
    plt = plots.pyplot()
    labels = [_fields_text(g["fields"]) or report["sweep"] for g in groups]
    height = 1.0 + 0.3 * len(groups)
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.0 * len(metrics), height), squeeze=False)
    for ax, name in zip(axes[0], metrics, strict=False):
        stats = [g["metrics"].get(name) for g in groups]
        means = [s["mean"] if s else np.nan for s in stats]
        errors = [s["std"] if s and s["std"] is not None else 0.0 for s in stats]
        ax.barh(range(len(groups)), means, xerr=errors, color="tab:blue", alpha=0.7)
        ax.set_title(name, fontsize=9)
        ax.set_yticks(range(len(groups)), labels if ax is axes[0][0] else [""] * len(groups), fontsize=7)
        ax.invert_yaxis()
    fig.suptitle(f"sweep {report['sweep']}: mean ± std over finished runs", fontsize=10)
    fig.tight_layout()
    plots.save_figure(fig, path, dpi=110)
    return path


def group_by_fields(spec: SweepSpec, tasks: list[SweepTask]) -> list[str]:
    """The spec's group_by (checked), or the configuration fields that vary except *seed* fields.

    A field some configurations lack counts as the value None for them.
    """
    flats = [_flatten(t.params) for t in tasks]
    fields = list(dict.fromkeys(name for flat in flats for name in flat))
    if spec.group_by is not None:
        for name in spec.group_by:
            if name not in fields:
                raise InputError(
                    f"{spec.source}: [report] group_by field {name!r} is not a field of the tasks; "
                    f"fields: {', '.join(fields)}"
                )
        return list(spec.group_by)
    varying = [n for n in fields if len({json.dumps(f.get(n)) for f in flats}) > 1]
    return [n for n in varying if "seed" not in n.rsplit(".", 1)[-1].lower()]


def _spec_values(spec: SweepSpec) -> dict[str, list[Any]]:
    return {**{name: [value] for name, value in spec.params.items()}, **spec.grid}


def _metrics(spec: SweepSpec, runs: list[StoredTask]) -> list[str]:
    """The spec's metrics (checked against the finished runs), or every numeric result field."""
    found: dict[str, None] = {}
    for run in runs:
        for name, _ in _numeric_leaves(run.result):
            found.setdefault(name)
    if spec.metrics is None:
        return list(found)
    missing = [m for m in spec.metrics if m not in found]
    if runs and missing:
        raise InputError(
            f"{spec.source}: [report] metrics field {missing[0]!r} is not a numeric result field; "
            f"fields: {', '.join(found)}"
        )
    return list(spec.metrics)


def _flatten(params: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in params.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _numeric_leaves(result: dict[str, Any] | None) -> Iterator[tuple[str, float]]:
    """(dotted name, value) of every number or boolean in a result (lists are not metrics)."""
    for name, value in _flatten(result or {}).items():
        if isinstance(value, bool | int | float):
            yield name, float(value)


def _summary(values: list[float]) -> dict[str, Any]:
    data = np.asarray(values, dtype=float)
    return {
        "n": int(data.size),
        "mean": float(data.mean()),
        "std": float(data.std(ddof=1)) if data.size > 1 else None,
        "min": float(data.min()),
        "max": float(data.max()),
    }


def _stats_text(stats: dict[str, Any]) -> str:
    if stats["std"] is None:
        return f"{stats['mean']:.4g}"
    return f"{stats['mean']:.4g} ± {stats['std']:.2g}"


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _fields_text(fields: dict[str, Any]) -> str:
    text = ", ".join(f"{k}={_value_text(v)}" for k, v in _flatten(fields).items())
    return text if len(text) <= 100 else text[:97] + "..."


def _last_line(error: str | None) -> str:
    lines = [line for line in (error or "").strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""
