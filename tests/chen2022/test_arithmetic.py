"""The experts' arithmetic of a run: structured vs dense kernels and float32 vs float64 (Chen et al. 2022)."""

from __future__ import annotations

import numpy as np
import pytest

from lab.chen2022 import baselines, data
from lab.chen2022 import replicate as R
from lab.chen2022 import training as T
from lab.core.errors import InputError

SMALL = data.DataConfig(K=2, P=4, d=8)


def _problem(n=60, seed=3):
    rng = np.random.default_rng(seed)
    signals = data.make_signals(SMALL, rng)
    return signals, data.sample(SMALL, signals, n, rng)


def _moe(variant, activation, **arithmetic):
    signals, train_set = _problem()
    cfg = T.variant_config(variant, M=3, J=4, activation=activation, steps=15, **arithmetic)
    return T.train(train_set, signals, cfg, seed=5)


def _single(variant, activation, **arithmetic):
    signals, train_set = _problem()
    cfg = baselines.single_config(variant, J=6, activation=activation, steps=15, **arithmetic)
    return baselines.train_single(train_set, cfg, seed=5, signals=signals)


@pytest.mark.parametrize("variant", ["paper", "reference-code"])
@pytest.mark.parametrize("activation", ["cubic", "linear", "relu"])
@pytest.mark.parametrize("train", [_moe, _single])
def test_structured_training_follows_the_dense_reference(train, activation, variant):
    dense = train(variant, activation)
    fast = train(variant, activation, structured=True)
    assert fast.steps == dense.steps
    np.testing.assert_allclose(fast.W, dense.W, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("train", [_moe, _single])
def test_float32_runs_keep_float32_filters_and_follow_float64(train):
    wide = train("paper", "cubic", structured=True)
    narrow = train("paper", "cubic", structured=True, dtype="float32")
    assert narrow.W.dtype == np.float32 and wide.W.dtype == np.float64
    np.testing.assert_allclose(narrow.W, wide.W, rtol=1e-3, atol=1e-5)


def test_float32_control_a_wrong_filter_is_visible():
    """Negative control for the tolerance above: one filter flipped is far outside it."""
    wide = _moe("paper", "cubic", structured=True)
    broken = wide.W.copy()
    broken[0, 0] *= -1
    assert not np.allclose(broken, wide.W, rtol=1e-3, atol=1e-5)


def test_run_configs_name_their_arithmetic_and_reports_do_not_collide():
    configs = R.expand("table1", [1], 1, dtype="float32", arithmetic="dense")
    assert {(c["dtype"], c["arithmetic"]) for c in configs} == {("float32", "dense")}
    assert R.run_key(configs[0]) != R.run_key(R.expand("table1", [1], 1)[0])
    assert R.report_stem("table1", "paper") == "table1"
    assert (
        R.report_stem("table1", "reference-code", "float32", "dense") == "table1_reference-code_float32_dense"
    )
    for field, value in (("dtype", "float16"), ("arithmetic", "sparse")):
        with pytest.raises(InputError, match=field):
            R.expand("table1", [1], 1, **{field: value})
    with pytest.raises(ValueError, match="dtype"):
        T.TrainConfig(dtype="float16")
