"""Sweeps: spec validation, stable keys, Dask = sequential bit for bit, resume after a kill, failure retry."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from lab.chen2022.declarations import routing_probability
from lab.chen2022.sweep_tasks import exact_win_probability
from lab.cli.main import main
from lab.core.store import SweepStore
from lab.core.tasks import register_task
from lab.sweeps import sweep
from lab.sweeps.sweep import expand, key_prefixes, load_spec, run_sweep, task_key
from lab.sweeps.tasks import run_task

SMOKE = """
[sweep]
task = "routing-probability"
store = "{store}"

[params]
draws = {draws}

[grid]
M = [2, 5]
gap = [0.0, 0.25]
seed = {seeds}
"""


def write_spec(tmp_path: Path, text: str, name: str = "spec") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def smoke_spec(tmp_path: Path, name: str = "smoke", draws: int = 20_000, seeds=(0, 1)) -> sweep.SweepSpec:
    store = (tmp_path / f"{name}.sqlite").as_posix()
    return load_spec(write_spec(tmp_path, SMOKE.format(store=store, draws=draws, seeds=list(seeds)), name))


def results(path: Path) -> dict[str, str]:
    """key -> stored result JSON text of every done row (read straight from SQLite)."""
    with closing(sqlite3.connect(path)) as db:
        return dict(db.execute("SELECT key, result FROM tasks WHERE status = 'done'"))


def done_so_far(path: Path) -> int:
    """Done rows in a store another process is writing (0 before its table exists)."""
    try:
        return len(results(path)) if path.exists() else 0
    except sqlite3.OperationalError:
        return 0


# Tasks used only here. Their behaviour may depend on module state (to simulate an abort or a
# transient failure), never their results, which depend on the params alone.
CALLS = {"count": 0, "abort_after": None, "fail": True}


@register_task("test-abort")
def _abort_after_k(params: dict) -> dict:
    CALLS["count"] += 1
    if CALLS["abort_after"] is not None and CALLS["count"] > CALLS["abort_after"]:
        raise KeyboardInterrupt  # the sweep is killed while this task runs
    return {"square": params["x"] ** 2}


@register_task("test-flaky")
def _flaky(params: dict) -> dict:
    if CALLS["fail"] and params["x"] == 2:
        raise ValueError("x = 2 is flaky today")
    return {"value": params["x"] + 0.5}


@register_task("test-nan")
def _nan(params: dict) -> dict:
    return {"value": float("nan")}


@register_task("test-kill-worker")
def _kill_worker_once(params: dict) -> dict:
    marker = Path(params["marker"])
    if params["x"] == 0 and not marker.exists():
        marker.write_text("killed")
        os._exit(1)  # the worker process dies mid-task; Dask reruns the task elsewhere
    return {"x": params["x"]}


def _expand_test(target: str, seeds: int, seed: int = 0) -> list[dict]:
    return [{"target": target, "seed": seed + i, "model": {"M": 8, "J": 16}} for i in range(seeds)]


@register_task("test-expand", expand=_expand_test)
def _expanded(config: dict) -> dict:
    return {"M": config["model"]["M"]}


@pytest.fixture(autouse=True)
def _test_tasks(registered):
    """The tasks above are declared here, not advertised as a plugin: register them for each test."""
    for task in (_abort_after_k, _flaky, _nan, _kill_worker_once, _expanded):
        registered(task)


def test_key_names_task_and_configuration():
    key = task_key("t", {"a": 1, "b": [1, 2]})
    assert key == task_key("t", {"b": [1, 2], "a": 1})
    assert key != task_key("t", {"a": 1.0, "b": [1, 2]})
    assert key != task_key("u", {"a": 1, "b": [1, 2]})


def test_a_grid_is_keyed_in_bulk_exactly_as_task_by_task(tmp_path):
    """The keys a run writes (`expand`) and those status compares (`key_prefixes`) are `task_key`'s."""
    text = (
        '[sweep]\ntask = "test-flaky"\n[params]\nname = "a"\nnested = {b = [1, 2.0], a = {c = true}}\n'
        '[grid]\nx = [1, 1.0, -0.0, 0.0, "1", true, [1], {y = 1}, 1]\nz = [0, 1]\n'
    )
    spec = load_spec(write_spec(tmp_path, text))
    tasks = expand(spec)
    assert len(tasks) == 16 and len({t.key for t in tasks}) == 16  # the second 1 is the first
    assert all(t.key == task_key(t.task, t.params) for t in tasks)
    assert key_prefixes(spec).tolist() == [[int(t.key[:16], 16), int(t.key[16:32], 16)] for t in tasks]


def test_expansion_fills_defaults_in_grid_order(tmp_path):
    tasks = expand(smoke_spec(tmp_path))
    assert len(tasks) == 8
    assert [(t.params["M"], t.params["gap"], t.params["seed"]) for t in tasks[:3]] == [
        (2, 0.0, 0),
        (2, 0.0, 1),
        (2, 0.25, 0),
    ]
    assert tasks[0].params["noise"] == "uniform"  # default filled in, so it is part of the key
    assert len({t.key for t in tasks}) == 8


def test_expander_overrides_fields_of_its_configurations(tmp_path):
    text = '[sweep]\ntask = "test-expand"\n[params]\ntarget = "t1"\nseeds = 2\n[grid]\n"model.M" = [2, 32]\n'
    tasks = expand(load_spec(write_spec(tmp_path, text)))
    assert [(t.params["seed"], t.params["model"]["M"]) for t in tasks] == [(0, 2), (1, 2), (0, 32), (1, 32)]
    assert all(t.params["model"]["J"] == 16 for t in tasks)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('[sweep]\ntask = "routing-probability"\n[grids]\nM = [2]\n', "'grids'"),
        ("[params]\nM = 2\n", "[sweep]"),
        ("[sweep]\nname = 'x'\n", "[sweep] task"),
        ('[sweep]\ntask = "no-such-task"\n', "[sweep] task"),
        ("[sweep]\ntask = 3\n", "[sweep] task"),
        ('[sweep]\ntask = "routing-probability"\ntsk = 1\n', "'tsk'"),
        ('[sweep]\ntask = "routing-probability"\nname = "a b"\n', "[sweep] name"),
        ('[sweep]\ntask = "routing-probability"\n[grid]\nM = 3\n', "[grid] M"),
        ('[sweep]\ntask = "routing-probability"\n[grid]\nM = []\n', "[grid] M"),
        ('[sweep]\ntask = "routing-probability"\n[params]\nM = 2\n[grid]\nM = [3]\n', "'M'"),
        ('[sweep]\ntask = "routing-probability"\n[params]\nwhen = 1979-05-27\n', "[params] when"),
        ('[sweep]\ntask = "routing-probability"\n[params]\ngap = nan\n', "[params] gap"),
        ('[sweep]\ntask = "routing-probability"\n[report]\ngroup_by = "M"\n', "[report] group_by"),
        ('[sweep]\ntask = "routing-probability"\n[grid]\nMM = [2]\n', "'MM'"),
        ('[sweep]\ntask = "test-expand"\n[params]\ntarget = "t"\n', "'seeds'"),
        ('[sweep]\ntask = "test-expand"\n[params]\ntarget = "t"\nseeds = 1\n"model.K" = 3\n', "'model.K'"),
        ("[sweep\n", "not valid TOML"),
    ],
)
def test_bad_spec_is_refused_naming_the_field(tmp_path, text, field):
    with pytest.raises(ValueError) as info:
        expand(load_spec(write_spec(tmp_path, text)))
    assert field in str(info.value)


def test_example_specs_expand_and_table1_runs_are_table3_runs():
    pytest.importorskip("lab.chen2022.replicate")
    specs = {path.stem: load_spec(path) for path in (Path(__file__).parents[2] / "sweeps").glob("*.toml")}
    tasks = {name: expand(spec) for name, spec in specs.items()}
    assert {"smoke", "table1", "table3", "table11"} <= set(tasks) and all(tasks.values())
    table1_float64 = {t.key for t in tasks["table1"] if t.params["dtype"] == "float64"}
    assert table1_float64 < {t.key for t in tasks["table3"]}  # Table 1 also runs in float32
    assert {t.params["M"] for t in tasks["table11"]} == {32}


def test_builtin_task_agrees_with_exact_probability():
    assert exact_win_probability(2, 0.0, "uniform", 0.0, 1.0) == 0.5
    params = {"M": 4, "gap": 0.3, "noise": "gumbel", "a": 1.0, "b": 0.0, "draws": 50_000, "seed": 3}
    outcome = run_task(routing_probability, params)
    result = json.loads(outcome["result"])
    assert result["covered"] and result["exact"] == exact_win_probability(4, 0.3, "gumbel", 1.0, 0.0)


def test_sequential_run_resumes_without_rerunning_done_tasks(tmp_path):
    spec = smoke_spec(tmp_path)
    first = run_sweep(spec, sequential=True, quiet=True)
    assert (len(first.ran), first.done, first.failed) == (8, 8, 0)
    second = run_sweep(spec, sequential=True, quiet=True)
    assert (second.ran, second.already_done) == ([], 8)


def test_dask_cluster_equals_sequential_bit_for_bit(tmp_path, client):
    spec = smoke_spec(tmp_path, seeds=(0, 1, 2))
    on_dask = run_sweep(spec, store_path=tmp_path / "dask.sqlite", client=client, quiet=True)
    assert on_dask.backend.startswith("dask") and on_dask.done == 12
    run_sweep(spec, store_path=tmp_path / "seq.sqlite", sequential=True, quiet=True)
    dask_results, seq_results = results(tmp_path / "dask.sqlite"), results(tmp_path / "seq.sqlite")
    assert len(dask_results) == 12 and dask_results == seq_results


def test_aborted_sweep_reruns_only_the_missing_tasks(tmp_path, monkeypatch):
    spec = load_spec(write_spec(tmp_path, '[sweep]\ntask = "test-abort"\n[grid]\nx = [0, 1, 2, 3, 4, 5]\n'))
    store = tmp_path / "abort.sqlite"
    monkeypatch.setitem(CALLS, "count", 0)
    monkeypatch.setitem(CALLS, "abort_after", 2)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, store_path=store, sequential=True, quiet=True)
    before = results(store)
    assert len(before) == 2
    monkeypatch.setitem(CALLS, "abort_after", None)
    resumed = run_sweep(spec, store_path=store, sequential=True, quiet=True)
    assert set(resumed.ran) == {t.key for t in expand(spec)} - set(before)
    assert sorted(json.loads(v)["square"] for v in results(store).values()) == [0, 1, 4, 9, 16, 25]


def test_killed_client_resumes_only_missing_tasks(tmp_path, client):
    spec_path = write_spec(
        tmp_path,
        SMOKE.format(store=(tmp_path / "kill.sqlite").as_posix(), draws=1_500_000, seeds=list(range(10))),
    )
    store = tmp_path / "kill.sqlite"
    total = len(expand(load_spec(spec_path)))
    code = "import sys, lab.cli.sweep; from lab.cli.main import main; sys.exit(main(sys.argv[1:]))"
    address = client.scheduler.address
    args = [sys.executable, "-c", code, "sweep", "run", str(spec_path), "--scheduler", address, "--quiet"]
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if done_so_far(store) >= 3:
            break
        time.sleep(0.02)
    assert proc.poll() is None, proc.stderr.read().decode()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with closing(sqlite3.connect(store)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        rows = db.execute("SELECT status, result, error FROM tasks").fetchall()
    assert all(status == "done" and json.loads(result) and error is None for status, result, error in rows)
    before = results(store)
    assert 3 <= len(before) < total
    resumed = run_sweep(load_spec(spec_path), client=client, quiet=True)
    assert set(resumed.ran).isdisjoint(before) and len(resumed.ran) == total - len(before)
    after = results(store)
    assert len(after) == total and all(after[k] == v for k, v in before.items())


def test_failed_task_is_kept_and_retried_only_when_asked(tmp_path, monkeypatch):
    spec = load_spec(write_spec(tmp_path, '[sweep]\ntask = "test-flaky"\n[grid]\nx = [1, 2, 3]\n'))
    store = tmp_path / "flaky.sqlite"
    monkeypatch.setitem(CALLS, "fail", True)
    first = run_sweep(spec, store_path=store, sequential=True, quiet=True)
    assert (first.done, first.failed) == (2, 1)
    with SweepStore(store) as db:
        (failed,) = [r for r in db.rows(t.key for t in expand(spec)) if r.status == "failed"]
    assert failed.params == {"x": 2} and "ValueError: x = 2 is flaky today" in failed.error
    monkeypatch.setitem(CALLS, "fail", False)
    again = run_sweep(spec, store_path=store, sequential=True, quiet=True)
    assert (again.ran, again.failed_skipped) == ([], 1)
    retried = run_sweep(spec, store_path=store, sequential=True, quiet=True, retry_failed=True)
    assert retried.ran == [failed.key] and retried.done == 1
    assert json.loads(results(store)[failed.key]) == {"value": 2.5}


def test_store_never_holds_a_partial_or_overwritten_record(tmp_path):
    spec = load_spec(write_spec(tmp_path, '[sweep]\ntask = "test-nan"\n[params]\nx = 1\n'))
    summary = run_sweep(spec, store_path=tmp_path / "s.sqlite", sequential=True, quiet=True)
    assert summary.failed == 1  # a NaN result is a failure, not a record with NaN in it
    with SweepStore(tmp_path / "s.sqlite") as store:
        (row,) = store.rows([expand(spec)[0].key])
        assert row.result is None and "finite" in row.error
        done = {"status": "done", "result": '{"v": 1}', "error": None, "seconds": 1.0, "worker": "w"}
        store.put("k", "t", {}, "0", done)
        store.put("k", "t", {}, "0", {**done, "status": "failed", "result": None, "error": "late"})
        assert store.rows(["k"])[0].result == {"v": 1}  # done is final
    bad_rows = [
        ("a", "t", "{}", "0", "done", None, None, 1.0, "w", "now"),
        ("b", "t", "{}", "0", "done", "{not json", None, 1.0, "w", "now"),
        ("c", "t", "{}", "0", "failed", '{"v": 1}', "err", 1.0, "w", "now"),
        ("d", "t", "{}", "0", "running", None, None, 1.0, "w", "now"),
    ]
    with closing(sqlite3.connect(tmp_path / "s.sqlite")) as db:
        for row in bad_rows:
            with pytest.raises(sqlite3.IntegrityError):
                db.execute(
                    "INSERT INTO tasks (key, task, params, lab_version, status, result, error, seconds, "
                    "worker, finished) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("PRAGMA page_size").fetchone() == (1 << 16,)


def test_cli_run_status_and_report_from_the_store(tmp_path, capsys):
    spec_path = write_spec(
        tmp_path, SMOKE.format(store=(tmp_path / "c.sqlite").as_posix(), draws=5000, seeds=[0])
    )
    assert main(["sweep", "status", str(spec_path)]) == 0
    assert "4 tasks pending" in capsys.readouterr().out
    assert main(["sweep", "report", str(spec_path), "--out", str(tmp_path)]) == 2  # no store yet
    assert main(["sweep", "run", str(spec_path), "--sequential", "--quiet"]) == 0
    assert main(["sweep", "status", str(spec_path)]) == 0
    assert "4 tasks, 4 done, 0 failed, 0 stale, 0 pending" in capsys.readouterr().out
    assert main(["sweep", "report", str(spec_path), "--out", str(tmp_path / "out")]) == 0
    report = json.loads((tmp_path / "out" / "spec.json").read_text())
    assert report["counts"]["done"] == 4 and report["group_by"] == ["M", "gap"]
    assert [g["metrics"]["p1"]["n"] for g in report["groups"]] == [1, 1, 1, 1]
    assert "| M | gap | n | p1 |" in (tmp_path / "out" / "spec.md").read_text()
    assert (tmp_path / "out" / "spec.png").exists() == (importlib.util.find_spec("matplotlib") is not None)
    bad = write_spec(tmp_path, '[sweep]\ntask = "routing-probability"\n[grid]\nM = 3\n', "bad")
    assert main(["sweep", "run", str(bad), "--quiet"]) == 2
    assert "[grid] M" in capsys.readouterr().err


def test_without_dask_the_same_keys_run_in_process(tmp_path, monkeypatch):
    spec = smoke_spec(tmp_path, seeds=(0,))
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed now fails
    summary = run_sweep(spec, quiet=True)
    assert summary.backend == "sequential" and set(summary.ran) == {t.key for t in expand(spec)}
    with pytest.raises(ValueError, match="scheduler"):
        run_sweep(spec, scheduler="tcp://127.0.0.1:1", quiet=True)


def test_killed_worker_task_is_rerun_elsewhere(tmp_path, client):
    """Runs last: the nanny restarts the killed worker process while the other one finishes."""
    marker = (tmp_path / "killed").as_posix()
    text = f'[sweep]\ntask = "test-kill-worker"\n[params]\nmarker = "{marker}"\n[grid]\nx = [0, 1, 2, 3]\n'
    spec = load_spec(write_spec(tmp_path, text))
    summary = run_sweep(spec, store_path=tmp_path / "w.sqlite", client=client, quiet=True)
    assert Path(marker).exists() and (summary.done, summary.failed) == (4, 0)
