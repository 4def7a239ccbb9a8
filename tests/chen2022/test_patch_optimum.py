"""lab.chen2022.patch_optimum: the exact optimum of Theorem 4.1's class for discrete magnitude laws."""

import pytest

from lab.chen2022.patch_optimum import DiscreteLaw, optimum, symmetric_mass

THIRD = (1 / 3,) * 3
EQUAL = DiscreteLaw((1.0, 1.5, 2.0), THIRD)


@pytest.mark.parametrize("K", [2, 3])
def test_equal_laws_have_the_optimum_one_eighth(K):
    """Theorem 4.1's floor and the lookup's error: the program finds exactly 1/8."""
    found = optimum(EQUAL, EQUAL, K=K)
    assert found.error == pytest.approx(0.125, abs=1e-12) and found.floor == pytest.approx(0.125)


def test_disjoint_laws_are_separated_without_error():
    found = optimum(DiscreteLaw((1.0,), (1.0,)), DiscreteLaw((2.0,), (1.0,)))
    assert (found.error, found.floor) == (0.0, 0.0)


def test_uniform_partial_overlap_has_the_witnesses_floor():
    gamma = DiscreteLaw((1.5, 2.0, 2.5), THIRD)
    assert symmetric_mass(EQUAL, gamma) == pytest.approx(4 / 9)
    assert optimum(EQUAL, gamma).error == pytest.approx(4 / 9 / 8, abs=1e-12)


def test_symmetric_mass_is_one_for_equal_laws_and_symmetric():
    alpha, gamma = DiscreteLaw((1.0, 2.0), (0.9, 0.1)), DiscreteLaw((1.0, 2.0, 3.0), (0.1, 0.3, 0.6))
    assert symmetric_mass(EQUAL, EQUAL) == pytest.approx(1.0)
    assert symmetric_mass(alpha, gamma) == pytest.approx(symmetric_mass(gamma, alpha))
    assert symmetric_mass(alpha, gamma) == pytest.approx(0.09 + 0.03 + 2 * 0.01)


@pytest.mark.parametrize(
    ("values", "weights", "name"),
    [
        ((), (), "values"),
        ((1.0, 1.0), (0.5, 0.5), "distinct"),
        ((1.0, -2.0), (0.5, 0.5), "positive"),
        ((1.0, 2.0), (0.5, 0.6), "sum to 1"),
    ],
)
def test_a_bad_law_is_refused_naming_what_is_wrong(values, weights, name):
    with pytest.raises(ValueError, match=name):
        DiscreteLaw(values, weights)


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError, match="DiscreteLaw"):
        optimum((1.0,), EQUAL)
    with pytest.raises(ValueError, match="K"):
        optimum(EQUAL, EQUAL, K=1)
