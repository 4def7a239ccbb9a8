"""Re-certify stored replication runs after a change meant to move no number (`replicate --recertify N`).

The runs of the named targets that the run store (`OUT/runs.sqlite`) or the summaries in OUT hold
from other code (stale) are sampled, RECERTIFY_SEED fixed: N of each group of stale runs that share a
code stamp, a model, an activation and a filter count (`_sample`) run again under the current code, so
every old code and every kernel path a re-stamp covers is rerun (two random runs out of 180 once missed
the activations whose bits had moved). Only if every rerun record equals the stored one in every
field but the timing (`seconds`), the fingerprint (`code`) and the versions, is every other stale run
re-stamped with the current fingerprint, in its store row and in each summary that holds it;
otherwise nothing is re-stamped and the runs that differ are named with the first field that differs.

Runs made on another machine can differ from any rerun here in their last bits (and a training run
then in its accuracy), whatever the code. `--baseline DIR` re-certifies them across machines: DIR is
a checkout of the code that made the stale runs (its run code must be their stamp); the sampled runs
are run under that code in a child process and under the current code here, and only if every pair
is identical is every stale run re-stamped. The stored records are then not rerun; the line says how
many of the sampled reruns also equal them.

`replicate TARGET --check K` (`check_sample`, then `check`) asks the other question, whether this
machine reproduces the committed evidence: it reruns the first K seeds of each cell and setting of the
committed full-tier float64 summary OUT/TARGET.json (`_reference-code` for that variant) under the
current code, reading the summary and writing nothing (neither the run store nor any summary), and
sets each rerun beside its committed record: final test accuracy, last recorded training loss (the
summaries keep it for the linear single CNNs only), step count, and whether the record is identical
(`first_difference`). A run is beyond its cell's seed spread when |Δ accuracy| > 1 sd of the cell's
committed seeds (the sample sd of the finite accuracies, `cell_statistics`); a cell with one committed
seed has no spread, so there any change of accuracy counts as beyond it.
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lab.chen2022 import replicate as chen
from lab.chen2022.replicate_report import cell_statistics, in_cell
from lab.chen2022.tables import TARGETS
from lab.core.errors import InputError
from lab.core.io import write_text_atomic
from lab.core.store import StoredTask, SweepStore

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
    """Rerun `sample` stale runs of each group of `configs` stored under `out` (`_sample`); re-stamp all if
    they are identical.

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
    found.sampled = _sample(stored, sample)
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


def _sample(stored: dict[str, tuple[dict, dict]], sample: int) -> list[str]:
    """`sample` keys (fewer where a group holds fewer) of each group of stale runs that share a code stamp,
    a model, an activation and a filter count, RECERTIFY_SEED fixed; groups in sorted order."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for key, (config, record) in sorted(stored.items()):
        group = (
            str(record.get("code")),
            config["model"],
            str(config.get("activation")),
            str(config.get("filters")),
        )
        groups.setdefault(group, []).append(key)
    rng = random.Random(RECERTIFY_SEED)
    return [
        key for group in sorted(groups) for key in rng.sample(groups[group], min(sample, len(groups[group])))
    ]


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


# ------------------------------------------------------------------------------ replicate TARGET --check K

CHECK_RULE = "|Δ accuracy| > 1 sd of the cell's committed seeds"  # when a rerun fails `check`
CHECKED = {"tier": "full", "dtype": "float64", "arithmetic": "structured"}  # the summaries `check` reads


@dataclass(frozen=True)
class CheckSample:
    """What `check` reruns: the summary it read and, per cell and setting, its first K seeds' records."""

    target: str
    path: Path
    runs: list[tuple[str, dict, dict]]  # (cell, config, committed record), cell by cell
    spread: dict[tuple[str, int], tuple[float | None, int]]  # (cell, setting) -> (sd or None, seeds)
    sample: int


def check_sample(target: str, variant: str, out: str | Path, sample: int) -> CheckSample:
    """The runs `check` reruns, read from the committed summary of `target` and `variant` under `out`:
    the first `sample` seeds of each cell and setting. InputError (bad input, exit 2, before any
    compute) for an unknown target, `sample` < 1, a missing summary or a damaged one."""
    if target not in TARGETS:
        raise InputError(
            f"--check: {target} is not a Chen et al. table with run summaries ({', '.join(TARGETS)})"
        )
    if not isinstance(sample, int) or isinstance(sample, bool) or sample < 1:
        raise InputError(f"--check must be an integer >= 1, got {sample!r}")
    path = Path(out) / f"{chen.report_stem(target, variant)}.json"
    if not path.is_file():
        raise InputError(f"--check: no committed summary of {target}, variant {variant}: {path} is missing")
    try:
        payload = json.loads(path.read_text())
        if not chen.is_summary(payload) or (payload["config"]["target"], payload["config"]["variant"]) != (
            target,
            variant,
        ):
            raise ValueError(f"it is not a summary of {target}, variant {variant}")
        config = payload["config"]
        made = {"tier": config["tier"], "dtype": config.get("dtype", "float64")}
        made["arithmetic"] = config.get("arithmetic", "dense")  # as `summary_configs` reads it
        if made != CHECKED:
            raise ValueError(f"its runs are {made}, not {CHECKED}")
        configs, runs = chen.summary_configs(payload["config"]), payload["runs"]
        if len(runs) != len(configs) or any(
            not isinstance(run, dict) or any(run.get(k) != v for k, v in config.items())
            for run, config in zip(runs, configs, strict=False)
        ):
            raise ValueError("its runs are not the runs of its configuration")
        for run in runs:
            _final_metrics(run)
        cells = cell_statistics(target, runs)
    except (ValueError, UnicodeDecodeError, KeyError, TypeError) as exc:
        raise InputError(f"--check: summary {path} is damaged ({exc})") from None
    spread = {
        (c["cell"], c["setting"]): ((c["finite_test_accuracy"] or {}).get("std"), c["runs"]) for c in cells
    }
    chosen = []
    for cell in TARGETS[target]:
        for setting in sorted(cell.paper):
            held = [
                (c, r)
                for c, r in zip(configs, runs, strict=True)
                if c["setting"] == setting and in_cell(r, cell)
            ]
            chosen += [(cell.label, c, r) for c, r in sorted(held, key=lambda pair: pair[0]["seed"])[:sample]]
    return CheckSample(target, path, chosen, spread, sample)


def _final_metrics(record: dict) -> tuple[float | None, float | None, int]:
    """A run record's final test accuracy (None: diverged), last recorded training loss (None: not kept)
    and step count; TypeError when a record lacks them."""
    accuracy = None if record.get("diverged_at") is not None else record.get("test_accuracy")
    losses = (record.get("history") or {}).get("loss") or [None]
    steps = record.get("steps")
    finite = isinstance(accuracy, int | float) and not isinstance(accuracy, bool)
    if not (finite or record.get("diverged_at") is not None) or not isinstance(steps, int):
        what = f"{record.get('model')} setting {record.get('setting')} seed {record.get('seed')}"
        raise TypeError(f"its run {what} holds no final test accuracy and step count")
    return accuracy, losses[-1], steps


@dataclass(frozen=True)
class Rerun:
    """One rerun of `check` beside its committed record."""

    cell: str
    setting: int
    seed: int
    committed: dict
    rerun: dict
    spread: float | None  # sd of the cell's committed accuracies; None with one committed seed
    seeds: int  # the cell's committed seeds

    @property
    def difference(self) -> str | None:
        """The first field where the rerun's record differs from the committed one (`first_difference`)."""
        return first_difference(self.committed, self.rerun)

    @property
    def delta(self) -> float:
        """Rerun minus committed test accuracy (points); inf when exactly one of them diverged."""
        now, then = _final_metrics(self.rerun)[0], _final_metrics(self.committed)[0]
        if now is None or then is None:
            return 0.0 if now is then else math.inf
        return now - then

    @property
    def beyond(self) -> bool:
        """|Δ accuracy| > 1 sd of the cell's committed seeds (any change where the cell has one seed)."""
        return abs(self.delta) > (self.spread if self.spread is not None else 0.0)

    @property
    def name(self) -> str:
        return f"{self.cell} setting {self.setting} seed {self.seed}"


@dataclass
class Checked:
    """What `check` found: each rerun beside its committed record."""

    sample: CheckSample
    code: str
    reruns: list[Rerun] = field(default_factory=list)

    @property
    def status(self) -> int:
        """The CLI's exit status: 1 when a rerun is beyond its cell's seed spread (`CHECK_RULE`), else 0."""
        return 1 if any(r.beyond for r in self.reruns) else 0

    def line(self) -> str:
        """One line: what was rerun under which code, how many are identical, differ, go beyond the spread."""
        s, reruns = self.sample, self.reruns
        stamps = ", ".join(sorted({str(r.committed.get("code")) for r in reruns}))
        cells = len({(r.cell, r.setting) for r in reruns})
        lone = len({(r.cell, r.setting) for r in reruns if r.spread is None})
        beyond = [r.name for r in reruns if r.beyond]
        return (
            f"check {s.target}: {len(reruns)} run(s) of {s.path} retrained under code {self.code} "
            f"(committed by code {stamps}), the first {s.sample} seed(s) of each of {cells} cell×setting(s); "
            f"{sum(r.difference is None for r in reruns)} identical to their committed record, "
            f"{sum(r.difference is not None for r in reruns)} not; {len(beyond)} beyond their cell's seed "
            f"spread ({CHECK_RULE}"
            + (
                f"; {lone} cell×setting(s) with one committed seed, so no sd: there any change counts"
                if lone
                else ""
            )
            + ")"
            + (f": {'; '.join(beyond)}" if beyond else "")
        )

    def table(self) -> str:
        """A Markdown table of the reruns, cell by cell in the table's order, seeds ascending."""
        head = (
            "| cell | setting | seed | accuracy committed (%) | now (%) | Δ (points) | cell sd (seeds) "
            "| beyond | last loss committed | now | steps committed | now | record |\n" + "|---" * 13 + "|\n"
        )
        rows = []
        for r in self.reruns:
            (acc0, loss0, steps0), (acc1, loss1, steps1) = (
                _final_metrics(r.committed),
                _final_metrics(r.rerun),
            )
            sd = f"no sd ({r.seeds} seed)" if r.spread is None else f"{r.spread:.3f} ({r.seeds})"
            cells = [
                r.cell,
                r.setting,
                r.seed,
                _number(acc0, ".5f"),
                _number(acc1, ".5f"),
                _number(r.delta, "+.5f"),
                sd,
                "yes" if r.beyond else "no",
                _number(loss0, ".6f"),
                _number(loss1, ".6f"),
                steps0,
                steps1,
                "identical" if r.difference is None else r.difference.replace("|", "\\|"),
            ]
            rows.append("| " + " | ".join(map(str, cells)) + " |")
        return head + "\n".join(rows)


def _number(value: float | None, spec: str) -> str:
    if value is None:
        return "-"
    return format(value, spec) if math.isfinite(value) else "diverged"


def check(
    sample: CheckSample,
    progress: bool = False,
    prepare: Callable[[list[dict]], object] = lambda configs: None,
) -> Checked:
    """Rerun the runs of `sample` (`check_sample`) under the current code, in this process and outside
    the run store, and set each beside its committed record. `prepare(configs)` runs first (the CLI
    compiles their kernels in a child process there, as `recertify` does)."""
    prepare([config for _, config, _ in sample.runs])
    found = Checked(sample, chen.run_code())
    for label, config, committed in sample.runs:
        spread, seeds = sample.spread[(label, config["setting"])]
        rerun = json.loads(json.dumps(chen.run_one(config, progress)))  # as a summary stores it
        found.reruns.append(Rerun(label, config["setting"], config["seed"], committed, rerun, spread, seeds))
    return found
