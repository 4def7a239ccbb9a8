"""lab.chen2022.theorem_sets: the exact search for Theorem 4.2's sets M_k, against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from checks.strategies.theorem_sets import THRESHOLD, theorem_tables
from lab.chen2022.theorem_sets import judge_sets, theorem_sets

SHARE = 1 - THRESHOLD


def brute_force(errors, dispatch, cover):
    """The best worst routed share over every assignment of experts to sets (-1: in no set), or None."""
    M, K = errors.shape
    best = None
    for assign in itertools.product(range(-1 if not cover else 0, K), repeat=M):
        sets = [[m for m in range(M) if assign[m] == k] for k in range(K)]
        if any(not s for s in sets) or any(errors[m, k] > THRESHOLD for k, s in enumerate(sets) for m in s):
            continue
        worst = min(dispatch[k, s].sum() / dispatch[k].sum() for k, s in enumerate(sets))
        best = worst if best is None else max(best, worst)
    return best


@given(theorem_tables(), st.booleans())
def test_the_search_finds_what_brute_force_finds(tables, cover):
    """Existence and the best worst share equal brute force over all (K or K+1)^M assignments."""
    errors, dispatch = tables
    found = theorem_sets(errors, dispatch, THRESHOLD, SHARE, cover)
    best = brute_force(errors, dispatch, cover)
    assert found.exists == (best is not None and best >= SHARE)
    if best is None:
        assert found.sets is None and found.worst_share == 0.0 and found.reason
    else:
        assert found.worst_share == best
        assert judge_sets(found.sets, errors, dispatch, THRESHOLD, SHARE, cover) == found
    assert (found.reason == "") == found.exists


@given(theorem_tables())
def test_covering_is_the_stronger_reading(tables):
    errors, dispatch = tables
    strong, weak = (theorem_sets(errors, dispatch, THRESHOLD, SHARE, cover) for cover in (True, False))
    assert weak.exists or not strong.exists
    assert weak.worst_share >= strong.worst_share


ERRORS = np.array([[0.0, 0.5], [0.5, 0.01], [0.02, 0.5]])  # experts 0, 2 accurate on Ω_0, expert 1 on Ω_1
ROUTED = np.array([[30, 0, 20], [0, 49, 1]])  # Ω_0 into {0, 2}; 49 of 50 of Ω_1 to expert 1


def judged(sets, dispatch=ROUTED, cover=True):
    return judge_sets(sets, ERRORS, dispatch, THRESHOLD, SHARE, cover)


def test_judge_sets_on_hand_cases():
    assert judged([[0, 2], [1]]) == judged([(2, 0), np.array([1])])
    good = judged([[0, 2], [1]])
    assert good.exists and good.worst_share == 0.98 and good.sets == ((0, 2), (1,))
    assert "not disjoint" in judged([[0, 1], [1]]).reason
    assert "leave experts [2] out" in judged([[0], [1]]).reason
    assert not judged([[0], [1]], cover=False).exists  # Ω_0 sends 20 of 50 to expert 2, outside
    assert judged([[0], [1]], cover=False).worst_share == 0.6
    assert "empty for k = [1]" in judged([[0, 1, 2], []]).reason
    assert "(m, k) = [(1, 0), (2, 1)]" in judged([[0, 1], [2]]).reason
    leaky = judged([[0, 2], [1]], dispatch=np.array([[30, 0, 20], [0, 48, 2]]))
    assert not leaky.exists and leaky.worst_share == 0.96 and "only 0.96" in leaky.reason


def test_theorem_sets_on_hand_cases():
    assert theorem_sets(ERRORS, ROUTED, THRESHOLD, SHARE).sets == ((0, 2), (1,))
    assert theorem_sets(ERRORS, ROUTED, THRESHOLD, SHARE, cover=False).sets == ((0, 2), (1,))
    idle = theorem_sets(np.vstack([ERRORS, [0.5, 0.5]]), np.c_[ROUTED, [0, 0]], THRESHOLD, SHARE)
    assert idle.sets is None and "experts [3] are accurate on no cluster" in idle.reason
    weak = theorem_sets(np.vstack([ERRORS, [0.5, 0.5]]), np.c_[ROUTED, [0, 0]], THRESHOLD, SHARE, False)
    assert weak.exists and weak.sets == ((0, 2), (1,))
    unserved = theorem_sets(ERRORS[:, ::-1] * [1, 0] + [0.5, 0], ROUTED, THRESHOLD, SHARE)
    assert unserved.sets is None and "k = [0]" in unserved.reason


def test_an_evenly_routed_cluster_has_no_sets():
    """The control B9 plants: Ω_0 spread evenly over all experts, so no M_k holds 98 % of it."""
    even = np.vstack([np.full(3, 10), ROUTED[1]])
    found = theorem_sets(ERRORS, even, THRESHOLD, SHARE)
    assert not found.exists and found.worst_share == pytest.approx(2 / 3)


def test_two_clusters_competing_for_one_expert():
    """Expert 0 is the only good one for both clusters: disjointness leaves one cluster without it."""
    errors = np.array([[0.0, 0.0], [0.0, 0.5], [0.5, 0.0]])
    dispatch = np.array([[50, 0, 0], [49, 0, 1]])
    found = theorem_sets(errors, dispatch, THRESHOLD, SHARE)
    assert not found.exists and found.worst_share == pytest.approx(1 / 50)


@pytest.mark.parametrize(
    ("change", "name", "error"),
    [
        ({"errors": np.zeros((0, 2))}, "errors", ValueError),
        ({"errors": ERRORS + 1.0}, "errors", ValueError),
        ({"dispatch": ROUTED.T}, "dispatch", ValueError),
        ({"dispatch": np.array([[0, 0, 0], [0, 49, 1]])}, "dispatch", ValueError),
        ({"dispatch": -ROUTED}, "dispatch", ValueError),
        ({"max_error": 1.0}, "max_error", ValueError),
        ({"routed_share": 0.0}, "routed_share", ValueError),
        ({"cover": 1}, "cover", TypeError),
    ],
)
def test_bad_input_is_refused_naming_the_argument(change, name, error):
    kwargs = {"errors": ERRORS, "dispatch": ROUTED, "max_error": THRESHOLD, "routed_share": SHARE} | change
    with pytest.raises(error, match=f"^{name}"):
        theorem_sets(**kwargs)
    with pytest.raises(error, match=f"^{name}"):
        judge_sets([[0, 2], [1]], **kwargs)


@pytest.mark.parametrize(
    ("sets", "error"),
    [([[0, 2]], ValueError), ("01", ValueError), ([[0, 3], [1]], ValueError), ([[0.0], [1]], TypeError)],
)
def test_bad_sets_are_refused(sets, error):
    with pytest.raises(error, match=r"^sets"):
        judge_sets(sets, ERRORS, ROUTED, THRESHOLD, SHARE)
