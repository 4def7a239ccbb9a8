"""Chen et al.'s targets as `replicate` and the kernel cache reach them: one run store, its kernel runs."""

from __future__ import annotations

import json

from lab.chen2022 import replicate as R
from lab.chen2022.replicate_runs import (
    _VALUES_ONLY,
    RUNS,
    TRAINING,
    apart_from_structured_moe,
    check_training_config,
    short_runs,
)
from lab.core import registry


def test_every_target_shares_the_run_store_and_the_kernel_runs_are_declared():
    targets = registry.replications()
    assert {name for name, target in targets.items() if target.runs == RUNS} == set(R.TARGETS)
    assert registry.declared("training")[TRAINING.name] == TRAINING
    assert TRAINING.run.__module__ == R.run_one.__module__  # the child imports the run's module alone


def test_one_child_run_per_configuration_that_changes_an_array_type():
    configs = [c for t in ("table1", "table3", "table7") for c in R.expand(t, [1, 2, 3, 4], 10)]
    runs = short_runs(configs)
    assert all(r["steps"] == 2 and r["tier"] == "quick" and r["seed"] == 0 for r in runs)
    kept = {json.dumps({k: v for k, v in r.items() if k not in _VALUES_ONLY}) for r in runs}
    assert len(kept) == len(runs) < len(configs)
    assert short_runs([]) == []
    apart = [r for r in runs if apart_from_structured_moe(r)]
    assert 0 < len(apart) < len(runs) and all(r["model"].startswith("single") for r in apart)


def test_verify_has_two_children_compile_disjoint_kernels():
    """verify's runs: the dense ones (the routed kernels) apart from the structured cubic MoE."""
    runs = short_runs(check_training_config())
    apart = [r for r in runs if apart_from_structured_moe(r)]
    assert 0 < len(apart) < len(runs) and all(r["arithmetic"] == "dense" for r in apart)
