"""B2: the best bias-free linear CNN on setting 3, its exact accuracy against samples, and its controls."""

import numpy as np
import pytest

from checks.chen2022.linear_optimum import LAWS, linear_accuracy, sampled_accuracy
from lab.core.stats import clopper_pearson


@pytest.mark.parametrize("law", sorted(LAWS))
def test_the_quadrature_accuracy_agrees_with_fresh_samples(law):
    """Premise: P(y⟨u, s⟩ > 0) by quadrature lies in the 99.9 % interval of 40,000 sampled predictions."""
    rng = np.random.default_rng(3)
    coords = rng.normal(size=8)
    correct = sampled_accuracy(coords, LAWS[law], 40_000, rng)
    low, high = clopper_pearson(correct, 40_000, 0.999)
    assert low <= linear_accuracy(coords, LAWS[law]) <= high


def test_a_centre_only_classifier_is_at_chance_and_no_linear_cnn_beats_theorem_4_1():
    """Control: u on the centres alone sees no label (accuracy 1/2 exactly); equal feature weights stay
    under 87.5 %, as Theorem 4.1 demands of every patch-additive F when α and γ share one law."""
    config = LAWS["setting-3"]
    assert linear_accuracy(np.concatenate([np.zeros(4), np.ones(4)]), config) == pytest.approx(0.5, abs=1e-12)
    assert 0.5 < linear_accuracy(np.concatenate([np.ones(4), np.zeros(4)]), config) < 0.875
