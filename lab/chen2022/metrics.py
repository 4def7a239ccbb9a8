"""Metrics of Chen et al. 2022 (Sec. 5–6, App. A, D): dispatch tables and entropy (6.1), professions M_k
(Def. D.3), load (5.1), accuracies and the feature/centre learning curves of Figs 5–6.

Every function checks its arguments (`lab.core.validate`): labels, routes and professions are
integer arrays inside their ranges (a float label is a TypeError, not an IndexError), K and M
integers >= 1, weights and tables real and finite. Margins and expert outputs may be ±inf (an
overflowed output still has a sign) but never NaN, which has none: a NaN margin is an error, not
a misclassified sample.
"""

from __future__ import annotations

import numpy as np

from lab.chen2022.data import Signals
from lab.chen2022.routing import Uniform, routing_probabilities
from lab.core import validate
from lab.core.errors import InputError

UNIFORM_ROUTING = Uniform(0.0, 1.0)  # Algorithm 1's routing noise r ~ Unif[0, 1]

__all__ = [
    "UNIFORM_ROUTING",
    "accuracy",
    "dispatch_counts",
    "dispatch_entropy",
    "expert_cluster_accuracy",
    "expert_load",
    "profession_sets",
    "professions",
    "signal_alignment",
]


def _signed(value, name: str, **shape) -> np.ndarray:
    """Real numbers, ±inf allowed (a sign), NaN refused; integers kept as they are."""
    a = validate.array(value, name, finite=False, cast=False, **shape)
    if a.dtype.kind == "f" and a.size and np.isnan(a).any():
        raise InputError(f"{name} must not contain NaN (a NaN has no sign; ±inf is allowed)")
    return a


def _signals(signals) -> np.ndarray:
    validate.instance(signals, "signals", Signals)
    V = validate.array(signals.V, "signals.V", ndim=2, labels="(K, d)", nonempty=(0, 1), cast=False)
    C = validate.array(signals.C, "signals.C", ndim=2, labels="(K, d)", cast=False)
    validate.same_shape("signals.C", C, V.shape, "(K, d) of signals.V")
    return V


def dispatch_counts(cluster: np.ndarray, routes: np.ndarray, K: int, M: int) -> np.ndarray:
    """Dispatch table n_{k,m}: samples of cluster k routed to expert m (Tables 4–6), shape (K, M).

    cluster (n,) integers in [0, K), routes (n,) integers in [0, M), K and M integers >= 1."""
    K = validate.integer(K, "K", low=1)
    M = validate.integer(M, "M", low=1)
    cluster = validate.integers(cluster, "cluster", ndim=1, labels="(n,)", low=0, high=K, bound=f"K={K}")
    routes = validate.integers(routes, "routes", ndim=1, labels="(n,)", low=0, high=M, bound=f"M={M}")
    validate.same_shape("routes", routes, cluster.shape, "(n,) with n = len(cluster)")
    counts = np.zeros((K, M), dtype=np.int64)
    np.add.at(counts, (cluster, routes), 1)
    return counts


def dispatch_entropy(counts: np.ndarray) -> float:
    """Dispatch entropy (6.1): −Σ_{m: n_m ≠ 0} (n_m/n) Σ_k (n_{k,m}/n_m) log(n_{k,m}/n_m), natural log.

    counts (K, M): finite, non-negative (integer counts or real loads), at least one sample."""
    counts = validate.array(counts, "counts", ndim=2, labels="(K, M)", cast=False, low=0)
    n = counts.sum()
    if n <= 0:
        raise InputError("counts must contain at least one sample (their sum is 0)")
    n_m = counts.sum(axis=0)
    used = n_m > 0
    share = counts[:, used] / n_m[used]
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(share > 0, share * np.log(np.where(share > 0, share, 1.0)), 0.0)
    return float(max(0.0, -np.sum(n_m[used] / n * plogp.sum(axis=0))))


def professions(W0: np.ndarray, V: np.ndarray) -> np.ndarray:
    """k*_m of Def. D.3: the signal k of argmax_{j,k} ⟨v_k, w⁽⁰⁾_{m,j}⟩ for each expert, shape (M,).

    Only the first d = V.shape[1] coordinates of W0 are used (a bias column, if any, is ignored).
    W0 (M, J, d [+ 1]) and V (K, d) real and finite, M, J, K >= 1.
    """
    W0 = validate.array(W0, "W0", ndim=3, labels="(M, J, d)", nonempty=(0, 1), cast=False)
    M, width = W0.shape[0], W0.shape[2]
    V = validate.array(V, "V", ndim=2, labels="(K, d)", nonempty=(0,), cast=False)
    if V.shape[1] > width:
        raise InputError(f"V must have shape (K, d) with d <= {width}, got {V.shape}")
    proj = W0[..., : V.shape[1]] @ V.T  # (M, J, K)
    flat = proj.reshape(M, -1).argmax(axis=1)
    return flat % V.shape[0]


def profession_sets(k_star: np.ndarray, K: int) -> list[np.ndarray]:
    """M_k = {m : k*_m = k} (Def. D.3) for k = 0..K-1; k_star (M,) integers in [0, K)."""
    K = validate.integer(K, "K", low=1)
    k_star = validate.integers(k_star, "k_star", ndim=1, labels="(M,)", low=0, high=K, bound=f"K={K}")
    return [np.flatnonzero(k_star == k) for k in range(K)]


def accuracy(margins: np.ndarray) -> float:
    """Fraction of samples with y F(x) > 0 (a zero margin counts as an error, as in Thm 4.2).

    margins: a non-empty real array; ±inf count by their sign, NaN is refused (it has no sign)."""
    margins = _signed(margins, "margins")
    if margins.size == 0:
        raise InputError("margins must not be empty")
    return float(np.mean(margins > 0))


def expert_cluster_accuracy(y: np.ndarray, cluster: np.ndarray, f_all: np.ndarray, K: int) -> np.ndarray:
    """acc[m, k] = P(y f_m(x) > 0 | x ∈ Ω_k) on a sample, for every expert and cluster (Thm 4.2), (M, K).

    y (n,) real, cluster (n,) integers in [0, K) with every cluster present, f_all (n, M); no NaN."""
    K = validate.integer(K, "K", low=1)
    y = _signed(y, "y", ndim=1, labels="(n,)")
    cluster = validate.integers(cluster, "cluster", ndim=1, labels="(n,)", low=0, high=K, bound=f"K={K}")
    validate.same_shape("cluster", cluster, y.shape, "(n,) with n = len(y)")
    f_all = _signed(f_all, "f_all", ndim=2, labels="(n, M)")
    validate.same_shape("f_all", f_all, (y.size, f_all.shape[1]), "(n, M) with n = len(y)")
    correct = (y[:, None] * f_all) > 0  # (n, M)
    acc = np.zeros((f_all.shape[1], K))
    for k in range(K):
        mine = cluster == k
        if not mine.any():
            raise InputError(f"cluster must contain every label 0..K-1 = {K - 1}: cluster {k} has no samples")
        acc[:, k] = correct[mine].mean(axis=0)
    return acc


def signal_alignment(W: np.ndarray, Theta: np.ndarray, signals: Signals) -> dict[str, np.ndarray]:
    """Figs 5–6: max_j ⟨w_{m,j}, v_k⟩, max_j ⟨w_{m,j}, c_k⟩, ⟨θ_m, v_k⟩, ⟨θ_m, c_k⟩, each (M, K).

    Only the first d coordinates of W are used (a bias column, if any, is ignored). W (M, J, d [+ 1])
    and Theta (d, M) real and finite, signals a `Signals` (V, C of shape (K, d)).
    """
    V = _signals(signals)
    d = V.shape[1]
    W = validate.array(W, "W", ndim=3, labels="(M, J, d)", nonempty=(1,), cast=False)
    if W.shape[2] < d:
        raise InputError(f"W must have shape (M, J, d) with d >= {d} from signals, got {W.shape}")
    Theta = validate.array(Theta, "Theta", ndim=2, labels="(d, M)", cast=False)
    validate.same_shape("Theta", Theta, (d, W.shape[0]), f"(d, M) with d = {d} from signals, M = len(W)")
    Wd = W[..., :d]
    return {
        "expert_feature": (Wd @ signals.V.T).max(axis=1),
        "expert_center": (Wd @ signals.C.T).max(axis=1),
        "router_feature": (signals.V @ Theta).T,
        "router_center": (signals.C @ Theta).T,
    }


def expert_load(h: np.ndarray) -> np.ndarray:
    """Load_m = Σ_i P(m_i = m) (5.1) for router outputs h (n, M) with Unif[0,1] routing noise, exact.

    h (n, M) real and finite, n, M >= 1 (checked by `routing_probabilities`)."""
    validate.array(h, "h", ndim=2, labels="(n, M)", nonempty=(0, 1), cast=False)
    return routing_probabilities(h, UNIFORM_ROUTING).sum(axis=0)
