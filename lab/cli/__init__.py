"""The command line, `python -m lab COMMAND`: verify, replicate, docs and the commands plugins declare."""

__all__ = [  # the public modules, each a one-line docstring away from what it holds
    "bench_history",
    "bench_report",
    "docs",
    "kernel_cache",
    "kernels",
    "main",
    "replicate",
    "sweep",
    "verify",
]
