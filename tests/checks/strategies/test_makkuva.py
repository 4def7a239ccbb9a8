"""checks.strategies.makkuva: GRU cells and inputs for D6, and the restrictions making eq. (4) exact."""

import numpy as np
from hypothesis import given

from checks.strategies.makkuva import gru_cases


@given(gru_cases())
def test_cases_have_consistent_shapes_and_bounded_entries(case):
    params, x, h = case
    m, p = h.size, x.size
    assert 1 <= m <= 4 and 1 <= p <= 4
    assert params.U_h.shape == (m, p) and params.W_h.shape == (m, m)
    assert max(np.abs(a).max() for a in (*vars(params).values(), x, h)) <= 2.0


@given(gru_cases("scalar"))
def test_scalar_cases_have_one_hidden_unit(case):
    assert case[2].size == 1


@given(gru_cases("diagonal"))
def test_diagonal_cases_have_a_diagonal_w_h(case):
    W_h = case[0].W_h
    assert np.array_equal(W_h, np.diag(np.diag(W_h)))


@given(gru_cases("constant-reset"))
def test_constant_reset_cases_share_one_reset_row(case):
    params = case[0]
    assert np.all(params.U_r == params.U_r[:1]) and np.all(params.W_r == params.W_r[:1])


@given(gru_cases(max_dim=2))
def test_max_dim_bounds_both_sizes(case):
    assert case[1].size <= 2 and case[2].size <= 2
