"""docs/findings.md: where the lab and the papers disagree, with every number read from results/; the
findings not yet moved to files beside their checks are written here."""

from __future__ import annotations

import math

from lab.docs.evidence import extra, record
from lab.docs.findings_chen import FINDINGS as CHEN_FINDINGS
from lab.docs.findings_data import registered, render_finding
from lab.docs.findings_kernels import performance
from lab.docs.markdown import evidence, finding, num
from lab.docs.results import Results, ResultsError
from lab.docs.templating import render


def _top1(results: Results) -> str:
    return finding(
        "importance-top1",
        "The importance loss cannot balance a top-1 router",
        evidence(
            (
                "proven",
                "for k = 1 the gate G(x) is the one-hot vector of argmax H(x), piecewise constant in the "
                "logits; checked by `pytest tests/shazeer2017/test_gating.py -k vanishes_for_top1`",
            )
        ),
        "Importance(X) = Σ_x G(x) then changes only where the argmax changes, so the importance loss has "
        "zero gradient wherever it has one (everywhere but the ties): it cannot balance a Switch-style or "
        "Chen-style router.",
    )


def _exactly_k(results: Results) -> str:
    gate = record(results, "C1", contains="numpy")
    smallest = math.ulp(0.0)  # exp(x) rounds to 0 below log(smallest) − log(2)
    support = (
        f"the support property: {extra(gate, 'examples_tried')} Hypothesis examples with ties and ±10⁶ "
        f"gaps, {num(gate['measured'])} counterexamples (a search, no interval)"
        if gate is not None
        else "the support property: the C1 check, not in the committed results yet"
    )
    return finding(
        "exactly-k",
        '"Exactly k non-zeros": the support has k entries, the values can underflow',
        evidence(
            (
                "numerical note",
                f"exp of a kept logit more than {num(math.log(2) - math.log(smallest))} below the row "
                f"maximum is below half the smallest positive double ({num(smallest)}) and rounds to 0; not "
                "a property of the gate",
            ),
            ("measured", support),
        ),
        "KeepTopK sets all but the k largest logits to −∞, so in exact arithmetic G has exactly k "
        "non-zeros. In floating point a kept gate far enough below the row maximum underflows to 0 although "
        "it is kept. Shown by `pytest tests/shazeer2017/test_gating.py -k underflows`.",
    )


PYTHON_FINDINGS = {
    **CHEN_FINDINGS,
    "importance-top1": _top1,
    "exactly-k": _exactly_k,
}


def findings_page(results: Results) -> str:
    """docs/findings.md, from `templates/findings.md.j2`: each finding from its file beside its check (or
    from the few functions above); every finding file of the lab must be on the page."""
    page = "findings.md"
    data, shown = registered(), set()

    def show(name: str) -> str:
        shown.add(name)
        if name in data:
            return render_finding(page, data[name], results)
        return PYTHON_FINDINGS[name](results)

    text = render("findings.md.j2", page, results, finding=show, kernels=performance(results))
    if unshown := sorted(set(data) - shown):
        raise ResultsError(f"{page}: findings.md.j2 does not show the findings {unshown}")
    return text
