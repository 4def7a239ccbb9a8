"""Every finding on the committed findings page opens with its evidence grade, and the grades are known."""

import re
from pathlib import Path

import pytest

from lab.docs.markdown import GRADES, evidence

FINDINGS = Path(__file__).resolve().parents[2] / "docs" / "findings.md"


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, first paragraph after it) of every `### ` finding."""
    parts = re.split(r"^### (.+)$", text, flags=re.M)
    pairs = zip(parts[1::2], parts[2::2], strict=True)
    return [(head, body.strip().split("\n\n")[0]) for head, body in pairs]


def test_every_finding_opens_with_an_evidence_line_of_known_grades():
    sections = _sections(FINDINGS.read_text(encoding="utf-8"))
    assert len(sections) >= 10
    for head, first in sections:
        assert first.startswith("Evidence: "), head
        grades = re.findall(r"\*\*([a-z ]+)\*\* \(", first)
        assert grades and set(grades) <= set(GRADES), (head, grades)


def test_an_unknown_grade_is_refused_by_name():
    with pytest.raises(ValueError, match="evidence grade must be one of"):
        evidence(("plausible", "a hunch"))
