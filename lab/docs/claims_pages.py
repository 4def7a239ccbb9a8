"""The claims catalogue pages, one per paper: prose from `catalogue`, checks from the registry, verdicts
from `results/verify.json`."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from lab.chen2022.choices import CHOICES
from lab.chen2022.proof_steps import CATEGORIES, PROOF_STEPS
from lab.core.registry import claim_order
from lab.docs.catalogue import BY_ID, PAPERS, SUBSTRATE, paper_of
from lab.docs.markdown import anchor, code, interval, num, page, table
from lab.docs.results import VERIFY_COMMAND, Results

OUTCOME_ORDER = (
    "pass",
    "detected",
    "finding",
    "report",
    "FAIL",
    "MISSED",
    "FINDING NOW HOLDS",
    "uncontrolled",
    "error",
)


@dataclass(frozen=True)
class CheckInfo:
    """A registered check as the docs show it: stable name, claims, module and its file."""

    name: str
    claims: tuple[str, ...]
    module: str

    @property
    def path(self) -> str:
        return self.module.replace(".", "/") + ".py"


def plugin_checks() -> dict[str | None, list[CheckInfo]]:
    """Every registered check by the package it comes from, the lab's own under None (sorted as `verify`
    runs them): the lab's pages show only its own, so an installed plugin never changes them."""
    from lab.core import registry

    ordered = sorted(registry.declared("check").values(), key=lambda c: (claim_order(c.claims[0]), c.name))
    found: dict[str | None, list[CheckInfo]] = defaultdict(list)
    for c in ordered:
        package = None if registry.is_own(c) else registry.origin(c).package
        found[package].append(CheckInfo(c.name, c.claims, c.func.__module__))
    return dict(found)


def by_claim_id(
    results: Results, checks: list[CheckInfo]
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[CheckInfo]]]:
    """The records and the checks of each claim id."""
    by_claim: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in results.records:
        by_claim[record["claim"]].append(record)
    checks_of: dict[str, list[CheckInfo]] = defaultdict(list)
    for check in checks:
        for claim in check.claims:
            checks_of[claim].append(check)
    return by_claim, checks_of


def plugin_page(package: str, results: Results, checks: list[CheckInfo]) -> str:
    """docs/claims/<package>.md for an installed plugin (only with `python -m lab docs --plugins`)."""
    by_claim, checks_of = by_claim_id(results, checks)
    ordered = sorted(checks_of, key=claim_order)
    intro = (
        f"The claims of the installed package `{package}`, a plugin of the lab: its checks, and its "
        "verdicts in the results folder this page was rendered from. The lab's own pages never show "
        "them. How to read a verdict: [the verdict vocabulary](../index.md#reading-a-verdict)."
    )
    missing = f"The package `{package}` ships no description of this claim."
    sections = [_claim_section(c, checks_of[c], by_claim.get(c, []), missing) for c in ordered]
    return page(f"Claims: {package}", intro, *sections)


def outcome_summary(records: list[dict[str, Any]]) -> str:
    """`3 pass, 2 detected` in a fixed order of outcomes."""
    counts = Counter(r["outcome"] for r in records)
    words = [f"{counts[o]} {o}" for o in OUTCOME_ORDER if counts[o]]
    words += [f"{counts[o]} {o}" for o in sorted(counts) if o not in OUTCOME_ORDER]
    return ", ".join(words) or "no records"


def verdict_table(records: list[dict[str, Any]]) -> str:
    """Every record in full, numbered; notes and findings listed under the table by number."""
    rows = [
        (
            i,
            r["kind"],
            r["statement"],
            num(r.get("measured")),
            num(r.get("bound")),
            interval(r.get("ci")),
            r["verdict"],
            num(r.get("slack")),
            r["outcome"],
        )
        for i, r in enumerate(records, 1)
    ]
    text = table(("#", "kind", "statement", "measured", "bound", "CI", "verdict", "slack", "outcome"), rows)
    notes: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(records, 1):
        for label, key in (("known finding", "finding"), ("note", "note")):
            if r.get(key):
                notes.setdefault((label, r[key]), []).append(i)
    lines = [
        f"- {label} ({', '.join(f'#{i}' for i in rows)}): {body}" for (label, body), rows in notes.items()
    ]
    return text + ("\n\n" + "\n".join(lines) if lines else "")


def verify_provenance(results: Results) -> str:
    """One sentence: which file, seed, tier and versions the verdicts come from."""
    verify = results.verify
    versions = verify.get("versions") or {}
    shown = ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))
    return (
        f"Verdicts are rendered from `results/verify.json`: {len(results.records)} records at the "
        f"`{verify['tier']}` tier, seed {verify['seed']}" + (f" ({shown})" if shown else "") + ". "
        f"Refresh them with `{VERIFY_COMMAND}`, then `python -m lab docs`."
    )


MISSING_ENTRY = (
    "This claim has a check but no catalogue entry yet: add its statement, reference, premise "
    "and negative controls to `lab/docs/catalogue.py`."
)


def _claim_section(
    claim_id: str, checks: list[CheckInfo], records: list[dict[str, Any]], missing: str = MISSING_ENTRY
) -> str:
    entry = BY_ID.get(claim_id)
    title = entry.title if entry else "(no catalogue entry)"
    lines = [anchor(claim_id.lower()), f"## {claim_id}: {title}", ""]
    if entry is None:
        lines.append(missing)
    else:
        lines += [
            f"- **Paper:** {entry.reference}.",
            f"- **Statement:** {entry.statement}",
            f"- **Premise run:** {entry.premise}",
            f"- **Negative controls:** {entry.controls}",
        ]
    if checks:
        names = "; ".join(f"{code(c.name)} in {code(c.path)}" for c in checks)
        label = "Check" if len(checks) == 1 else "Checks"
        lines.append(
            f"- **{label}:** {names}. `python -m lab verify --only {claim_id}` runs this claim alone."
        )
    else:
        lines.append("- **Check:** none registered.")
    if entry is not None and entry.also:
        lines.append(f"- **See also:** {entry.also}")
    lines.append("")
    if chosen := check_choices(claim_id, records):
        lines += [chosen, ""]
    if records:
        lines += [f"Latest verdicts ({outcome_summary(records)}):", "", verdict_table(records)]
    elif checks:
        lines.append(
            f"No records for {claim_id} in `results/verify.json`: rerun `{VERIFY_COMMAND}` to add them."
        )
    return "\n".join(lines)


def proof_steps_section(claim_ids: set[str]) -> str:
    """Chen et al.'s page: the catalogue of Theorem 4.2's proof steps (`lab/chen2022/proof_steps.py`)."""
    counts = Counter(step.category for step in PROOF_STEPS)
    linked = [step for step in PROOF_STEPS if step.checked_by]
    per_category = ", ".join(f"{counts[c]} {c}" for c in CATEGORIES)
    intro = (
        f"The proof of Theorem 4.2 (App. D–E, with the routing lemmas of App. C and the auxiliary lemmas "
        f"of App. F) is catalogued step by step in {code('lab/chen2022/proof_steps.py')}: "
        f"{len(PROOF_STEPS)} numbered steps, {per_category}. {len(linked)} of them have `verify` records: "
        "the explicit ones a premise and a negative control (their own claims, or [B13](#b13)), the rate "
        "and undecidable ones a report with its category ([B14](#b14)); the definition has nothing to "
        f"bound. {code('lab/chen2022/proof_monitors.py')} measures the quantities of the run-time steps "
        "and the proof's stage schedule at every step of a run; the study of how they move with d is on "
        "the [findings page](../findings.md#proof-chain). A step that holds at every t is listed under "
        "the stage where the proof uses it."
    )
    meaning = "\n".join(f"- **{c}** ({counts[c]}): {what}." for c, what in CATEGORIES.items())

    def link(claim: str | None) -> str:
        if claim is None:
            return "-"
        return f"[{claim}](#{claim.lower()})" if claim in claim_ids else claim

    rows = [
        (
            f"[{s.kind} {s.lemma}](#step-{anchor_id(s.lemma)})",
            s.stage,
            s.quantity,
            s.category,
            link(s.checked_by),
        )
        for s in PROOF_STEPS
    ]
    statements = [
        f"{anchor('step-' + anchor_id(s.lemma))}**{s.kind} {s.lemma}** ({s.section}; stage: {s.stage}). "
        f"{s.statement}\n\n- **Bounds:** {s.quantity}.\n- **Category:** {s.category}. {s.why} "
        + (f"Checked by {link(s.checked_by)}." if s.checked_by else "Not checked yet.")
        for s in PROOF_STEPS
    ]
    return "\n\n".join(
        [
            anchor("proof-steps") + "\n## Theorem 4.2's proof, step by step",
            intro,
            meaning,
            table(("lemma", "stage", "what it bounds", "category", "checked by"), rows),
            "The statements, in the paper's order:",
            *statements,
        ]
    )


def anchor_id(lemma: str) -> str:
    """`E.12` -> `e-12`: a link target for a proof step."""
    return lemma.lower().replace(".", "-")


def check_choices(claim_id: str, records: list[dict[str, Any]]) -> str:
    """The values a training check's records state, each with its source (`lab/chen2022/lab_choices.toml`)."""
    entries = CHOICES.get("check", {}).get(claim_id, {})
    rows = []
    for name, entry in entries.items():
        values = sorted({r["params"][name] for r in records if r.get("params", {}).get(name) is not None})
        if values:
            shown = ", ".join(num(v) if isinstance(v, float) else str(v) for v in values)
            source = entry["source"] if entry["source"] == "paper" else f"**{entry['source']}**"
            rows.append((code(name), shown, source, entry.get("where") or entry.get("why")))
    if not rows:
        return ""
    return "Values the check's runs use (from its records), and where each comes from:\n\n" + table(
        ("value", "in the records", "source", "where stated, or why"), rows
    )


def claims_page(paper_key: str, results: Results, checks: list[CheckInfo]) -> str:
    """docs/claims/<paper>.md."""
    paper = PAPERS[paper_key]
    by_claim, checks_of = by_claim_id(results, checks)
    ids = {c.id for c in BY_ID.values() if c.paper == paper_key}
    ids |= {c for c, found in checks_of.items() if paper_of(c, found[0].module) == paper_key}
    ids |= {c for c in by_claim if paper_of(c) == paper_key}
    ordered = sorted(ids, key=claim_order)
    everything = [r for c in ordered for r in by_claim.get(c, [])]
    overview = table(
        ("claim", "what", "records", "outcomes"),
        [
            (
                f"[{c}](#{c.lower()})",
                BY_ID[c].title if c in BY_ID else "-",
                len(by_claim.get(c, [])),
                outcome_summary(by_claim.get(c, [])),
            )
            for c in ordered
        ],
    )
    intro = (
        f"{paper.cite}, *{paper.title}*. {paper.scope}\n\n"
        "Each claim below has a premise run (the paper's assumptions hold; the check must pass) and "
        "negative controls (an assumption is broken or the code is deliberately mutated; the check "
        "must detect it). How to read a verdict: [the verdict vocabulary](../index.md#reading-a-verdict).\n\n"
        + verify_provenance(results)
        + f"\n\nAll {len(everything)} records of this paper: {outcome_summary(everything)}."
    )
    parts = [intro, overview]
    if paper_key == "chen2022":
        parts.append(
            "The substrate objects below have no claim of their own to verify; unit tests cover them.\n\n"
            + table(("id", "object", "tests"), [(i, what, code(path)) for i, what, path in SUBSTRATE])
            + "\n\nTheorem 4.2's proof lemma by lemma, with the claims that check each step: "
            "[below](#proof-steps)."
        )
    parts += [_claim_section(c, checks_of.get(c, []), by_claim.get(c, [])) for c in ordered]
    if paper_key == "chen2022":
        parts.append(proof_steps_section(set(ordered)))
    return page(f"Claims: {paper.short}", *parts)
