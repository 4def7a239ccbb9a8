"""The lab's registries (checks, replication targets, sweep tasks, commands, and the descriptions of claims
and papers, `lab.core.descriptions`), filled from entry points.

A declaration is attached to the function it describes by a decorator (`register`,
`register_replication`, `register_command`, `lab.core.tasks.register_task`) and does nothing
else: importing a module registers nothing. `load_plugins` imports every module advertised in the
`moe_lab.plugins` entry-point group (a package is walked whole) and collects the declarations it
finds there. `find` loads the plugins one at a time, the lab's machinery first (`LIGHT_PLUGINS`,
which import no science), then each plugin package's module `LIGHT_MODULE` (its declarations that
import no science until they run), then the plugins whole, and stops at the first that declares the
name asked for, so `python -m lab sweep status` never imports the science it does not run. Every
declaration has an explicit name; a check's seed derives from that name alone, so moving or renaming
its code never changes a number. A generic layer reaches a paper's objects only through what the
paper declares (a replication's `RunStore`, the `TrainingRuns` whose kernels commands compile first).

Plugins are installed packages, and loading one never fails another: a plugin that cannot be
imported, two declarations of one kind with one name, or a claim id whose checks come from two
packages (a package adds checks to the claims it declares, and it declares a claim by registering
the first check of it) are recorded as a `Refusal` naming both sides, and raised only by the lookups
that need what they concern (`checks(["C1"])` runs while an unrelated plugin is refused).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import os
import pkgutil
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Any

from lab.core.errors import InputError
from lab.core.records import Record

TIERS = ("quick", "full")
PLUGIN_GROUP = "moe_lab.plugins"
ATTRIBUTE = "__moe_lab__"

CheckFunc = Callable[[int, str], "Record | Iterable[Record]"]
LAB_MODULES = ("lab", "checks")  # the lab's own plugins: failing to import them is a bug of the lab


class Refusal(InputError):
    """Installed plugins that declare one thing twice, or one that cannot be imported: exit status 2."""


class MalformedRecord(TypeError):
    """A check returned something that is not a valid record of its own claims."""


class Declaration:
    """Base of everything a plugin declares: a kind (which registry) and a stable name."""

    kind: str
    name: str


@dataclass(frozen=True)
class Check(Declaration):
    """A verification entry: runs at a tier with a seed derived from its name and returns records.

    `training_kernels`: it runs the lab's training kernels (`lab.kernels.routed` or `structured` beyond
    the stand-alone ones), which `verify` then has a child process load or compile first (`TrainingRuns`).
    `report_only`: its claims' premise records need no negative control (else they read `uncontrolled`)."""

    name: str
    claims: tuple[str, ...]
    func: CheckFunc
    training_kernels: bool = False
    report_only: bool = False
    kind = "check"

    def run(self, seed: int, tier: str) -> list[Record]:
        """Run the check; every record gets the wall time of the call if it set none.

        MalformedRecord if it returns no records, something not a Record, a record whose fields no
        longer validate, or a record of a claim it is not registered for."""
        if tier not in TIERS:
            raise ValueError(f"tier must be one of {TIERS}, got {tier!r}")
        start = time.perf_counter()
        result = self.func(derived_seed(seed, self.name), tier)
        elapsed = time.perf_counter() - start
        records = [result] if isinstance(result, Record) else list(_iterable(result))
        if not records:
            raise MalformedRecord("returned no records")
        for record in records:
            _validate(record, self.claims)
            if record.seconds is None:
                record.seconds = elapsed
        return records


def _iterable(result: Any) -> Iterable:
    if not isinstance(result, Iterable) or isinstance(result, str | bytes | dict):
        raise MalformedRecord(f"returned a {type(result).__name__}, not a Record or a list of Records")
    return result


def _validate(record: Any, claims: tuple[str, ...]) -> None:
    """Raise MalformedRecord unless `record` is a Record of one of `claims` whose fields validate."""
    if not isinstance(record, Record):
        raise MalformedRecord(f"returned a {type(record).__name__} where a Record belongs")
    try:
        record.__post_init__()  # again: fields set after construction are checked too
    except (TypeError, ValueError) as exc:
        raise MalformedRecord(f"returned a record of {record.claim!r} with {exc}") from exc
    if record.claim not in claims:
        raise MalformedRecord(f"returned a record of claim {record.claim!r}, registered for {list(claims)}")


@dataclass(frozen=True)
class Command(Declaration):
    """A subcommand of `python -m lab`: `configure(parser)` adds its arguments and returns `run(args)`."""

    name: str
    help: str
    configure: Callable
    kind = "command"


@dataclass(frozen=True)
class RunStore:
    """Training runs that replication targets keep in one run store under `--out` (`Replication.runs`), and
    what `python -m lab replicate` does with those of the named targets before any target reports.

    `configs(names, args)`: the run configurations of the named targets, each once; `train(configs, args,
    prepare)`: trains those `--out` does not hold; `recertify(configs, args, prepare) -> exit status`
    (`--recertify N`); `check(names, args, prepare) -> exit status` (`--check K`); `timer(out)`: starts
    the `--timing` record of the invocation and returns `write(path, args, configs)`. `prepare(configs)`
    is the command's: a child process loads or compiles the kernels of the runs about to be computed."""

    configs: Callable
    train: Callable
    recertify: Callable
    check: Callable
    timer: Callable


@dataclass(frozen=True)
class Replication(Declaration):
    """A target of `python -m lab replicate NAME`: `run(args) -> exit status`; `runs`, the run store its
    training runs share with other targets' (`RunStore`), trained before any named target reports."""

    name: str
    help: str
    run: Callable
    runs: RunStore | None = None
    kind = "replication"


@dataclass(frozen=True)
class ClaimFigure(Declaration):
    """A figure of one claim, drawn from its records in a verify run's file (`lab.core.claim_figures`):
    `draw(records, path) -> path` with every record of the run; `name` is the figure's file name."""

    name: str
    claim: str
    draw: Callable
    kind = "figure"


@dataclass(frozen=True)
class TrainingRuns(Declaration):
    """Runs that train on the lab's training kernels, which a command has child processes load or compile
    before it computes (`lab.cli.kernel_cache`). `every()`: one run configuration of each model that the
    declaring package's replications train; `short(configs)`: one short run per configuration among
    `configs` whose kernels differ; `apart(config)`: whether a short run goes to the second child on two
    cores or more (its kernels barely shared with the others', so the two children compile apart; the
    fill of every kernel, `kernels --compile`, splits by dtype instead);
    `run(config)`: runs one (the child imports its module alone); `checks()`: run configurations whose
    short runs reach the kernels the package's training checks use (what `verify` has compiled first)."""

    name: str
    every: Callable[[], list[dict]]
    short: Callable[[list[dict]], list[dict]]
    apart: Callable[[dict], bool]
    run: Callable[[dict], Any]
    checks: Callable[[], list[dict]]
    kind = "training"


def declare(declaration: Declaration) -> Callable[[Callable], Callable]:
    """Attach `declaration` to the decorated function, which is returned unchanged."""

    def decorate(func: Callable) -> Callable:
        found = getattr(func, ATTRIBUTE, ())
        setattr(func, ATTRIBUTE, (*found, declaration))
        return func

    return decorate


def register(
    *claims: str, name: str, training_kernels: bool = False, report_only: bool = False
) -> Callable[[CheckFunc], CheckFunc]:
    """Declare `func(seed, tier) -> Record | list[Record]` as the check `name` of the given claim ids
    (`training_kernels`, `report_only`: see `Check`)."""
    if not claims:
        raise ValueError("register needs at least one claim id")
    if not name:
        raise ValueError("register needs an explicit, stable name")

    def decorate(func: CheckFunc) -> CheckFunc:
        return declare(Check(name, tuple(claims), func, training_kernels, report_only))(func)

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


# claims, papers and findings: lab.core.descriptions
DECLARATION_KINDS = (
    "check",
    "command",
    "replication",
    "task",
    "runner",
    "training",
    "figure",
    "claim",
    "paper",
    "finding",
)
LIGHT_PLUGINS = ("cli", "sweeps")  # searched first by `find`: commands and the runner of tasks
LIGHT_MODULE = "declarations"  # a plugin package's module searched next: science loads only when a task runs


@dataclass(frozen=True)
class Origin:
    """Where a declaration comes from: the module that defines it and the installed package."""

    module: str
    package: str

    def __str__(self) -> str:
        return f"{self.module} (package {self.package})"


@dataclass(frozen=True)
class Conflict:
    """A refusal recorded at load time; `claims` are those it concerns (None: unknown, every claim)."""

    message: str
    kind: str
    name: str
    claims: frozenset[str] | None


_REGISTRY: dict[str, dict[str, Declaration]] = {k: {} for k in DECLARATION_KINDS}
_ORIGINS: dict[tuple[str, str], Origin] = {}  # (kind, name) -> where it was declared
_OWNERS: dict[str, Origin] = {}  # claim id -> the origin of its first check
_CONFLICTS: list[Conflict] = []
_LOADED: set[tuple[str, str]] = set()  # the (package, entry point) whose declarations are in _REGISTRY


def _declarations(module: ModuleType) -> Iterator[tuple[Declaration, str]]:
    """Each declaration in `module`'s namespace with the name of the module that defines it."""
    for value in list(vars(module).values()):
        if isinstance(value, Declaration):
            yield value, module.__name__
        elif isinstance(value, list | tuple) and value and all(isinstance(v, Declaration) for v in value):
            yield from ((v, module.__name__) for v in value)
        else:
            found = getattr(value, ATTRIBUTE, None) if callable(value) else None
            if isinstance(found, tuple):
                yield from ((v, getattr(value, "__module__", module.__name__)) for v in found)


def collect(root: ModuleType) -> Iterator[tuple[Declaration, str]]:
    """Every declaration in `root` and its subpackages, with the module defining it."""
    yield from _declarations(root)
    if hasattr(root, "__path__"):
        for info in pkgutil.walk_packages(root.__path__, root.__name__ + "."):
            yield from _declarations(importlib.import_module(info.name))


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: " + (str(exc).strip().splitlines() or [""])[0]


def _put(item: Declaration, origin: Origin) -> None:
    """Add one declaration, or record the conflict it makes and keep both sides out of the registry."""
    key = (item.kind, item.name)
    known = _REGISTRY[item.kind].get(item.name)
    refused = next((c for c in _CONFLICTS if (c.kind, c.name) == key), None)
    if refused is not None or (known is not None and known != item):
        if refused is None:
            claims = frozenset(getattr(known, "claims", ()) + getattr(item, "claims", ())) or None
            message = f"two {item.kind}s are named {item.name!r}: {_ORIGINS[key]} and {origin}"
            _CONFLICTS.append(Conflict(message, item.kind, item.name, claims))
        _REGISTRY[item.kind].pop(item.name, None)
        return
    for claim in getattr(item, "claims", ()) if known is None else ():
        owner = _OWNERS.setdefault(claim.upper(), origin)
        if owner.package != origin.package:
            message = (
                f"claim {claim} is declared by two packages: {owner} and {origin} "
                "(a package adds checks to its own claims only)"
            )
            _CONFLICTS.append(Conflict(message, "claim", claim.upper(), frozenset([claim.upper()])))
    _REGISTRY[item.kind][item.name] = item
    _ORIGINS[key] = origin


def _own(entry: EntryPoint) -> bool:
    return entry.value.split(".")[0] in LAB_MODULES


def _plugins() -> tuple[tuple[EntryPoint, str], ...]:
    """Every `moe_lab.plugins` entry point with its package: the light plugins first, then the lab's own
    (so a conflict names the lab first), then by package. Read again only when a folder on `sys.path`
    changed (installing a distribution adds a folder to one) or after `importlib.invalidate_caches()`, as
    the standard library reads its folder listings again: reading each installed distribution's metadata,
    as `entry_points` and `EntryPoint.dist` do on every call, took most of a lookup."""
    return _plugins_in(tuple((os.path.abspath(place), _stamp(place)) for place in sys.path))


def _stamp(place: str) -> tuple[int, int] | None:
    try:
        found = os.stat(place or ".")
    except OSError:
        return None
    return found.st_ino, found.st_mtime_ns


@functools.lru_cache(maxsize=4)
def _plugins_in(_places: tuple) -> tuple[tuple[EntryPoint, str], ...]:
    """`_plugins` of one state of the `sys.path` folders."""
    found = [
        (e, e.dist.name if e.dist is not None else e.value.split(".")[0])
        for e in entry_points(group=PLUGIN_GROUP)
    ]
    return tuple(
        sorted(found, key=lambda p: (p[0].name not in LIGHT_PLUGINS, not _own(p[0]), p[1], p[0].name))
    )


class _ForgetPlugins:
    """A finder that finds nothing, last on `sys.meta_path`: `importlib.invalidate_caches()` tells it to
    forget the plugins read (`_plugins_in`)."""

    @staticmethod
    def find_spec(*_args: object) -> None:
        return None

    @staticmethod
    def invalidate_caches() -> None:
        _plugins_in.cache_clear()


sys.meta_path.append(_ForgetPlugins)


def _light_module(entry: EntryPoint) -> ModuleType | None:
    """The plugin package's `LIGHT_MODULE`, imported alone (with its package's `__init__`), or None."""
    spec = importlib.util.find_spec(entry.module)
    places = spec.submodule_search_locations if spec is not None else None
    if not places or LIGHT_MODULE not in {m.name for m in pkgutil.iter_modules(places)}:
        return None
    return importlib.import_module(f"{entry.module}.{LIGHT_MODULE}")


def _load(
    plugins: Iterable[tuple[EntryPoint, str]], light: bool = False
) -> dict[str, dict[str, Declaration]]:
    """Collect the declarations of `plugins` (`_plugins`: entry point, package) not loaded yet into the
    registries, in their order (with `light`, those of each one's `LIGHT_MODULE` only); returns them.

    A plugin of another package that fails to import is recorded as a conflict (when it is loaded whole);
    the lab's own raise."""
    for entry, package in plugins:
        key = (package, f"{entry.name}.{LIGHT_MODULE}" if light else entry.name)
        if key in _LOADED or (package, entry.name) in _LOADED:
            continue
        _LOADED.add(key)
        try:
            root = _light_module(entry) if light else entry.load()
            found = [] if root is None else list(collect(root))
        except Exception as exc:
            if _own(entry):
                raise
            if light:
                continue
            message = f"plugin {entry.name!r} (package {package}) cannot be imported: {_one_line(exc)}"
            _CONFLICTS.append(Conflict(message, "plugin", entry.name, None))
            continue
        for item, module in found:
            _put(item, Origin(module, package))
    return _REGISTRY


def load_plugins() -> dict[str, dict[str, Declaration]]:
    """Fill the registries once from every `moe_lab.plugins` entry point; returns them by kind."""
    return _load(_plugins())


def refuse(kind: str, names: Iterable[str] | None = None) -> None:
    """Raise the first Refusal that concerns these names of `kind` (None: every name). Kind 'claim'
    matches the claims a conflict concerns; a plugin that failed to import concerns every listing
    of all names and the lookup of kind 'plugin'."""
    wanted = None if names is None else {n.upper() for n in names}
    for conflict in _CONFLICTS:
        if kind == "claim" and conflict.claims is not None:
            hit = wanted is None or bool(wanted & conflict.claims)
        else:
            same = conflict.kind == kind and (wanted is None or conflict.name.upper() in wanted)
            hit = same or (conflict.kind == "plugin" and wanted is None)
        if hit:
            raise Refusal(conflict.message)


def in_conflict(kind: str) -> set[str]:
    """The names of `kind` that two declarations share (refused, and left out of the registry)."""
    load_plugins()
    return {c.name for c in _CONFLICTS if c.kind == kind}


def find(kind: str, name: str) -> Any | None:
    """The declaration of `kind` called `name`, loading plugins only until it is found: the light plugins,
    then each other plugin's `LIGHT_MODULE`, then the others whole; Refusal if the name is in conflict, or
    unknown while a plugin failed to import."""
    plugins = _plugins()
    light = [p for p in plugins if p[0].name in LIGHT_PLUGINS]
    rest = [p for p in plugins if p[0].name not in LIGHT_PLUGINS]
    steps = [(p, False) for p in light] + [(p, True) for p in rest] + [(p, False) for p in rest]
    for plugin, only_light in steps:
        if name in _REGISTRY[kind]:
            break
        _load([plugin], only_light)
    refuse(kind, [name])
    found = _REGISTRY[kind].get(name)
    if found is None:
        refuse("plugin")
    return found


def declared(kind: str) -> dict[str, Any]:
    """The registry of one kind (one of `DECLARATION_KINDS`), by name; conflicts left out."""
    return dict(load_plugins()[kind])


def origin(declaration: Declaration) -> Origin:
    """The module and package a declaration was loaded from (`add`ed ones: their module, no package)."""
    found = _ORIGINS.get((declaration.kind, declaration.name))
    func = getattr(declaration, "func", None)
    return found or Origin(getattr(func, "__module__", "?"), "none, added directly")


def is_own(declaration: Declaration) -> bool:
    """Whether the lab's own entry points declare it (not a plugin of another package, not `add`ed)."""
    found = _ORIGINS.get((declaration.kind, declaration.name))
    return found is not None and found.module.split(".")[0] in LAB_MODULES


def add(declaration: Declaration) -> None:
    """Put one declaration into its registry directly (tests and embedding programs)."""
    load_plugins().setdefault(declaration.kind, {})[declaration.name] = declaration


def remove(declaration: Declaration) -> None:
    """Take a declaration added with `add` out again."""
    load_plugins()[declaration.kind].pop(declaration.name, None)


def checks(only: Iterable[str] | None = None) -> list[Check]:
    """Registered checks, optionally restricted to those covering any of the claim ids `only`;
    Refusal if a conflict concerns one of those claims (any claim, without `only`)."""
    wanted = {c.strip().upper() for c in only} if only is not None else None
    every: list[Check] = list(declared("check").values())
    refuse("claim", wanted)
    found = [c for c in every if wanted is None or wanted & {x.upper() for x in c.claims}]
    return sorted(found, key=lambda c: (claim_order(c.claims[0]), c.name))


def known_claims() -> set[str]:
    """Every claim id a check is registered for, those in conflict included."""
    every = {claim.upper() for c in declared("check").values() for claim in c.claims}
    return every | {claim for c in _CONFLICTS if c.claims for claim in c.claims}


def commands() -> dict[str, Command]:
    """Every command; Refusal if two share a name or a plugin failed to import (one may declare more)."""
    found = declared("command")
    refuse("command")
    return found


def replications() -> dict[str, Replication]:
    """Every replication target; Refusal as for `commands`."""
    found = declared("replication")
    refuse("replication")
    return found


def derived_seed(seed: int, name: str) -> int:
    """Stable per-check seed from the base seed and the check's name, so `--only` never changes it."""
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def claim_order(claim: str) -> tuple[str, int]:
    """Sort key of a claim id: letters, then the number (B2 before B10)."""
    letters = "".join(ch for ch in claim if ch.isalpha())
    digits = "".join(ch for ch in claim if ch.isdigit())
    return letters, int(digits) if digits else 0
