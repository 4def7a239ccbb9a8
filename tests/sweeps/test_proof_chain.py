"""The proof-chain sweep's analysis under T2 re-derived with the routing constant 2κ."""

import math

import pytest

from lab.sweeps.proof_chain import PROOF_CHAIN_FITTED, proof_chain_analysis, sharpened_schedule


def _runs(schedule: str | None) -> list[dict]:
    """Six runs at two values of d, M = 4, η = 0.02, every fitted quantity positive."""
    runs = []
    for d in (50, 100):
        for seed in range(3):
            run = {"d": d, "M": 4, "eta": 0.02, "seed": seed, "T1": 26, "T2": 1, "routed_share_end": 0.5}
            run |= {key: d**-0.5 * (1 + seed / 10) for key in PROOF_CHAIN_FITTED}
            runs.append(run | ({} if schedule is None else {"schedule": schedule}))
    return runs


def test_the_sharpened_schedule_states_the_three_t2_and_their_thresholds_on_d():
    s = sharpened_schedule(_runs("sharpened"))
    assert s["factor"] == 2.0  # 2κ for Unif[0, 1]
    assert (s["T2_stated"], s["T2_sharpened"], s["T2_paper_constant"]) == (3, 1, 0)
    assert [row[0] for row in s["thresholds"]] == [2, 4, 4]
    m2 = s["thresholds"][0]  # M = 2: stated M¹², sharpened (2M²)⁶, κM² gives M²⁴
    assert m2[1:4] == [2.0**12, 8.0**6, 2.0**24]
    assert m2[4:] == pytest.approx([200 * math.log10(4), 200 * math.log10(8), 200 * math.log10(16)])
    example = s["example"]  # twice the least M's sharpened threshold: the stage exists there
    assert example["d"] == 2 * 8**6 and example["T1"] < example["T2"]


def test_only_runs_under_the_sharpened_schedule_add_it_to_the_analysis():
    """The committed d study (no `schedule` parameter, the paper's T2) keeps its analysis unchanged."""
    assert "sharpened" not in proof_chain_analysis({}, _runs(None))
    assert "sharpened" not in proof_chain_analysis({}, _runs("stated"))
    assert proof_chain_analysis({}, _runs("sharpened"))["sharpened"] == sharpened_schedule(_runs("sharpened"))


def test_the_committed_sharpened_report_draws_a_quantity_that_is_0_in_some_run_unfitted():
    """Δ_Θ is 0 in a run whose professions have one expert each: its panel shows the runs, not a fit."""
    import json
    from pathlib import Path

    from lab.sweeps.proof_chain import proof_chain_figure

    path = Path(__file__).resolve().parents[2] / "results" / "sweeps" / "proof_chain_sharpened.json"
    report = json.loads(path.read_text())
    assert "profession_spread_end" not in report["analysis"]["fits"]
    assert "sharpened" in report["analysis"] and report["analysis"]["schedule"]["ordered"] == 0
    titles = [ax.get_title() for ax in proof_chain_figure(report).axes]
    assert [t for t in titles if "not fitted" in t] == [
        "E.16: Δ_Θ within professions at the end (after T2) (not fitted: 0 in some run)"
    ]
