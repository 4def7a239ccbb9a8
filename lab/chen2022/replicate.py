"""Replication of Chen et al. 2022's synthetic tables (Tables 1, 3, 7/8, 10, 11) beside the paper's numbers.

A target is a list of cells (table rows) × settings × seeds. `expand` turns a target into independent
JSON-able run configurations and `run_one` runs one of them (deterministic for its config). Each run is a
task of the sweep task `replicate` (`replicate_run`), and `train` runs the ones not held yet through the
sweep runner (the registered runner of keyed tasks, `lab.core.tasks.task_runner`: in-process, or on a
local Dask cluster of `jobs` workers) into the run store OUT/runs.sqlite, a sweep store (git-ignored):
keyed, resumed and stamped with the code fingerprint (`run_code`) as every sweep row, so an interrupted
replication resumes where it stopped and a run from other code is stale. Runs are shared between targets
(Table 1's runs are Table 3's settings 1–2) and with `python -m lab sweep run` on the same store. Each
target's summary OUT/TARGET.json keeps every run slim (`slim`); a run is looked up in the run store, then
in the summaries under OUT, and trained only when neither holds it from the current code, so a fresh
clone re-renders the committed tables without training (`lab.chen2022.recertify` re-stamps runs after a
change meant to move no number). A summary stores its statistics beside its runs
(`lab.chen2022.replicate_report.SUMMARY_STATISTICS`), and every time it writes one, the command rewrites
the analysis beside it, OUT/analysis.json (`write_analysis`): the statistics over several summaries
(float32 against float64, Table 1 with Table 3; `lab.chen2022.replicate_analysis`). The targets are
declared, with what `python -m lab replicate` does with their runs, in `lab.chen2022.replicate_runs`.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.chen2022.replicate_analysis import ANALYSIS_NAME, analysis_text, replicate_analysis
from lab.chen2022.replicate_report import (
    SUMMARY_STATISTICS,
    cells_figure,
    format_cells,
    format_table,
    summary_statistics,
    write_figures,
)
from lab.chen2022.runs import (
    TIER_SIZES,
    VARIANT_NAMES,
    expand,
    run_code,
    run_key,
    run_one,
)
from lab.chen2022.sweep_studies import gd_rate_figure
from lab.chen2022.tables import TARGET_HELP, TARGETS
from lab.core import plots
from lab.core.errors import InputError
from lab.core.io import write_text_atomic
from lab.core.keys import task_key
from lab.core.machine import dask_available
from lab.core.provenance import versions
from lab.core.store import StoredTask, SweepStore
from lab.core.tasks import SweepTask, register_task, task_runner

# the per-step series a summary keeps of a linear single CNN's history (`linear_singles` reads its last
# training loss); other runs keep none in a summary, the run store keeps them all
SUMMARY_SERIES = ("loss",)
SERIES_MODEL = "single (linear)"
TASK = "replicate"  # the sweep task of one run (`replicate_run`)
STORE_NAME = "runs.sqlite"  # the run store under OUT


# ------------------------------------------------------------------------------------ runs in the store


def accuracy_text(record: dict) -> str:
    """A run's test accuracy as a table shows it, or where it diverged."""
    if record.get("diverged_at") is not None:
        return f"diverged at step {record['diverged_at']}"
    return f"{record['test_accuracy']:.2f} %"


def store_path(out: str | Path) -> Path:
    """The run store of the output folder `out`: a sweep store of `replicate` runs."""
    return Path(out) / STORE_NAME


def sweep_task(config: dict) -> SweepTask:
    """A run config as a task of the sweep task `replicate`, keyed as every sweep row (`task_key`)."""
    return SweepTask(task_key(TASK, config), TASK, config)


def store_record(row: StoredTask) -> dict:
    """A run's record from its store row: `run_one`'s record, then its code and the versions that made it."""
    record = dict(row.result)
    made_by = record.pop("versions", None)
    return record | {"code": row.code, "versions": made_by}


def stored_rows(configs: list[dict], out: str | Path) -> dict[str, StoredTask]:
    """The finished store rows of `configs` by run key, whatever code made them (none without a store).

    Reads only; a damaged store is refused with an InputError naming it (`SweepStore`)."""
    path = store_path(out)
    if not path.exists():
        return {}
    tasks = {sweep_task(config).key: config for config in configs}
    with SweepStore(path, readonly=True) as store:
        return {run_key(tasks[row.key]): row for row in store.rows(tasks) if row.status == "done"}


def held(configs: list[dict], out: str | Path, keep_stale: bool = False) -> dict[str, dict]:
    """The records of `configs` by run key that the run store, or else the summaries in `out`
    (`committed_runs`), hold from the current code (from any code with `keep_stale`)."""
    code = run_code()
    rows = stored_rows(configs, out)
    found = {key: store_record(row) for key, row in rows.items() if keep_stale or row.code == code}
    committed = committed_runs(Path(out))
    for config in configs:
        record = None if run_key(config) in found else committed_record(config, committed, keep_stale)
        if record is not None:
            found[run_key(config)] = record
    return found


def train_missing(
    configs: list[dict],
    out: str | Path,
    jobs: int = 1,
    keep_stale: bool = False,
    quiet: bool = True,
    prepare: Callable[[list[dict]], object] = lambda todo: None,
) -> dict[str, dict]:
    """The records of `configs` by run key: those `out` holds (`held`), and the others trained now
    through the sweep runner into the run store. `prepare(configs to train)` runs first (the CLI
    compiles their kernels in a child process there). `jobs` 1 trains in this process on every
    core, more on a local Dask cluster of `jobs` workers sharing the cores, or in this process when
    Dask is not installed (a run's numbers do not depend on its threads). A stale run is named
    before it is trained again; a run that fails is a RuntimeError naming it."""
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")
    found = held(configs, out, keep_stale)
    todo = [config for config in configs if run_key(config) not in found]
    prepare(todo)
    if not todo:
        return found
    stale = len(stored_rows(todo, out))  # a run held by no summary and stored from other code
    if stale:
        print(
            f"{stale} run(s) in {store_path(out)} were computed by other code (stale); running them "
            "again (--keep-stale keeps them on purpose)",
            file=sys.stderr,
        )
    import numba

    parallel = jobs > 1 and len(todo) > 1 and dask_available(quiet)  # else in-process, on every core
    done = task_runner()(
        TASK,
        [sweep_task(config) for config in todo],
        store_path(out),
        sequential=not parallel,
        workers=min(jobs, len(todo)),
        retry_failed=True,
        keep_stale=keep_stale,
        quiet=quiet,
        threads=max(1, numba.config.NUMBA_NUM_THREADS // (jobs if parallel else 1)),
        describe=_describe,
    )
    if done.failed:
        with SweepStore(store_path(out), readonly=True) as store:
            failed = next(row for row in store.rows(done.ran) if row.status == "failed")
        print(failed.error, file=sys.stderr)
        last = (failed.error.strip().splitlines() or ["no error text"])[-1]
        raise RuntimeError(f"{done.failed} run(s) failed, the first {run_key(failed.params)}: {last}")
    return found | {key: store_record(row) for key, row in stored_rows(todo, out).items()}


def _describe(task: SweepTask, outcome: dict) -> str:
    """A progress line for one finished run."""
    config = task.params
    what = f"{config['model']} setting {config['setting']} seed {config['seed']}"
    if outcome["status"] != "done":
        return f"{what}: failed"
    record = json.loads(outcome["result"])
    return f"{what}: {accuracy_text(record)} in {record['seconds']:.1f} s"


# ------------------------------------------------------------------------------------ committed summaries


def committed_runs(out: Path) -> dict[str, dict]:
    """The run records of the Chen et al. summaries in `out` (`TARGET*.json`) by run key, each with the
    versions that made it: a fresh clone re-renders its tables from them. A damaged summary is named
    on stderr and its runs are not reused."""
    found = {}
    for path in sorted(out.glob("*.json")):
        try:
            payload = json.loads(path.read_text())
            if not is_summary(payload):
                continue
            configs = summary_configs(payload["config"])
            runs = payload["runs"]
            if len(runs) != len(configs) or any(map(_differs, runs, configs)):
                raise ValueError("its runs are not the runs of its configuration")
        except (ValueError, UnicodeDecodeError, KeyError, TypeError) as exc:
            print(f"summary {path} is damaged ({exc}); its runs are not reused", file=sys.stderr)
            continue
        shared = payload.get("versions") if isinstance(payload.get("versions"), dict) else None
        found |= {run_key(c): {"versions": shared} | r for r, c in zip(runs, configs, strict=True)}
    return found


def write_analysis(folder: Path) -> Path:
    """Rewrite the replicate analysis beside the summaries in `folder` (`ANALYSIS_NAME`) from all of them:
    the statistics over several summaries, each summary named with the digest of the text it was read
    from (`lab.chen2022.replicate_analysis`)."""
    summaries = {}
    for path in sorted(folder.glob("*.json")):
        try:
            text = path.read_text()
            payload = json.loads(text)
        except (ValueError, UnicodeDecodeError):
            continue  # named by `committed_runs`
        if is_summary(payload):
            summaries[path.name] = (text, payload)
    analysis = replicate_analysis({name: payload for name, (_, payload) in summaries.items()})
    path = folder / ANALYSIS_NAME
    write_text_atomic(path, analysis_text(analysis, {name: text for name, (text, _) in summaries.items()}))
    return path


def is_summary(payload: object) -> bool:
    """Whether a JSON file's content is (meant as) a Chen et al. target's summary."""
    return (
        isinstance(payload, dict)
        and isinstance(payload.get("config"), dict)
        and (payload["config"].get("target") in TARGETS)
    )


def summary_configs(config: dict) -> list[dict]:
    """The run configs of a summary's `config` (as `run_target` writes it), in its runs' order."""
    return expand(
        config["target"],
        config["settings"],
        config["seeds"],
        config["seed"],
        config["variant"],
        config["tier"],
        config.get("dtype", "float64"),
        config.get("arithmetic", "dense"),
    )


def _differs(record: dict, config: dict) -> bool:
    return not isinstance(record, dict) or any(record.get(k) != v for k, v in config.items())


def committed_record(config: dict, committed: dict[str, dict], keep_stale: bool) -> dict | None:
    """`config`'s record in the committed summaries (`committed_runs`), if made by the current code
    (or `keep_stale`)."""
    record = committed.get(run_key(config))
    if record is None or _differs(record, config) or not (keep_stale or record.get("code") == run_code()):
        return None
    return record


def target_configs(target: str, args) -> list[dict]:
    """The run configs of `target` for `replicate`'s parsed arguments (`expand`)."""
    return expand(
        target,
        list(args.settings),
        args.seeds,
        args.seed,
        args.variant,
        args.tier,
        args.dtype,
        args.arithmetic,
    )


def replicate(target: str, args) -> tuple[list[dict], list[dict]]:
    """Expand the target, train the runs `--out` does not hold (`train`), read them all; returns
    (configs, records)."""
    configs = target_configs(target, args)
    found = train_missing(configs, args.out, getattr(args, "jobs", 1), args.keep_stale, args.quiet)
    return configs, [found[run_key(config)] for config in configs]


# ------------------------------------------------------------------------------------ reports


def slim(record: dict) -> dict:
    """What a summary keeps of a run record: its configuration, seed, final metrics, timing and code,
    and of its per-step series only `SUMMARY_SERIES` of a `SERIES_MODEL` run (the run store keeps the
    whole record)."""
    kept = {k: v for k, v in record.items() if k not in ("history", "curves")}
    series = {k: record["history"][k] for k in SUMMARY_SERIES if k in record.get("history", {})}
    return kept | ({"history": series} if series and record["model"] == SERIES_MODEL else {})


def summary_runs(records: list[dict]) -> tuple[dict | None, list[dict]]:
    """A summary's `versions` and `runs` (`slim`): the versions that made every run once, or None
    and each run with its own versions when they differ."""
    distinct = []
    for found in (r.get("versions") for r in records):
        if found not in distinct:
            distinct.append(found)
    runs = [slim(r) for r in records]
    if len(distinct) > 1:
        return None, runs
    return distinct[0], [{k: v for k, v in r.items() if k != "versions"} for r in runs]


def summary_text(payload: dict) -> str:
    """A summary as JSON with one line per run and per row of its statistics: compact, and a rerun's diff
    names the runs it changed."""
    lines = {k: v for k, v in payload.items() if k in (*SUMMARY_STATISTICS, "runs")}
    head = json.dumps({k: v for k, v in payload.items() if k not in lines}, indent=2, allow_nan=False)
    blocks = [
        f'  "{name}": [\n'
        + ",\n".join("    " + json.dumps(item, separators=(",", ":"), allow_nan=False) for item in items)
        + "\n  ]"
        if items
        else f'  "{name}": []'
        for name, items in lines.items()
    ]
    return head[:-2] + ",\n" + ",\n".join(blocks) + "\n}\n"


def report_stem(target: str, variant: str, dtype: str = "float64", arithmetic: str = "structured") -> str:
    """File stem of a target's reports: `table1` for the stated model in float64, else suffixed by what
    differs (`table1_reference-code`, `table1_float32`, `table1_reference-code_float32_dense`)."""
    suffixes = (
        variant != "paper" and variant,
        dtype != "float64" and dtype,
        arithmetic != "structured" and arithmetic,
    )
    return "_".join([target, *(s for s in suffixes if s)])


def _stem(target: str, args) -> str:
    return report_stem(target, args.variant, args.dtype, args.arithmetic)


def _json_path(target: str, args) -> Path:
    if not args.json:
        return Path(args.out) / f"{_stem(target, args)}.json"
    path = Path(args.json)
    many = len(getattr(args, "targets", [target])) > 1
    return path.with_name(f"{path.stem}_{target}{path.suffix}") if many else path


def write_cells_figure(target: str, folder: Path) -> Path | None:
    """Draw `target`'s table as a figure, FOLDER/TARGET.png (`cells_figure`), from the summaries of its
    variants in `folder` (float64, structured arithmetic: `TARGET.json`, `TARGET_reference-code.json`)
    alone; None when it holds neither. Without matplotlib an InputError names the extra."""
    summaries = {}
    for variant in VARIANT_NAMES:
        path = folder / f"{report_stem(target, variant)}.json"
        if path.is_file():
            payload = json.loads(path.read_text())
            if is_summary(payload) and payload["config"]["target"] == target:
                summaries[variant] = payload
    if not summaries:
        return None
    if not plots.available():
        raise InputError(plots.PLOTS_HINT)
    plots.save_figure(cells_figure(target, summaries), folder / f"{target}.png")
    return folder / f"{target}.png"


def redraw_target(target: str, args) -> int:
    """`python -m lab replicate TARGET --figure-only`: redraw TARGET's figure from the summaries in --out
    (the committed ones), training nothing and rewriting no summary."""
    figure = write_cells_figure(target, Path(args.out))
    if figure is None:
        raise InputError(
            f"--out {args.out}: no summary of {target} to draw (run `python -m lab replicate {target}`)"
        )
    print(f"wrote {figure}")
    return 0


def run_target(target: str, args) -> int:
    """`python -m lab replicate TARGET`: runs (resuming), Markdown table, JSON, figures (`--figure-only`:
    the table's figure alone, `redraw_target`)."""
    if getattr(args, "figure_only", False):
        return redraw_target(target, args)
    start = time.perf_counter()
    _configs, records = replicate(target, args)
    out = Path(args.out)
    statistics = summary_statistics(target, records)
    table = format_cells(target, statistics["cells"])
    header = (
        f"## {TARGET_HELP[target]}\n\nvariant `{args.variant}`, tier `{args.tier}`, "
        f"experts' arithmetic `{args.arithmetic}` in `{args.dtype}`, seeds "
        f"{args.seed}..{args.seed + args.seeds - 1}; test accuracy routes "
        f"{'with noise' if args.variant == 'reference-code' else 'noise-free (argmax h)'} for MoEs; "
        "dispatch entropy from the training set's noisy routes at the last step.\n\n"
    )
    stem = _stem(target, args)
    write_text_atomic(out / f"{stem}.md", header + table + "\n")
    payload = {
        "config": {
            "target": target,
            "settings": list(args.settings),
            "seeds": args.seeds,
            "seed": args.seed,
            "variant": args.variant,
            "tier": args.tier,
            "dtype": args.dtype,
            "arithmetic": args.arithmetic,
            "train_sizes": TIER_SIZES[args.tier],
            "wall_seconds": time.perf_counter() - start,
        },
    }
    payload |= statistics
    payload["versions"], payload["runs"] = summary_runs(records)
    write_text_atomic(_json_path(target, args), summary_text(payload))
    write_analysis(_json_path(target, args).parent)
    figures = write_figures(stem, records, out) if plots.available() else []
    if plots.available() and (drawn := write_cells_figure(target, _json_path(target, args).parent)):
        figures.append(drawn)
    print(header + table)
    if not args.quiet:
        print(
            f"wrote {out / f'{stem}.md'}, {_json_path(target, args)}, {len(figures)} figure(s)",
            file=sys.stderr,
        )
        if not plots.available():
            print(plots.PLOTS_HINT, file=sys.stderr)
    finite = (r.get("diverged_at") is not None or math.isfinite(r["test_accuracy"]) for r in records)
    return 0 if all(finite) else 1


def _replicate_tables(values: dict[str, list[Any]], results: list[dict[str, Any]]) -> str:
    """Each target's table beside the paper's numbers, as `python -m lab replicate` prints it."""
    return "\n\n".join(
        f"### {TARGET_HELP[target]}\n\n{format_table(target, results)}" for target in values.get("target", [])
    )


@register_task(
    TASK,
    expand=expand,
    report=_replicate_tables,
    code_root=run_one.__module__,
    figure=gd_rate_figure,
    training_kernels=True,
)
def replicate_run(config: dict[str, Any]) -> dict[str, Any]:
    """One training run of a replicate target (`run_one`) with the versions of the stack that made it.

    Its results are stamped with `run_code()`, the fingerprint of the run's science (`code_root`)."""
    return run_one(config) | {"versions": versions()}
