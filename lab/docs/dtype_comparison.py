"""float32 beside float64: the same replication runs (same data, seeds and W⁽⁰⁾) in both precisions.

Runs of one cell, setting and seed differ only in the experts' precision, so the comparison is
paired: the mean per-seed difference in test accuracy with its 95 % Student-t interval, beside the
seed-to-seed standard deviation that the paper's ± reports. The precisions agree within seed noise
when that interval contains 0. The replicate analysis beside the summaries holds the pairing
(`lab.chen2022.replicate_analysis`, its `precision`); this page formats it.
"""

from __future__ import annotations

from typing import Any

from lab.chen2022.replicate_analysis import replicate_analysis as analysis_of
from lab.chen2022.tables import TARGETS
from lab.docs.markdown import num, table
from lab.docs.results import Replication


def replicate_analysis(files: list[Replication]) -> dict[str, Any]:
    """The replicate analysis the Chen et al. files were read beside (`results.load_analysis`); without
    any, the analysis of no summaries (nothing to pair or count)."""
    return next((r.analysis for r in files if r.target in TARGETS), None) or analysis_of({})


def comparison_table(pair: dict[str, Any]) -> str:
    """The paired table of one float64 summary and its float32 twin (a `precision` entry), in Markdown."""
    rows = [
        (
            row["cell"],
            row["setting"],
            row["seeds"],
            num(row["float64"], 4),
            num(row["float32"], 4),
            num(row["difference"], 3),
            f"[{num(row['interval'][0], 3)}, {num(row['interval'][1], 3)}]",
            num(row["seed_sd"], 3),
            "yes" if row["agree"] else "no",
        )
        for row in pair["rows"]
    ]
    head = (
        "cell",
        "setting",
        "paired seeds",
        "float64 (%)",
        "float32 (%)",
        "float32 − float64",
        f"{pair['level']:.0%} interval",
        "seed sd (float64)",
        "agree",
    )
    return table(head, rows)


def dtype_comparisons(files: list[Replication]) -> list[str]:
    """A paired float32 / float64 section for each variant and arithmetic of a target that has both."""
    names = {r.name for r in files}
    return [
        f"#### float32 beside float64, variant `{pair['variant']}`, arithmetic `{pair['arithmetic']}`\n\n"
        f"`{pair['float32']}` against `{pair['float64']}`: the same data, seeds and "
        "initial filters, the experts' arithmetic in single or double precision. "
        f"{pair['agree']} of {len(pair['rows'])} cells agree within seed noise (the {pair['level']:.0%} "
        "Student-t interval of the mean paired difference contains 0).\n\n" + comparison_table(pair)
        for pair in replicate_analysis(files)["precision"]
        if {pair["float64"], pair["float32"]} <= names
    ]
