"""The data distribution D of Chen et al. 2022, Definition 3.1, with the settings 1–4 of App. A.2.

Configurations, signals and the sampler check their arguments (`lab.core.validate`): counts are
integers, strengths and σ_p finite and positive, signals finite orthonormal-shaped arrays
matching the config, rng a NumPy Generator; the error names the argument and what is allowed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np

from lab.core import validate
from lab.core.errors import InputError

FEATURE, CENTER, FEATURE_NOISE = 0, 1, 2  # patch roles; the other P - 3 patches are noise

__all__ = [
    "CENTER",
    "FEATURE",
    "FEATURE_NOISE",
    "SETTINGS",
    "SIGNAL_ROLES",
    "DataConfig",
    "Dataset",
    "Signals",
    "StructuredBatch",
    "UniformRange",
    "make_signals",
    "sample",
    "setting",
    "structure",
]


@dataclass(frozen=True)
class UniformRange:
    """D_α, D_β or D_γ as Uniform(low, high) with positive support (Def. 3.1: 0 < C1 ≤ · ≤ C2)."""

    low: float
    high: float

    def __post_init__(self) -> None:
        for name in ("low", "high"):
            value = getattr(self, name)
            if isinstance(value, bool | np.bool_) or not isinstance(value, Real | np.integer | np.floating):
                raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
            if not math.isfinite(value):
                raise InputError(f"{name} must be finite, got uniform range ({self.low}, {self.high})")
        if not 0.0 < self.low < self.high:
            raise InputError(f"low must satisfy 0 < low < high, got low={self.low}, high={self.high}")

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        validate.generator(rng)
        return rng.uniform(self.low, self.high, size=validate.integer(n, "n", low=0))


@dataclass(frozen=True)
class DataConfig:
    """Parameters of Def. 3.1: K clusters, P patches of dimension d, D_α, D_β, D_γ, σ_p, signals."""

    K: int = 4
    P: int = 4
    d: int = 50
    alpha: UniformRange = UniformRange(0.5, 2.0)
    beta: UniformRange = UniformRange(1.0, 2.0)
    gamma: UniformRange = UniformRange(0.5, 3.0)
    sigma_p: float = 1.0
    signals: str = "orthonormal"
    shuffle: bool = True

    def __post_init__(self) -> None:
        for name, value, least in (("K", self.K, 2), ("P", self.P, 3)):
            validate.integer(value, name, low=least)
        if validate.integer(self.d, "d") < 2 * self.K:
            raise InputError(f"d must be an integer >= 2K = {2 * self.K}, got {self.d!r}")
        for name in ("alpha", "beta", "gamma"):
            validate.instance(getattr(self, name), name, UniformRange)
        validate.real(self.sigma_p, "sigma_p", low=0.0, low_open=True)
        validate.choice(self.signals, "signals", ("orthonormal", "one-hot"))
        validate.flag(self.shuffle, "shuffle")


SETTINGS = {
    1: DataConfig(gamma=UniformRange(0.5, 3.0), sigma_p=1.0),
    2: DataConfig(gamma=UniformRange(0.5, 3.0), sigma_p=2.0),
    3: DataConfig(gamma=UniformRange(0.5, 2.0), sigma_p=1.0),
    4: DataConfig(gamma=UniformRange(0.5, 2.0), sigma_p=2.0),
}


def setting(number: int) -> DataConfig:
    """Preset for setting 1–4 of App. A.2 (K = 4, P = 4, d = 50)."""
    if isinstance(number, bool | np.bool_) or not isinstance(number, int | np.integer):
        raise TypeError(
            f"number must be a setting, one of 1, 2, 3, 4, got {type(number).__name__} {number!r}"
        )
    if number not in SETTINGS:
        raise InputError(f"number must be a setting, one of 1, 2, 3, 4, got {number!r}")
    return SETTINGS[int(number)]


@dataclass(frozen=True)
class Signals:
    """Feature signals v_k (rows of V) and cluster centres c_k (rows of C), 2K orthonormal vectors.

    V and C are real finite arrays of one shape (K, d), K, d >= 1 (checked, never copied)."""

    V: np.ndarray
    C: np.ndarray

    def __post_init__(self) -> None:
        V = validate.array(self.V, "V", ndim=2, labels="(K, d)", nonempty=(0, 1), cast=False)
        C = validate.array(self.C, "C", ndim=2, labels="(K, d)", cast=False)
        validate.same_shape("C", C, V.shape, "(K, d) of V")


def make_signals(config: DataConfig, rng: np.random.Generator) -> Signals:
    """2K orthonormal signals: a random orthonormal frame (QR of a Gaussian matrix) or one-hot."""
    validate.instance(config, "config", DataConfig)
    validate.generator(rng)
    K, d = config.K, config.d
    if config.signals == "one-hot":
        basis = np.eye(d)[: 2 * K]
    else:
        q, r = np.linalg.qr(rng.standard_normal((d, 2 * K)))
        basis = (q * np.sign(np.diag(r))).T
    return Signals(V=basis[:K].copy(), C=basis[K:].copy())


@dataclass(frozen=True)
class Dataset:
    """Samples of D: x (n, P, d), labels and every latent of Def. 3.1, plus each role's patch."""

    x: np.ndarray
    y: np.ndarray
    cluster: np.ndarray
    noise_cluster: np.ndarray
    eps: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    gamma: np.ndarray
    positions: np.ndarray  # (n, 3): patch index of the feature, centre and feature-noise patch

    @property
    def n(self) -> int:
        return self.y.shape[0]


def sample(config: DataConfig, signals: Signals, n: int, rng: np.random.Generator) -> Dataset:
    """Draw n iid pairs (x, y) from D of Def. 3.1.

    config a `DataConfig`, signals a `Signals` with finite V, C of shape (K, d) from the config,
    n an integer >= 1, rng a NumPy Generator."""
    validate.instance(config, "config", DataConfig)
    _signals(signals, config)
    n = validate.integer(n, "n", low=1)
    validate.generator(rng)
    K, P, d = config.K, config.P, config.d
    k = rng.integers(0, K, size=n)
    k_noise = (k + rng.integers(1, K, size=n)) % K  # uniform over the K - 1 others
    y = rng.choice(np.array([-1, 1]), size=n)
    eps = rng.choice(np.array([-1, 1]), size=n)
    alpha, beta, gamma = (dist.sample(rng, n) for dist in (config.alpha, config.beta, config.gamma))
    x = np.empty((n, P, d))
    x[:, FEATURE] = (y * alpha)[:, None] * signals.V[k]
    x[:, CENTER] = beta[:, None] * signals.C[k]
    x[:, FEATURE_NOISE] = (eps * gamma)[:, None] * signals.V[k_noise]
    x[:, 3:] = rng.normal(0.0, config.sigma_p / np.sqrt(d), size=(n, P - 3, d))
    order = np.tile(np.arange(P), (n, 1))
    if config.shuffle:
        order = rng.permuted(order, axis=1)
    x = x[np.arange(n)[:, None], order]
    positions = np.argsort(order, axis=1)[:, :3]  # where each role landed
    return Dataset(x, y, k, k_noise, eps, alpha, beta, gamma, positions)


def _signals(signals: object, config: DataConfig | None = None) -> Signals:
    """A `Signals` whose V and C are still finite (arrays can change after construction) and, with a
    config, of its shape (K, d)."""
    validate.instance(signals, "signals", Signals)
    for name in ("V", "C"):
        a = validate.array(getattr(signals, name), f"signals.{name}", ndim=2, labels="(K, d)", cast=False)
        if config is not None:
            validate.same_shape(f"signals.{name}", a, (config.K, config.d), "(K, d) of the config")
    return signals


SIGNAL_ROLES = (FEATURE, CENTER, FEATURE_NOISE)  # the S = 3 patches that are a scalar times a signal


@dataclass(frozen=True)
class StructuredBatch:
    """x of Def. 3.1 as structure: the patch at signal_position[i, t] is s_{i,t} signals[signal_index[i, t]].

    `signals` stacks the 2K orthonormal signals [v_1 … v_K; c_1 … c_K]; the S = 3 signal patches are,
    in this order, y α v_k (feature signal), β c_k (cluster centre) and ε γ v_k' (feature noise); the
    other P − 3 patches are the Gaussian noise patches, kept whole at `noise_position` (ascending).
    """

    signals: np.ndarray  # (2K, d)
    signal_index: np.ndarray  # (n, S) rows of `signals`
    signal_scale: np.ndarray  # (n, S)
    signal_position: np.ndarray  # (n, S) patch index of each signal patch
    noise: np.ndarray  # (n, P − S, d)
    noise_position: np.ndarray  # (n, P − S)

    @property
    def n(self) -> int:
        return self.signal_index.shape[0]

    @property
    def P(self) -> int:
        return self.signal_index.shape[1] + self.noise.shape[1]

    def dense(self) -> np.ndarray:
        """x (n, P, d) rebuilt from the structure, bit for bit the x of `sample` (same products s · u)."""
        rows = np.arange(self.n)[:, None]
        x = np.empty((self.n, self.P, self.signals.shape[1]))
        x[rows, self.signal_position] = self.signal_scale[:, :, None] * self.signals[self.signal_index]
        x[rows, self.noise_position] = self.noise
        return x


def structure(data: Dataset, signals: Signals) -> StructuredBatch:
    """The structure of samples drawn by `sample` from their latents (Def. 3.1); draws nothing.

    data a `Dataset` from `sample` and signals the `Signals` it was drawn with (shape (K, d) with
    the data's d, cluster labels in [0, K))."""
    validate.instance(data, "data", Dataset)
    _signals(signals)
    n, P, d = data.x.shape
    K = signals.V.shape[0]
    validate.same_shape("signals.V", signals.V, (K, d), f"(K, d) with d = {d} from data.x")
    for name in ("cluster", "noise_cluster"):
        validate.integers(getattr(data, name), f"data.{name}", ndim=1, low=0, high=K, bound=f"K={K}")
    index = np.stack([data.cluster, K + data.cluster, data.noise_cluster], axis=1)
    scale = np.stack([data.y * data.alpha, data.beta, data.eps * data.gamma], axis=1)
    is_noise = np.ones((n, P), dtype=bool)
    is_noise[np.arange(n)[:, None], data.positions] = False
    noise_position = np.nonzero(is_noise)[1].reshape(n, P - len(SIGNAL_ROLES))
    return StructuredBatch(
        signals=np.vstack([signals.V, signals.C]),
        signal_index=index,
        signal_scale=scale,
        signal_position=data.positions.copy(),
        noise=data.x[np.arange(n)[:, None], noise_position],
        noise_position=noise_position,
    )
