"""The lab's entry points: `nox -s verify` (every verdict), `nox -s lint tests` (CI), fuzz, bench."""

import os
from pathlib import Path

import nox
from nox.command import CommandFailed

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "uv|virtualenv"  # uv builds the environments in seconds where installed

CONSTRAINTS = "constraints.txt"  # the committed lock of the numeric stack; `nox -s lock` refreshes it


def _install(session: nox.Session, extras: str = "test") -> None:
    """The lab with `extras` from the lock. Its processes may write Python's bytecode caches even where
    PYTHONDONTWRITEBYTECODE is set: the environment is new, so without them every process (each test
    worker, command and child) compiled the source of numpy, scipy, numba and the lab again, about 1.4 s
    of the 2.7 s `python -m lab --help` took. The mutation judge forbids them again for its runs."""
    session.env["PYTHONDONTWRITEBYTECODE"] = ""  # empty is unset
    session.install("-c", CONSTRAINTS, "-e", f".[{extras}]")


@nox.session
def tests(session: nox.Session) -> None:
    """The CI tier: every test not marked slow (checks under the `ci` Hypothesis profile, benchmarks once),
    one pytest-xdist worker per logical core, a test file's tests on one worker (its fixtures run once),
    the files longest first as `tests/durations.json` has them (`nox -s tests -- --store-durations`
    rewrites it). Without arguments Numba's cache is filled first (`python -m lab kernels --compile`: the
    commands' kernels and every kernel in both dtypes, two children, one per dtype), so the workers
    load the kernels instead of each compiling the same ones; with arguments (a subset,
    `nox -s tests -- tests/chen2022`) the workers compile what the subset needs."""
    _install(session, "test,dask")
    if not set(session.posargs) - {"--store-durations"}:  # the whole suite
        session.run("python", "-m", "lab", "kernels", "--compile")
    workers = ["--numprocesses", "logical", "--dist", "loadfile", "--no-loadscope-reorder"]
    session.run("pytest", "--benchmark-disable", "-m", "not slow", *workers, *session.posargs)


@nox.session(default=False)
def slow(session: nox.Session) -> None:
    """The tests marked slow (over about 10 s each, e.g. verdicts over seeds 0-19): tens of minutes."""
    _install(session, "test,dask")
    session.run("pytest", "--benchmark-disable", "-m", "slow", *session.posargs)


@nox.session
def verify(session: nox.Session) -> None:
    """Every registered claim check at its quick tier, one worker per core; the table,
    reports/verify.{json,md}, each record compared with the committed results/verify.json (no extra
    compute). Arguments add to these (`nox -s verify -- --only B4`); a `--jobs` or `--json` given again
    wins, as argparse takes the last; with `--seed` or `--tier` the comparison is left out (the committed
    file is seed 0 at the quick tier)."""
    _install(session, "plots,progress")
    report = ["--json", "reports/verify.json", "--markdown", "reports/verify.md"]
    own = {a.split("=")[0] for a in session.posargs}
    compare = [] if own & {"--seed", "--tier", "--compare"} else ["--compare", "results/verify.json"]
    jobs = ["--jobs", str(os.cpu_count() or 1)]
    session.run("python", "-m", "lab", "verify", *jobs, *report, *compare, *session.posargs)


@nox.session(default=False)
def plugin(session: nox.Session) -> None:
    """A plugin installed beside the lab: its claims' verdicts, then its tests; CI runs the example's.

    `nox -s plugin -- PATH IDS` for another plugin's folder and its comma-separated claim ids (default
    `examples/switch-aux-loss SW1`); reports/plugin-verify.{json,md}. The tests run whatever the
    verdicts; the session fails naming each step that failed.
    """
    if len(session.posargs) not in (0, 2):
        session.error(f"give a plugin's folder and its claim ids (PATH IDS), got {session.posargs}")
    path, only = session.posargs or ["examples/switch-aux-loss", "SW1"]
    _install(session)
    session.install("-e", path)
    report = ["--json", "reports/plugin-verify.json", "--markdown", "reports/plugin-verify.md"]
    failed = []
    for what, command, folder in (
        (f"verify --only {only}", ["python", "-m", "lab", "verify", "--only", only, "--quiet", *report], "."),
        (f"the tests in {path}", ["pytest", "-p", "no:cacheprovider"], path),
    ):
        with session.chdir(folder):
            try:
                session.run(*command)
            except CommandFailed as exc:
                failed.append(f"{what} ({exc.reason})")
    if failed:
        session.error("failed: " + "; ".join(failed))


CAMPAIGN_OPTIONS = ("--minutes", "--workers", "--examples", "--seed", "--grace")


@nox.session(default=False)
def fuzz(session: nox.Session) -> None:
    """Hypothesis `fuzz` profile: many examples, database kept in .hypothesis/ (`nox -s fuzz -- -k b1_`).

    A timed campaign on every core: `nox -s fuzz -- --minutes 480 --workers 2` (tests.fuzz.campaign:
    rounds on their own seeds until the time is up, summary in reports/fuzz/summary.json).
    """
    _install(session)
    if any(a.split("=")[0] in CAMPAIGN_OPTIONS for a in session.posargs):
        session.run("python", "-m", "tests.fuzz.campaign", *session.posargs)
        return
    paths = [a for a in session.posargs if Path(a.split("::")[0]).exists()]
    args = session.posargs if paths else ["tests", *session.posargs]
    session.run(
        "pytest", "-m", "not slow", "-p", "no:cacheprovider", *args, env={"HYPOTHESIS_PROFILE": "fuzz"}
    )


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """Benchmarks with autosave, a compare-fail threshold against the last run, and a Markdown report."""
    _install(session)
    import glob

    previous = sorted(glob.glob(".benchmarks/*/*.json"))
    compare = ["--benchmark-compare", "--benchmark-compare-fail=min:25%"] if previous else []
    try:
        session.run(
            "pytest",
            "benchmarks",
            "--benchmark-only",
            "--benchmark-autosave",
            *compare,
            *session.posargs,
        )
    finally:  # the report shows what regressed, so write it even when the comparison fails
        session.run("python", "-m", "lab", "bench-report", "--out", "reports/bench.md")


@nox.session(default=False)
def mutation(session: nox.Session) -> None:
    """Mutation score: a seeded cosmic-ray sample per module group, judged in git worktrees; not CI.

    `nox -s mutation -- --sample 30 --workers 2` (the default subcommand is `run`); also
    `-- rerun --from results/mutation/runs/before.json` and `-- report` (see docs/verification-power.md).
    """
    _install(session, "test,mutation")
    subcommand = session.posargs[:1] in (["run"], ["rerun"], ["report"])
    args = session.posargs if subcommand else ["run", *session.posargs]
    session.run("python", "-m", "tests.mutation.driver", *args)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check, ruff format --check, and lint-imports (the layers' contracts in pyproject.toml)."""
    session.install("-c", CONSTRAINTS, "ruff", "import-linter")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("lint-imports", "--no-cache")


@nox.session(default=False)
def lock(session: nox.Session) -> None:
    """Refresh constraints.txt from pyproject.toml's dependencies and extras with uv, for Python 3.11 and
    later; existing pins are kept unless asked (`nox -s lock -- --upgrade`, `-- --upgrade-package numpy`)."""
    session.install("uv")
    session.run(
        "uv",
        "pip",
        "compile",
        "pyproject.toml",
        "--all-extras",
        "--universal",
        "--python-version",
        "3.11",
        "--no-header",
        "--quiet",
        "-o",
        CONSTRAINTS,
        *session.posargs,
    )
