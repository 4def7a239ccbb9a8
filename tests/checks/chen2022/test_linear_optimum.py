"""B2: the best linear CNN found (bias-free and with b), its exact accuracy against samples, its controls."""

import pytest

from checks.chen2022.linear_optimum import CLASSES, CONTROL_LAWS, LAWS, check_linear_cnn_optimum


@pytest.fixture(scope="module")
def records():
    return {r.key: r for r in check_linear_cnn_optimum(0, "quick")}


@pytest.mark.parametrize("law", sorted(LAWS))
@pytest.mark.parametrize("prefix", sorted(CLASSES))
def test_the_exact_accuracy_at_the_optimum_found_lies_in_the_sampled_interval(records, prefix, law):
    """Premise: the quadrature accuracy of the optimum found lies in the Clopper–Pearson interval of its
    predictions on data drawn by `sample`, whose basis the record stores."""
    premise, found = records[f"{prefix}-exact-vs-sampled-{law}"], records[f"{prefix}-optimum-{law}"]
    assert premise.kind == "premise" and premise.outcome == "pass"
    assert premise.bound == found.measured < 0.875
    assert premise.extra["interval"]["n"] == premise.params["n"]
    quadrature = found.extra["quadrature"]
    assert quadrature["double_nodes_accuracy"] == pytest.approx(quadrature["accuracy"], abs=1e-9)


@pytest.mark.parametrize("law", CONTROL_LAWS)
@pytest.mark.parametrize("prefix", sorted(CLASSES))
def test_the_formula_without_the_noise_along_the_signals_is_detected(records, prefix, law):
    """Control: the accuracy with the noise patches projected off the signals' span is refuted."""
    control = records[f"control-{prefix}-projected-noise-{law}"]
    assert control.kind == "negative-control" and control.outcome == "detected"
    assert control.bound == records[f"{prefix}-optimum-{law}"].extra["projected_noise_accuracy"]


@pytest.mark.parametrize("law", sorted(LAWS))
def test_the_bias_class_does_at_least_as_well(records, law):
    free, biased = records[f"linear-cnn-optimum-{law}"], records[f"linear-cnn-bias-optimum-{law}"]
    assert free.extra["bias"] == 0.0
    assert biased.measured >= free.measured - 1e-12
