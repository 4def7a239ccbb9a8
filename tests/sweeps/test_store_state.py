"""Damaged, foreign and stale state: named, refused or flagged, never silently reused or rewritten."""

import hashlib
import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from lab.cli.main import EXIT_BAD_INPUT, main
from lab.core import provenance
from lab.core.errors import InputError
from lab.core.keys import contains
from lab.core.store import APPLICATION_ID, SCHEMA_VERSION, SweepStore
from lab.sweeps.report import sweep_status
from lab.sweeps.sweep import expand, key_prefixes, load_spec, run_sweep

SPEC = """
[sweep]
task = "routing-probability"
store = "{store}"

[params]
draws = 2000

[grid]
M = [2, 3]
gap = [0.0, 0.5]
"""


@pytest.fixture
def spec_path(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SPEC.format(store=(tmp_path / "s.sqlite").as_posix()))
    return path


def _one_line_error(capsys, *names) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("python -m lab: error:"), err
    assert all(name in err for name in names), err
    return err


@pytest.mark.parametrize("action", ["run", "status", "report"])
@pytest.mark.parametrize("damage", ["truncated", "emptied", "foreign"])
def test_a_damaged_or_foreign_store_is_named_and_left_untouched(spec_path, tmp_path, capsys, action, damage):
    store = tmp_path / "s.sqlite"
    if damage == "truncated":
        assert main(["sweep", "run", str(spec_path), "--sequential", "--quiet"]) == 0
        capsys.readouterr()
        store.write_bytes(store.read_bytes()[:1000])
    elif damage == "emptied":
        store.write_bytes(b"")
    else:
        with closing(sqlite3.connect(store)) as db:
            db.execute("CREATE TABLE mine (x)")
            db.commit()
    before = store.read_bytes()
    assert main(
        ["sweep", action, str(spec_path), "--out", str(tmp_path / "r")][: 3 if action != "report" else 5]
    ) == (EXIT_BAD_INPUT)
    _one_line_error(capsys, str(store))
    assert store.read_bytes() == before
    if damage == "foreign":
        with closing(sqlite3.connect(store)) as db:
            assert [t for (t,) in db.execute("SELECT name FROM sqlite_master")] == ["mine"]


def test_read_only_commands_never_write(spec_path, tmp_path, capsys):
    assert main(["sweep", "run", str(spec_path), "--sequential", "--quiet"]) == 0
    store = tmp_path / "s.sqlite"
    files = {p.name: p.read_bytes() for p in tmp_path.glob("s.sqlite*")}
    store.chmod(0o444)
    try:
        assert main(["sweep", "status", str(spec_path)]) == 0
        assert main(["sweep", "report", str(spec_path), "--out", str(tmp_path / "r")]) == 0
    finally:
        store.chmod(0o644)
    assert {p.name: p.read_bytes() for p in tmp_path.glob("s.sqlite*")} == files
    assert "4 done" in capsys.readouterr().out


def test_a_change_to_a_numeric_module_makes_the_results_that_depend_on_it_stale(
    spec_path, monkeypatch, tmp_path
):
    spec = load_spec(spec_path)
    assert run_sweep(spec, sequential=True, quiet=True).done == 4
    original = provenance._module_file

    def edited(module):
        def module_file(name):
            path = original(name)
            if name != module:
                return path
            copy = tmp_path / f"{name}.py"
            copy.write_text(path.read_text().replace(" + ", " - ", 1))  # an operator, not a comment
            return copy

        return module_file

    # an edit to a module the task does not import leaves its results current
    monkeypatch.setattr(provenance, "_module_file", edited("lab.makkuva2020.losses"))
    provenance.code_fingerprint.cache_clear()
    with SweepStore(spec.store, readonly=True) as store:
        assert sweep_status(spec, store).done == 4
    # an edit to the kernels it runs makes every result stale: flagged, and recomputed by the next run
    monkeypatch.setattr(provenance, "_module_file", edited("lab.kernels.routed"))
    provenance.code_fingerprint.cache_clear()
    with SweepStore(spec.store, readonly=True) as store:
        status = sweep_status(spec, store)
        assert (status.done, status.stale) == (0, 4)
        assert sweep_status(spec, store, keep_stale=True).done == 4  # kept on purpose
    assert run_sweep(spec, sequential=True, quiet=True, keep_stale=True).ran == []
    summary = run_sweep(spec, sequential=True, quiet=True)
    assert (summary.stale_rerun, summary.done) == (4, 4)
    with SweepStore(spec.store, readonly=True) as store:
        assert sweep_status(spec, store).done == 4
    provenance.code_fingerprint.cache_clear()


def _prefixes(keys) -> list[tuple[int, int]]:
    return sorted((int(k[:16], 16), int(k[16:32], 16)) for k in keys)


def test_fast_key_prefixes_equal_the_expanded_tasks_keys(spec_path):
    spec = load_spec(spec_path)
    assert sorted(map(tuple, key_prefixes(spec).tolist())) == _prefixes(t.key for t in expand(spec))


@pytest.mark.parametrize(
    ("field", "value"), [("M", '"3"'), ("M", "2.5"), ("draws", "true"), ("gap", '"0"'), ("noise", "1")]
)
def test_grid_values_of_the_wrong_type_are_refused_before_anything_runs(tmp_path, field, value):
    spec_file = tmp_path / "bad.toml"
    spec_file.write_text(
        f'[sweep]\ntask = "routing-probability"\nstore = "{(tmp_path / "s.sqlite").as_posix()}"\n'
        f"[grid]\n{field} = [{value}]\n"
    )
    with pytest.raises(InputError, match=f"{field} must be of type"):
        expand(load_spec(spec_file))
    with pytest.raises(InputError, match=f"{field} must be of type"):
        key_prefixes(load_spec(spec_file))


def test_a_report_typo_is_refused_before_the_sweep_runs(spec_path, capsys):
    spec_path.write_text(spec_path.read_text() + '\n[report]\ngroup_by = ["MM"]\n')
    assert main(["sweep", "run", str(spec_path), "--sequential", "--quiet"]) == EXIT_BAD_INPUT
    _one_line_error(capsys, "group_by", "MM")
    assert not spec_path.with_suffix(".sqlite").exists()


def test_status_of_a_large_grid_keeps_16_bytes_per_task(tmp_path):
    text = SPEC.format(store=(tmp_path / "big.sqlite").as_posix()).replace(
        "gap = [0.0, 0.5]", f"gap = {[i / 1000 for i in range(1000)]}\nseed = {list(range(50))}"
    )
    path = tmp_path / "big.toml"
    path.write_text(text)
    spec = load_spec(path)
    prefixes = key_prefixes(spec)
    assert (
        prefixes.shape == (2 * 1000 * 50, 2) and prefixes.dtype == np.uint64 and prefixes.nbytes == 16 * 10**5
    )
    assert len(np.unique(prefixes, axis=0)) == 10**5


def test_status_loads_the_task_declarations_and_no_science(spec_path):
    """`sweep status` finds its command and task in the light plugins: no Numba, SciPy or model code."""
    assert main(["sweep", "run", str(spec_path), "--sequential", "--quiet"]) == 0
    probe = (
        "import sys; from lab.cli.main import main; code = main(['sweep', 'status', sys.argv[1]]); "
        "heavy = sorted(m for m in ('numba', 'scipy', 'lab.chen2022.model', 'checks') if m in sys.modules); "
        "print(code, heavy)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(spec_path)], capture_output=True, text=True, check=True
    )
    assert "4 tasks, 4 done" in out.stdout and out.stdout.splitlines()[-1] == "0 []", out.stdout + out.stderr


def test_key_prefix_membership_is_exact_when_high_halves_collide():
    keys = np.array([[5, 1], [5, 2], [7, 0], [1, 9]], dtype=np.uint64)
    probes = np.array([[5, 2], [5, 3], [7, 0], [2, 9], [1, 9], [0, 0]], dtype=np.uint64)
    assert contains(keys, probes).tolist() == [True, False, True, False, True, False]
    assert not contains(keys, np.empty((0, 2), np.uint64)).size


def test_status_counts_the_rows_of_its_own_grid_only(spec_path):
    """A store shared with a wider grid: the narrower spec counts its own tasks, seconds and failures."""
    assert main(["sweep", "run", str(spec_path), "--sequential", "--quiet"]) == 0
    narrow = spec_path.with_name("narrow.toml")
    narrow.write_text(spec_path.read_text().replace("M = [2, 3]", "M = [3, 4]"))
    spec = load_spec(narrow)
    with SweepStore(spec.store, readonly=True) as store:
        status = sweep_status(spec, store)
        seconds = sum(row.seconds for row in store.rows(t.key for t in expand(spec)))
    assert (status.total, status.done, status.failed, status.stale, status.pending) == (4, 2, 0, 0, 2)
    assert status.compute_seconds == pytest.approx(seconds, abs=2 * 1e-9)  # nanoseconds per row
    assert key_prefixes(spec).shape == (4, 2) and len(set(map(tuple, key_prefixes(spec).tolist()))) == 4


OLD_LAYOUT = """
CREATE TABLE tasks (
    key TEXT PRIMARY KEY, task TEXT NOT NULL, params TEXT NOT NULL, lab_version TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('done', 'failed')), result TEXT, error TEXT,
    seconds REAL NOT NULL, worker TEXT NOT NULL, finished TEXT NOT NULL{code},
    CHECK ((status = 'done' AND result IS NOT NULL AND json_valid(result) AND error IS NULL)
        OR (status = 'failed' AND result IS NULL AND error IS NOT NULL))
)
"""
OLD_COLUMNS = "key task params lab_version status result error seconds worker finished".split()


def _old_store(spec_path, tmp_path, version: int) -> Path:
    """The spec's results as a lab of schema 1 (no code column) or 2 stored them.

    Their keys were the SHA-256 of the whole configuration's canonical JSON.
    """
    assert main(["sweep", "run", str(spec_path), "--sequential", "--quiet"]) == 0
    with closing(sqlite3.connect(tmp_path / "s.sqlite")) as db:
        rows = db.execute(f"SELECT {', '.join(OLD_COLUMNS)}, code FROM tasks").fetchall()
    old, width = tmp_path / f"v{version}.sqlite", len(OLD_COLUMNS) + (version == 2)
    with closing(sqlite3.connect(old)) as db, db:
        db.execute(OLD_LAYOUT.format(code=", code TEXT NOT NULL DEFAULT ''" if version == 2 else ""))
        db.execute(f"PRAGMA user_version={version}")
        db.execute(f"PRAGMA application_id={APPLICATION_ID if version == 2 else 0}")
        for row in rows:
            text = json.dumps(
                {"params": json.loads(row[2]), "task": row[1]}, sort_keys=True, separators=(",", ":")
            )
            values = (hashlib.sha256(text.encode()).hexdigest(), *row[1:])[:width]
            db.execute(f"INSERT INTO tasks VALUES ({', '.join('?' * width)})", values)
    return old


@pytest.mark.parametrize("version", [1, 2])
def test_a_store_of_an_old_layout_is_read_as_it_is_and_upgraded_by_the_next_run(
    spec_path, tmp_path, capsys, version
):
    """Read-only commands read it through a rekeyed temporary copy and leave it byte for byte as it
    was; the next run rewrites its keys in place and recomputes nothing (schema 1 rows have no code
    fingerprint, so they are stale unless kept on purpose)."""
    old = _old_store(spec_path, tmp_path, version)
    files = {p.name: p.read_bytes() for p in tmp_path.glob(f"{old.name}*")}
    done, stale = (4, 0) if version == 2 else (0, 4)
    old.chmod(0o444)
    try:
        assert main(["sweep", "status", str(spec_path), "--store", str(old)]) == 0
        assert f"{done} done, 0 failed, {stale} stale, 0 pending" in capsys.readouterr().out
        assert (
            main(["sweep", "report", str(spec_path), "--store", str(old), "--out", str(tmp_path / "r")]) == 0
        )
    finally:
        old.chmod(0o644)
    assert {p.name: p.read_bytes() for p in tmp_path.glob(f"{old.name}*")} == files
    assert json.loads((tmp_path / "r" / "s.json").read_text())["counts"]["done"] == done
    spec = load_spec(spec_path)
    summary = run_sweep(spec, store_path=old, sequential=True, quiet=True, keep_stale=True)
    assert (summary.ran, summary.already_done) == ([], 4)
    with closing(sqlite3.connect(old)) as db, closing(sqlite3.connect(tmp_path / "s.sqlite")) as new:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert dict(db.execute("SELECT key, result FROM tasks")) == dict(
            new.execute("SELECT key, result FROM tasks")
        )
    with SweepStore(old, readonly=True) as store:
        assert sweep_status(spec, store, keep_stale=True).done == 4
