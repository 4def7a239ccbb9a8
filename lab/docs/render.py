"""Render every page of docs/ in memory, write them atomically, or compare them with the committed pages.

The figures the pages link are drawn with the results they show (sweep reports, replication files),
never here: the renderer asks only that each exists, never for its bytes.
"""

from __future__ import annotations

import re
from pathlib import Path

from lab.core import registry
from lab.core.claim_figures import FOLDER as FIGURES_FOLDER
from lab.core.io import write_text_atomic
from lab.core.registry import Check, claim_order
from lab.docs.catalogue import Catalogue, catalogues
from lab.docs.claims_pages import PluginSource, claims_page, plugin_checks, plugin_page
from lab.docs.findings_data import findings_page, plugin_findings
from lab.docs.guides import adding_page, index_page, reproducing_page, sweeps_page
from lab.docs.mutation_page import mutation_page
from lab.docs.performance_page import performance_page
from lab.docs.replications_page import replications_page
from lab.docs.results import Results, load_results

# a page's link to a figure in the results folder, e.g. ](../results/proof_chain/proof_chain.png)
FIGURE_LINK = re.compile(r"\]\((?:\.\./)+results/([^)\s]+\.png)\)")


class Pages(dict[str, str]):
    """Every page by its path relative to the docs folder, and the results folder its figures are in."""

    def __init__(self, pages: dict[str, str], results_folder: str | Path):
        super().__init__(sorted(pages.items()))
        self.results_folder = Path(results_folder)


def render_all(
    results_folder: str | Path, sweeps_folder: str | Path, plugins: bool = False, out: str | Path = "DIR"
) -> Pages:
    """Every page, by its path relative to the docs folder (sorted); raises `ResultsError` on bad input,
    and a `Refusal` naming both packages when two declare a claim it shows (as `verify` does).

    `plugins`: also the pages of the installed plugins: one per paper a plugin describes, and
    `claims/<package>.md` for its claims on none of them; each names the command that renders it,
    into `out`."""
    by_package = plugin_checks()
    described = catalogues()
    packages = sorted({*by_package, *described} - {None}) if plugins else []
    shown = {c for p in [None, *packages] for check in by_package.get(p, []) for c in check.claims}
    shown |= {c for p in [None, *packages] for c in described.get(p, Catalogue({}, {})).claims}
    registry.refuse("claim", shown | (registry.known_claims() if plugins else set()))
    results = load_results(results_folder)
    pages = {
        "index.md": index_page(results),
        "replications.md": replications_page(results),
        "performance.md": performance_page(results),
        "sweeps.md": sweeps_page(results, Path(sweeps_folder)),
        "reproducing.md": reproducing_page(results),
        "adding-a-claim.md": adding_page(results),
        "verification-power.md": mutation_page(results),
    }
    folders = (results_folder, sweeps_folder, out)
    for package in [None, *packages]:
        checks, catalogue = by_package.get(package, []), described.get(package, Catalogue({}, {}))
        source = plugin_source(package, checks, catalogue, results, *folders) if package else None
        found = plugin_findings(package, catalogue, results) if package is not None else {}
        for key, paper in catalogue.papers.items():
            found_here = found.get(key, [])
            pages[f"claims/{key}.md"] = claims_page(paper, results, checks, catalogue, found_here, source)
        if source is not None and (text := plugin_page(source, results, checks, catalogue)):
            pages[f"claims/{package}.md"] = text
    pages["findings.md"] = findings_page(results)  # after the claims pages, which name every record key
    return Pages(pages, results_folder)


def plugin_source(
    package: str,
    checks: list[Check],
    catalogue: Catalogue,
    results: Results,
    results_folder: str | Path,
    sweeps_folder: str | Path,
    out: str | Path,
) -> PluginSource:
    """Where a plugin's verdicts come from and the commands that refresh its pages: `verify --only` its
    claims into the results folder, then `docs --plugins` with the folders this render was given."""
    ids = ",".join(
        sorted({c for check in checks for c in check.claims} | set(catalogue.claims), key=claim_order)
    )
    verify_file = (Path(results_folder) / "verify.json").as_posix()
    tier = results.verify["tier"]
    verify = f"python -m lab verify --only {ids} --seed {results.verify['seed']}"
    verify += (f" --tier {tier}" if tier != "quick" else "") + f" --json {verify_file}"
    options = [
        ("--results", results_folder, "results"),
        ("--sweeps", sweeps_folder, "sweeps"),
        ("--out", out, None),
    ]
    docs = "python -m lab docs --plugins" + "".join(
        f" {flag} {Path(value).as_posix()}" for flag, value, default in options if str(value) != default
    )
    return PluginSource(package, verify_file, verify, docs)


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


def linked_figures(pages: Pages) -> list[Path]:
    """Every figure a page links, as a path in the pages' results folder (sorted, once each)."""
    linked = sorted({name for text in pages.values() for name in FIGURE_LINK.findall(text)})
    return [pages.results_folder / name for name in linked]


BENCH_FIGURES = {
    "compile_profile": "kernels",
    "compile_profile_before": "kernels",
    "history": "bench-history",
}  # any other: a summary's


def figure_source(figure: Path) -> Path:
    """The committed JSON a figure is drawn from: a claim's figure (figures/NAME.png) from the verify run
    beside that folder, every other from the JSON of its own name beside it."""
    if figure.parent.name == FIGURES_FOLDER:
        return figure.parent.parent / "verify.json"
    return figure.with_suffix(".json")


def redraw_command(figure: Path) -> str:
    """The command that draws `figure` from its JSON (`figure_source`) alone: a claim's by `verify
    --figures-only`, a replication's (replicate/<target>.png, makkuva_fig1.png for makkuva-fig1) by
    `replicate --figure-only`, the benchmark summary's, history's and compile profile's (bench/) by their
    commands' `--figure`, every other a sweep report's by `sweep figure`."""
    if figure.parent.name == FIGURES_FOLDER:
        return f"python -m lab verify --figures-only {figure_source(figure)}"
    if figure.parent.name == "bench":
        command = BENCH_FIGURES.get(figure.stem, "bench-report")
        return f"python -m lab {command} --figure {figure.with_suffix('.json')}"
    if figure.parent.name == "replicate":
        target = figure.stem.replace("_", "-")
        return f"python -m lab replicate {target} --figure-only --out {figure.parent}"
    return f"python -m lab sweep figure {figure.with_suffix('.json')}"


def missing_figures(pages: Pages) -> list[str]:
    """One line per figure a page links that the results folder lacks, naming the command that draws it
    from its JSON (`redraw_command`)."""
    return [
        f"{path}: missing figure (run `{redraw_command(path)}` with matplotlib installed)"
        for path in linked_figures(pages)
        if not path.is_file()
    ]
