"""The recovery-rate rule of D2/D5 (checks.makkuva2020.rates): interval-decided, curtailment-exact."""

import functools
import itertools

import pytest

from checks.makkuva2020 import rates
from checks.makkuva2020.assumptions import LEVEL
from lab.core.stats import clopper_pearson


def _verdict(outcomes, planned):
    return _verdict_of_counts(sum(outcomes), len(outcomes), planned)


@functools.cache
def _verdict_of_counts(successes, instances, planned):
    outcomes = [True] * successes + [False] * (instances - successes)
    return rates.rate_record(
        claim="X", key="k", statement="s", kind="premise", params={}, outcomes=outcomes, planned=planned
    ).verdict


def test_successes_needed_at_the_labs_level():
    """Rate 1/2 at 99%: 8 of 8 is the least evidence; 12 instances tolerate one failure, 24 five."""
    assert LEVEL == 0.99
    assert rates.successes_needed(7) is None
    assert [rates.successes_needed(n) for n in (8, 12, 18, 24)] == [8, 11, 15, 19]
    k = rates.successes_needed(24)
    assert clopper_pearson(k, 24, LEVEL)[0] >= 0.5 > clopper_pearson(k - 1, 24, LEVEL)[0]


def test_rate_record_is_decided_by_the_interval():
    record = rates.rate_record(
        claim="X",
        key="k",
        statement="s",
        kind="premise",
        params={"a": 1},
        outcomes=[True] * 11 + [False],
        planned=12,
    )
    assert record.verdict == "holds" and record.measured == pytest.approx(11 / 12)
    assert record.ci == pytest.approx(clopper_pearson(11, 12, LEVEL)) and record.ci[0] >= 0.5
    assert record.params["stated_rate"] == 0.5 and record.params["rate_source"] and record.params["a"] == 1
    assert _verdict([True] * 10 + [False] * 2, 12) == "violated"
    assert _verdict([True] * 7, 7) == "violated"  # 7 of 7: the interval still reaches below 1/2


@pytest.mark.parametrize("n", [8, 12])
def test_curtailed_verdict_equals_the_full_verdict(n):
    """Over every outcome sequence: stopping once the failures decide gives the planned-n verdict."""
    for outcomes in itertools.product([True, False], repeat=n):
        seen = rates.run_instances(lambda i, o=outcomes: o[i], n, curtail=True)
        assert list(outcomes[: len(seen)]) == seen
        assert _verdict(seen, n) == _verdict(outcomes, n)
        if len(seen) < n:
            assert seen.count(False) == n - rates.successes_needed(n) + 1


def test_premises_run_every_instance_and_small_n_is_refused():
    calls = []
    assert rates.run_instances(lambda i: calls.append(i) or False, 12) == [False] * 12 and len(calls) == 12
    with pytest.raises(ValueError, match="can never show"):
        rates.run_instances(lambda i: True, 5)


def test_rate_record_stores_its_basis_and_the_papers_all_of_5():
    """Fig. 1c's 5 of 5 beside the lab's rate: its CP interval and P(5 of 5) at the observed rate."""
    record = rates.rate_record(
        claim="X",
        key="k",
        statement="s",
        kind="premise",
        params={},
        outcomes=[True] * 23 + [False],
        planned=24,
        unit="runs",
    )
    assert record.extra["interval"] == {"method": "Clopper–Pearson", "level": LEVEL, "n": 24, "of": "runs"}
    paper = record.extra["paper_all_of_5"]
    assert paper["trials"] == rates.PAPER_TRIALS == 5
    assert paper["ci"] == pytest.approx(clopper_pearson(5, 5, LEVEL)) and paper["ci"][0] == pytest.approx(
        (0.005) ** (1 / 5)
    )
    assert paper["p_all_at_rate"] == pytest.approx((23 / 24) ** 5)
    assert paper["p_all_at_ci_low"] == pytest.approx(record.ci[0] ** 5)
