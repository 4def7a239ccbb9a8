"""Verdict reports: a summary per claim, then every record, its whole statement and the params that tell
it apart from the other records of its claim."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from lab.core.records import Record, shown_slack
from lab.core.registry import claim_order


def fmt(value: float | None) -> str:
    """A measured value, bound or slack in three significant digits; '-' when absent."""
    return "-" if value is None else f"{value:.3g}"


def fmt_ci(ci: Sequence[float] | None) -> str:
    return "-" if ci is None else f"[{ci[0]:.3g}, {ci[1]:.3g}]"


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value)


def distinguishing_params(records: Sequence[Record]) -> list[dict[str, Any]]:
    """Per record, the parameters whose values differ among the records of its claim."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        groups[r.claim].append(i)
    shown: list[dict[str, Any]] = [{} for _ in records]
    for members in groups.values():
        if len(members) < 2:
            continue
        keys = sorted({k for i in members for k in records[i].params})
        varying = [k for k in keys if len({repr(records[i].params.get(k)) for i in members}) > 1]
        for i in members:
            shown[i] = {k: records[i].params[k] for k in varying if k in records[i].params}
    return shown


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def params_cell(params: dict[str, Any]) -> str:
    """`n=40, backend=numba`, or '-' when no parameter tells the record apart."""
    return _cell(", ".join(f"{k}={_value(v)}" for k, v in params.items()) or "-")


def records_table(records: Sequence[Record]) -> str:
    """Markdown table of records; the outcome column says how the lab reads each verdict."""
    rows = [
        "| claim | kind | statement | params | measured | bound | CI | verdict | slack | outcome |",
        "|" + "---|" * 10,
    ]
    for r, params in zip(records, distinguishing_params(records), strict=True):
        slack = fmt(shown_slack(r.slack, r.bound))
        rows.append(
            f"| {r.claim} | {r.kind} | {_cell(r.statement)} | {params_cell(params)} | {fmt(r.measured)} | "
            f"{fmt(r.bound)} | {fmt_ci(r.ci)} | {r.verdict} | {slack} | {r.outcome} |"
        )
    return "\n".join(rows)


def by_claim(records: Sequence[Record]) -> dict[str, list[Record]]:
    """Records grouped by claim id, claims in the lab's order (A1, ..., B2, B10, ...)."""
    groups: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        groups[r.claim].append(r)
    return {claim: groups[claim] for claim in sorted(groups, key=claim_order)}


def summary_table(records: Sequence[Record]) -> str:
    """One row per claim: premises passing, controls detected, findings, reports, records not as expected."""
    rows = [
        "| claim | records | premises pass | controls detected | findings | reports | not as expected |",
        "|---|---|---|---|---|---|---|",
    ]
    for claim, group in by_claim(records).items():
        premises = [r for r in group if r.kind == "premise" and r.finding is None]
        controls = [r for r in group if r.kind == "negative-control"]
        findings = [r for r in group if r.finding is not None]
        bad = [r for r in group if not r.ok]
        rows.append(
            f"| {claim} | {len(group)} | {sum(r.outcome == 'pass' for r in premises)}/{len(premises)} | "
            f"{sum(r.outcome == 'detected' for r in controls)}/{len(controls)} | {len(findings)} | "
            f"{sum(r.kind == 'report' for r in group)} | {len(bad) or '-'} |"
        )
    return "\n".join(rows)


def findings_text(records: Sequence[Record]) -> str:
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


def summary_line(records: Sequence[Record], tier: str, seed: int) -> str:
    bad = sum(not r.ok for r in records)
    return f"{len(records) - bad} as expected, {bad} not ({tier} tier, seed {seed})"


def markdown_report(records: Sequence[Record], tier: str, seed: int) -> str:
    """The whole report: summary per claim, the findings, then each claim's records in detail."""
    parts = [
        f"# Verdicts ({tier} tier, seed {seed})",
        summary_line(records, tier, seed),
        "## Summary per claim",
        summary_table(records),
    ]
    findings = findings_text(records)
    if findings:
        parts += ["## Findings", findings]
    parts.append("## Details")
    for claim, group in by_claim(records).items():
        parts += [f"### {claim}", records_table(group)]
    return "\n\n".join(parts) + "\n"
