"""Findings page: Theorem 4.2's proof lemma by lemma (claims B13, B14), from results/verify.json."""

from __future__ import annotations

from typing import Any

from lab.docs.evidence import record_rows, records, verify_missing
from lab.docs.markdown import anchor, evidence, fixed, num, table
from lab.docs.results import Results


def _lemma(r: dict[str, Any]) -> str:
    return r["statement"].split(":", 1)[0].removeprefix("Lemma ")


def _slack_text(explicit: list[dict[str, Any]]) -> str:
    """Which explicit bounds hold with the most room, and which do not reproduce, from the records."""
    held = [r for r in explicit if r["outcome"] == "pass" and r.get("slack")]
    loose = sorted(held, key=lambda r: -r["slack"])[:3]
    parts = [f"Lemma {_lemma(r)} (slack {num(r['slack'])})" for r in loose]
    failed = [f"Lemma {_lemma(r)}" for r in explicit if r["outcome"] != "pass"]
    text = f"Every explicit premise but {len(failed)} holds; the loosest are " + ", ".join(parts) + "."
    if failed:
        text += (
            " Not reproduced at the size the check runs: " + ", ".join(failed) + " (see its record's note)."
        )
    return text


def _report_rows(reports: list[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for r in reports:
        ci = r.get("ci")
        reading = (r.get("note") or "").split(": ", 1)[-1]
        interval = f"[{fixed(ci[0], 2)}, {fixed(ci[1], 2)}]" if ci else "-"
        rows.append(
            [
                _lemma(r),
                r["extra"]["category"],
                num(r.get("bound")),
                num(r.get("measured")),
                interval,
                reading,
            ]
        )
    return rows


def proof_steps(results: Results) -> str:
    """The catalogued steps of Theorem 4.2's proof without a claim of their own: B13 verdicts, B14 reports."""
    text = [
        anchor("proof-lemmas"),
        "### Theorem 4.2's proof, lemma by lemma",
        evidence(
            (
                "measured",
                "each B13 premise at the size its record states, Monte-Carlo rates with 95 % "
                "Clopper–Pearson intervals; B14 exponents fitted over runs with 95 % intervals, reported "
                "without a verdict since their constants are hidden",
            ),
        ),
        "Slack is bound ÷ measured for an upper bound (the room the bound leaves); measured is the worst "
        "value the check found. Each step of the [catalogue](claims/chen2022.md#proof-steps) has a "
        "`verify` record. The steps with "
        "explicit constants are [B13](claims/chen2022.md#b13): a premise with its constants written out "
        "and a negative control that breaks it. The steps with a hidden polylog rate or an Õ(d^−c) bound "
        "are [B14](claims/chen2022.md#b14): a report, never a verdict.",
    ]
    explicit, reports = records(results, "B13"), records(results, "B13", "negative-control")
    rates = records(results, "B14", "report")
    if not explicit or not rates:
        return "\n\n".join([*text, verify_missing("B13,B14")])
    text += [
        _slack_text(explicit),
        record_rows(explicit),
        f"Negative controls detected: {sum(r['outcome'] == 'detected' for r in reports)} of {len(reports)}.",
        "The reports: a σ0 exponent is fitted at d = 50 over σ0 ∈ [d^(−1/3), d^(−0.01)], a d exponent at "
        "σ0 = d^(−1/3) (least squares over runs, 95 % interval). A stated O(x^a) asks the quantity to fall "
        "at least as fast; the reading says whether the interval allows that. A step whose stage (T1, T2] "
        "never occurs has no value.",
        table(["lemma", "category", "stated", "measured", "95 % interval", "reading"], _report_rows(rates)),
    ]
    return "\n\n".join(text)
