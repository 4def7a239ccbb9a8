"""A finding's evidence formatted: measured values, record tables, a replication's cells beside the
paper's, and the command to run when the results do not hold a measurement."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lab.chen2022.replicate_analysis import replicate_analysis as analysis_of
from lab.chen2022.tables import TARGETS
from lab.core.records import shown_slack
from lab.docs.markdown import fixed, interval, num, table
from lab.docs.results import ReplicationFile, Results


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
            num(shown_slack(r.get("slack"), r.get("bound"))),
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


def full_tier(results: Results, target: str, variant: str = "paper") -> ReplicationFile | None:
    """The committed replication of `target` at the paper's protocol (full tier), if any."""
    found = (r for r in results.replications if (r.target, r.variant, r.tier) == (target, variant, "full"))
    return min(found, key=lambda r: r.name, default=None)


def replicate_analysis(results: Results) -> dict[str, Any]:
    """The replicate analysis the Chen et al. files were read beside (`results.load_analysis`); without
    any, the analysis of no summaries (nothing to pair or count)."""
    return results.analysis or analysis_of({})


def replication_evidence(results: Results, target: str, variant: str, model: str | None, command: str) -> str:
    """The cells (of `model`, if given) of the full-tier file of (target, variant), each the runs' mean ±
    std beside the paper's value; or how to produce them."""
    rep = full_tier(results, target, variant)
    if rep is None:
        quick = [f"`{r.name}`" for r in results.replications if r.target == target and r.variant == variant]
        note = (
            f"Committed at a smaller tier only ({', '.join(quick)}): a smoke run, not evidence. "
            if quick
            else ""
        )
        return note + missing(command)
    papers = {cell.label: cell.paper for cell in TARGETS[target] if not model or cell.model == model}
    rows = []
    for c in (c for c in rep.payload["cells"] if c["cell"] in papers):
        acc, paper = c["test_accuracy"], papers[c["cell"]][c["setting"]][0]
        lab = fixed(acc["mean"], 2) + (f" ± {fixed(acc['std'], 2)}" if acc["std"] is not None else "")
        diff = f"{acc['mean'] - paper:+.2f}"
        rows.append((f"`{rep.name}`", c["cell"], c["setting"], c["runs"], lab, fixed(paper, 2), diff))
    head = ("file", "cell", "setting", "seeds", "lab test accuracy (%)", "paper (%)", "diff")
    return table(head, rows) if rows else missing(command)
