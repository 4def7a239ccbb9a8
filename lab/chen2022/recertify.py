"""Re-certify stored replication runs after a change meant to move no number (`replicate --recertify N`).

The runs of the named targets that the run store (`OUT/runs.sqlite`) or the summaries in OUT hold
from other code (stale) are sampled, RECERTIFY_SEED fixed, and N of them run again under the current
code. Only if every rerun record equals the stored one in every field but the timing (`seconds`),
the fingerprint (`code`) and the versions, is every other stale run re-stamped with the current
fingerprint, in its store row and in each summary that holds it; otherwise nothing is re-stamped
and the runs that differ are named with the first field that differs.

Runs made on another machine can differ from any rerun here in their last bits (and a training run
then in its accuracy), whatever the code. `--baseline DIR` re-certifies them across machines: DIR is
a checkout of the code that made the stale runs (its run code must be their stamp); the sampled runs
are run under that code in a child process and under the current code here, and only if every pair
is identical is every stale run re-stamped. The stored records are then not rerun; the line says how
many of the sampled reruns also equal them.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lab.chen2022 import replicate as chen
from lab.core.errors import InputError
from lab.core.io import write_text_atomic
from lab.sweeps.store import StoredTask, SweepStore

RECERTIFY_SEED = 0
UNTIMED = ("seconds", "code", "versions")  # what a rerun may change: timing, fingerprint, versions
_ABSENT = object()


@dataclass
class Recertified:
    """What `recertify` did: the sampled run keys, the ones that differ (key: why), what it re-stamped."""

    stale: int = 0
    sampled: list[str] = field(default_factory=list)
    differ: dict[str, str] = field(default_factory=dict)
    store_rows: int = 0
    summaries: int = 0
    baseline: str | None = None  # the baseline's run code, under `--baseline`
    as_stored: int = 0  # under `--baseline`: sampled reruns equal to the stored record too

    def line(self, code: str) -> str:
        """One line for the CLI."""
        if not self.stale:
            return f"recertify: every stored run is already current (code {code}); nothing to rerun"
        if self.differ:
            named = "; ".join(f"{key}: {why}" for key, why in self.differ.items())
            return (
                f"recertify: {len(self.differ)} of {len(self.sampled)} rerun(s) differ, nothing re-stamped "
                f"({self.stale} stale runs stay stale): {named}"
            )
        against = (
            f" and the baseline's {self.baseline} ({self.as_stored} equal to their stored record too)"
            if self.baseline
            else ""
        )
        return (
            f"recertify: {len(self.sampled)} sampled rerun(s) identical under code {code}{against}; "
            f"re-stamped {self.stale} stale runs ({self.store_rows} store rows, {self.summaries} summaries)"
        )


def first_difference(stored: dict, rerun: dict) -> str | None:
    """The first field (other than UNTIMED) where a rerun differs from its stored record, or None.

    A stored record may be a summary's slim one: its history holds only some series, compared as such."""
    rerun = json.loads(json.dumps(rerun))  # as stored: lists, not tuples
    extra = set(rerun) - set(stored) - {"history", "curves", *UNTIMED}
    if extra:
        return f"field {sorted(extra)[0]!r} is new"
    for key, value in stored.items():
        if key in UNTIMED:
            continue
        if key == "history" and isinstance(value, dict) and isinstance(rerun.get(key), dict):
            for series, values in value.items():
                if rerun["history"].get(series) != values:
                    return f"history {series!r}"
        elif rerun.get(key, _ABSENT) != value:
            return f"field {key!r} ({value!r} stored, {rerun.get(key, 'absent')!r} now)"
    return None


def recertify(
    configs: list[dict],
    out: Path,
    sample: int,
    progress: bool = False,
    prepare: Callable[[list[dict]], object] = lambda configs: None,
    baseline: Path | None = None,
) -> Recertified:
    """Rerun `sample` stale runs of `configs` stored under `out`; re-stamp all if they are identical.

    `prepare(sampled configs)` runs first: the CLI compiles their kernels in a child process there,
    so the reruns load them from the cache as every `replicate` run does (`lab.cli.kernel_cache`).
    With `baseline` (a checkout of the code that made the stale runs), a rerun is compared with the
    same run under that code instead of with the stored record (see the module's docstring)."""
    if not isinstance(sample, int) or sample < 1:
        raise ValueError(f"sample must be an integer >= 1, got {sample!r}")
    code = chen.run_code()
    rows = chen.stored_rows(configs, out)
    committed = chen.committed_runs(out)
    stored = {}
    for config in configs:
        key = chen.run_key(config)
        row = rows.get(key)
        record = chen.store_record(row) if row else chen.committed_record(config, committed, keep_stale=True)
        if record is not None and record.get("code") != code:
            stored[key] = (config, record)
    found = Recertified(stale=len(stored))
    found.sampled = random.Random(RECERTIFY_SEED).sample(sorted(stored), min(sample, len(stored)))
    references = {key: stored[key][1] for key in found.sampled}
    if baseline is not None and found.sampled:
        found.baseline = _baseline_code(baseline, {record.get("code") for _, record in stored.values()})
        reruns = baseline_runs(baseline, [stored[key][0] for key in found.sampled])
        reruns = dict(zip(found.sampled, reruns, strict=True))
        found.as_stored = sum(first_difference(references[key], r) is None for key, r in reruns.items())
        references = reruns  # a rerun here is held against the baseline's run, not the stored record
    prepare([stored[key][0] for key in found.sampled])
    for key in found.sampled:
        rerun = chen.run_one(stored[key][0], progress)
        why = first_difference(references[key], rerun)
        if why is not None:
            found.differ[key] = why
    if found.stale and not found.differ:
        found.store_rows = _restamp_rows(out, {key: row for key, row in rows.items() if key in stored}, code)
        found.summaries = _restamp_summaries(out, set(stored), code)
    return found


# the baseline's run module: lab.chen2022.runs, or lab.chen2022.replicate before the runner moved
_BASELINE_CHILD = """
import importlib, json, sys
for name in ("lab.chen2022.runs", "lab.chen2022.replicate"):
    try:
        runs = importlib.import_module(name)
        runs.run_one, runs.run_code
        break
    except (ImportError, AttributeError):
        continue
configs = json.load(sys.stdin)
records = [runs.run_one(c) for c in configs]
json.dump({"file": runs.__file__, "code": runs.run_code(), "records": records}, sys.stdout)
"""


def baseline_runs(baseline: Path, configs: list[dict]) -> list[dict]:
    """The run records of `configs` under the code checked out at `baseline`, in a child process."""
    return _baseline_child(baseline, configs)["records"]


def _baseline_code(baseline: Path, stamps: set) -> str:
    """The baseline's run code; InputError (bad input, exit 2) unless it is the stamp of every stale run."""
    code = _baseline_child(baseline, [])["code"]
    if stamps != {code}:
        carried = ", ".join(sorted(map(str, stamps)))
        raise InputError(f"--baseline {baseline}: its run code is {code}, but the stale runs carry {carried}")
    return code


def _baseline_child(baseline: Path, configs: list[dict]) -> dict:
    """What `_BASELINE_CHILD` prints when run on the checkout `baseline` (RuntimeError if it fails)."""
    root = Path(baseline).resolve()
    env = os.environ | {"PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", _BASELINE_CHILD],
        input=json.dumps(configs),
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"running the baseline {root} failed: {last}")
    found = json.loads(done.stdout)
    if not Path(found["file"]).resolve().is_relative_to(root):
        raise RuntimeError(f"the baseline child imported {found['file']}, not the checkout {root}")
    return found


def _restamp_rows(out: Path, rows: dict[str, StoredTask], code: str) -> int:
    """Give each stale store row of `rows` the current code, its result unchanged; the count."""
    if not rows:
        return 0
    with SweepStore(chen.store_path(out)) as store:
        for row in rows.values():
            outcome = {"status": row.status, "result": row.result_text, "error": row.error}
            store.put(
                row.key,
                row.task,
                row.params,
                row.lab_version,
                outcome | {"seconds": row.seconds, "worker": row.worker},
                code=code,
            )
    return len(rows)


def _restamp_summaries(out: Path, keys: set[str], code: str) -> int:
    """Give the runs `keys` the current code in each summary under `out` that holds them; the count."""
    count = 0
    for path in sorted(out.glob("*.json")):
        try:
            payload = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue  # named by `committed_runs`, which did not reuse its runs
        if not chen.is_summary(payload):
            continue
        configs = chen.summary_configs(payload["config"])
        runs = [
            run | {"code": code} if chen.run_key(config) in keys else run
            for run, config in zip(payload["runs"], configs, strict=True)
        ]
        if runs != payload["runs"]:
            write_text_atomic(path, chen.summary_text(payload | {"runs": runs}))
            count += 1
    return count
