"""The arithmetic floor counts the dense work of the shapes the structured code really builds."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from lab.chen2022 import data
from lab.chen2022.replicate import expand
from lab.chen2022.runs import TIER_SIZES
from lab.chen2022.timing import ROUTER_DTYPE, router_step_flops, run_flops, run_train_config, step_flops
from lab.chen2022.training import prepare


def _runs() -> list[dict]:
    """One run of every model of Table 1 in both variants, and an MoE of Table 7 with another σ."""
    configs = expand("table1", [1], 1, variant="paper") + expand("table1", [1], 1, variant="reference-code")
    return configs + [c for c in expand("table7", [1], 1) if c.get("activation") == "tanh"][:1]


@pytest.mark.parametrize("run", _runs(), ids=lambda r: f"{r['model']}-{r['activation']}-{r['variant']}")
def test_the_count_follows_the_noise_patches_the_structured_inputs_hold(run):
    cfg = dataclasses.replace(run_train_config(run), structured=True)
    setting = data.setting(run["setting"])
    rng = np.random.default_rng(0)
    signals = data.make_signals(setting, rng)
    n = 64
    xk = prepare(data.sample(setting, signals, n, rng), cfg, signals).xk
    linear = cfg.activation == "linear"  # linear experts keep their collapse to s, one patch
    _, patches, width = xk.shape if linear else xk.noise.shape  # the structured kernels' dense work
    filters = 1 if linear else cfg.J  # linear filters add up to one
    router = 0 if run["model"].startswith("single") else 2 * 2 * n * setting.d * cfg.M
    assert step_flops(run, n) == 2 * 2 * n * patches * filters * width + router
    assert router_step_flops(run, n) == router
    assert run_flops(run | {"steps": 7}) == 7 * step_flops(run, TIER_SIZES[run["tier"]][0])


def test_the_authors_single_cnn_carries_a_bias_coordinate_the_stated_one_does_not():
    paper, code = (
        next(c for c in expand("table1", [1], 1, variant=v) if c["model"] == "single (nonlinear)")
        for v in ("paper", "reference-code")
    )
    assert step_flops(code, 10) / step_flops(paper, 10) == pytest.approx(51 / 50)


def test_the_router_runs_in_its_own_dtype_whatever_the_experts():
    """The floor counts the router's products at the `ROUTER_DTYPE` rate: its input s is that dtype."""
    run = next(c for c in expand("table1", [1], 1, dtype="float32") if c["model"] == "moe (nonlinear)")
    cfg = run_train_config(run)
    setting = data.setting(run["setting"])
    rng = np.random.default_rng(0)
    signals = data.make_signals(setting, rng)
    batch = prepare(data.sample(setting, signals, 16, rng), cfg, signals)
    assert cfg.dtype == "float32" and batch.xk.noise.dtype == np.float32 and batch.s.dtype == ROUTER_DTYPE
