"""Exact integrators for routing probabilities p_m = ∫ f_m(t) Π_{j≠m} F_j(t) dt (Lemma 5.1 / C.1).

Here f_j and F_j are the density and distribution function of h_j + r_j, and the integral runs
over the value t of the winning perturbed gate. Two noise families need an integrator:

- Uniform supports [lo_j, lo_j + w_j]. On every piece between consecutive endpoints each F_j is
  0, 1 or linear, so the integrand is a polynomial of degree ≤ M − 1; Gauss–Legendre with
  ⌈M/2⌉ nodes per piece integrates it exactly (up to rounding).
  An expert whose support ends at or below the highest lower end never wins: p_m = 0 exactly.
- Gaussian N(h_j, 1) (gates already divided by the noise scale). The winner lies within
  [max h − 9.5, max h + 10] except with probability ≤ M Φ(−9.5) < 1e-19; the window also reaches
  down to half the largest gap, where the integrand of a far-behind expert peaks. It is
  integrated by composite Gauss–Legendre in log space (log Φ from `scipy.special.log_ndtr`, so
  64 experts and far-apart gates never underflow). Two rules on the same panels give an error
  estimate; panels are halved until it is below `GAUSSIAN_TOL`. A clear winner (p ≥ 15/16) gets
  p = 1 − Σ of the others (`_complement_leader`): its integral near 1 carries the round-off of
  some 10³ terms (up to ~25 ulp), the complement only that of small, relatively accurate terms.

Jacobians follow from differentiating under the integral: for k ≠ m,
∂p_m/∂h_k = −∫ f_m f_k Π_{j≠m,k} F_j dt ≤ 0, and ∂p_m/∂h_m = −Σ_{k≠m} ∂p_m/∂h_k because p
is invariant under a common shift of h.

The public integrators check their arguments (`lab.core.validate`): gates (n, M) real and finite
with n, M >= 1 (M >= 2 for the self-sensitivity), widths finite and > 0, `jacobian` a bool,
`nodes` an integer >= 1. `lab.chen2022.routing`, which has checked h already, calls the unchecked
`_uniform_routing` and `_gaussian_routing`.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

from lab.core import validate
from lab.core.errors import InputError

__all__ = [
    "GAUSSIAN_TOL",
    "GAUSSIAN_WINDOW",
    "LEADER_COMPLEMENT",
    "gaussian_routing",
    "gaussian_self_sensitivity",
    "legendre01",
    "uniform_routing",
]

GAUSSIAN_WINDOW = (-9.5, 10.0)
GAUSSIAN_TOL = 1e-14
_CHUNK_ELEMENTS = 1 << 21  # (rows × nodes × experts) per vectorised block
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_TINY = np.finfo(np.float64).tiny


def legendre01(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes and weights on [0, 1]: exact for polynomials of degree ≤ 2·nodes − 1.

    nodes an integer >= 1; the result is cached (the same arrays for the same count: do not modify)."""
    return _legendre01(validate.integer(nodes, "nodes", low=1))


@functools.cache
def _legendre01(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.legendre.leggauss(nodes)
    return (x + 1.0) / 2.0, w / 2.0


def _exp(x: np.ndarray) -> np.ndarray:
    """exp(x), with terms below e^−700 (1e-304) set to 0: they are negligible and subnormals are slow."""
    return np.exp(x, out=np.zeros_like(x), where=x > -700.0)


def _chunks(n_rows: int, per_row: int):
    step = max(1, _CHUNK_ELEMENTS // max(per_row, 1))
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


def _jacobian_from_columns(B: np.ndarray) -> np.ndarray:
    """D[m, k] = −Σ_t B[t, m] B[t, k] for k ≠ m, with the diagonal making each row sum to zero."""
    D = -np.matmul(B.transpose(0, 2, 1), B)
    idx = np.arange(D.shape[1])
    D[:, idx, idx] = 0.0
    D[:, idx, idx] = -D.sum(axis=2)
    return D


def uniform_routing(
    lo: np.ndarray, width: np.ndarray, jacobian: bool = False
) -> tuple[np.ndarray, np.ndarray | None]:
    """p (n, M) for independent h_j + r_j ~ Unif[lo_j, lo_j + w_j]; with `jacobian`, ∂p/∂lo (n, M, M).

    Moving lo_j moves the whole support of expert j, so for iid noise ∂p/∂lo = ∂p/∂h. lo (n, M) real
    and finite with n, M >= 1; width one finite number > 0 or an array of them broadcast to lo's shape.
    """
    lo = _gates(lo, "lo")
    w = validate.array(width, "width", cast=False)
    try:
        np.broadcast_shapes(w.shape, lo.shape)
    except ValueError:
        raise InputError(
            f"width must be a number or broadcast to lo's shape {lo.shape}, got {w.shape}"
        ) from None
    if w.size and not np.all(w > 0):
        raise InputError(f"width must be > 0 (the width of the uniform noise), got min {w.min()}")
    return _uniform_routing(lo, width, validate.flag(jacobian, "jacobian"))


def _gates(x: object, name: str, least: int = 1) -> np.ndarray:
    """A batch of gates (n, M), real and finite with n >= 1, M >= least, as the integrators take it."""
    a = validate.array(x, name, ndim=2, labels="(n, M)", nonempty=(0,))
    if a.shape[1] < least:
        raise InputError(f"{name} must have shape (n, M) with M >= {least}, got shape {a.shape}")
    return a


def _uniform_routing(lo: np.ndarray, width, jacobian: bool) -> tuple[np.ndarray, np.ndarray | None]:
    n, M = lo.shape
    width = np.broadcast_to(np.asarray(width, dtype=float), lo.shape)
    # Shift so the highest lower end is 0; experts ending below 0 have F_j = 1 on the domain.
    with np.errstate(over="ignore"):  # a gap beyond the float range is −inf, then clipped
        a = np.maximum(lo - lo.max(axis=1, keepdims=True), -1.5 * width)
    b = a + width
    # Every lower end is ≤ 0, so the breakpoints inside the domain [0, max b] are the upper ends.
    edges = np.sort(np.concatenate([np.zeros((n, 1)), np.maximum(b, 0.0)], axis=1))
    left, length = edges[:, :-1], np.diff(edges, axis=1)  # (n, M) pieces of [0, max b]
    xi, wq = _legendre01(max(1, math.ceil(M / 2)))
    G = xi.size
    p = np.empty((n, M))
    D = np.empty((n, M, M)) if jacobian else None
    buffer = None
    for rows in _chunks(n, length.shape[1] * G * M):
        t = (left[rows, :, None] + length[rows, :, None] * xi).reshape(left[rows].shape[0], -1)
        wt = (length[rows, :, None] * wq).reshape(t.shape)
        # piece inside the support of expert m  ⇔  its right end ≤ b_m (its left end is ≥ 0 ≥ a_m)
        inside = np.repeat((left[rows] + length[rows])[:, :, None] <= b[rows, None, :], G, axis=1)
        if buffer is None:  # one work array, reused in place: fresh large arrays cost page faults
            buffer = np.empty((*t.shape, M))
        F = buffer[: t.shape[0]]
        np.subtract(t[:, :, None], a[rows, None, :], out=F)
        F /= width[rows, None, :]
        np.clip(F, _TINY, 1.0, out=F)  # F_j(t) > 0 at interior nodes; the clip guards rounding
        # Π_{j≠m} F_j = Π_j F_j / F_m. Should Π_j F_j underflow, Π_{j≠m} F_j can only matter if
        # F_m < 1e-288, i.e. on a piece shorter than 1e-288: a negligible term.
        S = F.prod(axis=2, keepdims=True)
        if jacobian:
            np.sqrt(wt[:, :, None] * S, out=S)
        np.divide(S, F, out=F)
        F *= inside
        if jacobian:
            F /= width[rows, None, :]
            D[rows] = _jacobian_from_columns(F)
            F *= S  # back to w_t Π_{j≠m} F_j / w_m
            p[rows] = F.sum(axis=1)
        else:
            p[rows] = np.einsum("nq,nqm->nm", wt, F) / width[rows]
    return np.minimum(p, 1.0), D  # a lone winner integrates to 1 ± 1 ulp


def _gaussian_nodes(lo: float, panel: float, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss–Legendre nodes and weights on [lo, GAUSSIAN_WINDOW[1]] with panels ≤ `panel` wide."""
    hi = GAUSSIAN_WINDOW[1]
    edges = np.linspace(lo, hi, math.ceil((hi - lo) / panel) + 1)
    xi, wq = _legendre01(nodes)
    h = np.diff(edges)
    return (edges[:-1, None] + h[:, None] * xi).ravel(), (h[:, None] * wq).ravel()


def _gaussian_terms(d: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log Φ(t − d_j) and log φ(t − d_j) − log Φ(t − d_j), shape (n, Q, M)."""
    z = t[None, :, None] - d[:, None, :]
    log_cdf = special.log_ndtr(z)
    return log_cdf, -0.5 * z * z - _LOG_SQRT_2PI - log_cdf


def _gaussian_window(d: np.ndarray) -> float:
    """Lower end of the t window: the winner's tail below −9.5, and the peak (≥ d_m/2) of every p_m."""
    return min(GAUSSIAN_WINDOW[0], float(d.min()) / 2.0 - 8.0)


def _gaussian_once(d: np.ndarray, panel: float, nodes: int, jacobian: bool):
    t, wt = _gaussian_nodes(_gaussian_window(d), panel, nodes)
    n, M = d.shape
    p = np.empty((n, M))
    D = np.empty((n, M, M)) if jacobian else None
    for rows in _chunks(n, t.size * M):
        log_cdf, log_ratio = _gaussian_terms(d[rows], t)
        S = log_cdf.sum(axis=2, keepdims=True)
        p[rows] = np.einsum("q,nqm->nm", wt, _exp(S + log_ratio))
        if jacobian:
            D[rows] = _jacobian_from_columns(np.sqrt(wt)[None, :, None] * _exp(S / 2.0 + log_ratio))
    return p, D


def gaussian_routing(x: np.ndarray, jacobian: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """p (n, M) for r_j ~ N(0, 1) iid and gates x (n, M); with `jacobian`, ∂p/∂x (n, M, M).

    The error estimate is the gap between 12- and 20-node rules on the same panels; panels are
    halved until it is ≤ GAUSSIAN_TOL (absolute, every entry), so p is accurate to ~1e-15 (a clear
    winner's p ≥ 15/16 to ~1 ulp, as 1 − the others' sum: `_complement_leader`). The
    window reaches down to half the largest gap, so small p_m keep their relative accuracy
    down to ~1e-300 (gates more than 60 below the top get p_m = 0; the truth is < 1e-390). x (n, M)
    real and finite with n, M >= 1.
    """
    return _gaussian_routing(_gates(x, "x"), validate.flag(jacobian, "jacobian"))


def _gaussian_routing(x: np.ndarray, jacobian: bool) -> tuple[np.ndarray, np.ndarray | None]:
    with np.errstate(over="ignore"):  # a gap beyond the float range is −inf, then clipped
        d = np.maximum(x - x.max(axis=1, keepdims=True), -60.0)
    panel = 0.5
    for _ in range(5):
        coarse, _ = _gaussian_once(d, panel, 12, False)
        p, D = _gaussian_once(d, panel, 20, jacobian)
        if np.abs(p - coarse).max() <= GAUSSIAN_TOL:
            return _complement_leader(np.minimum(p, 1.0)), D
        panel /= 2.0
    raise RuntimeError(f"Gaussian routing quadrature did not reach {GAUSSIAN_TOL} with panels of {panel}")


LEADER_COMPLEMENT = 1.0 / 16.0  # the others' total below which a winner's p is 1 − (their sum)


def _complement_leader(p: np.ndarray) -> np.ndarray:
    """p with each row's leader set to 1 − Σ_{m ≠ leader} p_m where that sum is ≤ LEADER_COMPLEMENT.

    The quadrature is accurate to ~1e-15 absolute and small p_m to ~1e-14 relative, so near 1 the
    leader's own integral loses digits to round-off (M = 2, p = Φ(gap/√2): up to 2.7e-15 = 24 ulp,
    e.g. at gap −7.5675 where p ≈ 1 − 4e-8), while 1 − (the others' sum) is within ~1 ulp: the
    others add at most ~1e-14 × 1/16. Rows without such a leader keep their quadrature values.
    """
    lead = np.argmax(p, axis=1)
    rows = np.arange(p.shape[0])
    others = np.where(np.arange(p.shape[1]) == lead[:, None], 0.0, p).sum(axis=1)
    clear = others <= LEADER_COMPLEMENT
    p[rows[clear], lead[clear]] = 1.0 - others[clear]
    return p


def gaussian_self_sensitivity(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """∂p_0/∂x_0 for N(0, 1) noise and its gradient in x, for a batch x (n, M) with M ≥ 2.

    ∂p_0/∂x_0 = E φ(Y − x_0), Y = max_{j≥1} (x_j + r_j). Integrating by parts,
    ∂/∂x_k E φ(Y − x_0) = −∫ (t − x_0) φ(t − x_0) φ(t − x_k) Π_{j≠0,k} Φ(t − x_j) dt (k ≥ 1), and the
    x_0 component is minus the sum of the others. The objective of the tightness search.
    """
    x = _gates(x, "x", least=2)
    with np.errstate(over="ignore"):
        d = np.maximum(x - x.max(axis=1, keepdims=True), -60.0)
    t, wt = _gaussian_nodes(_gaussian_window(d), 0.25, 20)
    log_cdf, log_ratio = _gaussian_terms(d, t)
    S_rest = log_cdf[:, :, 1:].sum(axis=2)  # log Π_{j≥1} Φ(t − x_j)
    z0 = t[None, :] - d[:, :1]
    phi0 = np.exp(-0.5 * z0 * z0 - _LOG_SQRT_2PI)
    pair = _exp(S_rest[:, :, None] + log_ratio[:, :, 1:])  # φ(t − x_k) Π_{j≥1, j≠k} Φ(t − x_j)
    value = np.einsum("q,nq,nqk->n", wt, phi0, pair)
    grad = np.empty_like(x)
    grad[:, 1:] = -np.einsum("q,nq,nqk->nk", wt, z0 * phi0, pair)
    grad[:, 0] = -grad[:, 1:].sum(axis=1)
    return value, grad
