"""B13 and B14: explicit steps pass and their controls are detected; the reports carry no verdict."""

import numpy as np
import pytest

from checks.chen2022 import proof_lemmas, proof_rates
from lab.core.stats import clopper_pearson

EXPLICIT = {
    "verify_d1": "D.1",
    "verify_d2": "D.2",
    "verify_d5": "D.5",
    "verify_e2": "E.2",
    "verify_e10": "E.10",
    "verify_e11": "E.11",
    "verify_e15": "E.15",
    "verify_f1": "F.1",
    "verify_f2": "F.2",
}


@pytest.mark.parametrize("name", sorted(EXPLICIT))
def test_premises_pass_and_controls_are_detected(name):
    records = getattr(proof_lemmas, name)(0, "quick")
    assert all(r.claim == "B13" and r.statement.startswith(f"Lemma {EXPLICIT[name]}") for r in records)
    premises = [r for r in records if r.kind == "premise"]
    controls = [r for r in records if r.kind == "negative-control"]
    assert premises and controls
    assert all(r.outcome == "pass" for r in premises), [(r.statement, r.measured) for r in premises]
    assert all(r.outcome == "detected" for r in controls), [(r.statement, r.measured) for r in controls]
    for r in records:  # a rate over instances states its size, and its interval decides
        if "instances" in r.params:
            assert r.params["instances"] >= 200 and (
                r.ci[1] <= 0.05 if r.kind == "premise" else r.ci[0] > 0.05
            )
        if r.ci is not None:  # every interval names its level and size, for the pages to print
            basis = r.extra["interval"]
            assert basis["level"] == r.params["level"] and basis["method"] == "Clopper–Pearson"
            assert basis["n"] == r.params.get("instances", r.params.get("draws_per_cell"))


def test_lemma_5_2_at_the_quick_tier_is_decided_by_its_interval_and_its_control_is_detected():
    premise, control = proof_lemmas.verify_lemma_5_2(0, "quick")
    worst = premise.extra["worst_expert_error_T1"]
    assert premise.outcome == "finding" and premise.extra["smallest_worst_error"] == min(worst) > 1 / 50
    for r in (premise, control):
        basis = r.extra["interval"]
        assert basis["n"] == r.params["runs"] and basis["level"] == r.params["level"]
        # enough runs that the check could pass (all runs good) and could fail (none good)
        assert clopper_pearson(basis["n"], basis["n"], basis["level"])[0] >= r.bound
        assert clopper_pearson(0, basis["n"], basis["level"])[1] < r.bound
    assert premise.ci[1] < premise.bound
    assert control.outcome == "detected"


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_b13_verdicts_do_not_depend_on_the_seed(seed):
    for name in [*EXPLICIT, "verify_lemma_5_2"]:
        assert all(r.ok for r in getattr(proof_lemmas, name)(seed, "quick")), (name, seed)


def test_reading_a_fitted_exponent_along_each_axis():
    """O(σ0^a) must fall at least as fast as σ0 → 0 (slope ≥ a); O(d^a) as d → ∞ (slope ≤ a)."""
    assert "consistent" in proof_rates._reading(2.0, (1.7, 2.3), 1.5, "σ0")
    assert "more slowly" in proof_rates._reading(0.8, (0.7, 0.9), 1.0, "σ0")
    assert "faster" in proof_rates._reading(-1.2, (-1.9, -0.6), -0.001, "d")
    assert "more slowly" in proof_rates._reading(0.5, (0.2, 0.8), -0.005, "d")
    assert "uninformative" in proof_rates._reading(-0.3, (-1.3, 0.7), -0.005, "d")  # holds 0 too
    assert "contains it" in proof_rates._reading(1.7, (1.4, 2.0), 1.5, "σ0")
    assert "too few" in proof_rates._reading(None, None, 1.5, "σ0")


def test_a_fit_recovers_a_known_exponent_and_skips_what_it_cannot_fit():
    x = np.array([0.2, 0.2, 0.4, 0.4, 0.8, 0.8])
    slope, ci, used = proof_rates._fit(x, 3 * x**1.5 * np.array([1.01, 0.99, 1.02, 0.98, 1.0, 1.0]))
    assert used == 6 and ci[0] < 1.5 < ci[1] and slope == pytest.approx(1.5, abs=0.05)
    assert proof_rates._fit(x, -x)[0] is None


def test_one_exploration_run_gives_every_quantity():
    run = proof_rates.exploration_run(16, 16 ** (-1 / 3), seed=1)
    q = proof_rates.exploration_quantities(run)
    needed = {key for _, key, _, _ in proof_rates.RATES + proof_rates.UNDECIDABLE}
    assert needed <= set(q) and {"early_experts", "growth_ratio", "min_center_gap_T1"} <= set(q)
    assert 0 <= q["early_experts"] <= 1 and q["h_inf_T1"] > 0


def test_empty_stage_steps_are_reported_with_their_category():
    records = proof_rates._empty_stage([0.3], {"d": 50}, "rate")
    assert [r.statement.split(":")[0] for r in records] == ["Lemma E.12", "Lemma E.13"]
    assert all(
        r.outcome == "report" and r.measured is None and r.extra["category"] == "rate" for r in records
    )


@pytest.mark.slow
def test_b14_reports_every_rate_and_undecidable_step():
    records = proof_rates.verify_exploration_rates(0, "quick") + proof_rates.verify_undecidable_steps(
        0, "quick"
    )
    lemmas = {r.statement.split(":")[0].removeprefix("Lemma ") for r in records}
    assert lemmas == {
        "E.3",
        "E.4",
        "E.5",
        "E.6",
        "E.7",
        "E.8",
        "E.9",
        "E.12",
        "E.13",
        "E.14",
        "E.16",
        "E.17",
        "E.18",
    }
    assert all(r.kind == "report" and r.ok for r in records)


def test_a_quantity_with_one_value_in_every_run_is_reported_unfitted():
    """A slope fitted to constants has a zero-width interval: no exponent, the value and what it means."""
    x = np.array([0.2, 0.2, 0.4, 0.4, 0.8, 0.8])
    assert proof_rates._fit(x, np.full(6, 0.875)) == (None, None, 6)
    rows = [{"routing_deviation_T1": 1 - 1 / 8} for _ in x]
    (r,) = proof_rates._reports(x, rows, proof_rates.RATES[1:2], "σ0", "rate", {"M": 8, "d": 50})
    assert r.measured is None and r.ci is None and r.extra["constant_value"] == 0.875
    assert "does not fall" in r.note and "1 − 1/M" in r.note and "no exponent fitted" in r.note


def test_a_step_of_the_empty_stage_read_at_t1_has_its_fit_but_no_reading():
    x = np.array([50.0, 50.0, 100.0, 100.0])
    rows = [
        {"center_only_gap_T1": v, "e5_relative_error": v, "profession_spread_T1": v}
        for v in (1.6, 1.3, 0.8, 0.6)
    ]
    records = proof_rates._reports(
        x, rows, proof_rates.UNDECIDABLE, "d", "undecidable", {"M": 8, "d": [50, 100]}
    )
    by_lemma = {r.statement.split(":")[0]: r for r in records if "center-only" in r.key}
    for lemma, other in (("Lemma E.9", "E.14"), ("Lemma E.14", "E.9")):
        r = by_lemma[lemma]
        assert r.ci is not None and "no reading" in r.note and f"same measurement as Lemma {other}" in r.note
        assert r.extra["interval"] == {"method": "t (fitted slope)", "level": 0.95, "n": 4, "of": "runs"}
