"""Where each value of a replication target's runs comes from: the paper, the authors' code or the lab.

The sources live in `lab_choices.toml` beside this module (editable without Python); the values are read
from the runs' own configurations (`lab.chen2022.runs`: `moe_run_config`, `single_run_config`), so a
declared value can never drift from the value a run uses.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.chen2022.data import setting
from lab.chen2022.runs import TIER_SIZES, VARIANTS, expand, moe_run_config, single_run_config
from lab.chen2022.tables import TARGETS

SOURCES = ("paper", "lab", "authors' code")
CHOICES: dict[str, Any] = tomllib.loads(Path(__file__).with_suffix(".toml").read_text("utf-8"))


@dataclass(frozen=True)
class Choice:
    """One value of a target's runs: its name, its value per variant, its source and where or why."""

    name: str
    values: dict[str, str]  # variant: the value(s) its runs use, as text
    source: str
    reason: str  # the paper's location (source "paper") or the lab's reason (source "lab")


def _entries(target: str, model: str) -> dict[str, dict[str, str]]:
    """The declared sources of a model's fields for a target: the defaults, with the target's own entries."""
    own = CHOICES.get("target", {}).get(target, {}).get(model, {})
    return {**CHOICES[model], **own}


def _run_configs(target: str, model: str) -> dict[str, list[Any]]:
    """The resolved configurations of the target's runs of that model (one seed), per variant."""
    read = moe_run_config if model == "moe" else single_run_config
    settings = [s for c in TARGETS[target] for s in c.paper]
    return {
        variant: [
            read(c) for c in expand(target, settings, 1, variant=variant) if c["model"].startswith(model)
        ]
        for variant in VARIANTS
    }


def _values(runs: dict[str, list[Any]], field: str) -> dict[str, str]:
    """The distinct values of `field` over the resolved runs, per variant, as text."""
    return {
        variant: ", ".join(sorted({str(getattr(r, field)) for r in found})) for variant, found in runs.items()
    }


def declared(target: str) -> list[Choice]:
    """Every declared value of a target's runs, MoE fields first, then single CNNs', then the data's."""
    if target not in TARGETS:
        raise ValueError(f"target must be one of {sorted(TARGETS)}, got {target!r}")
    models = {cell.model.split(" ")[0] for cell in TARGETS[target]}
    found = []
    for model in ("moe", "single"):
        if model in models:
            runs = _run_configs(target, model)
            for field, entry in _entries(target, model).items():
                found.append(_choice(field, _values(runs, field), entry))
    train, test = TIER_SIZES["full"]
    for field, value in (("n_train", train), ("n_test", test)):
        found.append(_choice(field, dict.fromkeys(VARIANTS, str(value)), CHOICES["data"][field]))
    if any(3 in cell.paper for cell in TARGETS[target]):
        law = setting(3)
        text = f"α ~ U({law.alpha.low:g}, {law.alpha.high:g}), γ ~ U({law.gamma.low:g}, {law.gamma.high:g})"
        found.append(_choice("setting 3", dict.fromkeys(VARIANTS, text), CHOICES["data"]["setting_3"]))
    return found


def _choice(name: str, values: dict[str, str], entry: dict[str, str]) -> Choice:
    source = entry["source"]
    if source not in SOURCES:
        raise ValueError(f"lab_choices.toml: {name}: source must be one of {SOURCES}, got {source!r}")
    reason = entry.get("where") if source == "paper" else entry.get("why")
    if not reason:
        need = "where" if source == "paper" else "why"
        raise ValueError(f"lab_choices.toml: {name}: a {source!r} value needs `{need}`")
    return Choice(name, values, source, reason)
