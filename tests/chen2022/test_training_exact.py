"""Algorithm 1's configuration (`lab.chen2022.training`) pinned exactly: the documented defaults."""

from lab.chen2022.training import TrainConfig


def test_the_defaults_are_the_stated_model_with_the_rates_of_app_a2():
    # The docstring's promise: η = 0.001, η_r = 0.1 (App. A.2), σ0 = 0.01, T = 1500, M = 8, J = 16,
    # cubic experts, normalized expert steps, softmax gate, logistic loss, no load balancing.
    config = TrainConfig()
    assert (config.M, config.J, config.activation) == (8, 16, "cubic")
    assert (config.eta, config.eta_r, config.sigma0, config.steps) == (0.001, 0.1, 0.01, 1500)
    assert (config.expert_update, config.gate, config.loss) == ("normalized", "softmax", "logistic")
    assert (config.load_balancing, config.lb_coef, config.early_stopping) == ("none", 0.0, False)
