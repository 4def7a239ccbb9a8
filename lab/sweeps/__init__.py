"""Sweeps: TOML grids of experiments run on Dask or in-process into a resumable SQLite store, with reports."""

__all__ = [  # the public modules, each a one-line docstring away from what it holds
    "report",
    "sweep",
    "tasks",
]
