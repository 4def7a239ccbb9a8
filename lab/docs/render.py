"""Render every page of docs/ in memory, write them atomically, or compare them with the committed pages.

The figures the pages link are drawn with the sweep reports they show (`lab.sweeps.report.draw_figure`),
never here: the renderer asks only that each exists, never for its bytes.
"""

from __future__ import annotations

import re
from pathlib import Path

from lab.core.io import write_text_atomic
from lab.docs.catalogue import Catalogue, catalogues
from lab.docs.claims_pages import claims_page, plugin_checks, plugin_page
from lab.docs.findings_data import findings_page, plugin_findings
from lab.docs.guides import adding_page, index_page, sweeps_page
from lab.docs.mutation_page import mutation_page
from lab.docs.performance_page import performance_page
from lab.docs.replications_page import replications_page
from lab.docs.results import load_results

# a page's link to a figure in the results folder, e.g. ](../results/proof_chain/proof_chain.png)
FIGURE_LINK = re.compile(r"\]\((?:\.\./)+results/([^)\s]+\.png)\)")


class Pages(dict[str, str]):
    """Every page by its path relative to the docs folder, and the results folder its figures are in."""

    def __init__(self, pages: dict[str, str], results_folder: str | Path):
        super().__init__(sorted(pages.items()))
        self.results_folder = Path(results_folder)


def render_all(results_folder: str | Path, sweeps_folder: str | Path, plugins: bool = False) -> Pages:
    """Every page, by its path relative to the docs folder (sorted); raises `ResultsError` on bad input.

    `plugins`: also the pages of the installed plugins: one per paper a plugin describes, and
    `claims/<package>.md` for its claims on none of them."""
    results = load_results(results_folder)
    by_package = plugin_checks()
    described = catalogues()
    pages = {
        "index.md": index_page(results),
        "replications.md": replications_page(results),
        "performance.md": performance_page(results),
        "sweeps.md": sweeps_page(results, Path(sweeps_folder)),
        "adding-a-claim.md": adding_page(results),
        "verification-power.md": mutation_page(results),
    }
    packages = sorted({*by_package, *described} - {None}) if plugins else []
    for package in [None, *packages]:
        checks, catalogue = by_package.get(package, []), described.get(package, Catalogue({}, {}))
        found = plugin_findings(package, catalogue, results) if package is not None else {}
        for key, paper in catalogue.papers.items():
            pages[f"claims/{key}.md"] = claims_page(paper, results, checks, catalogue, found.get(key, []))
        if package is not None and (text := plugin_page(package, results, checks, catalogue)):
            pages[f"claims/{package}.md"] = text
    pages["findings.md"] = findings_page(results)  # after the claims pages, which name every record key
    return Pages(pages, results_folder)


def write_pages(pages: Pages, out: str | Path) -> list[Path]:
    """Write each page under `out` (unchanged text is not rewritten); the pages written."""
    written = []
    for name, text in pages.items():
        path = Path(out) / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            write_text_atomic(path, text.encode("utf-8"))
            written.append(path)
    return written


def differences(pages: Pages, out: str | Path) -> list[str]:
    """One line per page that differs from `out`, is missing there or is not rendered; per figure missing."""
    root = Path(out)
    lines = []
    for name, text in pages.items():
        path = root / name
        if not path.exists():
            lines.append(f"{path}: missing (run `python -m lab docs`)")
        elif path.read_text(encoding="utf-8") != text:
            lines.append(f"{path}: differs from a fresh render (run `python -m lab docs`)")
    if root.is_dir():
        for path in sorted(root.rglob("*.md")):
            if path.relative_to(root).as_posix() not in pages:
                lines.append(f"{path}: not produced by the renderer (remove it, or add it to lab/docs)")
    return lines + missing_figures(pages)


def missing_figures(pages: Pages) -> list[str]:
    """One line per figure a page links that the results folder lacks, naming the command that draws it
    (every linked figure is a sweep report's, <name>.png beside <name>.json)."""
    linked = sorted({name for text in pages.values() for name in FIGURE_LINK.findall(text)})
    return [
        f"{path}: missing figure (run `python -m lab sweep figure {path.with_suffix('.json')}` "
        "with matplotlib installed)"
        for path in (pages.results_folder / name for name in linked)
        if not path.is_file()
    ]
