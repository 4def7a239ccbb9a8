"""Fits of Makkuva et al. (`lab.makkuva2020.fit`) pinned exactly: which steps a trajectory records."""

import numpy as np

from lab.makkuva2020.fit import init_params, sgd_l2
from lab.makkuva2020.gated_regression import GaussianInput, paper_model


def test_sgd_l2_records_every_record_every_steps_and_the_last():
    model = paper_model(2)
    rng = np.random.default_rng(6)
    A0, W0 = init_params(2, 10, rng)
    traj = sgd_l2(A0, W0, model, GaussianInput(10), rng, steps=11, batch=32, record_every=4)
    assert traj.steps.tolist() == [0.0, 4.0, 8.0, 11.0]
    assert traj.A.shape[0] == traj.W.shape[0] == 4
    assert np.array_equal(traj.A[0], A0) and np.array_equal(traj.W[0], W0)
