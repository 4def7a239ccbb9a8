"""Re-certify stored replication runs after a change meant to move no number (`replicate --recertify N`).

The runs of the named targets that the run store (`OUT/runs.sqlite`) or the summaries in OUT hold
from other code (stale) are sampled, RECERTIFY_SEED fixed, and N of them run again under the current
code. Only if every rerun record equals the stored one in every field but the timing (`seconds`),
the fingerprint (`code`) and the versions, is every other stale run re-stamped with the current
fingerprint, in its store row and in each summary that holds it; otherwise nothing is re-stamped
and the runs that differ are named with the first field that differs.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lab.chen2022 import replicate as chen
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
        return (
            f"recertify: {len(self.sampled)} sampled rerun(s) identical under code {code}; re-stamped "
            f"{self.stale} stale runs ({self.store_rows} store rows, {self.summaries} summaries)"
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
) -> Recertified:
    """Rerun `sample` stale runs of `configs` stored under `out`; re-stamp all if they are identical.

    `prepare(sampled configs)` runs first: the CLI compiles their kernels in a child process there,
    so the reruns load them from the cache as every `replicate` run does (`lab.cli.kernel_cache`)."""
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
    prepare([stored[key][0] for key in found.sampled])
    for key in found.sampled:
        config, record = stored[key]
        rerun = chen.run_one(config, progress)
        why = first_difference(record, rerun)
        if why is not None:
            found.differ[key] = why
    if found.stale and not found.differ:
        found.store_rows = _restamp_rows(out, {key: row for key, row in rows.items() if key in stored}, code)
        found.summaries = _restamp_summaries(out, set(stored), code)
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
