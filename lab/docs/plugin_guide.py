"""docs/adding-a-claim.md's sections for a package of one's own: the example plugin's entry point and
check quoted from its files, what each error means, the API a check uses."""

from __future__ import annotations

from pathlib import Path

from lab.docs.markdown import anchor, code, table
from lab.docs.results import ResultsError
from lab.docs.signatures import api_reference

PLUGIN_TEXT = """\
{anchor}
## A claim in a package of your own

An installed package adds claims without touching the lab. `examples/switch-aux-loss/` in the lab's
repository is one (claim SW1, Switch Transformer's auxiliary loss under balanced dispatch); CI
installs it and runs it (`nox -s plugin`), so every step below is tested.

1. **Advertise a module in the `moe_lab.plugins` entry-point group** of your `pyproject.toml` (the
   example's lines). The registry imports it, walks it whole if it is a package, and collects every
   check declared in it:

   ```toml
{entry_points}
   ```

2. **Pick claim ids and check names of your own.** A package declares a claim id by registering a
   check of it and may add checks only to its own claims. The lab's ids are a letter A-D and a
   number (A1, B14, C1, D6); take another prefix, as the example's SW1. Name checks after your
   package (`switch_aux_loss.balanced_dispatch`): the name fixes the seed.
3. **Write the check** as the lab's are, one premise and one negative control per claim at least.
   The example's whole check, with the search helper and `upper_bound_record`:

   ```python
{check}
   ```

   A claim that only measures returns `report_record`s. A claim whose premise cannot have a negative
   control is registered with `report_only=True` (its statement then says why); otherwise its
   premises read `uncontrolled`.
4. **Test it under the lab's Hypothesis profiles**: a `conftest.py` holding
   `from lab.testing import load_profile` and `load_profile()` runs your tests with `ci` (25
   derandomized examples, no database), or `dev`, `fuzz` and `replay` as `HYPOTHESIS_PROFILE`
   says ([a fuzz campaign](#fuzz)).
5. **Run it in your own environment**, where the lab and your package are installed:
   `pip install -e PATH`, then `python -m lab verify --only SW1` and `pytest` in your folder.
   `nox -s verify` builds an environment of the lab alone and never sees your package; from the
   lab's root, `nox -s plugin -- PATH IDS` builds one with both, verifies IDS (written to
   `reports/plugin-verify.json` and `.md`) and runs your tests, as CI does for the example.
6. **Describe your paper, claims and findings as data** beside the check, declared in the module
   (the example's `__init__.py`) as the lab's are: `PAPER = load_paper(...)` reads `paper.toml` (its
   `key` names the page, and must not be one the lab or another package uses: that is refused in one
   line naming both packages), `DESCRIPTIONS = load_claims(...)` the claims' file, and
   `FINDINGS = load_findings(...)` the findings' file. The example's claim and finding:

   ```toml
{claims}
   ```

   ```toml
{findings}
   ```

   A finding's `evidence` details and `text` are Jinja2 fragments: `record(claim, key)` is a record
   the finding lists in `records` (a key the results lack stops the render with one line naming the
   page, the claim and the key), and `| num`, `| measured`, `| interval`, `| pct` format numbers.
7. **Your paper gets a page of its own.** An installed plugin never changes the lab's `docs/` or its
   tests: the lab's pages show only its own checks, claims and findings. Copy the lab's `results/` to
   DIR, write your verdicts into it (`python -m lab verify --only SW1 --json DIR/verify.json`), and
   `python -m lab docs --results DIR --out OUT --plugins` renders the lab's pages and
   `claims/<your paper's key>.md` with your claims, checks, verdicts and findings (claims on no paper
   you describe go to `claims/<your package>.md`)."""

ERRORS_TEXT = """\
{anchor}
## What each error means

A check's failure is its claims' `error` outcome; every other check still runs, the reports are
written, and `verify` exits 1. A conflict between installed packages is refused before anything
runs, in one line naming both sides, by the commands that need it only: `verify --only C1` runs while
an unrelated plugin is refused.

{errors}"""

ERRORS = (
    (
        "check 'NAME' in MODULE (package P) raised TYPE: MESSAGE",
        "The check raised: its claims get an `error` record naming it (with `MOE_LAB_DEBUG=1` the "
        "traceback too, on stderr and in the record's `extra`).",
        1,
    ),
    (
        "check 'NAME' in MODULE (package P) returned ...",
        "A malformed record: none at all, something not a `Record`, a record of a claim the check is "
        "not registered for, or a field that no longer validates (NaN, an unknown kind).",
        1,
    ),
    (
        "(the outcome) uncontrolled",
        "The claim's premises hold but it has no negative-control record: add one, or register the "
        "check `report_only=True` and say why.",
        1,
    ),
    (
        "error: two checks are named 'NAME': MODULE (package P) and MODULE (package Q)",
        "Two declarations of one kind share a name (checks, commands, replication targets or sweep "
        "tasks): rename one. Refused where that name or its claims are needed.",
        2,
    ),
    (
        "error: two papers are named 'KEY': MODULE (package P) and MODULE (package Q)",
        "Two packages describe a paper under one key (a `paper.toml`'s `key`, e.g. the lab's `chen2022`): "
        "give yours a key of its own. Refused by `python -m lab docs`.",
        2,
    ),
    (
        "error: claim ID is declared by two packages: MODULE (package P) and MODULE (package Q) ...",
        "A package registered a check of a claim another package owns: choose an id of your own.",
        2,
    ),
    (
        "error: plugin 'NAME' (package P) cannot be imported: TYPE: MESSAGE",
        "Importing the plugin failed. Commands that need every plugin (`verify` without `--only`, an "
        "unknown claim id) stop; `--only` with known ids runs.",
        2,
    ),
    (
        "error: --only: unknown claim id(s) ...",
        "No installed check registers that id: is your package installed in this environment?",
        2,
    ),
    (
        "internal error (a bug, not your input): ...",
        "A bug of the lab's own machinery: rerun with `MOE_LAB_DEBUG=1` and report the traceback.",
        3,
    ),
)

API_TEXT = """\
{anchor}
## The API a check uses

Generated from the code: each signature as the source writes it, each docstring whole. The
strategies are Hypothesis strategies (`gate_vectors(M=4)` is one, not an array).

{api}"""

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "switch-aux-loss"


def _example(name: str) -> str:
    path = EXAMPLE / name
    if not path.is_file():
        raise ResultsError(f"{path}: missing (the guide quotes the example plugin's files)")
    return path.read_text(encoding="utf-8")


def _indented(text: str) -> str:
    return "\n".join(f"   {line}" if line else "" for line in text.strip("\n").splitlines())


def entry_point_lines(pyproject: str) -> str:
    """The `moe_lab.plugins` table of a pyproject.toml: its header and the lines up to the next blank."""
    lines = pyproject.splitlines()
    start = lines.index('[project.entry-points."moe_lab.plugins"]')
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return "\n".join(lines[start:end])


def plugin_sections() -> list[str]:
    """The plugin steps, the errors table and the API reference."""
    plugin = PLUGIN_TEXT.format(
        anchor=anchor("plugin"),
        entry_points=_indented(entry_point_lines(_example("pyproject.toml"))),
        check=_indented(_example("switch_aux_loss/check.py")),
        claims=_indented(_example("switch_aux_loss/check.toml")),
        findings=_indented(_example("switch_aux_loss/check.findings.toml")),
    )
    errors = table(("message", "what it means", "exit"), [(code(m), what, e) for m, what, e in ERRORS])
    return [
        plugin,
        ERRORS_TEXT.format(anchor=anchor("plugin-errors"), errors=errors),
        API_TEXT.format(anchor=anchor("api"), api=api_reference()),
    ]
