"""`nox -s mutation`: a seeded sample of cosmic-ray mutants per module group, judged in clean git worktrees.

    python -m tests.mutation.driver run --sample 30 --seed 2026 --workers 2 --label before
    python -m tests.mutation.driver rerun --from results/mutation/runs/before.json --label after
    python -m tests.mutation.driver report --before ... --after ...   # results/mutation/*.json

`run` checks out the commit (HEAD) in one git worktree per worker under the work folder (never the
working tree it is started from), checks that imports and Numba's cache resolve inside the worktree,
times each group's test selection on unmutated code (the baseline, which must pass), lets cosmic-ray
enumerate every mutant of each group (`cosmic-ray init`), draws a seeded uniform sample, marks every
other mutant skipped in the session database, and runs `cosmic-ray exec` in each worktree on its
share of the sample, the workers in parallel. Each mutant is judged by `tests.mutation.judge`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import tomllib
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

from tests.mutation import report as reporting
from tests.mutation.judge import judge_env
from tests.mutation.sampling import ROOT, draw_sample, load_groups, missing_paths, mutant_id, split

WORK = Path(os.environ.get("MOE_LAB_MUTATION_WORK", "/work/mutation"))
RUNS = ROOT / "results" / "mutation" / "runs"
FACTOR, SLACK = (
    3,
    60.0,
)  # a mutant's time budget: FACTOR x the baseline + SLACK s (compilation, a busy machine)


def log(message: str) -> None:
    """One progress line on stderr, with the time."""
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


def git(*args: str, cwd: Path = ROOT) -> str:
    """Output of one git command (raises on failure)."""
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def prepare_worktree(path: Path, commit: str) -> None:
    """A clean detached checkout of `commit` at `path` (a git worktree of this repository), no __pycache__."""
    if not (path / ".git").exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        git("worktree", "add", "--detach", str(path), commit)
    else:  # also undoes a mutant left on disk by a killed cosmic-ray
        git("checkout", "--force", "--detach", commit, cwd=path)
    if git("status", "--porcelain", "--untracked-files=no", cwd=path):
        raise RuntimeError(f"{path}: worktree is not clean after checkout")
    for cache in list(path.rglob("__pycache__")):
        shutil.rmtree(cache)


ISOLATION_PROBE = """
import os, pathlib, lab, checks
from lab.kernels._shared import stream_key
stream_key(1)
print(pathlib.Path(lab.__file__).resolve()); print(pathlib.Path(checks.__file__).resolve())
print(pathlib.Path(stream_key._cache._cache_path).resolve())
"""


def check_isolation(tree: Path, scratch: Path) -> dict:
    """Imports resolve to `tree`, Numba caches in the fresh NUMBA_CACHE_DIR, and no in-tree cache appears."""
    scratch.mkdir(parents=True, exist_ok=True)
    env = judge_env(tree, scratch)
    out = subprocess.run(
        [sys.executable, "-c", ISOLATION_PROBE], cwd=tree, env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    lab_file, checks_file, cache_path = (Path(p) for p in out)
    in_tree = sorted(str(p) for p in tree.rglob("*.nb[ic]"))
    facts = {
        "lab_imported_from_worktree": lab_file.is_relative_to(tree.resolve()),
        "checks_imported_from_worktree": checks_file.is_relative_to(tree.resolve()),
        "numba_cache_in_fresh_dir": cache_path.is_relative_to(Path(env["NUMBA_CACHE_DIR"]).resolve()),
        "numba_index_written_there": any(Path(env["NUMBA_CACHE_DIR"]).rglob("*.nbi")),
        "no_numba_cache_beside_sources": not in_tree,
    }
    shutil.rmtree(scratch)
    if not all(facts.values()):
        raise RuntimeError(f"{tree}: isolation check failed: {facts} {out} {in_tree[:3]}")
    return facts


def run_judge(tree: Path, group: str, budget: float) -> tuple[int, float, str]:
    """The judge on the unmutated `tree`: (exit status, seconds, its last line)."""
    command = [sys.executable, "-m", "tests.mutation.judge", group, "--budget", str(budget)]
    run = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False)
    last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr[-500:]
    seconds = float(re.search(r"seconds=([0-9.]+)", last).group(1)) if "seconds=" in last else math.nan
    return run.returncode, seconds, last


def baselines(trees: list[Path], groups: list[str]) -> dict[str, dict]:
    """Each group's selection on unmutated code, the workers in parallel; every one must pass."""
    found: dict[str, dict] = {}

    def worker(tree: Path, mine: list[str]) -> None:
        for group in mine:
            status, seconds, last = run_judge(tree, group, budget=3600.0)
            found[group] = {"seconds": round(seconds, 2), "passed": status == 0, "judge": last}
            log(f"baseline {group}: {'pass' if status == 0 else 'FAIL'} in {seconds:.1f} s")

    threads = [
        threading.Thread(target=worker, args=(t, groups[i :: len(trees)])) for i, t in enumerate(trees)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    failed = [g for g in groups if not found[g]["passed"]]
    if failed:
        raise RuntimeError(f"baseline fails for {failed}: {[found[g]['judge'] for g in failed]}")
    return {g: found[g] for g in groups}


def write_config(path: Path, modules: tuple[str, ...], group: str, budget: float) -> None:
    """A cosmic-ray config: the group's modules (relative: any worktree runs it), the judge, local runs."""
    lines = [
        "[cosmic-ray]",
        f"module-path = {json.dumps(list(modules))}",
        "excluded-modules = []",
        f'test-command = "{sys.executable} -m tests.mutation.judge {group} --budget {budget:.0f}"',
        f"timeout = {budget + 30:.1f}",
        "",
        "[cosmic-ray.distributor]",
        'name = "local"',
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")


def cosmic_ray(*args: str, cwd: Path) -> None:
    """One cosmic-ray command (the executable beside this Python), raising on failure."""
    exe = Path(sys.executable).parent / "cosmic-ray"
    run = subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise RuntimeError(f"cosmic-ray {' '.join(args)} failed: {run.stderr[-2000:]}")


def work_items(db_path: Path) -> dict[str, object]:
    """Mutant id -> cosmic-ray WorkItem of one session database."""
    from cosmic_ray.work_db import WorkDB, use_db

    with use_db(str(db_path), WorkDB.Mode.open) as db:
        items = {}
        for item in db.work_items:
            spec = item.mutations[0]
            items[mutant_id(spec.module_path.as_posix(), spec.operator_name, spec.occurrence)] = item
        return items


def keep_only(db_path: Path, keep: set[str]) -> None:
    """Mark every mutant not in `keep` as skipped, so `cosmic-ray exec` runs only `keep`."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    skip = [item.job_id for m, item in work_items(db_path).items() if m not in keep]
    with use_db(str(db_path), WorkDB.Mode.open) as db:
        db.set_multiple_results(skip, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))


def outcome_of(result) -> str:
    """killed / timeout / survived / incompetent from a cosmic-ray WorkResult and the judge's last line."""
    output = result.output or ""
    if result.worker_outcome.value != "normal" or result.test_outcome.value == "incompetent":
        return "incompetent"
    if result.test_outcome.value == "survived":
        return "survived"
    return "timeout" if output == "timeout" or "timeout=1" in output else "killed"


def collect(db_path: Path, group: str) -> list[dict]:
    """One record per judged (not skipped) mutant of a session database."""
    from cosmic_ray.work_db import WorkDB, use_db

    with use_db(str(db_path), WorkDB.Mode.open) as db:
        done = db.completed_work_items
    records = []
    for item, result in done:
        if result.worker_outcome.value == "skipped":
            continue
        spec = item.mutations[0]
        last = (result.output or "").strip().splitlines()[-1:] or [""]
        seconds = re.search(r"seconds=([0-9.]+)", last[0])
        failure = re.search(r"first_failure=(.*)$", last[0])
        records.append(
            {
                "id": mutant_id(spec.module_path.as_posix(), spec.operator_name, spec.occurrence),
                "group": group,
                "module": spec.module_path.as_posix(),
                "operator": spec.operator_name,
                "line": spec.start_pos[0],
                "outcome": outcome_of(result),
                "seconds": float(seconds.group(1)) if seconds else None,
                "first_failure": failure.group(1) if failure else "",
                "diff": "\n".join((result.diff or "").splitlines()[1:]),
            }
        )
    return sorted(records, key=lambda r: r["id"])


def sample_size(args: argparse.Namespace, group: str) -> int:
    """Mutants drawn for `group`: its `--sample-for GROUP=N`, else `--sample`."""
    sizes = dict(item.split("=") for item in args.sample_for)
    return int(sizes.get(group, args.sample))


def plan_group(group: str, modules, baseline: float, session: Path, trees: list[Path], args, chosen) -> dict:
    """Enumerate the group's mutants, draw the sample (or take `chosen`), one session database per worker."""
    budget = FACTOR * baseline + SLACK
    config = session / f"{group}.toml"
    write_config(config, modules, group, budget)
    db = session / f"{group}.sqlite"
    cosmic_ray("init", str(config), str(db), cwd=trees[0])
    ids = sorted(work_items(db))
    sample = chosen[group] if chosen else draw_sample(ids, sample_size(args, group), args.seed, group)
    if missing_ids := sorted(set(sample) - set(ids)):
        raise RuntimeError(f"{group}: mutants not found in this commit: {missing_ids}")
    for i, share in enumerate(split(sample, len(trees))):
        copy = session / f"{group}-w{i}.sqlite"
        shutil.copyfile(db, copy)
        keep_only(copy, set(share))
    log(f"{group}: {len(ids)} mutants, {len(sample)} drawn, budget {budget:.0f} s per mutant")
    return {"total": len(ids), "sample": sample, "budget": round(budget, 1)}


def execute(args: argparse.Namespace, chosen: dict[str, list[str]] | None) -> dict:
    """The whole run: worktrees, isolation check, baselines, init, sample (or `chosen`), exec, records."""
    started = time.time()
    groups = load_groups()
    if missing := missing_paths(groups):
        raise RuntimeError(f"groups.toml names missing files: {missing}")
    names = [g for g in (args.groups.split(",") if args.groups else groups) if not chosen or chosen.get(g)]
    commit = git("rev-parse", args.commit)
    session = WORK / "sessions" / args.label
    trees = [WORK / "worktrees" / f"w{i}" for i in range(args.workers)]
    meta_file = session / "meta.json"
    if args.resume and meta_file.exists():  # judge only what is still pending in the session databases
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        if meta["commit"] != commit or meta["workers"] != len(trees) or meta["names"] != names:
            raise RuntimeError(f"{session}: made for another commit, worker count or groups; drop --resume")
        base, plan, isolation = meta["base"], meta["plan"], meta["isolation"]
        log(f"resuming {session}")
    else:
        if session.exists():
            shutil.rmtree(session)
        session.mkdir(parents=True)
        for tree in trees:
            prepare_worktree(tree, commit)
            isolation = check_isolation(tree, WORK / "tmp" / f"probe-{tree.name}")
        log(f"{len(trees)} worktrees at {commit[:10]}; isolation {isolation}")
        base = baselines(trees, names)
        plan = {
            g: plan_group(g, groups[g].modules, base[g]["seconds"], session, trees, args, chosen)
            for g in names
        }
        meta = {"commit": commit, "workers": len(trees), "names": names, "base": base, "plan": plan}
        meta |= {"isolation": isolation, "label": args.label, "seed": args.seed, "started_at": started}
        meta["planned_at"] = time.time()
        meta_file.write_text(json.dumps(meta), encoding="utf-8")

    def worker(i: int) -> None:
        for group in names:
            db = session / f"{group}-w{i}.sqlite"
            try:
                cosmic_ray("exec", str(session / f"{group}.toml"), str(db), cwd=trees[i])
            except RuntimeError as exc:  # the other worker goes on; the records say what was judged
                log(f"worker {i}: {group} FAILED: {exc}")
            else:
                log(f"worker {i}: {group} done")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(trees))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return run_record(session)


def run_record(session: Path) -> dict:
    """The run file of a session: its plan (re-read, so a sample cut short on disk shows), every judgement."""
    meta = json.loads((session / "meta.json").read_text(encoding="utf-8"))
    names, workers, finished = meta["names"], meta["workers"], time.time()
    records = [r for g in names for i in range(workers) for r in collect(session / f"{g}-w{i}.sqlite", g)]
    records = [r for r in records if r["id"] in meta["plan"][r["group"]]["sample"]]  # a cut drops the rest
    return {
        "label": meta["label"],
        "commit": meta["commit"],
        "seed": meta["seed"],
        "sample_sizes": {g: len(meta["plan"][g]["sample"]) for g in names},
        # A draw cut short on disk keeps the first n of the seeded draw: draw_sample(ids, n) is a prefix.
        "first_draw": meta.get("drawn", {}),
        "cut_reason": meta.get("cut_reason", ""),
        "workers": workers,
        "tool": "cosmic-ray",
        "tool_version": version("cosmic-ray"),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "wall_seconds": round(finished - meta["started_at"], 1),
        "mutant_seconds": round(finished - meta["planned_at"], 1),
        "budget_factor": FACTOR,
        "budget_slack_seconds": SLACK,
        "isolation": meta["isolation"],
        "deselected": tomllib.loads(git("show", f"{meta['commit']}:tests/mutation/groups.toml")).get(
            "deselect", []
        ),
        "groups": {g: {"baseline_seconds": meta["base"][g]["seconds"], **meta["plan"][g]} for g in names},
        "mutants": sorted(records, key=lambda r: (r["group"], r["id"])),
    }


def main(argv: list[str] | None = None) -> int:
    """Command line: run, rerun, report (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("run", "rerun"):
        p = sub.add_parser(name)
        p.add_argument("--label", default=name if name == "rerun" else "before")
        p.add_argument("--workers", type=int, default=2, help="worktrees judging in parallel (one per core)")
        p.add_argument("--groups", default="", help="comma-separated group names (default: every group)")
        p.add_argument("--commit", default="HEAD", help="the commit the worktrees check out")
        p.add_argument("--resume", action="store_true", help="judge what an interrupted run left pending")
        p.add_argument(
            "--out", type=Path, default=None, help="run file (default results/mutation/runs/LABEL.json)"
        )
    sub.choices["run"].add_argument("--sample", type=int, default=30, help="mutants drawn per group")
    sub.choices["run"].add_argument("--sample-for", action="append", default=[], help="GROUP=N, repeatable")
    sub.choices["run"].add_argument("--seed", type=int, default=2026)
    sub.choices["rerun"].add_argument("--from", dest="source", type=Path, required=True)
    col = sub.add_parser("collect", help="the run file of a session as it stands (after a stop)")
    col.add_argument("--label", default="before")
    col.add_argument("--out", type=Path, default=None)
    rep = sub.add_parser("report")
    rep.add_argument("--before", type=Path, default=RUNS / "before.json")
    rep.add_argument("--after", type=Path, default=RUNS / "after.json")
    rep.add_argument("--out", type=Path, default=ROOT / "results" / "mutation")
    rep.add_argument(
        "--carry-before", type=Path, default=None, help="an earlier run: its groups not sampled now"
    )
    rep.add_argument("--carry-after", type=Path, default=None, help="that earlier run's rerun")
    args = parser.parse_args(argv)
    if args.command == "report":
        carried = (args.carry_before, args.carry_after) if args.carry_before else None
        after = args.after if args.after.exists() else None
        for path in reporting.write(args.before, after, args.out, carried):
            log(f"wrote {path}")
        return 0
    if args.command == "collect":
        out = args.out or RUNS / f"{args.label}.json"
        out.write_text(
            json.dumps(run_record(WORK / "sessions" / args.label), indent=1) + "\n", encoding="utf-8"
        )
        log(f"wrote {out}")
        return 0
    chosen = None
    if args.command == "rerun":
        previous = json.loads(args.source.read_text(encoding="utf-8"))
        chosen = reporting.to_rerun(previous)
        args.seed, args.sample, args.sample_for = previous["seed"], 0, []
    run = execute(args, chosen)
    out = args.out or RUNS / f"{args.label}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(run, indent=1) + "\n", encoding="utf-8")
    counts = {
        o: sum(1 for r in run["mutants"] if r["outcome"] == o) for o in ("killed", "timeout", "survived")
    }
    log(f"wrote {out}: {len(run['mutants'])} mutants {counts} in {run['wall_seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
