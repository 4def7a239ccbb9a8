"""The B3, B7, B8, B9, B12 checks: premises pass, negative controls are detected, exact pieces are exact."""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest

from checks.chen2022 import training_claims as C
from lab.chen2022 import data
from lab.chen2022.metrics import dispatch_entropy
from lab.chen2022.training import variant_config
from lab.core import registry


def test_checks_are_registered():
    claims = {claim for check in registry.checks() for claim in check.claims}
    assert {"B3", "B7", "B8", "B9", "B12"} <= claims


@pytest.mark.parametrize("K,M", [(2, 3), (3, 3), (3, 5), (4, 6)])
def test_exact_empty_probability_by_enumeration(K, M):
    """Inclusion–exclusion equals brute force over all K^M profession assignments."""
    empty = sum(len(set(a)) < K for a in itertools.product(range(K), repeat=M))
    assert C.exact_empty_probability(K, M) == pytest.approx(empty / K**M, abs=1e-14)
    assert C.exact_empty_probability(K, M) <= K * (1 - 1 / K) ** M + 1e-15  # the union bound of Lemma D.4


def test_lemma_d4_premise_and_same_init_control():
    premise = C.check_professions(8, 16, 4, draws=2000, seed=1)
    assert (
        premise.verdict == "holds"
        and premise.ci[0] <= premise.extra["exact_empty_probability"] <= premise.ci[1]
    )
    control = C.check_professions(8, 16, 4, draws=200, seed=1, same_init=True)
    assert control.kind == "negative-control" and control.verdict == "violated" and control.measured == 1.0


def test_dispatch_entropy_check_and_its_control():
    assert C.check_dispatch_entropy(dispatch_entropy, "premise", 60, 0, "k").verdict == "holds"
    control = C.check_dispatch_entropy(C.load_entropy, "negative-control", 60, 0, "k")
    assert control.verdict == "violated" and control.extra["counterexample"] is not None


def test_sum_theta_along_a_run_and_its_controls():
    base = variant_config("paper", M=4, J=4, steps=40, eta=0.01, eta_r=2.0, record_every=40)
    ok = C.check_sum_theta(base, 150, 0, "premise", "stated", "k")
    assert ok.verdict == "holds" and ok.measured < 1e-14
    bad = C.check_sum_theta(
        dataclasses.replace(base, gate="sigmoid"), 150, 0, "negative-control", "sigmoid", "k"
    )
    assert bad.verdict == "violated" and bad.outcome == "detected"


def test_theorem42_records_shape():
    cfg = variant_config("paper", M=4, J=4, steps=30, record_every=30)
    records = C.theorem42_records(cfg, 150, [0, 1], "premise", "tiny", "tiny")
    assert [r.claim for r in records] == ["B9"] * 5
    assert [r.key for r in records] == [
        "tiny-test-error",
        "tiny-expert-error",
        "tiny-routing",
        "tiny-sets-exist",
        "tiny-sets-exist-no-cover",
    ]
    assert all(r.ci is not None and 0 <= r.measured <= 1 for r in records[:3])
    assert records[0].params["seeds"] == 2
    assert all(r.kind == "report" and r.measured in (0.0, 1.0, 2.0) for r in records[3:])
    assert all(len(r.extra["exists"]) == 2 for r in records[3:])
    empty = C.theorem42_records(
        dataclasses.replace(cfg, same_init=True), 150, [0], "negative-control", "same", "same"
    )
    assert empty[1].measured == 1.0 and empty[1].verdict == "violated"


SPECIALISED = {  # two clusters, three experts: 0 and 2 accurate on Ω_0, 1 on Ω_1, routed accordingly
    "expert_errors": [[0.0, 0.5], [0.5, 0.01], [0.02, 0.5]],
    "dispatch_noise_free": [[30, 0, 20], [0, 49, 1]],
    "cluster_sizes": [50, 51],  # test samples of Ω_0, Ω_1
}
PARAMS = {"run": "planted", "seeds": 2, "level": C.LEVEL}


def test_theorem_sets_records_find_planted_sets():
    """A run whose experts and router have Thm 4.2's properties at B9's thresholds is counted."""
    idle = {  # a fourth expert accurate on nothing: the sets exist only without covering [M]
        "expert_errors": [*SPECIALISED["expert_errors"], [0.5, 0.5]],
        "dispatch_noise_free": [[*row, 0] for row in SPECIALISED["dispatch_noise_free"]],
        "cluster_sizes": SPECIALISED["cluster_sizes"],
    }
    cover, no_cover = C.theorem_sets_records([SPECIALISED, idle], PARAMS, "planted")
    assert (cover.key, no_cover.key) == ("planted-sets-exist", "planted-sets-exist-no-cover")
    assert cover.measured == 1.0 and cover.extra["exists"] == [True, False]
    assert "experts [3] are accurate on no cluster" in cover.extra["reasons"][1]
    assert no_cover.measured == 2.0 and no_cover.extra["witness_sets"] == [[[0, 2], [1]]] * 2
    assert no_cover.extra["worst_routed_share"] == [0.98, 0.98]
    assert cover.params["max_error"] == C.THM42_ERROR and "level" not in cover.params
    # the hardest cluster (largest best-expert error) is Ω_1, with its test-sample count beside it
    assert cover.extra["hardest_cluster_best_error"] == [0.01, 0.01]
    assert cover.extra["hardest_cluster_test_samples"] == [51, 51]


def test_theorem_sets_records_detect_a_cluster_routed_evenly():
    """The search's negative control: Ω_0 spread evenly over the experts, so no M_k holds 98 % of it."""
    even = SPECIALISED | {"dispatch_noise_free": [[10, 10, 10], [0, 49, 1]]}
    for record in C.theorem_sets_records([even], PARAMS, "even"):
        assert record.measured == 0.0 and record.extra["worst_routed_share"] == [pytest.approx(2 / 3)]
        assert "the router sends only 0.6667" in record.extra["reasons"][0]


def test_single_expert_check_detects_weak_feature_noise():
    """With γ ≪ α (D_α ≠ D_γ) a single cubic CNN beats 87.5 %: the B3 check reports it as violated."""
    weak = dataclasses.replace(data.setting(3), gamma=data.UniformRange(0.1, 0.5))
    record = C.check_single("cubic", weak, 600, 120, 0, "negative-control", "k")
    assert record.verdict == "violated" and record.measured > C.OPTIMAL_SINGLE
    assert math.isfinite(record.ci[0])


def test_single_expert_check_holds_for_a_trained_relu_cnn_and_refuses_one_at_chance():
    """B3 premise: a ReLU CNN read out a_j = ±1 learns (above chance) and stays ≤ 87.5 % on setting 3.
    Control: (3.1)'s plain sum of ReLU filters is ≥ 0 (one class for every x): not-applicable."""
    premise = C.check_single("relu", data.setting(3), 600, 100, 0, "premise", "k")
    assert premise.verdict == "holds" and premise.ok and premise.ci[0] > C.CHANCE
    record = C.check_single("relu", data.setting(3), 600, 100, 0, "premise", "k", readout="sum")
    assert record.verdict == "not-applicable" and not record.ok and record.rule == "judged"
    assert record.ci[0] <= C.CHANCE
