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
import hashlib
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from lab.chen2022 import data
from lab.chen2022.baselines import SingleConfig, single_accuracy, single_config, train_single
from lab.chen2022.metrics import (
    dispatch_counts,
    dispatch_entropy,
    expert_cluster_accuracy,
    expert_load,
    profession_sets,
    professions,
)
from lab.chen2022.replicate_report import format_table, write_figures
from lab.chen2022.tables import MODELS, MOE_DEFAULTS, TARGET_HELP, TARGETS, Cell
from lab.chen2022.training import DTYPES, TrainConfig, evaluate, prepare, train, variant_config
from lab.core import plots
from lab.core.errors import InputError
from lab.core.io import write_json_atomic, write_text_atomic
from lab.core.progress import Progress
from lab.core.provenance import code_fingerprint, versions
from lab.core.registry import Replication
from lab.sweeps.tasks import register_task

TIER_SIZES = {"full": (16_000, 16_000), "quick": (2_000, 2_000)}  # (train, test): App. A.2 / smoke
VARIANTS = ("paper", "reference-code")
CURVE_THINNING, CURVE_DECIMALS = 10, 4  # Figs 5–6 curves: every 10th record (100 steps), 4 decimals
# the per-step series a summary keeps of a single CNN's history: the findings read its last training loss
SUMMARY_SERIES = ("loss",)
ARITHMETIC = ("structured", "dense")  # the experts' kernels: Def. 3.1's structure, or the dense reference


def target_settings(target: str) -> tuple[int, ...]:
    """Settings for which the paper reports the target's numbers."""
    return tuple(sorted({s for cell in _cells(target) for s in cell.paper}))


def _cells(target: str) -> list[Cell]:
    if target not in TARGETS:
        raise InputError(f"target must be one of {sorted(TARGETS)}, got {target!r}")
    return TARGETS[target]


def expand(
    target: str,
    settings: list[int],
    seeds: int,
    seed: int = 0,
    variant: str = "paper",
    tier: str = "full",
    dtype: str = "float64",
    arithmetic: str = "structured",
    eta: float | None = None,
    sigma0: float | None = None,
) -> list[dict]:
    """The grid of independent run configs of a target: cells × (settings the paper has) × seeds.

    `eta` (the experts' rate) and `sigma0` (the init scale), when given, are set in every MoE config:
    the sensitivity studies over values the paper does not state (absent, the variant's defaults)."""
    cells = _cells(target)
    for name, value, allowed in (
        ("variant", variant, VARIANTS),
        ("tier", tier, tuple(TIER_SIZES)),
        ("dtype", dtype, DTYPES),
        ("arithmetic", arithmetic, ARITHMETIC),
    ):
        if value not in allowed:
            raise InputError(f"{name} must be one of {allowed}, got {value!r}")
    if not isinstance(seeds, int) or seeds < 1:
        raise InputError(f"seeds must be an integer >= 1, got {seeds!r}")
    if not isinstance(seed, int) or seed < 0:
        raise InputError(f"seed must be an integer >= 0, got {seed!r}")
    chosen_values = {k: v for k, v in (("eta", eta), ("sigma0", sigma0)) if v is not None}
    for name, value in chosen_values.items():
        if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
            raise InputError(f"{name} must be a positive finite number, got {value!r}")
    have = target_settings(target)
    chosen = [s for s in dict.fromkeys(settings) if s in have]
    if not chosen:
        raise InputError(f"settings: {target} has paper numbers for settings {list(have)}, got {settings}")
    configs = []
    for cell in cells:
        for s in chosen:
            if s not in cell.paper:
                continue
            for i in range(seeds):
                run = {"model": cell.model, "variant": variant, "setting": s, "seed": seed + i, "tier": tier}
                moe = chosen_values if cell.model.startswith("moe") else {}
                configs.append(run | {"dtype": dtype, "arithmetic": arithmetic} | cell.params | moe)
    return configs


def _digest(config: dict) -> bytes:
    """SHA-256 of a run config's sorted JSON: it covers every field."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).digest()


def run_key(config: dict) -> str:
    """A readable, unique file stem for a run config (the hash covers every field)."""
    slug = config["model"].replace(" ", "-").replace("(", "").replace(")", "")
    return f"{slug}-s{config['setting']}-seed{config['seed']}-{config['tier']}-{_digest(config).hex()[:12]}"


def _seed_of(config: dict) -> int:
    """Training seed of a run: a hash of its whole config (data depend on seed and setting only)."""
    return int.from_bytes(_digest(config)[:8], "little") >> 1


def make_data(setting: int, seed: int, tier: str):
    """Signals, train and test sets of a (setting, seed, tier): shared by every model at that seed."""
    rng = np.random.default_rng([seed, setting, 0xDA7A])
    config = data.setting(setting)
    signals = data.make_signals(config, rng)
    n_train, n_test = TIER_SIZES[tier]
    return signals, data.sample(config, signals, n_train, rng), data.sample(config, signals, n_test, rng)


def run_one(config: dict, progress: bool = False) -> dict:
    """Run one config from `expand` and return its run record (deterministic for the config).

    An optional "steps" key overrides the variant's step budget (for sweeps over T and smoke runs).
    """
    for key in ("model", "variant", "setting", "seed", "tier", "activation"):
        if key not in config:
            raise ValueError(f"run config needs {key!r}, got keys {sorted(config)}")
    if config["model"] not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {config['model']!r}")
    if config["tier"] not in TIER_SIZES:
        raise ValueError(f"tier must be one of {sorted(TIER_SIZES)}, got {config['tier']!r}")
    signals, train_set, test_set = make_data(config["setting"], config["seed"], config["tier"])
    seed = _seed_of(config)
    if config["model"].startswith("single"):
        return dict(config) | _run_single(config, signals, train_set, test_set, seed, progress)
    return dict(config) | _run_moe(config, signals, train_set, test_set, seed, progress)


def _arithmetic(config: dict) -> dict:
    """The experts' arithmetic of a run config as `TrainConfig` fields (dense float64 if absent)."""
    return {
        "structured": config.get("arithmetic", "dense") == "structured",
        "dtype": config.get("dtype", "float64"),
    }


def single_run_config(config: dict) -> SingleConfig:
    """The single CNN's options of a run config (a run record holds them too)."""
    options = {key: config[key] for key in ("steps", "readout") if key in config} | _arithmetic(config)
    return single_config(config["variant"], J=config["filters"], activation=config["activation"], **options)


def moe_run_config(config: dict) -> TrainConfig:
    """Algorithm 1's options of an MoE run config (a run record holds them too)."""
    options = {k: config[k] for k in (*MOE_DEFAULTS, "activation", "steps", "eta", "sigma0") if k in config}
    return variant_config(config["variant"], **options, **_arithmetic(config))


def _run_single(config, signals, train_set, test_set, seed, progress) -> dict:
    cfg = single_run_config(config)
    result = train_single(train_set, cfg, seed, progress, signals=signals)
    test = prepare(test_set, cfg.expert_config(), signals)
    return {
        "test_accuracy": single_accuracy(result, test, cfg),
        "test_accuracy_routing": "none",
        "n_test": test.n,
        "dispatch_entropy": None,
        "steps": result.steps,
        "seconds": result.seconds,
        "stopped_early": result.stopped_early,
        "history": result.history,
    }


def _run_moe(config, signals, train_set, test_set, seed, progress) -> dict:
    cfg = moe_run_config(config)
    result = train(train_set, signals, cfg, seed, progress)
    if result.diverged_at is not None:  # a result, not a crash: no finite model is left to evaluate
        return diverged_record(result)
    test = prepare(test_set, cfg, signals)
    report = evaluate(result, test, signals, cfg, seed)
    K = signals.V.shape[0]
    train_counts = dispatch_counts(train_set.cluster, result.last_routes, K, cfg.M)
    # Def. D.3 on the effective filters a_j w_j (a logit-0 filter points the other way)
    k_star = professions(result.plan.experts.signed(result.W0), signals.V)
    sets = profession_sets(k_star, K)
    f_all = result.plan.experts.dense(test.xk, result.W)
    acc = expert_cluster_accuracy(test.y, test.cluster, f_all, K)
    routes_nf = np.argmax(result.plan.router_logits(test.s, result.Theta), axis=1)
    to_profession = [float(np.isin(routes_nf[test.cluster == k], sets[k]).mean()) for k in range(K)]
    keys = [k for k in result.history if k.startswith(("expert_", "router_"))]
    curves = {"step": result.history["step"][::CURVE_THINNING]} | {
        k: np.round(result.history.pop(k)[::CURVE_THINNING], CURVE_DECIMALS).tolist() for k in keys
    }
    return report | {
        "n_test": test.n,
        "dispatch_entropy": dispatch_entropy(train_counts),
        "dispatch_entropy_source": "training set, noisy routes of the last training step",
        "dispatch_train": train_counts.tolist(),
        "professions": k_star.tolist(),
        "profession_sizes": [len(m) for m in sets],
        "expert_cluster_accuracy": acc.tolist(),
        "profession_accuracy_min": min(
            (float(acc[m, k].min()) for k, m in enumerate(sets) if len(m)), default=0.0
        ),
        "routed_to_profession": to_profession,
        "load": expert_load(result.last_h).tolist(),
        "max_sum_theta_ratio": result.max_sum_theta_ratio,
        "steps": result.steps,
        "seconds": result.seconds,
        "stopped_early": result.stopped_early,
        "history": result.history,
        "curves": curves,
    }


def diverged_record(result) -> dict:
    """The record of a run whose loss or parameters stopped being finite: when, and no accuracy."""
    return {
        "test_accuracy": None,
        "diverged_at": result.diverged_at,
        "dispatch_entropy": None,
        "steps": result.steps,
        "seconds": result.seconds,
        "stopped_early": False,
        "history": result.history,
    }


def accuracy_text(record: dict) -> str:
    """A run's test accuracy as a table shows it, or where it diverged."""
    if record.get("diverged_at") is not None:
        return f"diverged at step {record['diverged_at']}"
    return f"{record['test_accuracy']:.2f} %"


# ------------------------------------------------------------------------------------ runs on disk


def run_code() -> str:
    """Fingerprint of the science code a run's numbers depend on (stored in every run record)."""
    return code_fingerprint(__name__)


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
