"""results/mutation/summary.json and mutants.json from a sampled run, its rerun and the survivors' answers."""

from __future__ import annotations

import json
from pathlib import Path

from lab.docs.results import MUTATION_FORMAT
from tests.mutation.sampling import LEVEL, load_answers, load_groups, score

FORMAT = MUTATION_FORMAT


def to_rerun(run: dict) -> dict[str, list[str]]:
    """Group -> the survivors of `run` not classified equivalent: the mutants the new tests must kill."""
    equivalent = load_answers()["equivalent"]
    chosen: dict[str, list[str]] = {}
    for record in run["mutants"]:
        if record["outcome"] == "survived" and record["id"] not in equivalent:
            chosen.setdefault(record["group"], []).append(record["id"])
    return chosen


def merged_outcomes(before: dict, after: dict | None) -> tuple[dict[str, str], list[str]]:
    """Mutant id -> outcome after the rerun (the before outcome where not rerun); ids whose diff changed."""
    outcomes = {r["id"]: r["outcome"] for r in before["mutants"]}
    changed = []
    if after:
        diffs = {r["id"]: r["diff"] for r in before["mutants"]}
        for record in after["mutants"]:
            outcomes[record["id"]] = record["outcome"]
            if record["diff"] != diffs.get(record["id"]):
                changed.append(record["id"])
    return outcomes, changed


def scores(run: dict, outcomes: dict[str, str], equivalent: set[str]) -> list[dict]:
    """One summary entry per group of `run`, in run order."""
    entries = []
    for group, facts in run["groups"].items():
        mine = {r["id"]: outcomes[r["id"]] for r in run["mutants"] if r["group"] == group}
        entries.append(score(group, facts["total"], mine, equivalent))
    return entries


def mutant_rows(before: dict, after: dict | None, answers: dict[str, dict[str, dict]]) -> list[dict]:
    """Every sampled mutant: where it is, what killed it, and for a survivor its diff and its answer."""
    rerun = {r["id"]: r for r in after["mutants"]} if after else {}
    rows = []
    for record in before["mutants"]:
        row = {k: record[k] for k in ("id", "group", "module", "line", "operator")}
        row["outcome_before"] = record["outcome"]
        row["outcome_after"] = rerun[record["id"]]["outcome"] if record["id"] in rerun else record["outcome"]
        killer = rerun[record["id"]] if record["id"] in rerun else record
        row["killed_by"] = killer["first_failure"] if row["outcome_after"] == "killed" else ""
        row["seconds"] = record["seconds"]
        if record["outcome"] == "survived":
            row["diff"] = record["diff"]
            for kind, entries in answers.items():
                if record["id"] in entries:
                    row["answer"] = kind
                    row["reason"] = entries[record["id"]]["reason"]
                    if "test" in entries[record["id"]]:
                        row["test"] = entries[record["id"]]["test"]
            row.setdefault("answer", "unanswered")
        rows.append(row)
    return rows


def group_commits(run: dict) -> dict[str, str]:
    """The commit each group of `run` was sampled on (one commit unless groups were carried into it)."""
    return dict(run.get("group_commits") or {g: run["commit"] for g in run["groups"]})


def carry(newer: dict, older: dict, groups: list[str]) -> dict:
    """`newer` plus `older`'s result for `groups` (groups `newer` did not sample), each keeping its commit.

    The carried groups are named in `group_commits`, so a score from another commit is never passed
    off as this run's; mutant ids of other groups are never mixed (ids repeat across commits)."""
    commits, older_commits = group_commits(newer), group_commits(older)
    kept = [g for g in groups if g in older["groups"]]
    commits.update({g: older_commits[g] for g in kept})
    sizes, draw = newer.get("sample_sizes") or {}, newer.get("first_draw") or {}
    return newer | {
        "groups": newer["groups"] | {g: older["groups"][g] for g in kept},
        "mutants": newer["mutants"] + [r for r in older["mutants"] if r["group"] in kept],
        "sample_sizes": sizes | {g: older.get("sample_sizes", {}).get(g) for g in kept},
        "first_draw": draw | {g: n for g, n in (older.get("first_draw") or {}).items() if g in kept},
        "group_commits": commits,
        "cut_reason": newer.get("cut_reason") or (older.get("cut_reason", "") if kept else ""),
    }


def summary(before: dict, after: dict | None) -> tuple[dict, list[dict]]:
    """The summary (after the fixes, and before them) and the per-mutant rows."""
    answers = load_answers()
    equivalent = set(answers["equivalent"])
    outcomes, changed = merged_outcomes(before, after)
    groups = load_groups()
    judged = [r["seconds"] for r in before["mutants"] if r["seconds"] is not None]
    rows = mutant_rows(before, after, answers)
    data = {
        "format": FORMAT,
        "tool": before["tool"],
        "tool_version": before["tool_version"],
        "seed": before["seed"],
        "sample_sizes": before["sample_sizes"],
        "first_draw": before.get("first_draw", {}),
        "cut_reason": before.get("cut_reason", ""),
        "level": LEVEL,
        "date": (after or before)["date"],
        "commit_before": before["commit"],
        "commit_after": after["commit"] if after else None,
        "group_commits": group_commits(before),
        "workers": before["workers"],
        "session_wall_seconds": before["wall_seconds"],
        "mutant_wall_seconds": before["mutant_seconds"],
        "mean_seconds_per_mutant": round(sum(judged) / len(judged), 2) if judged else None,
        "rerun_wall_seconds": after["wall_seconds"] if after else None,
        "budget_factor": before["budget_factor"],
        "budget_slack_seconds": before["budget_slack_seconds"],
        "groups": scores(before, outcomes, equivalent),
        "before": scores(before, {r["id"]: r["outcome"] for r in before["mutants"]}, equivalent),
        "selection": {
            g: {
                "modules": list(groups[g].modules),
                "tests": list(groups[g].tests),
                "baseline_seconds": facts["baseline_seconds"],
                "budget_seconds": facts["budget"],
            }
            for g, facts in before["groups"].items()
        },
        "isolation": before["isolation"],
        "deselected": before.get("deselected", []),
        "unanswered": [r["id"] for r in rows if r.get("answer") == "unanswered"],
        "answered_but_surviving": [
            r["id"] for r in rows if r.get("answer") == "answered" and r["outcome_after"] == "survived"
        ],
        "diff_changed_on_rerun": changed,
    }
    return data, rows


def write(
    before_path: Path, after_path: Path | None, out: Path, carried: tuple[Path, Path | None] | None = None
) -> list[Path]:
    """Write summary.json and mutants.json under `out`; returns their paths.

    `carried`, an earlier (before, after) pair, supplies the groups this run did not sample."""
    before = json.loads(before_path.read_text(encoding="utf-8"))
    after = json.loads(after_path.read_text(encoding="utf-8")) if after_path else None
    if carried is not None:
        old_before = json.loads(carried[0].read_text(encoding="utf-8"))
        old_after = json.loads(carried[1].read_text(encoding="utf-8")) if carried[1] else None
        kept = [g for g in old_before["groups"] if g not in before["groups"]]
        before = carry(before, old_before, kept)
        if old_after is not None:
            empty = old_after | {"groups": {}, "mutants": [], "group_commits": {}}
            after = carry(after or empty, old_after, kept)
    data, rows = summary(before, after)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "summary.json", out / "mutants.json"]
    paths[0].write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    paths[1].write_text(json.dumps({"format": FORMAT, "mutants": rows}, indent=1) + "\n", encoding="utf-8")
    return paths
