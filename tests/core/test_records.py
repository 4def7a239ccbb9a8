"""Result records: verdict semantics, JSON without NaN, atomic writes."""

import json

import pytest

from lab.core.io import write_json_atomic
from lab.core.records import Record, lower_bound_record, report_record, upper_bound_record


def _record(**kw):
    base = dict(
        claim="X1", statement="s", kind="premise", params={}, measured=1.0, bound=2.0, verdict="holds"
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
    record = _record(kind=kind, verdict=verdict, finding=finding)
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
    inside = upper_bound_record(claim="X", statement="s", kind="premise", params={}, measured=0.1, bound=0.2)
    assert inside.verdict == "holds" and inside.slack == pytest.approx(2.0)
    wide = upper_bound_record(
        claim="X", statement="s", kind="premise", params={}, measured=0.1, bound=0.2, ci=(0.05, 0.25)
    )
    assert wide.verdict == "violated"


def test_lower_bound_uses_ci_lower_end():
    """A rate of 0.9 holds against 0.5 only if its interval lies at or above 0.5; strict excludes equality."""
    record = lambda **kw: lower_bound_record(claim="X", statement="s", kind="premise", params={}, **kw)  # noqa: E731
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
    record = report_record(claim="B14", statement="s", category="rate", params={}, measured=1.5, bound=1.5)
    assert record.outcome == "report" and record.ok and record.extra["category"] == "rate"
