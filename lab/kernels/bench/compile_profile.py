"""What each kernel specialization costs to compile, from an empty Numba cache, one at a time.

The caller names its workloads (`Workload`: a `module:function` and JSON arguments, and the commands
that need it); the kernels are the Numba dispatchers of the kernel modules it names. Three steps, each
in fresh child processes (`python -m lab.kernels.bench.compile_profile`), so the caller never compiles:

1. `enumerate`: one child runs every workload once (loading from, or filling, the ordinary cache),
   then each again after emptying every dispatcher's overloads, so each reloads from the cache exactly
   the specializations that workload reaches from Python (a kernel loaded from the cache brings no
   callee with it, so these are the directly called ones).
2. `compile`: per specialization a fresh child with a fresh empty NUMBA_CACHE_DIR imports the kernel
   modules, warms the compiler up on two trivial functions (one parallel), then compiles it; its CPU
   time (user + sys, `RUSAGE_SELF`) after the warm-up minus before is the row's `seconds`. Every other
   specialization compiled in that child (a non-inlined jitted callee; an inlined one is part of the
   caller) is recorded as its callee and profiled in its own child in turn.
3. Attribution: a row's `self_seconds` is its `seconds` minus the `self_seconds` of its callees (each
   counted once, however deep), clipped at 0; a callee inherits every command of its callers, and a
   command's total is the sum of `self_seconds` over the rows it needs, i.e. a one-process cold compile
   of them without the per-process import and warm-up (`method`).
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import pickle
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from lab.core.provenance import cpu_model
from lab.core.schema import COUNT, NUMBER, TEXT, Each, Is

PROFILE_FORMAT = "moe-lab compile profile 1"
PROFILE_NAME = "compile_profile.json"  # its name in results/bench/, beside the benchmark summaries
BEFORE_NAME = "compile_profile_before.json"  # the profile of the code before a change, kept to compare
COMMANDS = ("verify", "replicate", "sweep", "tests")  # the order of the totals, the legend and `needs`
TEXTS = Is("a list of texts", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v))
ROW = {
    "kernel signature": TEXT,
    "seconds self_seconds share": NUMBER,
    "reached": Is("'entry' or 'callee'", lambda v: v in ("entry", "callee")),
    "needs callees": TEXTS,
}
COMPILE_PROFILE = {  # the schema of the file `summary` gives (lab.docs.results loads it)
    "date": TEXT,
    "machine": {"cpu python numba llvmlite llvm": TEXT, "cores": COUNT},
    "method": {
        "children": COUNT,
        "import_seconds warmup_seconds": NUMBER,
        "complete": Is("true or false", lambda v: isinstance(v, bool)),
    },
    "rows": Each(ROW, "row", least=1),
    "totals": Each(NUMBER),
    "missing": TEXTS,
}


@dataclass(frozen=True)
class Workload:
    """What a command runs that reaches kernels: `call` ('module:function') with JSON `args`."""

    name: str
    call: str
    args: tuple = ()
    needs: tuple[str, ...] = ()


def key(kernel: str, signature: str) -> str:
    """A specialization's name in `callees`: `module.function(types)`."""
    return f"{kernel}({signature})"


# ------------------------------------------------------------------ in the children


def dispatchers(modules: Iterable[str]) -> dict[str, Any]:
    """The Numba dispatchers defined in `modules`, by `module.function` (the module's last part)."""
    from numba.core.dispatcher import Dispatcher

    found = {}
    for name in modules:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, Dispatcher) and value.py_func.__module__ == name:
                found[f"{name.rpartition('.')[2]}.{value.py_func.__name__}"] = value
    return dict(sorted(found.items()))


def _specializations(found: dict[str, Any]) -> set[tuple[str, str, str]]:
    """(kernel, signature text, pickled signature) of every overload the dispatchers hold."""
    return {
        (name, ", ".join(map(str, sig)), base64.b64encode(pickle.dumps(tuple(sig))).decode())
        for name, d in found.items()
        for sig in d.signatures
    }


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _run(workload: dict) -> None:
    module, _, function = workload["call"].partition(":")
    getattr(importlib.import_module(module), function)(*workload["args"])


def _enumerate_child(job: dict) -> dict:
    found = dispatchers(job["modules"])
    for workload in job["workloads"]:
        _run(workload)  # compiles into the ordinary cache whatever it lacks
    reached = {}
    for workload in job["workloads"]:
        for d in found.values():
            d._reset_overloads()
        _run(workload)
        reached[workload["name"]] = sorted(_specializations(found))
    return reached


def _warm_up() -> None:
    """Compile two trivial functions, one parallel: the compiler's one-off set-up of a process."""
    from numba import njit, prange, types

    @njit(cache=False)
    def one(x):
        return x + 1.0

    @njit(cache=False, parallel=True)
    def many(a):
        total = 0.0
        for i in prange(a.shape[0]):
            total += a[i]
        return total

    one.compile((types.float64,))
    many.compile((types.float64[:],))


def _compile_child(job: dict) -> dict:
    found = dispatchers(job["modules"])
    imported = _cpu()
    _warm_up()
    warm = _cpu()
    before, signature = _specializations(found), pickle.loads(base64.b64decode(job["pickled"]))
    found[job["kernel"]].compile(signature)
    seconds = _cpu() - warm
    mine = (job["kernel"], ", ".join(map(str, signature)))
    also = sorted(s for s in _specializations(found) - before if (s[0], s[1]) != mine)
    return {"seconds": seconds, "import_seconds": imported, "warmup_seconds": warm - imported, "also": also}


# ------------------------------------------------------------------ in the caller


def named_kernels(sources: Iterable[str], modules: list[str]) -> dict[str, list[str]]:
    """The dispatchers (by `dispatchers`' names) that the public names of `modules` (`__all__`, else
    every name without a leading underscore) reach, for each such name the Python `sources` mention as
    a name, an attribute, an import or a string (a benchmark's parameter): a name reaches the
    dispatchers its function's code names, through the modules' other Python functions."""
    import ast
    import types

    found = dispatchers(modules)
    by_object = {id(d): name for name, d in found.items()}
    public: dict[str, object] = {}
    for name in modules:
        module = importlib.import_module(name)
        names = getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")])
        public |= {n: vars(module)[n] for n in names if callable(vars(module).get(n))}

    def reach(value: object, seen: set[int]) -> set[str]:
        if id(value) in by_object:
            return {by_object[id(value)]}
        if not isinstance(value, types.FunctionType) or value.__module__ not in modules or id(value) in seen:
            return set()
        seen.add(id(value))
        codes, names = [value.__code__], set()
        while codes:
            code = codes.pop()
            names |= set(code.co_names)
            codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
        return set().union(*(reach(value.__globals__[n], seen) for n in names if n in value.__globals__))

    mentioned: set[str] = set()
    for path in sources:
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
            if isinstance(node, ast.Name | ast.Attribute | ast.alias | ast.Constant):
                text = getattr(node, "id", None) or getattr(node, "attr", None) or getattr(node, "name", None)
                mentioned.add(text if isinstance(text, str) else str(getattr(node, "value", "")))
    return {n: sorted(reach(v, set())) for n, v in sorted(public.items()) if n in mentioned}


def child(mode: str, job: dict, env: dict[str, str] | None = None) -> dict:
    """Run `python -m lab.kernels.bench.compile_profile MODE` on `job`; its JSON answer, or RuntimeError."""
    done = subprocess.run(
        [sys.executable, "-m", __name__, mode],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        env=os.environ | {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"} | (env or {}),
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{mode} child failed: {last}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(
    modules: list[str],
    workloads: list[Workload],
    by_kernel: dict[str, set[str]] | None = None,
    budget: float | None = None,
    run: Callable = child,
) -> dict[str, Any]:
    """Enumerate the workloads' specializations, then compile each (and each callee found) in its own
    child on an empty cache until `budget` CPU seconds of children are spent; the raw measurements.
    `by_kernel`: commands that need every enumerated specialization of a kernel (by its name)."""
    jobs = [{"name": w.name, "call": w.call, "args": list(w.args)} for w in workloads]
    reached = run("enumerate", {"modules": modules, "workloads": jobs})
    needs: dict[tuple[str, str], set[str]] = {}
    pickled: dict[tuple[str, str], str] = {}
    for w in workloads:
        for kernel, signature, sig in reached[w.name]:
            needs.setdefault((kernel, signature), set()).update(w.needs)
            pickled[kernel, signature] = sig
    for spec, found in needs.items():
        found |= (by_kernel or {}).get(spec[0], set())
    queue, measured, skipped, failed, spent = sorted(needs), {}, [], [], 0.0
    while queue:
        spec = queue.pop(0)
        if budget is not None and spent >= budget:
            skipped.append(key(*spec))
            continue
        with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
            job = {"modules": modules, "kernel": spec[0], "pickled": pickled[spec]}
            try:
                got = run("compile", job, env={"NUMBA_CACHE_DIR": cache})
            except RuntimeError as exc:
                failed.append(f"{key(*spec)}: {exc}")
                continue
        spent += got["import_seconds"] + got["warmup_seconds"] + got["seconds"]
        callees = [(kernel, signature) for kernel, signature, _ in got["also"]]
        pickled |= {(kernel, signature): sig for kernel, signature, sig in got["also"]}
        measured[spec] = got | {"callees": callees}
        queue += [c for c in callees if c not in needs]
        for c in callees:
            needs.setdefault(c, set())
    return {"needs": needs, "measured": measured, "skipped": skipped, "failed": failed}


def rows(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per measured specialization, largest `self_seconds` first (see the module's docstring)."""
    measured, needs = raw["measured"], {s: set(n) for s, n in raw["needs"].items()}
    entries = {s for s, n in raw["needs"].items() if n}
    for _ in measured:  # a callee needs what its callers need, however deep
        for spec, got in measured.items():
            for c in got["callees"]:
                needs[c] |= needs[spec]
    own: dict[tuple, float] = {}
    for spec in sorted(measured, key=lambda s: (len(measured[s]["callees"]), s)):  # callees first
        below = sum(own.get(c, 0.0) for c in measured[spec]["callees"])
        own[spec] = max(0.0, measured[spec]["seconds"] - below)
    total = sum(own.values()) or 1.0
    found = [
        {
            "kernel": spec[0],
            "signature": spec[1],
            "seconds": round(got["seconds"], 3),
            "self_seconds": round(own[spec], 3),
            "share": round(own[spec] / total, 4),
            "reached": "entry" if spec in entries else "callee",
            "needs": [c for c in COMMANDS if c in needs[spec]],
            "callees": sorted(key(*c[:2]) for c in got["callees"]),
        }
        for spec, got in measured.items()
    ]
    return sorted(found, key=lambda r: (-r["self_seconds"], r["kernel"], r["signature"]))


def totals(found: list[dict[str, Any]]) -> dict[str, float]:
    """Seconds of every row (`all`) and of the rows each command needs."""
    out = {"all": sum(r["self_seconds"] for r in found)}
    out |= {c: sum(r["self_seconds"] for r in found if c in r["needs"]) for c in COMMANDS}
    return {k: round(v, 2) for k, v in out.items()}


def machine() -> dict[str, Any]:
    """The CPU model, cores and the versions of Python, Numba, llvmlite and LLVM."""
    import platform

    import llvmlite
    import numba
    from llvmlite import binding

    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count() or 1,
        "python": platform.python_version(),
        "numba": numba.__version__,
        "llvmlite": llvmlite.__version__,
        "llvm": ".".join(map(str, binding.llvm_version_info)),
    }


def summary(raw: dict[str, Any], date: str, missing: list[str], about: dict | None = None) -> dict[str, Any]:
    """The slim file: rows, totals per command, the machine, the method's per-child overheads, what is
    missing (the caller's notes, specializations left out by the budget or failing alone), the date."""
    import statistics

    found, got = rows(raw), list(raw["measured"].values())
    skipped = [f"not measured (CPU budget spent): {name}" for name in raw["skipped"]]
    failed = [f"failed to compile alone: {line}" for line in raw["failed"]]
    return {
        "format": PROFILE_FORMAT,
        "date": date,
        "machine": about or machine(),
        "method": {
            "children": len(got),
            "import_seconds": round(statistics.median(g["import_seconds"] for g in got), 3) if got else 0.0,
            "warmup_seconds": round(statistics.median(g["warmup_seconds"] for g in got), 3) if got else 0.0,
            "complete": not (raw["skipped"] or raw["failed"]),
        },
        "rows": found,
        "totals": totals(found),
        "missing": [*missing, *skipped, *failed],
    }


if __name__ == "__main__":
    task = {"enumerate": _enumerate_child, "compile": _compile_child}[sys.argv[1]]
    print(json.dumps(task(json.loads(sys.stdin.read()))))
