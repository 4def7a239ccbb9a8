"""D6 (Sec. 2, eq. 4): the GRU/hierarchical-MoE finding, the exact restrictions and the sigmoid control."""

from checks.makkuva2020 import gru
from checks.strategies.makkuva import gru_cases


def test_check_outcomes(makkuva_records):
    records = makkuva_records("D6")
    assert [r.outcome for r in records] == ["pass", "finding", "pass", "pass", "detected"]
    assert all(r.ok for r in records)


def test_d6_search_finds_the_counterexample_and_bernoulli_identity():
    gap, case = gru._largest_gap(gru_cases(), lambda c: gru._gap(c, "binary"), 30, 1)
    assert gap > 0 and case[2].size >= 2
    assert gru._largest_gap(gru_cases("diagonal"), lambda c: gru._gap(c, "binary"), 30, 1)[0] == 0.0
    assert gru._largest_gap(gru_cases(max_dim=2), gru.bernoulli_gap, 20, 1)[0] < 1e-12


def test_eq4_is_exact_for_the_reset_after_gru_and_not_for_the_reset_before_form_the_paper_writes():
    """Premise: r ⊙ (W_h h) with binary r is eq. (4) to the bit. Control: the same cases with the reset
    before W_h, as Sec. 2 writes it, differ (the generic counterexample of the finding)."""
    after = gru._largest_gap(gru_cases(), lambda c: gru._gap(c, "binary", "after"), 30, 1)[0]
    before = gru._largest_gap(gru_cases(), lambda c: gru._gap(c, "binary", "before"), 30, 1)[0]
    assert after == 0.0 < before
