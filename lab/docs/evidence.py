"""A finding's evidence formatted: measured values, record tables, a replication's cells beside the
paper's, and the command to run when the results do not hold a measurement."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from lab.chen2022.replicate_analysis import replicate_analysis as analysis_of
from lab.chen2022.tables import TARGETS, Cell
from lab.docs.markdown import fixed, interval, num, table
from lab.docs.results import Replication, Results


def measured(r: dict[str, Any]) -> str:
    """`measured (CI [a, b])` or just the measured value."""
    text = num(r.get("measured"))
    return text + (f" (CI {interval(r['ci'])})" if r.get("ci") else "")


def record_rows(rs: Iterable[dict[str, Any] | None]) -> str:
    """The records that exist, as a table of statement, measured, bound, CI, slack and outcome."""
    rows = [
        (
            r["claim"],
            r["statement"],
            num(r.get("measured")),
            num(r.get("bound")),
            interval(r.get("ci")),
            num(r.get("slack")),
            r["outcome"],
        )
        for r in rs
        if r is not None
    ]
    return table(("claim", "statement", "measured", "bound", "CI", "slack", "outcome"), rows)


def missing(command: str) -> str:
    """The sentence for a finding whose evidence is not among the committed results."""
    return (
        f"*The committed results do not hold this measurement yet.* It comes from:\n\n```bash\n{command}\n```"
    )


def verify_missing(claims: str) -> str:
    return missing(f"python -m lab verify --only {claims} --seed 0 --json results/verify.json")


# ------------------------------------------------------------------------------------ replications


@dataclass(frozen=True)
class CellMean:
    """One table cell of a committed replication: the lab's mean ± std over seeds and the paper's value."""

    source: str
    label: str
    setting: int
    seeds: int
    mean: float
    std: float | None
    paper: float


def full_tier(results: Results, target: str, variant: str = "paper") -> Replication | None:
    """The committed replication of `target` at the paper's protocol (full tier), if any."""
    found = [
        r for r in results.replications if r.target == target and r.variant == variant and r.tier == "full"
    ]
    return sorted(found, key=lambda r: r.name)[0] if found else None


def replicate_analysis(files: list[Replication]) -> dict[str, Any]:
    """The replicate analysis the Chen et al. files were read beside (`results.load_analysis`); without
    any, the analysis of no summaries (nothing to pair or count)."""
    return next((r.analysis for r in files if r.target in TARGETS), None) or analysis_of({})


def cell_means(rep: Replication, keep: Callable[[Cell], bool] = lambda cell: True) -> list[CellMean]:
    """Per kept cell and setting: the runs' mean accuracy (the summary's cells) beside the paper's."""
    kept = {cell.label: cell.paper for cell in TARGETS[rep.target] if keep(cell)}
    return [
        CellMean(
            rep.name,
            c["cell"],
            c["setting"],
            c["runs"],
            c["test_accuracy"]["mean"],
            c["test_accuracy"]["std"],
            kept[c["cell"]][c["setting"]][0],
        )
        for c in rep.payload["cells"]
        if c["cell"] in kept
    ]


def cell_table(cells: list[CellMean]) -> str:
    rows = [
        (
            f"`{c.source}`",
            c.label,
            c.setting,
            c.seeds,
            fixed(c.mean, 2) + (f" ± {fixed(c.std, 2)}" if c.std is not None else ""),
            fixed(c.paper, 2),
            f"{c.mean - c.paper:+.2f}",
        )
        for c in cells
    ]
    return table(("file", "cell", "setting", "seeds", "lab test accuracy (%)", "paper (%)", "diff"), rows)


def replication_evidence(
    results: Results, target: str, variant: str, keep: Callable[[Cell], bool], command: str
) -> str:
    """A table of the kept cells from the full-tier file of (target, variant), or how to produce it."""
    rep = full_tier(results, target, variant)
    if rep is None:
        quick = [f"`{r.name}`" for r in results.replications if r.target == target and r.variant == variant]
        note = (
            f"Committed at a smaller tier only ({', '.join(quick)}): a smoke run, not evidence. "
            if quick
            else ""
        )
        return note + missing(command)
    cells = cell_means(rep, keep)
    return cell_table(cells) if cells else missing(command)
