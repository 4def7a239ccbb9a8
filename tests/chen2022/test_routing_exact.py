"""Exact routing (`lab.chen2022.routing_exact`) pinned to its stated contracts."""

import math

import numpy as np
import pytest
from scipy import special

from lab.chen2022.routing_exact import GAUSSIAN_WINDOW, _gaussian_nodes, _gaussian_window, legendre01


@pytest.mark.parametrize("lo, panel", [(-9.5, 0.5), (-9.5, 0.25), (-38.0, 0.5), (-9.5, 0.0625)])
def test_gaussian_panels_are_at_most_panel_wide_and_the_rule_integrates_exactly(lo, panel):
    # The adaptive rule halves `panel` until its error estimate is met, which refines only if the
    # panels really are at most `panel` wide: ceil((hi - lo) / panel) panels of 20 nodes each.
    hi = GAUSSIAN_WINDOW[1]
    t, w = _gaussian_nodes(lo, panel, 20)
    panels = math.ceil((hi - lo) / panel)
    assert t.size == w.size == 20 * panels
    assert (hi - lo) / panels <= panel
    assert lo < t.min() and t.max() < hi
    np.testing.assert_allclose(w.sum(), hi - lo, rtol=1e-14)
    np.testing.assert_allclose(w @ t**3, (hi**4 - lo**4) / 4, rtol=1e-12)


def test_legendre01_is_the_gauss_rule_on_the_unit_interval():
    xi, wq = legendre01(5)
    assert xi.size == 5 and np.all((0 < xi) & (xi < 1))
    for degree in range(10):  # exact up to degree 2 * 5 - 1
        np.testing.assert_allclose(wq @ xi**degree, 1 / (degree + 1), rtol=1e-14)


@pytest.mark.parametrize("d", [[0.0, 0.0], [0.0, -1.0, -2.5], [0.0, -0.5, -0.5, -0.5]])
def test_the_gaussian_window_leaves_out_less_than_1e_20_of_the_winners_tail(d):
    # The winner's integrand is at most φ(t), so starting at t = lo drops at most Φ(lo) of its mass.
    lo = _gaussian_window(np.array([d]))
    assert special.ndtr(lo) < 1e-20
    assert lo <= min(d) / 2 - 8.0  # and the peak of every p_m (at t ≥ d_m / 2) is inside


@pytest.mark.parametrize(
    ("gap", "lo"), [(0.0, -9.5), (-2.0, -9.5), (-10.0, -13.0), (-40.0, -28.0), (-60.0, -38.0)]
)
def test_the_gaussian_window_reaches_exactly_half_the_largest_gap_below_the_tail(gap, lo):
    """The window is min(−9.5, gap/2 − 8), no wider: each extra unit of window costs panels of 20 nodes."""
    assert _gaussian_window(np.array([[0.0, gap, gap / 3]])) == lo
