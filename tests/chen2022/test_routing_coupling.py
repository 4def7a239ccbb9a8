"""Tests of lab.chen2022.routing_coupling: Lemma C.1's proof terms q (argmax change) and U (union bound)."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from checks.strategies.routing import gate_pairs
from lab.chen2022.routing import Gaussian, Gumbel, Uniform, routing_probabilities
from lab.chen2022.routing_coupling import (
    argmax_change_probability,
    coupling_terms,
    half_lifted_pair,
    tie_change_rate,
    union_bound,
)
from lab.core.stats import clopper_pearson, hoeffding

FAMILIES = (Uniform(0.0, 1.0), Uniform(-2.0, 0.5), Gaussian(0.6), Gumbel(1.7))
ROUND_OFF = 1e-12  # exact p's error, summed over M <= 64 experts and both gate vectors
LEVEL = 0.999


def _draw(noise, n, M, rng):
    if isinstance(noise, Uniform):
        return rng.uniform(noise.low, noise.high, (n, M))
    if isinstance(noise, Gaussian):
        return rng.normal(0.0, noise.scale, (n, M))
    return rng.gumbel(0.0, noise.scale, (n, M))


@pytest.mark.parametrize("noise", FAMILIES, ids=lambda n: n.name)
@pytest.mark.parametrize("M", [2, 3, 5])
def test_exact_q_and_u_agree_with_monte_carlo_under_one_shared_noise(noise, M):
    rng = np.random.default_rng(M)
    h = rng.normal(0.0, 0.5 * noise.spread, M)
    h_hat = h + rng.normal(0.0, 0.3 * noise.spread, M)
    n = 200_000
    r = _draw(noise, n, M, rng)
    changed = int(np.sum(np.argmax(h + r, axis=1) != np.argmax(h_hat + r, axis=1)))
    low, high = clopper_pearson(changed, n, LEVEL)
    assert low <= argmax_change_probability(h, h_hat, noise) <= high
    m1, m2 = np.triu_indices(M, k=1)
    C = (h_hat[m2] - h_hat[m1] + h[m2] - h[m1]) / 2.0
    hits = np.abs(r[:, m1] - r[:, m2] - C) <= np.abs(h_hat - h).max()
    low, high = hoeffding(float(hits.sum(axis=1).mean()), n, 0.0, float(m1.size), LEVEL)
    assert low <= union_bound(h, h_hat, noise) <= high


@given(noise=st.sampled_from(FAMILIES), data=st.data())
def test_the_proof_chain_holds_on_every_pair(noise, data):
    """‖Δp‖∞ ≤ q ≤ U ≤ κM(M − 1)‖Δh‖∞ ≤ κM²‖Δh‖∞: each step of Lemma C.1's proof."""
    h, h_hat = data.draw(gate_pairs(scale=noise.spread))
    p = routing_probabilities(np.stack([h, h_hat]), noise)
    q, U = argmax_change_probability(h, h_hat, noise), union_bound(h, h_hat, noise)
    step, M = np.abs(h_hat - h).max(), h.size
    assert np.abs(p[0] - p[1]).max() <= q + ROUND_OFF
    assert q <= U + ROUND_OFF
    assert U <= noise.kappa * M * (M - 1) * step * (1 + 1e-12) + ROUND_OFF


@given(noise=st.sampled_from(FAMILIES), data=st.data())
def test_at_two_experts_the_argmax_change_is_the_routing_change(noise, data):
    h, h_hat = data.draw(gate_pairs(M=2, scale=noise.spread))
    p = routing_probabilities(np.stack([h, h_hat]), noise)
    assert argmax_change_probability(h, h_hat, noise) == pytest.approx(abs(p[0, 0] - p[1, 0]), abs=ROUND_OFF)


@pytest.mark.parametrize("M", [2, 4, 7, 64])
@pytest.mark.parametrize("scale", [0.5, 2.0])
def test_gumbel_q_matches_its_closed_form_at_the_half_lifted_pair(M, scale):
    """q = ab(e^{2δ/β} − 1) / (M(b + a e^{2δ/β})): p = softmax, a lifted, b lowered experts."""
    delta, a = 0.01 * scale, M // 2
    b, grow = M - a, math.exp(2 * 0.01)
    expected = a * b * (grow - 1) / (M * (b + a * grow))
    h, h_hat = half_lifted_pair(M, delta)
    assert argmax_change_probability(h, h_hat, Gumbel(scale)) == pytest.approx(expected, rel=1e-12)


def test_uniform_q_at_two_experts_is_the_triangle_area():
    h, h_hat = half_lifted_pair(2, 0.1)
    assert argmax_change_probability(h, h_hat, Uniform(0.0, 1.0)) == pytest.approx(2 * 0.1 - 2 * 0.1**2)


@pytest.mark.parametrize("noise", FAMILIES, ids=lambda n: n.name)
@pytest.mark.parametrize("M", [2, 3, 8, 64])
def test_q_per_kappa_delta_tends_to_the_derived_tie_rate(noise, M):
    """q/(κδ) → 2ab∫f²F^{M−2}/κ as δ → 0, within O(Mδ/spread) of it (derivation in the module)."""
    delta = 1e-6 * noise.spread
    terms = coupling_terms(*half_lifted_pair(M, delta), noise)
    limit = tie_change_rate(noise, M, M // 2)
    assert terms.change == pytest.approx(limit, rel=4 * M * 1e-6 + 1e-6)


def test_tie_rate_closed_forms():
    """Uniform: 2ab/(M − 1); Gumbel: 2e·ab/M²; Gaussian at M = 2: ∫φ²/φ(0) = 1/√2, so 2·(1/√2) = √2."""
    for M in (2, 5, 64):
        a = M // 2
        assert tie_change_rate(Uniform(0.0, 3.0), M, a) == pytest.approx(2 * a * (M - a) / (M - 1))
        assert tie_change_rate(Gumbel(0.3), M, a) == pytest.approx(2 * math.e * a * (M - a) / M**2)
    assert tie_change_rate(Gaussian(2.0), 2, 1) == pytest.approx(math.sqrt(2.0), rel=1e-10)
    assert tie_change_rate(Uniform(), 8, 0) == 0.0


def test_the_m_dependence_is_in_q_for_uniform_noise_and_in_u_for_every_noise():
    """At the half-lifted pair: ‖Δp‖∞ ≤ 2κ, q grows like M/2 (uniform) or not at all (Gumbel), U like M²."""
    rows = {
        (noise.name, M): coupling_terms(*half_lifted_pair(M, 1e-4 * noise.spread), noise)
        for noise in (Uniform(), Gaussian(), Gumbel())
        for M in (2, 8, 64)
    }
    assert all(t.routing <= 2.0 for t in rows.values())
    assert rows["uniform", 64].change > 30.0 > 2.0 > rows["uniform", 2].change
    assert rows["gaussian", 2].change < 2.0 < rows["gaussian", 64].change
    assert rows["gumbel", 64].change == pytest.approx(rows["gumbel", 2].change, rel=1e-9)
    for name in ("uniform", "gaussian", "gumbel"):
        assert rows[name, 64].union / rows[name, 8].union == pytest.approx(64 * 63 / (8 * 7), rel=1e-3)
        assert rows[name, 64].union > 10 * rows[name, 64].change


def test_coupling_terms_fields():
    terms = coupling_terms(np.zeros(3), np.array([0.1, 0.0, -0.05]), Uniform(0.0, 2.0))
    assert (terms.noise, terms.M, terms.kappa, terms.step, terms.paper) == ("uniform", 3, 0.5, 0.1, 9)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: argmax_change_probability(np.zeros(3), np.zeros(2), Uniform()), "h_hat"),
        (lambda: argmax_change_probability(np.zeros((2, 3)), np.zeros(3), Uniform()), "h"),
        (lambda: union_bound(np.zeros(3), np.array([0.0, np.nan, 0.0]), Uniform()), "h_hat"),
        (lambda: union_bound(np.zeros(3), np.ones(3), "uniform"), "noise"),
        (lambda: coupling_terms(np.ones(3), np.ones(3), Gumbel()), "h_hat"),
        (lambda: half_lifted_pair(1, 0.1), "M"),
        (lambda: half_lifted_pair(4, 0.0), "delta"),
        (lambda: tie_change_rate(Gaussian(), 4, 5), "lifted"),
        (lambda: tie_change_rate(Gaussian(), 2.0, 1), "M"),
    ],
)
def test_invalid_input_names_the_argument(call, name):
    with pytest.raises((ValueError, TypeError), match=rf"^{name} "):
        call()
