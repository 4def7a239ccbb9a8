"""`python -m lab verify`: run every registered claim check, print the verdicts, write JSON and Markdown.

A check that raises or returns a malformed record gives its claims an `error` record naming the
check, its module and package and the exception (the traceback too with MOE_LAB_DEBUG=1), and every
other check still runs; premise records of a claim without a negative control read `uncontrolled`
unless a check of the claim is registered `report_only`. Either fails the run (exit 1).

`--compare FILE` sets the fresh records beside a committed run's, record by record, and names what
differs between the two runs' environments (`lab.core.compare`); a changed verdict or outcome, or a
record the run no longer makes, fails the run too. FILE is read before any check runs.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import re
import signal
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed

from lab.cli.kernel_cache import check_training_config, compile_in_child
from lab.cli.main import UsageError, interrupted, nonnegative_int, positive_int
from lab.core import claim_figures, registry
from lab.core.compare import compare_runs, comparison_file, comparison_report
from lab.core.errors import InputError
from lab.core.io import check_writable, write_json_atomic, write_text_atomic
from lab.core.machine import machine_cores
from lab.core.progress import Progress
from lab.core.provenance import environment, versions
from lab.core.records import Record
from lab.core.registry import register_command
from lab.core.schema import ResultsError
from lab.core.verdict_report import markdown_report
from lab.core.verify_file import read_verify_file, verify_file
from lab.sweeps.tasks import ctrl_c_ignored, pinned_threads


def _parse_only(text: str | None) -> list[str] | None:
    if text is None:
        return None
    wanted = [t.strip().upper() for t in text.split(",") if t.strip()]
    unknown = sorted(set(wanted) - registry.known_claims())
    if not wanted or unknown:
        registry.refuse("plugin")  # an unknown id may be one a plugin that failed to import declares
        known = ", ".join(sorted(registry.known_claims(), key=registry.claim_order))
        raise UsageError(f"--only: unknown claim id(s) {', '.join(unknown) or text!r}; known: {known}")
    return wanted


@register_command("verify", "run every registered claim check and print verdicts")
def configure(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    parser.add_argument("--only", metavar="IDS", help="comma-separated claim ids, e.g. B4,B7")
    parser.add_argument("--seed", type=nonnegative_int, default=0, help="base seed (default 0)")
    parser.add_argument("--tier", choices=registry.TIERS, default="quick")
    parser.add_argument("--json", metavar="PATH", help="also write the records as JSON")
    parser.add_argument("--markdown", metavar="PATH", help="also write the report as Markdown")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument(
        "--compare",
        metavar="FILE",
        help="compare the records with a committed run's --json FILE (e.g. results/verify.json), matched "
        "by claim and key: identical, equal within rounding, differs, new or missing, and what differs "
        "between the two machines; exit 1 if a verdict or outcome changed or a record is missing (with "
        "--only, the file's records of other claims are not compared)",
    )
    parser.add_argument(
        "--compare-json",
        metavar="PATH",
        help="with --compare, also write the comparison as JSON (counts, the environment that differs, "
        "every record not identical)",
    )
    parser.add_argument(
        "--jobs",
        type=positive_int,
        default=1,
        help="checks run at once, each job a worker process (default 1); the records do not depend on it",
    )
    parser.add_argument(
        "--figures-only",
        metavar="FILE",
        help="only draw the claims' figures from a written --json FILE into figures/ beside it; run nothing",
    )
    return lambda args: redraw_figures(args.figures_only) if args.figures_only else run_verify(args)


def redraw_figures(path: str) -> int:
    """`--figures-only FILE`: the claims' figures (`lab.core.claim_figures`) from a verify file alone."""
    try:
        records = read_verify_file(path)["records"]
    except ResultsError as exc:
        raise InputError(f"--figures-only: {exc}") from None
    for line in claim_figures.draw(records, path):
        print(line)
    return 0


def run_verify(args: argparse.Namespace) -> int:
    """Run every registered check (or those in --only); exit 0 iff every record is as expected."""
    only = _parse_only(args.only)
    if args.compare_json and not args.compare:
        raise UsageError("--compare-json needs --compare FILE")
    for path, what in (
        (args.json, "--json"),
        (args.markdown, "--markdown"),
        (args.compare_json, "--compare-json"),
    ):
        if path:
            check_writable(path, what)
    committed = read_committed(args.compare, args.seed, args.tier) if args.compare else None
    checks = registry.checks(only)
    # every check then runs the kernels as cached; the model kernels only if a chosen check runs them
    configs = check_training_config() if any(c.training_kernels for c in checks) else []
    with Progress(len(checks), "verify", enabled=not args.quiet, lines=True, unit="check") as progress:
        found = run_checks(
            checks,
            args.seed,
            args.tier,
            args.jobs,
            progress,
            prepare=lambda: compile_in_child(configs),
            expected=committed_seconds(committed) if committed else {},
        )
    records = [record for check_records in found for record in check_records]
    report_only = {claim.upper() for c in checks if c.report_only for claim in c.claims}
    for claim in mark_uncontrolled(records, report_only):
        print(
            f"python -m lab: claim {claim} has premise records and no negative control, so they read "
            "uncontrolled (add a control, or register its check report_only=True)",
            file=sys.stderr,
        )
    report = markdown_report(records, args.tier, args.seed)
    print(report, end="")
    if args.markdown:
        write_text_atomic(args.markdown, report)
    with pinned_threads(check_threads(args.jobs)) if args.jobs > 1 else contextlib.nullcontext():
        where = environment()  # the threads a check ran on: in a worker, its share of the cores
    stack = versions(registry.origin(c).package for c in checks if not registry.is_own(c))
    payload = verify_file(records, args.seed, args.tier, stack, where)
    if args.json:
        write_json_atomic(args.json, payload)
        for line in claim_figures.draw(payload["records"], args.json):
            print(line, file=sys.stderr)
    status = 0 if all(r.ok for r in records) else 1
    if committed is not None:
        comparison = compare_runs(payload, committed, only)
        print("\n" + comparison_report(comparison, args.compare), end="")
        if args.compare_json:
            write_json_atomic(args.compare_json, comparison_file(comparison, args.compare, where))
        status = max(status, int(comparison.failed))
    return status


def read_committed(path: str, seed: int, tier: str) -> dict:
    """The verify file `path` to compare with, refused in one line (InputError) before any compute: not
    a verify file (this lab's schema), two records with one (claim, key), or another seed or tier."""
    try:
        data = read_verify_file(path)
    except ResultsError as exc:
        raise InputError(f"--compare: {exc}") from None
    keys = Counter((r["claim"], r["key"]) for r in data["records"])
    twice = [f"{claim}/{key}" for (claim, key), n in keys.items() if n > 1]
    if twice:
        raise InputError(f"--compare: {path}: more than one record of {', '.join(twice)}")
    if (data["seed"], data["tier"]) != (seed, tier):
        raise InputError(
            f"--compare: {path} holds seed {data['seed']} at tier {data['tier']!r}, this run seed {seed} "
            f"at tier {tier!r}: give the same --seed and --tier"
        )
    return data


def committed_seconds(committed: dict) -> dict[str, float]:
    """Each claim's longest check in a committed verify file, in seconds (a record holds its check's)."""
    longest: dict[str, float] = {}
    for record in committed["records"]:
        longest[record["claim"]] = max(longest.get(record["claim"], 0.0), record.get("seconds") or 0.0)
    return longest


def submission_order(checks: list[registry.Check], expected: dict[str, float]) -> list[registry.Check]:
    """The model-training checks first, then the others, each by its claims' longest `expected` seconds,
    longest first (stable: registry order among equals)."""
    return sorted(
        checks,
        key=lambda c: (not c.training_kernels, -max((expected.get(x, 0.0) for x in c.claims), default=0.0)),
    )


def run_checks(
    checks: list[registry.Check],
    seed: int,
    tier: str,
    jobs: int,
    progress: Progress,
    prepare: Callable[[], None] = lambda: None,
    expected: dict[str, float] | None = None,
) -> list[list[Record]]:
    """Each check's records, in the order of `checks`, after `prepare()` (verify's: the kernels compiled in
    children): in this process, or with `jobs` > 1 in that many worker processes, each on its share of
    the cores, that import the checks while `prepare` runs and find each check by name in the registry.
    The workers take the model-training checks first, then the others, longest first as far as
    `expected` (a claim's longest check in a committed run, seconds) tells. A check's seed derives from
    its name, so its records are the same either way."""
    if jobs == 1:
        prepare()
        found = []
        for check in checks:
            records, label = _timed(check, seed, tier)
            progress.step(label)
            found.append(records)
        return found
    first = submission_order(checks, expected or {})
    threads = check_threads(jobs)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(jobs, mp_context=context) as pool:
        with ctrl_c_ignored():  # the first submit starts the workers: ignoring Ctrl-C but in a check
            for _ in range(jobs):
                pool.submit(_import_checks)
        prepare()
        futures = {c.name: pool.submit(_run_named, c.name, seed, tier, threads) for c in first}
        try:
            for future in as_completed(futures.values()):
                progress.step(future.result()[1])
        except BaseException:  # Ctrl-C or a worker's bug: the checks not yet started never start
            pool.shutdown(cancel_futures=True)
            raise
        return [futures[c.name].result()[0] for c in checks]


def check_threads(jobs: int) -> int:
    """The threads (BLAS and Numba) of each of `jobs` worker processes: its share of the cores."""
    return max(1, machine_cores() // jobs)


def _import_checks() -> None:
    """In a worker, while the kernels compile: import the registered checks (which compiles nothing)."""
    registry.declared("check")


def _run_named(name: str, seed: int, tier: str, threads: int) -> tuple[list[Record], str]:
    """In a worker: `_timed` of the registered check `name`, on the worker's share of the cores (Numba and
    BLAS, as a sweep's workers), so that the workers do not oversubscribe the machine. Ctrl-C interrupts
    the check; between checks the worker ignores it (an idle worker would print a traceback), and the
    parent, which takes it too, shuts the pool down."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pinned_threads(threads):
            return _timed(registry.declared("check")[name], seed, tier)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _timed(check: registry.Check, seed: int, tier: str) -> tuple[list[Record], str]:
    """The check's records (`run_isolated`) and its progress label: name, claims and seconds."""
    start = time.perf_counter()
    records = run_isolated(check, seed, tier)
    return records, f"{check.name} [{', '.join(check.claims)}] {time.perf_counter() - start:.1f} s"


def run_isolated(check: registry.Check, seed: int, tier: str) -> list[Record]:
    """The check's records, or one `error` record per claim of it if it raises or returns a malformed
    record (said on stderr in one line); Ctrl-C still interrupts."""
    try:
        return check.run(seed, tier)
    except Exception as exc:
        if interrupted(exc):
            raise
        failure = error_message(check, exc)
        trace = "".join(traceback.format_exception(exc)) if os.environ.get("MOE_LAB_DEBUG") else None
    hint = "" if trace else "; MOE_LAB_DEBUG=1 shows the traceback"
    print(f"python -m lab: {failure}{hint}", file=sys.stderr)
    if trace:
        print(trace, file=sys.stderr, end="")
    where = registry.origin(check)
    return [
        Record(
            claim=claim,
            key="error-" + re.sub(r"[^a-z0-9.-]+", "-", check.name.lower()),
            statement=failure,
            kind="premise",
            params={"check": check.name, "module": where.module, "package": where.package},
            measured=None,
            bound=None,
            verdict="not-applicable",
            rule="judged",
            reason="the check raised or returned a malformed record: no measurement",
            extra={"traceback": trace} if trace else {},
            problem="error",
        )
        for claim in check.claims
    ]


def error_message(check: registry.Check, exc: Exception) -> str:
    """One line: the check, where it comes from, and what went wrong."""
    head = f"check {check.name!r} in {registry.origin(check)}"
    if isinstance(exc, registry.MalformedRecord):
        return f"{head} {exc}"
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{head} raised {type(exc).__name__}: {first}"


def mark_uncontrolled(records: Iterable[Record], report_only: set[str]) -> list[str]:
    """Mark `uncontrolled` the premise records read as expected (`pass`, `finding`) of the claims with
    no negative-control record and no `report_only` check (a failing premise keeps its own outcome);
    the claims marked, in order."""
    records = list(records)
    controlled = {r.claim.upper() for r in records if r.kind == "negative-control"} | report_only
    marked: dict[str, None] = {}
    for record in records:
        if record.kind == "premise" and record.ok and record.claim.upper() not in controlled:
            record.problem = "uncontrolled"
            marked[record.claim] = None
    return list(marked)
