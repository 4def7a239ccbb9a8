"""The claims catalogue as the docs read it: the papers and claims each package describes.

The descriptions are data beside the checks (`checks/<paper>/<module>.toml`, `paper.toml`), declared with
them and collected by the registry (`lab.core.descriptions`); this module only sorts them by package, so
the lab's pages show the lab's own and a plugin's claims render on its own paper's page.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.core import registry
from lab.core.descriptions import Claim, Paper


@dataclass(frozen=True)
class Catalogue:
    """The papers (by key) and claims (by id) one package describes."""

    papers: dict[str, Paper]
    claims: dict[str, Claim]

    def paper_of(self, claim_id: str, check: registry.Check) -> str | None:
        """The paper of a claim: its description's, else the paper whose folder holds its check's module."""
        if claim_id in self.claims:
            return self.claims[claim_id].paper
        module = check.func.__module__
        return next((key for key in self.papers if f".{key}." in f".{module}."), None)


def package_of(declaration: registry.Declaration) -> str | None:
    """The package a declaration comes from; None for the lab's own."""
    return None if registry.is_own(declaration) else registry.origin(declaration).package


def catalogues() -> dict[str | None, Catalogue]:
    """What each installed package describes, the lab's own under None; a `Refusal` naming both packages
    when two describe a paper under one key (else both pages would silently go missing)."""
    found: dict[str | None, Catalogue] = {}
    registry.refuse("paper", registry.in_conflict("paper"))
    for kind in ("paper", "claim"):
        for name, item in sorted(registry.declared(kind).items()):
            entry = found.setdefault(package_of(item), Catalogue({}, {}))
            (entry.papers if kind == "paper" else entry.claims)[name] = item
    return found
