"""The proof-chain sweep's analysis under T2 re-derived with the routing constant 2κ."""

import math

import pytest

from lab.chen2022.proof_chain import PROOF_CHAIN_FITTED, proof_chain_analysis, sharpened_schedule


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

    from lab.chen2022.proof_chain import proof_chain_figure

    path = Path(__file__).resolve().parents[2] / "results" / "sweeps" / "proof_chain_sharpened.json"
    report = json.loads(path.read_text())
    assert "profession_spread_end" not in report["analysis"]["fits"]
    assert "sharpened" in report["analysis"] and report["analysis"]["schedule"]["ordered"] == 0
    titles = [ax.get_title() for ax in proof_chain_figure(report).axes]
    assert [t for t in titles if "not fitted" in t] == [
        "E.16: Δ_Θ within professions at the end (after T2) (not fitted: 0 in some run)"
    ]


def test_routing_is_counted_among_the_runs_whose_every_m_k_is_non_empty():
    """An empty M_k makes routing every Ω_k into M_k impossible (share 0): the analysis counts routing and
    averages the share also over the runs with every M_k non-empty, and says whether the share is monotone."""
    from lab.chen2022.proof_chain import routing_trend

    runs = _runs(None)
    for i, r in enumerate(runs):  # d = 50: one run with every M_k non-empty; d = 100: two, one routing
        r["chain.D.4"] = 1.0 if i in (0, 3, 4) else 0.0
        r["routing_follows_professions"] = 1.0 if i == 3 else 0.0
        r["professions_predict"] = 0.0
        r["routed_share_end"] = {0: 0.2, 3: 1.0, 4: 0.4}.get(i, 0.0)
    a = proof_chain_analysis({}, runs)
    assert a["counts"]["holds_nonempty"]["chain.D.4"] == a["counts"]["holds"]["chain.D.4"] == [1, 2]
    assert a["counts"]["holds_nonempty"]["routing_follows_professions"] == [0, 1]
    s = a["schedule"]
    assert (s["nonempty"], s["routed_nonempty"], s["predicted_nonempty"], s["K"]) == (3, 1, 0, 4)
    assert a["routing"]["share_nonempty"] == pytest.approx([0.2, 0.7])
    assert a["routing"]["share"] == pytest.approx([0.2 / 3, 1.4 / 3])
    assert a["routing"]["rises"] and a["routing"]["monotone"]
    three_d = [r | {"d": d} for r, d in zip(runs, (50, 100, 200, 50, 100, 200), strict=True)]
    assert routing_trend(three_d)["monotone"] is False  # means 0.6, 0.2, 0 over d


def test_the_chance_that_every_profession_is_non_empty_counts_surjections():
    from lab.chen2022.proof_chain import all_nonempty_probability

    assert all_nonempty_probability(4, 4) == pytest.approx(math.factorial(4) / 4**4)
    assert all_nonempty_probability(4, 8) == pytest.approx(1 - 0.3770751953125)  # B8's exact empty rate
    assert all_nonempty_probability(4, 2) == 0.0
