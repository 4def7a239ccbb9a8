"""The claims pages, one per paper, from templates (`templates/claims.md.j2`): descriptions from the
catalogue (TOML beside the checks), checks from the registry, verdicts from `results/verify.json`."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from lab.core import registry
from lab.core.descriptions import Claim, Paper
from lab.core.records import shown_slack
from lab.core.registry import Check, claim_order
from lab.docs.catalogue import Catalogue, package_of
from lab.docs.lab_choices import CHOICES
from lab.docs.markdown import code, num
from lab.docs.results import Results
from lab.docs.templating import ENVIRONMENT, render


@dataclass(frozen=True)
class ClaimView:
    """What a page shows of one claim: its description (None: none shipped), checks and records."""

    id: str
    about: Claim | None
    checks: list[Check]
    records: list[dict[str, Any]]  # every record of the claim, file order

    @property
    def errored(self) -> bool:
        """Whether a check of the claim raised or returned a malformed record (`verify` wrote `error`)."""
        return any(r["outcome"] == "error" for r in self.records)

    @property
    def listed(self) -> list[str]:
        """The record keys its description lists, which its table names first (a key the results lack
        stops the render): none when they hold no record of it; those they hold when a check errored."""
        keys = list(self.about.records) if self.about and self.records else []
        held = {r.get("key") for r in self.records}
        return [k for k in keys if k in held] if self.errored else keys


@dataclass(frozen=True)
class PluginSource:
    """A plugin's page: its package, the verify file its verdicts come from, and the commands that
    refresh them and render its pages (`python -m lab docs` alone never renders a plugin's)."""

    package: str
    verify_file: str
    verify_command: str
    docs_command: str


def plugin_checks() -> dict[str | None, list[Check]]:
    """Every registered check by the package it comes from, the lab's own under None (sorted as `verify`
    runs them): the lab's pages show only its own, so an installed plugin never changes them."""
    found: dict[str | None, list[Check]] = defaultdict(list)
    for c in sorted(registry.declared("check").values(), key=lambda c: (claim_order(c.claims[0]), c.name)):
        found[package_of(c)].append(c)
    return dict(found)


def check_choices(claim_id: str, records: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    """The values a training check's records state, each with its source (`lab/docs/lab_choices.toml`)."""
    rows = []
    for name, entry in CHOICES.get("check", {}).get(claim_id, {}).items():
        values = sorted({r["params"][name] for r in records if r["params"].get(name) is not None})
        if values:
            shown = ", ".join(num(v) if isinstance(v, float) else str(v) for v in values)
            source = entry["source"] if entry["source"] == "paper" else f"**{entry['source']}**"
            rows.append((code(name), shown, source, entry.get("where") or entry.get("why")))
    return rows


# the claims templates' own helpers (claim.md.j2 and the pages that include it)
ENVIRONMENT.globals["choices"] = check_choices
ENVIRONMENT.globals["slack"] = lambda r: num(shown_slack(r.get("slack"), r.get("bound")))


def claim_views(
    ids: set[str], results: Results, checks: list[Check], catalogue: Catalogue
) -> list[ClaimView]:
    """The claims `ids` in claim order, each with its description, checks and records."""
    return [
        ClaimView(
            c,
            catalogue.claims.get(c),
            [check for check in checks if c in check.claims],
            [r for r in results.records if r["claim"] == c],
        )
        for c in sorted(ids, key=claim_order)
    ]


def claims_page(
    paper: Paper,
    results: Results,
    checks: list[Check],
    catalogue: Catalogue,
    findings: list[str] = (),
    plugin: PluginSource | None = None,
) -> str:
    """docs/claims/<paper>.md: the claims the catalogue puts on `paper`, those of checks in its folder and
    those of records of either; then `findings`, rendered (a plugin's findings on its paper, `plugin`
    saying where its verdicts come from)."""
    ids = {c for c, about in catalogue.claims.items() if about.paper == paper.name}
    ids |= {c for check in checks for c in check.claims if catalogue.paper_of(c, check) == paper.name}
    claims = claim_views(ids, results, checks, catalogue)
    page = f"claims/{paper.name}.md"
    context = {"paper": paper, "claims": claims, "findings": findings, "plugin": plugin}
    return render("claims.md.j2", page, results, **context)


def plugin_page(
    plugin: PluginSource, results: Results, checks: list[Check], catalogue: Catalogue
) -> str | None:
    """docs/claims/<package>.md for the claims of an installed plugin on none of its papers (only with
    `python -m lab docs --plugins`); None when every claim is on one of its papers."""
    ids = {c for check in checks for c in check.claims if catalogue.paper_of(c, check) is None}
    ids |= {c for c, about in catalogue.claims.items() if about.paper not in catalogue.papers}
    if not ids:
        return None
    claims = claim_views(ids, results, checks, catalogue)
    page = f"claims/{plugin.package}.md"
    return render("plugin.md.j2", page, results, package=plugin.package, claims=claims, plugin=plugin)
