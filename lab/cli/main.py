"""The command line `python -m lab COMMAND`: the parser, shared argument types, exit codes."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from lab.core import registry
from lab.core.errors import InputError, interrupted

EPILOG = """examples:
  python -m lab verify                      every claim at the quick tier
  python -m lab verify --only B4,B7 --seed 3
  python -m lab verify --tier full --json reports/verify.json
"""


class UsageError(Exception):
    """Bad command-line arguments: reported in one line, exit status 2."""


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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every registered command, or of the command `only` alone (loads fewer plugins)."""
    parser = _Parser(
        prog="python -m lab",
        description="moe-lab: executable checks of mixture-of-experts theory.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    found = registry.find("command", only) if only else None
    chosen = {only: found} if found is not None else registry.commands()
    for name, command in sorted(chosen.items()):
        parser_ = sub.add_parser(name, help=command.help)
        parser_.set_defaults(run=command.configure(parser_))
    return parser


EXIT_OK, EXIT_CLAIM_FAILED, EXIT_BAD_INPUT, EXIT_BUG, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
# every command's line: what was written stays; replicate and sweep resume, verify starts over
INTERRUPTED = "interrupted; files already written are kept (replicate and sweep resume from their runs)"


def _say(message: str) -> None:
    print(f"python -m lab: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; exit 0 ok, 1 a claim failed, 2 bad arguments or input, 3 a bug, 130 interrupted."""
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        args = build_parser(argv[0] if argv else None).parse_args(argv)
        return args.run(args)
    except (UsageError, InputError) as exc:
        _say(f"error: {exc}")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        _say(INTERRUPTED)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if interrupted(exc):
            _say(INTERRUPTED)
            return EXIT_INTERRUPTED
        if os.environ.get("MOE_LAB_DEBUG"):
            raise
        first = (str(exc).strip().splitlines() or [""])[0]
        _say(
            f"internal error (a bug, not your input): {type(exc).__name__}: {first}; "
            "rerun with MOE_LAB_DEBUG=1 for the traceback"
        )
        return EXIT_BUG
