"""D1 (eq. 7) and D2 (Theorems 1–2): premises pass, negative controls are detected (quick tier)."""

import numpy as np
import pytest

from checks.makkuva2020 import l4_landscape
from checks.makkuva2020.assumptions import REG


@pytest.mark.parametrize(
    ("claim", "outcomes"),
    [
        ("D1", ["pass", "pass", "detected", "detected", "detected"]),
        ("D2", ["pass", "pass", "detected", "detected", "finding"]),
    ],
)
def test_check_outcomes(makkuva_records, claim, outcomes):
    """Each premise passes (or is a known finding) and each negative control is detected."""
    records = makkuva_records(claim)
    assert [r.outcome for r in records] == outcomes and all(r.ok for r in records)
    assert all(r.params["delta"] == REG.delta for r in records if "delta" in r.params)


def test_d1_gap_record_detects_a_shifted_limit():
    """The D1 verdict logic: a gap whose CI excludes 0 is a violation, one that covers 0 holds."""
    rng = np.random.default_rng(0)
    noise = rng.standard_normal(20)
    record = l4_landscape._gap_record
    assert record("premise", "s", {}, noise - noise.mean()).verdict == "holds"
    assert record("premise", "s", {}, noise + 5.0).verdict == "violated"
    assert record("premise", "s", {}, noise - noise.mean(), also=False).verdict == "violated"
