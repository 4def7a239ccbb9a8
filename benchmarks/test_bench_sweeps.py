"""`python -m lab sweep status` on a grid of 10⁶ tasks, with no store yet and with a row for every task.

Each round runs the command in a fresh interpreter, as `python -m lab` does (`lab.cli.main.main`),
timed from outside (interpreter start included), and reads the interpreter's own peak RSS (VmHWM
in /proc/self/status: `ru_maxrss` of a child would also count this process's memory at the
fork). Asserted: the counts, every round's peak RSS at most 200 MB, and the fastest round at
most 2 s wall (3 rounds, or 1 under --benchmark-disable; the machine may be shared, so the slower
rounds are recorded, not asserted). The store's rows are written with one `executemany` (the
store's `put` commits one row per transaction, which would take minutes here), with the keys and
configurations a run writes (`expand`); a tenth of them carry another code fingerprint, so the
status reports them stale. The store has just been written, so its pages are in the OS page
cache."""

import json
import sqlite3
import subprocess
import sys
import time
from contextlib import closing

import pytest

from lab.core.store import SweepStore
from lab.sweeps.sweep import expand, load_spec, task_code

STATUS = (  # the command, then its own peak RSS in kB on stderr
    "import sys; from lab.cli.main import main; code = main(['sweep', 'status', *sys.argv[1:]]); "
    "print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0], file=sys.stderr); sys.exit(code)"
)
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
            task.key,
            task.task,
            json.dumps(task.params),
            "0",
            "done",
            "{}",
            None,
            1.0,
            "w",
            "t",
            code if i % 10 else "x",
        )
        for i, task in enumerate(expand(spec))
    )
    with closing(sqlite3.connect(spec.store)) as db, db:
        db.executemany(
            "INSERT INTO tasks (key, task, params, lab_version, status, result, error, seconds, worker, "
            "finished, code) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    return path


@pytest.mark.slow  # writes a 400 MB store first; `nox -s bench` runs it
@pytest.mark.parametrize(
    ("store", "counts"),
    [
        ("big.sqlite", "1000000 tasks, 900000 done, 0 failed, 100000 stale, 0 pending"),
        ("none.sqlite", "no store at {store} yet; 1000000 tasks pending"),
    ],
    ids=["full store", "no store"],
)
def test_status_of_a_million_tasks(benchmark, big_sweep, store, counts):
    benchmark.group = "sweep status, 10^6 tasks"
    store = big_sweep.with_name(store)
    rounds = []

    def run():
        start = time.perf_counter()
        child = subprocess.run(
            [sys.executable, "-c", STATUS, str(big_sweep), "--store", str(store)],
            capture_output=True,
            text=True,
            check=True,
        )
        rounds.append((time.perf_counter() - start, int(child.stderr.split()[-1]) / 1024))
        return child.stdout

    out = benchmark.pedantic(run, rounds=3, iterations=1)
    seconds, peak_mb = zip(*rounds, strict=True)
    benchmark.extra_info.update(seconds=list(seconds), peak_rss_mb=list(peak_mb))
    assert counts.format(store=store) in out
    assert max(peak_mb) <= 200 and min(seconds) <= 2.0, rounds
