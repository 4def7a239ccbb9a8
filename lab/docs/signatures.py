"""The API a check uses, read from the code itself: signatures as written and whole docstrings.

Modules of the `checks` package are read from `sys.modules` once the registry has loaded its
plugins (the `checks` entry point walks them all), so `lab` never imports `checks`.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from lab.core import registry

Entry = tuple[str, str, list[tuple[str, str]]]  # signature, docstring, (property, its docstring)


class _Source(str):
    """An annotation as the source writes it: `inspect` shows its text unquoted."""

    def __repr__(self) -> str:
        return str(self)


def _annotation(value: Any) -> Any:
    if value is inspect.Parameter.empty:
        return value
    return _Source(value if isinstance(value, str) else getattr(value, "__name__", repr(value)))


def signature(name: str, func: Callable) -> str:
    """`name(params) -> returns` with the annotations as the source writes them."""
    sig = inspect.signature(func)
    params = [p.replace(annotation=_annotation(p.annotation)) for p in sig.parameters.values()]
    returns = _annotation(sig.return_annotation)
    return name + str(sig.replace(parameters=params, return_annotation=returns))


def _module(name: str) -> ModuleType | None:
    if not name.startswith("checks"):
        return importlib.import_module(name)
    registry.load_plugins()
    return sys.modules.get(name)


def _public(module: ModuleType) -> list[str]:
    return [
        n
        for n, v in vars(module).items()
        if not n.startswith("_") and inspect.isfunction(v) and v.__module__ == module.__name__
    ]


def _field(f: dataclasses.Field) -> str:
    text = f"{f.name}: {_annotation(f.type)}"
    if f.default is not dataclasses.MISSING:
        return f"{text} = {f.default!r}"
    if f.default_factory is not dataclasses.MISSING:
        return f"{text} = {f.default_factory()!r}"
    return text


def entry(name: str, obj: Any) -> Entry:
    """One API entry: the signature as the source writes it (a dataclass's fields), the docstring, and
    (name, docstring) of the `outcome` and `ok` properties a dataclass has."""
    if dataclasses.is_dataclass(obj):
        head = f"{name}({', '.join(_field(f) for f in dataclasses.fields(obj))})"
        properties = [(p, inspect.getdoc(getattr(obj, p))) for p in ("outcome", "ok") if hasattr(obj, p)]
    else:
        head, properties = signature(name, obj), []
    return head, inspect.getdoc(obj) or "", properties


def api_entries(modules: list[tuple[str, list[str] | None]]) -> list[tuple[str, list[Entry]]]:
    """The entries of each (module, names), every public function the module defines when names is none;
    a `checks` module the registry did not load is left out."""
    found = []
    for module_name, names in modules:
        module = _module(module_name)
        if module is not None:
            chosen = names if names is not None else _public(module)
            found.append((module_name, [entry(n, getattr(module, n)) for n in chosen]))
    return found
