"""Ctrl-C wherever it lands: `python -m lab` in a session of its own, SIGINT to its whole process group (what
Ctrl-C in a terminal does, reaching the kernel-compiling children and the worker processes too), then the
same command again.

Each interrupt must give exit status 130, one line on stderr (the lab's, no traceback from the command or
any child) besides the progress lines printed before it, and no process of the group left behind; the same
`replicate` again trains only the runs its store does not hold, and the same `verify` again finishes. The
moment of each interrupt is set from the command's own progress lines (a run's or a check's reported
seconds), not from fixed sleeps, so that it falls where it should on a slower machine too.
"""

import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lab.chen2022.replicate import store_path
from lab.cli.main import EXIT_INTERRUPTED, INTERRUPTED

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="SIGINT to a process group")

ROOT = Path(__file__).resolve().parents[2]
LINE = f"python -m lab: {INTERRUPTED}"
PROGRESS = re.compile(r"^\[(\d+)/(\d+)\] .* (\d+\.\d) s \(\d+\.\d s\)$")  # [step/N] label, its s (total s)
# Table 1, setting 1, one seed, quick tier: two single CNNs, then two MoEs (about 0.4, 0.6, 1 and 1.2 s
# here); the tier's shorter training is the same code as the full tier's (the slow table7 test runs that)
TABLE1 = ["table1", "--settings", "1", "--seeds", "1", "--tier", "quick"]
# the module the children of `compile_in_child` run (on an empty cache: compiling for a minute or more)
CHILD = "lab.cli.kernel_cache"
# a store write interrupted: SIGINT to the group inside the second run's transaction, between its BEGIN and
# its INSERT (where a Ctrl-C during the write lands), through the command line's own entry point
WRITE_DRIVER = """
import os, signal, sys
from lab.cli.main import main
from lab.core.store import SweepStore
begin, writes = SweepStore._transaction, []

def interrupted_write(self):
    commit = begin(self)
    writes.append(None)
    if len(writes) == 2:
        os.killpg(0, signal.SIGINT)
    return commit

SweepStore._transaction = interrupted_write
sys.exit(main(sys.argv[1:]))
"""


class Command:
    """`python -m lab ARGS` (or `python -c CODE ARGS`) in a session of its own; stderr read as it comes."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None, code: str | None = None):
        environ = {k: v for k, v in os.environ.items() if k != "MOE_LAB_DEBUG"} | (env or {})
        entry = ["-c", code] if code else ["-m", "lab"]
        self.start = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, *entry, *args],
            cwd=ROOT,
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.lines: list[tuple[float, str]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def progress(self, step: int, timeout: float = 900) -> tuple[float, float]:
        """When the progress line `[step/N]` came, and the seconds that step reported for itself."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for when, line in list(self.lines):
                found = PROGRESS.search(line)
                if found and int(found[1]) == step:
                    return when, float(found[3])
            assert self.proc.poll() is None, f"finished before step {step}: {self.stderr()}"
            time.sleep(0.05)
        raise AssertionError(f"no progress line [{step}/N] in {timeout} s: {self.stderr()}")

    def child_running(self, name: str, timeout: float = 120) -> float:
        """When a process of the group running `name` (in its command line) was first seen."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(name in _cmdline(pid) for pid in _group(self.proc.pid)):
                return time.monotonic()
            assert self.proc.poll() is None, f"finished before {name} ran: {self.stderr()}"
            time.sleep(0.05)
        raise AssertionError(f"no {name} process in {timeout} s")

    def interrupt_at(self, when: float) -> None:
        """SIGINT to the whole process group at monotonic time `when` (the command must still run)."""
        time.sleep(max(0.0, when - time.monotonic()))
        assert self.proc.poll() is None, f"finished before the interrupt: {self.stderr()}"
        os.killpg(self.proc.pid, signal.SIGINT)

    def finish(self, timeout: float = 900) -> int:
        """The exit status, once the command and its stderr are done."""
        self.out = self.proc.stdout.read()  # stderr is the reader thread's
        self.proc.wait(timeout)
        self._reader.join(timeout)
        self.seconds = time.monotonic() - self.start
        return self.proc.returncode

    def stderr(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def steps(self) -> list[tuple[int, int]]:
        """Each progress line's (step, total)."""
        return [(int(m[1]), int(m[2])) for _, line in self.lines if (m := PROGRESS.search(line))]

    def others(self) -> list[str]:
        """The stderr lines that are not progress lines."""
        return [line for _, line in self.lines if not PROGRESS.search(line)]


def _group(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group `pgid`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except (OSError, ValueError):
            continue
        state, _, group = stat.rsplit(")", 1)[1].split()[:3]
        if entry.name.isdigit() and int(group) == pgid and state not in "ZX":
            found.append(int(entry.name))
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def assert_interrupted(command: Command) -> None:
    """Exit 130, the lab's one interrupt line and nothing else but progress, no process of the group left."""
    assert command.finish() == EXIT_INTERRUPTED, command.stderr()
    assert command.others() == [LINE], command.stderr()
    deadline = time.monotonic() + 10
    while _group(command.proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [_cmdline(pid) for pid in _group(command.proc.pid)]
    assert not left, f"still running 10 s after the command exited: {left}"


def done_runs(out: Path) -> int:
    with sqlite3.connect(store_path(out)) as db:
        return db.execute("SELECT count(*) FROM tasks WHERE status = 'done'").fetchone()[0]


def assert_resumes(args: list[str], out: Path, total: int, env: dict[str, str] | None = None) -> Command:
    """The same replicate again: exit 0, training exactly the runs the interrupted one did not store."""
    held = done_runs(out) if store_path(out).exists() else 0
    again = Command(args, env)
    assert again.finish() == 0, again.stderr()
    assert again.steps() == [(i, total - held) for i in range(1, total - held + 1)], again.stderr()
    assert done_runs(out) == total
    return again


def interrupt_replicate_in_training(args: list[str], out: Path, after: int, env=None) -> Command:
    """Replicate `args`, interrupted a tenth of a second after progress step `after`, early in the next run
    (each run after the first of these targets takes over half a second here): no timing assumption beyond
    that, since a run that still finished before the signal is simply one more stored run."""
    command = Command(args, env)
    seen, _ = command.progress(after)
    command.interrupt_at(seen + 0.1)
    assert_interrupted(command)
    assert done_runs(out) == len(command.steps()) >= after  # each finished run stored, the one cut not
    return command


def test_replicate_interrupted_in_training_resumes(tmp_path):
    """In-process training (a Numba kernel or the Python around it): 130, then the rest only."""
    args = ["replicate", *TABLE1, "--out", str(tmp_path)]
    interrupt_replicate_in_training(args, tmp_path, after=2)
    assert_resumes(args, tmp_path, total=4)


def test_verify_interrupted_in_a_check_runs_again():
    """A check interrupted in this process; verify keeps nothing, and the same command then finishes."""
    args = ["verify", "--only", "A1,D1"]
    command = Command(args)
    seen, _ = command.progress(1)
    command.interrupt_at(seen + 0.2)  # early in D1, which takes over a second (A1 a tenth)
    assert_interrupted(command)
    again = Command(args)
    assert again.finish() == 0, again.stderr()
    assert again.steps() == [(1, 2), (2, 2)]


@pytest.mark.slow
def test_verify_interrupted_with_an_idle_worker():
    """verify --jobs 2 with one worker idle (D1 done) and one in D2: no worker prints a traceback."""
    command = Command(["verify", "--only", "D1,D2", "--jobs", "2"])
    seen, first = command.progress(1)
    command.interrupt_at(seen + max(first / 4, 0.2))
    assert_interrupted(command)


@pytest.mark.slow
def test_replicate_full_tier_interrupted_in_training_resumes(tmp_path):
    """Tables 7/8, setting 3, one seed, full tier (six runs from seconds to minutes): interrupted in the
    second run, then the five runs left."""
    args = ["replicate", "table7", *"--settings 3 --seeds 1 --tier full".split(), "--out", str(tmp_path)]
    interrupt_replicate_in_training(args, tmp_path, after=1)
    assert_resumes(args, tmp_path, total=6)


@pytest.mark.slow
def test_replicate_on_dask_workers_interrupted_resumes(tmp_path):
    """--jobs 2: runs on a local Dask cluster; its worker processes take the Ctrl-C silently."""
    args = ["replicate", *TABLE1, "--jobs", "2", "--out", str(tmp_path)]
    command = Command(args)
    _, first = command.progress(1)
    command.interrupt_at(time.monotonic() + max(first / 2, 0.2))
    assert_interrupted(command)
    assert done_runs(tmp_path) == len(command.steps()) < 4
    assert_resumes(args, tmp_path, total=4)


@pytest.mark.slow
def test_replicate_interrupted_while_compiling_resumes(tmp_path):
    """An empty Numba cache: interrupted while the kernel_cache children compile; the children end at once
    (killed, not left to finish an LLVM call), and the same command compiles and trains everything."""
    out, env = tmp_path / "out", {"NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    args = ["replicate", *TABLE1, "--out", str(out)]
    command = Command(args, env)
    command.interrupt_at(command.child_running(CHILD) + 5)
    assert_interrupted(command)
    assert command.steps() == []
    assert_resumes(args, out, total=4, env=env)


@pytest.mark.slow
def test_replicate_interrupted_in_a_store_write_resumes(tmp_path):
    """SIGINT inside the second run's store transaction: the run is not stored, the first one is."""
    args = ["replicate", *TABLE1, "--out", str(tmp_path)]
    command = Command(args, code=WRITE_DRIVER)
    assert_interrupted(command)
    assert done_runs(tmp_path) == len(command.steps()) == 1
    assert_resumes(args, tmp_path, total=4)
