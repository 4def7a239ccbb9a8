"""The tiles of the structured kernels (`lab.kernels.structured`): samples sorted by expert, four at a time.

`_tiles` groups the samples by routed expert (a stable counting sort within blocks of `BLOCK`
consecutive samples, `_block_tiles`, which the cubic step also runs per block inside its chunks) and
cuts each group into tiles of `TILE` samples; `_tile_noise` copies a tile's
noise patches into rows of one width, `_tile_noise_z` and `_tile_noise_gradient` are the dense work
on them (4 × 2 register tiles of dot products over d, and `_add_four_rows`), `_tile_noise_z_by_filters` and
`_tile_noise_gradient_by_filters` the same work with the filters last (vectors of filters in
registers, `lab.kernels._simd`; the cubic step), and `_signal_z` / `_tile_gradient` the signal
patches' scalar terms of (3.1) and (E.2). `_chunks` fixes the reduction chunks by n alone (determinism).
Numba's cache does not follow imports: after editing this module, delete
`lab/kernels/__pycache__/*.nb*` so that the kernels calling it recompile.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from lab.kernels._shared import _add_four_rows
from lab.kernels._simd import lanes, vadd, vfma, vload, vstore, vzero

TILE = 4  # samples of one expert per tile
CHUNKS = 16  # reduction chunks at most, each of ≥ 512 samples: fewer (M, J, d) buffers to zero and add
BLOCK = 256  # consecutive samples grouped by expert together (their noise patches fit in L2)


@njit(cache=True, error_model="numpy")
def _signal_z(G, b, index, scale, i, m, zrow):
    """zrow[t, j] = s_{i,t} G_{m,r,j} + b_{m,j} for sample i's signal patches t: ⟨w, s u + o⟩ (Def. 3.1)."""
    for t in range(index.shape[1]):
        r, s = index[i, t], scale[i, t]
        for j in range(G.shape[2]):
            zrow[t, j] = s * G[m, r, j] + b[m, j]


@njit(cache=True, error_model="numpy", inline="always")
def _tile_rows(order, tiles, t):
    """The expert, the number of valid samples and the four sample indices of tile t (the last repeated)."""
    start, count, m = tiles[t, 0], tiles[t, 1], tiles[t, 2]
    i0 = order[start]
    i1 = order[start + min(1, count - 1)]
    i2 = order[start + min(2, count - 1)]
    i3 = order[start + min(3, count - 1)]
    return m, count, i0, i1, i2, i3


@njit(cache=True, error_model="numpy", inline="always")
def _tile_noise(noise, i0, i1, i2, i3, xtile):
    """xtile[a, q, :d] = ξ_{i_a, q}: the tile's noise patches in rows of `_row_width` (the rest stays 0)."""
    d = noise.shape[2]
    for a, i in enumerate((i0, i1, i2, i3)):
        for q in range(noise.shape[1]):
            for k in range(d):
                xtile[a, q, k] = noise[i, q, k]


@njit(cache=True, error_model="numpy")
def _tile_noise_z(xtile, W, m, S, ztile):
    """ztile[a, S:] (Q, J) = the noise patches' pre-activations of the tile's sample a under expert m,
    4 × 2 tiles."""
    Q, d, J = xtile.shape[1], xtile.shape[2], W.shape[1]
    zero = xtile.dtype.type(0)
    for q in range(Q):
        x0, x1, x2, x3 = xtile[0, q], xtile[1, q], xtile[2, q], xtile[3, q]
        p = S + q
        j = 0
        while j + 2 <= J:
            u0, u1 = W[m, j], W[m, j + 1]
            s00 = s01 = s10 = s11 = s20 = s21 = s30 = s31 = zero
            for k in range(d):
                a0, a1, a2, a3 = x0[k], x1[k], x2[k], x3[k]
                c0, c1 = u0[k], u1[k]
                s00 += a0 * c0
                s01 += a0 * c1
                s10 += a1 * c0
                s11 += a1 * c1
                s20 += a2 * c0
                s21 += a2 * c1
                s30 += a3 * c0
                s31 += a3 * c1
            ztile[0, p, j], ztile[0, p, j + 1] = s00, s01
            ztile[1, p, j], ztile[1, p, j + 1] = s10, s11
            ztile[2, p, j], ztile[2, p, j + 1] = s20, s21
            ztile[3, p, j], ztile[3, p, j + 1] = s30, s31
            j += 2
        while j < J:
            u = W[m, j]
            s0 = s1 = s2 = s3 = zero
            for k in range(d):
                s0 += u[k] * x0[k]
                s1 += u[k] * x1[k]
                s2 += u[k] * x2[k]
                s3 += u[k] * x3[k]
            ztile[0, p, j], ztile[1, p, j], ztile[2, p, j], ztile[3, p, j] = s0, s1, s2, s3
            j += 1


@njit(cache=True, error_model="numpy", inline="always")
def _sample_offsets(P, p, Jp):
    """The flat offsets of patch p's row in each sample of a (4, P, Jp) tile."""
    return p * Jp, (P + p) * Jp, (2 * P + p) * Jp, (3 * P + p) * Jp


@njit(cache=True, error_model="numpy")
def _rows4(v, o0, o1, o2, o3):
    """The vectors of v (flat) at four offsets."""
    return vload(v, o0), vload(v, o1), vload(v, o2), vload(v, o3)


@njit(cache=True, error_model="numpy")
def _fma4(r, x0, x1, x2, x3, g0, g1, g2, g3):
    """r + x0 g0 + x1 g1 + x2 g2 + x3 g3 (scalars x, vectors g)."""
    return vfma(vfma(vfma(vfma(r, x0, g0), x1, g1), x2, g2), x3, g3)


@njit(cache=True, error_model="numpy", inline="always")
def _tile_noise_z_by_filters(xtile, w, Jp, m, Jc, z, S):
    """z (the tile's (4, P, Jp) pre-activations, flat) [a, S:, :Jc] = the noise patches' pre-activations
    of sample a under expert m, from w = Wt (M, d, Jp) flat (filters last; Jc ≤ Jp a whole number of
    vectors): for each k, x_{a,k} times a vector of filters added to a vector in a register
    (`lab.kernels._simd`), 4 samples × 4, 2 or 1 vectors (the last with even and odd k apart)."""
    Q, d, L = xtile.shape[1], xtile.shape[2], lanes(w)
    P = z.shape[0] // (TILE * Jp)
    for q in range(Q):
        o0, o1, o2, o3 = _sample_offsets(P, S + q, Jp)
        j = 0
        while j + 4 * L <= Jc:
            a0, a1, a2, a3 = vzero(w), vzero(w), vzero(w), vzero(w)
            b0, b1, b2, b3 = vzero(w), vzero(w), vzero(w), vzero(w)
            c0, c1, c2, c3 = vzero(w), vzero(w), vzero(w), vzero(w)
            e0, e1, e2, e3 = vzero(w), vzero(w), vzero(w), vzero(w)
            for k in range(d):
                at = (m * d + k) * Jp + j
                u0, u1, u2, u3 = _rows4(w, at, at + L, at + 2 * L, at + 3 * L)
                x = xtile[0, q, k]
                a0, b0, c0, e0 = vfma(a0, x, u0), vfma(b0, x, u1), vfma(c0, x, u2), vfma(e0, x, u3)
                x = xtile[1, q, k]
                a1, b1, c1, e1 = vfma(a1, x, u0), vfma(b1, x, u1), vfma(c1, x, u2), vfma(e1, x, u3)
                x = xtile[2, q, k]
                a2, b2, c2, e2 = vfma(a2, x, u0), vfma(b2, x, u1), vfma(c2, x, u2), vfma(e2, x, u3)
                x = xtile[3, q, k]
                a3, b3, c3, e3 = vfma(a3, x, u0), vfma(b3, x, u1), vfma(c3, x, u2), vfma(e3, x, u3)
            for o, row in (
                (o0, (a0, b0, c0, e0)),
                (o1, (a1, b1, c1, e1)),
                (o2, (a2, b2, c2, e2)),
                (o3, (a3, b3, c3, e3)),
            ):
                for v in range(4):
                    vstore(z, o + j + v * L, row[v])
            j += 4 * L
        while j + 2 * L <= Jc:
            a0, a1, a2, a3 = vzero(w), vzero(w), vzero(w), vzero(w)
            b0, b1, b2, b3 = vzero(w), vzero(w), vzero(w), vzero(w)
            for k in range(d):
                at = (m * d + k) * Jp + j
                u0, u1 = vload(w, at), vload(w, at + L)
                x = xtile[0, q, k]
                a0, b0 = vfma(a0, x, u0), vfma(b0, x, u1)
                x = xtile[1, q, k]
                a1, b1 = vfma(a1, x, u0), vfma(b1, x, u1)
                x = xtile[2, q, k]
                a2, b2 = vfma(a2, x, u0), vfma(b2, x, u1)
                x = xtile[3, q, k]
                a3, b3 = vfma(a3, x, u0), vfma(b3, x, u1)
            for o, u, v in ((o0, a0, b0), (o1, a1, b1), (o2, a2, b2), (o3, a3, b3)):
                vstore(z, o + j, u)
                vstore(z, o + j + L, v)
            j += 2 * L
        if j < Jc:  # one vector: the even and odd k in separate sums, eight chains of FMAs in flight
            a0, a1, a2, a3 = vzero(w), vzero(w), vzero(w), vzero(w)
            b0, b1, b2, b3 = vzero(w), vzero(w), vzero(w), vzero(w)
            for k in range(0, d - 1, 2):
                at = (m * d + k) * Jp + j
                u0, u1 = vload(w, at), vload(w, at + Jp)
                a0, b0 = vfma(a0, xtile[0, q, k], u0), vfma(b0, xtile[0, q, k + 1], u1)
                a1, b1 = vfma(a1, xtile[1, q, k], u0), vfma(b1, xtile[1, q, k + 1], u1)
                a2, b2 = vfma(a2, xtile[2, q, k], u0), vfma(b2, xtile[2, q, k + 1], u1)
                a3, b3 = vfma(a3, xtile[3, q, k], u0), vfma(b3, xtile[3, q, k + 1], u1)
            if d % 2:
                u0 = vload(w, (m * d + d - 1) * Jp + j)
                a0, a1 = vfma(a0, xtile[0, q, d - 1], u0), vfma(a1, xtile[1, q, d - 1], u0)
                a2, a3 = vfma(a2, xtile[2, q, d - 1], u0), vfma(a3, xtile[3, q, d - 1], u0)
            vstore(z, o0 + j, vadd(a0, b0))
            vstore(z, o1 + j, vadd(a1, b1))
            vstore(z, o2 + j, vadd(a2, b2))
            vstore(z, o3 + j, vadd(a3, b3))


@njit(cache=True, error_model="numpy", inline="always")
def _tile_noise_gradient_by_filters(xtile, g, Jp, Jc, r, base, S):
    """r (flat) [base + k·Jp + j] += Σ_a Σ_q ξ_{i_a, q, k} g_a[S + q, j], j < Jc: the noise patches' terms
    of (E.2) with filters last (g the tile's (4, P, Jp) coefficients, flat), the tile's g in
    registers and each row of the (d, Jp) sums loaded and stored once per 4 samples."""
    Q, d, L = xtile.shape[1], xtile.shape[2], lanes(g)
    P = g.shape[0] // (TILE * Jp)
    for q in range(Q):
        o0, o1, o2, o3 = _sample_offsets(P, S + q, Jp)
        j = 0
        while j + 4 * L <= Jc:
            g0, g1, g2, g3 = _rows4(g, o0 + j, o1 + j, o2 + j, o3 + j)
            h0, h1, h2, h3 = _rows4(g, o0 + j + L, o1 + j + L, o2 + j + L, o3 + j + L)
            e0, e1, e2, e3 = _rows4(g, o0 + j + 2 * L, o1 + j + 2 * L, o2 + j + 2 * L, o3 + j + 2 * L)
            f0, f1, f2, f3 = _rows4(g, o0 + j + 3 * L, o1 + j + 3 * L, o2 + j + 3 * L, o3 + j + 3 * L)
            for k in range(d):
                at = base + k * Jp + j
                x0, x1, x2, x3 = xtile[0, q, k], xtile[1, q, k], xtile[2, q, k], xtile[3, q, k]
                r0, r1, r2, r3 = _rows4(r, at, at + L, at + 2 * L, at + 3 * L)
                vstore(r, at, _fma4(r0, x0, x1, x2, x3, g0, g1, g2, g3))
                vstore(r, at + L, _fma4(r1, x0, x1, x2, x3, h0, h1, h2, h3))
                vstore(r, at + 2 * L, _fma4(r2, x0, x1, x2, x3, e0, e1, e2, e3))
                vstore(r, at + 3 * L, _fma4(r3, x0, x1, x2, x3, f0, f1, f2, f3))
            j += 4 * L
        while j + 2 * L <= Jc:
            g0, g1, g2, g3 = _rows4(g, o0 + j, o1 + j, o2 + j, o3 + j)
            h0, h1, h2, h3 = _rows4(g, o0 + j + L, o1 + j + L, o2 + j + L, o3 + j + L)
            for k in range(d):
                at = base + k * Jp + j
                x0, x1, x2, x3 = xtile[0, q, k], xtile[1, q, k], xtile[2, q, k], xtile[3, q, k]
                r0, r1 = vload(r, at), vload(r, at + L)
                vstore(r, at, _fma4(r0, x0, x1, x2, x3, g0, g1, g2, g3))
                vstore(r, at + L, _fma4(r1, x0, x1, x2, x3, h0, h1, h2, h3))
            j += 2 * L
        if j < Jc:
            g0, g1, g2, g3 = _rows4(g, o0 + j, o1 + j, o2 + j, o3 + j)
            for k in range(d):
                at = base + k * Jp + j
                x0, x1, x2, x3 = xtile[0, q, k], xtile[1, q, k], xtile[2, q, k], xtile[3, q, k]
                vstore(r, at, _fma4(vload(r, at), x0, x1, x2, x3, g0, g1, g2, g3))


@njit(cache=True, error_model="numpy")
def _tile_z(G, b, index, scale, xtile, i0, i1, i2, i3, W, m, ztile):
    """ztile[a] (S + Q, J) = the pre-activations of sample i_a under expert m; noise by 4 × 2 tiles."""
    _tile_noise_z(xtile, W, m, index.shape[1], ztile)
    _signal_z(G, b, index, scale, i0, m, ztile[0])
    _signal_z(G, b, index, scale, i1, m, ztile[1])
    _signal_z(G, b, index, scale, i2, m, ztile[2])
    _signal_z(G, b, index, scale, i3, m, ztile[3])


@njit(cache=True, error_model="numpy")
def _tile_noise_gradient(xtile, S, gtile, grad):
    """grad (J, d) += Σ_a Σ_q g_a[S + q, j] ξ_{i_a, q}: the noise patches' terms of (E.2), four samples
    by four filters (`lab.kernels._shared._add_four_rows`)."""
    for q in range(xtile.shape[1]):
        p = S + q
        _add_four_rows(
            xtile[0, q], xtile[1, q], xtile[2, q], xtile[3, q],
            gtile[0, p], gtile[1, p], gtile[2, p], gtile[3, p],
            grad,
        )  # fmt: skip


@njit(cache=True, error_model="numpy")
def _tile_gradient(index, scale, xtile, i0, i1, i2, i3, gtile, grad, A, B):
    """grad (J, d) += the noise terms (`_tile_noise_gradient`); the signal scalars A (R, J), B (J,)."""
    S, J = index.shape[1], gtile.shape[2]
    _tile_noise_gradient(xtile, S, gtile, grad)
    for a, i in enumerate((i0, i1, i2, i3)):
        for t in range(S):
            r, s = index[i, t], scale[i, t]
            for j in range(J):
                A[r, j] += s * gtile[a, t, j]
                B[j] += gtile[a, t, j]


def _chunks(n):
    """Reduction chunks for n samples: a function of n only (each chunk holds an (M, J, d) buffer), and
    even from 1,024 samples on, so that two threads get equal shares (15 chunks made one wait)."""
    if n < 1024:
        return 1
    return 2 * min(CHUNKS // 2, n // 1024)


@njit(cache=True, error_model="numpy", inline="always")
def _block_tiles(routes, lo, hi, order, bounds, tiles):
    """The samples lo ≤ i < hi grouped by expert (a stable counting sort into order[: hi − lo]), and
    their tiles (start in order, samples ≤ TILE, expert) in tiles[: returned count]; bounds (M + 1,)
    is scratch. Tiles never span two experts, so a block of b samples has at most b // TILE + M."""
    M = bounds.shape[0] - 1
    bounds[:] = 0
    for i in range(lo, hi):
        bounds[routes[i] + 1] += 1
    for m in range(M):
        bounds[m + 1] += bounds[m]
    t = 0
    for m in range(M):
        for a in range(bounds[m], bounds[m + 1], TILE):
            tiles[t, 0], tiles[t, 1], tiles[t, 2] = a, min(TILE, bounds[m + 1] - a), m
            t += 1
    for i in range(lo, hi):  # bounds[m]: expert m's next free slot
        order[bounds[routes[i]]] = i
        bounds[routes[i]] += 1
    return t


@njit(cache=True, error_model="numpy")
def _tiles(routes, M, block):
    """Samples grouped by expert within blocks of `block` consecutive samples (`_block_tiles`), and tiles
    (T, 3) of (start in that order, samples <= TILE, expert): a block's noise stays in cache."""
    n = routes.shape[0]
    blocks = (n + block - 1) // block
    order = np.empty(n, dtype=np.int64)
    tiles = np.empty((n // TILE + blocks * M, 3), dtype=np.int64)
    local = np.empty((block // TILE + M, 3), dtype=np.int64)
    bounds = np.empty(M + 1, dtype=np.int64)
    t = 0
    for k in range(blocks):
        lo, hi = k * block, min(n, (k + 1) * block)
        for u in range(_block_tiles(routes, lo, hi, order[lo:hi], bounds, local)):
            tiles[t, 0], tiles[t, 1], tiles[t, 2] = lo + local[u, 0], local[u, 1], local[u, 2]
            t += 1
    return order, tiles[:t]
