"""Task functions a sweep can run: a registry by name, the single-threaded wrapper, the built-in tasks.

A task is `fn(params: dict) -> dict` (JSON-able, deterministic for its params). Declare it with
`@register_task(name, defaults=...)` (the defaults name every parameter the task accepts, so a
spec with a misspelt field is refused before anything runs) or with `expand=` (a function
turning one grid point into the task's own list of configurations, as `lab.chen2022.runs.expand`
does). `code_root` names the module whose science the results depend on when that is not the
function's own module (`replicate`: `lab.chen2022.runs`, not the module that adds the versions to a
record). Workers receive the function itself (pickled by reference to its module), so a task
defined in any importable module runs on any Dask worker that can import it.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from threadpoolctl import threadpool_limits

from lab.core import registry
from lab.core.errors import InputError, interrupted
from lab.core.records import jsonable
from lab.core.registry import Declaration, declare

TaskFunc = Callable[[dict[str, Any]], dict[str, Any]]
ReportFunc = Callable[[dict[str, list[Any]], list[dict[str, Any]]], str]
AnalysisFunc = Callable[[dict[str, list[Any]], list[dict[str, Any]]], dict[str, Any]]
FigureFunc = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class TaskType(Declaration):
    """A registered task: the function, its accepted parameters, and an optional grid-point expander."""

    name: str
    run: TaskFunc
    defaults: dict[str, Any] | None
    expand: Callable[..., list[dict[str, Any]]] | None
    report: ReportFunc | None = None
    code_root: str | None = None
    analysis: AnalysisFunc | None = None
    figure: FigureFunc | None = None
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


def register_task(
    name: str,
    *,
    defaults: dict[str, Any] | None = None,
    expand: Callable[..., list[dict[str, Any]]] | None = None,
    report: ReportFunc | None = None,
    code_root: str | None = None,
    analysis: AnalysisFunc | None = None,
    figure: FigureFunc | None = None,
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
    code fingerprint stamps the results (default: `fn`'s module).
    """
    if defaults is not None and expand is not None:
        raise ValueError(f"task {name!r}: give defaults or expand, not both")

    kept = dict(defaults) if defaults is not None else None
    return lambda fn: declare(TaskType(name, fn, kept, expand, report, code_root, analysis, figure))(fn)


def task_type(name: str) -> TaskType:
    """The registered task called `name`; InputError listing the known names otherwise."""
    found = registry.find("task", name)
    if found is None:
        raise InputError(f"[sweep] task must be one of {sorted(registry.declared('task'))}, got {name!r}")
    return found


@contextlib.contextmanager
def pinned_threads(threads: int) -> Iterator[None]:
    """BLAS and Numba on `threads` threads inside the block (Numba's count restored after it), so that
    workers sharing a machine do not oversubscribe it."""
    import numba  # here, not at the top: `sweep status` needs the task declarations, not Numba

    before = numba.get_num_threads()
    try:
        with threadpool_limits(threads):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            yield
    finally:
        numba.set_num_threads(before)


@contextlib.contextmanager
def ctrl_c_ignored() -> Iterator[None]:
    """SIGINT ignored inside the block, and for good in every process started there (an ignored signal
    stays ignored across exec, and Python leaves it so), for starting worker processes: Ctrl-C reaches the
    whole process group, and a worker that took it would print its own traceback while this process takes
    it and ends them. A Ctrl-C inside the block is lost. Outside the main thread it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def run_task(fn: TaskFunc, params: dict[str, Any], threads: int = 1) -> dict[str, Any]:
    """Run one task on `threads` threads (BLAS and Numba pinned; default 1) and return its outcome.

    The outcome is `{"status": "done", "result": JSON text, ...}` or `{"status": "failed",
    "error": traceback, ...}`: an exception, a result that is not a dict, or a result that is not
    JSON (NaN, arrays of objects) is a failure, never a half-written record. KeyboardInterrupt and
    SystemExit propagate (they abort the sweep, they are not results of the task), and so does Ctrl-C
    that reaches the task disguised as another exception (`lab.core.errors.interrupted`).
    """
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
    start = time.perf_counter()
    try:
        with pinned_threads(threads):
            result = fn(params)
        if not isinstance(result, dict):
            raise TypeError(f"task result must be a dict, got {type(result).__name__}")
        text = json.dumps(jsonable(result, "result"), allow_nan=False)
        outcome = {"status": "done", "result": text, "error": None}
    except Exception as exc:
        if interrupted(exc):
            raise KeyboardInterrupt from exc
        outcome = {"status": "failed", "result": None, "error": traceback.format_exc()}
    outcome["seconds"] = time.perf_counter() - start
    outcome["worker"] = f"{socket.gethostname()}:{os.getpid()}"
    return outcome


@register_task(
    "routing-probability",
    defaults={"M": 8, "gap": 0.0, "noise": "uniform", "a": 0.0, "b": 1.0, "draws": 100_000, "seed": 0},
)
def routing_probability(params: dict[str, Any]) -> dict[str, Any]:
    """Monte-Carlo p_1(h) = P(argmax_m {h_m + r_m} = 1) (Lemma 5.1) with a 99 % Clopper–Pearson CI."""
    from lab.chen2022 import sweep_tasks

    return sweep_tasks.routing_probability(params)
