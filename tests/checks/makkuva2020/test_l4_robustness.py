"""D5 (Sec. 4.1): L4's recovery rate off its assumptions; the far-from-Gaussian control is detected."""

import numpy as np
import pytest

from checks.makkuva2020 import l4_robustness, rates
from checks.makkuva2020.assumptions import EPS_REC, LEVEL, REG


def test_check_outcomes(makkuva_records):
    """Both recovery rates have a 99% interval above 1/2 (all instances run); the control is detected."""
    records = makkuva_records("D5")
    assert [r.outcome for r in records] == ["pass", "pass", "detected"] and all(r.ok for r in records)
    assert all(r.params["delta"] == REG.delta for r in records)
    quick = l4_robustness.TIERS["quick"]
    sphere, mixture, _ = records
    assert sphere.params["instances"] == len(sphere.extra["e_reg"]) == quick["sphere"]
    assert mixture.params["instances"] == quick["per_p"] * len(quick["ps"])
    assert all(r.bound == 0.5 and r.ci[0] >= 0.5 and r.params["level"] == LEVEL for r in (sphere, mixture))
    assert all(v["of"] == quick["per_p"] for v in mixture.extra["per_p"].values())


@pytest.mark.parametrize("seed", [1, 2])
def test_d5_control_detects_a_far_from_gaussian_input(seed):
    """The mixture's rule over the mixture's planned n, stopped once the failures decide: violated."""
    control = l4_robustness._far_record(np.random.default_rng(seed), l4_robustness.TIERS["quick"])
    assert control.kind == "negative-control" and control.verdict == "violated" and control.ok
    planned = control.params["planned_instances"]
    assert planned == l4_robustness.TIERS["quick"]["per_p"] * len(l4_robustness.TIERS["quick"]["ps"])
    assert control.params["instances"] == planned - rates.successes_needed(planned) + 1  # all failed
    assert control.measured == 0.0 and control.ci[0] < 0.5
    assert min(control.extra["e_reg"]) > 2 * EPS_REC
