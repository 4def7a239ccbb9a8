"""noxfile.py's tests, verify and plugin sessions, run against a stand-in for nox that records each command:
the whole suite fills the kernel cache first and takes the files longest first, arguments add to
`verify`'s defaults, and the plugin's tests run whatever its verdicts."""

import contextlib
import importlib.util
import sys
import types
from pathlib import Path

import pytest

NOXFILE = Path(__file__).resolve().parents[1] / "noxfile.py"


class CommandFailed(Exception):
    """nox.command.CommandFailed as nox raises it: `reason` says the exit code."""

    def __init__(self, reason=None):
        super().__init__(reason)
        self.reason = reason


class SessionError(Exception):
    """What `session.error` raises in this stand-in."""


class FakeSession:
    """A nox session that records what it runs (in which folder) and fails the commands it is told to."""

    def __init__(self, posargs=(), failing=()):
        self.posargs, self.failing = list(posargs), dict(failing)
        self.runs, self.folder, self.env = [], ".", {}

    def install(self, *args):
        pass

    def run(self, *args, **kwargs):
        self.runs.append((self.folder, list(args)))
        if args[0] in self.failing:
            raise CommandFailed(f"Returned code {self.failing[args[0]]}")

    @contextlib.contextmanager
    def chdir(self, folder):
        before, self.folder = self.folder, str(folder)
        yield
        self.folder = before

    def error(self, message):
        raise SessionError(message)


@pytest.fixture
def noxfile(monkeypatch):
    """noxfile.py imported with a stand-in `nox` whose `session` decorator returns the function itself."""
    nox = types.ModuleType("nox")
    nox.options = types.SimpleNamespace()
    nox.Session = FakeSession
    nox.session = lambda func=None, **kw: func if func is not None else (lambda f: f)
    command = types.ModuleType("nox.command")
    command.CommandFailed = CommandFailed
    nox.command = command
    monkeypatch.setitem(sys.modules, "nox", nox)
    monkeypatch.setitem(sys.modules, "nox.command", command)
    spec = importlib.util.spec_from_file_location("noxfile_under_test", NOXFILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_verify_arguments_add_to_the_defaults_and_a_later_one_wins(noxfile, monkeypatch):
    monkeypatch.setattr(noxfile.os, "cpu_count", lambda: 4)
    session = FakeSession(["--only", "B4", "--jobs", "1"])
    noxfile.verify(session)
    ((_, command),) = session.runs
    report = ["--json", "reports/verify.json", "--markdown", "reports/verify.md"]
    compare = ["--compare", "results/verify.json"]
    expected = [
        "python",
        "-m",
        "lab",
        "verify",
        "--jobs",
        "4",
        *report,
        *compare,
        "--only",
        "B4",
        "--jobs",
        "1",
    ]
    assert command == expected


@pytest.mark.parametrize("own", [["--seed", "3"], ["--tier=full"], ["--compare", "other.json"]])
def test_verify_compares_with_the_committed_file_unless_seed_tier_or_compare_are_given(noxfile, own):
    session = FakeSession(own)
    noxfile.verify(session)
    ((_, command),) = session.runs
    assert command.count("--compare") == own.count("--compare")
    assert "results/verify.json" not in command


@pytest.mark.parametrize(
    "failing, says",
    [
        ({}, None),
        ({"python": 1}, "failed: verify --only SW1 (Returned code 1)"),
        ({"pytest": 1}, "failed: the tests in examples/switch-aux-loss (Returned code 1)"),
        (
            {"python": 1, "pytest": 2},
            "failed: verify --only SW1 (Returned code 1); "
            "the tests in examples/switch-aux-loss (Returned code 2)",
        ),
    ],
)
def test_the_plugins_tests_run_whatever_its_verdicts(noxfile, failing, says):
    session = FakeSession(failing=failing)
    if says is None:
        noxfile.plugin(session)
    else:
        with pytest.raises(SessionError) as failed:
            noxfile.plugin(session)
        assert str(failed.value) == says
    assert [(folder, command[0]) for folder, command in session.runs] == [
        (".", "python"),
        ("examples/switch-aux-loss", "pytest"),
    ]
    assert session.runs[0][1][3:6] == ["verify", "--only", "SW1"]


@pytest.mark.parametrize(
    "posargs, fills",
    [([], True), (["--store-durations"], True), (["tests/chen2022"], False), (["-k", "gate"], False)],
)
def test_the_whole_suite_fills_the_cache_first_and_takes_the_files_in_the_stored_order(
    noxfile, posargs, fills
):
    session = FakeSession(posargs)
    noxfile.tests(session)
    commands = [args for _, args in session.runs]
    assert (commands[0] == ["python", "-m", "lab", "kernels", "--compile"]) is fills
    pytest_args = commands[-1]
    assert pytest_args[0] == "pytest" and pytest_args[len(pytest_args) - len(posargs) :] == posargs
    assert {"--dist", "loadfile", "--no-loadscope-reorder"} <= set(pytest_args)


@pytest.mark.parametrize("name", ["tests", "verify", "plugin"])
def test_the_sessions_processes_may_write_bytecode_caches(noxfile, name):
    """PYTHONDONTWRITEBYTECODE emptied (unset, for Python) in the sessions, so that a new environment's
    processes compile each module's source once, not once each."""
    session = FakeSession()
    getattr(noxfile, name)(session)
    assert session.env == {"PYTHONDONTWRITEBYTECODE": ""}
