"""Sweeps: a TOML grid over an experiment's parameters, expanded into keyed tasks, run on Dask or in-process.

Spec format (TOML; examples in `sweeps/`)::

    [sweep]
    task = "routing-probability"  # a registered task (lab.core.tasks): routing-probability, replicate
    name = "smoke"                 # optional; default: the spec file's stem (letters, digits, . _ -)
    store = "reports/sweeps/smoke.sqlite"  # optional; default reports/sweeps/<name>.sqlite (from cwd)
    description = "..."            # optional, copied into the reports

    [params]        # fixed fields, the same in every task
    noise = "uniform"

    [grid]          # one non-empty list per field; the tasks are the Cartesian product
    M = [2, 8]      # (in the order written, the last field varying fastest)
    seed = [0, 1, 2]

    [report]        # optional
    group_by = ["M"]   # rows of the report; default: the fields that vary, except fields named *seed*
    metrics = ["p1"]   # columns (mean ± std over a row's runs); default: every numeric result field

A field may sit in [params] or in [grid], not both. For a task registered with `defaults`, the
fields must be among its parameters and the defaults fill in the rest. For a task with an
expander (`replicate`), the fields the expander takes (target, settings, seeds, seed, variant)
go to it and it returns the run configurations; every other field overrides that field of each
configuration (a dotted name such as "model.M" reaches into nested dicts; a configuration
without the field is an error, so a misspelt override never runs silently).

Task key (`lab.core.keys`): the XOR of the SHA-256 digests of the canonical JSON of the task name
and of each field of its full configuration, so a key names exactly one configuration and grids
that overlap share results; a grid's keys are computed in bulk. TOML keeps 1 and 1.0 apart, and so
do keys. Each stored result also records the fingerprint of the science code
the task depends on (`lab.core.provenance.code_fingerprint`): a result from other code is stale,
shown as such by status and report, and recomputed by the next run, unless `keep_stale` (the CLI's
--keep-stale) keeps the old results on purpose.

Execution: on `dask.distributed` (an in-process `LocalCluster` with one single-threaded worker
process per core by default, or an existing scheduler), or sequentially in-process when Dask is
not installed or `sequential=True`. Either way each task runs through `lab.sweeps.tasks.run_task`
(BLAS and Numba pinned to one thread), its outcome is committed to the store by the client as
it arrives, and tasks whose key is already done are skipped, so an interrupted sweep resumes.
`run_tasks` is that runner for tasks made by other means, registered as the runner of keyed tasks
(`lab.core.tasks.task_runner`): a replication runs its training runs through it, into a store of its
own, without importing this layer.
"""

from __future__ import annotations

import copy
import itertools
import logging
import math
import os
import re
import time
import tomllib
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import lab
from lab.core.errors import InputError
from lab.core.keys import canonical, grid_keys, prefix_array, task_key
from lab.core.machine import dask_available, machine_cores
from lab.core.progress import Progress
from lab.core.provenance import code_fingerprint
from lab.core.store import SweepStore
from lab.core.tasks import RUNNER, SweepTask, TaskType, register_runner, task_type
from lab.sweeps.tasks import ctrl_c_ignored, run_task

_TABLES = ("sweep", "params", "grid", "report")
_SWEEP_FIELDS = ("task", "name", "store", "description")
_REPORT_FIELDS = ("group_by", "metrics")
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class SweepSpec:
    """A parsed sweep spec: task name, fixed params, grid, store path and report options."""

    name: str
    task: str
    params: dict[str, Any]
    grid: dict[str, list[Any]]
    store: Path
    source: str
    description: str = ""
    group_by: tuple[str, ...] | None = None
    metrics: tuple[str, ...] | None = None


@dataclass
class RunSummary:
    """What one `run_sweep` call did: tasks in the sweep, skipped, run now, and how they ended."""

    total: int
    already_done: int
    failed_skipped: int
    stale_rerun: int = 0
    ran: list[str] = field(default_factory=list)
    done: int = 0
    failed: int = 0
    backend: str = "sequential"
    seconds: float = 0.0


def load_spec(path: str | os.PathLike[str]) -> SweepSpec:
    """Read and validate a TOML sweep spec (InputError naming the file and field on bad input)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"spec: no such file {str(path)!r}") from None
    except IsADirectoryError:
        raise InputError(f"spec: {str(path)!r} is a folder; give a TOML file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"spec {path}: cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"spec {path}: not valid TOML: {exc}") from None
    return parse_spec(data, source=str(path), default_name=path.stem)


def parse_spec(data: dict[str, Any], source: str = "<spec>", default_name: str = "sweep") -> SweepSpec:
    """Validate the tables of a spec already parsed from TOML and build a `SweepSpec`."""
    _known(data, _TABLES, source, "top-level table")
    sweep = _table(data, "sweep", source, required=True)
    _known(sweep, _SWEEP_FIELDS, source, "[sweep] field")
    for key in ("task", "name", "store", "description"):
        if key in sweep and not isinstance(sweep[key], str):
            raise InputError(f"{source}: [sweep] {key} must be a string, got {sweep[key]!r}")
    if "task" not in sweep:
        raise InputError(f"{source}: [sweep] task is required (a registered task name)")
    task_type(sweep["task"])
    name = sweep.get("name", default_name)
    if not _NAME.match(name):
        raise InputError(f"{source}: [sweep] name must use letters, digits, '.', '_', '-', got {name!r}")
    params = _table(data, "params", source)
    grid = _table(data, "grid", source)
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise InputError(f"{source}: [grid] {key} must be a non-empty list, got {values!r}")
        if key in params:
            raise InputError(f"{source}: field {key!r} is in both [params] and [grid]")
    for table, fields in (("params", params), ("grid", grid)):
        for key, value in fields.items():
            _check_json(value, f"{source}: [{table}] {key}")
    report = _table(data, "report", source)
    _known(report, _REPORT_FIELDS, source, "[report] field")
    options = {}
    for key in _REPORT_FIELDS:
        if key in report:
            value = report[key]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InputError(f"{source}: [report] {key} must be a list of field names, got {value!r}")
            options[key] = tuple(value)
    return SweepSpec(
        name=name,
        task=sweep["task"],
        params=params,
        grid=grid,
        store=Path(sweep.get("store", f"reports/sweeps/{name}.sqlite")),
        source=source,
        description=sweep.get("description", ""),
        **options,
    )


def task_code(task: str) -> str:
    """Fingerprint of the science code a task's results depend on (see `code_fingerprint`)."""
    kind = task_type(task)
    return code_fingerprint(kind.code_root or kind.run.__module__)


def key_prefixes(spec: SweepSpec) -> np.ndarray:
    """The first 128 bits of every task key as an (n, 2) array of big-endian uint64, in grid order.

    What `sweep status` compares with the store: 16 bytes per task in one array and no per-task
    objects, computed in bulk (`lab.core.keys.grid_keys`) unless the task has an expander.
    """
    kind = task_type(spec.task)
    if kind.expand is not None:
        return prefix_array(bytes.fromhex("".join(t.key[:32] for t in expand(spec))))
    return grid_keys(spec.task, *_fixed_and_grid(spec, kind), lanes=2)


def expand(spec: SweepSpec) -> list[SweepTask]:
    """The sweep's tasks in grid order (a configuration that appears twice runs once)."""
    kind = task_type(spec.task)
    if kind.expand is None:
        fixed, grid = _fixed_and_grid(spec, kind)
        keys = grid_keys(spec.task, fixed, grid).astype(">u8").tobytes().hex()
        points = (dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values()))
        base = {**(kind.defaults or {}), **spec.params}  # the defaults' field order, as `with_defaults`
        return [
            SweepTask(keys[64 * i : 64 * i + 64], spec.task, {**base, **point})
            for i, point in enumerate(points)
        ]
    tasks: dict[str, SweepTask] = {}
    for values in itertools.product(*spec.grid.values()):
        point = {**spec.params, **dict(zip(spec.grid, values, strict=True))}
        for config in _configurations(kind, point, spec.source):
            key = task_key(spec.task, config)
            tasks.setdefault(key, SweepTask(key, spec.task, config))
    return list(tasks.values())


def _fixed_and_grid(spec: SweepSpec, kind: TaskType) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """A task without an expander: its fixed fields (defaults filled in) and the grid's distinct values.

    Each grid field keeps its values' first occurrences by canonical JSON; every value is checked
    against the task's parameters once, not once per task.
    """
    fixed = dict(spec.params)
    if kind.defaults is not None:
        kind.with_defaults({**spec.params, **{k: v[0] for k, v in spec.grid.items()}}, spec.source)
        for name, values in spec.grid.items():
            for value in values:
                kind.check_value(name, value, spec.source)
        fixed = {k: v for k, v in {**kind.defaults, **spec.params}.items() if k not in spec.grid}
    distinct = {name: list({canonical(v): v for v in values}.values()) for name, values in spec.grid.items()}
    return fixed, distinct


def run_sweep(
    spec: SweepSpec,
    *,
    store_path: str | os.PathLike[str] | None = None,
    client: Any = None,
    scheduler: str | None = None,
    workers: int | None = None,
    sequential: bool = False,
    retry_failed: bool = False,
    keep_stale: bool = False,
    quiet: bool = False,
) -> RunSummary:
    """Run the tasks of `spec` that the store does not hold as done, committing each as it finishes.

    Backend: `client` (a `distributed.Client`) if given; otherwise a client of `scheduler`; else an
    in-process `LocalCluster` of `workers` single-threaded processes (default: one per core,
    capped at the number of tasks); sequential in-process if `sequential` or Dask is missing.
    Failed tasks are rerun only with `retry_failed`; results of other code (stale) are rerun unless
    `keep_stale`. KeyboardInterrupt stops the sweep (what finished is in the store).
    """
    return run_tasks(
        spec.task,
        expand(spec),
        store_path if store_path is not None else spec.store,
        client=client,
        scheduler=scheduler,
        workers=workers,
        sequential=sequential,
        retry_failed=retry_failed,
        keep_stale=keep_stale,
        quiet=quiet,
    )


@register_runner(RUNNER)
def run_tasks(
    name: str,
    tasks: list[SweepTask],
    store_path: str | os.PathLike[str],
    *,
    client: Any = None,
    scheduler: str | None = None,
    workers: int | None = None,
    sequential: bool = False,
    retry_failed: bool = False,
    keep_stale: bool = False,
    quiet: bool = False,
    threads: int = 1,
    describe: Callable[[SweepTask, dict[str, Any]], str] | None = None,
) -> RunSummary:
    """Run the `tasks` of the registered task `name` that the store at `store_path` does not hold as done.

    What `run_sweep` does once it has expanded its spec, for callers that make the tasks themselves
    (`python -m lab replicate`, which finds it registered: `lab.core.tasks.task_runner`). Options as
    `run_sweep`'s; `threads`: the BLAS and Numba threads of each task (`run_task`); `describe(task,
    outcome)`, if given, names each finished task in a progress line of its own.
    """
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise InputError(f"workers must be an integer >= 1, got {workers!r}")
    if scheduler is not None and (client is not None or sequential):
        raise InputError("scheduler: give a scheduler address, a client, or sequential, not several")
    if scheduler is not None and not dask_available(quiet=True):
        raise InputError("scheduler: connecting to a Dask scheduler needs dask[distributed]")
    start = time.perf_counter()
    kind = task_type(name)
    code = task_code(name)
    with SweepStore(store_path) as store:
        status = store.statuses((t.key for t in tasks), code=None if keep_stale else code)
        rerun = {None, "stale", "failed"} if retry_failed else {None, "stale"}
        todo = [t for t in tasks if status.get(t.key) in rerun]
        summary = RunSummary(
            total=len(tasks),
            already_done=sum(s == "done" for s in status.values()),
            failed_skipped=0 if retry_failed else sum(s == "failed" for s in status.values()),
            stale_rerun=sum(s == "stale" for s in status.values()),
        )
        shown = {"enabled": not quiet, "lines": describe is not None, "unit": "task"}
        progress = Progress(len(todo), "sweep" if describe is None else name, **shown)

        def commit(task: SweepTask, outcome: dict[str, Any]) -> None:
            store.put(task.key, task.task, task.params, lab.__version__, outcome, code=code)
            summary.ran.append(task.key)
            summary.done += outcome["status"] == "done"
            summary.failed += outcome["status"] == "failed"
            if describe is not None:
                progress.step(describe(task, outcome))
            else:
                progress.step(f"{summary.failed} failed" if summary.failed else "")

        try:
            if not todo:
                summary.backend = "none (nothing to run)"
            elif sequential or (client is None and scheduler is None and not dask_available(quiet)):
                summary.backend = "sequential"
                for task in todo:
                    commit(task, run_task(kind.run, task.params, threads))
            elif client is not None:
                summary.backend = f"dask {client.scheduler.address}"
                _run_on_dask(client, kind, todo, commit, threads)
            else:
                with _dask_client(scheduler, min(workers or machine_cores(), len(todo))) as own:
                    summary.backend = f"dask {own.scheduler.address}"
                    _run_on_dask(own, kind, todo, commit, threads)
        finally:
            progress.close()
    summary.seconds = time.perf_counter() - start
    return summary


def _configurations(kind: TaskType, point: dict[str, Any], source: str) -> list[dict[str, Any]]:
    """The full configurations of one grid point of a task with an expander: the expander's output."""
    takes = kind.expand_args()
    missing = [n for n, p in takes.items() if p.default is p.empty and n not in point]
    if missing:
        raise InputError(f"{source}: field {missing[0]!r} is required by task {kind.name!r}")
    configs = kind.expand(**{k: v for k, v in point.items() if k in takes})
    overrides = {k: v for k, v in point.items() if k not in takes}
    return [_override(config, overrides, kind.name, source) for config in configs]


def _override(config: dict[str, Any], overrides: dict[str, Any], task: str, source: str) -> dict[str, Any]:
    """A copy of `config` with each dotted field replaced; a field the config lacks is an error."""
    config = copy.deepcopy(config)
    for dotted, value in overrides.items():
        *path, last = dotted.split(".")
        node = config
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict) or last not in node:
            fields = ", ".join(sorted(_leaves(config)))
            raise InputError(
                f"{source}: field {dotted!r} is not a field of task {task!r}'s configurations; "
                f"fields: {fields}"
            )
        node[last] = value
    return config


def _leaves(config: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in config.items():
        if isinstance(value, dict):
            yield from _leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}"


def _run_on_dask(
    client: Any,
    kind: TaskType,
    todo: list[SweepTask],
    commit: Callable[[SweepTask, dict[str, Any]], None],
    threads: int = 1,
) -> None:
    """Submit every task, then commit outcomes in completion order; cancel the rest on the way out."""
    from distributed import as_completed

    pending = {
        client.submit(
            run_task, kind.run, task.params, threads, key=f"{task.task}-{task.key}", pure=False
        ): task
        for task in todo
    }
    try:
        for future in as_completed(list(pending)):
            task = pending.pop(future)
            if future.status == "finished":
                outcome = future.result()
            elif future.status == "error":  # the worker died (KilledWorker) or could not run the task
                outcome = _client_side_failure(future.exception())
            else:  # cancelled by someone else: not finished, so not recorded
                continue
            commit(task, outcome)
            future.release()
    finally:
        if pending:
            client.cancel(list(pending))


def _client_side_failure(exc: BaseException) -> dict[str, Any]:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {"status": "failed", "result": None, "error": text, "seconds": 0.0, "worker": "dask"}


@contextmanager
def _dask_client(scheduler: str | None, workers: int) -> Iterator[Any]:
    """A client of `scheduler`, or of a fresh in-process LocalCluster of single-threaded worker processes.

    The local workers start without Dask's MALLOC_TRIM_THRESHOLD_: setting it turns off glibc's
    adaptive mmap threshold, so every large NumPy temporary is mmap'd and page-faulted afresh,
    which made training runs 1.5-2x slower in workers than in-process. Their statistical
    profiler is off too: it only feeds the dashboard, which this cluster does not serve. The workers
    ignore Ctrl-C (`ctrl_c_ignored`, while the cluster starts): this process takes it and closes the
    cluster, which ends them.
    """
    import dask
    from distributed import Client, LocalCluster

    if scheduler is not None:
        with Client(scheduler) as client:
            yield client
        return
    with dask.config.set(
        {
            "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
            "distributed.worker.profile.enabled": False,
        }
    ):
        with ctrl_c_ignored():
            cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
        with cluster, Client(cluster) as client:
            yield client


def _table(data: dict[str, Any], name: str, source: str, required: bool = False) -> dict[str, Any]:
    if name not in data:
        if required:
            raise InputError(f"{source}: table [{name}] is required")
        return {}
    if not isinstance(data[name], dict):
        raise InputError(f"{source}: [{name}] must be a table, got {data[name]!r}")
    return data[name]


def _known(table: dict[str, Any], allowed: tuple[str, ...], source: str, what: str) -> None:
    unknown = [k for k in table if k not in allowed]
    if unknown:
        raise InputError(f"{source}: unknown {what} {unknown[0]!r}; allowed: {', '.join(allowed)}")


def _check_json(value: Any, where: str) -> None:
    """TOML dates and times (and NaN/inf) have no JSON form, so they cannot enter a task key."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_json(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_json(item, f"{where}[{i}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{where} must be finite, got {value!r}")
    elif not isinstance(value, str | int | float | bool):
        raise InputError(f"{where} must be a string, number, boolean, list or table, got {value!r}")
