"""Theorem 4.2's proof along a run: the stage schedule, the monitored quantities, and the chain's judge."""

import copy
import dataclasses
import json
import math

import numpy as np
import pytest

from lab.chen2022.proof_monitors import (
    ProofSchedule,
    chain_report,
    d_for_second_stage,
    exploration_end,
    first_failure,
    monitored_run,
    router_learning_end,
    summary,
    theorem_config,
)
from lab.sweeps.tasks import task_type


def test_the_schedule_is_the_papers_floors_and_the_second_stage_needs_d_above_m_to_the_12():
    sched = ProofSchedule(d=50, M=8, eta=0.02, sigma0=50 ** (-1 / 3))
    assert (sched.T1, sched.T2) == (math.floor(50 ** (-1 / 6) / 0.02), 0) == (26, 0)
    assert not sched.second_stage_exists and sched.stage(27) == "after T2"
    assert d_for_second_stage(8) == 8.0**12
    # σ0 = d^(−1/3) just past M¹² (M = 2: d > 4096): σ0^0.5 < M⁻² and the stage exists for a small η
    small = ProofSchedule(d=5000, M=2, eta=1e-3, sigma0=5000 ** (-1 / 3))
    assert small.T1 < small.T2 and small.stage(small.T1) == "exploration"
    assert small.stage(small.T1 + 1) == "router learning"
    assert not ProofSchedule(d=4000, M=2, eta=1e-3, sigma0=4000 ** (-1 / 3)).second_stage_exists


def test_the_stage_ends_are_the_one_formula_the_schedule_and_the_checks_use():
    assert exploration_end(0.2, 0.01) == 44 and router_learning_end(0.02, 2) == 12
    sched = ProofSchedule(d=8192, M=2, eta=0.02, sigma0=8192 ** (-1 / 3))
    assert (
        (sched.T1, sched.T2)
        == (exploration_end(sched.sigma0, 0.02), router_learning_end(0.02, 2))
        == (11, 12)
    )


@pytest.fixture(scope="module")
def staged_run():
    """A short run whose stages exist (M = 4, σ0 = 1e-4: T1 = 1 < T2 = 6) at d = 16, n = 320."""
    cfg = theorem_config(16, M=4, J=4, eta=0.01, steps=12)
    cfg = dataclasses.replace(cfg, sigma0=1e-4)
    return monitored_run(16, seed=3, n_per_d=20, cfg=cfg)


def test_every_quantity_is_recorded_at_every_step_and_finite(staged_run):
    series = staged_run["series"]
    assert staged_run["schedule"].T1 == 1 and staged_run["schedule"].T2 == 6
    for name, values in series.items():
        assert len(values) == 13, name
        finite = [v for v in values if v is not None]
        assert all(np.isfinite(finite)), name
    assert series["routing_deviation"][:2] != [None, None] and series["routing_deviation"][2] is None
    assert series["h_inf"][0] == 0.0 and series["routing_deviation"][0] == pytest.approx(0.0, abs=1e-15)
    assert max(series["router_sum"]) < 1e-12  # Lemma E.1 along the run
    for name, values in staged_run["step_series"].items():
        assert len(values) == 12 and np.isfinite(np.asarray(values, dtype=float)).all(), name


def test_the_chosen_gate_is_the_drawn_routes_and_the_gradients_are_the_steps(staged_run):
    """E.10 reads the gate of the route the noise drew (≥ 1/(eM) by C.4), not of argmax h (≥ 1/M)."""
    gates = np.array(staged_run["step_series"]["min_chosen_gate"])
    M = staged_run["config"].M
    assert (gates >= 1 / (np.e * M)).all() and (gates < 1 / M).any()
    norms = np.array(staged_run["step_series"]["expert_gradient_norm"])
    lead = np.abs(np.array(staged_run["step_series"]["profession_gradient"]))
    assert norms.shape == (12, M) and (lead <= norms * (1 + 1e-12)).all() and (norms > 0).all()


def test_the_chain_is_judged_in_the_proofs_order(staged_run):
    chain = chain_report(staged_run)
    assert [v.lemma for v in chain] == ["E.2/E.9", "D.4", "E.1", "E.4", "E.10", "E.18", "Thm 4.2"]
    verdicts = {v.lemma: v.holds for v in chain}
    assert verdicts["E.2/E.9"] is True and verdicts["E.1"] is True and verdicts["E.4"] is True
    assert verdicts["E.10"] is not None  # its stage, T1 < t ≤ T2, occurs in this run
    assert first_failure(chain) == next((v.lemma for v in chain if v.holds is False), None)


@pytest.mark.parametrize(
    ("series", "value", "lemma"),
    [("router_sum", 1e-3, "E.1"), ("routing_deviation", 0.5, "E.4"), ("min_chosen_gate", 1e-3, "E.10")],
)
def test_a_broken_premise_is_the_first_failure(staged_run, series, value, lemma):
    """Negative controls: a drifting router sum, a far-from-uniform router at t ≤ T1, a starved gate."""
    run = copy.deepcopy(staged_run)
    run["min_profession"] = 1  # D.4 holds, so the control is the step that breaks
    step = 1 if lemma != "E.10" else 3
    run["step_series" if lemma == "E.10" else "series"][series][step] = value
    assert first_failure(chain_report(run)) == lemma


def test_at_the_theorems_conditions_the_stages_are_out_of_order_and_that_is_the_first_failure():
    run = monitored_run(16, seed=0, n_per_d=20, cfg=theorem_config(16, M=8, J=4, eta=0.02, steps=30))
    assert run["schedule"].T2 == 0 < run["schedule"].T1
    chain = chain_report(run)
    assert first_failure(chain) == "E.2/E.9"
    assert {v.lemma: v.holds for v in chain}["E.10"] is None  # no step lies in (T1, T2]
    assert json.loads(json.dumps(summary(run)))["first_failure"] == "E.2/E.9"


def test_the_sweep_task_runs_one_small_monitored_run():
    task = task_type("proof-chain")
    result = task.run({"d": 16, "M": 4, "J": 4, "steps": 8, "n_per_d": 20, "seed": 1})
    assert result["d"] == 16 and result["n"] == 320 and result["steps"] == 8
    assert set(result["chain"]) == {"E.2/E.9", "D.4", "E.1", "E.4", "E.10", "E.18", "Thm 4.2"}


def _blas_threads() -> int:
    """The number of threads the loaded BLAS libraries are allowed now (1 where none is found)."""
    from threadpoolctl import threadpool_info

    return min((info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"), default=1)


def _router_logits_by_blas_threads(s, Theta):
    """s Θ summed over d in as many column blocks as BLAS has threads, block by block, with no BLAS call:
    a product whose rounding follows the thread count by construction, as a threaded GEMM's may."""
    h = np.zeros((s.shape[0], Theta.shape[1]), dtype=s.dtype)
    for block in np.array_split(np.arange(s.shape[1]), _blas_threads()):
        part = np.zeros_like(h)
        for j in block:  # one column at a time: elementwise IEEE operations in a fixed order
            part += s[:, j : j + 1] * Theta[j]
        h += part
    return h


def test_a_monitored_run_does_not_depend_on_the_blas_thread_count(monkeypatch):
    """The run holds BLAS to one thread, as train() does, on both backends. Control, by construction: a
    router product that splits its sum by the BLAS thread count changes the series when the limit is lifted
    (`__wrapped__`) under 2 threads, so the equality below would see a thread-dependent rounding."""
    from threadpoolctl import threadpool_limits

    from lab.kernels import backend

    cfg = theorem_config(50, M=4, J=4, eta=0.02, steps=10)  # n = 4000
    blas = dataclasses.replace(cfg, backend="numpy")
    runs = {}
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="blas"):
            runs[threads] = {
                c.backend: monitored_run(50, seed=2, n_per_d=80, cfg=c)["series"] for c in (cfg, blas)
            }
    assert runs[1] == runs[2]

    monkeypatch.setattr(backend("numpy"), "router_logits", _router_logits_by_blas_threads)
    with threadpool_limits(limits=2, user_api="blas"):
        if _blas_threads() < 2:
            pytest.skip("this BLAS runs one thread at most here, so no thread count can change a product")
        pinned = monitored_run(50, seed=2, n_per_d=80, cfg=blas)["series"]
        unpinned = monitored_run.__wrapped__(50, seed=2, n_per_d=80, cfg=blas)["series"]
    with threadpool_limits(limits=1, user_api="blas"):
        one_thread = monitored_run.__wrapped__(50, seed=2, n_per_d=80, cfg=blas)["series"]
    assert pinned == one_thread
    assert unpinned != pinned
