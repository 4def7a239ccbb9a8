"""Claims about typical behaviour (D2, D5): a success rate over random instances, judged by its interval.

A statement such as "SGD on L4 recovers A* from random inits" is about the rate at which random
instances (init, data stream, random w* or μ) succeed, not about one instance. The lab runs n planned
instances, counts the successes, and the claim holds iff the two-sided Clopper–Pearson interval at
level `LEVEL` lies at or above the stated rate (`lab.core.records.lower_bound_record`).

The stated rate is 1/2: the paper's "recovers" is read as "typically recovers", i.e. more often than
not. The paper's own evidence supports no more: Fig. 1c reports recovery "in all the trials" (5 of 5),
whose 99% Clopper–Pearson interval is [0.35, 1]. Each record also stores that interval and the chance
of 5 recoveries in 5 at its own observed rate (`extra["paper_all_of_5"]`), so a page can compare the
lab's rate with the paper's "all of 5" rather than with 1/2. With rate 1/2 and level 0.99, n = 12
instances tolerate one failure, n = 24 five (`successes_needed`).

A negative control must use the same rule with the same planned n (with fewer instances the rule
could never hold, and detecting it would prove nothing). It may stop early: once the failures exceed
n − `successes_needed(n)` the planned verdict is decided whatever the remaining instances do, and the
interval of the instances run gives the same verdict (its lower end is at most that of the most
favourable completion). `run_instances(curtail=True)` does that; premises always run all n.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from checks.makkuva2020.assumptions import LEVEL
from lab.core.records import Record, lower_bound_record
from lab.core.stats import clopper_pearson, interval_basis

TYPICAL_RATE = 0.5
RATE_SOURCE = (
    "the paper's 'recovers' read as 'typically recovers' (more often than not): rate >= 1/2; the paper "
    "reports recovery 'in all the trials' of Fig. 1c (5 of 5), whose 99% CP interval is [0.35, 1]"
)
# Fig. 1c: "we recover the ground truth parameters in all the trials" over 5 random initializations.
PAPER_TRIALS = 5


@functools.cache
def successes_needed(n: int, rate: float = TYPICAL_RATE, level: float = LEVEL) -> int | None:
    """Fewest successes out of n whose Clopper–Pearson lower end reaches `rate` (None: n is too small)."""
    for k in range(n + 1):
        if clopper_pearson(k, n, level)[0] >= rate:
            return k
    return None


def run_instances(
    instance: Callable[[int], bool], n: int, curtail: bool = False, rate: float = TYPICAL_RATE
) -> list[bool]:
    """Outcomes of instance(0), instance(1), …: all n, or (curtail) until the failures decide the verdict."""
    need = successes_needed(n, rate)
    if need is None:
        raise ValueError(f"n = {n} instances can never show a rate >= {rate} at level {LEVEL}")
    outcomes: list[bool] = []
    for i in range(n):
        outcomes.append(bool(instance(i)))
        if curtail and outcomes.count(False) > n - need:
            break
    return outcomes


def rate_record(
    *,
    claim: str,
    key: str,
    statement: str,
    kind: str,
    params: dict[str, Any],
    outcomes: list[bool],
    planned: int,
    rate: float = TYPICAL_RATE,
    source: str = RATE_SOURCE,
    unit: str = "instances",
    **fields: Any,
) -> Record:
    """Success rate of `outcomes` with its Clopper–Pearson interval, whose lower end must reach `rate`.

    extra gains the interval's basis (n counted in `unit`) and `paper_all_of_5`: the Clopper–Pearson
    interval of Fig. 1c's 5 of 5 at the same level and P(5 of 5) at the observed rate and at the lower
    end of its interval."""
    k, m = sum(outcomes), len(outcomes)
    ci = clopper_pearson(k, m, LEVEL)
    extra = {
        **fields.pop("extra", {}),
        "interval": interval_basis("Clopper–Pearson", LEVEL, m, of=unit),
        "paper_all_of_5": {
            "trials": PAPER_TRIALS,
            "ci": clopper_pearson(PAPER_TRIALS, PAPER_TRIALS, LEVEL),
            "p_all_at_rate": (k / m) ** PAPER_TRIALS,
            "p_all_at_ci_low": ci[0] ** PAPER_TRIALS,
        },
    }
    return lower_bound_record(
        claim=claim,
        key=key,
        statement=statement,
        kind=kind,
        params={
            **params,
            "instances": m,
            "planned_instances": planned,
            "stated_rate": rate,
            "rate_source": source,
            "level": LEVEL,
            "verdict": (
                f"holds iff the {LEVEL:.0%} Clopper-Pearson interval of the success rate lies at or above "
                f"{rate} ({successes_needed(planned, rate)} of {planned} planned)"
                + ("; stopped early: the failures already decided it" if m < planned else "")
            ),
        },
        measured=k / m,
        bound=rate,
        ci=ci,
        extra=extra,
        **fields,
    )
