"""docs/verification-power.md from `templates/verification-power.md.j2`: the mutation score of the tests
and checks per module group (`results/mutation/`)."""

from __future__ import annotations

import math
from typing import Any

from lab.docs.results import Results
from lab.docs.templating import render

TARGET_RATE, TARGET_LOW = 0.90, 0.85


def changed(mutant: dict[str, Any]) -> dict[str, Any]:
    """A mutant with its diff's changed lines, and the mutated line before (`old`) and after (`new`)."""
    lines = [
        ln
        for ln in mutant.get("diff", "").splitlines()
        if ln.startswith(("-", "+")) and ln[:3] not in {"---", "+++"}
    ]
    old = " ".join(ln[1:].strip() for ln in lines if ln.startswith("-"))
    new = " ".join(ln[1:].strip() for ln in lines if ln.startswith("+"))
    return mutant | {"changed": lines, "old": old, "new": new}


def mutation_page(results: Results) -> str:
    """docs/verification-power.md: the groups cut short or carried from another run, and those missing
    the target, with the fewest mutants whose all-killed Clopper-Pearson lower end reaches it."""
    page, template = "verification-power.md", "verification-power.md.j2"
    if results.mutation is None:
        return render(template, page, results, summary=None)
    summary, mutants = results.mutation
    sizes, first = summary["sample_sizes"], summary.get("first_draw") or {}
    own = summary["commit_before"]
    level = summary.get("level", 0.95)
    missed = [
        e
        for e in summary["groups"]
        if e["kill_rate"] is None or e["kill_rate"] < TARGET_RATE or e["ci_low"] < TARGET_LOW
    ]
    return render(
        template,
        page,
        results,
        summary=summary,
        mutants=[changed(m) for m in mutants],
        level=level,
        common_size=max(set(sizes.values()), key=list(sizes.values()).count),
        cut={g: (first[g], n) for g, n in sizes.items() if g in first and n < first[g]},
        carried={g: c for g, c in (summary.get("group_commits") or {}).items() if c != own},
        target_rate=TARGET_RATE,
        target_low=TARGET_LOW,
        missed=missed,
        # With n mutants all killed the lower end is ((1 − level)/2)^(1/n): the smallest n that can reach it.
        needed=math.ceil(math.log((1 - level) / 2) / math.log(TARGET_LOW)),
    )
