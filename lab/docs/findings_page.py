"""docs/findings.md: where the lab and the papers disagree, with every number read from results/; the
findings not yet moved to files beside their checks are written here."""

from __future__ import annotations

import math

from lab.docs.evidence import extra, full_tier, measured, missing, record, record_rows, verify_missing
from lab.docs.findings_chen import FINDINGS as CHEN_FINDINGS
from lab.docs.findings_data import registered, render_finding
from lab.docs.findings_kernels import performance
from lab.docs.markdown import evidence, finding, interval, num
from lab.docs.replications_page import MAKKUVA_TARGET, command
from lab.docs.results import Results, ResultsError
from lab.docs.templating import render
from lab.makkuva2020 import fig1


def _contraction(results: Results) -> str:
    little_o = record(results, "D3", contains="o_sigma")
    rho = record(results, "D3", contains="contracts")
    inits = (rho or {}).get("params", {}).get("inits", "?")
    title = "Theorem 3: ρ_σ does not vanish for a fixed step"
    grade = evidence(
        (
            "proven",
            "near W* fixed-step GD contracts by max_h |1 − αh| over the Hessian's eigenvalues h, at least "
            "(κ_F − 1)/(κ_F + 1) for condition number κ_F whatever α; the σ → 0 Hessian is the gate Fisher "
            "information (docstring of `gate_fisher_information`, `lab/makkuva2020/gated_regression.py`)",
        ),
        (
            "measured",
            "κ_F by Gauss–Hermite quadrature at the paper's W*; the fitted contraction over "
            f"{inits} inits of the quick tier, with its 99 % interval",
        ),
    )
    text = (
        'Theorem 3 (Sec. 3) states ‖W_t − W*‖ ≤ (ρ_σ)^t ‖W_0 − W*‖ + κ ε_reg Σ_τ (ρ_σ)^τ "for any step '
        'size 0 < α ≤ α_0 and noise variance σ² < σ_0²", with "ρ_σ = o_σ(1)". As σ → 0 the Hessian of '
        "L_log at W* tends to the softmax-gate Fisher information, whose condition number κ_F exceeds 1, so "
        "the contraction of GD with any fixed step stays above (κ_F − 1)/(κ_F + 1) > 0: ρ_σ does not vanish."
    )
    if little_o is None or rho is None:
        return finding("makkuva-contraction", title, grade, text, verify_missing("D3"))
    numbers = (
        f"κ_F = {num(extra(little_o, 'kappa'))}, so the floor is {num(little_o['measured'])}. At σ = "
        f"{num(rho['params'].get('sigma'))} the fitted contraction factor is {measured(rho)}, beside "
        f"{num(extra(rho, 'rho_predicted_from_hessian'))} predicted from the Hessian at W*."
    )
    return finding("makkuva-contraction", title, grade, text, numbers, record_rows([little_o, rho]))


def _conventions(results: Results) -> str:
    rho = record(results, "D3", contains="contracts")
    radius = record(results, "D3", "negative-control")
    title = "Conventions the paper leaves open: W*'s reference expert and the radius R"
    grade = evidence(
        (
            "conditional",
            "on the lab's re-referenced W* and its radius R; the D3 control with R = min‖w*‖/2 is the only "
            "other radius run, no sweep over R",
        )
    )
    text = (
        "W* is defined only up to a common shift: an estimate whose experts come in another order has its "
        "own reference expert, so L_log converges to a re-referenced W* and the gating error must use it. "
        'The paper\'s projection radius R = 1 (Sec. 3: results "stated for R = 1 for simplicity") does not '
        "cover the re-referenced W* when the reference expert moves."
    )
    if rho is None or radius is None:
        return finding("makkuva-conventions", title, grade, text, verify_missing("D3"))
    numbers = (
        f"The lab uses R = {num(rho['params'].get('R'))}. A radius that misses W* stalls: plateau ratio "
        f"{num(radius['measured'])} against the {num(radius['bound'])} that convergence needs."
    )
    return finding("makkuva-conventions", title, grade, text, numbers)


def _em(results: Results) -> str:
    rep = full_tier(results, MAKKUVA_TARGET)
    quick = [record(results, "D4", contains=f"{name} gets stuck") for name in ("EM", "l2-SGD")]
    title = 'Fig. 1: "EM gets stuck" does not reproduce with the lab\'s EM'
    quote = (
        'Sec. 4 compares "1) EM algorithm", SGD on the ℓ2-loss of eq. (5) and "3) SGD on our losses L4 '
        'and L_log"; "For all the methods, we ran 5 independent trials and plotted the mean error", and it '
        'reads Fig. 1a as "SGD on ℓ2-loss as well as EM get stuck in local optima"; "For ℓ2 and the EM '
        'algorithm, the gating parameters W are learnt jointly with regressors A." It does not say which '
        "EM, on how many samples, for how many iterations, nor in how many of the 5 trials a method is stuck."
    )
    if rep is None or "recovery" not in rep.payload:
        grade = evidence(
            (
                "conditional",
                "on the lab's EM (WLS experts, IRLS gates, σ² estimated); Sec. 4 does not specify one",
            )
        )
        return finding(
            "makkuva-em", title, grade, quote, missing(command(MAKKUVA_TARGET)), record_rows(quick)
        )
    config, recovery = rep.payload["config"], rep.payload["recovery"]
    em, inits = recovery["em"], recovery["em"]["inits"]
    grade = evidence(
        (
            "conditional",
            f"on the lab's EM: WLS experts, IRLS gates, σ² estimated, n = {config['em_n']} points, "
            f"{config['em_iters']} iterations (`lab/makkuva2020/fit.py`); no sensitivity study over the EM "
            "variant, n or the iterations was run",
        ),
        (
            "measured",
            f"{inits} initializations at the full tier, seed {rep.payload['seed']} (`results/replicate/"
            f"{rep.name}`): EM stuck in {inits - em['recovered']} of {inits}, 99 % Clopper–Pearson interval "
            f"{interval(em['stuck_ci_99'])}",
        ),
    )
    eps = rep.payload.get("recovered_eps")
    e_reg = [run["em"]["e_reg"] for run in rep.payload["runs"]]
    counts = "; ".join(
        f"{name} {recovery[key]['recovered']} (stuck rate {interval(recovery[key]['stuck_ci_99'])})"
        for key, name in fig1.METHODS
    )
    numbers = (
        f"An init counts as recovered when E_reg and E_gating are both ≤ {num(eps)} (the lab's threshold). "
        f"From the same {inits} inits ([replications](replications.md#makkuva-fig1)) the methods end "
        f"recovered in: {counts}. EM's E_reg ends between {num(min(e_reg))} and {num(max(e_reg))}. So the "
        "lab's EM does not get stuck at this size; whether the paper's EM does, its text does not let one "
        "tell. The quick-tier D4 check runs "
        + (f"{quick[0]['params'].get('inits', '?')}" if quick[0] is not None else "a few")
        + " inits; its record below says only that EM is not stuck in those, with the wide interval so "
        "few inits allow."
    )
    return finding("makkuva-em", title, grade, quote, numbers, record_rows(quick))


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
    "makkuva-contraction": _contraction,
    "makkuva-conventions": _conventions,
    "makkuva-em": _em,
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
