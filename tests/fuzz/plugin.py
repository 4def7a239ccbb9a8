"""The pytest side of a fuzz campaign (`-p tests.fuzz.plugin`): only Hypothesis tests, a deadline, counts.

Keeps the collected tests that Hypothesis drives (`@given`) and, with MOE_LAB_FUZZ_SHARD=`i/n`, the i-th
of n interleaved shares of them (sorted by node id), so that n workers split the suite; with
MOE_LAB_FUZZ_ORDER_SEED, its modules run in an order drawn from that seed (a module's tests stay
together). Once the time MOE_LAB_FUZZ_DEADLINE (a Unix time) has passed, the tests not yet started are
skipped. With MOE_LAB_FUZZ_SEED, each test draws its examples from its own seed, derived from that
seed and its node id: unlike `--hypothesis-seed` (or `@seed`), which turn the example database off,
this keeps the database on, so every failure found is stored for replay. Each test's Hypothesis
statistics (test cases per status, distinct failures, its seed) and each failed test are appended as
JSON lines to MOE_LAB_FUZZ_STATS.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from collections import Counter

import pytest
from hypothesis.statistics import collector


def shard(names: list[str], spec: str) -> set[str]:
    """The names in share `i` of `n` (spec `i/n`, 0 <= i < n), dealt in turn from the sorted names."""
    index, count = (int(part) for part in spec.split("/"))
    if not 0 <= index < count:
        raise ValueError(f"MOE_LAB_FUZZ_SHARD must be i/n with 0 <= i < n, got {spec!r}")
    return set(sorted(names)[index::count])


def seed_of_test(round_seed: int, nodeid: str) -> int:
    """One test's Hypothesis seed within a round: a function of the round's seed and the node id alone."""
    return int.from_bytes(hashlib.sha256(f"{round_seed}:{nodeid}".encode()).digest()[:8], "big")


def summarize(nodeid: str, stats: dict) -> dict:
    """One test's counts from Hypothesis's statistics: test cases per status over all phases."""
    statuses: Counter[str] = Counter()
    failures = 0
    for key, phase in stats.items():
        if key.endswith("-phase") and isinstance(phase, dict):
            statuses.update(case["status"] for case in phase.get("test-cases", []))
            failures = max(failures, phase.get("distinct-failures", 0))
    return {
        "nodeid": nodeid,
        "examples": sum(statuses.values()),
        "valid": statuses["valid"],
        "invalid": statuses["invalid"] + statuses["overrun"],
        "interesting": statuses["interesting"],
        "distinct_failures": failures,
        "stopped_because": stats.get("stopped-because", ""),
    }


def _is_hypothesis(item: pytest.Item) -> bool:
    function = getattr(item, "obj", None)
    return bool(getattr(function, "is_hypothesis_test", False))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    keep = [item for item in items if _is_hypothesis(item)]
    spec = os.environ.get("MOE_LAB_FUZZ_SHARD")
    if spec:
        mine = shard([item.nodeid for item in keep], spec)
        keep = [item for item in keep if item.nodeid in mine]
    order = os.environ.get("MOE_LAB_FUZZ_ORDER_SEED")
    if order:
        modules = sorted({item.nodeid.split("::")[0] for item in keep})
        random.Random(int(order)).shuffle(modules)
        rank = {module: i for i, module in enumerate(modules)}
        keep.sort(key=lambda item: rank[item.nodeid.split("::")[0]])  # stable: a module keeps its order
    kept = set(map(id, keep))
    dropped = [item for item in items if id(item) not in kept]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


def _append(line: dict) -> None:
    path = os.environ.get("MOE_LAB_FUZZ_STATS")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(line) + "\n")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed:
        _append({"nodeid": report.nodeid, "failed": True, "when": report.when})


def pytest_runtest_setup(item: pytest.Item) -> None:
    deadline = os.environ.get("MOE_LAB_FUZZ_DEADLINE")
    if deadline and time.time() > float(deadline):
        pytest.skip("the fuzz campaign's time is up")


@pytest.hookimpl(hookwrapper=True, trylast=True)  # inside Hypothesis's own wrapper, so its report still works
def pytest_runtest_call(item: pytest.Item):
    if not _is_hypothesis(item):
        yield
        return
    round_seed = os.environ.get("MOE_LAB_FUZZ_SEED")
    seed = None if round_seed is None else seed_of_test(int(round_seed), item.nodeid)
    # Where `@seed` keeps its value, without the `database=None` it adds (read by Hypothesis at run time).
    wrapped = getattr(item.obj, "__func__", item.obj)
    before = getattr(wrapped, "_hypothesis_internal_use_seed", None)
    previous = collector.value

    def note(stats: dict) -> None:
        _append({**summarize(item.nodeid, stats), "seed": seed})
        if previous is not None:
            previous(stats)

    if seed is not None:
        wrapped._hypothesis_internal_use_seed = seed
    try:
        with collector.with_value(note):
            yield
    finally:
        wrapped._hypothesis_internal_use_seed = before
