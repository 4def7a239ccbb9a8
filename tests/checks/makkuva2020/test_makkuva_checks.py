"""Premise and negative-control tests of the D1–D6 checks (quick tier) and the makkuva-fig1 target."""

import json
from dataclasses import replace

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import checks.makkuva2020.claims as mk
from lab.cli.main import main
from lab.core import registry
from lab.makkuva2020 import fig1 as makkuva_fig1

EXPECTED = {
    "D1": ["pass", "pass", "detected", "detected", "detected"],
    "D2": ["pass", "pass", "detected", "detected", "finding"],
    "D3": ["pass", "finding", "detected"],
    "D4": ["pass", "finding", "detected"],
    "D5": ["pass", "pass", "detected"],
    "D6": ["finding", "pass", "pass", "detected"],
}


@pytest.fixture(scope="module")
def records():
    found = {}
    for check in registry.checks(list(EXPECTED)):
        if check.func.__module__ == mk.__name__:
            for record in check.run(0, "quick"):
                found.setdefault(record.claim, []).append(record)
    return found


@pytest.mark.parametrize("claim", sorted(EXPECTED))
def test_check_outcomes(records, claim):
    """Each premise passes (or is a known finding) and each negative control is detected."""
    assert [r.outcome for r in records[claim]] == EXPECTED[claim]
    assert all(r.ok for r in records[claim])
    for r in records[claim]:
        json.dumps(r.to_json(), allow_nan=False)


def test_assumptions_are_stated(records):
    for claim in ("D1", "D2", "D5"):
        assert all(r.params["delta"] == mk.REG.delta for r in records[claim] if "delta" in r.params)
    assert "verdict" in records["D3"][0].params and "verdict" in records["D4"][0].params


def test_d1_gap_record_detects_a_shifted_limit():
    """The D1 verdict logic: a gap whose CI excludes 0 is a violation, one that covers 0 holds."""
    rng = np.random.default_rng(0)
    noise = rng.standard_normal(20)
    assert mk._gap_record("premise", "s", {}, noise - noise.mean()).verdict == "holds"
    assert mk._gap_record("premise", "s", {}, noise + 5.0).verdict == "violated"
    assert mk._gap_record("premise", "s", {}, noise - noise.mean(), also=False).verdict == "violated"


def _run(e_reg, e_gate):
    zero = np.zeros(1)
    return makkuva_fig1.MethodRun(e_reg, e_gate, zero, zero, zero, zero)


def test_d4_logic_needs_our_recovery_and_a_stuck_baseline():
    good, stuck = _run(1e-3, 1e-3), _run(0.6, 0.9)
    run = lambda ours, base: makkuva_fig1.InitRun(ours, base, base, None, None, None, None)  # noqa: E731
    assert [r.verdict for r in mk._d4_records([run(good, stuck), run(good, good)], {})] == ["holds"] * 2
    assert [r.verdict for r in mk._d4_records([run(good, good)], {})] == ["violated"] * 2
    assert [r.verdict for r in mk._d4_records([run(stuck, stuck)], {})] == ["violated"] * 2


@pytest.mark.parametrize("seed", [1, 2])
def test_d4_control_detects_a_wrong_signed_expert_in_l_log(seed):
    """One quick-tier init: L_log fed Â with row 1 negated misses W* (E_gating > EPS_REC), E_reg unchanged."""
    config = makkuva_fig1.TIER_CONFIGS["quick"]
    runs = makkuva_fig1.run_fig1(config, [seed])
    with threadpool_limits(limits=1, user_api="blas"):
        control = mk._d4_control(runs, config, {}, np.random.default_rng(seed))
    assert mk._fig1_holds([replace(runs[0], l2=_run(0.6, 0.9))], "l2")
    assert control.kind == "negative-control" and control.verdict == "violated" and control.ok
    assert control.extra["e_gating_mutated"][0] > 2 * mk.EPS_REC
    assert control.extra["e_reg_mutated (sign-blind, = ours)"][0] == pytest.approx(runs[0].ours.e_reg)


@pytest.mark.parametrize("seed", [1, 2])
def test_d5_control_detects_a_far_from_gaussian_input(seed):
    control = mk.check_d5(seed, "quick")[-1]
    assert control.kind == "negative-control" and control.verdict == "violated" and control.ok
    assert control.measured > 4 * mk.EPS_REC


def test_d6_search_finds_the_counterexample_and_bernoulli_identity():
    gap, case = mk._search(mk.gru_cases(), lambda c: mk._gap(c, "binary"), 30, 1)
    assert gap > 0 and case[2].size >= 2
    assert mk._search(mk.gru_cases("diagonal"), lambda c: mk._gap(c, "binary"), 30, 1)[0] == 0.0
    assert mk._search(mk.gru_cases(max_dim=2), mk.bernoulli_gap, 20, 1)[0] < 1e-12


def test_fig1_replication_writes_table_png_and_json(tmp_path, monkeypatch):
    tiny = replace(
        makkuva_fig1.TIER_CONFIGS["quick"],
        sgd_steps=40,
        em_n=2000,
        em_iters=3,
        log_T=5,
        log_per_step=200,
        sign_n=2000,
        record_every=20,
    )
    monkeypatch.setitem(makkuva_fig1.TIER_CONFIGS, "quick", tiny)
    out, js = tmp_path / "out", tmp_path / "fig1.json"
    args = [
        "replicate",
        "makkuva-fig1",
        "--tier",
        "quick",
        "--seeds",
        "2",
        "--out",
        str(out),
        "--json",
        str(js),
    ]
    assert main([*args, "--quiet"]) == 0
    table = (out / "makkuva_fig1.md").read_text()
    assert "Paper's claim" in table and "Lab's reading" in table and "| mean |" in table
    assert (out / "makkuva_fig1.png").read_bytes()[:4] == b"\x89PNG"
    payload = json.loads(js.read_text())
    assert payload["target"] == "makkuva-fig1" and len(payload["runs"]) == 2
    assert main(["replicate", "makkuva-fig1", "--seeds", "1", "--out", str(out), "--quiet"]) == 2
