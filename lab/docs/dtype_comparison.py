"""float32 beside float64: the same replication runs (same data, seeds and W⁽⁰⁾) in both precisions.

Runs of one cell, setting and seed differ only in the experts' precision, so the comparison is
paired: the mean per-seed difference in test accuracy with its 95 % Student-t interval, beside the
seed-to-seed standard deviation that the paper's ± reports. The precisions agree within seed noise
when that interval contains 0.
"""

from __future__ import annotations

import itertools

import numpy as np

from lab.chen2022.replicate_report import PAIR_LEVEL as LEVEL
from lab.chen2022.replicate_report import paired_difference
from lab.chen2022.runs import ARITHMETIC, VARIANTS
from lab.chen2022.tables import TARGETS
from lab.docs.evidence import cell_runs
from lab.docs.markdown import num, table
from lab.docs.results import Replication


def _by_seed(rep: Replication, cell, setting: int) -> dict[int, float]:
    return {r["seed"]: r["test_accuracy"] for r in cell_runs(rep, cell, setting)}


def paired_runs(wide: Replication, narrow: Replication):
    """(cell, setting, seeds, accuracy by seed in `wide`, in `narrow`) for each cell and setting of the
    target with runs of the same seeds in both files."""
    for cell in TARGETS[wide.target]:
        for setting in sorted(cell.paper):
            a, b = _by_seed(wide, cell, setting), _by_seed(narrow, cell, setting)
            seeds = sorted(set(a) & set(b))
            if seeds:
                yield cell, setting, seeds, a, b


def comparison_table(wide: Replication, narrow: Replication) -> tuple[str, int, int]:
    """The paired table of two files of one target and variant; (Markdown, rows, rows that agree)."""
    rows, agree = [], 0
    for cell, setting, seeds, a, b in paired_runs(wide, narrow):
        x, y = [a[s] for s in seeds], [b[s] for s in seeds]
        mean, low, high = paired_difference(x, y)
        holds = bool(low <= 0.0 <= high)
        agree += holds
        seed_sd = float(np.std(x, ddof=1)) if len(x) > 1 else None
        rows.append(
            (
                cell.label,
                setting,
                len(seeds),
                num(float(np.mean(x)), 4),
                num(float(np.mean(y)), 4),
                num(mean, 3),
                f"[{num(low, 3)}, {num(high, 3)}]",
                num(seed_sd, 3),
                "yes" if holds else "no",
            )
        )
    head = (
        "cell",
        "setting",
        "paired seeds",
        "float64 (%)",
        "float32 (%)",
        "float32 − float64",
        f"{LEVEL:.0%} interval",
        "seed sd (float64)",
        "agree",
    )
    return table(head, rows), len(rows), agree


def dtype_pairs(files: list[Replication]) -> list[tuple[str, str, Replication, Replication]]:
    """(variant, arithmetic, float64 file, float32 file) for each variant and arithmetic that has both
    full-tier files among `files` (a file is paired only with the file of its own variant and arithmetic)."""
    pairs = []
    for variant, arithmetic in itertools.product(VARIANTS, ARITHMETIC):
        pick = {
            r.dtype: r for r in files if (r.variant, r.arithmetic, r.tier) == (variant, arithmetic, "full")
        }
        if {"float64", "float32"} <= set(pick):
            pairs.append((variant, arithmetic, pick["float64"], pick["float32"]))
    return pairs


def dtype_comparisons(files: list[Replication]) -> list[str]:
    """A paired float32 / float64 section for each variant and arithmetic of a target that has both."""
    parts = []
    for variant, arithmetic, wide, narrow in dtype_pairs(files):
        text, rows, agree = comparison_table(wide, narrow)
        parts.append(
            f"#### float32 beside float64, variant `{variant}`, arithmetic `{arithmetic}`\n\n"
            f"`{narrow.name}` against `{wide.name}`: the same data, seeds and "
            "initial filters, the experts' arithmetic in single or double precision. "
            f"{agree} of {rows} cells agree within seed noise (the {LEVEL:.0%} Student-t interval of "
            "the mean paired difference contains 0).\n\n" + text
        )
    return parts
