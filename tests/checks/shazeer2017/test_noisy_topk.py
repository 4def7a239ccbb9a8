"""Checks C1–C3 (checks/noisy_topk.py): premises hold, negative controls are detected, the pieces can fail."""

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings

from checks.shazeer2017 import noisy_topk as nt
from lab.core.registry import checks
from lab.core.stats import clopper_pearson
from lab.shazeer2017 import gating


def run(claim, seed=0):
    records = [r for check in checks([claim]) if "noisy_topk" in check.name for r in check.run(seed, "quick")]
    assert records, f"no noisy_topk check registered for {claim}"
    return records


@pytest.mark.parametrize("claim", ["C1", "C2", "C3"])
def test_registered_check_passes_premises_and_detects_negative_controls(claim):
    records = run(claim)
    kinds = {r.kind for r in records}
    assert kinds == {"premise", "negative-control"}
    for r in records:
        assert r.ok, (r.statement, r.verdict, r.measured, r.bound, r.ci, r.extra)


def test_c2_is_deterministic_for_a_seed():
    first, again = run("C2", seed=4), run("C2", seed=4)
    assert [r.to_json() | {"seconds": 0} for r in first] == [r.to_json() | {"seconds": 0} for r in again]


# ---------------------------------------------------------------------------- C1 pieces


def test_the_strategy_produces_ties_and_million_gaps():
    config = settings(
        max_examples=500, database=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck)
    )
    tie = find(
        nt.gate_logits(),
        lambda e: np.any(np.diff(np.sort(e[0])) == 0),
        settings=config,
        random=random.Random(0),
    )
    gap = find(nt.gate_logits(), lambda e: np.ptp(e[0]) >= 1e6, settings=config, random=random.Random(0))
    assert tie is not None and gap is not None


@given(nt.gate_logits())
def test_the_lab_gate_satisfies_c1(case):
    H, k = case
    assert nt.gate_violations(H, k, *nt.numpy_gate(H, k)) == []


@pytest.mark.parametrize("H, k", nt.PINNED_LOGITS)
def test_pinned_extremes_satisfy_c1_for_both_implementations(H, k):
    assert nt.gate_violations(H, k, *nt.numpy_gate(H, k)) == []
    assert nt.gate_violations(H, k, *nt.kernel_gate(H, k)) == []


def test_threshold_mask_mutant_is_caught_on_ties():
    H = np.zeros((1, 4))
    assert "support does not have exactly k entries" in nt.gate_violations(
        H, 1, *nt.threshold_mask_gate(H, 1)
    )


def test_unshifted_softmax_mutant_is_caught_at_million_gaps():
    H = np.array([[1e6, -1e6, 0.0]])
    assert nt.gate_violations(H, 2, *nt.unshifted_softmax_gate(H, 2)) == ["G is not finite"]


def test_gate_violations_catch_a_broken_tie_rule_and_order():
    H = np.array([[1.0, 1.0, 0.0]])
    highest_index = np.array([[False, True, False]])
    assert any("tie rule" in p for p in nt.gate_violations(H, 1, highest_index * 1.0, highest_index))
    H = np.array([[2.0, 1.0, 0.0]])
    support = np.array([[True, True, False]])
    assert any("order" in p for p in nt.gate_violations(H, 2, np.array([[0.4, 0.6, 0.0]]), support))


# ---------------------------------------------------------------------------- C2 pieces


def test_plain_kth_largest_differs_from_kth_excluding_exactly_on_the_kept_experts():
    rng = np.random.default_rng(1)
    H = rng.normal(size=(20, 6))
    excluding, _ = gating.kth_excluding(H, 2)
    differs = nt.kth_largest(H, 2) != excluding
    np.testing.assert_array_equal(differs, gating.top_k_mask(H, 2))


def test_interval_record_holds_inside_and_fails_outside():
    counts = np.array([[500, 100]])
    inside = nt.interval_record("C2", "k", "s", "premise", np.array([[0.5, 0.1]]), counts, 1000, {})
    assert inside.verdict == "holds"
    outside = nt.interval_record("C2", "k", "s", "premise", np.array([[0.5, 0.2]]), counts, 1000, {})
    assert outside.verdict == "violated" and outside.extra["worst_pair"] == [0, 1]
    lo, hi = clopper_pearson(100, 1000, 1 - 0.01 / 2)
    assert outside.ci == pytest.approx((lo, hi)) and outside.extra["max_gap_outside_ci"] == pytest.approx(
        0.2 - hi
    )


def test_c2_negative_control_gap_is_large():
    negative = [r for r in run("C2") if r.kind == "negative-control"]
    assert all(r.extra["max_gap_outside_ci"] > 0.05 for r in negative)


def test_top1_membership_matches_lab_routing_gaussian():
    routing = pytest.importorskip("lab.chen2022.routing")
    h, s, draws = np.array([0.3, -0.2, 0.0, 0.5, -1.0]), 0.7, 200_000
    p = np.asarray(routing.routing_probabilities(h, routing.Gaussian(s)), dtype=float)
    counts = gating.top_k_membership_counts(
        h[None, :], np.full((1, h.size), s), np.zeros((1, h.size)), 1, draws, 3, resample_all=True
    )
    record = nt.interval_record(
        "C2", "k", "lab.chen2022.routing Gaussian p_m", "premise", p[None, :], counts, draws, {}
    )
    assert record.verdict == "holds", record.extra


# ---------------------------------------------------------------------------- C3 pieces


def _router_problem(rng: np.random.Generator, n: int, d: int, M: int) -> tuple:
    """x (n, d), W_g and W_noise (d, M), ξ (n, M): standard normal, drawn in that order."""
    return rng.normal(size=(n, d)), rng.normal(size=(d, M)), rng.normal(size=(d, M)), rng.normal(size=(n, M))


def test_gradient_check_flags_the_stop_gradient_mutant_and_not_the_real_gradient():
    rng = np.random.default_rng(2)
    problem = _router_problem(rng, 30, 4, 6)
    real = nt.gradient_errors(gating.load_loss_and_gradients, *problem, 2, 2, rng)
    mutant = nt.gradient_errors(nt.load_loss_without_threshold_path, *problem, 2, 2, rng)
    assert real["complex_step"] <= nt.GRADIENT_TOL < mutant["complex_step"]
    assert real["central_difference"] < 1e-7


def test_top1_gradient_rule_holds_for_the_softmax_gate_and_fails_for_shazeers_one_hot_gate():
    rng = np.random.default_rng(3)
    problem = (*_router_problem(rng, 30, 4, 6), 2)
    pi_gate = nt.top1_gradient_record(
        "pi", gating.softmax_gate_importance_loss_and_gradients, "premise", "p", problem, 3, rng
    )
    one_hot = nt.top1_gradient_record(
        "G", gating.importance_loss_and_gradients, "negative-control", "c", problem, 3, rng
    )
    assert pi_gate.verdict == "holds" and pi_gate.measured > 1e6 * pi_gate.bound
    assert one_hot.verdict == "violated" and one_hot.measured == 0.0
    assert pi_gate.params["k"] == one_hot.params["k"] == 1


def test_directional_derivatives_match_the_analytic_gradient():
    rng = np.random.default_rng(5)
    problem = (*_router_problem(rng, 20, 3, 5), 1)
    grad = gating.softmax_gate_importance_loss_and_gradients(*problem[:4], 1).grad_W_g
    found = nt.directional_derivatives(
        gating.softmax_gate_importance_loss_and_gradients, problem, 1, 2, np.random.default_rng(6)
    )
    check = np.random.default_rng(6)
    for value in found:
        V = check.normal(size=grad.shape)
        assert value == pytest.approx(np.sum(grad * V / np.linalg.norm(V)), rel=1e-12)
