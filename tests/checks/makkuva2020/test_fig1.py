"""D3 (Theorems 3–4) and D4 (Fig. 1) from one pipeline and their verdict logic."""

from dataclasses import replace

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from checks.makkuva2020 import fig1
from checks.makkuva2020.assumptions import EPS_REC
from lab.makkuva2020 import fig1_experiment


@pytest.mark.parametrize("claim", ["D3", "D4"])
def test_check_outcomes(makkuva_records, claim):
    """Each premise passes (or is a known finding), the control is detected, the verdict logic is stated."""
    records = makkuva_records(claim)
    assert [r.outcome for r in records] == ["pass", "finding", "detected"] and all(r.ok for r in records)
    assert "verdict" in records[0].params
    for r in records:  # every interval says how it was made
        assert (r.ci is None) == ("interval" not in r.extra), r.key


def _run(e_reg, e_gate):
    zero = np.zeros(1)
    return fig1_experiment.MethodRun(e_reg, e_gate, zero, zero, zero, zero)


def test_d4_logic_needs_an_init_where_ours_recovers_and_the_baseline_is_stuck():
    """The witness rule: the rate of (ours recovers, baseline stuck) inits must have a CI above 0."""
    good, stuck = _run(1e-3, 1e-3), _run(0.6, 0.9)
    slow = _run(0.052, 1e-3)  # an L4 run just short of recovery (quick tier, seed 4)
    run = lambda ours, base: fig1_experiment.InitRun(ours, base, base, None, None, None, None)  # noqa: E731
    records = fig1._d4_records([run(good, stuck), run(good, good)], {})
    assert [r.verdict for r in records] == ["holds"] * 2
    assert records[0].measured == 0.5 and records[0].ci[0] > 0.0 and records[0].params["stated_rate"] == "> 0"

    def verdicts(*runs):
        return [r.verdict for r in fig1._d4_records(list(runs), {})]

    assert verdicts(run(slow, stuck), run(good, stuck)) == ["holds"] * 2  # one slow L4 run is allowed
    assert verdicts(run(good, good)) == ["violated"] * 2
    assert verdicts(run(stuck, stuck), run(slow, stuck)) == ["violated"] * 2


@pytest.mark.parametrize("seed", [1, 2])
def test_d4_control_detects_a_wrong_signed_expert_in_l_log(seed):
    """One quick-tier init: L_log fed Â with row 1 negated misses W* (E_gating > EPS_REC), E_reg unchanged."""
    config = fig1_experiment.TIER_CONFIGS["quick"]
    runs = fig1_experiment.run_fig1(config, [seed])
    with threadpool_limits(limits=1, user_api="blas"):
        control = fig1._d4_control(runs, config, {}, np.random.default_rng(seed))
    assert fig1._fig1_holds([replace(runs[0], l2=_run(0.6, 0.9))], "l2")
    assert control.kind == "negative-control" and control.verdict == "violated" and control.ok
    assert control.extra["e_gating_mutated"][0] > 2 * EPS_REC and control.measured == 0.0
    assert control.extra["e_reg_mutated"][0] == pytest.approx(runs[0].ours.e_reg)
