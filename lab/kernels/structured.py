"""Numba kernels of the routed MoE layer on a batch given by its structure (Chen et al. 2022, Def. 3.1).

Patch t < S of sample i is s_{i,t} u_{r_{i,t}} + o (a scalar times one of the R = 2K signals, plus the
constant input coordinates o); the other Q = P − S patches are noise, kept whole. So ⟨w_{m,j}, x⁽ᵗ⁾⟩ =
s_{i,t} G_{m,r,j} + b_{m,j} with G = ⟨w, u_r⟩ and b = ⟨w, o⟩ computed once per call, and the signal patches'
terms of (E.2) add up as scalars A_{m,r,j} (and B_{m,j} for o) before one small product with the signals.
The NumPy twins are in `lab.kernels.structured_numpy`.

The noise patches are the only dense work left; with Q = 1 (P = 4) too few for the patch-by-filter tiles of
`lab.kernels.routed`. So the kernels here group the samples by expert (`lab.kernels._tiles`: a stable
counting sort of the routes within blocks of consecutive samples) and work on tiles of four samples of one
expert: the forward by two filters, the gradient by four (with two it was bound by the stores), each tile's
noise rows padded to `_row_width` (whole vector strides), W alike. The cubic step, which every table's
nonlinear model runs, keeps the filters last instead, on pairs of tiles (`_filters_last`,
`_pair_noise_z_by_filters`): samples times machine vectors of filters in registers, no horizontal sums
(`lab.kernels._simd`); each of its chunks sorts its own blocks (`_block_tiles`), zeroes its own buffers and
ends in one jitted epilogue (`_cubic_gradient`). The other activations keep the dot-product tiles.

Each kernel is a GIL-free loop over chunks on the lab's threads (`lab.kernels._threads`), as deterministic
as `lab.kernels.routed`: tiles fixed by the routes, chunks by n, added in chunk order. z (n, S + Q, J) lists
the signal patches first. The names in `__all__` check their arguments with `lab.kernels._checks` (the
twins' checks); the float arrays and sums are in the dtype of `noise` (a literal 0.0 would make Numba add
float32 products in float64, at half the SIMD width). The fused step's readout weights a_j (3.1) let one
pass serve the two half-logits of a non-odd σ, and it evaluates σ and σ' together (`_sigma_and_prime`). For
tanh, NumPy's SIMD `np.exp` first tabulates u = e^{−2z} (`_tabulated`), and the step takes tanh z and sech²
z = 4u/(1 + u)² from it, never 1 − tanh² z, which cancels to 0 where tanh z rounds to ±1. For the cubic σ
the signal patches need no per-filter work: Σ_j a_j (s G_{r,j} + b_j)³ is a cubic in s with coefficients per
(expert, signal) (`cubic_signal_sums`), whose terms of (E.2) follow from four sums Σ coef·s^k; its noise
pre-activations below `cube_floor` count as 0 (no subnormal cubes from filters shrunk toward 0). Numba's
cache does not follow the helpers these loops inline from `lab.kernels.routed` or call from
`lab.kernels._tiles`: after editing them delete `lab/kernels/__pycache__/*.nb*`. The dot-product tile
helpers are plain calls (inlined, they doubled the compile time); the cubic step's are inlined, on flat
views made once per call (as calls they cost a quarter of the MoE's step at 16 filters).
"""

from __future__ import annotations

import math
import threading

import numpy as np
from numba import njit

from lab.kernels import _checks
from lab.kernels._checks import MARGIN_LOSS_CODES
from lab.kernels._simd import empty_aligned, lanes
from lab.kernels._threads import ROWS, over_threads
from lab.kernels._tiles import (
    BLOCK,
    TILE,
    _block_tiles,
    _chunks,
    _filters_last,
    _pair_noise_gradient_by_filters,
    _pair_noise_z_by_filters,
    _signal_z,
    _tile_gradient,
    _tile_noise,
    _tile_rows,
    _tile_z,
    _tiles,
)
from lab.kernels.activations import ACTIVATION_CODES
from lab.kernels.routed import (
    _expert_on_sample,
    _logistic_slope,
    _sech2,
    _sigma,
    _sigma_and_prime,
    _sigma_prime,
    _slopes,
    _sum_buffers,
)
from lab.kernels.structured_numpy import signal_gradient, signal_products

__all__ = [
    "MARGIN_LOSS_CODES",
    "structured_backward",
    "structured_dense_forward",
    "structured_forward",
    "structured_step",
]

CUBIC, LINEAR, TANH = (ACTIVATION_CODES[name] for name in ("cubic", "linear", "tanh"))
_TABLES = threading.local()  # `_table_buffer`'s array and its (shape, dtype), per thread


@njit(cache=True, error_model="numpy", inline="always")
def _readout_and_primes(z, e, readout, act):
    """Σ_{p,j} a_j σ(z_{p,j}) (3.1), a = readout, and z (P, J) overwritten with σ'(z); for tanh e (P, J) holds
    e^{−2z} (`_tabulated`), codes ≥ 3 make one transcendental call for σ and σ', the rest none."""
    total = 0.0
    if act == TANH:  # with u = e^{−2|z|}: tanh z = ±(1 − u)/(1 + u), sech² z = 4u/(1 + u)², both exact
        for p in range(z.shape[0]):
            for j in range(z.shape[1]):
                u = e[p, j]
                sign = 1.0
                if u > 1.0:  # z < 0: u = e^{2|z|} (inf past |z| ≈ 354, where 1/u = 0 is right)
                    u, sign = 1.0 / u, -1.0
                r = 1.0 / (1.0 + u)
                total += readout[j] * (sign * (1.0 - u) * r)
                z[p, j] = 4.0 * u * r * r
        return total
    if act >= 3:
        for p in range(z.shape[0]):
            for j in range(z.shape[1]):
                value, z[p, j] = _sigma_and_prime(z[p, j], act)
                total += readout[j] * value
        return total
    for p in range(z.shape[0]):
        for j in range(z.shape[1]):
            total += readout[j] * _sigma(z[p, j], act)
    for p in range(z.shape[0]):
        for j in range(z.shape[1]):
            z[p, j] = _sigma_prime(z[p, j], act)
    return total


def _table_buffer(shape: tuple, dtype) -> np.ndarray:
    """The (n, P, J) array `_tabulated` fills, kept per thread for the next call of that shape: a fresh
    one costs more in first-touch page faults (29 ms for a 128-filter single) than the table saves."""
    if getattr(_TABLES, "key", None) != (shape, dtype):
        _TABLES.key, _TABLES.array = (shape, dtype), np.empty(shape, dtype=dtype)
    return _TABLES.array


def _tabulated(z: np.ndarray) -> np.ndarray:
    """e^{−2z} at every pre-activation z (n, P, J), in place by NumPy's SIMD ufuncs, for tanh z and sech² z
    without cancellation (`_readout_and_primes`): about 15 times the rate of Numba's scalar libm calls."""
    with np.errstate(over="ignore"):  # e^{−2z} = inf past z ≈ −354: sech² z = 0 and tanh z = −1 there
        return np.exp(np.multiply(z, -2.0, out=z), out=z)


@njit(cache=True, error_model="numpy")
def _margin_slope(margin, loss):
    """d loss / d margin by `MARGIN_LOSS_CODES`: ℓ'(m), or ℓ'(t)(1 − t²)/2 with t = tanh(m/2) (3.3)."""
    if loss == 0:
        return _logistic_slope(margin)
    return _logistic_slope(math.tanh(0.5 * margin)) * 0.5 * _sech2(0.5 * margin)


@njit(cache=True, error_model="numpy", fastmath=True, nogil=True)
def _structured_forward_chunks(lo, hi, chunks, G, b, index, scale, noise, W, order, tiles, act, f, z):
    """Chunks lo..hi − 1 of the tiles, each sample through its routed expert: f_{m_i}(x_i) (3.1) into f
    and z (n, S + Q, J) filled, tile by tile; W's rows have `_row_width`."""
    Q, P, J = noise.shape[1], index.shape[1] + noise.shape[1], W.shape[1]
    T = tiles.shape[0]
    ztile = np.empty((TILE, P, J), dtype=noise.dtype)
    xtile = np.zeros((TILE, Q, W.shape[2]), dtype=noise.dtype)
    for c in range(lo, hi):
        for t in range(c * T // chunks, (c + 1) * T // chunks):
            m, count, i0, i1, i2, i3 = _tile_rows(order, tiles, t)
            _tile_noise(noise, i0, i1, i2, i3, xtile)
            _tile_z(G, b, index, scale, xtile, i0, i1, i2, i3, W, m, ztile)
            for a in range(count):
                i = order[tiles[t, 0] + a]
                total = 0.0
                for p in range(P):
                    for j in range(J):
                        z[i, p, j] = ztile[a, p, j]
                        total += _sigma(ztile[a, p, j], act)
                f[i] = total


@njit(cache=True, error_model="numpy", fastmath=True, nogil=True)
def _structured_backward_chunks(
    lo, hi, chunks, index, scale, noise, z, order, tiles, coef, act, buffers, A, B
):
    """Chunks lo..hi − 1: chunk c's noise patches' sum in (E.2) into buffers[c] (M, J, width), in rows of
    `_row_width`, and its signal scalars into A[c] (M, R, J), B[c] (M, J)."""
    Q, width = noise.shape[1], buffers.shape[3]
    P, J = z.shape[1], z.shape[2]
    T = tiles.shape[0]
    gtile = np.zeros((TILE, P, J), dtype=noise.dtype)
    xtile = np.zeros((TILE, Q, width), dtype=noise.dtype)
    for c in range(lo, hi):
        for t in range(c * T // chunks, (c + 1) * T // chunks):
            m, count, i0, i1, i2, i3 = _tile_rows(order, tiles, t)
            _tile_noise(noise, i0, i1, i2, i3, xtile)
            for a in range(TILE):
                if a < count:
                    i = order[tiles[t, 0] + a]
                    _slopes(z[i], coef[i], act, gtile[a])
                else:
                    gtile[a] = 0.0  # a repeated sample: computed, never counted
            _tile_gradient(index, scale, xtile, i0, i1, i2, i3, gtile, buffers[c, m], A[c, m], B[c, m])


@njit(cache=True, error_model="numpy", fastmath=True, nogil=True)
def _structured_step_chunks(
    lo,
    hi,
    chunks,
    G,
    b,
    index,
    scale,
    noise,
    W,
    readout,
    order,
    tiles,
    margin_scale,
    act,
    loss,
    table,
    f,
    buffers,
    A,
    B,
):
    """Chunks lo..hi − 1 of the fused forward and backward of mean_i loss(s_i f_{m_i}(x_i)) (3.3), tile by
    tile (E.2): f_i into f, chunk c's sums into buffers[c], A[c], B[c]; `table` (n, P, J) holds e^{−2z}
    for σ = tanh (`_tabulated`), else it is (n, 0, 0); W's rows have `_row_width`."""
    n, Q, D = noise.shape[0], noise.shape[1], W.shape[2]
    P, J = index.shape[1] + Q, W.shape[1]
    T = tiles.shape[0]
    ztile = np.empty((TILE, P, J), dtype=noise.dtype)
    xtile = np.zeros((TILE, Q, D), dtype=noise.dtype)
    for c in range(lo, hi):
        for t in range(c * T // chunks, (c + 1) * T // chunks):
            m, count, i0, i1, i2, i3 = _tile_rows(order, tiles, t)
            _tile_noise(noise, i0, i1, i2, i3, xtile)
            if act != TANH:  # tanh needs only the table
                _tile_z(G, b, index, scale, xtile, i0, i1, i2, i3, W, m, ztile)
            for a in range(TILE):
                if a < count:
                    i = order[tiles[t, 0] + a]
                    f[i] = _readout_and_primes(ztile[a], table[i], readout, act)
                    slope = _margin_slope(margin_scale[i] * f[i], loss) * margin_scale[i] / n
                    coef = noise.dtype.type(slope)
                    for p in range(P):
                        for j in range(J):
                            ztile[a, p, j] *= coef * readout[j]
                else:
                    ztile[a] = 0.0  # a repeated sample: computed, never counted
            _tile_gradient(index, scale, xtile, i0, i1, i2, i3, ztile, buffers[c, m], A[c, m], B[c, m])


def cube_floor(dtype):
    """About the least |z| whose cube is a normal number of `dtype` (∛ of its smallest): the cubic step counts
    a noise pre-activation below it as 0, not as a subnormal cube (which a CPU may take in microcode)."""
    return np.dtype(dtype).type(np.cbrt(np.finfo(dtype).tiny))


@njit(cache=True, error_model="numpy")
def cubic_signal_sums(G, b, readout):
    """C (M, R, 4), C_k = Σ_j a_j G_{m,r,j}^k b_{m,j}^{3−k}: Σ_j a_j (s G + b)³ = Σ_k binom(3, k) s^k C_k,
    so a signal patch s u_r + o adds a cubic in s to f (3.1), whatever the number of filters."""
    M, R, J = G.shape
    C = np.zeros((M, R, 4), dtype=G.dtype)
    for m in range(M):
        for r in range(R):
            for j in range(J):
                g, bj, a = G[m, r, j], b[m, j], readout[j]
                C[m, r, 0] += a * bj * bj * bj
                C[m, r, 1] += a * g * bj * bj
                C[m, r, 2] += a * g * g * bj
                C[m, r, 3] += a * g * g * g
    return C


@njit(cache=True, error_model="numpy")
def _cubic_gradient(buffers, sums, G, b, readout, signals, offset):
    """∇W (M, J, d) of (E.2) for σ = z³: the noise patches' sums (chunks, M, d, Jp) added in chunk order,
    plus Σ_r A_r u_r + B o, with A (M, R, J), B (M, J) from the sums S_k (chunks, M, R, 4) of coef·s^k
    over each expert's patches of signal r: A = 3a(G²S₃ + 2GbS₂ + b²S₁), B = 3a Σ_r (G²S₂ + 2GbS₁ + b²S₀)."""
    chunks, M, D, R, J = buffers.shape[0], buffers.shape[1], buffers.shape[2], G.shape[1], G.shape[2]
    noise_sum = _sum_buffers(buffers.reshape(chunks, -1)).reshape(M, D, buffers.shape[3])
    grad, S = np.empty((M, J, D), dtype=buffers.dtype), np.empty((R, 4), dtype=buffers.dtype)
    for m in range(M):  # scalar loops, not array expressions: the same sums, 0.65 instead of 1.1 s to compile
        for j in range(J):
            for k in range(D):
                grad[m, j, k] = noise_sum[m, k, j]
        for r in range(R):
            for q in range(4):
                total = buffers.dtype.type(0)
                for c in range(chunks):
                    total += sums[c, m, r, q]
                S[r, q] = total
        for j in range(J):
            three_a, bj = 3.0 * readout[j], b[m, j]
            B = 0.0
            for r in range(R):
                g = G[m, r, j]
                A = three_a * (g * g * S[r, 3] + 2.0 * g * bj * S[r, 2] + bj * bj * S[r, 1])
                B += g * g * S[r, 2] + 2.0 * g * bj * S[r, 1] + bj * bj * S[r, 0]
                for k in range(D):
                    grad[m, j, k] += A * signals[r, k]
            for k in range(D):
                grad[m, j, k] += three_a * B * offset[k]
    return grad


@njit(cache=True, error_model="numpy", fastmath=True, nogil=True)
def _structured_step_cubic_chunks(
    lo, hi, chunks, C, index, scale, noise, Wt, readout, routes, margin_scale, loss, floor, f, buffers, sums
):
    """`_structured_step_chunks` for σ(z) = z³, signal patches in closed form: patch (s, r) adds
    ((C₃s + 3C₂)s + 3C₁)s + C₀ to f (C = `cubic_signal_sums`) and coef·s^k to the sums S_k of its (expert,
    signal) (`_cubic_gradient`). Noise products run with filters last: Wt (M, d, Jp), on two tiles of one
    expert at a time (an unpaired tile is padded with its last sample, never added), from `noise` in place."""
    n, Q, D = noise.shape[0], noise.shape[1], noise.shape[2]
    S, M, Jp = index.shape[1], Wt.shape[0], Wt.shape[2]
    J, L = readout.shape[0], lanes(Wt)
    Jc = -(-J // L) * L
    blocks = -(-n // BLOCK)
    zero, three = noise.dtype.type(0), noise.dtype.type(3)
    w, sum_rows = Wt.reshape(-1), buffers.reshape(-1)  # flat views made once, not per pair
    ztile = np.zeros((2 * TILE, Q, Jp), dtype=noise.dtype)  # the pair's noise pre-activations
    z, pair = ztile.reshape(-1), np.empty(2 * TILE, dtype=np.int64)
    order, bounds = np.empty(BLOCK, dtype=np.int64), np.empty(M + 1, dtype=np.int64)
    tiles = np.empty((BLOCK // TILE + M, 3), dtype=np.int64)
    for c in range(lo, hi):
        buffers[c] = zero  # each chunk zeroes its own buffers, on its own thread
        sums[c] = zero
        for block in range(c * blocks // chunks, (c + 1) * blocks // chunks):
            lo, hi = block * BLOCK, min(n, (block + 1) * BLOCK)
            T, t = _block_tiles(routes, lo, hi, order, bounds, tiles), 0
            while t < T:
                m = tiles[t, 2]
                width = 2 if t + 1 < T and tiles[t + 1, 2] == m else 1  # tiles in the pair
                _, _, pair[0], pair[1], pair[2], pair[3] = _tile_rows(order, tiles, t)
                if width == 2:
                    _, _, pair[4], pair[5], pair[6], pair[7] = _tile_rows(order, tiles, t + 1)
                else:
                    pair[TILE:] = pair[TILE - 1]
                _pair_noise_z_by_filters(noise, pair, w, Jp, m, Jc, z)
                for a in range(2 * TILE):
                    u = t + a // TILE
                    if a // TILE < width and a % TILE < tiles[u, 1]:
                        i = order[tiles[u, 0] + a % TILE]
                        for q in range(Q):
                            for j in range(J):
                                if abs(ztile[a, q, j]) < floor:  # `cube_floor`
                                    ztile[a, q, j] = zero
                        total = zero
                        for q in range(Q):
                            for j in range(J):
                                v = ztile[a, q, j]
                                total += readout[j] * (v * v * v)
                        for p in range(S):
                            r, s = index[i, p], scale[i, p]
                            c0, c1, c2, c3 = C[m, r, 0], C[m, r, 1], C[m, r, 2], C[m, r, 3]
                            total += ((c3 * s + three * c2) * s + three * c1) * s + c0
                        f[i] = total
                        slope = _margin_slope(margin_scale[i] * total, loss) * margin_scale[i] / n
                        coef = noise.dtype.type(slope)
                        for q in range(Q):
                            for j in range(J):
                                v = ztile[a, q, j]
                                ztile[a, q, j] = three * v * v * coef * readout[j]
                        for p in range(S):
                            r, s = index[i, p], scale[i, p]
                            sums[c, m, r, 0] += coef
                            sums[c, m, r, 1] += coef * s
                            sums[c, m, r, 2] += coef * s * s
                            sums[c, m, r, 3] += coef * s * s * s
                    else:
                        ztile[a] = 0.0  # a repeated sample: computed, never counted
                _pair_noise_gradient_by_filters(noise, pair, z, Jp, Jc, sum_rows, (c * M + m) * D * Jp, width)
                t += width


@njit(cache=True, error_model="numpy", fastmath=True, nogil=True)
def _structured_dense_forward_rows(lo, hi, G, b, index, scale, noise, W, act, out):
    """Every expert on samples lo..hi − 1, f_m(x_i) (3.1), into out (n, M), from the structure."""
    M, J = W.shape[0], W.shape[1]
    S = index.shape[1]
    zrow = np.empty((S + noise.shape[1], J), dtype=noise.dtype)
    for i in range(lo, hi):
        for m in range(M):
            total = _expert_on_sample(noise, i, W, m, zrow[S:], act)
            _signal_z(G, b, index, scale, i, m, zrow)
            for t in range(S):
                for j in range(J):
                    total += _sigma(zrow[t, j], act)
            out[i, m] = total


# ------------------------------------------------------------------ checked entry points (see `_checks`)


def _row_width(d: int, dtype: np.dtype) -> int:
    """Row width in the tile loops: float32 rows zero-padded to a multiple of 32, LLVM's stride over d (a
    512-filter single's step 21.5 instead of 30.4 ms); float64 rows as they are (padding cost more)."""
    return -(-d // 32) * 32 if dtype == np.float32 else d


def _signal_parts(signals, offset, index, scale, W, dtype):
    """The arrays in `dtype` (contiguous) with G and b of `signal_products`, and W in `dtype`."""
    signals, offset, scale, W = (np.ascontiguousarray(a, dtype=dtype) for a in (signals, offset, scale, W))
    G, b = signal_products(signals, offset, W)
    return G, np.ascontiguousarray(b), np.ascontiguousarray(index, dtype=np.int64), scale, W


def _prepared(signals, offset, index, scale, noise, W):
    """`_signal_parts` in noise's dtype, with W's rows zero-padded to `_row_width`."""
    G, b, index, scale, W = _signal_parts(signals, offset, index, scale, W, noise.dtype)
    d = W.shape[2]
    width = _row_width(d, noise.dtype)
    if width > d:
        W = np.concatenate([W, np.zeros((*W.shape[:2], width - d), dtype=noise.dtype)], axis=2)
    return G, b, index, scale, W


def _in_order(buffers, signals, offset, A, B):
    """∇W of (E.2): the chunks' noise sums (chunks, M, J, ≥ d) added in chunk order, plus the signal part
    from the chunks' scalars A (chunks, M, R, J), B (chunks, M, J) (serial NumPy, small)."""
    dtype = buffers.dtype
    signals, offset = signals.astype(dtype, copy=False), offset.astype(dtype, copy=False)
    noise_sum = buffers.sum(axis=0)[..., : signals.shape[1]]
    return noise_sum + signal_gradient(signals, offset, A.sum(axis=0), B.sum(axis=0))


def structured_forward(signals, offset, signal_index, signal_scale, noise, W, routes, act):
    """f_{m_i}(x_i) (3.1) and z (n, S + Q, J) of each sample's routed expert, from the structure."""
    signals, offset, index, scale, noise, W, routes, act = _checks.structured_forward(
        signals, offset, signal_index, signal_scale, noise, W, routes, act
    )
    G, b, index, scale, W = _prepared(signals, offset, index, scale, noise, W)
    z = np.empty((noise.shape[0], index.shape[1] + noise.shape[1], W.shape[1]), dtype=noise.dtype)
    return _forward(G, b, index, scale, noise, W, *_tiles(routes, W.shape[0], BLOCK), act, z)


def _forward(G, b, index, scale, noise, W, order, tiles, act, z):
    """f (n,) and z filled by `_structured_forward_chunks` over the chunks of n (`_chunks`)."""
    chunks, f = _chunks(noise.shape[0]), np.empty(noise.shape[0], dtype=noise.dtype)
    over_threads(
        _structured_forward_chunks, chunks, chunks, G, b, index, scale, noise, W, order, tiles, act, f, z
    )
    return f, z


def structured_backward(signals, offset, signal_index, signal_scale, noise, z, routes, coef, M, act):
    """Σ_{i: m_i = m} coef_i Σ_p σ'(z_{i,p,j}) x_i⁽ᵖ⁾ for each (m, j): the sum in (E.2), shape (M, J, d)."""
    signals, offset, index, scale, noise, z, routes, coef, M, act = _checks.structured_backward(
        signals, offset, signal_index, signal_scale, noise, z, routes, coef, M, act
    )
    scale, coef = (np.ascontiguousarray(a, dtype=noise.dtype) for a in (scale, coef))
    index = np.ascontiguousarray(index, dtype=np.int64)
    order, tiles = _tiles(routes, M, BLOCK)
    chunks, width = _chunks(noise.shape[0]), _row_width(noise.shape[2], noise.dtype)
    J, dtype = z.shape[2], noise.dtype
    buffers = np.zeros((chunks, M, J, width), dtype=dtype)
    A, B = np.zeros((chunks, M, signals.shape[0], J), dtype=dtype), np.zeros((chunks, M, J), dtype=dtype)
    over_threads(
        _structured_backward_chunks,
        chunks,
        chunks,
        index,
        scale,
        noise,
        z,
        order,
        tiles,
        coef,
        act,
        buffers,
        A,
        B,
    )
    return _in_order(buffers, signals, offset, A, B)


def structured_step(
    signals, offset, signal_index, signal_scale, noise, W, routes, margin_scale, act, loss, readout=None
):
    """f (n,) with f_m = Σ_j a_j Σ_p σ(z_{p,j}) (3.1), a = `readout` (all 1 if None), and ∇_W of
    mean_i loss(s_i f_i) (3.3) by (E.2), loss by `MARGIN_LOSS_CODES`, in one pass."""
    args = _checks.structured_step(
        signals, offset, signal_index, signal_scale, noise, W, routes, margin_scale, act, loss, readout
    )
    signals, offset, index, scale, noise, W, routes, margin_scale, act, loss, readout = args
    margin_scale = np.ascontiguousarray(margin_scale, dtype=noise.dtype)
    readout = np.array(readout, dtype=noise.dtype)  # a writeable copy: a read-only one compiles anew
    if act == CUBIC:  # each chunk of the cubic step sorts its own blocks of samples
        G, b, index, scale, W = _signal_parts(signals, offset, index, scale, W, noise.dtype)
        C, Wt, (n, _, d) = cubic_signal_sums(G, b, readout), _filters_last(W), noise.shape
        chunks = _chunks(n)
        f = np.empty(n, dtype=noise.dtype)
        buffers = empty_aligned((chunks, W.shape[0], d, Wt.shape[2]), noise.dtype)
        sums = np.empty((chunks, W.shape[0], G.shape[1], 4), dtype=noise.dtype)
        step = (C, index, scale, noise, Wt, readout, routes, margin_scale, loss, cube_floor(noise.dtype))
        step += (f, buffers, sums)
        over_threads(_structured_step_cubic_chunks, chunks, chunks, *step)
        signals, offset = (np.ascontiguousarray(a, dtype=noise.dtype) for a in (signals, offset))
        return f, _cubic_gradient(buffers, sums, G, b, readout, signals, offset)
    order, tiles = _tiles(routes, W.shape[0], BLOCK)
    G, b, index, scale, W = _prepared(signals, offset, index, scale, noise, W)
    table = np.empty((noise.shape[0], 0, 0), dtype=noise.dtype)
    if act == TANH:  # z once, here; the step reads σ and σ' from the table alone
        z = _table_buffer((noise.shape[0], index.shape[1] + noise.shape[1], W.shape[1]), noise.dtype)
        table = _tabulated(_forward(G, b, index, scale, noise, W, order, tiles, LINEAR, z)[1])
    (M, J, D), n = W.shape, noise.shape[0]  # D: the padded `_row_width`
    chunks = _chunks(n)
    f = np.empty(n, dtype=noise.dtype)
    buffers = np.zeros((chunks, M, J, D), dtype=noise.dtype)
    A, B = (
        np.zeros((chunks, M, G.shape[1], J), dtype=noise.dtype),
        np.zeros((chunks, M, J), dtype=noise.dtype),
    )
    step = (
        G,
        b,
        index,
        scale,
        noise,
        W,
        readout,
        order,
        tiles,
        margin_scale,
        act,
        loss,
        table,
        f,
        buffers,
        A,
        B,
    )
    over_threads(_structured_step_chunks, chunks, chunks, *step)
    return f, _in_order(buffers, signals, offset, A, B)


def structured_dense_forward(signals, offset, signal_index, signal_scale, noise, W, act):
    """Every expert on every sample, f_m(x_i) (3.1), shape (n, M), from the structure."""
    signals, offset, index, scale, noise, W, act = _checks.structured_dense_forward(
        signals, offset, signal_index, signal_scale, noise, W, act
    )
    G, b, index, scale, W = _prepared(signals, offset, index, scale, noise, W)
    out = np.empty((noise.shape[0], W.shape[0]), dtype=noise.dtype)
    args = (G, b, index, scale, noise, W, act, out)
    over_threads(_structured_dense_forward_rows, noise.shape[0], *args, grain=ROWS)
    return out
