"""Findings (`<module>.findings.toml`) rendered, and their page; fragment helpers: docs/adding-a-claim.md."""

from __future__ import annotations

import functools
import math
import re
from typing import Any

import jinja2

from lab.chen2022.data import setting
from lab.chen2022.sweep_studies import gd_rate_study, sigma0_rows
from lab.chen2022.tables import TARGETS
from lab.core import registry
from lab.core.descriptions import Finding
from lab.core.stats import DEFAULT_LEVEL
from lab.docs.catalogue import Catalogue, package_of
from lab.docs.evidence import (
    full_tier,
    measured,
    missing,
    record_rows,
    replicate_analysis,
    replication_evidence,
    verify_missing,
)
from lab.docs.markdown import evidence, finding, law, table
from lab.docs.replications_page import command
from lab.docs.results import ReplicationFile, Results, ResultsError, record_by_key
from lab.docs.templating import ENVIRONMENT, render
from lab.docs.timing_section import timing_values

ENVIRONMENT.filters["measured"] = measured  # the findings' own filter (the guide lists it)
KEEP_LINES = ("|", "```", "- ", "*")  # blocks whose line breaks are Markdown, not wrapping


def reflow(text: str) -> str:
    """Blocks separated by one blank line, empty ones dropped; a prose block's lines joined by spaces."""
    blocks = [b.strip() for b in re.split(r"\n[ \t]*\n", text)]
    joined = [
        b if b.startswith(KEEP_LINES) else " ".join(line.strip() for line in b.split("\n"))
        for b in blocks
        if b
    ]
    return "\n\n".join(joined)


def registered(package: str | None = None) -> dict[str, Finding]:
    """The findings one package declares (the lab's own under None), by anchor, in registry order."""
    found = registry.declared("finding")
    registry.refuse("finding", registry.in_conflict("finding"))  # two findings with one anchor
    return {name: f for name, f in found.items() if package_of(f) == package}


class _Reader:
    """The helpers a finding reads its evidence with; each refuses what its file does not list."""

    def __init__(self, page: str, item: Finding, results: Results):
        self.page, self.item, self.results = page, item, results

    def _unlisted(self, what: str) -> ResultsError:
        return ResultsError(
            f"{self.page}: finding {self.item.name} reads {what}, which {self.item.path} does not list"
        )

    def record(self, claim: str, key: str) -> dict[str, Any]:
        if (claim, key) not in self.item.records:
            raise self._unlisted(f"the record {claim}/{key}")
        return record_by_key(self.results, claim, key, self.page)

    def records(self, claim: str, keys: list[str]) -> list[dict[str, Any]]:
        return [self.record(claim, key) for key in keys]

    def extra(self, r: dict[str, Any], *path: str) -> Any:
        value = self.extra_or_none(r, *path)
        if value is None:
            where = ".".join(path)
            raise ResultsError(
                f"{self.page}: verify results: record {r['claim']}/{r.get('key')} has no extra {where}"
            )
        return value

    @staticmethod
    def extra_or_none(r: dict[str, Any], *path: str) -> Any:
        value: Any = r.get("extra")
        for key in path:
            if not isinstance(value, dict) or key not in value:
                return None
            value = value[key]
        return value

    def _listed(self, source: str) -> None:
        if source not in self.item.sources:
            raise self._unlisted(f"results/{source}")

    def sweep(self, name: str) -> dict[str, Any] | None:
        self._listed(f"sweeps/{name}.json")
        return self.results.sweeps.get(name)

    def proof_chain(self) -> dict[str, Any] | None:
        self._listed("proof_chain/proof_chain.json")
        return self.results.proof_chain

    def bench(self) -> dict[str, Any] | None:
        self._listed("bench/summary.json")
        return self.results.bench.get("summary.json")

    def bench_target(self, name: str) -> dict[str, Any]:
        """The benchmark summary's (first) judgment of the target `name`, as its writer stored it."""
        if found := [t for t in (self.bench() or {"targets": []})["targets"] if t["name"] == name]:
            return found[0]
        raise ResultsError(
            f"{self.page}: finding {self.item.name}: results/bench/summary.json judges no target {name!r}"
        )

    def timings(self) -> dict[str, Any]:
        self._listed("timing/*.json")
        return timing_values(self.results)

    def replication(self, target: str, variant: str = "paper") -> ReplicationFile | None:
        self._listed(f"replicate/{target}")
        return full_tier(self.results, target, variant)

    def replication_cells(self, target: str, variant: str = "paper", model: str | None = None) -> str:
        self._listed(f"replicate/{target}")
        return replication_evidence(self.results, target, variant, model, command(target, variant))

    def replicate_analysis(self) -> dict[str, Any]:
        self._listed("replicate/analysis.json")
        return replicate_analysis(self.results)

    def context(self) -> dict[str, Any]:
        return {
            "record": self.record,
            "records": self.records,
            "extra": self.extra,
            "extra_or_none": self.extra_or_none,
            "sweep": self.sweep,
            "proof_chain": self.proof_chain,
            "bench": self.bench,
            "bench_target": self.bench_target,
            "timings": self.timings,
            "replication": self.replication,
            "replication_cells": self.replication_cells,
            "statistic": lambda rep, name: rep.payload[name],
            "replicate_analysis": self.replicate_analysis,
            "gd_rate_study": gd_rate_study,
            "sigma0_rows": sigma0_rows,
            "record_table": record_rows,
            "missing": missing,
            "replicate_command": command,
            "math": math,
            "table": table,
            "paper_accuracy": paper_accuracy,
            "setting_law": setting_law,
            "default_level": DEFAULT_LEVEL,
            "verify_missing": verify_missing,
        }


def setting_law(number: int) -> str:
    """The data law of App. A.2's setting `number` as the lab defines it (`lab.chen2022.data.SETTINGS`)."""
    config = setting(number)
    ranges = {
        name: [getattr(config, name).low, getattr(config, name).high] for name in ("alpha", "gamma", "beta")
    }
    return law({**ranges, "sigma_p": config.sigma_p})


def paper_accuracy(target: str, setting: int, **params: Any) -> float:
    """The paper's accuracy in the one cell of `target` whose parameters include `params`, at `setting`."""
    (cell,) = [c for c in TARGETS[target] if params.items() <= c.params.items()]
    return cell.paper[setting][0]


def errored_claims(item: Finding, results: Results) -> list[str]:
    """The claims a finding rests on whose check errored (an `error` record) and left out a record it
    lists, in claim order."""
    held = {(r["claim"], r.get("key")) for r in results.records}
    errored = {r["claim"] for r in results.records if r["outcome"] == "error"}
    lacking = {claim for claim, key in item.records if claim in errored and (claim, key) not in held}
    return sorted(lacking, key=registry.claim_order)


def render_finding(page: str, item: Finding, results: Results) -> str:
    """One finding: anchor, `###` title, Evidence line (its details rendered), then its text; or, when the
    results hold no record at all of a claim it rests on (a claim they never ran), its grades and the
    command that makes the records; or, when a check of such a claim errored, its grades and that."""
    ran = {r["claim"] for r in results.records}
    if absent := sorted({claim for claim, _ in item.records} - ran, key=registry.claim_order):
        claims = ",".join(absent)
        grade = evidence(*((g, f"the {claims} records, not in these results yet") for g, _ in item.evidence))
        return finding(item.name, item.title, grade, verify_missing(claims))
    if errored := errored_claims(item, results):
        claims = ",".join(errored)
        grade = evidence(*((g, f"the {claims} records: a check errored") for g, _ in item.evidence))
        said = f"*A check of {claims} errored in these results*, so the records this finding rests on are "
        said += f"missing; its claims' pages say what went wrong. `python -m lab verify --only {claims}`"
        return finding(item.name, item.title, grade, said + " runs it again.")
    variables = _Reader(page, item, results).context()

    def fragment(source: str) -> str:
        try:
            return reflow(_compiled(source).render(**variables))
        except jinja2.TemplateError as exc:
            raise ResultsError(f"{page}: finding {item.name} ({item.path}): {exc}") from None

    details = ((grade, fragment(detail)) for grade, detail in item.evidence)
    grade = evidence(*((grade, detail) for grade, detail in details if detail))  # an empty one is left out
    return finding(item.name, item.title, grade, fragment(item.text))


@functools.cache
def _compiled(source: str) -> jinja2.Template:
    """A finding's Jinja text compiled once per process (compiling took most of a render)."""
    return ENVIRONMENT.from_string(source)


def plugin_findings(package: str, catalogue: Catalogue, results: Results) -> dict[str, list[str]]:
    """An installed plugin's findings, rendered, by the paper whose page shows them: each must be on a paper
    the package describes (the lab's pages never show a plugin's)."""
    found: dict[str, list[str]] = {}
    for item in registered(package).values():
        if item.paper not in catalogue.papers:
            raise ResultsError(
                f"{item.path}: finding {item.name} is on paper {item.paper!r}, which package {package} "
                "does not describe (a plugin's findings render on its own paper's page)"
            )
        page = f"claims/{item.paper}.md"
        found.setdefault(item.paper, []).append(render_finding(page, item, results))
    return found


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
