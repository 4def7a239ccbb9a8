"""Replication of Chen et al. 2022's synthetic tables (Tables 1, 3, 7/8, 10, 11) beside the paper's numbers.

A target is a list of cells (table rows) × settings × seeds. `expand` turns a target into independent
JSON-able run configurations and `run_one` runs one of them (deterministic for its config), so a
sweep produces exactly the numbers `python -m lab replicate` prints. Finished runs are kept as one
JSON file each under OUT/runs/, so an interrupted replication resumes where it stopped; runs are
shared between targets (Table 1's runs are Table 3's settings 1–2).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import sys
import time
from dataclasses import dataclass, field
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
from lab.chen2022.training import (
    all_expert_outputs,
    effective_filters,
    evaluate,
    prepare,
    train,
    variant_config,
)
from lab.core.io import write_json_atomic, write_text_atomic
from lab.core.registry import Replication
from lab.sweeps.tasks import register_task

TIER_SIZES = {"full": (16_000, 16_000), "quick": (2_000, 2_000)}  # (train, test): App. A.2 / smoke
VARIANTS = ("paper", "reference-code")
MODELS = ("single (linear)", "single (nonlinear)", "moe (linear)", "moe (nonlinear)")
MOE_DEFAULTS = {
    "M": 8,
    "J": 16,
    "load_balancing": "none",
    "lb_coef": 0.0,
    "same_init": False,
    "expert_update": "normalized",
}
TABLE11_LB_COEF = 0.01  # not stated in the paper; the lab's choice


@dataclass(frozen=True)
class Cell:
    """One table row: the paper's row name, run parameters, and the paper's numbers per setting.

    paper[setting] = (accuracy %, its std or None, dispatch entropy or None, its std or None).
    """

    model: str
    label: str
    params: dict[str, Any]
    paper: dict[int, tuple]
    extra: dict[str, Any] = field(default_factory=dict)


def _moe(act: str, label: str, paper: dict[int, tuple], **params: Any) -> Cell:
    model = "moe (linear)" if act == "linear" else "moe (nonlinear)"
    return Cell(model, label, {"activation": act, **MOE_DEFAULTS, **params}, paper)


def _single(act: str, filters: int, label: str, paper: dict[int, tuple]) -> Cell:
    model = "single (linear)" if act == "linear" else "single (nonlinear)"
    readout = single_config(activation=act).readout  # the rule is `single_config`'s
    signed = {} if readout == SingleConfig.readout else {"readout": readout}  # keys of (3.1) runs unchanged
    return Cell(model, label, {"activation": act, "filters": filters, **signed}, paper)


_T3 = {  # Table 3 (settings 1–4); Table 1 is its settings 1–2 with 128 filters
    "single (linear) 128": {1: 68.71, 2: 60.59, 3: 74.81, 4: 74.63},
    "single (linear) 512": {1: 67.63, 2: 63.04, 3: 74.54, 4: 72.98},
    "single (nonlinear) 128": {1: 79.48, 2: 72.29, 3: 72.69, 4: 68.60},
    "single (nonlinear) 512": {1: 78.18, 2: 52.09, 3: 67.78, 4: 61.65},
    "moe (linear)": {
        1: (92.99, 2.11, 1.300, 0.044),
        2: (88.48, 1.96, 1.294, 0.036),
        3: (95.93, 1.34, 1.160, 0.100),
        4: (93.30, 1.48, 1.160, 0.155),
    },
    "moe (nonlinear)": {
        1: (99.46, 0.55, 0.098, 0.087),
        2: (98.09, 1.27, 0.171, 0.103),
        3: (99.99, 0.02, 0.008, 0.011),
        4: (98.92, 1.18, 0.089, 0.120),
    },
}
_T78 = {  # Table 7 (setting 3) and Table 8 (settings 1, 2): single models, 128 filters
    "linear": {1: 68.71, 2: 60.59, 3: 74.81},
    "cubic": {1: 79.48, 2: 72.29, 3: 72.69},
    "relu": {1: 72.28, 2: 80.12, 3: 73.45},
    "celu": {1: 81.75, 2: 78.99, 3: 76.91},
    "gelu": {1: 79.04, 2: 82.01, 3: 74.01},
    "tanh": {1: 81.72, 2: 81.03, 3: 74.76},
}


def _acc_only(values: dict[int, float]) -> dict[int, tuple]:
    return {s: (v, None, None, None) for s, v in values.items()}


def _table3_cells(filters: tuple[int, ...], settings: tuple[int, ...]) -> list[Cell]:
    cells = []
    for act, kind in (("linear", "single (linear)"), ("cubic", "single (nonlinear)")):
        for J in filters:
            paper = {s: v for s, v in _T3[f"{kind} {J}"].items() if s in settings}
            cells.append(_single(act, J, f"{kind}, {J} filters", _acc_only(paper)))
    for act, kind in (("linear", "moe (linear)"), ("cubic", "moe (nonlinear)")):
        paper = {s: v for s, v in _T3[kind].items() if s in settings}
        cells.append(_moe(act, f"{kind}, 8×16 filters", paper))
    return cells


TARGETS: dict[str, list[Cell]] = {
    "table1": _table3_cells((128,), (1, 2)),
    "table3": _table3_cells((128, 512), (1, 2, 3, 4)),
    "table7": [_single(act, 128, f"single ({act})", _acc_only(v)) for act, v in _T78.items()],
    "table10": [
        _moe(
            "cubic",
            f"same init, switch LB {coef}, M={M}",
            {1: paper},
            M=M,
            same_init=True,
            load_balancing="switch",
            lb_coef=coef,
        )
        for coef, by_m in (
            (0.1, {8: (72.18, 1.16, 1.358, 0.010), 32: (70.88, 0.60, 1.381, 0.002)}),
            (0.03, {8: (79.97, 1.61, 1.237, 0.041), 32: (77.02, 0.51, 1.252, 0.010)}),
            (0.01, {8: (78.59, 2.19, 1.252, 0.048), 32: (79.15, 0.87, 1.221, 0.014)}),
        )
        for M, paper in by_m.items()
    ],
    "table11": [
        _moe(
            "cubic",
            f"{'normalized GD' if update == 'normalized' else 'GD'}, {'with' if coef else 'no'} LB, M=32",
            {1: (acc, std, None, None)},
            M=32,
            expert_update=update,
            load_balancing="switch" if coef else "none",
            lb_coef=coef,
        )
        for update, coef, acc, std in (
            ("normalized", TABLE11_LB_COEF, 99.01, 0.97),
            ("gd", TABLE11_LB_COEF, 98.64, 0.34),
            ("normalized", 0.0, 99.47, 0.48),
            ("gd", 0.0, 79.53, 1.41),
        )
    ],
}
TARGET_HELP = {
    "table1": "Table 1: single vs MoE (linear/nonlinear), settings 1-2",
    "table3": "Table 3: Table 1 for settings 1-4 with 128 and 512-filter single models",
    "table7": "Tables 7/8: single CNNs with six activations, settings 3 and 1-2",
    "table10": "Table 10: nonlinear MoE with identical expert init and load balancing, setting 1",
    "table11": "Table 11: normalized GD vs GD, with/without load balancing, M=32, setting 1",
}


def target_settings(target: str) -> tuple[int, ...]:
    """Settings for which the paper reports the target's numbers."""
    return tuple(sorted({s for cell in _cells(target) for s in cell.paper}))


def _cells(target: str) -> list[Cell]:
    if target not in TARGETS:
        raise ValueError(f"target must be one of {sorted(TARGETS)}, got {target!r}")
    return TARGETS[target]


def expand(
    target: str, settings: list[int], seeds: int, seed: int = 0, variant: str = "paper", tier: str = "full"
) -> list[dict]:
    """The grid of independent run configs of a target: cells × (settings the paper has) × seeds."""
    cells = _cells(target)
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if tier not in TIER_SIZES:
        raise ValueError(f"tier must be one of {sorted(TIER_SIZES)}, got {tier!r}")
    if not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"seeds must be an integer >= 1, got {seeds!r}")
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    have = target_settings(target)
    chosen = [s for s in dict.fromkeys(settings) if s in have]
    if not chosen:
        raise ValueError(f"settings: {target} has paper numbers for settings {list(have)}, got {settings}")
    configs = []
    for cell in cells:
        for s in chosen:
            if s not in cell.paper:
                continue
            for i in range(seeds):
                configs.append(
                    {"model": cell.model, "variant": variant, "setting": s, "seed": seed + i, "tier": tier}
                    | cell.params
                )
    return configs


def run_key(config: dict) -> str:
    """A readable, unique file stem for a run config (the hash covers every field)."""
    text = json.dumps(config, sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    slug = config["model"].replace(" ", "-").replace("(", "").replace(")", "")
    return f"{slug}-s{config['setting']}-seed{config['seed']}-{config['tier']}-{digest}"


def _seed_of(config: dict) -> int:
    """Training seed of a run: a hash of its whole config (data depend on seed and setting only)."""
    text = json.dumps(config, sort_keys=True)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") >> 1


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
        return dict(config) | _run_single(config, train_set, test_set, seed, progress)
    return dict(config) | _run_moe(config, signals, train_set, test_set, seed, progress)


def _run_single(config, train_set, test_set, seed, progress) -> dict:
    options = {key: config[key] for key in ("steps", "readout") if key in config}
    cfg = single_config(config["variant"], J=config["filters"], activation=config["activation"], **options)
    result = train_single(train_set, cfg, seed, progress)
    test = prepare(test_set, cfg.expert_config())
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
    options = {k: config[k] for k in (*MOE_DEFAULTS, "activation", "steps") if k in config}
    cfg = variant_config(config["variant"], **options)
    result = train(train_set, signals, cfg, seed, progress)
    test = prepare(test_set, cfg)
    report = evaluate(result, test, signals, cfg, seed)
    K = signals.V.shape[0]
    train_counts = dispatch_counts(train_set.cluster, result.last_routes, K, cfg.M)
    # Def. D.3 on the effective filters a_j w_j (a logit-0 filter points the other way)
    k_star = professions(effective_filters(result.W0, cfg), signals.V)
    sets = profession_sets(k_star, K)
    f_all = all_expert_outputs(test, result.W, cfg)
    acc = expert_cluster_accuracy(test.y, test.cluster, f_all, K)
    routes_nf = np.argmax(test.s @ result.Theta, axis=1)
    to_profession = [float(np.isin(routes_nf[test.cluster == k], sets[k]).mean()) for k in range(K)]
    curves = {k: result.history.pop(k) for k in list(result.history) if k.startswith(("expert_", "router_"))}
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


# ------------------------------------------------------------------------------------ runs on disk


def load_or_run(config: dict, runs_dir: Path, progress: bool) -> tuple[dict, bool]:
    """The finished record of `config` from runs_dir, or run it now and store it atomically."""
    path = runs_dir / f"{run_key(config)}.json"
    if path.exists():
        record = json.loads(path.read_text())
        if all(record.get(k) == v for k, v in config.items()):
            return record, True
    record = run_one(config, progress)
    write_json_atomic(path, record)
    return record, False


def replicate(target: str, args) -> tuple[list[dict], list[dict]]:
    """Expand the target, load finished runs, run the rest; returns (configs, records)."""
    configs = expand(target, list(args.settings), args.seeds, args.seed, args.variant, args.tier)
    runs_dir = Path(args.out) / "runs"
    records = []
    for i, config in enumerate(configs, 1):
        record, cached = load_or_run(config, runs_dir, progress=not args.quiet)
        records.append(record)
        if not args.quiet:
            what = "kept" if cached else f"{record['seconds']:.1f} s"
            print(
                f"[{target} {i}/{len(configs)}] {config['model']} setting {config['setting']} "
                f"seed {config['seed']}: {record['test_accuracy']:.2f} % ({what})",
                file=sys.stderr,
                flush=True,
            )
    return configs, records


# ------------------------------------------------------------------------------------ reports


def _mean_std(values: list[float]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (None for a single run)."""
    arr = np.asarray(values, dtype=float)
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else None


def _fmt(mean: float, std: float | None, digits: int) -> str:
    return f"{mean:.{digits}f}" if std is None else f"{mean:.{digits}f} ± {std:.{digits}f}"


def _matches(record: dict, cell: Cell) -> bool:
    return record["model"] == cell.model and all(record.get(k) == v for k, v in cell.params.items())


def format_table(target: str, records: list[dict]) -> str:
    """Markdown: per setting, each cell's mean ± std over seeds beside the paper's value and the diff."""
    lines = []
    for s in sorted({r["setting"] for r in records}):
        lines += [
            f"\n**Setting {s}** ({data.setting(s).gamma} for γ, σ_p = {data.setting(s).sigma_p})\n",
            "| model | seeds | test accuracy (%) | paper | diff | dispatch entropy | paper | diff | steps |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for cell in _cells(target):
            rows = [r for r in records if r["setting"] == s and _matches(r, cell)]
            if not rows or s not in cell.paper:
                continue
            p_acc, p_acc_std, p_ent, p_ent_std = cell.paper[s]
            acc, acc_std = _mean_std([r["test_accuracy"] for r in rows])
            ents = [r["dispatch_entropy"] for r in rows if r["dispatch_entropy"] is not None]
            ent_txt, p_ent_txt, ent_diff = "NA", "NA", "–"
            if ents:
                ent, ent_std = _mean_std(ents)
                ent_txt = _fmt(ent, ent_std, 3)
                if p_ent is not None:
                    p_ent_txt, ent_diff = _fmt(p_ent, p_ent_std, 3), f"{ent - p_ent:+.3f}"
            steps = np.mean([r["steps"] for r in rows])
            lines.append(
                f"| {cell.label} | {len(rows)} | {_fmt(acc, acc_std, 2)} | {_fmt(p_acc, p_acc_std, 2)} | "
                f"{acc - p_acc:+.2f} | {ent_txt} | {p_ent_txt} | {ent_diff} | {steps:.0f} |"
            )
    return "\n".join(lines).lstrip("\n")


def _without_curves(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != "curves"}


def write_figures(stem: str, records: list[dict], out: Path) -> list[Path]:
    """Fig. 3 (dispatch entropy over training) and Figs 5–6 (feature/centre learning curves) as PNG."""
    moe = [r for r in records if r["model"].startswith("moe") and r.get("history")]
    if not moe:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    fig, ax = plt.subplots(figsize=(6, 4))
    for (model, s), colour in zip(
        sorted({(r["model"], r["setting"]) for r in moe}), plt.cm.tab10.colors * 4, strict=False
    ):
        runs = [r for r in moe if r["model"] == model and r["setting"] == s]
        for r in runs:
            ax.plot(r["history"]["step"], r["history"]["dispatch_entropy"], color=colour, alpha=0.25, lw=0.8)
        shortest = min(len(r["history"]["step"]) for r in runs)
        mean = np.mean([r["history"]["dispatch_entropy"][:shortest] for r in runs], axis=0)
        ax.plot(runs[0]["history"]["step"][:shortest], mean, color=colour, lw=2, label=f"{model}-{s}")
    ax.set_xlabel("training step")
    ax.set_ylabel("dispatch entropy (6.1), training set")
    ax.legend(fontsize=8)
    fig.tight_layout()
    written.append(out / f"{stem}_entropy.png")
    fig.savefig(written[-1], dpi=120)
    plt.close(fig)
    for model in sorted({r["model"] for r in moe}):
        first = min((r for r in moe if r["model"] == model), key=lambda r: (r["setting"], r["seed"]))
        fig, axes = plt.subplots(2, 2, figsize=(9, 6), sharex=True)
        titles = {
            "expert_feature": "max_j ⟨w_m,j, v_k⟩",
            "expert_center": "max_j ⟨w_m,j, c_k⟩",
            "router_feature": "⟨θ_m, v_k⟩",
            "router_center": "⟨θ_m, c_k⟩",
        }
        steps = first["history"]["step"]
        for ax, (key, title) in zip(axes.ravel(), titles.items(), strict=True):
            values = np.asarray(first["curves"][key])  # (records, M, K)
            for k in range(values.shape[2]):
                ax.plot(steps, values[:, :, k], color=plt.cm.tab10.colors[k], lw=0.8)
            ax.set_title(title, fontsize=9)
        for ax in axes[1]:
            ax.set_xlabel("training step")
        fig.suptitle(f"{model}, setting {first['setting']}, seed {first['seed']} (colour = k)", fontsize=10)
        fig.tight_layout()
        slug = model.replace(" ", "_").replace("(", "").replace(")", "")
        written.append(out / f"{stem}_curves_{slug}.png")
        fig.savefig(written[-1], dpi=120)
        plt.close(fig)
    return written


def report_stem(target: str, variant: str) -> str:
    """File stem of a target's reports: `table1` for the stated model, `table1_reference-code` else."""
    return target if variant == "paper" else f"{target}_{variant}"


def _json_path(target: str, args) -> Path:
    if not args.json:
        return Path(args.out) / f"{report_stem(target, args.variant)}.json"
    path = Path(args.json)
    many = len(getattr(args, "targets", [target])) > 1
    return path.with_name(f"{path.stem}_{target}{path.suffix}") if many else path


def run_target(target: str, args) -> int:
    """`python -m lab replicate TARGET`: runs (resuming), Markdown table, JSON, figures."""
    from lab.cli.main import versions

    start = time.perf_counter()
    _configs, records = replicate(target, args)
    out = Path(args.out)
    table = format_table(target, records)
    header = (
        f"## {TARGET_HELP[target]}\n\nvariant `{args.variant}`, tier `{args.tier}`, seeds "
        f"{args.seed}..{args.seed + args.seeds - 1}; test accuracy routes "
        f"{'with noise' if args.variant == 'reference-code' else 'noise-free (argmax h)'} for MoEs; "
        "dispatch entropy from the training set's noisy routes at the last step.\n\n"
    )
    stem = report_stem(target, args.variant)
    write_text_atomic(out / f"{stem}.md", header + table + "\n")
    payload = {
        "runs": [_without_curves(r) for r in records],
        "config": {
            "target": target,
            "settings": list(args.settings),
            "seeds": args.seeds,
            "seed": args.seed,
            "variant": args.variant,
            "tier": args.tier,
            "train_sizes": TIER_SIZES[args.tier],
            "wall_seconds": time.perf_counter() - start,
        },
        "versions": versions(),
    }
    write_json_atomic(_json_path(target, args), payload)
    figures = write_figures(stem, records, out)
    print(header + table)
    if not args.quiet:
        print(
            f"wrote {out / f'{stem}.md'}, {_json_path(target, args)}, {len(figures)} figure(s)",
            file=sys.stderr,
        )
    return 0 if all(math.isfinite(r["test_accuracy"]) for r in records) else 1


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
