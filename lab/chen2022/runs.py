"""One replication run of Chen et al. 2022's synthetic tables: its configuration and its record.

`expand` turns a target (cells of `lab.chen2022.tables` × settings × seeds) into independent JSON-able
run configurations and `run_one` runs one of them, deterministically for its config. This module and
the science modules it imports are what a run's numbers depend on: `run_code` fingerprints them, so
a change to how runs are stored, resumed or reported never makes a stored run stale.
"""

from __future__ import annotations

import hashlib
import json

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
from lab.chen2022.tables import MODELS, MOE_DEFAULTS, TARGETS, Cell
from lab.chen2022.training import DTYPES, TrainConfig, evaluate, prepare, train, variant_config
from lab.core import validate
from lab.core.errors import InputError
from lab.core.provenance import code_fingerprint

TIER_SIZES = {"full": (16_000, 16_000), "quick": (2_000, 2_000)}  # (train, test): App. A.2 / smoke
VARIANT_NAMES = ("paper", "reference-code")
CURVE_THINNING, CURVE_DECIMALS = 10, 4  # Figs 5–6 curves: every 10th record (100 steps), 4 decimals
ARITHMETIC = ("structured", "dense")  # the experts' kernels: Def. 3.1's structure, or the dense reference


def target_settings(target: str) -> tuple[int, ...]:
    """Settings for which the paper reports the target's numbers."""
    return tuple(sorted({s for cell in _cells(target) for s in cell.paper}))


def _cells(target: str) -> list[Cell]:
    return TARGETS[validate.choice(target, "target", TARGETS)]


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
        ("variant", variant, VARIANT_NAMES),
        ("tier", tier, tuple(TIER_SIZES)),
        ("dtype", dtype, DTYPES),
        ("arithmetic", arithmetic, ARITHMETIC),
    ):
        validate.choice(value, name, allowed)
    validate.integer(seeds, "seeds", low=1)
    validate.integer(seed, "seed", low=0)
    chosen_values = {k: v for k, v in (("eta", eta), ("sigma0", sigma0)) if v is not None}
    for name, value in chosen_values.items():
        validate.real(value, name, low=0.0, low_open=True)
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
    test = prepare(test_set, cfg.expert, signals)
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


def run_code() -> str:
    """Fingerprint of the science code a run's numbers depend on (stored in every run record)."""
    return code_fingerprint(__name__)
