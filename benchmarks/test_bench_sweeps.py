"""`python -m lab sweep status` on a grid of 10⁶ tasks against a store holding a row for every one.

Target: at most 2 s wall and 200 MB peak memory for the whole command (a fresh interpreter,
as a user runs it). The rows are written with one `executemany` (the store's `put` commits one
row per transaction, which would take minutes here); a tenth of them carry another code
fingerprint, so the status reports them stale.
"""

import hashlib
import resource
import sqlite3
import subprocess
import sys
from contextlib import closing

import pytest

from lab.sweeps.store import SweepStore
from lab.sweeps.sweep import key_texts, load_spec, task_code

GRID = {"M": list(range(2, 102)), "gap": [i / 100 for i in range(100)], "seed": list(range(100))}
SPEC = """
[sweep]
task = "routing-probability"
store = "{store}"

[params]
draws = 1000

[grid]
""" + "".join(f"{name} = {values}\n" for name, values in GRID.items())


@pytest.fixture(scope="module")
def big_sweep(tmp_path_factory):
    """A spec of 10⁶ tasks and a store with one done row per task (10 % from other code)."""
    folder = tmp_path_factory.mktemp("big")
    path = folder / "big.toml"
    path.write_text(SPEC.format(store=(folder / "big.sqlite").as_posix()))
    spec = load_spec(path)
    code = task_code(spec.task)
    with SweepStore(spec.store):
        pass  # creates the schema and marks the file as the lab's
    rows = (
        (
            hashlib.sha256(text).hexdigest(),
            spec.task,
            "{}",
            "0",
            "done",
            "{}",
            None,
            1.0,
            "w",
            "t",
            code if i % 10 else "x",
        )
        for i, text in enumerate(key_texts(spec))
    )
    with closing(sqlite3.connect(spec.store)) as db, db:
        db.executemany(
            "INSERT INTO tasks (key, task, params, lab_version, status, result, error, seconds, worker, "
            "finished, code) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    return path


@pytest.mark.slow  # writes a 225 MB store first; `nox -s bench` runs it
def test_status_of_a_million_tasks(benchmark, big_sweep):
    benchmark.group = "sweep status, 10^6 tasks"

    def run():
        return subprocess.run(
            [sys.executable, "-m", "lab", "sweep", "status", str(big_sweep)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    out = benchmark.pedantic(run, rounds=3, iterations=1)
    benchmark.extra_info["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    assert "1000000 tasks, 900000 done, 0 failed, 100000 stale, 0 pending" in out
