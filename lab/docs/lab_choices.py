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
from lab.chen2022.runs import TIER_SIZES, VARIANT_NAMES, expand, moe_run_config, single_run_config
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


def declared(target: str) -> list[Choice]:
    """Every declared value of a target's runs, MoE fields first, then single CNNs', then the data's; each
    value read from the runs' resolved configurations (one seed) per variant."""
    models = {cell.model.split(" ")[0] for cell in TARGETS[target]}
    settings = [s for c in TARGETS[target] for s in c.paper]
    runs = {v: expand(target, settings, 1, variant=v) for v in VARIANT_NAMES}
    found = []
    for model, read in (("moe", moe_run_config), ("single", single_run_config)):
        if model not in models:
            continue
        configs = {v: [read(c) for c in rs if c["model"].startswith(model)] for v, rs in runs.items()}
        own = CHOICES.get("target", {}).get(target, {}).get(model, {})  # the target's own over the defaults
        for field, entry in {**CHOICES[model], **own}.items():
            values = {v: ", ".join(sorted({str(_value(r, field)) for r in rs})) for v, rs in configs.items()}
            found.append(_choice(field, values, entry))
    train, test = TIER_SIZES["full"]
    for field, value in (("n_train", train), ("n_test", test)):
        found.append(_choice(field, dict.fromkeys(VARIANT_NAMES, str(value)), CHOICES["data"][field]))
    if any(3 in cell.paper for cell in TARGETS[target]):
        law = setting(3)
        text = f"α ~ U({law.alpha.low:g}, {law.alpha.high:g}), γ ~ U({law.gamma.low:g}, {law.gamma.high:g})"
        found.append(_choice("setting 3", dict.fromkeys(VARIANT_NAMES, text), CHOICES["data"]["setting_3"]))
    return found


def _value(config: Any, field: str) -> Any:
    """A field of a run's configuration: its own, or a single CNN's expert's (`SingleConfig.expert`)."""
    return getattr(config, field) if hasattr(config, field) else getattr(config.expert, field)


def _choice(name: str, values: dict[str, str], entry: dict[str, str]) -> Choice:
    source = entry["source"]
    if source not in SOURCES:
        raise ValueError(f"lab_choices.toml: {name}: source must be one of {SOURCES}, got {source!r}")
    reason = entry.get("where") if source == "paper" else entry.get("why")
    if not reason:
        need = "where" if source == "paper" else "why"
        raise ValueError(f"lab_choices.toml: {name}: a {source!r} value needs `{need}`")
    return Choice(name, values, source, reason)
