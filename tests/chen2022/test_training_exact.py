"""Algorithm 1's configuration (`lab.chen2022.training`) pinned exactly: the documented defaults."""

import numpy as np

from lab.chen2022 import data
from lab.chen2022 import training as T
from lab.chen2022.training import TrainConfig


def test_the_defaults_are_the_stated_model_with_the_rates_of_app_a2():
    # The docstring's promise: η = 0.001, η_r = 0.1 (App. A.2), σ0 = 0.01, T = 1500, M = 8, J = 16,
    # cubic experts, normalized expert steps, softmax gate, logistic loss, no load balancing.
    config = TrainConfig()
    assert (config.M, config.J, config.activation) == (8, 16, "cubic")
    assert (config.eta, config.eta_r, config.sigma0, config.steps) == (0.001, 0.1, 0.01, 1500)
    assert (config.expert_update, config.gate, config.loss) == ("normalized", "softmax", "logistic")
    assert (config.load_balancing, config.lb_coef, config.early_stopping) == ("none", 0.0, False)


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return all(_same(x, y) for x, y in zip(vars(a).values(), vars(b).values(), strict=True))


def test_prepare_compares_the_activation_by_value():
    # A name read from a file or built at run time equals "linear" without being the same object.
    config = data.DataConfig(K=2, P=6, d=8)  # three noise patches, which linear experts collapse
    rng = np.random.default_rng(2)
    signals = data.make_signals(config, rng)
    batch = data.sample(config, signals, 16, rng)
    name = "".join(["lin", "ear"])
    for structured in (False, True):
        literal = T.prepare(batch, T.TrainConfig(activation="linear", structured=structured), signals)
        built = T.prepare(batch, T.TrainConfig(activation=name, structured=structured), signals)
        assert _same(literal.xk, built.xk)
