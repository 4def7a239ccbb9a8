"""The pure parts of the mutation run: groups, stable mutant ids, seeded sampling, scores with CP bounds."""

from __future__ import annotations

import hashlib
import random
import tomllib
from dataclasses import dataclass
from pathlib import Path

from lab.docs.results import MUTATION_FIELDS

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
GROUPS_FILE = HERE / "groups.toml"
ANSWERS_FILE = HERE / "answers.toml"
LEVEL = 0.95
SUMMARY_FIELDS = MUTATION_FIELDS  # one group's entry in results/mutation/summary.json, as the docs read it
OUTCOMES = ("killed", "timeout", "survived", "incompetent")


@dataclass(frozen=True)
class Group:
    """One unit of reporting: the modules cosmic-ray mutates and the tests that judge the mutants."""

    name: str
    modules: tuple[str, ...]
    tests: tuple[str, ...]


def load_groups(path: Path = GROUPS_FILE) -> dict[str, Group]:
    """The groups of `groups.toml`, in file order; raises ValueError on a malformed entry."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    groups = {}
    for name, entry in data.get("groups", {}).items():
        modules, tests = entry.get("modules"), entry.get("tests")
        for key, value in (("modules", modules), ("tests", tests)):
            if not value or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{path}: group {name!r} needs a non-empty list of strings {key!r}")
        groups[name] = Group(name, tuple(modules), tuple(tests))
    if not groups:
        raise ValueError(f"{path}: no [groups.NAME] tables")
    return groups


def load_deselect(path: Path = GROUPS_FILE) -> tuple[str, ...]:
    """The test ids `groups.toml` leaves out of every selection (they fail on the unmutated commit)."""
    return tuple(tomllib.loads(path.read_text(encoding="utf-8")).get("deselect", []))


def missing_paths(groups: dict[str, Group], root: Path = ROOT) -> list[str]:
    """Every module or test file a group names that does not exist under `root` (node ids by their file)."""
    missing = []
    for group in groups.values():
        for entry in (*group.modules, *group.tests):
            if not (root / entry.split("::")[0]).exists():
                missing.append(f"{group.name}: {entry}")
    return missing


def mutant_id(module: str, operator: str, occurrence: int) -> str:
    """A mutant's stable name from cosmic-ray's (module, operator, occurrence); its job id is a uuid."""
    return f"{module}::{operator}#{occurrence}"


def group_seed(seed: int, group: str) -> int:
    """The seed of one group's draw, derived from the session seed and the group's name."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{group}".encode()).digest()[:8], "big")


def draw_sample(ids: list[str], size: int, seed: int, group: str) -> list[str]:
    """A uniform random sample without replacement of `size` of `ids`, the same for the same seed (sorted)."""
    population = sorted(set(ids))
    if len(population) != len(ids):
        raise ValueError("mutant ids must be unique")
    rng = random.Random(group_seed(seed, group))
    return sorted(rng.sample(population, min(size, len(population))))


def split(ids: list[str], parts: int) -> list[list[str]]:
    """`ids` dealt round-robin into `parts` lists (one per worker), each as long as the others or one less."""
    if parts < 1:
        raise ValueError(f"parts must be >= 1, got {parts}")
    return [ids[i::parts] for i in range(parts)]


def score(group: str, total: int, outcomes: dict[str, str], equivalent: set[str]) -> dict:
    """One group's summary entry from mutant id -> outcome; equivalents leave the kill rate's denominator.

    Timeouts count as killed (the mutant changed what the tests see: they did not finish) and are also
    reported on their own; kill_rate = killed / (killed + survived) with its Clopper-Pearson interval.
    """
    from lab.core.stats import clopper_pearson  # here, so the judge of a mutant never imports lab itself

    unknown = set(outcomes.values()) - set(OUTCOMES)
    if unknown:
        raise ValueError(f"unknown outcomes {sorted(unknown)}")
    equivalent = {m for m in equivalent if m in outcomes}
    killed_by_tool = [m for m, o in outcomes.items() if o in ("killed", "timeout")]
    if equivalent & set(killed_by_tool):
        raise ValueError(f"a killed mutant cannot be equivalent: {sorted(equivalent & set(killed_by_tool))}")
    killed = len(killed_by_tool)
    survived = sum(1 for m, o in outcomes.items() if o == "survived" and m not in equivalent)
    trials = killed + survived
    low, high = clopper_pearson(killed, trials, level=LEVEL) if trials else (0.0, 1.0)
    entry = {
        "group": group,
        "mutants_total": total,
        "sampled": len(outcomes),
        "killed": killed,
        "survived": survived,
        "equivalent": len(equivalent),
        "timeout": sum(1 for o in outcomes.values() if o == "timeout"),
        "kill_rate": killed / trials if trials else None,
        "ci_low": low,
        "ci_high": high,
    }
    return {key: entry[key] for key in SUMMARY_FIELDS}


def load_answers(path: Path = ANSWERS_FILE) -> dict[str, dict[str, dict]]:
    """`answers.toml`: {'equivalent': {id: entry}, 'answered': {id: entry}, 'unobservable': {id: entry}}."""
    data = tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    answers: dict[str, dict[str, dict]] = {}
    seen: set[str] = set()
    for kind in ("equivalent", "answered", "unobservable"):
        answers[kind] = {}
        for entry in data.get(kind, []):
            if not isinstance(entry.get("id"), str) or not isinstance(entry.get("reason"), str):
                raise ValueError(f"{path}: every [[{kind}]] entry needs text 'id' and 'reason'")
            if kind == "answered" and not isinstance(entry.get("test"), str):
                raise ValueError(f"{path}: answered {entry['id']} names no 'test'")
            if entry["id"] in seen:
                raise ValueError(f"{path}: {entry['id']} is answered twice")
            seen.add(entry["id"])
            answers[kind][entry["id"]] = entry
    return answers
