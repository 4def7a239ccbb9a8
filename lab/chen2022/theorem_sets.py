"""Theorem 4.2's existential sets M_k at a finite size (Chen et al. 2022, Sec. 4): an exact search.

Theorem 4.2 says "the experts can be divided into a disjoint union of K non-empty sets [M] ⊔_{k∈[K]} M_k"
(the road map of Sec. 5: "⊔_{k=1}^K M_k = [M]") such that each expert m ∈ M_k has test error o(1) on Ω_k
and an example of Ω_k is routed into M_k with probability 1 − o(1). Read at one size with thresholds (an
error ≤ `max_error`, a routed share ≥ `routed_share`), the sets are an assignment σ: [M] → [K] with σ(m)
among the clusters expert m is accurate on, every k used, and Σ_{m: σ(m)=k} n_{k,m} ≥ routed_share · n_k
for every k. The routing constraints couple the clusters (an expert lies in one set only), so
`theorem_sets` searches the assignments exactly: branch and bound on the worst routed share, bounded per
cluster and by the shares' sum over clusters; exponential in M in the worst case (milliseconds at M = 8,
seconds at M = 16). With cover=False an expert may lie in no set (the sets need not exhaust [M]), a
weaker reading than the theorem's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lab.core import validate
from lab.core.errors import InputError

__all__ = ["TheoremSets", "judge_sets", "theorem_sets"]

ROUND_OFF = 1e-12  # the search's witness is optimal within this; distinct shares of counts differ by more


@dataclass(frozen=True)
class TheoremSets:
    """Sets M_1..M_K judged against Thm 4.2's properties: whether they hold, worst routed share, why not."""

    sets: tuple[tuple[int, ...], ...] | None  # the sets judged (None: no admissible sets at all)
    worst_share: float  # min_k share of Ω_k routed into M_k under `sets` (0.0 when sets is None)
    exists: bool  # every property of Thm 4.2 holds at the thresholds
    reason: str  # "" when exists, else the first property that fails


def _inputs(errors, dispatch, max_error, routed_share, cover):
    """Checked arguments: accurate (M, K) bools, dispatch (K, M), cluster sizes (K,), routed_share, cover."""
    errors = validate.array(errors, "errors", ndim=2, labels="(M, K)", nonempty=(0, 1), low=0.0, high=1.0)
    M, K = errors.shape
    dispatch = validate.array(dispatch, "dispatch", ndim=2, labels="(K, M)", low=0.0)
    validate.same_shape("dispatch", dispatch, (K, M), f"(K, M) = ({K}, {M}), errors transposed")
    sizes = dispatch.sum(axis=1)
    if (sizes <= 0).any():
        raise InputError(
            f"dispatch must route at least one sample of every cluster: row {int(np.argmin(sizes))}"
        )
    max_error = validate.real(max_error, "max_error", low=0.0, high=1.0, high_open=True)
    routed_share = validate.real(routed_share, "routed_share", low=0.0, high=1.0, low_open=True)
    return errors <= max_error, dispatch, sizes, routed_share, validate.flag(cover, "cover")


def _judge(sets, accurate, dispatch, sizes, routed_share, cover) -> TheoremSets:
    """Thm 4.2's properties of given sets, in the statement's order; the first failure is the reason.

    The routed share of M_k is one division of its summed counts (exact sums for integer counts), so
    the verdict does not depend on the order in which a search added the experts."""
    M = accurate.shape[0]
    members = [m for s in sets for m in s]
    worst = float(min(dispatch[k, sorted(set(s))].sum() / sizes[k] for k, s in enumerate(sets)))
    failures = [
        (len(set(members)) < len(members), "the sets are not disjoint"),
        (
            cover and len(set(members)) < M,
            f"the sets leave experts {sorted(set(range(M)) - set(members))} out",
        ),
        (any(not s for s in sets), f"M_k is empty for k = {[k for k, s in enumerate(sets) if not s]}"),
        (
            any(not accurate[m, k] for k, s in enumerate(sets) for m in s),
            "an expert of M_k is not accurate on Ω_k: (m, k) = "
            + str([(m, k) for k, s in enumerate(sets) for m in s if not accurate[m, k]]),
        ),
        (worst < routed_share, f"the router sends only {worst:.4g} of some Ω_k into M_k (< {routed_share})"),
    ]
    reason = next((text for failed, text in failures if failed), "")
    return TheoremSets(tuple(tuple(sorted(int(m) for m in s)) for s in sets), worst, not reason, reason)


def judge_sets(
    sets: Sequence[Sequence[int]], errors, dispatch, max_error: float, routed_share: float, cover: bool = True
) -> TheoremSets:
    """Whether given sets M_k (e.g. Def. D.3's professions) have Thm 4.2's properties at the thresholds.

    sets: K sequences of expert indices in [0, M); errors (M, K) test error of expert m on Ω_k in [0, 1];
    dispatch (K, M) non-negative samples (or shares) of Ω_k routed to expert m, each row positive;
    max_error in [0, 1), routed_share in (0, 1]; cover: the sets must exhaust [M] (the theorem's words).
    """
    accurate, dispatch, sizes, routed_share, cover = _inputs(errors, dispatch, max_error, routed_share, cover)
    M, K = accurate.shape
    if isinstance(sets, str | bytes) or not isinstance(sets, Sequence) or len(sets) != K:
        raise InputError(f"sets must be a sequence of K = {K} sequences of expert indices, got {sets!r}")
    checked = [validate.integers(_indices(s), "sets", ndim=1, low=0, high=M, bound=f"M={M}") for s in sets]
    return _judge([tuple(s.tolist()) for s in checked], accurate, dispatch, sizes, routed_share, cover)


def _indices(value) -> np.ndarray:
    """One set as an array; an empty set (no dtype of its own) as an empty integer array."""
    a = np.asarray(value)
    return a.astype(int) if a.size == 0 and a.dtype.kind == "f" else a


def theorem_sets(errors, dispatch, max_error: float, routed_share: float, cover: bool = True) -> TheoremSets:
    """Do sets M_k with Thm 4.2's properties exist? Exact search; the witness maximises the worst share.

    Arguments as in `judge_sets`. Returns the best admissible sets (disjoint, non-empty, each expert
    accurate on its cluster; with cover, exhausting [M]) judged against routed_share, or sets=None and
    the reason no admissible sets exist.
    """
    accurate, dispatch, sizes, routed_share, cover = _inputs(errors, dispatch, max_error, routed_share, cover)
    M, K = accurate.shape
    idle = [m for m in range(M) if not accurate[m].any()]
    if cover and idle:
        return TheoremSets(None, 0.0, False, f"experts {idle} are accurate on no cluster Ω_k")
    unserved = [k for k in range(K) if not accurate[:, k].any()]
    if unserved:
        return TheoremSets(None, 0.0, False, f"no expert is accurate on Ω_k for k = {unserved}")
    options = [[k for k in range(K) if accurate[m, k]] + ([] if cover else [-1]) for m in range(M)]
    share = dispatch / sizes[:, None] * accurate.T  # (K, M): what expert m brings to M_k, if it may join
    order = sorted(range(M), key=lambda m: (len(options[m]), -share[:, m].max()))  # constrained, big first
    # bounds on what the experts order[i:] can still add: reach[i, k] to Ω_k alone, spare[i] to the
    # sum over k of the shares (an expert joins one set only)
    reach = np.vstack([np.cumsum(share[:, order[::-1]], axis=1)[:, ::-1].T, np.zeros(K)])
    spare = np.append(np.cumsum(share[:, order[::-1]].max(axis=0))[::-1], 0.0)
    best: dict = {"worst": -1.0, "assign": None}
    inside, count, assign = np.zeros(K), np.zeros(K, dtype=int), [-1] * M

    def search(i: int) -> None:
        bound = min((inside + reach[i]).min(), (inside.sum() + spare[i]) / K)
        if bound <= best["worst"] + ROUND_OFF:
            return  # no completion beats the best worst share found
        if i == M:
            if count.min() > 0:
                best["worst"], best["assign"] = float(inside.min()), list(assign)
            return
        m = order[i]
        for k in sorted(options[m], key=lambda k: inside[k] if k >= 0 else np.inf):  # neediest set first
            assign[m] = k
            if k >= 0:
                inside[k] += share[k, m]
                count[k] += 1
            uncovered = np.flatnonzero(count == 0)
            if all(accurate[order[i + 1 :], c].any() for c in uncovered):
                search(i + 1)
            if k >= 0:
                inside[k] -= share[k, m]
                count[k] -= 1

    search(0)
    if best["assign"] is None:
        return TheoremSets(
            None, 0.0, False, "no disjoint non-empty sets of accurate experts cover every cluster"
        )
    sets = [tuple(m for m in range(M) if best["assign"][m] == k) for k in range(K)]
    return _judge(sets, accurate, dispatch, sizes, routed_share, cover)
