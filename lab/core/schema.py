"""The schema of a JSON results file, declared beside the code that writes the file, and the one-line
refusal of a file that does not meet it (applied by the docs' loader, `lab.docs.results`).

A schema is an `Is` (a leaf: the values its test accepts), an `Each` (a list or an object whose every item
meets a schema) or a dict from field names to schemas; a key may name several fields, and a name ending in
"?" a field that may be absent (or null, where its schema is an `Is`). Every problem with a file (missing,
not JSON, a field missing or not what its schema says) is a `ResultsError` whose message starts with the
file's path and names the field.
"""

from __future__ import annotations

import json
import math
import reprlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.core.errors import InputError


class ResultsError(InputError):
    """A results file is missing or damaged; the message names it."""


@dataclass(frozen=True)
class Is:
    """A leaf of a schema: the values `test` accepts, which `wanted` names in a refusal."""

    wanted: str
    test: Callable[[Any], bool]


@dataclass(frozen=True)
class Each:
    """A list with `label` (its items `label 0`, `label 1`, … in a refusal), else an object, whose every
    item meets `schema`; at least `least` of them."""

    schema: Schema
    label: str | None = None
    least: int = 0


Schema = Is | Each | dict[str, "Schema"]
TEXT = Is("text", lambda v: isinstance(v, str))
INT = Is("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool))
NUMBER = Is("a finite number", lambda v: INT.test(v) or (isinstance(v, float) and math.isfinite(v)))
POSITIVE = Is("positive and finite", lambda v: NUMBER.test(v) and v > 0)
COUNT = Is("a positive integer", lambda v: INT.test(v) and v > 0)
OBJECT = Is("an object", lambda v: isinstance(v, dict))
LIST = Is("a list", lambda v: isinstance(v, list))


def read_json(path: Path) -> Any:
    """The JSON at `path`; NaN and infinities are refused (no result may hold them)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsError(f"{path}: missing") from None
    except OSError as exc:
        raise ResultsError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except (json.JSONDecodeError, ValueError) as exc:
        raise ResultsError(f"{path}: not valid JSON ({exc})") from None


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number a result may hold")


def check(path: Path, value: Any, schema: Schema, where: str = "", key: str | None = None) -> None:
    """Refuse `value`, field `key` at `where` in the file at `path`, in one line unless it meets `schema`."""
    shape = schema if isinstance(schema, Is) else LIST if getattr(schema, "label", None) else OBJECT
    if not shape.test(value):
        name = where.removesuffix(": ") if key is None else f"{where}field {key!r}"
        raise ResultsError(f"{path}: {name} must be {shape.wanted}, got {reprlib.repr(value)}")
    inner = where if key is None else f"{where}{key}: "
    if isinstance(schema, dict):
        for names, field_schema in schema.items():
            for name in names.split():
                if (found := name.removesuffix("?")) not in value:
                    if found == name:
                        raise ResultsError(f"{path}: {inner}field {found!r} is missing")
                elif found == name or value[found] is not None or not isinstance(field_schema, Is):
                    check(path, value[found], field_schema, inner, found)
    elif isinstance(schema, Each):
        if len(value) < schema.least:
            raise ResultsError(f"{path}: {where}holds no {schema.label}s")
        for i, item in enumerate(value) if schema.label else value.items():
            at = (f"{where}{schema.label} {i}: ", None) if schema.label else (inner, i)
            check(path, item, schema.schema, *at)


def load(path: Path, schema: dict[str, Schema], what: str, **identity: str) -> dict[str, Any]:
    """The JSON object at `path`, refused unless it is `what` (as `identity` says) and meets `schema`."""
    data = read_json(path)
    if not isinstance(data, dict) or any(data.get(k) != v for k, v in identity.items()):
        expected = ", ".join(f"{k} {v!r}" for k, v in identity.items()) or "a JSON object"
        raise ResultsError(f"{path}: not {what} (expected {expected})")
    check(path, data, schema)
    return data
