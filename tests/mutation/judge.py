"""cosmic-ray's test command: one group's test selection on the tree as it stands, with fresh empty caches.

Run from the root of a mutation worktree as `python -m tests.mutation.judge GROUP --budget SECONDS`.
Every call gets a new empty temporary folder for Numba's cache (`NUMBA_CACHE_DIR`, which also keeps
Numba away from the `__pycache__/*.nbi|*.nbc` files beside the sources) and for bytecode
(`PYTHONPYCACHEPREFIX`), so no compiled code of an earlier mutant or of the unmutated tree is ever
served. Exit 0 when the selection passes (the mutant survives), 1 otherwise; the last line says why:
`JUDGE group=... exit=... seconds=... timeout=0|1 first_failure=...`.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.mutation.sampling import load_deselect, load_groups

PYTEST_ARGS = ("-x", "-q", "-p", "no:cacheprovider", "--benchmark-disable", "-m", "not slow")
ONE_THREAD = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
TMP_ROOT = Path(os.environ.get("MOE_LAB_MUTATION_TMP", tempfile.gettempdir()))


def judge_env(root: Path, scratch: Path) -> dict[str, str]:
    """The environment of one judged run: fresh caches under `scratch`, this tree first, one thread."""
    env = dict(os.environ)
    env.update({name: "1" for name in ONE_THREAD})
    env.update(
        NUMBA_CACHE_DIR=str(scratch / "numba"),
        PYTHONPYCACHEPREFIX=str(scratch / "pyc"),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONPATH=str(root),
        HYPOTHESIS_PROFILE="ci",
    )
    return env


def first_failure(output: str) -> str:
    """The first `FAILED`/`ERROR` line of pytest's short summary, or ''."""
    match = re.search(r"^(FAILED|ERROR) (.*)$", output, flags=re.MULTILINE)
    return match.group(2)[:300] if match else ""


def judge(group: str, budget: float, root: Path) -> tuple[int, str]:
    """Run the group's selection under `root`; (exit status for cosmic-ray, report)."""
    config = root / "tests" / "mutation" / "groups.toml"
    tests = load_groups(config)[group].tests
    deselect = [arg for test in load_deselect(config) for arg in ("--deselect", test)]
    TMP_ROOT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="moe-mutant-", dir=TMP_ROOT) as scratch:
        command = [sys.executable, "-m", "pytest", *PYTEST_ARGS, *deselect, *tests]
        start = time.perf_counter()
        try:
            run = subprocess.run(
                command,
                cwd=root,
                env=judge_env(root, Path(scratch)),
                capture_output=True,
                text=True,
                timeout=budget,
                check=False,
            )
            status, output, timed_out = run.returncode, run.stdout + run.stderr, False
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
            status, output, timed_out = -9, out, True
        seconds = time.perf_counter() - start
    tail = "\n".join(output.strip().splitlines()[-25:])
    line = (
        f"JUDGE group={group} exit={status} seconds={seconds:.2f} timeout={int(timed_out)} "
        f"first_failure={first_failure(output)}"
    )
    return (0 if status == 0 else 1), f"{tail}\n{line}"


def main(argv: list[str] | None = None) -> int:
    """Command line: GROUP --budget SECONDS [--root PATH]."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("group")
    parser.add_argument(
        "--budget", type=float, required=True, help="seconds before the run counts as a timeout"
    )
    parser.add_argument("--root", type=Path, default=Path.cwd())
    args = parser.parse_args(argv)
    status, report = judge(args.group, args.budget, args.root.resolve())
    print(report, flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
