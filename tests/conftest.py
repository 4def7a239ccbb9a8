"""Hypothesis profiles `ci` (default), `dev` and `fuzz` (from `lab.testing`), the test files longest
first, a loopback Dask cluster, fake plugin packages, and the parsed arguments of `python -m lab
replicate`."""

import argparse
import collections
import importlib
import itertools
import textwrap
from pathlib import Path

import pytest

from lab.testing import load_profile
from tests import durations

load_profile()

_SECONDS: collections.Counter = collections.Counter()  # each test file's seconds in this session


def pytest_addoption(parser):
    parser.addoption(
        "--store-durations",
        action="store_true",
        help="after a passing run, write each test file's seconds to tests/durations.json (the order of "
        "the next runs)",
    )


def pytest_collection_modifyitems(items):
    """The files longest first (`tests.durations`): pytest-xdist (`--dist loadfile
    --no-loadscope-reorder`) hands them out in this order, so no long file starts last while the other
    worker idles."""
    durations.longest_first(items, durations.load(durations.DURATIONS))


def pytest_runtest_logreport(report):
    _SECONDS[durations.file_of(report.nodeid)] += report.duration  # the controller gets every worker's


def pytest_sessionfinish(session, exitstatus):
    stored = session.config.getoption("store_durations") and not hasattr(session.config, "workerinput")
    if stored and exitstatus == 0:
        durations.store(durations.DURATIONS, _SECONDS)


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

    from lab.chen2022.declarations import routing_probability
    from lab.sweeps.tasks import run_task

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
def without_figures(request, monkeypatch):
    """A replication's figures left undrawn (two thirds of a small target's `replicate`), for the tests of
    its runs, stores and summaries, which look at none; a test marked `figures` draws them, as the tests of
    the figures themselves do (`tests/chen2022/test_replicate_figures.py`), and the `replicate` commands
    that the interrupt and kernel-cache tests run in processes of their own."""
    if request.node.get_closest_marker("figures") is None:
        from lab.chen2022 import replicate

        monkeypatch.setattr(replicate, "write_figures", lambda stem, records, out: [])
        monkeypatch.setattr(replicate, "write_cells_figure", lambda target, folder: None)


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


_PLUGIN_NUMBERS = itertools.count()


@pytest.fixture
def install_plugin(tmp_path, monkeypatch):
    """`install_plugin(package, source) -> module name`: a fake installed distribution `package` whose one
    module, of that source, is advertised in the `moe_lab.plugins` group. The registry starts empty (the
    lab's own plugins load again on first use) and is restored after the test."""
    from lab.core import registry

    for name, empty in (("_ORIGINS", {}), ("_OWNERS", {}), ("_CONFLICTS", []), ("_LOADED", set())):
        monkeypatch.setattr(registry, name, empty)
    monkeypatch.setattr(registry, "_REGISTRY", {k: {} for k in registry.DECLARATION_KINDS})
    monkeypatch.syspath_prepend(str(tmp_path))

    def install(package: str, source: str) -> str:
        module = f"fake_plugin_{next(_PLUGIN_NUMBERS)}"
        (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
        info = tmp_path / f"{module}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[{registry.PLUGIN_GROUP}]\n{module} = {module}\n")
        importlib.invalidate_caches()
        return module

    return install


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
