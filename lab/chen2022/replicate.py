"""Replication of Chen et al. 2022's synthetic tables (Tables 1, 3, 7/8, 10, 11) beside the paper's numbers.

A target is a list of cells (table rows) × settings × seeds. `expand` turns a target into independent
JSON-able run configurations and `run_one` runs one of them (deterministic for its config), so a
sweep produces exactly the numbers `python -m lab replicate` prints. Finished runs are kept as one
JSON file each under OUT/runs/ (the run store, git-ignored), so an interrupted replication resumes
where it stopped; runs are shared between targets (Table 1's runs are Table 3's settings 1–2). Each
target's summary OUT/TARGET.json keeps every run slim (`slim`); a run is looked up in the run store,
then in the summaries under OUT, and trained only when neither holds it from the current code, so a
fresh clone re-renders the committed tables without training (`lab.chen2022.recertify` re-stamps
runs after a change meant to move no number).
"""

from __future__ import annotations

import functools
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from lab.chen2022.replicate_report import format_table, write_figures
from lab.chen2022.runs import (
    TIER_SIZES,
    accuracy_text,
    expand,
    run_code,
    run_key,
    run_one,
)
from lab.chen2022.tables import TARGET_HELP, TARGETS
from lab.core import plots
from lab.core.io import write_json_atomic, write_text_atomic
from lab.core.progress import Progress
from lab.core.provenance import versions
from lab.core.registry import Replication
from lab.sweeps.tasks import register_task

# the per-step series a summary keeps of a single CNN's history: the findings read its last training loss
SUMMARY_SERIES = ("loss",)


# ------------------------------------------------------------------------------------ runs on disk


def stored_record(path: Path, config: dict, keep_stale: bool) -> tuple[dict | None, str]:
    """The stored record of `config` at `path` and "", or None and why not: "absent", "damaged (…)"
    (not JSON, not a record, another config) or "stale" (from other code, unless `keep_stale`).
    Reads only: `_set_aside` acts on the answer."""
    if not path.exists():
        return None, "absent"
    try:
        record = json.loads(path.read_text())
        if not isinstance(record, dict) or any(record.get(k) != v for k, v in config.items()):
            raise ValueError("not the record of this run's configuration")
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"damaged ({exc})"
    if not keep_stale and record.get("code") != run_code():
        return None, "stale"
    return record, ""


def _set_aside(path: Path, problem: str) -> None:
    """Act on `stored_record`'s answer before a run is trained: a damaged run file is named on stderr
    and moved aside to `*.corrupt`, a stale one named (it is recomputed)."""
    if problem.startswith("damaged"):
        aside = path.with_name(path.name + ".corrupt")
        path.replace(aside)
        print(f"run file {path} is {problem}; moved to {aside.name}, running again", file=sys.stderr)
    elif problem == "stale":
        print(
            f"run file {path} was computed by other code (stale); running again "
            "(--keep-stale keeps it on purpose)",
            file=sys.stderr,
        )


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


def load_or_run(
    config: dict, runs_dir: Path, progress: bool, keep_stale: bool = False, committed: dict | None = None
) -> tuple[dict, bool]:
    """The finished record of `config` from runs_dir or else the committed summaries (`committed_runs`),
    or run it now and store it atomically in runs_dir."""
    path = runs_dir / f"{run_key(config)}.json"
    record, problem = stored_record(path, config, keep_stale)
    record = record or committed_record(config, committed or {}, keep_stale)
    if record is not None:
        return record, True
    _set_aside(path, problem)
    record = run_one(config, progress) | {"code": run_code(), "versions": versions()}
    write_json_atomic(path, record)
    return record, False


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
    """Expand the target, load finished runs, run the rest; returns (configs, records)."""
    configs = target_configs(target, args)
    runs_dir = Path(args.out) / "runs"
    committed = committed_runs(Path(args.out))
    records = []
    shown = not args.quiet and getattr(args, "jobs", 1) == 1  # `--jobs` showed its training already
    with Progress(len(configs), target, enabled=shown, lines=True, unit="run") as bar:
        for config in configs:
            record, cached = load_or_run(config, runs_dir, not args.quiet, args.keep_stale, committed)
            records.append(record)
            what = "kept" if cached else f"{record['seconds']:.1f} s"
            bar.step(
                f"{config['model']} setting {config['setting']} seed {config['seed']}: "
                f"{accuracy_text(record)} ({what})"
            )
    return configs, records


# ------------------------------------------------------------------------------------ reports


def slim(record: dict) -> dict:
    """What a summary keeps of a run record: its configuration, seed, final metrics, timing and code,
    and of its per-step series only `SUMMARY_SERIES` (the run store keeps the whole record)."""
    kept = {k: v for k, v in record.items() if k not in ("history", "curves")}
    series = {k: record["history"][k] for k in SUMMARY_SERIES if k in record.get("history", {})}
    return kept | ({"history": series} if series and record["model"].startswith("single") else {})


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
    """A summary as JSON with one line per run: compact, and a rerun's diff names the runs it changed."""
    head = json.dumps({k: v for k, v in payload.items() if k != "runs"}, indent=2, allow_nan=False)
    runs = ",\n".join("    " + json.dumps(r, separators=(",", ":"), allow_nan=False) for r in payload["runs"])
    return f'{head[:-2]},\n  "runs": [\n{runs}\n  ]\n}}\n'


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


def run_target(target: str, args) -> int:
    """`python -m lab replicate TARGET`: runs (resuming), Markdown table, JSON, figures."""
    start = time.perf_counter()
    _configs, records = replicate(target, args)
    out = Path(args.out)
    table = format_table(target, records)
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
    payload["versions"], payload["runs"] = summary_runs(records)
    write_text_atomic(_json_path(target, args), summary_text(payload))
    figures = write_figures(stem, records, out) if plots.available() else []
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


REPLICATIONS = [
    Replication(target, TARGET_HELP[target], functools.partial(run_target, target)) for target in TARGETS
]


def _replicate_tables(values: dict[str, list[Any]], results: list[dict[str, Any]]) -> str:
    """Each target's table beside the paper's numbers, as `python -m lab replicate` prints it."""
    return "\n\n".join(
        f"### {TARGET_HELP[target]}\n\n{format_table(target, results)}" for target in values.get("target", [])
    )


@register_task("replicate", expand=expand, report=_replicate_tables)
def replicate_run(config: dict[str, Any]) -> dict[str, Any]:
    """One training run of a replicate target (`run_one`): the same record `replicate` makes."""
    return run_one(config)
