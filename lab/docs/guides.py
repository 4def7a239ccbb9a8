"""docs/index.md, docs/sweeps.md and docs/adding-a-claim.md from their templates (`lab/docs/templates/`),
with the values only the code knows: the outcome of every kind of record, the registered tasks and example
specs, the example plugin's files and the API a check uses."""

from __future__ import annotations

from pathlib import Path

from lab.core import registry
from lab.core.records import PROBLEMS, RECORD_KINDS, VERDICTS, Record
from lab.docs.catalogue import Catalogue, catalogues
from lab.docs.markdown import table
from lab.docs.results import Results, ResultsError
from lab.docs.signatures import api_entries
from lab.docs.templating import render
from lab.sweeps.sweep import SweepSpec, expand, load_spec
from lab.testing import DATABASE


def example_records() -> list[Record]:
    """A record of every kind, verdict and known-finding mark, then one per problem `verify` marks: the
    rows of the outcome table, each with the outcome and exit status `Record` gives it."""
    records = []
    for kind in RECORD_KINDS:
        rule = {"rule": "report"} if kind == "report" else {"rule": "judged", "reason": "an example"}
        for finding in (None, "known") if kind == "premise" else (None,):
            for verdict in ("not-applicable",) if kind == "report" else VERDICTS:
                records.append(
                    Record("X0", "", kind, {}, None, None, verdict, key="example", finding=finding, **rule)
                )
    judged = {"key": "example", "rule": "judged", "reason": "an example"}
    return records + [
        Record("X0", "", "premise", {}, None, None, "holds", problem=p, **judged) for p in PROBLEMS
    ]


def index_page(results: Results) -> str:
    """docs/index.md; the papers are those the lab's own TOML files describe."""
    own = catalogues().get(None, Catalogue({}, {}))
    return render(
        "index.md.j2",
        "index.md",
        results,
        papers=list(own.papers.values()),
        outcomes=example_records(),
    )


def registered_tasks() -> list[tuple[str, str]]:
    """Every registered sweep task by name, with the first line of its docstring."""
    tasks = registry.declared("task")
    return [(name, (tasks[name].run.__doc__ or "").strip().partition("\n")[0]) for name in sorted(tasks)]


def example_specs(folder: Path) -> list[tuple[str, SweepSpec, int]]:
    """Every spec in `folder`: its file name, the spec and the number of tasks `expand` makes of it."""
    if not folder.is_dir():
        raise ResultsError(f"{folder}: no such folder of sweep specs")
    specs = []
    for path in sorted(folder.glob("*.toml")):
        try:
            spec = load_spec(path)
            specs.append((path.name, spec, len(expand(spec))))
        except ValueError as exc:
            raise ResultsError(f"{path}: {exc}") from None
    return specs


def reproducing_page(results: Results) -> str:
    """docs/reproducing.md: how to re-check the evidence, and the committed comparisons (reproducing/)."""
    return render("reproducing.md.j2", "reproducing.md", results, table=table)


def sweeps_page(results: Results, sweeps_folder: Path) -> str:
    """docs/sweeps.md; the table of example specs is computed from the files in `sweeps_folder`."""
    tasks, specs = registered_tasks(), example_specs(sweeps_folder)
    return render("sweeps.md.j2", "sweeps.md", results, tasks=tasks, specs=specs)


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "switch-aux-loss"


def example(name: str) -> str:
    """The text of a file of the example plugin, which the guide quotes."""
    path = EXAMPLE / name
    if not path.is_file():
        raise ResultsError(f"{path}: missing (the guide quotes the example plugin's files)")
    return path.read_text(encoding="utf-8")


def entry_point_lines(pyproject: str) -> str:
    """The `moe_lab.plugins` table of a pyproject.toml: its header and the lines up to the next blank."""
    lines = pyproject.splitlines()
    start = lines.index('[project.entry-points."moe_lab.plugins"]')
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return "\n".join(lines[start:end])


def adding_page(results: Results) -> str:
    """docs/adding-a-claim.md: the lab's steps, a fuzz campaign, a plugin's steps, its errors, the API."""
    return render(
        "adding-a-claim.md.j2",
        "adding-a-claim.md",
        results,
        database=DATABASE,
        example=example,
        entry_points=entry_point_lines(example("pyproject.toml")),
        api=api_entries,
    )
