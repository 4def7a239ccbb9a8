"""`lab.kernels.bench.compile_profile`: rows, attribution to callees and totals per command on a fake kernel
list, the schema of the file it writes, and the performance page's table of it."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from lab.core.schema import ResultsError
from lab.docs.performance_page import performance_page
from lab.docs.results import Results, load_compile_profile
from lab.kernels.bench import compile_profile as cp

# A fake lab: `outer(array)` calls the jitted `inner(float64)`, which `shared` calls too; `alone` is called
# by one workload only. (kernel, signature): (seconds compiled alone on an empty cache, its callees)
FAKE = {
    ("k.outer", "array(float64, 1d, C)"): (3.0, [("k.inner", "float64")]),
    ("k.shared", "int64"): (2.5, [("k.inner", "float64")]),
    ("k.inner", "float64"): (1.0, []),
    ("k.alone", "float32"): (0.5, []),
}
WORKLOADS = [
    cp.Workload("models", "fake:models", (), ("replicate", "verify")),
    cp.Workload("sweep", "fake:sweep", (1,), ("sweep",)),
]
REACHED = {  # what each workload calls from Python (an `enumerate` child's answer)
    "models": [("k.outer", "array(float64, 1d, C)", "p-outer"), ("k.shared", "int64", "p-shared")],
    "sweep": [("k.shared", "int64", "p-shared"), ("k.alone", "float32", "p-alone")],
}
PICKLED = {"p-outer": "k.outer", "p-shared": "k.shared", "p-alone": "k.alone", "p-inner": "k.inner"}


def fake_child(mode: str, job: dict, env: dict | None = None) -> dict:
    """The two kinds of child, answering from `FAKE` without compiling anything."""
    if mode == "enumerate":
        assert [w["name"] for w in job["workloads"]] == ["models", "sweep"]
        return {name: [list(s) for s in specs] for name, specs in REACHED.items()}
    assert env and "NUMBA_CACHE_DIR" in env  # a fresh empty cache each
    spec = next(s for s in FAKE if s[0] == PICKLED[job["pickled"]])
    seconds, callees = FAKE[spec]
    also = [[k, sig, "p-inner"] for k, sig in callees]
    return {"seconds": seconds, "import_seconds": 1.0, "warmup_seconds": 0.5, "also": also}


def _profile(budget: float | None = None) -> dict:
    raw = cp.measure(["k"], WORKLOADS, {"k.outer": {"tests"}}, budget, run=fake_child)
    return cp.summary(raw, "2025-01-01", ["a note"], about=MACHINE)


MACHINE = {"cpu": "Fake CPU", "cores": 2, "python": "3.11", "numba": "0.0", "llvmlite": "0.0", "llvm": "1.0"}


def test_rows_count_a_shared_callee_once_and_inherit_its_callers_commands():
    data = _profile()
    rows = {(r["kernel"], r["signature"]): r for r in data["rows"]}
    assert [r["self_seconds"] for r in data["rows"]] == [2.0, 1.5, 1.0, 0.5]  # largest first
    assert rows["k.outer", "array(float64, 1d, C)"]["seconds"] == 3.0  # with its callee
    inner = rows["k.inner", "float64"]
    assert inner["reached"] == "callee" and inner["needs"] == ["verify", "replicate", "sweep", "tests"]
    assert rows["k.outer", "array(float64, 1d, C)"]["callees"] == ["k.inner(float64)"]
    assert rows["k.alone", "float32"]["needs"] == ["sweep"]
    assert sum(r["share"] for r in data["rows"]) == pytest.approx(1.0, abs=1e-3)


def test_totals_per_command_are_the_self_seconds_of_the_rows_it_needs():
    data = _profile()
    assert data["totals"] == {"all": 5.0, "verify": 4.5, "replicate": 4.5, "sweep": 3.0, "tests": 3.0}
    assert data["method"] == {"children": 4, "import_seconds": 1.0, "warmup_seconds": 0.5, "complete": True}
    assert data["missing"] == ["a note"]


def test_a_spent_budget_leaves_the_rest_listed_as_not_measured():
    data = _profile(budget=4.0)  # each child spends 1.5 s + its compile
    assert not data["method"]["complete"]
    assert data["method"]["children"] == len(data["rows"]) < 4
    assert any(line.startswith("not measured (CPU budget spent): ") for line in data["missing"])


def test_the_written_profile_loads_and_a_damaged_one_is_refused_in_one_line(tmp_path):
    path = tmp_path / cp.PROFILE_NAME
    data = _profile()
    path.write_text(json.dumps(data))
    assert load_compile_profile(path) == data
    assert load_compile_profile(tmp_path / "absent.json") is None
    data["rows"][1]["self_seconds"] = "fast"
    path.write_text(json.dumps(data))
    with pytest.raises(ResultsError) as refused:
        load_compile_profile(path)
    assert str(refused.value).count("\n") == 0
    assert str(refused.value).startswith(f"{path}: row 1: field 'self_seconds' must be a finite number")


def test_the_performance_page_shows_the_rows_largest_first_with_their_share():
    page = performance_page(Results({"records": []}, compile_profile=_profile()))
    section = page.split("### Compile cost")[1]
    assert "| verify | 4.5 | 90 % |" in section and "| all | 5.0 | 100 % |" in section
    assert "](../results/bench/compile_profile.png)" in section
    rows = [line for line in section.splitlines() if line.startswith("| ") and "`k." in line]
    assert (
        rows[0]
        == "| 1 | `k.outer` | array(float64, 1d, C) | 2.00 | 40.0 % | 3.00 | verify, replicate, tests |"
    )
    assert [r.split(" | ")[1] for r in rows] == ["`k.outer`", "`k.shared`", "`k.inner`", "`k.alone`"]
    assert "- a note" in section
    assert "No compile profile committed yet" in performance_page(Results({"records": []}))


def test_named_kernels_follow_an_entry_point_to_the_dispatchers_it_calls(tmp_path, monkeypatch):
    (tmp_path / "fake_kernels_h14.py").write_text(
        textwrap.dedent("""
            from numba import njit
            __all__ = ["total", "unused"]

            @njit
            def _inner(x):
                return x * 2.0

            def _checked(x):
                return _inner(float(x))

            def total(x):
                return _checked(x)

            def unused(x):
                return x
        """)
    )
    test = tmp_path / "test_fake.py"
    test.write_text("import fake_kernels_h14 as k\n\ndef test_total():\n    k.total(1)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert cp.named_kernels([str(test)], ["fake_kernels_h14"]) == {"total": ["fake_kernels_h14._inner"]}
    finally:
        sys.modules.pop("fake_kernels_h14", None)
