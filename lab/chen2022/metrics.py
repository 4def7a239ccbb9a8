"""Metrics of Chen et al. 2022 (Sec. 5–6, App. A, D): dispatch tables and entropy (6.1), professions M_k
(Def. D.3), load (5.1), accuracies and the feature/centre learning curves of Figs 5–6.
"""

from __future__ import annotations

import numpy as np

from lab.chen2022.data import Signals
from lab.chen2022.routing import Uniform, routing_probabilities

UNIFORM_ROUTING = Uniform(0.0, 1.0)  # Algorithm 1's routing noise r ~ Unif[0, 1]


def dispatch_counts(cluster: np.ndarray, routes: np.ndarray, K: int, M: int) -> np.ndarray:
    """Dispatch table n_{k,m}: samples of cluster k routed to expert m (Tables 4–6), shape (K, M)."""
    cluster, routes = np.asarray(cluster), np.asarray(routes)
    if cluster.shape != routes.shape or cluster.ndim != 1:
        raise ValueError(
            f"cluster and routes must be 1-d of equal length, got {cluster.shape}, {routes.shape}"
        )
    if cluster.size and (cluster.min() < 0 or cluster.max() >= K):
        raise ValueError(f"cluster labels must lie in [0, K={K})")
    if routes.size and (routes.min() < 0 or routes.max() >= M):
        raise ValueError(f"routes must lie in [0, M={M})")
    counts = np.zeros((K, M), dtype=np.int64)
    np.add.at(counts, (cluster, routes), 1)
    return counts


def dispatch_entropy(counts: np.ndarray) -> float:
    """Dispatch entropy (6.1): −Σ_{m: n_m ≠ 0} (n_m/n) Σ_k (n_{k,m}/n_m) log(n_{k,m}/n_m), natural log."""
    counts = np.asarray(counts)
    if counts.ndim != 2:
        raise ValueError(f"counts must be a (K, M) table, got shape {counts.shape}")
    if np.any(counts < 0) or not np.all(np.isfinite(counts)):
        raise ValueError("counts must be finite and non-negative")
    n = counts.sum()
    if n <= 0:
        raise ValueError("counts must contain at least one sample")
    n_m = counts.sum(axis=0)
    used = n_m > 0
    share = counts[:, used] / n_m[used]
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(share > 0, share * np.log(np.where(share > 0, share, 1.0)), 0.0)
    return float(max(0.0, -np.sum(n_m[used] / n * plogp.sum(axis=0))))


def professions(W0: np.ndarray, V: np.ndarray) -> np.ndarray:
    """k*_m of Def. D.3: the signal k of argmax_{j,k} ⟨v_k, w⁽⁰⁾_{m,j}⟩ for each expert, shape (M,).

    Only the first d = V.shape[1] coordinates of W0 are used (a bias column, if any, is ignored).
    """
    M, width = W0.shape[0], W0.shape[2]
    if V.ndim != 2 or V.shape[1] > width:
        raise ValueError(f"V must have shape (K, d) with d <= {width}, got {V.shape}")
    proj = W0[..., : V.shape[1]] @ V.T  # (M, J, K)
    flat = proj.reshape(M, -1).argmax(axis=1)
    return flat % V.shape[0]


def profession_sets(k_star: np.ndarray, K: int) -> list[np.ndarray]:
    """M_k = {m : k*_m = k} (Def. D.3) for k = 0..K-1."""
    return [np.flatnonzero(k_star == k) for k in range(K)]


def accuracy(margins: np.ndarray) -> float:
    """Fraction of samples with y F(x) > 0 (a zero margin counts as an error, as in Thm 4.2)."""
    margins = np.asarray(margins)
    if margins.size == 0:
        raise ValueError("margins must not be empty")
    return float(np.mean(margins > 0))


def expert_cluster_accuracy(y: np.ndarray, cluster: np.ndarray, f_all: np.ndarray, K: int) -> np.ndarray:
    """acc[m, k] = P(y f_m(x) > 0 | x ∈ Ω_k) on a sample, for every expert and cluster (Thm 4.2), (M, K)."""
    correct = (y[:, None] * f_all) > 0  # (n, M)
    acc = np.zeros((f_all.shape[1], K))
    for k in range(K):
        mine = cluster == k
        if not mine.any():
            raise ValueError(f"cluster {k} has no samples")
        acc[:, k] = correct[mine].mean(axis=0)
    return acc


def signal_alignment(W: np.ndarray, Theta: np.ndarray, signals: Signals) -> dict[str, np.ndarray]:
    """Figs 5–6: max_j ⟨w_{m,j}, v_k⟩, max_j ⟨w_{m,j}, c_k⟩, ⟨θ_m, v_k⟩, ⟨θ_m, c_k⟩, each (M, K).

    Only the first d coordinates of W are used (a bias column, if any, is ignored).
    """
    d = signals.V.shape[1]
    Wd = W[..., :d]
    return {
        "expert_feature": (Wd @ signals.V.T).max(axis=1),
        "expert_center": (Wd @ signals.C.T).max(axis=1),
        "router_feature": (signals.V @ Theta).T,
        "router_center": (signals.C @ Theta).T,
    }


def expert_load(h: np.ndarray) -> np.ndarray:
    """Load_m = Σ_i P(m_i = m) (5.1) for router outputs h (n, M) with Unif[0,1] routing noise, exact."""
    return routing_probabilities(h, UNIFORM_ROUTING).sum(axis=0)
