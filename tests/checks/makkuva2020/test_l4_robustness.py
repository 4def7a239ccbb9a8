"""D5 (Sec. 4.1): L4 recovers A* off its assumptions; the far-from-Gaussian control is detected."""

import pytest

from checks.makkuva2020 import l4_robustness
from checks.makkuva2020.assumptions import EPS_REC, REG


def test_check_outcomes(makkuva_records):
    records = makkuva_records("D5")
    assert [r.outcome for r in records] == ["pass", "pass", "detected"] and all(r.ok for r in records)
    assert all(r.params["delta"] == REG.delta for r in records)


@pytest.mark.parametrize("seed", [1, 2])
def test_d5_control_detects_a_far_from_gaussian_input(seed):
    control = l4_robustness.check_d5(seed, "quick")[-1]
    assert control.kind == "negative-control" and control.verdict == "violated" and control.ok
    assert control.measured > 4 * EPS_REC
