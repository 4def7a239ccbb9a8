"""Premise and negative-control tests of the substrate checks (A1, A5, B7)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from checks.chen2022 import substrate
from lab.chen2022.data import DataConfig, make_signals, sample


@given(seed=st.integers(0, 2**32 - 1))
def test_data_premise_holds_and_mutations_are_detected(seed):
    rng = np.random.default_rng(seed)
    config = DataConfig(K=3, P=4, d=12)
    signals = make_signals(config, rng)
    good = sample(config, signals, 600, rng)
    assert substrate.check_data_roles(config, good, signals, "premise", "k").verdict == "holds"
    bad = substrate.sample_with_independent_noise_cluster(config, signals, 600, rng)
    assert substrate.check_data_roles(config, bad, signals, "negative-control", "k").verdict == "violated"
    unscaled = substrate.sample_with_unscaled_noise(config, signals, 600, rng)
    assert substrate.check_noise_variance(config, unscaled, "negative-control", "k").verdict == "violated"


@given(seed=st.integers(0, 2**32 - 1))
def test_router_sum_premise_and_controls(seed):
    rng = np.random.default_rng(seed)
    assert substrate.check_router_sum(rng, n=50).verdict == "holds"
    assert substrate.check_router_sum(rng, gate="sigmoid", n=50).verdict == "violated"
    assert substrate.check_router_sum(rng, mutate="drop-softmax-term", n=50).verdict == "violated"


def test_registered_entries_are_all_as_expected():
    for entry in (substrate.verify_data, substrate.verify_gradients, substrate.verify_router_sum):
        records = entry(0, "quick")
        assert records and all(r.ok for r in records), [r.outcome for r in records]
        assert {r.kind for r in records} == {"premise", "negative-control"}


def test_bad_arguments():
    with pytest.raises(ValueError, match="gate"):
        substrate.check_router_sum(np.random.default_rng(0), gate="relu")
    with pytest.raises(ValueError, match="mutate"):
        substrate.check_gradients(
            np.random.default_rng(0), scale=1.0, act="cubic", backend="numpy", mutate="x"
        )
