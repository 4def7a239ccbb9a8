"""The lab's four registries (checks, replication targets, sweep tasks, commands), filled from entry points.

A declaration is attached to the function it describes by a decorator (`register`,
`register_replication`, `register_command`, `lab.sweeps.tasks.register_task`) and does nothing
else: importing a module registers nothing. `load_plugins` imports every module advertised in the
`moe_lab.plugins` entry-point group (a package is walked whole) and collects the declarations it
finds there. `find` loads the plugins one at a time, the lab's machinery first (`LIGHT_PLUGINS`,
which import no science), and stops at the first that declares the name asked for, so
`python -m lab sweep status` never imports the science it does not run. Every declaration has an
explicit name; a check's seed derives from that name alone, so moving or renaming its code never
changes a number.
"""

from __future__ import annotations

import hashlib
import importlib
import pkgutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Any

from lab.core.records import Record

TIERS = ("quick", "full")
PLUGIN_GROUP = "moe_lab.plugins"
ATTRIBUTE = "__moe_lab__"

CheckFunc = Callable[[int, str], "Record | Iterable[Record]"]


class Declaration:
    """Base of everything a plugin declares: a kind (which registry) and a stable name."""

    kind: str
    name: str


@dataclass(frozen=True)
class Check(Declaration):
    """A verification entry: runs at a tier with a seed derived from its name and returns records.

    `training_kernels`: it runs the Chen et al. model kernels (`lab.kernels.routed` or `structured`
    beyond the stand-alone ones), which `verify` then has a child process load or compile first."""

    name: str
    claims: tuple[str, ...]
    func: CheckFunc
    training_kernels: bool = False
    kind = "check"

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


@dataclass(frozen=True)
class Command(Declaration):
    """A subcommand of `python -m lab`: `configure(parser)` adds its arguments and returns `run(args)`."""

    name: str
    help: str
    configure: Callable
    kind = "command"


@dataclass(frozen=True)
class Replication(Declaration):
    """A target of `python -m lab replicate NAME`: `run(args) -> exit status`."""

    name: str
    help: str
    run: Callable
    kind = "replication"


def declare(declaration: Declaration) -> Callable[[Callable], Callable]:
    """Attach `declaration` to the decorated function, which is returned unchanged."""

    def decorate(func: Callable) -> Callable:
        found = getattr(func, ATTRIBUTE, ())
        setattr(func, ATTRIBUTE, (*found, declaration))
        return func

    return decorate


def register(*claims: str, name: str, training_kernels: bool = False) -> Callable[[CheckFunc], CheckFunc]:
    """Declare `func(seed, tier) -> Record | list[Record]` as the check `name` of the given claim ids
    (`training_kernels`: see `Check`)."""
    if not claims:
        raise ValueError("register needs at least one claim id")
    if not name:
        raise ValueError("register needs an explicit, stable name")

    def decorate(func: CheckFunc) -> CheckFunc:
        return declare(Check(name, tuple(claims), func, training_kernels))(func)

    return decorate


def register_command(name: str, help: str) -> Callable:
    """Declare `configure(parser) -> run(args) -> int` as the subcommand `name`."""
    return lambda configure: declare(Command(name, help, configure))(configure)


def register_replication(name: str, help: str) -> Callable:
    """Declare `run(args) -> int` as the target `name` of `python -m lab replicate`.

    `args` carries the shared replicate options (settings, seeds, seed, variant, json, out,
    quiet, tier); each target validates the ones it uses and writes its own reports.
    """
    return lambda run: declare(Replication(name, help, run))(run)


KINDS = ("check", "command", "replication", "task")
LIGHT_PLUGINS = ("cli", "sweeps")  # searched first by `find`: commands and sweep-task declarations
_REGISTRY: dict[str, dict[str, Declaration]] = {k: {} for k in KINDS}
_LOADED: set[str] = set()  # the entry points whose declarations are in _REGISTRY


def _declarations(module: ModuleType) -> Iterator[Declaration]:
    for value in list(vars(module).values()):
        if isinstance(value, Declaration):
            yield value
        elif isinstance(value, list | tuple) and value and all(isinstance(v, Declaration) for v in value):
            yield from value
        else:
            found = getattr(value, ATTRIBUTE, None) if callable(value) else None
            if isinstance(found, tuple):
                yield from found


def _modules(root: ModuleType) -> Iterator[ModuleType]:
    yield root
    if hasattr(root, "__path__"):
        for info in pkgutil.walk_packages(root.__path__, root.__name__ + "."):
            yield importlib.import_module(info.name)


def collect(
    modules: Iterable[ModuleType], found: dict[str, dict[str, Declaration]] | None = None
) -> dict[str, dict[str, Declaration]]:
    """The declarations found in `modules` (and their subpackages) added to `found`, by kind and name."""
    found = {k: {} for k in KINDS} if found is None else found
    for root in modules:
        for module in _modules(root):
            for item in _declarations(module):
                known = found.setdefault(item.kind, {}).get(item.name)
                if known is not None and known != item:
                    raise ValueError(f"two {item.kind}s are named {item.name!r}")
                found[item.kind][item.name] = item
    return found


def _load(entries: Iterable[EntryPoint]) -> dict[str, dict[str, Declaration]]:
    """Collect the declarations of `entries` not loaded yet into the registries; returns them."""
    for entry in entries:
        if entry.name not in _LOADED:
            collect([entry.load()], _REGISTRY)
            _LOADED.add(entry.name)
    return _REGISTRY


def load_plugins() -> dict[str, dict[str, Declaration]]:
    """Fill the registries once from every `moe_lab.plugins` entry point; returns them by kind."""
    return _load(entry_points(group=PLUGIN_GROUP))


def find(kind: str, name: str) -> Any | None:
    """The declaration of `kind` called `name`, loading plugins (light ones first) only until it is found."""
    entries = entry_points(group=PLUGIN_GROUP)
    for entry in sorted(entries, key=lambda e: (e.name not in LIGHT_PLUGINS, e.name)):
        if name in _REGISTRY[kind]:
            break
        _load([entry])
    return _REGISTRY[kind].get(name)


def declared(kind: str) -> dict[str, Any]:
    """The registry of one kind ('check', 'command', 'replication', 'task'), by name."""
    return dict(load_plugins()[kind])


def add(declaration: Declaration) -> None:
    """Put one declaration into its registry directly (tests and embedding programs)."""
    load_plugins().setdefault(declaration.kind, {})[declaration.name] = declaration


def remove(declaration: Declaration) -> None:
    """Take a declaration added with `add` out again."""
    load_plugins()[declaration.kind].pop(declaration.name, None)


def checks(only: Iterable[str] | None = None) -> list[Check]:
    """Registered checks, optionally restricted to those covering any of the claim ids `only`."""
    wanted = {c.strip().upper() for c in only} if only is not None else None
    every: list[Check] = list(declared("check").values())
    found = [c for c in every if wanted is None or wanted & {x.upper() for x in c.claims}]
    return sorted(found, key=lambda c: (claim_order(c.claims[0]), c.name))


def known_claims() -> set[str]:
    return {claim.upper() for c in checks() for claim in c.claims}


def commands() -> dict[str, Command]:
    return declared("command")


def replications() -> dict[str, Replication]:
    return declared("replication")


def derived_seed(seed: int, name: str) -> int:
    """Stable per-check seed from the base seed and the check's name, so `--only` never changes it."""
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def claim_order(claim: str) -> tuple[str, int]:
    """Sort key of a claim id: letters, then the number (B2 before B10)."""
    letters = "".join(ch for ch in claim if ch.isalpha())
    digits = "".join(ch for ch in claim if ch.isdigit())
    return letters, int(digits) if digits else 0
