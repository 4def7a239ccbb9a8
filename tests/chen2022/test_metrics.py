"""Metrics of Sec. 5–6 and App. A/D: dispatch tables and entropy (6.1), professions, load (5.1), curves."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lab.chen2022 import data
from lab.chen2022 import metrics as mt
from lab.chen2022.routing import routing_probabilities
from lab.kernels import routed as kernels

TABLE4_FINAL = np.array(  # App. A, Table 4: nonlinear MoE, final dispatch (clusters × experts)
    [
        [0, 0, 0, 0, 0, 3971, 0, 0],
        [0, 0, 4009, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0, 0, 4041],
        [0, 3979, 0, 0, 0, 0, 0, 0],
    ]
)
TABLE6_FINAL = np.array(  # App. A, Table 6: linear MoE
    [
        [0, 630, 1629, 1298, 27, 87, 4, 296],
        [136, 1107, 1884, 651, 0, 0, 0, 231],
        [0, 594, 1976, 1471, 0, 0, 0, 0],
        [0, 377, 1480, 1891, 0, 0, 0, 231],
    ]
)


def test_dispatch_entropy_of_the_papers_tables():
    """Table 4's dispatch is pure (entropy 0); Table 6's is mixed, near log 4 like Table 1's linear MoE."""
    assert mt.dispatch_entropy(TABLE4_FINAL) == 0.0
    assert 1.0 < mt.dispatch_entropy(TABLE6_FINAL) < math.log(4)
    assert mt.dispatch_entropy(np.ones((4, 8))) == pytest.approx(math.log(4), abs=1e-15)


tables = st.integers(2, 6).flatmap(
    lambda K: st.integers(1, 9).flatmap(
        lambda M: hnp.arrays(np.int64, (K, M), elements=st.integers(0, 50)).filter(lambda a: a.sum() > 0)
    )
)


@given(tables, st.randoms(use_true_random=False))
def test_dispatch_entropy_properties(counts, rnd):
    """0 ≤ H ≤ log K; H = 0 iff every expert receives at most one cluster; invariant to relabelling."""
    H = mt.dispatch_entropy(counts)
    K = counts.shape[0]
    assert 0.0 <= H <= math.log(K) + 1e-14
    pure = np.all((counts > 0).sum(axis=0) <= 1)
    assert (H < 1e-14) == pure
    rows, cols = list(range(K)), list(range(counts.shape[1]))
    rnd.shuffle(rows)
    rnd.shuffle(cols)
    assert mt.dispatch_entropy(counts[rows][:, cols]) == pytest.approx(H, abs=1e-14)


def test_dispatch_counts_and_validation():
    counts = mt.dispatch_counts(np.array([0, 0, 1, 2]), np.array([1, 1, 0, 1]), K=3, M=2)
    np.testing.assert_array_equal(counts, [[0, 2], [1, 0], [0, 1]])
    with pytest.raises(ValueError, match="routes"):
        mt.dispatch_counts(np.array([0]), np.array([5]), K=2, M=2)
    with pytest.raises(ValueError, match="counts"):
        mt.dispatch_entropy(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="counts"):
        mt.dispatch_entropy(np.array([[1.0, np.nan]]))


def test_professions_follow_definition_d3():
    """k*_m = the k of argmax_{j,k} ⟨v_k, w⁽⁰⁾_{m,j}⟩."""
    V = np.eye(6)[:3]
    W0 = np.zeros((2, 2, 6))
    W0[0, 1, 2] = 0.9  # expert 0: filter 1 on v_2
    W0[0, 0, 0] = 0.5
    W0[1, 0, 1] = 0.3  # expert 1: v_1
    W0[1, 1, 0] = -2.0  # a large negative projection does not count
    np.testing.assert_array_equal(mt.professions(W0, V), [2, 1])
    with_bias = np.concatenate([W0, np.full((2, 2, 1), 9.0)], axis=2)  # a bias column is ignored
    np.testing.assert_array_equal(mt.professions(with_bias, V), [2, 1])
    with pytest.raises(ValueError, match="V"):
        mt.professions(W0[..., :4], V)
    sets = mt.profession_sets(np.array([2, 1, 2]), 3)
    assert [s.tolist() for s in sets] == [[], [1], [0, 2]]


def _p(h):
    """Exact routing probabilities under Algorithm 1's Unif[0, 1] noise, as `expert_load` uses them."""
    return routing_probabilities(h, mt.UNIFORM_ROUTING)


def test_routing_probabilities_exact_cases():
    """p(0) = 1/M; h = (g, 0, …, 0) gives p_1 = g + (1 − g^M)/M; a gap ≥ 1 gives p = 0 (Lemma C.4)."""
    np.testing.assert_allclose(_p(np.zeros((1, 5))), 0.2, atol=1e-15)
    for g in (0.1, 0.5, 0.9):
        p = _p(np.array([[g, 0, 0, 0]]))[0]
        assert p[0] == pytest.approx(g + (1 - g**4) / 4, abs=1e-14)
    p = _p(np.array([[2.0, 0.5, 1.0, -1.0]]))[0]
    assert p[1] == 0.0 and p[3] == 0.0 and p[0] == 1.0


@given(hnp.arrays(float, st.tuples(st.integers(1, 4), st.integers(2, 7)), elements=st.floats(-2, 2)))
def test_routing_probabilities_sum_to_one(h):
    p = _p(h)
    assert np.all(p >= -1e-15)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)


def test_routing_probabilities_agree_with_the_routing_kernel():
    """Exact p(h) against 200,000 draws of the perturbed-argmax noise (99.9 % normal interval per entry)."""
    h = np.array([0.3, -0.2, 0.1, 0.25, -0.5, 0.0])
    draws = 200_000
    freq = kernels.routing_counts(h, draws, 11, 0, 0.0, 1.0) / draws
    p = _p(h[None])[0]
    half = 3.3 * np.sqrt(p * (1 - p) / draws)
    assert np.all(np.abs(freq - p) <= half)
    assert mt.expert_load(np.tile(h, (10, 1))).sum() == pytest.approx(10.0)


def test_signal_alignment_and_cluster_accuracy():
    rng = np.random.default_rng(0)
    config = data.DataConfig(K=2, P=4, d=8)
    signals = data.make_signals(config, rng)
    W = np.zeros((2, 3, 9))
    W[0, 1, :8] = 2 * signals.V[1]
    Theta = np.zeros((8, 2))
    Theta[:, 1] = signals.C[0]
    curves = mt.signal_alignment(W, Theta, signals)
    assert curves["expert_feature"][0, 1] == pytest.approx(2.0)
    assert curves["router_center"][1, 0] == pytest.approx(1.0)
    assert all(v.shape == (2, 2) for v in curves.values())
    y = np.array([1, -1, 1, -1])
    f = np.array([[1.0, 1.0], [-1.0, 1.0], [1.0, -1.0], [1.0, -1.0]])
    acc = mt.expert_cluster_accuracy(y, np.array([0, 0, 1, 1]), f, 2)
    np.testing.assert_allclose(acc, [[1.0, 0.5], [0.5, 0.5]])
    assert mt.accuracy(np.array([1.0, 0.0, -1.0])) == pytest.approx(1 / 3)
