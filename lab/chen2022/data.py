"""The data distribution D of Chen et al. 2022, Definition 3.1, with the settings 1–4 of App. A.2."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FEATURE, CENTER, FEATURE_NOISE = 0, 1, 2  # patch roles; the other P - 3 patches are noise


@dataclass(frozen=True)
class UniformRange:
    """D_α, D_β or D_γ as Uniform(low, high) with positive support (Def. 3.1: 0 < C1 ≤ · ≤ C2)."""

    low: float
    high: float

    def __post_init__(self) -> None:
        if not (np.isfinite(self.low) and np.isfinite(self.high)):
            raise ValueError(f"uniform range must be finite, got ({self.low}, {self.high})")
        if not 0.0 < self.low < self.high:
            raise ValueError(f"uniform range needs 0 < low < high, got low={self.low}, high={self.high}")

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.uniform(self.low, self.high, size=n)


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
            if not isinstance(value, int | np.integer) or value < least:
                raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
        if not isinstance(self.d, int | np.integer) or self.d < 2 * self.K:
            raise ValueError(f"d must be an integer >= 2K = {2 * self.K}, got {self.d!r}")
        for name in ("alpha", "beta", "gamma"):
            if not isinstance(getattr(self, name), UniformRange):
                raise TypeError(f"{name} must be a UniformRange, got {type(getattr(self, name))}")
        if not (np.isfinite(self.sigma_p) and self.sigma_p > 0):
            raise ValueError(f"sigma_p must be a positive finite number, got {self.sigma_p}")
        if self.signals not in ("orthonormal", "one-hot"):
            raise ValueError(f"signals must be 'orthonormal' or 'one-hot', got {self.signals!r}")


SETTINGS = {
    1: DataConfig(gamma=UniformRange(0.5, 3.0), sigma_p=1.0),
    2: DataConfig(gamma=UniformRange(0.5, 3.0), sigma_p=2.0),
    3: DataConfig(gamma=UniformRange(0.5, 2.0), sigma_p=1.0),
    4: DataConfig(gamma=UniformRange(0.5, 2.0), sigma_p=2.0),
}


def setting(number: int) -> DataConfig:
    """Preset for setting 1–4 of App. A.2 (K = 4, P = 4, d = 50)."""
    if number not in SETTINGS:
        raise ValueError(f"setting must be one of 1, 2, 3, 4, got {number!r}")
    return SETTINGS[number]


@dataclass(frozen=True)
class Signals:
    """Feature signals v_k (rows of V) and cluster centres c_k (rows of C), 2K orthonormal vectors."""

    V: np.ndarray
    C: np.ndarray


def make_signals(config: DataConfig, rng: np.random.Generator) -> Signals:
    """2K orthonormal signals: a random orthonormal frame (QR of a Gaussian matrix) or one-hot."""
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
    """Draw n iid pairs (x, y) from D of Def. 3.1."""
    if not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
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
    """The structure of samples drawn by `sample` from their latents (Def. 3.1); draws nothing."""
    n, P, _ = data.x.shape
    K = signals.V.shape[0]
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
