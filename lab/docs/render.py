"""Render every page of docs/ in memory, write them atomically, or compare them with the committed pages."""

from __future__ import annotations

from pathlib import Path

from lab.core.io import write_text_atomic
from lab.docs.catalogue import PAPERS
from lab.docs.claims_pages import claims_page, registered_checks
from lab.docs.findings_page import findings_page
from lab.docs.guides import adding_page, index_page, sweeps_page
from lab.docs.mutation_page import mutation_page
from lab.docs.performance_page import performance_page
from lab.docs.replications_page import check_targets, replications_page
from lab.docs.results import load_results


def render_all(results_folder: str | Path, sweeps_folder: str | Path) -> dict[str, str]:
    """Every page, by its path relative to the docs folder (sorted); raises `ResultsError` on bad input."""
    results = load_results(results_folder)
    check_targets(results)
    checks = registered_checks()
    pages = {
        "index.md": index_page(results),
        "findings.md": findings_page(results),
        "replications.md": replications_page(results),
        "performance.md": performance_page(results),
        "sweeps.md": sweeps_page(Path(sweeps_folder)),
        "adding-a-claim.md": adding_page(),
        "verification-power.md": mutation_page(results),
    }
    for key in PAPERS:
        pages[f"claims/{key}.md"] = claims_page(key, results, checks)
    return dict(sorted(pages.items()))


def write_pages(pages: dict[str, str], out: str | Path) -> list[Path]:
    """Write each page atomically under `out`; a page whose text is unchanged is not rewritten."""
    written = []
    for name, text in pages.items():
        path = Path(out) / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            write_text_atomic(path, text.encode("utf-8"))
            written.append(path)
    return written


def differences(pages: dict[str, str], out: str | Path) -> list[str]:
    """One line per page that differs from `out`, is missing there, or is a Markdown file not rendered."""
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
    return lines
