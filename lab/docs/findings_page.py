"""docs/findings.md: where the lab and the papers disagree, with every number read from results/; the
findings not yet moved to files beside their checks are written here."""

from __future__ import annotations

from lab.docs.findings_chen import FINDINGS as PYTHON_FINDINGS
from lab.docs.findings_data import registered, render_finding
from lab.docs.results import Results, ResultsError
from lab.docs.templating import render


def findings_page(results: Results) -> str:
    """docs/findings.md, from `templates/findings.md.j2`: each finding from its file beside its check (or
    from the few still written in Python, `lab.docs.findings_chen`); each of the lab's findings files must
    be on the page."""
    page = "findings.md"
    data, shown = registered(), set()

    def show(name: str) -> str:
        shown.add(name)
        if name in data:
            return render_finding(page, data[name], results)
        return PYTHON_FINDINGS[name](results)

    text = render("findings.md.j2", page, results, finding=show)
    if unshown := sorted(set(data) - shown):
        raise ResultsError(f"{page}: findings.md.j2 does not show the findings {unshown}")
    return text
