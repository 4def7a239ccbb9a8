"""Theorem 4.2's proof steps (proof_steps.toml): known vocabulary, the paper's order, links to real claims."""

import json
import re
from pathlib import Path

import pytest

from checks.chen2022 import PAPER

PROOF_STEPS, SECTIONS, STAGES = PAPER.proof.steps, PAPER.proof.sections, PAPER.proof.stages
CATEGORIES = dict(PAPER.proof.categories)
VERIFY = Path(__file__).resolve().parents[3] / "results" / "verify.json"

# The lemmas checked by claims of their own; every other step is B13 (explicit) or B14 (reported).
OWN_CLAIMS = {"C.1": "B4", "C.3": "B5", "C.4": "B6", "D.4": "B8", "E.1": "B7", "E.4": "B10"}


def _claim_ids() -> set[str]:
    return {record["claim"] for record in json.loads(VERIFY.read_text())["records"]}


def _number(lemma: str) -> int:
    return int(lemma.rsplit(".", 1)[1])


@pytest.mark.parametrize("step", PROOF_STEPS, ids=lambda s: s.lemma)
def test_every_step_has_a_known_category_stage_and_section(step):
    assert step.category in CATEGORIES
    assert step.stage in STAGES
    assert step.section in SECTIONS
    assert step.kind in {"Lemma", "Definition", "Proposition"}
    assert (step.category == "definition") == (step.kind == "Definition")


@pytest.mark.parametrize("step", PROOF_STEPS, ids=lambda s: s.lemma)
def test_every_step_is_filled_in_plain_text(step):
    for text in (step.statement, step.quantity, step.why):
        assert text.strip() == text and text
        assert "\\" not in text and "$" not in text, "plain text with Unicode math, no LaTeX"
    assert step.why.endswith(".") and step.statement.endswith(".")


def test_ids_are_unique_and_in_the_papers_order():
    lemmas = [s.lemma for s in PROOF_STEPS]
    assert len(set(lemmas)) == len(lemmas)
    assert all(re.fullmatch(r"([A-F]|[1-9])\.[0-9]+", lemma) for lemma in lemmas)
    # The order of the text: section by section, then by number inside an appendix's own letter.
    keys = [(SECTIONS.index(s.section), _number(s.lemma)) for s in PROOF_STEPS]
    assert keys == sorted(keys)
    for step in PROOF_STEPS:
        letter = step.lemma.split(".")[0]
        assert step.section.removeprefix("App. ").startswith(letter) or step.lemma == "5.2", step.lemma


def test_app_d_and_e_are_complete():
    lemmas = {s.lemma for s in PROOF_STEPS}
    assert {f"D.{i}" for i in range(1, 6)} <= lemmas
    assert {f"E.{i}" for i in range(1, 19)} <= lemmas


def test_every_checked_by_is_a_claim_of_verify_json():
    known = _claim_ids()
    for step in PROOF_STEPS:
        assert step.checked_by is None or step.checked_by in known, (step.lemma, step.checked_by)


def test_every_step_but_the_definition_is_linked_to_its_claim():
    for step in PROOF_STEPS:
        own = OWN_CLAIMS.get(step.lemma)
        expected = own or {"explicit": "B13", "rate": "B14", "undecidable": "B14"}.get(step.category)
        assert step.checked_by == expected, step.lemma


def _records_of(lemma: str, claim: str) -> list[dict]:
    records = json.loads(VERIFY.read_text())["records"]
    return [r for r in records if r["claim"] == claim and r["statement"].startswith(f"Lemma {lemma}")]


@pytest.mark.parametrize(
    "step", [s for s in PROOF_STEPS if s.checked_by in ("B13", "B14")], ids=lambda s: s.lemma
)
def test_every_catalogued_step_has_its_records_in_verify_json(step):
    """Explicit steps: a premise and a negative control; rate and undecidable: a report, category stated."""
    records = _records_of(step.lemma, step.checked_by)
    kinds = {r["kind"] for r in records}
    if step.category == "explicit":
        assert {"premise", "negative-control"} <= kinds, step.lemma
        assert all(r["outcome"] in ("pass", "detected", "finding") for r in records), step.lemma
    else:
        assert kinds == {"report"}, step.lemma
        assert all(r["extra"]["category"] == step.category for r in records), step.lemma


def test_the_rendered_section_counts_the_categories():
    from lab.docs.render import render_all

    page = render_all(VERIFY.parent, VERIFY.parents[1] / "sweeps")["claims/chen2022.md"]
    text = page[page.index('<a name="proof-steps"></a>') :]
    for category in CATEGORIES:
        count = sum(s.category == category for s in PROOF_STEPS)
        assert f"{count} {category}" in text
        assert f"**{category}** ({count})" in text
    assert "Not built yet" not in text
    for lemma, claim in {**OWN_CLAIMS, "D.1": "B13", "E.3": "B14"}.items():
        row = next(line for line in text.splitlines() if line.startswith(f"| [Lemma {lemma}]"))
        assert row.endswith(f"| [{claim}](#{claim.lower()}) |")
