"""docs/findings.md: where the lab and the papers disagree, with every number read from results/."""

from __future__ import annotations

import numpy as np

from lab.docs.bench_targets import named
from lab.docs.evidence import extra, measured, missing, record, record_rows, records, verify_missing
from lab.docs.findings_chen import FINDINGS as CHEN_FINDINGS
from lab.docs.markdown import anchor, fixed, num, page
from lab.docs.results import Results
from lab.docs.timing_section import (
    PEAK_PREFIX,
    TARGET_MINUTES,
    floor_minutes,
    model_times,
    peak_benchmarks,
    target_status,
)

INTRO = """\
A finding is a place where the lab and a paper part ways: a bound that holds with room to spare, a
constant that can be sharpened, or a claim that does not reproduce. Each one below says what the lab
measured and links to the claim it belongs to. Every number is rendered from `results/verify.json`
(the committed `verify` run) or from `results/replicate/`; where the committed results do not hold
the measurement yet, the finding is stated without numbers, with the command that measures it.

Premise records that carry a finding mark show the outcome `finding` in the claims pages: the paper's
statement is checked as written, fails, and the lab expects it to fail."""


def _makkuva_marked(results: Results) -> list[dict]:
    return [r for claim in ("D2", "D3", "D4", "D6") for r in records(results, claim) if r.get("finding")]


def makkuva(results: Results) -> str:
    marked = _makkuva_marked(results)
    text = [
        anchor("makkuva"),
        "## Makkuva et al. 2020",
        "Four statements, checked as written, do not hold (claims [D2](claims/makkuva2020.md#d2), "
        "[D3](claims/makkuva2020.md#d3), [D4](claims/makkuva2020.md#d4), "
        "[D6](claims/makkuva2020.md#d6)):",
    ]
    if marked:
        text.append(record_rows(marked))
        text += [f"- **{r['claim']}**, {r['statement']}: {r['finding']}" for r in marked]
    else:
        text.append(verify_missing("D2,D3,D4,D6"))
    text += _makkuva_details(results)
    return "\n\n".join(text)


def _makkuva_details(results: Results) -> list[str]:
    out = []
    restricted = record(results, "D6", contains="exactly if")
    if restricted is not None:
        out.append(
            "**Eq. (4).** Coordinate i of the GRU update agrees with the mixture only if "
            "Σ_j (W_h)_ij (r_j − r_i) h_j = 0. In the three restricted cases (scalar state, diagonal W_h, "
            f"a reset gate constant across coordinates) the largest gap over Hypothesis examples is "
            f"{num(restricted['measured'])}; with sigmoid gates eq. (4) is exactly the average of its "
            "binary version over independent Bernoulli gates, not the sigmoid GRU itself."
        )
    unbounded = record(results, "D2", contains="bounded below")
    if unbounded is not None:
        p = unbounded["params"]
        out.append(
            "**The sample L4 is unbounded below for every n.** Outside the span of the regressors its "
            "quartic coefficient is a zero-mean fluctuation of order n^(-1/2); at n = "
            f"{p.get('n', '?')}, a fraction {num(unbounded['measured'])} of "
            f"{p.get('directions', '?')} random directions have a negative coefficient (the most "
            f"negative: {num(extra(unbounded, 'min_coefficient'))}). "
            "Full-batch descent on a fixed sample can run off to infinity; online SGD with fresh batches "
            "and a large enough ridge δ does not."
        )
    wrong_mu = record(results, "D2", "negative-control", contains="mu = -2")
    no_lam = record(results, "D2", "negative-control", contains="lam = 0")
    milder = extra(wrong_mu, "mu_minus_half")
    if wrong_mu is not None and no_lam is not None:
        sentence = (
            "**What the regularisers must satisfy.** The paper asks only μ, λ, δ > 0. The lab derives "
            "λ·min π > μ (else eq. (7) is unbounded below) and 0 < δ < 4λ·min π (else A = 0 is a local "
            f"minimum). With μ = −2, {num(wrong_mu['measured'])} end points of gradient descent are "
            f"spurious; with λ = 0, {num(no_lam['measured'])} end at a degenerate point."
        )
        if isinstance(milder, dict) and "spurious_sosp" in milder:
            sentence += (
                f" A positive μ is not necessary: with μ = −0.5, {milder['spurious_sosp']} of "
                f"{milder.get('sosp', '?')} end points are spurious."
            )
        out.append(sentence)
    rho = record(results, "D3", contains="contracts")
    if rho is not None:
        out.append(
            f"**Contraction of L_log.** The fitted contraction factor is {measured(rho)}, beside "
            f"{num(extra(rho, 'rho_predicted_from_hessian'))} predicted from the Hessian at W*; it does not "
            "vanish as σ → 0 for a fixed step (the finding above)."
        )
    radius = record(results, "D3", "negative-control")
    if rho is not None and radius is not None:
        out.append(
            "**Conventions the paper leaves open.** W* is defined only up to a common shift: an estimate "
            "whose experts come in another order has its own reference expert, so L_log converges to a "
            "re-referenced W* and the gating error must use it. The paper's projection radius R = 1 does "
            "not cover the re-referenced W* when the reference expert moves; the lab uses "
            f"R = {num(rho['params'].get('R'))}. A radius that misses W* stalls: plateau ratio "
            f"{num(radius['measured'])} against the {num(radius['bound'])} that convergence needs."
        )
    em = record(results, "D4", contains="EM")
    per_init = extra(em, "per_init")
    if isinstance(per_init, list) and per_init and all("EM" in row for row in per_init):
        e_reg = [row["EM"][0] for row in per_init]
        out.append(
            f"**EM.** From the same {len(per_init)} inits EM ends with E_reg between {num(min(e_reg))} and "
            f"{num(max(e_reg))} (L4 + L_log: mean {_first(em)}); Fig. 1's stuck EM does not reproduce here."
        )
    gaps = [
        record(results, "D1", "negative-control", contains=c) for c in ("a_1* = w_1*", "two-Gaussian-mixture")
    ]
    mixture = record(results, "D5", contains="mu, I)")
    if all(g is not None for g in gaps):
        sentence = (
            "**Eq. (7) needs regressors orthogonal to the gates and Gaussian inputs**, as stated: the gap "
            f"L4 − eq. (7) is {measured(gaps[0])} with a regressor along a gating vector and "
            f"{measured(gaps[1])} under a Gaussian mixture."
        )
        if mixture is not None:
            sentence += (
                " L4 still recovers the regressors under the mixture of Sec. 4.1 in most instances, with a "
                f"bias floor: the recovery rate is {measured(mixture)} at 99 %, and "
                f"the largest E_reg over the instances is {num(extra(mixture, 'max_e_reg'))}."
            )
        out.append(sentence)
    q4 = record(results, "D1", contains="Q4")
    q4_mix = record(results, "D1", "negative-control", contains="Q4")
    if q4 is not None and q4_mix is not None:
        out.append(
            "**Q4's constant.** The paper's constant term of Q4 differs from the Hermite form; for Gaussian "
            f"inputs that changes nothing (difference {measured(q4)}), under the mixture it shifts L4 by "
            f"exactly {num(q4_mix['measured'])}."
        )
    out.append(
        "**Typical, not certain.** Recovery in the relaxed settings of Sec. 4.1 (D5) and by SGD on L4 "
        "(D2) fails in some random instances, so those premises are rates over instances with a 99% "
        'Clopper–Pearson interval, judged against the rate 1/2 ("typically recovers"; the paper gives '
        "no frequency). Their verdicts are the same at every base seed 0–19 (a slow test checks it)."
    )
    return out


def _first(em: dict | None) -> str:
    ours = extra(em, "mean_ours")
    return num(ours[0]) if isinstance(ours, list) and ours else "-"


def shazeer(results: Results) -> str:
    gate = record(results, "C1", contains="numpy")
    text = [
        anchor("shazeer"),
        "## Shazeer et al. 2017",
        "- **The importance loss cannot balance a top-1 router.** For k = 1 the gate is one-hot and "
        "piecewise constant in the logits, so the importance loss has zero gradient everywhere: it "
        "cannot balance a Switch-style or Chen-style router. Shown by "
        "`pytest tests/shazeer2017/test_gating.py -k vanishes_for_top1`.",
        '- **"Exactly k non-zeros" holds for the support, not always for the values.** A kept gate '
        "further below the row maximum than the logarithm of the smallest positive double underflows "
        "to 0, although it is kept. Shown by `pytest tests/shazeer2017/test_gating.py -k underflows`"
        + (
            f"; the C1 check finds {num(gate['measured'])} counterexamples to the support property "
            f"over {extra(gate, 'examples_tried')} examples with ties and huge gaps."
            if gate is not None
            else "."
        ),
    ]
    return "\n\n".join(text)


def performance(results: Results) -> str:
    text = [anchor("performance"), "## The lab's own kernels"]
    rows = [b for s in results.bench for b in s.payload["benchmarks"]]
    fractions = {
        b["kernel"]: b["fraction_of_dgemm"]
        for b in rows
        if b.get("fraction_of_dgemm") is not None and not _is_twin(b) and not _is_peak(b)
    }
    if not fractions:
        text.append(
            "How close the kernels come to the one-thread DGEMM rate is read from the benchmark summary. "
            + missing("nox -s bench\npython -m lab bench-report --summary results/bench/summary.json")
        )
        return "\n\n".join(text)
    best = sorted(fractions.items(), key=lambda kv: (-kv[1], kv[0]))
    text.append(
        "Fraction of the one-thread DGEMM rate per kernel in the committed benchmark summary "
        "([performance](performance.md)): "
        + ", ".join(f"`{k}` {num(100 * v)} %" for k, v in best)
        + f"; median over kernels {num(100 * float(np.median(list(fractions.values()))))} %."
    )
    peaks = {dtype: b for dtype, b in peak_benchmarks(results).items() if b.get("fraction_of_dgemm")}
    if peaks:
        text.append(
            "The one-thread DGEMM rate is not the machine's limit: one core's peak multiply-add rate "
            "(independent vector FMAs, the same run) is "
            + ", ".join(
                f"{num(b['gflops'])} GFLOP/s in {dtype} ({num(b['fraction_of_dgemm'])}× DGEMM's)"
                for dtype, b in peaks.items()
            )
            + "."
        )
    step = next((b for b in rows if b["kernel"] == "algorithm1_step"), None)
    twin = next((b for b in rows if b["kernel"] == "algorithm1_step_numpy"), None)
    if step is not None and step.get("min_ms"):
        sentence = (
            f"One Algorithm 1 step at the paper's size takes {fixed(step['min_ms'], 2)} ms "
            "(minimum over rounds)"
        )
        if twin is not None and twin.get("min_ms"):
            sentence += f", {num(twin['min_ms'] / step['min_ms'])}× faster than its NumPy twin"
        text.append(sentence + ".")
    if sentence := _step_bound(rows):
        text.append(sentence)
    text += [
        sentence for name, record in results.timing if (sentence := _replication_time(results, name, record))
    ]
    return "\n\n".join(text)


def _replication_time(results: Results, name: str, record: dict) -> str | None:
    """The target invocation's wall time (record `name`) beside its floor, and which models the minutes
    above it are."""
    status, floor = target_status(record), floor_minutes(results, record)
    if status == "-" or floor is None:
        return None
    wall = record["wall_seconds"] / 60
    above: dict[str, float] = {"MoE": 0.0, "single CNN": 0.0}
    for t in model_times(results, record):
        above["MoE" if t.model.startswith("moe") else "single CNN"] += t.above_minutes or 0.0
    return (
        f"`replicate table1 table3 --seeds 10` in {record['dtype']} took {fixed(wall, 1)} min on "
        f"{record['cores']} cores (`{name}`; target ≤ {fixed(TARGET_MINUTES, 0)} min, {status}), "
        f"{wall / floor:.2f}× its arithmetic floor of {fixed(floor, 1)} min; of the minutes above the "
        f"floor, the MoE runs account for {fixed(above['MoE'], 1)} and the single CNNs for "
        f"{fixed(above['single CNN'], 1)} ([performance](performance.md))."
    )


def _step_bound(rows: list[dict]) -> str | None:
    """What bounds Algorithm 1's structured ÷ dense target: the step's time outside its expert pass."""
    target = named("Algorithm 1 step, structured ÷ dense")
    found = [b.get("measures", {}) for b in rows if target.matches(b["name"])]
    if not found or "ratio_to_dense_without_experts" not in found[0] or target.measure not in found[0]:
        return None
    ratio, rest = found[0][target.measure], found[0]["ratio_to_dense_without_experts"]
    verdict = (
        "so no faster expert kernel can meet the target: the router's product and gradient, the routing "
        "and the updates would have to shrink too"
        if rest >= target.threshold
        else f"so the expert pass would have to take at most {num(100 * (target.threshold - rest))} % of it"
    )
    text = (
        f"Algorithm 1's structured step takes {num(100 * ratio)} % of the dense step (target "
        f"{target.bound}); its expert pass takes {num(100 * (ratio - rest))} %, and the rest of the step "
        f"alone {num(100 * rest)} %, {verdict} (same run, calls alternating)."
    )
    if (flops := found[0].get("flop_ratio_to_dense")) is not None:
        text += (
            f" Counted in FLOP, the structured step's dense products (one noise patch, the router's two "
            f"products) are {num(100 * flops)} % of the dense step's (four patches, the same router): "
            + (
                "the target lies below the ratio of the arithmetic itself, so a structured step meets "
                "it only where the dense path does its products at a lower rate per FLOP."
                if flops > target.threshold
                else "the target is within reach of the arithmetic."
            )
        )
    if (experts := found[0].get("expert_pass_ratio_to_dense")) is not None:
        text += (
            f" The expert passes alone, structured against dense, take {num(100 * experts)} %: the rest of "
            "the step is the same work in both paths (the router reads the patch sum s in each)."
        )
    times = {b["name"]: b.get("min_ms") for b in rows}
    gemm, dense = times.get("test_dgemm_of_the_same_shape"), times.get("test_algorithm1_step[numba-dense]")
    if gemm and dense:
        text += (
            f" The expert pass's noise products alone, at one-thread DGEMM's speed on each of 2 cores, "
            f"would take {num(100 * gemm / 2 / dense)} % of the dense step (minimum times of the same run)."
        )
    return text


def _is_peak(bench: dict) -> bool:
    """The peak multiply-add probe (`benchmarks/test_bench_peak.py`), a rate and not a kernel."""
    return bench["kernel"].startswith(PEAK_PREFIX)


def _is_twin(bench: dict) -> bool:
    return "[numpy]" in bench["name"] or bench["kernel"].endswith("_numpy")


def findings_page(results: Results) -> str:
    """docs/findings.md."""
    chen = "\n\n".join(f(results) for f in CHEN_FINDINGS)
    return page(
        "Findings",
        INTRO,
        "## Chen et al. 2022\n\n" + chen,
        makkuva(results),
        shazeer(results),
        performance(results),
    )
