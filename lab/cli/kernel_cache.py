"""The kernels compiled in child processes, so that a command and its workers load them from the cache.

A command's workers would each compile what Numba's cache lacks, the same kernels at once, and the
command's own process too. `compile_in_child(configs)` runs a short run of each distinct run
configuration (the registered `lab.core.registry.TrainingRuns` give them, `short`) and calls every
stand-alone kernel once, in child processes (`python -m lab.cli.kernel_cache`; two at once on two
cores, splitting the work), so that any compiling happens there, once; the calling process and the
workers it starts then load every kernel from the cache, as every later invocation does. With the
cache complete the children only load. `replicate`, `sweep run` (a task registered `training_kernels`)
and `verify` call it before they compute; `kernels --compile`, the test session's fill, asks for every
kernel in float64 and float32 as well, called directly as the tests and a user's own code call them.

A cache once completed is not checked by children again: after they succeed, a note beside Numba's cache
(`kernels-compiled.json`) holds the run configurations they ran and the state of that cache and of the
lab's sources (every `.nbi` index and `.py` file's size and modification time, Numba's and Python's
versions, the CPU). While those are unchanged, a command asking for configurations the note holds starts
no child (they would only load, about 3 s of imports and two-step runs). The note is a hint for speed
only: if it is wrong or damaged, the processes compile what they lack themselves, the same bits.

Compiled or loaded, a kernel gives the same bits: no kernel uses Numba's `parallel=True`
(`lab.kernels._threads`), whose kernels compiled in the running process and loaded from the cache were
not the same machine code (a Table 7 tanh single, quick tier, setting 3, seed 0, once gave 75.70 % in
the compiling process and 75.55 % in every later one). The short run of every training configuration in
float64 and float32 gave the same loss history and accuracies compiled in-process and loaded.
"""

from __future__ import annotations

import importlib
import json
import platform
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import lab
from lab.core import registry
from lab.core.io import write_json_atomic
from lab.core.machine import machine_cores
from lab.core.registry import TrainingRuns

NOTE = "kernels-compiled.json"  # beside the cache: what children have completed it with
EVERY = "--every-kernel"  # the child's flag, and the note's entry, for `_call_every_kernel`
DTYPES = ("float64", "float32")  # the float dtypes of the kernels' arrays
LOCK = "kernels-cache.lock"  # beside the note: held by each child while it saves a cache entry


def _training() -> list[TrainingRuns]:
    """The registered runs that train on the lab's training kernels, by name."""
    return [runs for _, runs in sorted(registry.declared("training").items())]


def every_training_config() -> list[dict]:
    """One run configuration of each model the registered training runs train (`TrainingRuns.every`)."""
    return [config for runs in _training() for config in runs.every()]


def check_training_config() -> list[dict]:
    """The run configurations whose kernels the registered training checks use (`TrainingRuns.checks`):
    what `verify` has compiled first."""
    return [config for runs in _training() for config in runs.checks()]


def _short(configs: list[dict]) -> list[tuple[TrainingRuns, dict]]:
    """One short run per configuration among `configs` whose kernels differ (`TrainingRuns.short`), each
    with the training runs that give it."""
    if not configs:
        return []
    return [(runs, short) for runs in _training() for short in runs.short(configs)]


def _where(func: Callable) -> str:
    """`module:name` of a function, which the child imports alone."""
    return f"{func.__module__}:{func.__qualname__}"


def compile_in_child(configs: list[dict], every: bool = False) -> None:
    """Have child processes run the kernels of these run configs (`_short`) and the stand-alone kernels,
    compiling what the cache lacks: on two or more cores two children at once, one for the short runs
    set apart (`TrainingRuns.apart`) and the stand-alone kernels, one for the rest (the structured MoE
    runs, which alone take about as long to compile as the other two); RuntimeError with a child's last
    line if one fails (a bug). With `every`, every kernel is also called directly in both dtypes
    (`_call_every_kernel`), and the work is split by dtype instead: each child the short runs and every
    kernel of one dtype, which share fewer specializations than a split by run does (the fill took
    27.4 s against 34.8 s on an empty cache, two cores). The children save cache entries one at a time
    (`_serialized_cache_writes`)."""
    short = _short(configs)
    runs = [[_where(training.run), config] for training, config in short]
    asked = {json.dumps(run, sort_keys=True) for run in runs} | ({EVERY} if every else set())
    noted = _noted(_state())
    if noted is not None and asked <= noted:
        return
    apart = [run for run, (training, config) in zip(runs, short, strict=True) if training.apart(config)]
    two = machine_cores() > 1
    if every and two:
        float32 = [run for run in runs if run[1].get("dtype") == "float32"]
        shares = [([r for r in runs if r not in float32], [EVERY, "float64"]), (float32, [EVERY, "float32"])]
    elif every:
        shares = [(runs, [EVERY, ",".join(DTYPES)])]
    elif apart and two:
        shares = [([r for r in runs if r not in apart], []), (apart, ["--standalone"])]
    else:
        shares = [(runs, ["--standalone"])]
    with tempfile.TemporaryFile("w+") as errors:
        children = [
            subprocess.Popen(
                [sys.executable, "-m", "lab.cli.kernel_cache", json.dumps(share), *flags],
                stdout=subprocess.DEVNULL,
                stderr=errors,
            )
            for share, flags in shares
        ]
        try:
            failed = any([child.wait() != 0 for child in children])  # every child waited for
        except BaseException:  # Ctrl-C: a child inside one long LLVM call would only see it after that call
            for child in children:
                child.kill()  # Numba writes a cache file whole (a temporary file, then a rename)
            raise
        if failed:
            errors.seek(0)
            last = (errors.read().strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"compiling the kernels in a child process failed: {last}")
    _note(asked)


def _cache() -> tuple[Path, Path]:
    """Where Numba keeps the lab's kernels (NUMBA_CACHE_DIR, or the `__pycache__` folders in `lab`) and
    where the note goes (that folder, or `lab/__pycache__`)."""
    import numba  # here: `sweep status` imports this module and loads no science

    if numba.config.CACHE_DIR:
        return Path(numba.config.CACHE_DIR), Path(numba.config.CACHE_DIR) / NOTE
    return Path(lab.__file__).parent, Path(lab.__file__).parent / "__pycache__" / NOTE


def _state() -> dict:
    """What the cache's completeness rests on: each Numba index and lab source file's size and time, the
    versions and the CPU."""
    import numba

    files = sorted({*Path(lab.__file__).parent.rglob("*.py"), *_cache()[0].rglob("*.nbi")})
    stamps = {str(f): [f.stat().st_size, f.stat().st_mtime_ns] for f in files if f.exists()}
    return {"numba": numba.__version__, "python": sys.version, "cpu": platform.machine(), "files": stamps}


def _noted(state: dict) -> set[str] | None:
    """The short runs whose kernels (and the stand-alone ones) the note says the cache holds, if the cache
    and the sources are in `state` as noted; None if not, or if there is no note or a damaged one (a hint
    only)."""
    try:
        note = json.loads(_cache()[1].read_text())
        return set(note["runs"]) if note["state"] == state else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _note(runs: set[str]) -> None:
    """Note that the cache now holds the kernels of `runs` (and of those noted before, if it is unchanged);
    a cache folder that cannot be written gets no note."""
    try:
        state = _state()
        runs |= _noted(state) or set()
        note = _cache()[1]
        note.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(note, {"runs": sorted(runs), "state": state})
    except OSError:
        pass


def _call_kernels(dtype: str = "float64") -> None:
    """Each stand-alone kernel once, on small `dtype` arrays as the public functions pass them, and the
    spin loops of the lab's threads."""
    import numpy as np

    from lab import kernels
    from lab.kernels._shared import NOISE_CODES
    from lab.kernels._threads import compile_hand_over

    compile_hand_over()
    lib, rng = kernels.backend("numba"), np.random.default_rng(0)
    n, M, k, d = 8, 4, 2, 3
    clean, raw, xi = (_normal(rng, dtype, n, M) for _ in range(3))
    lib.noisy_top_k_gate_and_load(clean, raw, xi, k)
    lib.top_k_membership_counts(clean, np.ones((n, M), dtype), xi, k, 4, 0, False)
    A, x, q = _normal(rng, dtype, k, d), _normal(rng, dtype, n, d), np.ones(n, dtype)
    lib.l4_gradient(A, x, q, q, 1.0, 1.0, 0.1, 0.1, 0.1)
    for code in NOISE_CODES.values():
        lib.perturbed_argmax(clean, 0, code, 1.0, 2.0)
        lib.routing_counts(clean[0], 4, 0, code, 1.0, 2.0)
        lib.noise(lib.stream_key(0), np.arange(4), code, 1.0, 2.0)
    lib.softmax_gate(clean, rng.integers(0, M, n))
    lib.softmax_logit_gradient(clean, rng.integers(0, M, n), np.ones(n, dtype))


def _call_every_kernel(dtypes: tuple[str, ...] = DTYPES) -> None:
    """Every kernel of `lab.kernels` on arrays of each of `dtypes`, the model kernels called directly too
    (as the tests and a user's own code call them), and the peak calibration of `replicate --timed`:
    what `kernels --compile` adds to the commands' kernels (the noise kernel's uint64 index, which takes
    no float array, with float64)."""
    import numpy as np

    from lab import kernels
    from lab.kernels.activations import ACTIVATION_CODES
    from lab.kernels.bench import peak

    lib, rng = kernels.backend("numba"), np.random.default_rng(0)
    n, M, J, d, R, S, Q = 8, 4, 3, 5, 2, 2, 3
    if "float64" in dtypes:  # uint64 index: its own kernel
        lib.noise(lib.stream_key(0), np.arange(4, dtype=np.uint64), 0, 1.0, 2.0)
    for dtype in dtypes:
        _call_kernels(dtype)
        peak.chains(dtype, 1)
        routes, coef = rng.integers(0, M, n), _normal(rng, dtype, n)
        s, x, W, z = (
            _normal(rng, dtype, *shape) for shape in ((n, d), (n, S + Q, d), (M, J, d), (n, S + Q, J))
        )
        lib.router_gradient(s, lib.router_logits(s, _normal(rng, dtype, d, M)))
        signals, offset, scale, noise = (
            _normal(rng, dtype, *shape) for shape in ((R, d), (d,), (n, S), (n, Q, d))
        )
        structure = (signals, offset, rng.integers(0, R, (n, S)), scale, noise)
        act = ACTIVATION_CODES["relu"]  # a run-time code in these kernels: any one compiles them all
        lib.routed_forward(x, W, routes, act)
        lib.routed_backward(x, z, routes, coef, M, act)
        lib.routed_step(x, W, routes, coef, act)
        lib.dense_forward(x, W, act)
        lib.structured_forward(*structure, W, routes, act)
        lib.structured_backward(*structure, z, routes, coef, M, act)
        lib.structured_dense_forward(*structure, W, act)
        for act in ACTIVATION_CODES.values():  # the structured step picks its kernels by activation
            for loss in lib.MARGIN_LOSS_CODES.values():
                lib.structured_step(*structure, W, routes, coef, act, loss, _normal(rng, dtype, J))


def _normal(rng, dtype: str, *shape: int):
    """Standard normal draws of `shape` in `dtype`."""
    return rng.normal(size=shape).astype(dtype)


def _serialized_cache_writes() -> None:
    """Numba saves a cache entry by reading its function's index, adding the entry and writing the index
    back, unlocked: two children saving two signatures of one function at once could lose one entry, or
    leave both pointing at one data file (the other signature's machine code run on these arrays). In
    this process each save holds an exclusive lock on one file beside the note (`LOCK`); loads need none
    (Numba writes each file whole, then renames it)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, as Numba alone
        return
    from numba.core import caching

    save, path = caching.IndexDataCacheFile.save, _cache()[1].with_name(LOCK)
    path.parent.mkdir(parents=True, exist_ok=True)

    def locked(self, key, data):
        with open(path, "a") as lock:  # unlocked when closed
            fcntl.flock(lock, fcntl.LOCK_EX)
            save(self, key, data)

    caching.IndexDataCacheFile.save = locked


def _main(argv: list[str]) -> None:
    """A child's work: a JSON list of short runs, each `[module:function, configuration]` (and, with
    `--standalone`, the stand-alone kernels; with `--every-kernel DTYPES`, every kernel in each of these
    comma-separated dtypes)."""
    _serialized_cache_writes()
    if EVERY in argv:  # the stand-alone kernels among them
        _call_every_kernel(tuple(argv[argv.index(EVERY) + 1].split(",")))
    elif "--standalone" in argv:
        _call_kernels()
    for where, config in json.loads(argv[0]):
        module, name = where.split(":")
        getattr(importlib.import_module(module), name)(config)


if __name__ == "__main__":
    _main(sys.argv[1:])
