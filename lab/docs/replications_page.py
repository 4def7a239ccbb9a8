"""docs/replications.md from `templates/replications.md.j2`: each replication file under results/replicate
beside the paper's numbers."""

from __future__ import annotations

from typing import Any

from lab.chen2022.replicate_report import format_cells
from lab.chen2022.runs import VARIANT_NAMES
from lab.chen2022.tables import TARGET_HELP, TARGETS, Cell
from lab.docs.evidence import replicate_analysis
from lab.docs.lab_choices import declared
from lab.docs.results import ReplicationFile, Results
from lab.docs.templating import render
from lab.makkuva2020 import fig1_experiment as fig1

PAPER_SEEDS = 10  # Chen et al. average every cell over ten runs (App. A.2)
MAKKUVA_TARGET = "makkuva-fig1"
MAKKUVA_INITS = 20  # the committed Fig. 1 replication: enough inits for a 99 % interval narrower than 0.35
MAKKUVA_STATED = ("k", "d", "sigma", "batch")  # the `Fig1Config` values Sec. 4 states


def command(target: str, variant: str = "paper") -> str:
    """The command that writes a target's replication file into results/replicate at the paper's protocol."""
    seeds = PAPER_SEEDS if target != MAKKUVA_TARGET else MAKKUVA_INITS
    extra = f" --variant {variant}" if variant != "paper" else ""
    return f"python -m lab replicate {target} --seeds {seeds}{extra} --out results/replicate"


def chen_file(rep: ReplicationFile) -> dict[str, Any]:
    """A Chen et al. file with its seeds and settings, its cells as tables, the runs' own training seconds
    summed (None when none records them) and the wall time of the invocation that last wrote it."""
    runs = rep.payload["runs"]
    seconds = [r["seconds"] for r in runs if isinstance(r.get("seconds"), int | float)]
    wall = rep.payload["config"].get("wall_seconds")
    return {
        "rep": rep,
        "seeds": sorted({r["seed"] for r in runs}),
        "settings": sorted({r["setting"] for r in runs}),
        "cells": format_cells(rep.target, rep.payload["cells"]),
        "training_seconds": sum(seconds) if seconds else None,
        "wall_seconds": wall if isinstance(wall, int | float) else None,
    }


def makkuva_file(rep: ReplicationFile) -> dict[str, Any]:
    """The Fig. 1 file with each method's mean final errors and the configuration values Sec. 4 does not
    state (nested groups spelled `group.name`, the regularisers `reg.mu`, …)."""
    flat = {}
    for name, value in rep.payload.get("config", {}).items():
        flat |= {f"{name}.{k}": v for k, v in value.items()} if isinstance(value, dict) else {name: value}
    config = {k: v for k, v in flat.items() if k not in MAKKUVA_STATED}
    return {"rep": rep, "means": rep.payload["means"], "config": config}


def replications_page(results: Results) -> str:
    """docs/replications.md: per target (the Chen et al. tables, then Fig. 1) its files, stated model
    first, the full tier first, float64 first."""
    targets, pairs = {}, replicate_analysis(results)["precision"]
    for target in [*TARGETS, MAKKUVA_TARGET]:
        files = sorted(
            (r for r in results.replications if r.target == target),
            key=lambda r: (r.variant != "paper", r.tier != "full", r.dtype != "float64", r.name),
        )
        chen_target, names = target != MAKKUVA_TARGET, {r.name for r in files}
        targets[target] = {
            "files": [chen_file(r) if chen_target else makkuva_file(r) for r in files],
            "choices": declared(target) if chen_target else [],
            # the paired float32 / float64 comparisons whose two files are both committed
            "comparisons": [p for p in pairs if {p["float64"], p["float32"]} <= names],
        }
    return render(
        "replications.md.j2",
        "replications.md",
        results,
        targets=targets,
        chen_help=TARGET_HELP,
        makkuva_target=MAKKUVA_TARGET,
        methods=fig1.METHODS,
        variants=VARIANT_NAMES,
        command=command,
        paper_seeds=PAPER_SEEDS,
        paper_values=f"{Cell.__module__.replace('.', '/')}.py",
    )
