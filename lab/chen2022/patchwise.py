"""Patch-additive classifiers F(x) = Σ_p f(x⁽ᵖ⁾) and the orbit argument of Theorem 4.1 (App. B).

Chen et al. 2022, Theorem 4.1: if D_α = D_γ, every F(x) = Σ_p f(x⁽ᵖ⁾) errs with probability
≥ 1/8. The proof pairs each sample with ε = −y into an orbit of four equally likely points whose
margins sum to zero, so at least one of the four is misclassified.

The per-patch function families f live in `lab.chen2022.patch_functions`. Two derived results
live here too: the floor ω/8 when D_α and D_γ only partly overlap (`orbit_floor`) and an f that
attains it exactly (`attaining_witness`), with a ReLU CNN copying it (`relu_witness`), the linear
CNN `feature_sum` and a training-error search over aligned lookups (`search_aligned_lookup`).

Every public function checks its arguments once (`lab.core.validate`): x (n, P, d) real and finite,
data a `Dataset`, signals a `Signals` of the data's or config's shape, classifiers callable, counts
integers, levels in (0, 1); the error names the argument and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.chen2022.data import CENTER, FEATURE, FEATURE_NOISE, DataConfig, Dataset, Signals, UniformRange
from lab.chen2022.model import MoEParams, _router_logits
from lab.chen2022.patch_functions import (
    ALIGNED_COSINE,
    CNNFilter,
    PatchFunction,
    ProjectionLookup,
    _signals,
    projections,
    signal_directions,
)
from lab.core import validate
from lab.core.stats import DEFAULT_LEVEL, clopper_pearson
from lab.kernels.activations import ACTIVATIONS
from lab.kernels.dense import gate_values, routed_expert_outputs

__all__ = [
    "FLOOR",
    "UNIT_ROUNDOFF",
    "Classifier",
    "ErrorEstimate",
    "Orbit",
    "PatchAdditive",
    "PatchProduct",
    "RoutedMoE",
    "attaining_witness",
    "enumerated_error",
    "error_rate",
    "feature_sum",
    "orbit",
    "orbit_floor",
    "orbit_margins",
    "orbit_residual",
    "overlap_mass",
    "relu_witness",
    "search_aligned_lookup",
    "summation_allowance",
]

FLOOR = 1.0 / 8.0  # Theorem 4.1
UNIT_ROUNDOFF = 2.0**-53


def _check_x(x: np.ndarray) -> np.ndarray:
    validate.array(x, "x", ndim=3, labels="(n, P, d)", cast=False)
    return np.asarray(x, dtype=float)


def _callable(f: object, name: str) -> None:
    if not callable(f):
        raise TypeError(f"{name} must be a callable on patches (..., d) -> (...), got {type(f).__name__}")


def _classifier(F: object, magnitude: bool = False) -> None:
    """F(x) (n, P, d) -> (n,): any callable, or (magnitude=True) one of the classifiers here."""
    if magnitude:
        validate.instance(F, "F", (PatchAdditive, PatchProduct, RoutedMoE))
    else:
        _callable(F, "F")


_NO_SIGNALS = object()


def _dataset(data: object, signals: object = _NO_SIGNALS) -> Dataset:
    """A `Dataset` (from `sample`) with finite x and, if given, signals of its shape (K, d)."""
    validate.instance(data, "data", Dataset)
    x = validate.array(data.x, "data.x", ndim=3, labels="(n, P, d)", nonempty=(0,), cast=False)
    if signals is not _NO_SIGNALS:
        _signals(signals)
        d, K = x.shape[2], signals.V.shape[0]
        validate.same_shape("signals.V", signals.V, (K, d), f"(K, d) with d = {d} from data.x")
        for name in ("cluster", "noise_cluster"):
            validate.integers(getattr(data, name), f"data.{name}", ndim=1, low=0, high=K, bound=f"K={K}")
    return data


def _config_signals(config: object, signals: object) -> None:
    validate.instance(config, "config", DataConfig)
    _signals(signals)
    validate.same_shape("signals.V", signals.V, (config.K, config.d), "(K, d) of the config")


@dataclass(frozen=True, eq=False)
class PatchAdditive:
    """F(x) = Σ_p f(x⁽ᵖ⁾), the function class of Theorem 4.1 (every CNN and ensemble of CNNs)."""

    f: PatchFunction

    def __post_init__(self) -> None:
        _callable(self.f, "f")

    def patch_values(self, x: np.ndarray) -> np.ndarray:
        """f on every patch, shape (n, P)."""
        x = _check_x(x)
        values = np.asarray(self.f(x), dtype=float)
        if values.shape != x.shape[:2]:
            raise ValueError(f"f must map (n, P, d) to (n, P) = {x.shape[:2]}, got {values.shape}")
        if not np.all(np.isfinite(values)):
            raise ValueError("f returned non-finite values")
        return values

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.patch_values(x).sum(axis=1)

    def magnitude(self, x: np.ndarray) -> np.ndarray:
        """Σ_p |f(x⁽ᵖ⁾)|: the size of the summands, the scale of F's rounding error."""
        return np.abs(self.patch_values(x)).sum(axis=1)


@dataclass(frozen=True, eq=False)
class PatchProduct:
    """Negative control for B1: F(x) = Π_p f(x⁽ᵖ⁾) is not patch-additive."""

    f: PatchFunction

    def __post_init__(self) -> None:
        _callable(self.f, "f")

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return PatchAdditive(self.f).patch_values(x).prod(axis=1)

    def magnitude(self, x: np.ndarray) -> np.ndarray:
        return np.abs(self(x))


@dataclass(frozen=True, eq=False)
class RoutedMoE:
    """Negative control for B1: the MoE output π_m(x) f_m(x) with m = argmax_m h_m(x; Θ) (Sec. 3.2)."""

    params: MoEParams
    act: str = "cubic"

    def __post_init__(self) -> None:
        validate.instance(self.params, "params", MoEParams)
        for name in ("W", "Theta"):
            validate.array(getattr(self.params, name), f"params.{name}", cast=False)
        validate.choice(self.act, "act", ACTIVATIONS)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = _check_x(x)
        d = self.params.W.shape[2]
        validate.same_shape("x", x, (*x.shape[:2], d), f"(n, P, d) with d = {d} from params.W")
        h = _router_logits(x, self.params.Theta)
        routes = np.argmax(h, axis=1)
        pi = np.take_along_axis(gate_values(h), routes[:, None], axis=1)[:, 0]
        return pi * routed_expert_outputs(x, self.params.W, routes, self.act)

    def magnitude(self, x: np.ndarray) -> np.ndarray:
        return np.abs(self(x))


Classifier = PatchAdditive | PatchProduct | RoutedMoE


@dataclass(frozen=True)
class Orbit:
    """The four points of App. B for each sample with ε = −y: x (4, m, P, d) and labels (4, m)."""

    x: np.ndarray
    labels: np.ndarray

    @property
    def m(self) -> int:
        return self.labels.shape[1]


def orbit(data: Dataset, signals: Signals, rng: np.random.Generator) -> Orbit:
    """App. B: for each sample with ε = −y, with ξ its noise patches, the four points

    ([αyv_k, βc_k, −γyv_k', ξ], y), ([−αyv_k, βc_k, γyv_k', ξ], −y),
    ([γyv_k', βc_k', −αyv_k, ξ], y), ([−γyv_k', βc_k', αyv_k, ξ], −y),
    each with its own random patch order. Patches are exact copies or negations of the sample's.
    """
    _dataset(data, signals)
    validate.generator(rng)
    chosen = np.flatnonzero(data.eps == -data.y)
    if chosen.size == 0:
        raise ValueError("data has no sample with ε = −y, so there is no orbit to build")
    x, pos = data.x[chosen], data.positions[chosen]
    m, P, d = x.shape
    rows = np.arange(m)
    feature, centre, noise = (x[rows, pos[:, role]] for role in (FEATURE, CENTER, FEATURE_NOISE))
    is_noise = np.ones((m, P), dtype=bool)
    is_noise[rows[:, None], pos] = False
    xi = x[is_noise].reshape(m, P - 3, d)
    centre_swapped = data.beta[chosen][:, None] * signals.C[data.noise_cluster[chosen]]
    roles = [(feature, centre, noise), (-feature, centre, -noise)]
    roles += [(-noise, centre_swapped, -feature), (noise, centre_swapped, feature)]
    points = np.stack([np.concatenate([np.stack(r, axis=1), xi], axis=1) for r in roles])
    order = rng.permuted(np.tile(np.arange(P), (4, m, 1)), axis=2)
    points = np.take_along_axis(points, order[..., None], axis=2)
    y = data.y[chosen].astype(float)
    return Orbit(points, np.stack([y, -y, y, -y]))


def orbit_margins(F: Classifier, orb: Orbit) -> np.ndarray:
    """Margins label·F(x) of the four orbit points, shape (4, m); for patch-additive F they sum to 0."""
    _classifier(F)
    validate.instance(orb, "orb", Orbit)
    four, m, P, d = orb.x.shape
    return orb.labels * F(orb.x.reshape(four * m, P, d)).reshape(four, m)


def orbit_residual(F: Classifier, orb: Orbit) -> np.ndarray:
    """|Σ of the four margins| ÷ Σ of the four points' magnitudes, per orbit (0 when all vanish)."""
    _classifier(F, magnitude=True)
    validate.instance(orb, "orb", Orbit)
    four, m, P, d = orb.x.shape
    total = np.abs(orbit_margins(F, orb).sum(axis=0))
    scale = F.magnitude(orb.x.reshape(four * m, P, d)).reshape(four, m).sum(axis=0)
    return np.divide(total, scale, out=np.zeros_like(total), where=scale > 0)


def summation_allowance(P: int) -> float:
    """γ_{4P−1} = (4P−1)u / (1 − (4P−1)u): rounding bound for the 4P signed summands of an orbit's margins.

    Rigorous when f gives the same bits for the same patch wherever it sits in the batch; the
    orbit's patches are exact copies or negations, so the exact sum of the margins is 0.
    """
    n = 4 * validate.integer(P, "P", low=3) - 1
    return n * UNIT_ROUNDOFF / (1.0 - n * UNIT_ROUNDOFF)


@dataclass(frozen=True)
class ErrorEstimate:
    """Test error P(yF(x) ≤ 0) estimated from n samples, with its Clopper–Pearson interval."""

    errors: int
    n: int
    ci: tuple[float, float]
    level: float

    @property
    def rate(self) -> float:
        return self.errors / self.n


def error_rate(
    F: Classifier, data: Dataset, level: float = DEFAULT_LEVEL, chunk: int = 8192
) -> ErrorEstimate:
    """Monte-Carlo test error P(yF(x) ≤ 0) (ties are errors, as in Theorem 4.1), Clopper–Pearson CI.

    F is evaluated on `chunk` samples at a time, so memory stays flat for any n. F is a classifier
    (x (n, P, d) -> (n,)), data a `Dataset`, level in (0, 1), chunk an integer >= 1.
    """
    _classifier(F)
    _dataset(data)
    validate.real(level, "level", low=0.0, high=1.0, low_open=True, high_open=True)
    chunk = validate.integer(chunk, "chunk", low=1)
    errors = sum(
        int(np.count_nonzero(data.y[s : s + chunk] * F(data.x[s : s + chunk]) <= 0))
        for s in range(0, data.n, chunk)
    )
    return ErrorEstimate(errors, data.n, clopper_pearson(errors, data.n, level), level)


def enumerated_error(F: Classifier, config: DataConfig, signals: Signals) -> float:
    """Exact error of an F that ignores noise patches and depends on α, β, γ only through their signs.

    Averages 1[yF(x) ≤ 0] over the 4K(K−1) equally likely (k, k', y, ε) of Def. 3.1 with α, β, γ
    at the midpoints of their supports and zero noise patches (exact for `attaining_witness` when
    D_α = D_γ).
    """
    _classifier(F)
    _config_signals(config, signals)
    K, P, d = config.K, config.P, config.d
    k, kk, y, eps = (g.ravel() for g in np.meshgrid(range(K), range(K), [-1, 1], [-1, 1], indexing="ij"))
    keep = k != kk
    k, kk, y, eps = k[keep], kk[keep], y[keep], eps[keep]
    alpha, beta, gamma = ((r.low + r.high) / 2.0 for r in (config.alpha, config.beta, config.gamma))
    x = np.zeros((k.size, P, d))
    x[:, FEATURE] = (y * alpha)[:, None] * signals.V[k]
    x[:, CENTER] = beta * signals.C[k]
    x[:, FEATURE_NOISE] = (eps * gamma)[:, None] * signals.V[kk]
    return float(np.mean(y * F(x) <= 0))


def _overlap(alpha: UniformRange, gamma: UniformRange) -> tuple[float, float]:
    validate.instance(alpha, "alpha", UniformRange)
    validate.instance(gamma, "gamma", UniformRange)
    return max(alpha.low, gamma.low), min(alpha.high, gamma.high)


def overlap_mass(alpha: UniformRange, gamma: UniformRange) -> float:
    """ω = ∫∫ min(p_α(a)p_γ(c), p_α(c)p_γ(a)) da dc, the part of the law of (α, γ) invariant under α ↔ γ.

    For uniforms with I = supp α ∩ supp γ this is P(α ∈ I)·P(γ ∈ I) = |I|² / (|supp α|·|supp γ|),
    computed as that product of two ratios, each at most 1 in floating point (|I|**2 / |I|² could
    round to 1 + 2⁻⁵² for D_α = D_γ).
    """
    low, high = _overlap(alpha, gamma)
    width = max(high - low, 0.0)
    return (width / (alpha.high - alpha.low)) * (width / (gamma.high - gamma.low))


def orbit_floor(alpha: UniformRange, gamma: UniformRange) -> float:
    """The orbit argument's floor ω/8 for any D_α, D_γ (1/8 iff D_α = D_γ, 0 for disjoint supports).

    Split the law of (α, γ) as ω·μ_sym + rest with μ_sym invariant under α ↔ γ; on μ_sym the four
    orbit points of App. B are equally likely and one of them errs, so P(yF ≤ 0) ≥ ½·¼·ω.
    """
    return overlap_mass(alpha, gamma) / 8.0


def attaining_witness(config: DataConfig, signals: Signals) -> ProjectionLookup:
    """A per-patch f whose F has error exactly ω/8 = `orbit_floor` (1/8 when D_α = D_γ).

    On patches aligned with a signal (all other patches get 0), with clusters numbered i = 1..K:
    feature patch t·v_i with |t| in I = supp α ∩ supp γ: i + ½ if t > 0, 0 if t < 0; with |t| only
    in supp α: 2K·sign(t) (it must be the feature); with |t| only in supp γ: 0 (it must be noise);
    centre patch β·c_i: −i. Then F = ½ for y = +1, F = −k < 0 for y = −1 unless the feature noise
    is +γv_k' with k' > k: the only errors are y = −1, ε = +1, k' > k, α, γ ∈ I, of probability ω/8.
    """
    _config_signals(config, signals)
    K = config.K
    low, high = _overlap(config.alpha, config.gamma)
    bounds = [config.alpha.low, config.alpha.high, config.gamma.low, config.gamma.high]
    edges = np.unique([0.0, *bounds, *(-b for b in bounds)])
    mids = np.concatenate([[edges[0] - 1.0], (edges[:-1] + edges[1:]) / 2.0, [edges[-1] + 1.0]])
    size = np.abs(mids)
    in_overlap = (size >= low) & (size <= high)
    only_alpha = ~in_overlap & (size >= config.alpha.low) & (size <= config.alpha.high)
    cluster = np.arange(1, K + 1)[:, None]
    feature_rows = np.where(in_overlap & (mids > 0), cluster + 0.5, 0.0) + np.where(
        only_alpha, 2.0 * K * np.sign(mids), 0.0
    )
    centre_rows = np.where(mids > 0, -cluster * 1.0, 0.0)
    return ProjectionLookup(
        signal_directions(signals), edges, np.vstack([feature_rows, centre_rows]), ALIGNED_COSINE
    )


def relu_witness(config: DataConfig, signals: Signals, ramp: float = 0.1) -> CNNFilter:
    """Two-layer ReLU CNN (4K filters with biases) copying the D_α = D_γ witness's steps.

    Each step value·1[t > 0] on a projection t = ⟨u, z⟩ becomes value·(relu(t − τ0) − relu(t − τ1))
    / (τ1 − τ0), τ1 = the smallest signal strength, τ0 = (1 − ramp)τ1: exact on signal patches and 0
    on noise patches whose projections stay below τ0.
    """
    _config_signals(config, signals)
    validate.real(ramp, "ramp", low=0.0, high=1.0, low_open=True, high_open=True)
    K = config.K
    rows, thresholds, values = [], [], []
    for U, tau1, value in (
        (signals.V, min(config.alpha.low, config.gamma.low), np.arange(1, K + 1) + 0.5),
        (signals.C, config.beta.low, -np.arange(1, K + 1.0)),
    ):
        for shift, sign in ((1.0 - ramp, 1.0), (1.0, -1.0)):
            rows.append(U)
            thresholds.append(np.full(K, shift * tau1))
            values.append(sign * value / (ramp * tau1))
    return CNNFilter(np.vstack(rows), -np.concatenate(thresholds), np.concatenate(values), "relu")


def feature_sum(signals: Signals) -> CNNFilter:
    """The linear CNN f(z) = Σ_k ⟨v_k, z⟩: F = yα + εγ + noise, optimal when α > γ always."""
    K = _signals(signals).V.shape[0]
    return CNNFilter(signals.V, np.zeros(K), np.ones(K), "linear")


def search_aligned_lookup(
    data: Dataset,
    signals: Signals,
    edges: np.ndarray,
    rng: np.random.Generator,
    restarts: int = 10,
    sweeps: int = 8,
) -> ProjectionLookup:
    """Coordinate descent over integer aligned lookups (values |T| ≤ 2K + 1) minimising the error on `data`.

    A search, not a construction: it sees only the training error, over tables that can compare
    |projection| magnitudes (bins between `edges`) as well as signs and directions. data a `Dataset`
    with signals of its shape, edges finite reals, restarts an integer >= 1, sweeps >= 0.
    """
    _dataset(data, signals)
    validate.array(edges, "edges", ndim=(0, 1), labels="(E,)", cast=False)
    validate.generator(rng)
    validate.integer(restarts, "restarts", low=1)
    validate.integer(sweeps, "sweeps", low=0)
    U = signal_directions(signals)
    edges = np.unique(np.asarray(edges, dtype=float))
    rows, bins = U.shape[0], edges.size + 1
    proj = projections(U, data.x)
    row = np.argmax(np.abs(proj), axis=-1)
    t = np.take_along_axis(proj, row[..., None], axis=-1)[..., 0]
    aligned = np.abs(t) >= ALIGNED_COSINE * np.linalg.norm(data.x, axis=-1)
    entry = np.where(aligned, row * bins + np.searchsorted(edges, t, side="right"), rows * bins)
    members = [np.flatnonzero((entry == e).any(axis=1)) for e in range(rows * bins)]
    counts = [(entry[m] == e).sum(axis=1) for e, m in enumerate(members)]
    values = np.arange(-2 * signals.V.shape[0] - 1, 2 * signals.V.shape[0] + 2, dtype=float)
    best, best_errors = None, data.n + 1
    for _ in range(restarts):
        table = np.append(rng.choice(values, size=rows * bins), 0.0)
        F = table[entry].sum(axis=1)
        for _ in range(sweeps):
            changed = False
            for e in rng.permutation(rows * bins):
                if members[e].size == 0:
                    continue
                margin = data.y[members[e], None] * (
                    F[members[e], None] + counts[e][:, None] * (values[None, :] - table[e])
                )
                choice = values[np.argmin((margin <= 0).sum(axis=0))]
                if choice != table[e]:
                    F[members[e]] += counts[e] * (choice - table[e])
                    table[e], changed = choice, True
            if not changed:
                break
        errors = int(np.count_nonzero(data.y * F <= 0))
        if errors < best_errors:
            best, best_errors = table[:-1].reshape(rows, bins), errors
    return ProjectionLookup(U, edges, best, ALIGNED_COSINE)
