"""The command line `python -m lab COMMAND`: the parser, shared argument types, exit codes."""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from lab.core import registry

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
