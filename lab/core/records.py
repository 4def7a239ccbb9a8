"""Result records: the type every check, test and report speaks (docs/index.md, "Reading a verdict")."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from lab.core.schema import NUMBER, OBJECT, TEXT, Is

RECORD_KINDS = ("premise", "negative-control", "report")
VERDICTS = ("holds", "violated", "not-applicable")
# what `verify` marks on records it cannot read as their verdict says: a check that raised or returned a
# malformed record (`error`), a premise whose claim has no negative control (`uncontrolled`)
PROBLEMS = ("error", "uncontrolled")
# how a record's verdict follows from its numbers (`derived_verdict`); "judged" records state a reason
RULES = ("upper", "strict-upper", "lower", "strict-lower", "not-below", "equal", "report", "judged")
KEY = re.compile(r"[a-z0-9][a-z0-9.-]*")
EXTRA_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RECORD_JSON = {  # the schema of a record as `Record.to_json` writes it
    "claim statement": TEXT,
    "kind": Is(f"one of {RECORD_KINDS}", lambda v: v in RECORD_KINDS),
    "verdict": Is(f"one of {VERDICTS}", lambda v: v in VERDICTS),
    "outcome": TEXT,
    "params": OBJECT,
    "measured? bound? slack?": NUMBER,
    "ci?": Is("[low, high]", lambda v: isinstance(v, list) and len(v) == 2 and all(map(NUMBER.test, v))),
    "finding? note?": TEXT,
}


def _finite(value: Any, name: str) -> Any:
    """Reject NaN and infinities: a record never carries a silent NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"record field {name!r} must be finite, got {value!r}")
    return value


def jsonable(value: Any, name: str = "value") -> Any:
    """Convert NumPy scalars/arrays and tuples to plain JSON types, refusing NaN/inf."""
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        value = value.tolist()
    if isinstance(value, dict):
        return {str(k): jsonable(v, f"{name}.{k}") for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v, f"{name}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return _finite(value, name)
    raise TypeError(f"record field {name!r} has a value of type {type(value).__name__}")


@dataclass
class Record:
    """Outcome of one check run: measured value, bound, interval, verdict and slack."""

    claim: str
    key: str = field(kw_only=True)  # unique within its claim, stable across runs: `attained`, `gaussian-m8`
    statement: str
    kind: str
    params: dict[str, Any]
    measured: float | None
    bound: float | None
    verdict: str
    rule: str = field(kw_only=True)  # one of RULES: how the verdict follows from the numbers
    reason: str | None = field(default=None, kw_only=True)  # why a "judged" record reads as its verdict says
    ci: tuple[float, float] | None = None
    slack: float | None = None
    seconds: float | None = None
    finding: str | None = None
    note: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in RECORD_KINDS:
            raise ValueError(f"kind must be one of {RECORD_KINDS}, got {self.kind!r}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")
        if self.finding is not None and self.kind != "premise":
            raise ValueError("finding marks apply to premise records only")
        if self.kind == "report" and self.verdict != "not-applicable":
            raise ValueError(
                "a report states a measurement without a verdict: verdict must be 'not-applicable'"
            )
        if self.problem is not None and self.problem not in PROBLEMS:
            raise ValueError(f"problem must be None or one of {PROBLEMS}, got {self.problem!r}")
        if not isinstance(self.key, str) or not KEY.fullmatch(self.key):
            raise ValueError(f"record of {self.claim}: key must be lowercase [a-z0-9.-], got {self.key!r}")
        self._check_rule()
        for name in ("measured", "bound", "slack", "seconds"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, _finite(float(value), name))
        if self.ci is not None:
            lo, hi = (float(v) for v in self.ci)
            self.ci = (_finite(lo, "ci"), _finite(hi, "ci"))
        self.params = jsonable(self.params, "params")
        self.extra = jsonable(self.extra, "extra")
        sentences = [k for k in self.extra if not EXTRA_KEY.fullmatch(k)]
        if sentences:
            raise ValueError(f"record {self.claim}/{self.key}: extra keys must be identifiers: {sentences}")
        derived = derived_verdict(self.rule, self.measured, self.bound, self.ci, self.params)
        if derived is not None and derived != self.verdict:
            raise ValueError(
                f"record {self.claim}/{self.key}: verdict {self.verdict!r} disagrees with its numbers: "
                f"rule {self.rule!r} gives {derived!r} for measured {self.measured}, bound {self.bound}, "
                f"ci {self.ci}"
            )

    def _check_rule(self) -> None:
        """The rule is known, "report" exactly for reports, and a reason given exactly when "judged"."""
        where = f"record {self.claim}/{self.key}"
        if self.rule not in RULES:
            raise ValueError(f"{where}: rule must be one of {RULES}, got {self.rule!r}")
        if (self.rule == "report") != (self.kind == "report"):
            raise ValueError(f"{where}: rule 'report' is for kind 'report' only, got rule {self.rule!r}")
        if (self.rule == "judged") != bool(self.reason):
            raise ValueError(f"{where}: a reason is given exactly when the rule is 'judged'")

    @property
    def outcome(self) -> str:
        """How the lab reads this record: the word shown in the table's outcome column."""
        if self.problem is not None:
            return self.problem
        if self.kind == "report":
            return "report"
        if self.kind == "negative-control":
            return "detected" if self.verdict != "holds" else "MISSED"
        if self.finding is not None:
            return "finding" if self.verdict != "holds" else "FINDING NOW HOLDS"
        return "pass" if self.verdict == "holds" else "FAIL"

    @property
    def ok(self) -> bool:
        """True when the record is what a working lab should produce (drives the exit code)."""
        return self.outcome in ("pass", "detected", "finding", "report")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ci"] = list(self.ci) if self.ci is not None else None
        data["outcome"] = self.outcome
        return jsonable(data)


def derived_verdict(
    rule: str, measured: float | None, bound: float | None, ci: tuple[float, float] | None, params: dict
) -> str | None:
    """The verdict `rule` gives these numbers (None for "report" and "judged", which compute none).

    upper: the CI's upper end (else measured) ≤ bound, within `params["rtol"]` of the bound (relative,
    bound·(1 + rtol); against a zero bound, where a relative allowance is none, an absolute one: ≤ rtol);
    strict-upper: < bound; lower / strict-lower: the CI's lower end (else measured) ≥ / > bound;
    not-below: a floor refuted only when the whole CI lies below it; equal: the bound lies in the CI
    (else |measured − bound| ≤ rtol·|bound|)."""
    if rule in ("report", "judged"):
        return None
    if measured is None or bound is None:
        raise ValueError(f"rule {rule!r} needs a measured value and a bound")
    low, top = ci if ci is not None else (measured, measured)
    rtol = float(params.get("rtol", 0.0))
    if rule == "upper":
        holds = top <= bound * (1.0 + rtol) + (rtol if bound == 0 else 0.0)
    elif rule == "strict-upper":
        holds = top < bound
    elif rule == "lower":
        holds = low >= bound
    elif rule == "strict-lower":
        holds = low > bound
    elif rule == "not-below":
        holds = top >= bound
    elif ci is not None:
        holds = low <= bound <= top
    else:
        holds = abs(measured - bound) <= rtol * abs(bound)
    return "holds" if holds else "violated"


def slack_ratio(bound: float, measured: float) -> float | None:
    """Bound ÷ measured for an upper bound; None when the ratio is meaningless (measured ≤ 0)."""
    if measured <= 0 or not math.isfinite(bound) or not math.isfinite(measured):
        return None
    ratio = bound / measured
    return ratio if math.isfinite(ratio) else None


def shown_slack(slack: float | None, bound: float | None) -> float | None:
    """The slack a report prints: none against a zero bound, where bound ÷ measured is 0 for every positive
    measured value and says nothing of the room left (the allowance there is absolute: `derived_verdict`)."""
    return None if bound == 0 else slack


def upper_bound_record(
    *,
    claim: str,
    key: str,
    statement: str,
    kind: str,
    params: dict[str, Any],
    measured: float,
    bound: float,
    ci: tuple[float, float] | None = None,
    rtol: float = 0.0,
    **fields: Any,
) -> Record:
    """Record for a claim `measured ≤ bound`; with a CI the verdict is decided by its upper end.

    `rtol` is for exact (non-Monte-Carlo) comparisons only: floating-point round-off allowance
    relative to the bound (measured ≤ bound·(1 + rtol)), stated in the params so it is never a hidden
    tolerance. Against a zero bound a relative allowance would be none, so there it is absolute:
    measured ≤ rtol (a deviation that must vanish, judged within a stated round-off). The slack
    stored is bound ÷ measured; reports print none against a zero bound (`shown_slack`).
    """
    if rtol:
        params = {**params, "rtol": rtol}
    return Record(
        claim=claim,
        key=key,
        statement=statement,
        kind=kind,
        params=params,
        measured=measured,
        bound=bound,
        ci=ci,
        verdict=derived_verdict("upper", measured, bound, ci, params),
        rule="upper",
        slack=slack_ratio(bound, measured),
        **fields,
    )


def lower_bound_record(
    *,
    claim: str,
    key: str,
    statement: str,
    kind: str,
    params: dict[str, Any],
    measured: float,
    bound: float,
    ci: tuple[float, float] | None = None,
    strict: bool = False,
    **fields: Any,
) -> Record:
    """Record for a claim `measured ≥ bound` (`> bound` if strict); with a CI its lower end decides.

    The mirror of `upper_bound_record`, e.g. a success rate whose Clopper–Pearson interval must lie
    at or above a stated rate. Slack is measured ÷ bound (> 1: room above the bound), None if bound ≤ 0.
    """
    rule = "strict-lower" if strict else "lower"
    return Record(
        claim=claim,
        key=key,
        statement=statement,
        kind=kind,
        params=params,
        measured=measured,
        bound=bound,
        ci=ci,
        verdict=derived_verdict(rule, measured, bound, ci, params),
        rule=rule,
        slack=measured / bound if bound > 0 else None,
        **fields,
    )


def report_record(
    *,
    claim: str,
    key: str,
    statement: str,
    category: str,
    params: dict[str, Any],
    measured: float | None,
    bound: float | None = None,
    ci: tuple[float, float] | None = None,
    **fields: Any,
) -> Record:
    """A measurement reported without a verdict (a rate fit, a quantity no reachable d can decide).

    `category` says why there is no verdict; it is stored in `extra` and shown in the note."""
    extra = {**fields.pop("extra", {}), "category": category}
    return Record(
        claim=claim,
        key=key,
        statement=statement,
        kind="report",
        params=params,
        measured=measured,
        bound=bound,
        ci=ci,
        verdict="not-applicable",
        rule="report",
        extra=extra,
        **fields,
    )
