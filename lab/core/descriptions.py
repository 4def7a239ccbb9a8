"""Claims and papers described as data: TOML files beside the checks, declared with them.

A check module keeps what its claims say in a TOML file of its own name (`error_floor.py`,
`error_floor.toml`): a top-level `paper = "<key>"`, then one table per claim id with `title`,
`reference` (where the paper says it), `statement`, `premise`, `controls` (the negative controls),
optionally `also` (links) and `records` (the keys of the claim's records, in the order its verdict
table shows them). A paper's package keeps its description in `paper.toml`: `key`, `short`, `cite`,
`title`, `scope`, and optionally `[[substrate]]` tables (`id`, `object`, `tests`) for objects the unit
tests cover instead of a claim and `proof`, the file beside it listing a proof's steps (`load_proof`).
The module declares them as it declares its checks,

    DESCRIPTIONS = load_claims(Path(__file__).with_suffix(".toml"))
    PAPER = load_paper(Path(__file__).with_name("paper.toml"))

and the registry collects them from the `moe_lab.plugins` entry points (kinds "claim" and "paper"). A
description is part of its claim: a package describes only claims it checks (or none checks).

A check module's findings (where the lab and the paper part ways) sit beside it too, in
`<module>.findings.toml`: a top-level `paper`, then one table per finding, named by its anchor, with
`title`, `evidence` (a list of `[grade, what it rests on]`, each grade one of `GRADES`), `text` (Markdown,
a Jinja2 fragment; lines of a paragraph are joined) and the lists `records` (`"<claim>/<key>"`, the verify
records the text names), `sources` (the other files under results/ it reads) and `choices` (the lab's
choices it depends on). Declared as `FINDINGS = load_findings(Path(__file__).with_suffix(".findings.toml"))`.
The lab's findings on its own code, on no paper's claim (its kernels), say `paper = "lab"` (`LAB`).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.core.errors import InputError
from lab.core.registry import Declaration


class DescriptionError(InputError):
    """A description file is missing, not TOML, or a field is missing, unknown or of the wrong type."""


@dataclass(frozen=True)
class Substrate:
    """An object of a paper that unit tests cover rather than a claim of its own."""

    id: str
    object: str
    tests: str


@dataclass(frozen=True)
class ProofStep:
    """One numbered step of a proof: `lemma` is the paper's number, `kind` its environment (Lemma, ...)."""

    lemma: str
    kind: str
    section: str
    statement: str
    quantity: str
    stage: str
    category: str
    why: str
    checked_by: str | None = None  # the claim whose records check it


@dataclass(frozen=True)
class Proof:
    """A proof's steps in the paper's order, with the stages, sections and categories they take."""

    stages: tuple[str, ...]
    sections: tuple[str, ...]
    categories: tuple[tuple[str, str], ...]  # (category, what it means), in the file's order
    steps: tuple[ProofStep, ...]


@dataclass(frozen=True)
class Paper(Declaration):
    """A paper: `name` is its key (the page `docs/claims/<key>.md`)."""

    name: str
    short: str
    cite: str
    title: str
    scope: str
    substrate: tuple[Substrate, ...] = ()
    proof: Proof | None = None
    kind = "paper"


@dataclass(frozen=True)
class Claim(Declaration):
    """What a claim says, where its paper says it, and how the lab tests it: `name` is its id."""

    name: str
    paper: str
    title: str
    reference: str
    statement: str
    premise: str
    controls: str
    also: str = ""
    records: tuple[str, ...] = ()
    kind = "claim"

    @property
    def claims(self) -> tuple[str, ...]:
        """The claim it describes, for the registry's rule that one package owns a claim."""
        return (self.name,)


GRADES = ("proven", "measured", "conditional", "numerical note")
LAB = "lab"  # the paper of the lab's findings on its own code (its kernels), which no paper claims


@dataclass(frozen=True)
class Finding(Declaration):
    """A finding on a paper: `name` is its anchor; `evidence` and `text` are Jinja2 fragments."""

    name: str
    paper: str
    title: str
    evidence: tuple[tuple[str, str], ...]
    text: str
    records: tuple[tuple[str, str], ...] = ()
    sources: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    path: str = ""
    kind = "finding"


CLAIM_FIELDS = {"title", "reference", "statement", "premise", "controls"}
PAPER_FIELDS = {"key", "short", "cite", "title", "scope"}
STEP_FIELDS = {"lemma", "kind", "section", "statement", "quantity", "stage", "category", "why"}


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise DescriptionError(f"{path}: cannot be read ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise DescriptionError(f"{path}: not valid TOML ({exc})") from None


def _fields(path: Path, where: str, table: Any, required: set[str], optional: dict[str, type]) -> None:
    """Refuse a table that misses a required text field, has an unknown one, or one of the wrong type."""
    if not isinstance(table, dict):
        raise DescriptionError(f"{path}: {where} must be a table")
    missing = sorted(required - set(table))
    unknown = sorted(set(table) - required - set(optional))
    if missing or unknown:
        problem = f"missing {missing}" if missing else f"unknown {unknown}"
        raise DescriptionError(f"{path}: {where}: fields {problem}")
    for name, value in table.items():
        kind = optional.get(name, str)
        if not isinstance(value, kind):
            raise DescriptionError(f"{path}: {where}: field {name!r} must be {kind.__name__}")


def load_claims(path: Path) -> tuple[Claim, ...]:
    """The claims described in `path`, in the file's order."""
    data = _read(path)
    paper = data.pop("paper", None)
    if not isinstance(paper, str):
        raise DescriptionError(f'{path}: needs a top-level paper = "<key>" before its claims')
    claims = []
    for claim_id, table in data.items():
        _fields(path, f"claim {claim_id}", table, CLAIM_FIELDS, {"also": str, "records": list})
        records = tuple(table.pop("records", ()))
        if not all(isinstance(key, str) for key in records):
            raise DescriptionError(f"{path}: claim {claim_id}: field 'records' must list record keys")
        claims.append(Claim(claim_id, paper, **table, records=records))
    return tuple(claims)


def load_paper(path: Path) -> Paper:
    """The paper described in `path`."""
    data = _read(path)
    _fields(path, "the paper", data, PAPER_FIELDS, {"substrate": list, "proof": str})
    rows = data.pop("substrate", [])
    for i, row in enumerate(rows):
        _fields(path, f"substrate {i}", row, {"id", "object", "tests"}, {})
    proof = data.pop("proof", None)
    proof = load_proof(Path(path).with_name(proof)) if proof is not None else None
    return Paper(data.pop("key"), **data, substrate=tuple(Substrate(**row) for row in rows), proof=proof)


def load_proof(path: Path) -> Proof:
    """The proof steps listed in `path`: `stages`, `sections`, `[categories]`, then one `[[step]]` each."""
    data = _read(path)
    lists = {"stages": list, "sections": list, "categories": dict, "step": list}
    _fields(path, "the proof", data, set(lists), lists)
    stages = _strings(path, "the proof", "stages", data["stages"])
    sections = _strings(path, "the proof", "sections", data["sections"])
    _fields(path, "[categories]", data["categories"], set(), dict.fromkeys(data["categories"], str))
    steps = []
    for i, row in enumerate(data["step"]):
        where = f"step {row.get('lemma', i) if isinstance(row, dict) else i}"
        _fields(path, where, row, STEP_FIELDS, {"checked_by": str})
        for name, known in (("stage", stages), ("section", sections), ("category", data["categories"])):
            if row[name] not in known:
                raise DescriptionError(
                    f"{path}: {where}: {name} must be one of {list(known)}, got {row[name]!r}"
                )
        steps.append(ProofStep(**row))
    return Proof(stages, sections, tuple(data["categories"].items()), tuple(steps))


def _strings(path: Path, where: str, name: str, values: list) -> tuple[str, ...]:
    if not all(isinstance(value, str) for value in values):
        raise DescriptionError(f"{path}: {where}: field {name!r} must list strings")
    return tuple(values)


def _evidence(path: Path, where: str, parts: list) -> tuple[tuple[str, str], ...]:
    pairs = [
        tuple(p) for p in parts if isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
    ]
    if not parts or len(pairs) != len(parts):
        raise DescriptionError(f"{path}: {where}: field 'evidence' must list [grade, what it rests on] pairs")
    for grade, _ in pairs:
        if grade not in GRADES:
            raise DescriptionError(f"{path}: {where}: evidence grade must be one of {GRADES}, got {grade!r}")
    return tuple(pairs)


def load_findings(path: Path) -> tuple[Finding, ...]:
    """The findings described in `path`, in the file's order."""
    data = _read(path)
    paper = data.pop("paper", None)
    if not isinstance(paper, str):
        raise DescriptionError(f'{path}: needs a top-level paper = "<key>" before its findings')
    found = []
    lists = {"evidence": list, "records": list, "sources": list, "choices": list}
    for name, table in data.items():
        where = f"finding {name}"
        _fields(path, where, table, {"title", "evidence", "text"}, lists)
        records = _strings(path, where, "records", table.get("records", []))
        if not all(record.count("/") == 1 for record in records):
            raise DescriptionError(f"{path}: {where}: field 'records' must list \"<claim>/<key>\" names")
        found.append(
            Finding(
                name,
                paper,
                table["title"],
                _evidence(path, where, table["evidence"]),
                table["text"],
                tuple(tuple(record.split("/")) for record in records),
                _strings(path, where, "sources", table.get("sources", [])),
                _strings(path, where, "choices", table.get("choices", [])),
                str(path),
            )
        )
    return tuple(found)
