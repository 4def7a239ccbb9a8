"""SW1 both ways: the identity under balanced dispatch, its loss of balance detected, the plugin found."""

import numpy as np
import pytest
from hypothesis import given
from switch_aux_loss.check import INSTANCES, ROUND_OFF, deviation, verify_balanced_dispatch
from switch_aux_loss.loss import balanced_logits, dispatch_fractions, router_probabilities

from lab.core import registry


@given(INSTANCES)
def test_balanced_logits_dispatch_every_expert_equally(instance):
    n_experts, per_expert, scale, seed = instance
    logits = balanced_logits(np.random.default_rng(seed), n_experts, per_expert, scale)
    assert np.array_equal(dispatch_fractions(router_probabilities(logits)), np.full(n_experts, 1 / n_experts))


@given(INSTANCES)
def test_premise_the_loss_is_one_under_balanced_dispatch(instance):
    assert deviation(instance, broken=False)["deviation"] <= ROUND_OFF


@given(INSTANCES)
def test_negative_control_crowded_dispatch_moves_the_loss(instance):
    assert deviation(instance, broken=True)["deviation"] > ROUND_OFF


def test_the_check_passes_and_detects_its_control():
    records = verify_balanced_dispatch(0, "quick")
    assert [r.outcome for r in records] == ["pass", "detected"] and records[1].measured > 1e-3


def test_the_lab_finds_the_check_through_the_entry_point():
    (check,) = registry.checks(["SW1"])
    assert check.name == "switch_aux_loss.balanced_dispatch" and registry.origin(check).package == (
        "moe-lab-switch-aux-loss"
    )


def test_bad_sizes_are_refused_naming_them():
    with pytest.raises(ValueError, match="n_experts >= 2"):
        balanced_logits(np.random.default_rng(0), 1, 1, 1.0)
    with pytest.raises(ValueError, match="logits must be"):
        router_probabilities(np.zeros(3))


def test_its_claim_renders_on_its_papers_page(tmp_path):
    import json

    from lab.cli.main import main

    results, sweeps, out = tmp_path / "results", tmp_path / "sweeps", tmp_path / "docs"
    results.mkdir()
    sweeps.mkdir()
    assert main(["verify", "--only", "SW1", "--quiet", "--json", str(results / "verify.json")]) == 0
    assert (
        main(["docs", "--plugins", "--results", str(results), "--sweeps", str(sweeps), "--out", str(out)])
        == 0
    )
    page = (out / "claims" / "fedus2022.md").read_text()
    assert (
        "# Claims: Fedus et al. 2022" in page and "## SW1: The auxiliary loss under balanced dispatch" in page
    )
    assert "Latest verdicts (1 pass, 1 detected):" in page
    assert "## Findings" in page and "### Balanced dispatch fixes the auxiliary loss at 1" in page
    assert json.loads((results / "verify.json").read_text())["records"][0]["key"] == "balanced"
