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
    log10_d_for_second_stage,
    monitored_run,
    recursion_end,
    router_learning_end,
    router_learning_end_sharpened,
    summary,
    theorem_config,
)
from lab.chen2022.routing import Gaussian
from lab.core.errors import InputError
from lab.core.tasks import task_type


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


@pytest.mark.parametrize(
    ("eta", "M", "T2"), [(0.02, 8, 0), (0.02, 4, 1), (0.02, 2, 6), (1e-3, 2, 125), (1e-3, 4, 31)]
)
def test_the_sharpened_end_is_the_stated_one_over_two_kappa(eta, M, T2):
    """Under 2κ (κ = 1, Unif[0, 1]) E.14's exponent 2κ·η_r·T2 ≤ 1 with η_r = M²η: T2 = ⌊η⁻¹M⁻²/2⌋."""
    assert router_learning_end_sharpened(eta, M) == T2 == recursion_end(2.0, M * M * eta)
    assert T2 == router_learning_end(eta, M) // 2  # ⌊⌊x⌋/2⌋ = ⌊x/2⌋: the stated end halved


def test_the_sharpened_end_reads_the_noises_density_and_kappa_m2_supports_only_m_to_the_minus_4():
    # Gaussian noise N(0, s²) has κ = 1/(s√(2π)): a wider noise is smoother and lengthens the stage
    wide = Gaussian(scale=4.0)
    assert router_learning_end_sharpened(1e-3, 2, wide) == math.floor(1 / (2 * wide.kappa * 4e-3))
    assert router_learning_end_sharpened(1e-3, 2, wide) > router_learning_end_sharpened(1e-3, 2)
    # the paper's own constant κM² in the same step supports only T2 = ⌊η⁻¹M⁻⁴⌋
    assert recursion_end(4.0, 4 * 1e-3) == math.floor(1 / (16 * 1e-3)) == 62


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: recursion_end(0.0, 0.1), "routing_constant"),
        (lambda: recursion_end(2.0, -1.0), "eta_r"),
        (lambda: router_learning_end_sharpened(0.0, 4), "eta"),
        (lambda: router_learning_end_sharpened(0.02, 0), "M"),
        (lambda: ProofSchedule(50, 4, 0.02, 0.3, schedule="sharp"), "schedule"),
    ],
)
def test_the_sharpened_schedule_refuses_bad_input_by_name(call, name):
    with pytest.raises((InputError, TypeError, ValueError), match=name):
        call()


def test_under_the_sharpened_end_the_stage_needs_d_above_2_kappa_m2_to_the_6():
    """T1 < T2♯ iff σ0^0.5 < 1/(2M²): at σ0 = d^(−1/3), d > (2M²)⁶ (M = 2: 8⁶ = 262144); the floors
    decide at the threshold itself, so the check is a factor 2 either side, at a small η."""
    assert d_for_second_stage(2, 2.0) == 8.0**6 and d_for_second_stage(4, 2.0) == 32.0**6
    assert log10_d_for_second_stage(4, 2.0, power=200) == pytest.approx(200 * math.log10(32))
    for M in (2, 3):
        d = d_for_second_stage(M, 2.0)
        below = ProofSchedule(round(d / 2), M, 1e-5, (d / 2) ** (-1 / 3), schedule="sharpened")
        above = ProofSchedule(round(2 * d), M, 1e-5, (2 * d) ** (-1 / 3), schedule="sharpened")
        assert not below.second_stage_exists and above.second_stage_exists
        # the stated T2 is twice as long: its stage already exists below the sharpened threshold
        assert dataclasses.replace(below, schedule="stated").second_stage_exists


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
    assert result["T2"] == router_learning_end(0.02, 4)  # the default schedule is the paper's


@pytest.fixture(scope="module")
def sharpened_run():
    """The staged run's setting under T2 re-derived with 2κ: T1 = 1 < T2 = ⌊1/(2·16·0.01)⌋ = 3."""
    cfg = dataclasses.replace(theorem_config(16, M=4, J=4, eta=0.01, steps=12), sigma0=1e-4)
    return monitored_run(16, seed=3, n_per_d=20, cfg=cfg, schedule="sharpened")


def test_the_sharpened_schedule_changes_only_t2_and_the_window_e10_is_judged_on(staged_run, sharpened_run):
    assert (sharpened_run["schedule"].T1, sharpened_run["schedule"].T2) == (1, 3)
    assert sharpened_run["series"] == staged_run["series"]  # the run itself does not depend on T2
    chain = {v.lemma: v for v in chain_report(sharpened_run)}
    gates = sharpened_run["step_series"]["min_chosen_gate"]
    assert chain["E.2/E.9"].holds is True and chain["E.10"].measured == min(gates[2:4])


def test_under_the_sharpened_schedule_a_starved_gate_in_its_window_is_the_first_failure(sharpened_run):
    """Negative control: a gate below 1/(eM) at t = 3 ≤ T2♯ breaks E.10; the same gate at t = 5, inside the
    stated T2 = 6 but after T2♯, is outside the sharpened window and is not judged."""
    run = copy.deepcopy(sharpened_run)
    run["min_profession"] = 1
    run["step_series"]["min_chosen_gate"][3] = 1e-3
    assert first_failure(chain_report(run)) == "E.10"
    late = copy.deepcopy(sharpened_run)
    late["min_profession"] = 1
    late["step_series"]["min_chosen_gate"][5] = 1e-3
    assert {v.lemma: v.holds for v in chain_report(late)}["E.10"] is True
    late["schedule"] = dataclasses.replace(late["schedule"], schedule="stated")
    assert first_failure(chain_report(late)) == "E.10"


def test_the_sweep_task_takes_the_schedule_as_a_parameter():
    task = task_type("proof-chain")
    params = {"d": 16, "M": 4, "J": 4, "steps": 4, "n_per_d": 20, "seed": 1, "eta": 0.01}
    stated, sharpened = task.run(params), task.run({**params, "schedule": "sharpened"})
    assert (stated["T2"], sharpened["T2"]) == (6, 3)
    assert {k: v for k, v in stated.items() if k != "T2"} == {k: v for k, v in sharpened.items() if k != "T2"}
    with pytest.raises(InputError, match="schedule"):
        task.run({**params, "schedule": "tight"})


def _blas_libraries() -> list[tuple[str, int]]:
    """Each loaded BLAS library's file and the number of threads it is allowed now."""
    from threadpoolctl import threadpool_info

    return [
        (info["filepath"], info["num_threads"]) for info in threadpool_info() if info["user_api"] == "blas"
    ]


def _blas_threads() -> int:
    """The number of threads the loaded BLAS libraries are allowed now (1 where none is found)."""
    return min((threads for _, threads in _blas_libraries()), default=1)


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
        if _blas_threads() < 2:  # the libraries named, should this ever skip
            pytest.skip(
                "this BLAS runs one thread at most here, so no thread count can change a product: "
                f"{_blas_libraries()}"
            )
        pinned = monitored_run(50, seed=2, n_per_d=80, cfg=blas)["series"]
        unpinned = monitored_run.__wrapped__(50, seed=2, n_per_d=80, cfg=blas)["series"]
    with threadpool_limits(limits=1, user_api="blas"):
        one_thread = monitored_run.__wrapped__(50, seed=2, n_per_d=80, cfg=blas)["series"]
    assert pinned == one_thread
    assert unpinned != pinned
