"""The lab's machinery: result records, registries, statistics, atomic writes, progress, plots."""

__all__ = [  # the public modules, each a one-line docstring away from what it holds
    "claim_figures",
    "compare",
    "descriptions",
    "errors",
    "io",
    "keys",
    "machine",
    "plots",
    "progress",
    "provenance",
    "records",
    "registry",
    "schema",
    "stats",
    "store",
    "tasks",
    "timing",
    "validate",
    "verdict_report",
    "verify_file",
]
