"""The kernels' benchmark summary: its writer (`report`, the one reader of pytest-benchmark's saved files),
the performance targets it judges (`targets`, `targets.toml`) and the lab's findings on its kernels
(`report.findings.toml`), which read it; and what the kernels cost to compile (`compile_profile`)."""

__all__ = [  # the public modules, each a one-line docstring away from what it holds
    "compile_profile",
    "figure",
    "history",
    "peak",
    "peak_numpy",
    "report",
    "targets",
]
