"""docs/verification-power.md: the mutation score of the tests and checks per module group."""

from __future__ import annotations

import math

from lab.docs.markdown import anchor, code, fixed, page, pct, table
from lab.docs.results import MutationRun, Results

TARGET_RATE, TARGET_LOW = 0.90, 0.85

INTRO = """\
A check that cannot fail proves nothing; the negative controls show that each claim check *can*
fail. Mutation testing asks the wider question for the science code: if a line of the model, the
routing, the training step or a kernel were wrong, would a test or a check notice? A mutant is the
code with one small change (an operator swapped, a constant moved by one, a condition negated, a
decorator removed); it is *killed* when the tests that cover its module fail, and *survives* when
they all pass. The kill rate (killed ÷ (killed + survived)) measures the verification power of the
tests and checks, module group by module group.

**Tool.** [cosmic-ray](https://cosmic-ray.readthedocs.io) enumerates the mutants of each module
and applies them *on disk*, one at a time. That is what Numba needs: Numba compiles the kernels from
their source files, so a tool that swaps functions at run time (mutmut 3's trampolines) cannot
reach jitted code, while a mutant written to the file is what Numba compiles.

**Judging a mutant.** Each group's test selection (its mirrored tests under `tests/<pkg>/` first,
then the tests of the claim checks built on the group's modules; listed below and in
`tests/mutation/groups.toml`) runs as
`pytest -x -q -p no:cacheprovider --benchmark-disable -m "not slow"` and stops at the first failure.
A run over its time budget ({factor} × the selection's time on unmutated code + {slack} s) counts as
killed and is also reported as a timeout. Every judged run gets a fresh empty `NUMBA_CACHE_DIR`
and `PYTHONPYCACHEPREFIX`, so a compiled kernel of another mutant (or of the unmutated code) is
never served, and the mutants run in clean git worktrees of the commit under test, never in the
working tree. Before the mutants, the driver checks in each worktree that {isolation}.

**Sampling.** The full set of mutants is too large for two cores, so each group gets a uniform
random sample drawn with a fixed seed (seed {seed}; {sample}), and the kill rate
carries its exact {level} Clopper-Pearson interval. An *equivalent* mutant computes exactly what
the original computes (read and classified below, each with its reason); it leaves the denominator.
Every surviving non-equivalent mutant is answered: a new test that kills it, or the reason no claim
can observe it. *Before* is the sampled run on commit `{before}`; *after* reruns the
survivors{after_commit}."""


def _sizes(sizes: dict[str, int]) -> str:
    """'30 mutants per group' or '30 mutants per group, 24 for kernels'."""
    common = max(set(sizes.values()), key=list(sizes.values()).count)
    others = [f"{n} for {g}" for g, n in sizes.items() if n != common]
    return ", ".join([f"{common} mutants per group", *others])


def cut_text(summary: dict) -> str:
    """Which groups' samples were cut short during the run, and why ('' when none was)."""
    first, sizes = summary.get("first_draw") or {}, summary["sample_sizes"]
    cut = [f"{g} {first[g]} → {n}" for g, n in sizes.items() if g in first and n < first[g]]
    if not cut:
        return ""
    return (
        f"**The sample was cut short during the run** ({summary.get('cut_reason') or 'time'}): "
        f"{', '.join(cut)}. A cut keeps the first n mutants of the seeded draw (the draw of n is part of "
        "the draw of N for the same seed), so what was judged is still a seeded uniform sample; the "
        "intervals are correspondingly wide."
    )


def deselected_text(summary: dict) -> str:
    """The tests left out of every selection because they fail on the unmutated commit ('' when none)."""
    tests = summary.get("deselected") or []
    if not tests:
        return ""
    return (
        "Left out of every selection because they fail on the unmutated commit under test (a breakage "
        "to fix in the lab, not a mutant's kill): " + ", ".join(code(t) for t in tests) + "."
    )


def _isolation(summary: dict) -> str:
    facts = {
        "lab_imported_from_worktree": "`lab` and `checks` import from the worktree",
        "numba_cache_in_fresh_dir": "Numba's cache index is written to the fresh `NUMBA_CACHE_DIR`",
        "no_numba_cache_beside_sources": "no `*.nbi`/`*.nbc` file appears beside the sources",
    }
    checked = [text for key, text in facts.items() if summary.get("isolation", {}).get(key)]
    return ", ".join(checked) if checked else "imports and caches resolve inside the worktree"


def score_table(entries: list[dict], selection: dict) -> str:
    """One row per group: counts, the kill rate and its interval."""
    rows = [
        (
            e["group"],
            ", ".join(code(m.removeprefix("lab/")) for m in selection.get(e["group"], {}).get("modules", [])),
            e["mutants_total"],
            e["sampled"],
            e["killed"],
            e["timeout"],
            e["survived"],
            e["equivalent"],
            pct(e["kill_rate"]),
            f"[{pct(e['ci_low'])}, {pct(e['ci_high'])}]",
        )
        for e in entries
    ]
    head = (
        "group",
        "modules",
        "mutants",
        "sampled",
        "killed",
        "of which timeouts",
        "survived",
        "equivalent",
        "kill rate",
        "95 % CI",
    )
    return table(head, rows)


def target_text(entries: list[dict], level: float) -> str:
    """Whether every group meets the target, naming the groups that do not and why."""
    missed = [
        f"{e['group']} (kill rate {pct(e['kill_rate'])}, lower end {pct(e['ci_low'])}, "
        f"{e['killed'] + e['survived']} non-equivalent mutants)"
        for e in entries
        if e["kill_rate"] is None or e["kill_rate"] < TARGET_RATE or e["ci_low"] < TARGET_LOW
    ]
    # With n mutants all killed the lower end is ((1 − level)/2)^(1/n): the smallest n that can reach it.
    needed = math.ceil(math.log((1 - level) / 2) / math.log(TARGET_LOW))
    goal = (
        f"The target is a kill rate of at least {pct(TARGET_RATE, 0)} in every group with the lower end "
        f"of its interval at least {pct(TARGET_LOW, 0)}."
    )
    if not missed:
        return goal + " Every group meets it."
    return (
        goal + f" Not met by: {'; '.join(missed)}. Even with every mutant killed, the lower end reaches "
        f"{pct(TARGET_LOW, 0)} only from {needed} non-equivalent mutants per group on: the cut samples "
        "are too small to show the target, whatever their kill rate."
    )


def _where(m: dict) -> str:
    return f"{code(m['module'].removeprefix('lab/') + ':' + str(m['line']))} {m['operator'].split('/')[-1]}"


def _diff_block(m: dict) -> str:
    lines = [
        ln
        for ln in m.get("diff", "").splitlines()
        if ln.startswith(("-", "+")) and ln[:3] not in {"---", "+++"}
    ]
    return "\n".join(lines)


def survivors_section(mutants: list[dict]) -> str:
    """Every survivor of the sampled run that is not equivalent, with its change and its answer."""
    rows = [m for m in mutants if m["outcome_before"] == "survived" and m.get("answer") != "equivalent"]
    if not rows:
        return "No non-equivalent mutant survived the sampled run."
    parts = []
    for m in rows:
        answer = {
            "answered": f"killed after by {code(m.get('test', ''))}"
            if m["outcome_after"] != "survived"
            else (f"**still survives** despite {code(m.get('test', ''))}"),
            "unobservable": "left alive: no claim observes it",
            "unanswered": "**not answered yet**",
        }[m.get("answer", "unanswered")]
        parts.append(
            f"- **{m['group']}**, {_where(m)}: {answer}. {m.get('reason', '')}\n\n"
            f"  ```diff\n" + "\n".join(f"  {ln}" for ln in _diff_block(m).splitlines()) + "\n  ```"
        )
    return "\n".join(parts)


def _change(m: dict) -> str:
    """The mutated line as `before` → `after`."""
    lines = _diff_block(m).splitlines()
    old = [ln[1:].strip() for ln in lines if ln.startswith("-")]
    new = [ln[1:].strip() for ln in lines if ln.startswith("+")]
    return f"{code(' '.join(old))} → {code(' '.join(new))}"


def equivalents_section(mutants: list[dict]) -> str:
    """Every sampled mutant classified as equivalent, with the reason."""
    rows = [
        (m["group"], _where(m), _change(m), m.get("reason", ""))
        for m in mutants
        if m.get("answer") == "equivalent"
    ]
    if not rows:
        return "No sampled mutant was classified as equivalent."
    return table(("group", "mutant", "change", "why it is equivalent"), rows)


def cost_section(summary: dict) -> str:
    """What the session costs and how to run it on more cores."""
    selection = summary["selection"]
    rows = [
        (g, fixed(s["baseline_seconds"], 1), fixed(s["budget_seconds"], 0), len(s["tests"]))
        for g, s in selection.items()
    ]
    minutes = summary["session_wall_seconds"] / 60
    rerun = summary.get("rerun_wall_seconds")
    return "\n\n".join(
        [
            f"The sampled run took {fixed(minutes, 1)} min of wall time on {summary['workers']} workers "
            f"({summary['tool']} {summary['tool_version']}, {summary['date']}), "
            f"{fixed(summary['mean_seconds_per_mutant'], 1)} s per judged mutant on average (a killed "
            "mutant stops at the first failing test; a survivor runs the whole selection, with every "
            "kernel it touches compiled afresh)"
            + (f"; the rerun of the survivors took {fixed(rerun / 60, 1)} min." if rerun else "."),
            table(
                ("group", "selection on unmutated code (s)", "budget per mutant (s)", "test entries"), rows
            ),
            "```bash\n"
            "nox -s mutation -- --sample 30 --workers 2   # results/mutation/runs/before.json\n"
            "nox -s mutation -- rerun --from results/mutation/runs/before.json   # the survivors again\n"
            "nox -s mutation -- report                    # results/mutation/{summary,mutants}.json\n"
            "python -m lab docs                           # this page\n"
            "```",
            (
                "The groups sampled in another run come in through `nox -s mutation -- report "
                "--carry-before results/mutation/runs/kernels-before.json --carry-after "
                "results/mutation/runs/kernels-after.json`, which is how this page's summary was written. "
                if carried_text(summary)
                else ""
            )
            + "`--groups model,routing` restricts the run, `--seed` draws another sample and `--resume` "
            "judges what an interrupted run left pending. **More cores:** `--workers N` makes N git "
            "worktrees and runs one `cosmic-ray exec` in each on its share of every group's sample, so "
            "the time falls about as 1/N up to the number of cores (each judge runs pytest with one "
            "Numba and one BLAS thread). The driver runs on one machine only: it does not use "
            "cosmic-ray's HTTP distributor or the lab's Dask sweeps. The answers to survivors live in "
            "`tests/mutation/answers.toml`.",
        ]
    )


def carried_text(summary: dict) -> str:
    """The groups sampled on another commit than the run's, carried from another run ('' when none)."""
    own = summary["commit_before"]
    carried = {g: c for g, c in (summary.get("group_commits") or {}).items() if c != own}
    if not carried:
        return ""
    listed = ", ".join(f"`{g}` (commit `{c[:10]}`)" for g, c in carried.items())
    return (
        f"**Sampled in another run:** {listed}. These groups were not sampled on `{own[:10]}`; their "
        "scores, sample and survivors are those of that run."
    )


def mutation_sections(run: MutationRun) -> list[str]:
    """The page body for a committed mutation run."""
    summary = run.summary
    after = summary.get("commit_after")
    return [
        INTRO.format(
            factor=summary["budget_factor"],
            slack=fixed(summary["budget_slack_seconds"], 0),
            isolation=_isolation(summary),
            seed=summary["seed"],
            sample=_sizes(summary["sample_sizes"]),
            level=pct(summary.get("level", 0.95), 0),
            before=summary["commit_before"][:10],
            after_commit=(
                f" on commit `{after[:10]}`: the science of `{summary['commit_before'][:10]}` with the new "
                "tests"
                if after
                else " with the new tests"
            ),
        ),
        cut_text(summary),
        carried_text(summary),
        deselected_text(summary),
        anchor("scores") + "\n## Kill rate per module group, after the answers",
        score_table(summary["groups"], summary["selection"]),
        target_text(summary["groups"], summary.get("level", 0.95)),
        "### Before the answers (the sampled run)",
        score_table(summary["before"], summary["selection"]),
        anchor("survivors") + "\n## Survivors and their answers",
        survivors_section(run.mutants),
        anchor("equivalent") + "\n## Equivalent mutants",
        equivalents_section(run.mutants),
        anchor("cost") + "\n## Cost and how to run it",
        cost_section(summary),
        "### Test selection per group",
        table(
            ("group", "tests"),
            [(g, ", ".join(code(t) for t in s["tests"])) for g, s in summary["selection"].items()],
        ),
    ]


def mutation_page(results: Results) -> str:
    """docs/verification-power.md."""
    if results.mutation is None:
        body = [
            "**No mutation run committed yet** (`results/mutation/summary.json` is missing). Run "
            "`nox -s mutation`, answer the survivors, then `nox -s mutation -- report` and commit "
            "`results/mutation/`."
        ]
    else:
        body = mutation_sections(results.mutation)
    return page("Verification power: mutation score of the checks and tests", *body)
