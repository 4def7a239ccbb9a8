"""The command line `python -m lab COMMAND`: the parser, shared argument types, exit codes."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

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
