"""Hypothesis profiles `ci` (default), `dev` and `fuzz` (database kept), a loopback Dask cluster, and
the parsed arguments of `python -m lab replicate`."""

import argparse
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

_common = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("ci", max_examples=25, derandomize=True, database=None, print_blob=True, **_common)
settings.register_profile("dev", max_examples=50, **_common)
settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("MOE_LAB_FUZZ_EXAMPLES", "2000")),
    database=DirectoryBasedExampleDatabase(".hypothesis/examples"),
    **_common,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="module")
def client():
    """One two-worker loopback Dask cluster per test module (start-up costs seconds), warmed up.

    Tasks defined in test modules reach the workers by reference (`tests.sweeps.test_sweep...`), so
    the repository root goes on sys.path first: spawned workers inherit it, whatever started pytest.
    """
    distributed = pytest.importorskip("distributed")
    import logging
    import sys

    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)

    from lab.sweeps.tasks import routing_probability, run_task

    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            host="127.0.0.1",
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as dask_client,
    ):
        warm = {"M": 2, "gap": 0.0, "noise": "uniform", "a": 0.0, "b": 1.0, "draws": 10, "seed": 0}
        dask_client.run(run_task, routing_probability, warm)  # imports + Numba cache
        yield dask_client


@pytest.fixture
def registered():
    """`registered(fn_or_declaration)` puts it into its registry for one test and takes it out after."""
    from lab.core import registry

    added = []

    def add(item):
        for declaration in getattr(item, registry.ATTRIBUTE, (item,)):
            registry.add(declaration)
            added.append(declaration)
        return item

    yield add
    for declaration in added:
        registry.remove(declaration)


@pytest.fixture
def replicate_args(tmp_path):
    """`python -m lab replicate`'s parsed arguments: Table 1, quick tier, two seeds, --out tmp_path;
    any field by keyword."""

    def make(**fields):
        base = dict(
            targets=["table1"],
            settings=[1, 2, 3, 4],
            seeds=2,
            seed=0,
            variant="paper",
            tier="quick",
            dtype="float64",
            arithmetic="structured",
            json=None,
            out=str(tmp_path),
            jobs=1,
            quiet=True,
            keep_stale=False,
            timing=None,
        )
        return argparse.Namespace(**(base | fields))

    return make
