"""Patch-wise classifiers (`lab.chen2022.patchwise`) pinned exactly: the orbit's round-off allowance."""

import pytest

from lab.chen2022.patchwise import summation_allowance

U = 2.0**-53  # unit round-off of float64


@pytest.mark.parametrize("P", [3, 4, 7])
def test_summation_allowance_is_gamma_4p_minus_1(P):
    # Higham's γ_n = n u / (1 − n u) with n = 4P − 1 for the 4P signed summands of an orbit.
    n = 4 * P - 1
    assert summation_allowance(P) == n * U / (1.0 - n * U)
