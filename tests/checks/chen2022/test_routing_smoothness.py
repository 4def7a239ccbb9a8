"""Premise and negative-control tests of the routing checks B4, B5, B6 (Lemmas 5.1/C.1, C.3, C.4)."""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from checks.chen2022 import routing_smoothness as rs
from checks.strategies.routing import gate_pairs, gate_vectors, tie_pairs
from lab.chen2022.routing import Gaussian, Gumbel, Uniform, routing_probabilities

FAMILIES = st.sampled_from([Uniform(0.0, 1.0), Uniform(-2.0, 0.5), Gaussian(0.6), Gumbel(1.7)])


@st.composite
def noisy_pairs(draw):
    noise = draw(FAMILIES)
    return noise, draw(gate_pairs(scale=noise.spread))


# ---------------------------------------------------------------- B4 / B5 premises and controls


@given(noisy_pairs())
def test_lemma_5_1_and_the_sharp_constant_hold(case):
    noise, (h, h_hat) = case
    router = rs.exact_router(noise)
    assert rs.pair_ratio(router, h, h_hat, noise.kappa * h.size**2) <= 1.0
    assert rs.pair_ratio(router, h, h_hat, 2.0 * noise.kappa) <= 1.0


@given(st.sampled_from(tie_pairs()))
def test_routing_without_noise_breaks_lemma_5_1(pair):
    h, h_hat = pair
    assert rs.pair_ratio(rs.plain_argmax, h, h_hat, h.size**2) > 1.0
    assert rs.pair_ratio(rs.exact_router(Uniform(0.0, 1e-6)), h, h_hat, h.size**2) > 1.0


@given(st.data())
def test_lemma_c3_holds_and_non_identical_noise_breaks_it(data):
    noise = data.draw(FAMILIES)
    h = data.draw(gate_vectors(scale=noise.spread))
    p = routing_probabilities(h, noise)
    assert rs.swap_ratio(p, h, noise.kappa * h.size**2) <= 1.0
    assert rs.swap_ratio(p, h, 2.0 * noise.kappa) <= 1.0
    tied = data.draw(gate_vectors(kinds=("ties",)))
    tied[:2] = tied.max()  # experts 0 and 1 tied for the top
    assert rs.swap_ratio(rs.mixed_uniform_router(0.5)(tied)[0], tied, 2.0 * tied.size**2) > 1.0
    assert rs.swap_ratio(rs.plain_argmax(tied)[0], tied, 2.0 * tied.size**2) > 1.0


# ---------------------------------------------------------------- B4: the terms of Lemma C.1's proof


@given(st.integers(4, 64))
def test_the_argmax_change_exceeds_2_kappa_from_four_experts(M):
    assert rs._beyond_sharp_record((M,), "premise", "coupling-beyond-2kappa").outcome == "pass"


@pytest.mark.parametrize("M", [2, 3])
def test_the_argmax_change_stays_within_2_kappa_at_two_and_three_experts(M):
    """M = 2: q = ‖Δp‖∞ (proven); M = 3: q/(κδ) → 2ab/(M − 1) = 2 from below. The control must be detected."""
    assert rs._beyond_sharp_record((M,), "negative-control", "control-coupling-m2").outcome == "detected"


def test_coupling_records_put_the_m_dependence_in_q_and_u_not_in_p():
    records = {r.key: r for r in rs.verify_proof_coupling(0, "quick")}
    assert records["coupling-beyond-2kappa"].outcome == "pass"
    assert "for some M ∈ {2, 4, 8, 16, 32, 64} (max over M)" in records["coupling-beyond-2kappa"].statement
    assert records["control-coupling-m2"].outcome == "detected"
    assert records["control-coupling-m2"].statement.endswith(", at M = 2")
    for noise in rs.FAMILIES:
        record = records[f"coupling-m-dependence-{noise.name}"]
        rows, allowance = record.extra["rows"], record.params["round_off"]
        assert [row["M"] for row in rows] == list(rs.COUPLING_M)
        for row in rows:
            assert row["routing"] <= 2.0 + allowance
            assert row["routing"] <= row["change"] + allowance <= row["union"] + 2 * allowance
            assert row["union"] <= row["paper"]
        assert rows[-1]["union"] > 1000 * rows[0]["union"]  # ~ M(M − 1): 64·63/2
    uniform = records["coupling-m-dependence-uniform"].extra["rows"]
    assert all(a["change"] < b["change"] for a, b in itertools.pairwise(uniform))


# ---------------------------------------------------------------- B6


@given(st.data())
def test_lemma_c4_exact_zero_and_the_gaussian_control(data):
    low = data.draw(st.floats(-2.0, 2.0))
    noise = Uniform(low, low + data.draw(st.floats(0.1, 3.0)))
    h = data.draw(gate_vectors(kinds=("gapped",), scale=noise.width))  # the width as rounded in floats
    gapped = rs._gapped(h, noise.width)
    assert np.all(routing_probabilities(h, noise)[gapped] == 0.0)
    assert np.all(routing_probabilities(h, Gaussian(noise.width))[gapped] > 0.0)


# ---------------------------------------------------------------- the registered entries


@pytest.mark.parametrize(
    "entry",
    [rs.verify_lipschitz, rs.verify_proof_coupling, rs.verify_swap, rs.verify_no_route_beyond_width],
    ids=lambda f: f.__name__,
)
def test_registered_entries_are_all_as_expected(entry):
    records = entry(0, "quick")
    assert records and all(r.ok for r in records), [(r.statement, r.outcome) for r in records]
    assert {r.kind for r in records} - {"report"} == {"premise", "negative-control"}


def test_lemma_c3_uniform_record_reaches_the_m2_worst_case():
    records = {r.key: r for r in rs.verify_swap(0, "quick")}
    assert 0.4999 < records["lemma-c3-uniform"].measured <= 0.5
    # the paper states C.3 for Unif[0, 1] with M² only; other noises are labelled as the lab's extension
    assert records["lemma-c3-uniform"].statement.startswith("Lemma C.3, Unif[0, 1]: ")
    assert "≤ M²|h_m" in records["lemma-c3-uniform"].statement
    for key in ("lemma-c3-gaussian", "lemma-c3-gumbel"):
        assert records[key].statement.startswith("lab's extension of C.3 via C.1 (κM²)")
        assert records[key].params["pinned"] == 4 and records[key].params["examples"] == 60
