"""Task declarations: what a sweep or a replication can run, by name, and the runner that runs them.

A task is `fn(params: dict) -> dict` (JSON-able, deterministic for its params). Declare it with
`@register_task(name, defaults=...)` (the defaults name every parameter the task accepts, so a
spec with a misspelt field is refused before anything runs) or with `expand=` (a function
turning one grid point into the task's own list of configurations, as a replication's expander
does). `code_root` names the module whose science the results depend on when that is not the
function's own module (a task whose function only adds the versions to a record, or fills in its
defaults, names the module of the science it calls). Workers receive the function itself (pickled by
reference to its module), so a task defined in any importable module runs on any Dask worker that can
import it. The declarations are collected by `lab.core.registry`; running them is `lab.sweeps`' (the
runner of keyed tasks it registers, `task_runner`, is how a paper runs its own tasks into a store
without importing the layer above it).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lab.core import registry
from lab.core.errors import InputError
from lab.core.registry import Declaration, declare

TaskFunc = Callable[[dict[str, Any]], dict[str, Any]]
ReportFunc = Callable[[dict[str, list[Any]], list[dict[str, Any]]], str]
AnalysisFunc = Callable[[dict[str, list[Any]], list[dict[str, Any]]], dict[str, Any]]
FigureFunc = Callable[[dict[str, Any]], Any]
RUNNER = "tasks"  # the name the runner of keyed tasks is registered under (`register_runner`)


@dataclass(frozen=True)
class TaskType(Declaration):
    """A registered task: the function, its accepted parameters, and an optional grid-point expander.

    `training_kernels`: its runs train on the lab's training kernels, which a command has a child process
    load or compile before it runs them (`lab.core.registry.TrainingRuns`)."""

    name: str
    run: TaskFunc
    defaults: dict[str, Any] | None
    expand: Callable[..., list[dict[str, Any]]] | None
    report: ReportFunc | None = None
    code_root: str | None = None
    analysis: AnalysisFunc | None = None
    figure: FigureFunc | None = None
    training_kernels: bool = False
    kind = "task"

    def with_defaults(self, point: dict[str, Any], source: str = "params") -> dict[str, Any]:
        """`point` with the task's defaults filled in; refuses unknown fields and values of a wrong type."""
        defaults = self.defaults or {}
        unknown = [k for k in point if k not in defaults]
        if unknown:
            raise InputError(
                f"{source}: field {unknown[0]!r} is not a parameter of task {self.name!r}; "
                f"parameters: {', '.join(defaults)}"
            )
        for name, value in point.items():
            self.check_value(name, value, source)
        return {**defaults, **point}

    def check_value(self, name: str, value: Any, source: str) -> None:
        """InputError unless `value` has the type of the field's default (an int is a valid float)."""
        default = (self.defaults or {}).get(name)
        allowed = _ALLOWED_TYPES.get(type(default))
        wrong_bool = isinstance(value, bool) and not isinstance(default, bool)
        if allowed is not None and (not isinstance(value, allowed) or wrong_bool):
            raise InputError(
                f"{source}: {name} must be of type {type(default).__name__} like its default "
                f"{default!r} (task {self.name!r}), got {value!r}"
            )

    def expand_args(self) -> dict[str, inspect.Parameter]:
        """The expander's parameters by name (empty without an expander)."""
        return dict(inspect.signature(self.expand).parameters) if self.expand else {}


_ALLOWED_TYPES: dict[type, tuple[type, ...]] = {
    bool: (bool,),
    int: (int,),
    float: (int, float),
    str: (str,),
    list: (list,),
    dict: (dict,),
}


@dataclass(frozen=True)
class SweepTask:
    """One independent task of a sweep: its key, task name and full configuration."""

    key: str
    task: str
    params: dict[str, Any]


@dataclass(frozen=True)
class TaskRunner(Declaration):
    """The runner of keyed tasks: `run(task, tasks, store_path, **options) -> summary` runs the `SweepTask`s
    of the registered task `task` that the store does not hold as done, and commits each outcome there."""

    name: str
    run: Callable[..., Any]
    kind = "runner"


def register_task(
    name: str,
    *,
    defaults: dict[str, Any] | None = None,
    expand: Callable[..., list[dict[str, Any]]] | None = None,
    report: ReportFunc | None = None,
    code_root: str | None = None,
    analysis: AnalysisFunc | None = None,
    figure: FigureFunc | None = None,
    training_kernels: bool = False,
) -> Callable[[TaskFunc], TaskFunc]:
    """Decorator: make `fn(params) -> dict` runnable by sweeps under `name`.

    `report(values, results) -> Markdown`, if given, adds the task's own tables to the sweep
    report: `values` maps each spec field to its values ([params] as one-element lists, [grid]
    as written), `results` are the finished runs' results from the store. `analysis(values, runs)
    -> JSON-able dict`, if given, computes the statistics across runs (fits, pooled counts) that the
    report stores as `analysis` and its readers format and never recompute; `runs` holds each finished
    run's numeric results and its parameters, flattened to dotted names (as the report's runs hold
    them, there filtered to its metrics). `figure(report) -> matplotlib figure or None`, if given, draws
    the report's figure (<name>.png) from the report alone, so a committed report can be redrawn without
    the store; None, or no `figure`, draws the generic bar chart. `code_root`: the module whose
    code fingerprint stamps the results (default: `fn`'s module). `training_kernels`: see `TaskType`.
    """
    if defaults is not None and expand is not None:
        raise ValueError(f"task {name!r}: give defaults or expand, not both")

    kept = dict(defaults) if defaults is not None else None
    return lambda fn: declare(
        TaskType(name, fn, kept, expand, report, code_root, analysis, figure, training_kernels)
    )(fn)


def register_runner(name: str) -> Callable:
    """Declare `run(task, tasks, store_path, **options)` as the runner of keyed tasks `name`."""
    return lambda run: declare(TaskRunner(name, run))(run)


def task_type(name: str) -> TaskType:
    """The registered task called `name`; InputError listing the known names otherwise."""
    found = registry.find("task", name)
    if found is None:
        raise InputError(f"[sweep] task must be one of {sorted(registry.declared('task'))}, got {name!r}")
    return found


def task_runner() -> Callable[..., Any]:
    """The registered runner of keyed tasks (`RUNNER`, `TaskRunner.run`); LookupError if none is installed."""
    found = registry.find("runner", RUNNER)
    if found is None:
        raise LookupError(f"no runner of keyed tasks is registered as {RUNNER!r}")
    return found.run
