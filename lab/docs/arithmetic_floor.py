"""The arithmetic floor of a replication run: the dense products its structured steps cannot avoid.

Under Def. 3.1's structure (`lab.kernels.structured`) a signal patch costs one small product per
expert and step, so a step of Algorithm 1 leaves two kinds of dense work: the experts' noise patches
(P − S of them, S = `data.SIGNAL_ROLES`), forward ⟨w, ξ⟩ and backward Σ coef·σ'·ξ (E.2), each
2·n·J·width FLOP per patch; and an MoE's router, h = sΘ and ∇Θ = sᵀ∂h (2·n·d·M each). Linear experts
collapse to one filter on one patch (`plan.LinearExperts`). A multiply-add counts as two.
"""

from __future__ import annotations

from lab.chen2022 import data
from lab.chen2022.runs import moe_run_config, single_run_config
from lab.chen2022.training import TrainConfig


def run_train_config(run: dict) -> TrainConfig:
    """The experts' `TrainConfig` of a replication run record, as `replicate` built it."""
    if run["model"].startswith("single"):
        return single_run_config(run).expert_config()
    return moe_run_config(run)


def step_flops(run: dict, n: int) -> float:
    """FLOP of the dense products in one training step of `run` on n samples (see the module text)."""
    cfg, setting = run_train_config(run), data.setting(run["setting"])
    linear = cfg.activation == "linear"
    patches = 1 if linear else setting.P - len(data.SIGNAL_ROLES)
    filters = 1 if linear else cfg.J
    experts = 2 * 2 * n * patches * filters * (setting.d + int(cfg.bias))
    router = 0 if run["model"].startswith("single") else 2 * 2 * n * setting.d * cfg.M
    return float(experts + router)


def run_flops(run: dict, n: int) -> float:
    """FLOP of the dense products over all of `run`'s training steps."""
    return step_flops(run, n) * run["steps"]
