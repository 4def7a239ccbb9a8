"""A fresh verify run beside the committed one, record by record: changes planted in a copy of
results/verify.json are classed as identical, equal within rounding, differs, new or missing."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from lab.core.compare import FLOATING_POINT, compare_runs, comparison_report, tolerance

COMMITTED = Path(__file__).resolve().parents[2] / "results" / "verify.json"


@pytest.fixture(scope="module")
def committed():
    return json.loads(COMMITTED.read_text(encoding="utf-8"))


@pytest.fixture
def fresh(committed):
    return copy.deepcopy(committed)


def _record(payload, claim, key):
    (found,) = [r for r in payload["records"] if (r["claim"], r["key"]) == (claim, key)]
    return found


def _row(comparison, claim, key):
    (found,) = [r for r in comparison.rows if (r.claim, r.key) == (claim, key)]
    return found


def test_the_committed_run_beside_itself_is_identical_record_by_record(committed, fresh):
    comparison = compare_runs(fresh, committed)
    assert comparison.count("identical") == len(committed["records"]) == len(comparison.rows)
    assert not comparison.failed and comparison.not_run == 0


def test_a_measured_value_moved_beyond_rounding_differs_with_both_values(committed, fresh):
    record = _record(fresh, "A1", "noise-orthonormal")
    old = record["measured"]
    record["measured"] = old * (1 + 1e-6)
    row = _row(compare_runs(fresh, committed), "A1", "noise-orthonormal")
    assert row.status == "differs" and row.tolerance == f"floating point, relative {FLOATING_POINT:g}"
    (change,) = row.changes
    assert (change.where, change.old, change.new, change.within_rounding) == (
        "measured",
        old,
        record["measured"],
        False,
    )
    assert not row.fails  # the verdict is the same: reported, not failed


def test_a_change_in_the_last_bits_is_equal_within_rounding(committed, fresh):
    record = _record(fresh, "A1", "noise-orthonormal")
    record["measured"] *= 1 + 4e-16
    record["ci"][1] *= 1 + 1e-12
    comparison = compare_runs(fresh, committed)
    row = _row(comparison, "A1", "noise-orthonormal")
    assert row.status == "equal within rounding" and [c.where for c in row.changes] == ["measured", "ci[1]"]
    assert comparison.count("equal within rounding") == 1 and not comparison.failed


def test_a_stated_round_off_allowance_is_the_tolerance(committed, fresh):
    """B13/e15 states rtol 1e-12: a relative 1e-10 is beyond it although within the default 1e-9."""
    assert tolerance(_record(committed, "B13", "e15")) == (1e-12, "params.rtol = 1e-12")
    assert tolerance(_record(committed, "B4", "lemma-c1-uniform"))[1] == "extra.round_off = 4e-14"
    assert tolerance(_record(committed, "B2", "optimum-above-floor"))[1] == "params.allowance = 1e-09"
    assert tolerance(_record(committed, "B1", "additive"))[0] == FLOATING_POINT  # its allowance is a formula
    for factor, status in ((1 + 1e-13, "equal within rounding"), (1 + 1e-10, "differs")):
        changed = copy.deepcopy(committed)
        _record(changed, "B13", "e15")["measured"] *= factor
        row = _row(compare_runs(changed, committed), "B13", "e15")
        assert row.status == status and row.tolerance == "params.rtol = 1e-12"


def test_an_rtol_at_a_zero_bound_is_absolute_as_the_verdict_reads_it(committed, fresh):
    """D6's measured value is round-off itself (bound 0, rtol 1e-12): another last bit is rounding."""
    record = _record(fresh, "D6", "sigmoid-bernoulli-average")
    assert record["bound"] == 0 and record["params"]["rtol"] == 1e-12
    record["measured"] = 4.440892098500626e-16
    assert _row(compare_runs(fresh, committed), "D6", "sigmoid-bernoulli-average").status == (
        "equal within rounding"
    )


def test_a_changed_verdict_or_outcome_fails_the_comparison(committed, fresh):
    record = _record(fresh, "A1", "control-unscaled-noise")
    record["verdict"], record["outcome"] = "holds", "MISSED"
    comparison = compare_runs(fresh, committed)
    row = _row(comparison, "A1", "control-unscaled-noise")
    assert row.status == "identical" and row.verdict_changed and row.outcome_changed
    assert comparison.failed
    assert "| violated → holds | detected → MISSED |" in comparison_report(comparison, "v.json")


def test_a_removed_record_is_missing_and_fails_an_added_one_is_new(committed, fresh):
    fresh["records"] = [r for r in fresh["records"] if (r["claim"], r["key"]) != ("B1", "additive")]
    fresh["records"].append(_record(committed, "B1", "control-product") | {"key": "control-sum"})
    comparison = compare_runs(fresh, committed)
    assert _row(comparison, "B1", "additive").status == "missing" and comparison.failed
    added = _row(comparison, "B1", "control-sum")
    assert added.status == "new" and not added.fails
    assert (comparison.count("missing"), comparison.count("new")) == (1, 1)


def test_claims_not_run_are_not_missing(committed, fresh):
    fresh["records"] = [r for r in fresh["records"] if r["claim"] == "A1"]
    comparison = compare_runs(fresh, committed, claims=["a1"])
    assert comparison.count("identical") == len(fresh["records"]) == len(comparison.rows)
    assert comparison.not_run == len(committed["records"]) - len(fresh["records"]) and not comparison.failed
    assert compare_runs(fresh, committed).failed  # without --only every other record is missing


def test_text_fields_compare_as_text(committed, fresh):
    record = _record(fresh, "A1", "roles-one-hot")
    record["params"] = record["params"] | {"n": record["params"]["n"] + 1}
    row = _row(compare_runs(fresh, committed), "A1", "roles-one-hot")
    assert row.status == "differs" and [c.where for c in row.changes] == ["params"]


def test_the_environment_fields_a_file_lacks_read_unknown(committed, fresh):
    committed.pop("environment", None)  # as a file written before the lab recorded it
    fresh.pop("environment", None)
    fresh["environment"] = {"cpu": "AMD EPYC", "simd": "AVX512_ICL"}
    fresh["versions"] = committed["versions"] | {"numpy": "9.9.9"}
    comparison = compare_runs(fresh, committed)
    assert comparison.environment == (
        ("cpu", "unknown", "AMD EPYC"),
        ("numpy", committed["versions"]["numpy"], "9.9.9"),
        ("simd", "unknown", "AVX512_ICL"),
    )
    assert "numpy 2.4.6 → 9.9.9" in comparison_report(comparison, "v.json")
    assert compare_runs(committed, committed).environment == ()
