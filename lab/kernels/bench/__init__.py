"""The kernels' benchmark summary: its writer (`report`, the one reader of pytest-benchmark's saved files),
the performance targets it judges (`targets`, `targets.toml`) and the lab's findings on its kernels
(`report.findings.toml`), which read it; what the kernels cost to compile (`compile_profile`); and the
references a replication timing measures itself against (`peak`, `gemm`)."""

__all__ = [  # the public modules, each a one-line docstring away from what it holds
    "compile_profile",
    "figure",
    "gemm",
    "history",
    "peak",
    "peak_numpy",
    "report",
    "targets",
]
