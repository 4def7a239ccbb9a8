"""docs/findings.md: where the lab and the papers disagree, with every number read from results/: each
finding from its file beside its check (`checks/<paper>/<module>.findings.toml`)."""

from __future__ import annotations

from lab.docs.findings_data import registered, render_finding
from lab.docs.results import Results, ResultsError
from lab.docs.templating import render


def findings_page(results: Results) -> str:
    """docs/findings.md, from `templates/findings.md.j2`: each finding from its file beside its check; each
    of the lab's findings files must be on the page, and the page names no finding that none declares."""
    page = "findings.md"
    data, shown = registered(), set()

    def show(name: str) -> str:
        if name not in data:
            raise ResultsError(
                f"{page}: findings.md.j2 shows the finding {name!r}, which no findings file declares"
            )
        shown.add(name)
        return render_finding(page, data[name], results)

    text = render("findings.md.j2", page, results, finding=show)
    if unshown := sorted(set(data) - shown):
        raise ResultsError(f"{page}: findings.md.j2 does not show the findings {unshown}")
    return text
