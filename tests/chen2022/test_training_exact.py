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


def test_the_evaluation_noise_seed_is_a_kernel_seed_and_differs_from_the_training_seeds():
    """In [0, 2⁶³) like `step_seeds` (a non-negative int64, top bit shifted out), fixed per run seed."""
    seeds = [T.evaluation_noise_seed(s) for s in range(200)]
    assert all(0 <= s < 2**63 for s in seeds) and len(set(seeds)) == 200
    assert seeds == [T.evaluation_noise_seed(s) for s in range(200)]
    assert max(seeds) > 2**61  # the whole range is used, not a narrow band
    assert not set(seeds) & {int(x) for s in range(5) for x in T.step_seeds(s, 50)}


def test_the_history_counts_dispatch_over_the_experts_even_when_m_exceeds_d():
    """M = 12 experts on d = 8: the dispatch table is (K, M), so the recorded entropy is the run's."""
    config = data.DataConfig(K=2, P=4, d=8)
    rng = np.random.default_rng(4)
    signals = data.make_signals(config, rng)
    train_set = data.sample(config, signals, 40, rng)
    cfg = T.variant_config("paper", M=12, J=2, steps=3, record_every=1)
    result = T.train(train_set, signals, cfg, seed=1)
    assert len(result.history["dispatch_entropy"]) == 3
    assert all(0.0 <= e <= np.log(2) + 1e-12 for e in result.history["dispatch_entropy"])
