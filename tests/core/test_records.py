"""Result records: outcomes, keys, verdicts derived from the numbers, JSON without NaN, atomic writes."""

import json

import pytest

from lab.core.io import write_json_atomic
from lab.core.records import Record, lower_bound_record, report_record, upper_bound_record

HELPER = dict(claim="X", key="k", statement="s", kind="premise", params={})


def _record(**kw):
    base = dict(
        claim="X1",
        key="k",
        statement="s",
        kind="premise",
        params={},
        measured=1.0,
        bound=2.0,
        verdict="holds",
        rule="upper",
    )
    return Record(**{**base, **kw})


@pytest.mark.parametrize(
    ("kind", "verdict", "finding", "outcome", "ok"),
    [
        ("premise", "holds", None, "pass", True),
        ("premise", "violated", None, "FAIL", False),
        ("premise", "not-applicable", None, "FAIL", False),
        ("negative-control", "violated", None, "detected", True),
        ("negative-control", "not-applicable", None, "detected", True),
        ("negative-control", "holds", None, "MISSED", False),
        ("premise", "violated", "does not reproduce", "finding", True),
        ("premise", "holds", "does not reproduce", "FINDING NOW HOLDS", False),
        ("report", "not-applicable", None, "report", True),
    ],
)
def test_outcome_semantics(kind, verdict, finding, outcome, ok):
    rule = {"rule": "report"} if kind == "report" else {"rule": "judged", "reason": "as the test says"}
    record = _record(kind=kind, verdict=verdict, finding=finding, **rule)
    assert record.outcome == outcome
    assert record.ok is ok


def test_rejects_nan_and_bad_words():
    with pytest.raises(ValueError, match="measured"):
        _record(measured=float("nan"))
    with pytest.raises(ValueError, match="kind"):
        _record(kind="control")
    with pytest.raises(ValueError, match="verdict"):
        _record(verdict="ok")
    with pytest.raises(ValueError, match="finite"):
        _record(params={"x": float("inf")})


def test_upper_bound_uses_ci_upper_end():
    inside = upper_bound_record(**HELPER, measured=0.1, bound=0.2)
    assert inside.verdict == "holds" and inside.slack == pytest.approx(2.0) and inside.rule == "upper"
    assert upper_bound_record(**HELPER, measured=0.1, bound=0.2, ci=(0.05, 0.25)).verdict == "violated"
    assert upper_bound_record(**HELPER, measured=1.0 + 1e-12, bound=1.0, rtol=1e-9).params == {"rtol": 1e-9}


def test_lower_bound_uses_ci_lower_end():
    """A rate of 0.9 holds against 0.5 only if its interval lies at or above 0.5; strict excludes equality."""
    record = lambda **kw: lower_bound_record(**HELPER, **kw)  # noqa: E731
    inside = record(measured=0.9, bound=0.5, ci=(0.6, 0.99))
    assert inside.verdict == "holds" and inside.slack == pytest.approx(1.8)
    assert record(measured=0.9, bound=0.5, ci=(0.4, 0.99)).verdict == "violated"
    assert record(measured=0.4, bound=0.5).verdict == "violated"
    assert record(measured=0.5, bound=0.5).verdict == "holds"
    assert record(measured=0.5, bound=0.5, strict=True).verdict == "violated"
    zero = record(measured=0.0, bound=0.0, ci=(0.0, 0.8), strict=True)
    assert zero.verdict == "violated" and zero.slack is None
    assert record(measured=1 / 3, bound=0.0, ci=(0.002, 0.9), strict=True).verdict == "holds"


def test_json_roundtrip_and_atomic_write(tmp_path):
    import numpy as np

    record = _record(params={"a": np.float64(1.5), "b": np.arange(3)}, ci=(0.5, 1.5))
    path = write_json_atomic(tmp_path / "sub" / "r.json", {"records": [record.to_json()]})
    data = json.loads(path.read_text())
    assert data["records"][0]["params"] == {"a": 1.5, "b": [0, 1, 2]}
    assert data["records"][0]["outcome"] == "pass"
    assert list(tmp_path.joinpath("sub").iterdir()) == [path]  # no temporary file left behind


@pytest.mark.parametrize("verdict", ["holds", "violated"])
def test_a_report_has_no_verdict(verdict):
    with pytest.raises(ValueError, match="not-applicable"):
        _record(kind="report", verdict=verdict)


def test_report_record_states_its_category():
    record = report_record(claim="B14", key="k", statement="s", category="rate", params={}, measured=1.5)
    assert record.outcome == "report" and record.ok and record.extra["category"] == "rate"
    assert record.rule == "report"


def test_a_verdict_its_numbers_contradict_is_refused():
    with pytest.raises(ValueError, match=r"record X1/over: verdict 'holds' disagrees with its numbers"):
        _record(key="over", measured=2.0, bound=1.0, verdict="holds", rule="upper")
    with pytest.raises(ValueError, match="X1/low"):
        _record(key="low", measured=0.5, bound=1.0, verdict="holds", rule="lower")
    with pytest.raises(ValueError, match="X1/na"):
        _record(key="na", verdict="not-applicable")  # not-applicable is a judgement, not a comparison


@pytest.mark.parametrize(
    ("rule", "measured", "bound", "ci", "params", "verdict"),
    [
        ("upper", 1.0, 1.0, None, {}, "holds"),
        ("upper", 0.5, 1.0, (0.2, 1.1), {}, "violated"),
        ("upper", 1.0 + 1e-12, 1.0, None, {"rtol": 1e-9}, "holds"),
        ("upper", 1e-12, 0.0, None, {"rtol": 1e-9}, "holds"),
        ("strict-upper", 1.0, 1.0, None, {}, "violated"),
        ("strict-upper", 0.5, 1.0, (0.4, 0.9), {}, "holds"),
        ("lower", 1.0, 1.0, None, {}, "holds"),
        ("strict-lower", 1.0, 1.0, None, {}, "violated"),
        ("strict-lower", 2.0, 1.0, (0.9, 3.0), {}, "violated"),
        ("not-below", 0.1, 0.125, (0.1, 0.13), {}, "holds"),
        ("not-below", 0.1, 0.125, (0.05, 0.12), {}, "violated"),
        ("equal", 0.1, 0.125, (0.1, 0.13), {}, "holds"),
        ("equal", 0.2, 0.125, (0.15, 0.25), {}, "violated"),
        ("equal", 0.0, 0.0, None, {}, "holds"),
        ("equal", 1.0 + 1e-12, 1.0, None, {"rtol": 1e-9}, "holds"),
        ("equal", 1.0 + 1e-6, 1.0, None, {"rtol": 1e-9}, "violated"),
    ],
)
def test_each_rule_derives_the_verdict(rule, measured, bound, ci, params, verdict):
    other = "violated" if verdict == "holds" else "holds"
    record = dict(rule=rule, measured=measured, bound=bound, ci=ci, params=params)
    assert _record(**record, verdict=verdict).verdict == verdict
    with pytest.raises(ValueError, match=f"gives '{verdict}'"):
        _record(**record, verdict=other)


def test_judged_records_state_a_reason_and_reports_their_rule():
    judged = _record(measured=None, bound=None, verdict="violated", rule="judged", reason="compound test")
    assert judged.reason == "compound test"
    with pytest.raises(ValueError, match="reason"):
        _record(verdict="violated", rule="judged")
    with pytest.raises(ValueError, match="reason"):
        _record(reason="not judged")
    with pytest.raises(ValueError, match="rule 'report'"):
        _record(rule="report", verdict="not-applicable")
    with pytest.raises(ValueError, match="rule must be one of"):
        _record(rule="roughly")
    with pytest.raises(ValueError, match="needs a measured value"):
        _record(measured=None)


@pytest.mark.parametrize("key", ["", "Attained", "gaussian M8", "per_f", "-x", None])
def test_keys_are_lowercase_identifiers(key):
    with pytest.raises(ValueError, match="key must be"):
        _record(key=key)


def test_extra_keys_are_identifiers_not_sentences():
    assert _record(key="gaussian-m8.v2", extra={"witness_error": 0.125}).key == "gaussian-m8.v2"
    with pytest.raises(ValueError, match=r"extra keys must be identifiers: \['search CI'\]"):
        _record(extra={"search CI": [0.1, 0.2]})


def test_rtol_against_a_zero_bound_is_an_absolute_allowance_and_no_slack_is_shown():
    from lab.core.records import shown_slack
    from lab.core.verdict_report import records_table

    within = upper_bound_record(**HELPER, measured=6e-16, bound=0.0, rtol=1e-12)
    assert within.verdict == "holds" and within.slack == 0.0  # stored: bound ÷ measured
    assert upper_bound_record(**HELPER, measured=2e-12, bound=0.0, rtol=1e-12).verdict == "violated"
    assert upper_bound_record(**HELPER, measured=1.0 + 1e-10, bound=1.0, rtol=1e-9).verdict == "holds"
    assert shown_slack(within.slack, within.bound) is None and shown_slack(2.0, 1.0) == 2.0
    assert "| 6e-16 | 0 | - | holds | - | pass |" in records_table([within])
