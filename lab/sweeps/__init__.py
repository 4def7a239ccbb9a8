"""Sweeps: TOML grids of experiments run on Dask or in-process into a resumable SQLite store, with reports."""
