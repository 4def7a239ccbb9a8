"""The claims' figures (`registry.ClaimFigure`), drawn from the records of a verify run's file.

`python -m lab verify --json PATH` draws every registered figure whose claim has records in the run into
`figures/` beside PATH (`results/figures/` for the committed run), and `--figures-only PATH` draws them
again from the file alone; without matplotlib none is drawn and the hint says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lab.core import plots, registry

FOLDER = "figures"


def folder(verify_file: str | Path) -> Path:
    """Where the figures of a verify run's file go: `figures/` beside it."""
    return Path(verify_file).parent / FOLDER


def draw(records: list[dict[str, Any]], verify_file: str | Path) -> list[str]:
    """Each registered claim figure whose claim the records hold, drawn; one line per figure written (or
    the hint when matplotlib is absent)."""
    claims = {r["claim"] for r in records}
    figures = [f for _, f in sorted(registry.declared("figure").items()) if f.claim in claims]
    if figures and not plots.available():
        return [plots.PLOTS_HINT]
    return [f"wrote {f.draw(records, folder(verify_file) / f.name)}" for f in figures]
