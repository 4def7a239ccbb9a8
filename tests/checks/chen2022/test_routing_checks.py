"""Premise and negative-control tests of the routing checks B4, B5, B6, B10 and the `tightness` command."""

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from checks.chen2022 import routing_smoothness as rs
from checks.strategies.routing import MIN_STEP, gate_pairs, gate_vectors, tie_pairs
from lab.chen2022.routing import Gaussian, Gumbel, Uniform, routing_probabilities
from lab.cli.main import main

FAMILIES = st.sampled_from([Uniform(0.0, 1.0), Uniform(-2.0, 0.5), Gaussian(0.6), Gumbel(1.7)])


@st.composite
def noisy_pairs(draw):
    noise = draw(FAMILIES)
    return noise, draw(gate_pairs(scale=noise.spread))


# ---------------------------------------------------------------- strategies


@given(gate_pairs(scale=0.5))
def test_pairs_are_distinct_and_not_too_close(pair):
    h, h_hat = pair
    assert h.shape == h_hat.shape and 2 <= h.size <= 64
    assert np.abs(h - h_hat).max() >= 0.5 * MIN_STEP * (1 - 1e-9)
    assert np.all(np.isfinite(h)) and np.all(np.isfinite(h_hat))


@given(gate_vectors(M=st.integers(1, 64), kinds=("gapped",), scale=2.0))
def test_gapped_vectors_have_an_expert_exactly_one_width_below(h):
    assert h.max() == 0.0
    assert h.size < 2 or np.any(h == -2.0)


# ---------------------------------------------------------------- B4 / B5 premises and controls


@given(noisy_pairs())
def test_lemma_5_1_and_the_sharp_constant_hold(case):
    noise, (h, h_hat) = case
    router = rs.exact_router(noise)
    assert rs.pair_ratio(router, h, h_hat, noise.kappa * h.size**2) <= 1.0
    assert rs.pair_ratio(router, h, h_hat, 2.0 * noise.kappa) <= 1.0


@given(st.sampled_from(tie_pairs()))
def test_routing_without_noise_breaks_lemma_5_1(pair):
    h, h_hat = pair
    assert rs.pair_ratio(rs.plain_argmax, h, h_hat, h.size**2) > 1.0
    assert rs.pair_ratio(rs.exact_router(Uniform(0.0, 1e-6)), h, h_hat, h.size**2) > 1.0


@given(st.data())
def test_lemma_c3_holds_and_non_identical_noise_breaks_it(data):
    noise = data.draw(FAMILIES)
    h = data.draw(gate_vectors(scale=noise.spread))
    p = routing_probabilities(h, noise)
    assert rs.swap_ratio(p, h, noise.kappa * h.size**2) <= 1.0
    assert rs.swap_ratio(p, h, 2.0 * noise.kappa) <= 1.0
    tied = data.draw(gate_vectors(kinds=("ties",)))
    tied[:2] = tied.max()  # experts 0 and 1 tied for the top
    assert rs.swap_ratio(rs.mixed_uniform_router(0.5)(tied)[0], tied, 2.0 * tied.size**2) > 1.0
    assert rs.swap_ratio(rs.plain_argmax(tied)[0], tied, 2.0 * tied.size**2) > 1.0


# ---------------------------------------------------------------- B6


@given(st.data())
def test_lemma_c4_exact_zero_and_the_gaussian_control(data):
    low = data.draw(st.floats(-2.0, 2.0))
    noise = Uniform(low, low + data.draw(st.floats(0.1, 3.0)))
    h = data.draw(gate_vectors(kinds=("gapped",), scale=noise.width))  # the width as rounded in floats
    gapped = rs._gapped(h, noise.width)
    assert np.all(routing_probabilities(h, noise)[gapped] == 0.0)
    assert np.all(routing_probabilities(h, Gaussian(noise.width))[gapped] > 0.0)


# ---------------------------------------------------------------- B10


@given(st.integers(2, 16), st.floats(1e-6, 0.5), st.integers(0, 2**32 - 1))
def test_near_uniform_routing_for_small_gates(M, size, seed):
    h = np.random.default_rng(seed).uniform(-size, size, (5, M))
    paper, sharp, _ = rs.uniformity_ratios(rs.exact_router(rs.PAPER_NOISE), h[None], 1.0)
    assert paper <= 1.0 and sharp <= 1.0
    assert rs.uniformity_ratios(rs.plain_argmax, h[None], 1.0)[0] > 1.0 or size * M**2 >= 1 - 1 / M


def test_exploration_run_starts_at_zero_and_stays_small():
    history = rs.exploration_run(seed=1, steps=3, n=20)
    assert history.shape == (4, 20, 8)
    assert np.all(history[0] == 0.0) and np.abs(history[-1]).max() < 0.5


# ---------------------------------------------------------------- the registered entries and the command


@pytest.mark.parametrize(
    "entry",
    [rs.verify_lipschitz, rs.verify_swap, rs.verify_no_route_beyond_width, rs.verify_exploration],
    ids=lambda f: f.__name__,
)
def test_registered_entries_are_all_as_expected(entry):
    records = entry(0, "quick")
    assert records and all(r.ok for r in records), [(r.statement, r.outcome) for r in records]
    assert {r.kind for r in records} == {"premise", "negative-control"}


def test_search_is_deterministic_for_a_seed():
    def score(pair):
        return {"ratio": rs.pair_ratio(rs.exact_router(Gumbel(1.0)), *pair, 1.0)}

    first = rs.hypothesis_maximum(score, gate_pairs(M=3), 10, seed=5)
    second = rs.hypothesis_maximum(score, gate_pairs(M=3), 10, seed=5)
    assert first["ratio"][0] == second["ratio"][0]


def test_tightness_command_writes_rows_and_plot(tmp_path, capsys):
    out, png = tmp_path / "t.json", tmp_path / "t.png"
    argv = ["tightness", "lemma-5.1", "--M", "2,8", "--examples", "5", "--starts", "2", "--quiet"]
    assert main([*argv, "--json", str(out), "--plot", str(png)]) == 0
    assert "| uniform | 8 |" in capsys.readouterr().out
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 6
    for row in rows:
        assert {"noise", "M", "kappa", "bound", "best_constant"} <= row.keys()
        assert row["bound"] == pytest.approx(row["kappa"] * row["M"] ** 2)
        assert 0 < row["best_constant"] <= 2 * row["kappa"] * (1 + 1e-12)
        if row["exact_constant"] is not None:
            assert row["best_constant"] == pytest.approx(row["exact_constant"], rel=1e-9)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["tightness", "lemma-5.2"],
        ["tightness", "lemma-5.1", "--M", "0"],
        ["tightness", "lemma-5.1", "--noise", "cauchy"],
        ["tightness", "lemma-5.1", "--starts", "0"],
    ],
)
def test_tightness_command_rejects_bad_arguments(argv, capsys):
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err
