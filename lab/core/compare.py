"""A fresh `verify` run beside a committed one, record by record (`python -m lab verify --compare FILE`).

Records are matched by (claim, key), the key being stable across runs. A matched pair is *identical*
(every compared field equal), *equal within rounding* (the numbers moved no more than the
record's round-off allowance) or *differs* (a number moved beyond it, or a text field changed); a record
of the fresh run only is *new*, one of the committed run only *missing*. The numbers are measured, bound,
ci, slack and every number in extra; statement, kind, rule, reason, finding, note and params are compared
as text, and so is every other value in extra. `seconds` is timing and never compared. Verdict and
outcome are compared on their own: a changed one, or a missing record, fails the comparison; a number
that moved, even beyond rounding, is reported and does not (the verdict is what the lab states).

Rounding allowance, from the committed record (`tolerance`): its stated round-off allowance when it has
a number for one (`params.rtol`, `extra.round_off`, `params.allowance`), else a relative 1e-9
(`FLOATING_POINT`): every number of a record is computed in floating point, through BLAS, vectorised
reductions or transcendental functions whose last bits depend on the CPU, the SIMD level and the
library versions. A number `new` is within rounding of `old` when |new − old| ≤ allowance · scale, the
scale being max(|old|, |new|), and for measured and ci also |bound| (an allowance is stated relative to
the bound, as `lab.core.records.derived_verdict` reads `rtol`), or 1 where a stated `rtol` meets a
zero bound (derived_verdict reads it as absolute there).

The environments are compared from the files' own `versions` and `environment` (`environment_changes`);
a field one file lacks (files written before the lab recorded it) reads "unknown".

`comparison_file` is what `verify --compare FILE --compare-json PATH` writes (`COMPARISON_FILE` its
schema): the counts, the environment that differs, and every record not identical with its changes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from lab.core.schema import INT, LIST, OBJECT, TEXT, Each, Is

STATUSES = ("identical", "equal within rounding", "differs", "new", "missing")
FLOATING_POINT = 1e-9  # relative: a floating-point result's last bits, where the record states no allowance
NUMBERS = ("measured", "bound", "ci", "slack", "extra")  # compared as numbers where they hold numbers
TEXTS = ("kind", "statement", "rule", "reason", "finding", "note", "params")  # compared as text
STATED = (("params", "rtol"), ("extra", "round_off"), ("params", "allowance"))  # stated allowances, in turn
UNKNOWN = "unknown"
COMPARISON_FORMAT = "moe-lab verify comparison 1"
COMPARISON_FILE = {  # the schema of `comparison_file` (lab.docs.results loads it)
    "committed": TEXT,
    "environment": OBJECT,
    "counts": {"identical differs new missing": INT},
    "not_run": INT,
    "failed": Is("true or false", lambda v: isinstance(v, bool)),
    "environment_changes": Each(LIST, "change"),
    "rows": Each({"claim key status": TEXT, "verdicts outcomes changes": LIST}, "row"),
}


@dataclass(frozen=True)
class Change:
    """One field of a matched record that changed: the first leaf where it did (`where`, e.g. `ci[1]`),
    its committed and fresh values, and whether that is within rounding."""

    where: str
    old: Any
    new: Any
    within_rounding: bool


@dataclass(frozen=True)
class Row:
    """One record of either run: its status (one of STATUSES), the fields that changed, the allowance that
    applied (`tolerance`, e.g. "params.rtol = 1e-12"; None for new and missing records) and the verdict
    and outcome of each run (None for the run that lacks it)."""

    claim: str
    key: str
    status: str
    changes: tuple[Change, ...] = ()
    tolerance: str | None = None
    verdicts: tuple[str | None, str | None] = (None, None)  # (committed, fresh)
    outcomes: tuple[str | None, str | None] = (None, None)

    @property
    def verdict_changed(self) -> bool:
        return self.status not in ("new", "missing") and self.verdicts[0] != self.verdicts[1]

    @property
    def outcome_changed(self) -> bool:
        return self.status not in ("new", "missing") and self.outcomes[0] != self.outcomes[1]

    @property
    def fails(self) -> bool:
        """A changed verdict or outcome, or a record the fresh run no longer makes."""
        return self.status == "missing" or self.verdict_changed or self.outcome_changed


@dataclass(frozen=True)
class Comparison:
    """Every row (the fresh run's order, then the missing records), the records of claims that were not
    run (`not_run`: not compared), and the environment fields that differ, as (field, old, new)."""

    rows: tuple[Row, ...]
    not_run: int
    environment: tuple[tuple[str, str, str], ...]

    @property
    def failed(self) -> bool:
        return any(row.fails for row in self.rows)

    def count(self, status: str) -> int:
        return sum(row.status == status for row in self.rows)


def tolerance(record: dict[str, Any]) -> tuple[float, str]:
    """The relative rounding allowance of a committed record and where it comes from (module docstring)."""
    for field, name in STATED:
        value = (record.get(field) or {}).get(name)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return float(value), f"{field}.{name} = {value:g}"
    return FLOATING_POINT, f"floating point, relative {FLOATING_POINT:g}"


def compare_records(
    new: Iterable[dict[str, Any]], old: Iterable[dict[str, Any]], claims: Iterable[str] | None = None
) -> tuple[list[Row], int]:
    """The rows of two runs' records (as `Record.to_json` writes them), and how many committed records
    were left out because their claim is not in `claims` (the claims run; None: all were run)."""
    run = None if claims is None else {c.upper() for c in claims}
    old_by_key = {(r["claim"], r["key"]): r for r in old}
    compared = {k: r for k, r in old_by_key.items() if run is None or k[0].upper() in run}
    not_run = len(old_by_key) - len(compared)
    rows = []
    for record in new:
        found = compared.pop((record["claim"], record["key"]), None)
        if found is None:
            seen = (None, record["verdict"]), (None, record["outcome"])
            rows.append(Row(record["claim"], record["key"], "new", verdicts=seen[0], outcomes=seen[1]))
        else:
            rows.append(compare_pair(found, record))
    for (claim, key), record in compared.items():
        rows.append(
            Row(claim, key, "missing", verdicts=(record["verdict"], None), outcomes=(record["outcome"], None))
        )
    return rows, not_run


def compare_pair(old: dict[str, Any], new: dict[str, Any]) -> Row:
    """The row of one record in both runs (module docstring)."""
    allowance, source = tolerance(old)
    changes = []
    for field in NUMBERS + TEXTS:
        if field in TEXTS:
            a, b = _text(old.get(field)), _text(new.get(field))
            found = [] if a == b else [Change(field, a, b, False)]
        else:
            scale = _bound_scale(old, source) if field in ("measured", "ci") else 0.0
            found = list(_leaf_changes(field, old.get(field), new.get(field), allowance, scale))
        if found:
            changes.append(next((c for c in found if not c.within_rounding), found[0]))
    status = (
        "identical"
        if not changes
        else "equal within rounding"
        if all(c.within_rounding for c in changes)
        else "differs"
    )
    return Row(
        old["claim"],
        old["key"],
        status,
        tuple(changes),
        source if changes else None,
        (old["verdict"], new["verdict"]),
        (old["outcome"], new["outcome"]),
    )


def _bound_scale(record: dict[str, Any], source: str) -> float:
    """The scale a stated allowance has at the bound: |bound|, or 1 for an `rtol` at a zero bound."""
    bound = record.get("bound")
    if not isinstance(bound, int | float):
        return 0.0
    return 1.0 if bound == 0 and source.startswith("params.rtol") else abs(float(bound))


def _text(value: Any) -> str | None:
    return None if value is None else value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _leaf_changes(where: str, old: Any, new: Any, allowance: float, scale: float) -> Iterator[Change]:
    """The leaves of `old` and `new` (nested lists and objects) that differ, numbers judged against the
    allowance; a change of shape or type is a change of the whole value, beyond rounding."""
    if _number(old) and _number(new):
        if old != new:
            limit = allowance * max(abs(old), abs(new), scale)
            yield Change(where, old, new, abs(new - old) <= limit)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            yield from _leaf_changes(f"{where}[{i}]", a, b, allowance, scale)
    elif isinstance(old, dict) and isinstance(new, dict) and old.keys() == new.keys():
        for name in old:
            yield from _leaf_changes(f"{where}.{name}", old[name], new[name], allowance, scale)
    elif old != new:
        yield Change(where, old, new, False)


def environment_changes(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The fields of the two files' `versions` and `environment` that differ, as (field, old, new); a field
    a file does not hold reads "unknown" (a file written before the lab recorded it)."""
    a, b = _environment(old), _environment(new)
    return [
        (name, a.get(name, UNKNOWN), b.get(name, UNKNOWN))
        for name in sorted(a.keys() | b.keys())
        if a.get(name, UNKNOWN) != b.get(name, UNKNOWN)
    ]


def _environment(payload: dict[str, Any]) -> dict[str, str]:
    """A verify file's versions and environment as one flat mapping of text (nested names joined by dots)."""
    flat: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for name, inner in value.items():
                walk(f"{prefix}{name}." if isinstance(inner, dict) else f"{prefix}{name}", inner)
        else:
            flat[prefix] = str(value)

    for section in ("versions", "environment"):
        walk("", payload.get(section) or {})
    return flat


def compare_runs(new: dict[str, Any], old: dict[str, Any], claims: Iterable[str] | None = None) -> Comparison:
    """Two verify files' payloads compared (module docstring); `claims` the claims the fresh run ran."""
    rows, not_run = compare_records(new["records"], old["records"], claims)
    return Comparison(tuple(rows), not_run, tuple(environment_changes(old, new)))


def comparison_report(comparison: Comparison, path: str) -> str:
    """Markdown: the summary line, the environment line, and a table of the records not identical or
    with another verdict or outcome."""
    counts = ", ".join(f"{comparison.count(s)} {s}" for s in STATUSES)
    changed = [r for r in comparison.rows if r.verdict_changed or r.outcome_changed]
    verdicts = (
        f"{len(changed)} with another verdict or outcome" if changed else "verdicts and outcomes unchanged"
    )
    skipped = f"; {comparison.not_run} records of claims not run not compared" if comparison.not_run else ""
    env = "; ".join(f"{name} {old} → {new}" for name, old, new in comparison.environment)
    lines = [
        f"## Compared with {path}",
        "",
        f"{len(comparison.rows)} records: {counts}; {verdicts}{skipped}.",
        "",
        f"Environment: {env or 'the same versions, CPU, SIMD level, BLAS and threads'}.",
    ]
    shown = [r for r in comparison.rows if r.status != "identical" or r.fails]
    if shown:
        lines += [
            "",
            "| claim | key | comparison | committed → fresh | allowance | verdict | outcome |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [_table_row(row) for row in shown]
    return "\n".join(lines) + "\n"


def _table_row(row: Row) -> str:
    changes = "; ".join(f"{c.where}: {_short(c.old)} → {_short(c.new)}" for c in row.changes)
    cells = [
        row.claim,
        row.key,
        row.status,
        changes,
        row.tolerance or "",
        _pair(row.verdicts),
        _pair(row.outcomes),
    ]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _pair(values: tuple[str | None, str | None]) -> str:
    old, new = (v or "—" for v in values)
    return old if old == new else f"{old} → {new}"


def _short(value: Any, width: int = 48) -> str:
    """A value for the table: a number with every digit (the late ones are the point), text cut short."""
    text = repr(value) if _number(value) else _text(value) or "null"
    return text if len(text) <= width else text[: width - 1] + "…"


def comparison_file(comparison: Comparison, committed: str, environment: dict[str, Any]) -> dict[str, Any]:
    """The comparison as JSON (`COMPARISON_FILE`): the committed file's name, the fresh run's environment,
    the counts by status, the environment fields that differ and each record not identical."""
    return {
        "format": COMPARISON_FORMAT,
        "committed": committed,
        "environment": environment,
        "counts": {status: comparison.count(status) for status in STATUSES},
        "not_run": comparison.not_run,
        "failed": comparison.failed,
        "environment_changes": [list(change) for change in comparison.environment],
        "rows": [
            {
                "claim": row.claim,
                "key": row.key,
                "status": row.status,
                "tolerance": row.tolerance,
                "verdicts": list(row.verdicts),
                "outcomes": list(row.outcomes),
                "changes": [
                    {
                        "where": c.where,
                        "old": _short(c.old),
                        "new": _short(c.new),
                        "rounding": c.within_rounding,
                    }
                    for c in row.changes
                ],
            }
            for row in comparison.rows
            if row.status != "identical" or row.fails
        ],
    }
