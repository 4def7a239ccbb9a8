"""lab.makkuva2020.gated_regression: eq. (1) sampling, E[p*] by quadrature, gate Fisher information, GRU."""

import numpy as np
import pytest
from hypothesis import given

from checks.strategies.makkuva import gru_cases
from lab.core.stats import clopper_pearson, normal_mean
from lab.makkuva2020.gated_regression import (
    GatedRegression,
    GaussianInput,
    GaussianMixtureInput,
    GRUParams,
    expected_gates,
    gate_fisher_information,
    gate_probabilities,
    gru_step,
    hierarchical_moe_step,
    paper_model,
    rereferenced_gating,
    sample,
)


def test_paper_model_is_sec4_setting():
    m = paper_model(3)
    assert np.array_equal(m.A, np.eye(10)[:3]) and np.array_equal(m.W, np.eye(10)[3:5])
    assert m.sigma == 0.05 and m.activation == "linear" and (m.k, m.d) == (3, 10)


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"A": np.eye(3)[:1], "W": np.zeros((0, 3)), "sigma": 0.1}, "A"),
        ({"A": np.eye(3)[:2], "W": np.zeros((2, 3)), "sigma": 0.1}, "W"),
        ({"A": np.eye(3)[:2], "W": np.zeros((1, 3)), "sigma": -1.0}, "sigma"),
        ({"A": np.eye(3)[:2], "W": np.full((1, 3), np.nan), "sigma": 0.1}, "finite"),
        ({"A": np.eye(3)[:2], "W": np.zeros((1, 3)), "sigma": 0.1, "activation": "swish"}, "activation"),
    ],
)
def test_model_rejects_bad_input(kwargs, word):
    with pytest.raises(ValueError, match=word):
        GatedRegression(**kwargs)


def test_bad_sizes_and_inputs():
    with pytest.raises(ValueError, match="d must be"):
        paper_model(3, d=4)
    with pytest.raises(ValueError, match="k must be"):
        paper_model(1)
    with pytest.raises(ValueError, match="p must lie"):
        GaussianMixtureInput(np.ones(3), 1.5)
    with pytest.raises(ValueError, match="n must be"):
        GaussianInput(3).sample(0, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"inputs\.d"):
        sample(paper_model(2), GaussianInput(5), 10, np.random.default_rng(0))


def test_gates_finite_at_extreme_logits():
    W = np.array([[1e300, 0.0], [-1e300, 0.0]])
    p = gate_probabilities(W, np.array([[1.0, 0.0], [-1.0, 0.0]]))
    assert np.all(np.isfinite(p)) and np.allclose(p.sum(axis=0), 1.0)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_expected_gates_match_sampled_expert_frequencies(k):
    """E[p_m] by quadrature against `sample`'s expert counts (Clopper–Pearson 99%, Bonferroni over m)."""
    rng = np.random.default_rng(k)
    model = GatedRegression(np.eye(8)[:k], rng.standard_normal((k - 1, 8)), 0.1)
    pi = expected_gates(model.W, GaussianInput(8))
    n = 200_000
    counts = np.bincount(sample(model, GaussianInput(8), n, rng).z, minlength=k)
    for m in range(k):
        lo, hi = clopper_pearson(int(counts[m]), n, 1 - 0.01 / k)
        assert lo <= pi[m] <= hi


def test_expected_gates_mixture_and_degenerate_cases():
    rng = np.random.default_rng(1)
    W = rng.standard_normal((2, 6))
    inputs = GaussianMixtureInput(rng.standard_normal(6), 0.3)
    x = inputs.sample(400_000, rng)
    p = gate_probabilities(W, x)
    for m, value in enumerate(expected_gates(W, inputs)):
        lo, hi = normal_mean(p[m], 0.999)
        assert lo <= value <= hi
    assert np.allclose(expected_gates(np.zeros((2, 4)), GaussianInput(4)), 1 / 3)
    assert np.allclose(expected_gates(np.eye(4)[:1], GaussianInput(4)), 0.5)


def test_sample_follows_eq1():
    model = paper_model(3, sigma=0.0)
    s = sample(model, GaussianInput(10), 1000, np.random.default_rng(2))
    assert np.allclose(s.y, s.x[np.arange(1000), s.z])


def test_rereferenced_gating():
    W = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert np.allclose(rereferenced_gating(W, [0, 1, 2]), W)
    assert np.allclose(rereferenced_gating(W, [2, 1, 0]), [[-1.0, 0.0], [-1.0, 1.0]])
    x = np.random.default_rng(0).standard_normal((5, 2))
    perm = [1, 2, 0]
    assert np.allclose(gate_probabilities(rereferenced_gating(W, perm), x), gate_probabilities(W, x)[perm])


def test_gate_fisher_matches_monte_carlo():
    rng = np.random.default_rng(3)
    W = rng.standard_normal((2, 5)) * 0.7
    x = rng.standard_normal((400_000, 5))
    p = gate_probabilities(W, x)[:-1]
    mc = np.zeros((2, 5, 2, 5))
    for j in range(2):
        for m in range(2):
            mc[j, :, m, :] = (x.T * (p[j] * ((j == m) - p[m]))) @ x / x.shape[0]
    assert np.abs(gate_fisher_information(W) - mc.reshape(10, 10)).max() < 3e-3
    assert np.allclose(gate_fisher_information(np.zeros((1, 3))), 0.25 * np.eye(3))


def test_gru_binary_counterexample_of_eq4():
    """Mixed binary reset gate with a dense W_h: the GRU and eq. (4) differ (D6 finding)."""
    m = 2
    params = GRUParams(
        U_z=np.ones((m, 1)),
        W_z=np.zeros((m, m)),
        U_r=np.array([[-1.0], [1.0]]),
        W_r=np.zeros((m, m)),
        U_h=np.zeros((m, 1)),
        W_h=np.ones((m, m)),
    )
    x, h = np.array([1.0]), np.array([1.0, 1.0])
    assert not np.allclose(gru_step(params, x, h), hierarchical_moe_step(params, x, h))


@pytest.mark.parametrize("restrict", ["scalar", "diagonal", "constant-reset"])
def test_gru_restricted_cases_exact(restrict):
    @given(gru_cases(restrict))
    def run(case):
        params, x, h = case
        assert np.array_equal(gru_step(params, x, h, "binary"), hierarchical_moe_step(params, x, h, "binary"))

    run()


def test_gru_rejects_unknown_gate():
    one = np.ones((1, 1))
    with pytest.raises(ValueError, match="gate"):
        gru_step(GRUParams(one, one, one, one, one, one), np.ones(1), np.ones(1), "relu")
