"""`python -m lab verify`: run every registered claim check, print the verdicts, write JSON and Markdown."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from lab.cli.kernel_cache import compile_in_child, every_training_config
from lab.cli.main import UsageError, nonnegative_int
from lab.core import registry
from lab.core.io import check_writable, write_json_atomic, write_text_atomic
from lab.core.progress import Progress
from lab.core.provenance import versions
from lab.core.records import Record
from lab.core.registry import register_command
from lab.core.report import markdown_report


def _parse_only(text: str | None) -> list[str] | None:
    if text is None:
        return None
    wanted = [t.strip().upper() for t in text.split(",") if t.strip()]
    unknown = sorted(set(wanted) - registry.known_claims())
    if not wanted or unknown:
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
    return run_verify


def run_verify(args: argparse.Namespace) -> int:
    """Run every registered check (or those in --only); exit 0 iff every record is as expected."""
    only = _parse_only(args.only)
    for path, what in ((args.json, "--json"), (args.markdown, "--markdown")):
        if path:
            check_writable(path, what)
    checks = registry.checks(only)
    # every check then runs the kernels as cached; the model kernels only if a chosen check runs them
    compile_in_child(every_training_config() if any(c.training_kernels for c in checks) else [])
    records: list[Record] = []
    with Progress(len(checks), "verify", enabled=not args.quiet, lines=True, unit="check") as progress:
        for check in checks:
            start = time.perf_counter()
            records.extend(check.run(args.seed, args.tier))
            progress.step(f"{check.name} [{', '.join(check.claims)}] {time.perf_counter() - start:.1f} s")
    report = markdown_report(records, args.tier, args.seed)
    print(report, end="")
    if args.markdown:
        write_text_atomic(args.markdown, report)
    if args.json:
        payload = {
            "records": [r.to_json() for r in records],
            "seed": args.seed,
            "tier": args.tier,
            "versions": versions(),
        }
        write_json_atomic(args.json, payload)
    return 0 if all(r.ok for r in records) else 1
