"""Registry of claim checks and CLI commands: a check appears in `verify` by being defined."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.metadata import entry_points

from lab.records import Record

TIERS = ("quick", "full")
PLUGIN_GROUP = "moe_lab.plugins"

CheckFunc = Callable[[int, str], "Record | Iterable[Record]"]


@dataclass(frozen=True)
class Check:
    """A registered verification entry: runs at a tier with a seed and returns records."""

    name: str
    claims: tuple[str, ...]
    func: CheckFunc

    def run(self, seed: int, tier: str) -> list[Record]:
        """Run the check; every record gets the wall time of the call if it set none."""
        if tier not in TIERS:
            raise ValueError(f"tier must be one of {TIERS}, got {tier!r}")
        start = time.perf_counter()
        result = self.func(derived_seed(seed, self.name), tier)
        elapsed = time.perf_counter() - start
        records = [result] if isinstance(result, Record) else list(result)
        for record in records:
            if record.claim not in self.claims:
                raise ValueError(f"check {self.name} returned claim {record.claim!r}")
            if record.seconds is None:
                record.seconds = elapsed
        return records


_CHECKS: dict[str, Check] = {}
_COMMANDS: dict[str, tuple[str, Callable]] = {}


def register(*claims: str, name: str | None = None) -> Callable[[CheckFunc], CheckFunc]:
    """Decorator: register `func(seed, tier) -> Record | list[Record]` for the given claim ids."""
    if not claims:
        raise ValueError("register needs at least one claim id")

    def decorate(func: CheckFunc) -> CheckFunc:
        key = name or f"{func.__module__}.{func.__qualname__}"
        _CHECKS[key] = Check(key, tuple(claims), func)
        return func

    return decorate


def register_command(name: str, help: str) -> Callable:
    """Decorator for `configure(parser) -> run(args) -> int` pairs that add a CLI subcommand.

    The decorated function receives an argparse parser, adds its arguments and returns the
    function that runs the command.
    """

    def decorate(configure: Callable) -> Callable:
        _COMMANDS[name] = (help, configure)
        return configure

    return decorate


_REPLICATIONS: dict[str, tuple[str, Callable]] = {}


def register_replication(name: str, help: str) -> Callable:
    """Decorator for `run(args) -> int`: a target of `python -m lab replicate NAME`.

    `args` carries the shared replicate options (settings, seeds, seed, variant, json, out,
    quiet, tier); each target validates the ones it uses and writes its own reports.
    """

    def decorate(run: Callable) -> Callable:
        _REPLICATIONS[name] = (help, run)
        return run

    return decorate


def replications() -> dict[str, tuple[str, Callable]]:
    return dict(_REPLICATIONS)


def load_plugins() -> None:
    """Import every package that advertises checks or commands (entry-point group moe_lab.plugins)."""
    for entry in entry_points(group=PLUGIN_GROUP):
        entry.load()


def checks(only: Iterable[str] | None = None) -> list[Check]:
    """Registered checks, optionally restricted to those covering any of the claim ids `only`."""
    wanted = {c.strip().upper() for c in only} if only is not None else None
    found = [c for c in _CHECKS.values() if wanted is None or wanted & {x.upper() for x in c.claims}]
    return sorted(found, key=lambda c: (_claim_order(c.claims[0]), c.name))


def known_claims() -> set[str]:
    return {claim.upper() for c in _CHECKS.values() for claim in c.claims}


def commands() -> dict[str, tuple[str, Callable]]:
    return dict(_COMMANDS)


def derived_seed(seed: int, name: str) -> int:
    """Stable per-check seed, so `--only` never changes a check's numbers."""
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def _claim_order(claim: str) -> tuple[str, int]:
    letters = "".join(ch for ch in claim if ch.isalpha())
    digits = "".join(ch for ch in claim if ch.isdigit())
    return letters, int(digits) if digits else 0
