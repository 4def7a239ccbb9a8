"""docs/index.md, docs/sweeps.md and docs/adding-a-claim.md: prose, plus tables derived from the code."""

from __future__ import annotations

from pathlib import Path

from lab.core import registry
from lab.core.records import KINDS, PROBLEMS, VERDICTS, Record
from lab.docs.catalogue import Catalogue, catalogues
from lab.docs.claims_pages import outcome_summary
from lab.docs.markdown import anchor, page
from lab.docs.plugin_guide import plugin_sections
from lab.docs.results import VERIFY_COMMAND, Results, ResultsError
from lab.docs.templating import render
from lab.sweeps.sweep import SweepSpec, expand, load_spec
from lab.testing import DATABASE


def example_records() -> list[Record]:
    """A record of every kind, verdict and known-finding mark, then one per problem `verify` marks: the
    rows of the outcome table, each with the outcome and exit status `Record` gives it."""
    records = []
    for kind in KINDS:
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
        summary=outcome_summary(results.records),
        outcomes=example_records(),
        verify_command=VERIFY_COMMAND,
    )


def registered_tasks() -> list[tuple[str, str]]:
    """Every registered sweep task by name, with the first line of its docstring."""
    tasks = registry.declared("task")
    return [
        (name, ((tasks[name].run.__doc__ or "").strip().splitlines() or ["-"])[0]) for name in sorted(tasks)
    ]


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


def sweeps_page(results: Results, sweeps_folder: Path) -> str:
    """docs/sweeps.md; the table of example specs is computed from the files in `sweeps_folder`."""
    tasks, specs = registered_tasks(), example_specs(sweeps_folder)
    return render("sweeps.md.j2", "sweeps.md", results, tasks=tasks, specs=specs)


ADDING_TEXT = """\
A claim enters the lab as a check: a function that runs the experiment and returns result records.
It is worth something only if it can fail, so every check runs at least one premise record and at
least one negative control; a claim whose premises hold without a negative-control record reads
`uncontrolled` and fails `verify`. A claim can live in the lab (below) or in
[a package of your own](#plugin).

1. **Put the science in `lab/`.** A distribution, a model, a metric or an exact formula goes into the
   package of its paper (`lab/chen2022/`, `lab/makkuva2020/`, `lab/shazeer2017/`), hot loops into
   `lab/kernels/` with a NumPy twin. `lab` never imports `checks`.
2. **Write the check in `checks/<paper>/`.** A plain function builds each record with
   `lab.core.records.Record`, or `upper_bound_record` for a claim `measured ≤ bound` (it sets the
   verdict from the interval's upper end and computes the slack), `lower_bound_record` for a floor,
   `report_record` for a measurement no verdict can judge. Monte-Carlo quantities get an interval
   from `lab.core.stats` (`clopper_pearson`, `hoeffding`, `normal_mean`) with the sample size in
   `params`; exact comparisons state their round-off allowance in `params` too. Every record names a
   `key` (lowercase `[a-z0-9.-]`, unique within its claim and the same at every seed, e.g. `attained`,
   `control-sigmoid-gate`) by which the docs find it, and the `rule` its verdict follows from: the
   helpers set it (`upper`, `lower`, `strict-lower`, `report`); a `Record` built directly states it
   (`upper`, `strict-upper`, `lower`, `strict-lower`, `not-below`, `equal`, or `judged` with a
   `reason`), and a verdict its numbers contradict is refused. Keys of `extra` are identifiers.
   Signatures: [the API a check uses](#api).
3. **Register it under a stable name:**

   ```python
   import numpy as np

   from lab.core.records import Record
   from lab.core.registry import register


   @register("B15", name="checks.my_topic.verify_my_claim")
   def verify_my_claim(seed: int, tier: str) -> list[Record]:
       rng = np.random.default_rng(seed)
       n = 2_000 if tier == "quick" else 50_000
       return [my_claim(rng, n, kind="premise"), my_claim(rng, n, kind="negative-control")]
   ```

   The seed a check receives is derived from the base seed and this name alone, so moving or renaming
   the function never changes a number, and `--only` never changes another check's numbers. Never
   reuse a name for a different experiment; a new experiment gets a new name. A check that trains
   Chen et al.'s models or calls their expert kernels (`lab.kernels.routed`, `lab.kernels.structured`)
   is registered with `training_kernels=True`, so that `verify` has those kernels loaded or compiled
   in a child process first; a test runs every unmarked check on an empty kernel cache and fails if
   one of them compiles a kernel in `verify`'s own process.
4. **No import list to edit.** `pyproject.toml` names `checks` in the `moe_lab.plugins` entry-point
   group; the registry walks that package, so a module placed under `checks/` is found as it is.
5. **Test both sides** in `tests/checks/<paper>/`: a premise test and a negative-control test, with
   inputs from the public Hypothesis strategies in `checks/strategies/` where they fit. A
   counterexample Hypothesis ever found is pinned with `@example`; [a fuzz campaign](#fuzz)
   looks for more.
6. **Mark a known finding** (`finding="..."` on a premise record) only when the paper's claim does
   not reproduce and you can say why; the record then reads `finding`, and `FINDING NOW HOLDS` the
   day it stops reproducing.
7. **Document it, as data beside the check.** The claim's title, paper reference, statement, premise
   and negative controls, and the keys of its records in the order its verdict table shows them, go
   into `checks/<paper>/<module>.toml` (the module declares it:
   `DESCRIPTIONS = load_claims(Path(__file__).with_suffix(".toml"))`, from `lab.core.descriptions`);
   a new paper's key, citation and scope into `checks/<paper>/paper.toml`. Its claims render on
   `docs/claims/<paper>.md`.
8. **Write what it finds.** A finding (where the lab and the paper part ways) goes into
   `checks/<paper>/<module>.findings.toml`, declared as
   `FINDINGS = load_findings(Path(__file__).with_suffix(".findings.toml"))`: one table per finding,
   named by its anchor, with its `title`, its `evidence` (`[grade, what it rests on]` pairs; grades
   `proven`, `measured`, `conditional`, `numerical note`), its `text`, the `records` it names
   (`"<claim>/<key>"`), the other results files it reads (`sources`) and the lab's choices it
   depends on (`choices`). Evidence details and text are Jinja2 fragments that name values by claim
   and key, `{{{{ record("B2", "attained").measured | num }}}}`; a key the results lack stops
   `python -m lab docs` with one line naming the page, the claim and the key, and a value that may be
   absent is tested explicitly (`extra_or_none`, `sweep(...) is none`). The helpers are listed in
   `lab/docs/findings_data.py`. Name the finding's anchor where it belongs in
   `lab/docs/templates/findings.md.j2`.
9. **Render.** Refresh the committed records with `{verify}`, then run `python -m lab docs` and commit
   `docs/` with the code. `nox -s lint tests` must pass; the docs test fails while `docs/` is out of
   date."""


FUZZ_TEXT = """\
{anchor}
## A fuzz campaign overnight

The CI tier runs 25 derandomized examples per property test. A campaign spends hours of every core
on the same tests with random examples and keeps every failure it finds. From the repository's root:

```sh
nox -s fuzz -- --minutes 480 --workers 2          # 8 hours on 2 cores
nox -s fuzz -- --minutes 60 --examples 200 tests/checks -k b1_   # shorter, on some tests
```

Each worker is a pytest process (`tests/fuzz/campaign.py`) running its share of the tests Hypothesis
drives (`@given`; the others, and those marked slow, are deselected) under the `fuzz` profile, with
`--examples` examples per test (default 1000), round after round until `--minutes` have passed. When
the time is up a round skips the tests it has not begun; one still running `--grace` seconds later
(default 600) is stopped. Round r of worker w has the seed `--seed` + r × workers + w (default seed
0), and each test draws its examples from a seed derived from that one and its node id, so no two
rounds repeat each other. `--workers` defaults to the number of cores; give the campaign normal
priority (under `nice` it gets what the rest of the machine leaves). Other arguments go to pytest.

**What it leaves.** Hypothesis shrinks every failing example it finds and stores it in the
example database
`{database}/` (git-ignored, shared by all workers and rounds, and kept between campaigns: a
campaign first replays what earlier ones stored). Each round's pytest output is in
`reports/fuzz/worker<w>-round<r>.log`. At the end the campaign prints its summary (wall time, rounds
and their seeds, test functions, test runs, examples, every failing test with the commands below),
writes it to `reports/fuzz/summary.json`, and exits 1 if a test failed.

**Replaying what it found.** A plain `nox -s tests` or `pytest` runs the `ci` profile, which is
derandomized, and Hypothesis allows no database with that: it never reads the stored examples. The
`replay` profile runs each test's `@example`s and the stored examples only, reading the database
without writing it:

```sh
HYPOTHESIS_PROFILE=replay nox -s tests                   # the CI tier, replaying, not generating
HYPOTHESIS_PROFILE=replay pytest -p tests.fuzz.plugin -m "not slow" tests   # Hypothesis tests only
HYPOTHESIS_PROFILE=replay pytest 'tests/...::test_name'  # one test, as the summary names it
```

The `dev` and `fuzz` profiles also replay the database before they generate. For each failure the
summary also prints a `regenerate` command (`--hypothesis-seed` with the test's seed in that round,
which turns the database off) that reruns the round's search of that test.

**Answering a failure.** A bug in `lab/` is fixed with a regression test, a test whose premise was
wrong is corrected, and the failing example is pinned on its test with `@example(...)` and a one-line
comment saying why, so that the CI tier, which never reads the database, runs it on every commit."""


def adding_page() -> str:
    """docs/adding-a-claim.md: the lab's steps, a fuzz campaign, a plugin's steps, its errors, the API."""
    return page(
        "Adding a claim",
        ADDING_TEXT.format(verify=VERIFY_COMMAND),
        FUZZ_TEXT.format(anchor=anchor("fuzz"), database=DATABASE),
        *plugin_sections(),
    )
