"""`compile_in_child`: a command's own process loads every kernel from Numba's cache, compiling none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numba
import pytest

from lab.chen2022 import replicate as R
from lab.cli import kernel_cache, verify
from lab.cli.kernel_cache import check_training_config
from lab.cli.kernels import command_configs
from lab.cli.main import main
from lab.core import registry
from lab.core.records import report_record

ROOT = Path(__file__).resolve().parents[2]

# In a fresh process: one command of `python -m lab` (replicate's runs `steps` long unless 0; with no
# command, one noise-kernel call), then the number of kernel signatures compiled in it (cache misses).
PROBE = """
import importlib, json, sys
import numpy as np
from lab import kernels
from lab.chen2022 import replicate as R
from lab.cli.main import main
argv, steps, expand = json.loads(sys.argv[1]), int(sys.argv[2]), R.expand
if steps:  # short runs, as the `short_runs` fixture makes them
    R.expand = lambda *a, **k: [c | {"steps": steps} for c in expand(*a, **k)]
status = main(argv) if argv else 0
if not argv:
    kernels.backend("numba").noise(1, np.arange(3), 0, 0.0, 1.0)
compiled = 0
for name in (*kernels.KERNEL_MODULES, "_tiles", "_shared"):
    for value in vars(importlib.import_module(f"lab.kernels.{name}")).values():
        if hasattr(value, "stats") and hasattr(value.stats, "cache_misses"):
            compiled += sum(value.stats.cache_misses.values())
print(json.dumps({"status": status, "compiled": compiled}))
"""


def _probe(argv: list[str], cache_dir=None, steps: int = 12) -> dict:
    env = os.environ | {"NUMBA_NUM_THREADS": "1"} | ({"NUMBA_CACHE_DIR": str(cache_dir)} if cache_dir else {})
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv), str(steps)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return json.loads(done.stdout.splitlines()[-1])


def _table7(out, setting: str = "3") -> list[str]:
    """Table 7's six single CNNs (tanh, GELU and CELU among them), quick tier, one seed."""
    return [
        "replicate",
        "table7",
        "--settings",
        setting,
        "--seeds",
        "1",
        "--tier",
        "quick",
        "--quiet",
        "--out",
        str(out),
    ]


def test_replicate_compiles_no_kernel_in_its_own_process(tmp_path):
    assert _probe(_table7(tmp_path)) == {"status": 0, "compiled": 0}


def test_verify_compiles_no_kernel_in_its_own_process():
    assert _probe(["verify", "--only", "B3", "--quiet"])["compiled"] == 0  # six activations


def test_verify_has_the_model_kernels_loaded_first_only_for_checks_that_run_them(registered, monkeypatch):
    asked = []
    monkeypatch.setattr(verify, "compile_in_child", asked.append)

    def measured(claim):
        return lambda seed, tier: report_record(
            claim=claim, key="k", statement="s", category="rate", params={}, measured=1.0
        )

    registered(registry.Check("test.plain", ("Z5",), measured("Z5")))
    registered(registry.Check("test.model", ("Z6",), measured("Z6"), training_kernels=True))
    assert [main(["verify", "--only", claims, "--quiet"]) for claims in ("Z5", "Z6", "Z5,Z6")] == [0, 0, 0]
    assert asked == [[], check_training_config(), check_training_config()]


@pytest.mark.slow
def test_checks_not_marked_as_running_the_model_kernels_compile_none_in_verify(tmp_path):
    """`verify` of every claim whose checks are not marked `training_kernels`, on an empty cache: the
    child compiles only the stand-alone kernels, and the checks compile nothing in verify's process."""
    checks = registry.checks()
    marked = {claim for c in checks if c.training_kernels for claim in c.claims}
    plain = sorted({claim for c in checks for claim in c.claims} - marked, key=registry.claim_order)
    assert {"A1", "B6", "B10", "C1", "D2"} <= set(plain)
    assert _probe(["verify", "--only", ",".join(plain), "--quiet"], cache_dir=tmp_path) == {
        "status": 0,
        "compiled": 0,
    }


def test_the_compile_count_sees_a_kernel_compiled_in_the_process(tmp_path):
    assert _probe([], cache_dir=tmp_path)["compiled"] >= 1  # an empty cache: compiled here
    assert _probe([], cache_dir=tmp_path)["compiled"] == 0  # the next process loads it


@pytest.mark.slow
def test_from_an_empty_cache_a_run_equals_the_run_of_a_later_process(tmp_path):
    """The first `replicate` on an empty cache stores the records a second one stores (tanh included)."""
    first, again = tmp_path / "first", tmp_path / "again"
    assert _probe(_table7(first), cache_dir=tmp_path / "cache", steps=0)["compiled"] == 0
    assert _probe(_table7(again), cache_dir=tmp_path / "cache", steps=0)["compiled"] == 0
    configs = R.expand("table7", [3], 1, tier="quick")
    ours, theirs = (R.stored_rows(configs, out) for out in (first, again))
    assert sorted(ours) == sorted(theirs) == sorted(R.run_key(c) for c in configs)
    for key, row in ours.items():
        assert {k: v for k, v in row.result.items() if k != "seconds"} == {
            k: v for k, v in theirs[key].result.items() if k != "seconds"
        }


class _Done:
    """A child process that did its work at once."""

    def wait(self) -> int:
        return 0


def test_a_cache_noted_complete_starts_no_child_until_it_changes(tmp_path, started):
    runs = kernel_cache.check_training_config()

    def children(configs, every=False) -> int:
        before = len(started)
        kernel_cache.compile_in_child(configs, every)
        return len(started) - before

    assert children(runs) >= 1  # no note yet
    assert children(runs) == children(runs[:1]) == children([]) == 0  # what the note holds
    assert children(kernel_cache.every_training_config()) >= 1  # more than it holds
    assert children(runs, every=True) >= 1 and kernel_cache.EVERY in started[-1]  # every kernel: not yet
    assert children(runs, every=True) == children(runs) == 0  # now noted
    (tmp_path / "lab" / "kernels").mkdir(parents=True)
    (tmp_path / "lab" / "kernels" / "a.nbi").write_bytes(b"")  # the cache changed: children check it
    assert children(runs) >= 1 and children(runs) == 0
    (tmp_path / kernel_cache.NOTE).write_text("{damaged")  # a damaged note is no note, never an error
    assert children(runs) >= 1 and children(runs) == 0


@pytest.fixture
def started(tmp_path, monkeypatch) -> list[list[str]]:
    """The argv of each child `compile_in_child` starts (none runs), with a cache of its own."""
    argvs: list[list[str]] = []
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(kernel_cache.subprocess, "Popen", lambda argv, **_: argvs.append(argv) or _Done())
    return argvs


@pytest.mark.parametrize("cores", [1, 2])
def test_every_kernel_is_split_by_dtype_between_two_children(started, monkeypatch, cores):
    """`kernels --compile` on two cores: each child the short runs and every kernel of one dtype (the
    sweeps train float32 runs too); on one core, one child does both."""
    monkeypatch.setattr(kernel_cache, "machine_cores", lambda: cores)
    configs = [config for _, found in command_configs(ROOT / "sweeps") for config in found]
    kernel_cache.compile_in_child(configs, every=True)
    shares = [({config["dtype"] for _, config in json.loads(argv[3])}, argv[4:]) for argv in started]
    assert sum(len(json.loads(argv[3])) for argv in started) == len(kernel_cache._short(configs))
    if cores == 1:
        assert shares == [({"float64", "float32"}, [kernel_cache.EVERY, "float64,float32"])]
    else:
        assert shares == [
            ({"float64"}, [kernel_cache.EVERY, "float64"]),
            ({"float32"}, [kernel_cache.EVERY, "float32"]),
        ]


def test_a_child_calls_every_kernel_in_the_dtypes_it_is_given(monkeypatch):
    called = []
    monkeypatch.setattr(kernel_cache, "_serialized_cache_writes", lambda: None)
    monkeypatch.setattr(kernel_cache, "_call_every_kernel", called.append)
    kernel_cache._main(["[]", kernel_cache.EVERY, "float32"])
    kernel_cache._main(["[]", kernel_cache.EVERY, "float64,float32"])
    assert called == [("float32",), ("float64", "float32")]


@pytest.mark.parametrize("serialized", [True, False])
def test_two_saves_of_one_functions_index_at_once_keep_both_entries_only_under_the_lock(
    tmp_path, monkeypatch, serialized
):
    """Two threads save two signatures of one function while each holds the index it read (a slowed
    read): under the children's lock both entries stay, each with its own data file; without it (Numba
    alone, the control) the second write of the index drops the first entry."""
    from numba.core import caching

    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(caching.IndexDataCacheFile, "save", caching.IndexDataCacheFile.save)  # restored after
    read = caching.IndexDataCacheFile._load_index

    def slow_read(self):
        index = read(self)
        time.sleep(0.3)
        return index

    monkeypatch.setattr(caching.IndexDataCacheFile, "_load_index", slow_read)
    if serialized:
        kernel_cache._serialized_cache_writes()
    files = [caching.IndexDataCacheFile(str(tmp_path), "kernel", "stamp") for _ in range(2)]
    threads = [
        threading.Thread(target=f.save, args=(key, key)) for f, key in zip(files, ("f64", "f32"), strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    index = read(files[0])
    if serialized:
        assert sorted(index) == ["f32", "f64"] and len(set(index.values())) == 2
        assert [files[0].load(key) for key in ("f64", "f32")] == ["f64", "f32"]
    else:
        assert len(index) == 1


EVERY_PROBE = """
import json
from lab.cli.kernel_cache import _call_every_kernel
from lab.cli.kernels import kernel_modules
from lab.kernels.bench.compile_profile import dispatchers
_call_every_kernel()
found = dispatchers([*kernel_modules(), "lab.kernels.bench.peak"])
print(json.dumps({name: [str(sig) for sig in d.signatures] for name, d in found.items()}))
"""


def test_every_kernel_is_called_in_both_dtypes():
    """`kernels --compile`'s extra child reaches every kernel the commands reach from Python (the
    committed compile profile's entry rows) and the structured backward and the peak calibration, which
    no command's run reaches, each on float64 and on float32 arrays. Only these are judged: a callee's
    dispatcher lists a signature only when a caller was compiled in the process, not loaded, so what it
    lists depends on what the shared cache already held."""
    profile = json.loads((ROOT / "results" / "bench" / "compile_profile.json").read_text())
    entries = {row["kernel"] for row in profile["rows"] if row["reached"] == "entry"}
    entries |= {"structured._structured_backward_chunks", "peak._chains"}
    done = subprocess.run([sys.executable, "-c", EVERY_PROBE], capture_output=True, text=True, check=True)
    reached = {name: sigs for name, sigs in json.loads(done.stdout.splitlines()[-1]).items() if sigs}
    assert entries <= set(reached)
    for name, sigs in ((name, reached[name]) for name in entries):
        floats = {
            dtype for dtype in ("float64", "float32") for sig in sigs if f"array({dtype}" in sig.lower()
        }
        assert floats in (set(), {"float64", "float32"}), (name, sigs)
