"""D1 (eq. 7) and D2 (Theorems 1–2): premises pass, negative controls are detected (quick tier)."""

import numpy as np
import pytest

from checks.makkuva2020 import l4_landscape, rates
from checks.makkuva2020.assumptions import EPS_REC, LEVEL, REG
from lab.core.registry import derived_seed
from lab.makkuva2020.losses import L4Regularisers


@pytest.mark.parametrize(
    ("claim", "outcomes"),
    [
        ("D1", ["pass", "pass", "detected", "detected", "detected"]),
        ("D2", ["pass", "pass", "detected", "detected", "report"]),
    ],
)
def test_check_outcomes(makkuva_records, claim, outcomes):
    """Each premise passes, each negative control is detected, and D2 reports the sample loss's scope."""
    records = makkuva_records(claim)
    assert [r.outcome for r in records] == outcomes and all(r.ok for r in records)
    assert all(r.params["delta"] == REG.delta for r in records if "delta" in r.params)


def test_d1_gap_record_detects_a_shifted_limit():
    """The D1 verdict logic: a gap whose CI excludes 0 is a violation, one that covers 0 holds."""
    rng = np.random.default_rng(0)
    noise = rng.standard_normal(20)
    record = l4_landscape._gap_record
    assert record("k", "premise", "s", {}, noise - noise.mean()).verdict == "holds"
    assert record("k", "premise", "s", {}, noise + 5.0).verdict == "violated"
    assert record("k", "premise", "s", {}, noise - noise.mean(), rate_ok=False).verdict == "violated"


def test_d1_along_w_control_has_the_power_it_lacked(makkuva_records):
    """24 reps at n = 10^5: the CI half-width is well under the gap (about -0.29)."""
    control = makkuva_records("D1")[2]
    assert control.params["reps"] == l4_landscape.CONTROL_REPS["quick"] == 24
    assert control.ci[1] < 0.0 and (control.ci[1] - control.ci[0]) / 2 < abs(control.measured) / 2


@pytest.mark.parametrize("seed", [6, 7])
def test_d1_along_w_control_detected_at_the_seeds_it_missed(seed):
    """At base seeds 6 and 7 the 6-rep control covered 0 (gap -0.26, -0.36); now it is detected."""
    records = l4_landscape.check_d1(derived_seed(seed, "checks.makkuva.check_d1"), "quick")
    assert records[2].outcome == "detected" and all(r.ok for r in records)


def test_d2_sgd_recovery_is_a_rate(makkuva_records):
    sgd = makkuva_records("D2")[1]
    assert sgd.params["instances"] == sgd.params["planned_instances"] == 12
    assert sgd.bound == 0.5 and sgd.ci[0] >= 0.5 and len(sgd.extra["runs"]) == 12
    assert {r["k"] for r in sgd.extra["runs"]} == {2, 3}


def test_d2_sample_loss_scope_is_a_report(makkuva_records):
    """Thm 2 claims no lower bound: the negative quartic directions are reported, not judged."""
    scope = makkuva_records("D2")[-1]
    assert scope.kind == "report" and scope.extra["category"] == "scope" and scope.finding is None
    assert 0.0 < scope.measured < 1.0 and scope.params["directions"] == 64
    # a direction with a negative coefficient runs below the global minimiser's sample loss
    assert scope.extra["min_coefficient"] < 0.0 and scope.extra["lhat_far_minus_lhat_glob"] < 0.0
    # a share of the directions, not all: the count, its Clopper-Pearson interval and its basis
    negative, directions = scope.extra["negative_directions"], scope.params["directions"]
    assert scope.measured == negative / directions and scope.ci[0] <= scope.measured <= scope.ci[1] < 1.0
    assert scope.extra["interval"] == {
        "method": "Clopper–Pearson",
        "level": LEVEL,
        "n": directions,
        "of": "directions",
    }


@pytest.mark.parametrize("claim", ["D1", "D2"])
def test_records_with_intervals_store_their_basis(makkuva_records, claim):
    """Every D1/D2 record with a CI says how it was made (a page prints it, never types it)."""
    for r in makkuva_records(claim):
        assert (r.ci is None) == ("interval" not in r.extra), r.key
    assert makkuva_records("D2")[1].extra["interval"]["of"] == "runs"
    assert makkuva_records("D1")[2].extra["interval"]["n"] == l4_landscape.CONTROL_REPS["quick"]


def test_d2_sgd_rate_rule_fails_with_the_wrong_sign_mu():
    """The SGD-rate premise broken: with mu = -2 SGD ends at spurious points (E_reg about 0.3-0.4)."""
    runs = l4_landscape._sgd_runs(
        L4Regularisers(-2.0, REG.lam, REG.delta), 6, 1200, np.random.default_rng(3), True
    )
    record = rates.rate_record(
        claim="D2",
        key="k",
        statement="s",
        kind="negative-control",
        params={},
        outcomes=[r["recovered"] for r in runs],
        planned=12,
    )
    assert record.verdict == "violated" and record.ok
    assert len(runs) == 12 - rates.successes_needed(12) + 1 and min(r["e_reg"] for r in runs) > 2 * EPS_REC
