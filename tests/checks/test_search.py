"""checks.search.hypothesis_maximum: Hypothesis as a seeded optimiser (steered, unsteered, falsifying)."""

from hypothesis import strategies as st

from checks.chen2022.routing_smoothness import exact_router, pair_ratio
from checks.search import hypothesis_maximum
from checks.strategies.routing import gate_pairs
from lab.chen2022.routing import Gumbel

INTEGERS = st.integers(0, 1000)


def test_search_is_deterministic_for_a_seed():
    def score(pair):
        return {"ratio": pair_ratio(exact_router(Gumbel(1.0)), *pair, 1.0)}

    first = hypothesis_maximum(score, gate_pairs(M=3), 10, seed=5)
    second = hypothesis_maximum(score, gate_pairs(M=3), 10, seed=5)
    assert first["ratio"][0] == second["ratio"][0]


def test_each_label_keeps_its_largest_value_and_first_input():
    seen = []

    def score(n):
        seen.append(n)
        return {"n": float(n), "minus": float(-n)}

    best = hypothesis_maximum(score, INTEGERS, 30, seed=1, steer=False)
    assert best["n"] == (max(seen), seen[seen.index(max(seen))])
    assert best["minus"] == (-min(seen), min(seen))


def test_pinned_inputs_are_scored():
    best = hypothesis_maximum(lambda n: {"n": float(n)}, st.integers(0, 10), 5, seed=0, pinned=[10**6])
    assert best["n"] == (1e6, 10**6)


def test_unsteered_search_draws_the_same_inputs_whatever_the_scores():
    def drawn(sign: float) -> list[int]:
        seen = []

        def score(n):
            seen.append(n)
            return {"x": sign * n}

        hypothesis_maximum(score, INTEGERS, 40, seed=3, steer=False)
        return seen

    assert drawn(1.0) == drawn(-1.0)


def test_stop_ends_the_search_at_the_first_positive_stop_score():
    seen = []

    def score(n):
        seen.append(n)
        return {"n": float(n), "big": float(n > 500)}

    best = hypothesis_maximum(score, INTEGERS, 200, seed=2, stop="big")
    value, first_big = best["big"]
    assert value == 1.0 and first_big > 500
    assert {n for n in seen if n > 500} == {first_big} and len(seen) < 200  # nothing drawn after it
    never = hypothesis_maximum(lambda n: {"n": float(n), "big": 0.0}, INTEGERS, 20, seed=2, stop="big")
    assert never["big"][0] == 0.0


def test_a_search_does_not_depend_on_the_constants_of_unrelated_local_modules(tmp_path, monkeypatch):
    """Hypothesis draws constants from every local module loaded; a search must not see them."""
    import contextlib
    import importlib
    import sys

    from hypothesis import strategies as st

    import checks.search

    def score(x):
        return {"value": -abs(x - 0.123456789)}

    def search():
        return hypothesis_maximum(score, st.floats(-1e3, 1e3), 300, seed=7, steer=False)["value"]

    before = search()
    constants = "\n".join(f"C{i} = {0.123456789 + i * 1e-12!r}" for i in range(200))
    (tmp_path / "unrelated_constants.py").write_text(constants + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("unrelated_constants")
    try:
        assert search() == before
        with monkeypatch.context() as m:  # without the guard the module's constants would steer it
            m.setattr(checks.search, "without_local_constants", contextlib.nullcontext)
            assert search() != before
    finally:
        sys.modules.pop("unrelated_constants", None)
