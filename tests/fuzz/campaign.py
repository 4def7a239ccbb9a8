"""`nox -s fuzz -- --minutes 30 --workers 2`: a timed Hypothesis campaign on every core, replayable.

    python -m tests.fuzz.campaign --minutes 480 --workers 2 --examples 1000 --seed 0 [PYTEST ARGS]

Each worker runs pytest on its share of the Hypothesis tests (`tests.fuzz.plugin` deals them out
by node id) under the `fuzz` profile, round after round until the time is up, every round with its
own seed (seed + round x workers + worker; each test's seed is drawn from it and its node id) and its
modules in a seeded order. All
workers share the example database `.hypothesis/examples`, where Hypothesis stores every failing
example it finds (shrunk); `HYPOTHESIS_PROFILE=replay pytest ...` reruns them afterwards. When the
time is up a round skips the tests it has not started; one still running after `--grace` seconds
more is stopped. The summary (wall time, rounds and their seeds, test functions, examples, failures
with the command that replays each) is printed and written to `--out` (reports/fuzz/summary.json).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATABASE = ".hypothesis/examples"  # the fuzz profile's database (lab.testing), relative to ROOT


def log(message: str) -> None:
    """One progress line on stderr, with the time."""
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


def round_seed(base: int, round_: int, worker: int, workers: int) -> int:
    """The Hypothesis seed of one worker's round: distinct for every (round, worker) of a campaign."""
    return base + round_ * workers + worker


@dataclass
class Round:
    worker: int
    number: int
    seed: int
    log: str
    stats: str
    seconds: float = 0.0
    exit_code: int | None = None
    stopped: bool = False  # still running `grace` seconds after the time was up
    tests: list[dict] = field(default_factory=list)


def pytest_command(args: argparse.Namespace, seed: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "tests.fuzz.plugin",
        "-p",
        "no:cacheprovider",
        "-m",
        "not slow",
        "-q",
        "-rf",
        *(args.pytest_args or ["tests"]),
    ]


def start(
    args: argparse.Namespace, worker: int, number: int, deadline: float
) -> tuple[Round, subprocess.Popen]:
    seed = round_seed(args.seed, number, worker, args.workers)
    stem = args.logs / f"worker{worker}-round{number}"
    run = Round(worker, number, seed, str(stem.with_suffix(".log")), str(stem.with_suffix(".jsonl")))
    env = {
        **os.environ,
        "HYPOTHESIS_PROFILE": "fuzz",
        "MOE_LAB_FUZZ_EXAMPLES": str(args.examples),
        "MOE_LAB_FUZZ_SHARD": f"{worker}/{args.workers}",
        "MOE_LAB_FUZZ_ORDER_SEED": str(seed),
        "MOE_LAB_FUZZ_SEED": str(seed),
        "MOE_LAB_FUZZ_DEADLINE": str(deadline),
        "MOE_LAB_FUZZ_STATS": run.stats,
    }
    Path(run.stats).unlink(missing_ok=True)
    with open(run.log, "w") as out:
        process = subprocess.Popen(
            pytest_command(args, seed), cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    log(f"worker {worker} round {number}: seed {seed}, log {run.log}")
    return run, process


def finish(run: Round, process: subprocess.Popen, started: float) -> Round:
    run.exit_code = process.returncode
    run.seconds = round(time.monotonic() - started, 1)
    if Path(run.stats).exists():
        run.tests = [json.loads(line) for line in Path(run.stats).read_text().splitlines() if line]
    failed = sorted({t["nodeid"] for t in run.tests if t.get("failed")})
    log(
        f"worker {run.worker} round {run.number} done in {run.seconds:.0f} s: "
        f"{sum(t.get('examples', 0) for t in run.tests)} examples, exit {run.exit_code}, "
        f"{len(failed)} failed" + (" (stopped at the time limit)" if run.stopped else "")
    )
    return run


def campaign(args: argparse.Namespace) -> list[Round]:
    """Every worker's rounds until the time is up; the rounds, in the order they ended."""
    args.logs.mkdir(parents=True, exist_ok=True)
    deadline = time.time() + 60 * args.minutes
    running: dict[int, tuple[Round, subprocess.Popen, float]] = {}
    rounds_started = dict.fromkeys(range(args.workers), 0)
    done: list[Round] = []
    while True:
        for worker in range(args.workers):
            if worker not in running and time.time() < deadline:
                run, process = start(args, worker, rounds_started[worker], deadline)
                rounds_started[worker] += 1
                running[worker] = (run, process, time.monotonic())
        if not running:
            return done
        time.sleep(1)
        for worker, (run, process, started) in list(running.items()):
            if process.poll() is None and time.time() > deadline + args.grace:
                run.stopped = True
                process.terminate()
                process.wait()
            if process.poll() is not None:
                done.append(finish(run, process, started))
                del running[worker]


def summarize(rounds: list[Round], args: argparse.Namespace, wall: float) -> dict:
    """The campaign's totals: rounds, test functions, examples, and every failure with its seed."""
    per_test: dict[str, dict] = {}
    failures: dict[str, dict] = {}
    for run in rounds:
        seeds = {t["nodeid"]: t.get("seed") for t in run.tests if "examples" in t}
        for test in run.tests:
            if "examples" in test:
                row = per_test.setdefault(test["nodeid"], {"examples": 0, "runs": 0})
                row["examples"] += test["examples"]
                row["runs"] += 1
            if test.get("failed"):
                failure = failures.setdefault(test["nodeid"], {"nodeid": test["nodeid"], "rounds": []})
                failure["rounds"].append({"round_seed": run.seed, "test_seed": seeds.get(test["nodeid"])})
    for failure in failures.values():
        failure["replay"] = f"HYPOTHESIS_PROFILE=replay python -m pytest '{failure['nodeid']}'"
        seed = failure["rounds"][0]["test_seed"]
        if seed is not None:  # the same generation again, without the database
            failure["regenerate"] = (
                f"HYPOTHESIS_PROFILE=fuzz MOE_LAB_FUZZ_EXAMPLES={args.examples} python -m pytest "
                f"'{failure['nodeid']}' --hypothesis-seed={seed}"
            )
    return {
        "started": args.started,
        "minutes": args.minutes,
        "wall_seconds": round(wall, 1),
        "workers": args.workers,
        "examples_per_test_per_round": args.examples,
        "base_seed": args.seed,
        "pytest_args": args.pytest_args or ["tests"],
        "database": DATABASE,
        "rounds": [
            {
                "worker": r.worker,
                "round": r.number,
                "seed": r.seed,
                "seconds": r.seconds,
                "exit_code": r.exit_code,
                "stopped_at_time_limit": r.stopped,
                "tests_run": sum(1 for t in r.tests if "examples" in t),
                "examples": sum(t.get("examples", 0) for t in r.tests),
                "log": r.log,
            }
            for r in rounds
        ],
        "test_runs": sum(row["runs"] for row in per_test.values()),
        "test_functions": len(per_test),
        "test_functions_unparametrized": len({nodeid.split("[")[0] for nodeid in per_test}),
        "examples": sum(row["examples"] for row in per_test.values()),
        "failures": sorted(failures.values(), key=lambda f: f["nodeid"]),
        "per_test": dict(sorted(per_test.items())),
    }


def report(summary: dict) -> str:
    lines = [
        f"fuzz campaign: {summary['wall_seconds'] / 60:.1f} min wall on {summary['workers']} workers, "
        f"{len(summary['rounds'])} rounds (seeds {sorted(r['seed'] for r in summary['rounds'])})",
        f"  {summary['test_functions']} test functions ({summary['test_functions_unparametrized']} "
        f"before parametrization), {summary['test_runs']} test runs, {summary['examples']} examples",
        f"  {len(summary['failures'])} failing test(s); failing examples are stored in {summary['database']}",
    ]
    for failure in summary["failures"]:
        rounds = [r["round_seed"] for r in failure["rounds"]]
        lines.append(f"  FAILED {failure['nodeid']} (in the rounds of seeds {rounds})")
        lines.append(f"    replay: {failure['replay']}")
        if "regenerate" in failure:
            lines.append(f"    regenerate: {failure['regenerate']}")
    return "\n".join(lines)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.fuzz.campaign", description=__doc__.split("\n")[0], allow_abbrev=False
    )
    parser.add_argument("--minutes", type=float, required=True, help="how long to keep starting rounds")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes (default: cores)")
    parser.add_argument("--examples", type=int, default=1000, help="max_examples per test per round")
    parser.add_argument("--seed", type=int, default=0, help="base seed; round r of worker w adds r*workers+w")
    parser.add_argument("--grace", type=float, default=600, help="seconds a test may overrun the time")
    parser.add_argument("--logs", type=Path, default=ROOT / "reports" / "fuzz", help="pytest logs per round")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "fuzz" / "summary.json")
    args, rest = parser.parse_known_args(argv)
    if args.minutes <= 0 or args.workers < 1 or args.examples < 1:
        parser.error("--minutes must be > 0, --workers and --examples >= 1")
    args.pytest_args = rest
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    args.started = datetime.now(UTC).isoformat(timespec="seconds")
    began = time.monotonic()
    rounds = campaign(args)
    summary = summarize(rounds, args, time.monotonic() - began)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=1) + "\n")
    print(report(summary))
    print(f"  summary: {args.out}")
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
