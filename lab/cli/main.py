"""Command line: `python -m lab verify` and the subcommands that plugins register."""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from lab.core import registry
from lab.core.io import write_json_atomic, write_text_atomic
from lab.core.records import Record

EPILOG = """examples:
  python -m lab verify                      every claim at the quick tier
  python -m lab verify --only B4,B7 --seed 3
  python -m lab verify --tier full --json reports/verify.json
"""


class UsageError(Exception):
    """Bad command-line input: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no usage dump
        raise UsageError(message)


def versions() -> dict[str, str]:
    """Versions of the interpreter and the numerical stack, for every JSON report."""
    found = {"python": platform.python_version()}
    for dist in ("moe-lab", "numpy", "scipy", "numba", "hypothesis"):
        try:
            found[dist] = version(dist)
        except PackageNotFoundError:
            found[dist] = "not installed"
    return found


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _fmt_ci(ci: tuple[float, float] | None) -> str:
    return "-" if ci is None else f"[{ci[0]:.3g}, {ci[1]:.3g}]"


def format_table(records: Sequence[Record]) -> str:
    """Markdown table of records; the outcome column says how the lab reads each verdict."""
    head = "| claim | kind | statement | measured | bound | CI | verdict | slack | outcome |"
    rows = [head, "|" + "---|" * 9]
    for r in records:
        statement = r.statement if len(r.statement) <= 72 else r.statement[:69] + "..."
        rows.append(
            f"| {r.claim} | {r.kind} | {statement} | {_fmt(r.measured)} | {_fmt(r.bound)} | "
            f"{_fmt_ci(r.ci)} | {r.verdict} | {_fmt(r.slack)} | {r.outcome} |"
        )
    return "\n".join(rows)


def format_findings(records: Sequence[Record]) -> str:
    """The known findings and any that stopped reproducing, listed prominently."""
    lines = []
    marked = [r for r in records if r.finding is not None]
    if marked:
        lines.append("Known findings (paper claims the lab does not reproduce):")
        lines += [f"  - {r.claim}: {r.finding} [{r.outcome}]" for r in marked]
    resolved = [r for r in marked if r.outcome == "FINDING NOW HOLDS"]
    if resolved:
        lines.append(
            "These findings now HOLD: remove their finding mark ("
            + ", ".join(r.claim for r in resolved)
            + ")."
        )
    return "\n".join(lines)


def _parse_only(text: str | None) -> list[str] | None:
    if text is None:
        return None
    wanted = [t.strip().upper() for t in text.split(",") if t.strip()]
    unknown = sorted(set(wanted) - registry.known_claims())
    if not wanted or unknown:
        known = ", ".join(sorted(registry.known_claims(), key=registry.claim_order))
        raise UsageError(f"--only: unknown claim id(s) {', '.join(unknown) or text!r}; known: {known}")
    return wanted


def run_verify(args: argparse.Namespace) -> int:
    """Run every registered check (or those in --only); exit 0 iff every record is as expected."""
    only = _parse_only(args.only)
    records: list[Record] = []
    for check in registry.checks(only):
        if not args.quiet:
            print(f"running {check.name} ...", file=sys.stderr, flush=True)
        records.extend(check.run(args.seed, args.tier))
    bad = [r for r in records if not r.ok]
    findings = format_findings(records)
    summary = f"{len(records) - len(bad)} as expected, {len(bad)} not ({args.tier} tier, seed {args.seed})"
    report = format_table(records) + ("\n\n" + findings if findings else "") + "\n\n" + summary + "\n"
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
    return 0 if not bad else 1


def run_replicate(args: argparse.Namespace) -> int:
    """Run each named replication target in turn; the worst exit status wins."""
    targets = registry.replications()
    unknown = [t for t in args.targets if t not in targets]
    if unknown:
        known = ", ".join(sorted(targets)) or "none registered"
        raise UsageError(f"unknown replication target(s) {', '.join(unknown)}; known: {known}")
    return max(targets[t].run(args) for t in args.targets)


def _settings(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a comma list of 1-4, got {text!r}") from None
    if not values or any(v not in (1, 2, 3, 4) for v in values):
        raise argparse.ArgumentTypeError(f"must be a comma list of 1-4, got {text!r}")
    return values


def positive_int(text: str) -> int:
    value = nonnegative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {value}")
    return value


def nonnegative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m lab",
        description="moe-lab: executable checks of mixture-of-experts theory.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    verify = sub.add_parser("verify", help="run every registered claim check and print verdicts")
    verify.add_argument("--only", metavar="IDS", help="comma-separated claim ids, e.g. B4,B7")
    verify.add_argument("--seed", type=nonnegative_int, default=0, help="base seed (default 0)")
    verify.add_argument("--tier", choices=registry.TIERS, default="quick")
    verify.add_argument("--json", metavar="PATH", help="also write the records as JSON")
    verify.add_argument("--markdown", metavar="PATH", help="also write the table as Markdown")
    verify.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    verify.set_defaults(run=run_verify)
    targets = registry.replications()
    replicate = sub.add_parser(
        "replicate",
        help="replicate a paper's table or figure beside the paper's numbers",
        description="targets: " + ", ".join(f"{k} ({v.help})" for k, v in sorted(targets.items())),
    )
    replicate.add_argument("targets", nargs="+", metavar="TARGET")
    replicate.add_argument("--settings", type=_settings, default=[1, 2, 3, 4], help="e.g. 1,3")
    replicate.add_argument("--seeds", type=positive_int, default=10, help="runs per cell (default 10)")
    replicate.add_argument("--seed", type=nonnegative_int, default=0, help="base seed (default 0)")
    replicate.add_argument("--variant", choices=("paper", "reference-code"), default="paper")
    replicate.add_argument("--tier", choices=registry.TIERS, default="full")
    replicate.add_argument("--json", metavar="PATH", help="write the runs as JSON")
    replicate.add_argument("--out", metavar="DIR", default="reports", help="folder for tables/figures")
    replicate.add_argument("--quiet", action="store_true", help="no progress bar")
    replicate.set_defaults(run=run_replicate)
    for name, command in sorted(registry.commands().items()):
        parser_ = sub.add_parser(name, help=command.help)
        parser_.set_defaults(run=command.configure(parser_))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    registry.load_plugins()
    try:
        args = build_parser().parse_args(argv)
        return args.run(args)
    except UsageError as exc:
        print(f"python -m lab: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as exc:
        if os.environ.get("MOE_LAB_DEBUG"):
            raise
        print(f"python -m lab: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
