"""The tiles of the structured kernels (`lab.kernels.structured`): samples sorted by expert, four at a time.

`_tiles` groups the samples by routed expert (a stable counting sort within blocks of `BLOCK`
consecutive samples, `_block_tiles`, which the cubic step also runs per block inside its chunks) and
cuts each group into tiles of `TILE` samples; `_tile_noise` copies a tile's
noise patches into rows of one width, `_tile_noise_z` and `_tile_noise_gradient` are the dense work
on them (4 × 2 register tiles of dot products over d, and `_add_four_rows`), `_pair_noise_z_by_filters`
and `_pair_noise_gradient_by_filters` the same work with the filters last on two tiles at once,
read from the noise in place (vectors of filters in registers, `lab.kernels._simd`; the cubic
step, in the layout of `_filters_last`), and `_signal_z` / `_tile_gradient` the signal
patches' scalar terms of (3.1) and (E.2). `_chunks` fixes the reduction chunks by n alone (determinism).

The cubic step takes two tiles of one expert at a time, eight samples, read from the noise in place:
each row of Wt, and with one noise patch each row of the gradient's sums, is then loaded once per
eight samples instead of four (a 128-filter expert's (d, Jp) rows are 54 KB in float64, more than L1
here), with the same bits (a sample's products keep their order over k, and the sums add tile by
tile, patch by patch, as before). The
kernel alone, same process, alternating: a 128-filter single 4.9 → 4.3 ms in float64 and 2.8 → 2.5
ms in float32, the MoE's (16 filters) 1.18 → 1.00 and 1.13 → 0.83 ms.

Numba's cache does not follow imports: after editing this module, delete
`lab/kernels/__pycache__/*.nb*` so that the kernels calling it recompile.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from lab.kernels._shared import _add_four_rows
from lab.kernels._simd import lanes, vadd, vfma, vload, vstore, vzero, zeros_aligned

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


def _filters_last(W):
    """Wt (M, d, Jp) = W (M, J, d) with its filters last, zero-padded to Jp, an odd number of vectors
    (`lab.kernels._simd`): the layout of `_pair_noise_z_by_filters`. An even number would put a
    power-of-two stride between the rows (4 KB at 512 float64 filters), whose loads then share one
    L1 set: the 512-filter single's step took 91 instead of 22 ms."""
    L = lanes(W)
    vectors = -(-W.shape[1] // L)
    Wt = zeros_aligned((W.shape[0], W.shape[2], (vectors | 1) * L), W.dtype)
    Wt[:, :, : W.shape[1]] = W.transpose(0, 2, 1)
    return Wt


@njit(cache=True, error_model="numpy")
def _rows4(v, o0, o1, o2, o3):
    """The vectors of v (flat) at four offsets."""
    return vload(v, o0), vload(v, o1), vload(v, o2), vload(v, o3)


@njit(cache=True, error_model="numpy")
def _fma4(r, x0, x1, x2, x3, g0, g1, g2, g3):
    """r + x0 g0 + x1 g1 + x2 g2 + x3 g3 (scalars x, vectors g), added in that order."""
    return vfma(vfma(vfma(vfma(r, x0, g0), x1, g1), x2, g2), x3, g3)


@njit(cache=True, error_model="numpy", inline="always")
def _pair_noise_z_by_filters(noise, ids, w, Jp, m, Jc, z):
    """z (the pair's (8, Q, Jp) pre-activations, flat) [a, q, :Jc] = ⟨w_{m,j}, ξ_{ids[a], q}⟩ from
    w = Wt (M, d, Jp) flat (filters last; Jc ≤ Jp a whole number of vectors): for each k, ξ_{a,k} times
    a vector of filters added to a vector in a register (`lab.kernels._simd`), eight samples × two
    vectors; an odd last vector takes the even and odd k in separate sums, sixteen chains in flight."""
    Q, d, L = noise.shape[1], noise.shape[2], lanes(w)
    i0, i1, i2, i3, i4, i5, i6, i7 = ids[0], ids[1], ids[2], ids[3], ids[4], ids[5], ids[6], ids[7]
    row = Q * Jp  # one sample's rows of z
    for q in range(Q):
        j = 0
        while j + 2 * L <= Jc:
            a0, a1, a2, a3 = vzero(w), vzero(w), vzero(w), vzero(w)
            a4, a5, a6, a7 = vzero(w), vzero(w), vzero(w), vzero(w)
            b0, b1, b2, b3 = vzero(w), vzero(w), vzero(w), vzero(w)
            b4, b5, b6, b7 = vzero(w), vzero(w), vzero(w), vzero(w)
            for k in range(d):
                at = (m * d + k) * Jp + j
                u0, u1 = vload(w, at), vload(w, at + L)
                x0, x1, x2, x3 = noise[i0, q, k], noise[i1, q, k], noise[i2, q, k], noise[i3, q, k]
                x4, x5, x6, x7 = noise[i4, q, k], noise[i5, q, k], noise[i6, q, k], noise[i7, q, k]
                a0, b0, a1, b1 = vfma(a0, x0, u0), vfma(b0, x0, u1), vfma(a1, x1, u0), vfma(b1, x1, u1)
                a2, b2, a3, b3 = vfma(a2, x2, u0), vfma(b2, x2, u1), vfma(a3, x3, u0), vfma(b3, x3, u1)
                a4, b4, a5, b5 = vfma(a4, x4, u0), vfma(b4, x4, u1), vfma(a5, x5, u0), vfma(b5, x5, u1)
                a6, b6, a7, b7 = vfma(a6, x6, u0), vfma(b6, x6, u1), vfma(a7, x7, u0), vfma(b7, x7, u1)
            o = q * Jp + j
            for a, (u, v) in enumerate(((a0, b0), (a1, b1), (a2, b2), (a3, b3))):
                vstore(z, o + a * row, u)
                vstore(z, o + a * row + L, v)
            o += 4 * row
            for a, (u, v) in enumerate(((a4, b4), (a5, b5), (a6, b6), (a7, b7))):
                vstore(z, o + a * row, u)
                vstore(z, o + a * row + L, v)
            j += 2 * L
        if j < Jc:
            a0, a1, a2, a3 = vzero(w), vzero(w), vzero(w), vzero(w)
            a4, a5, a6, a7 = vzero(w), vzero(w), vzero(w), vzero(w)
            b0, b1, b2, b3 = vzero(w), vzero(w), vzero(w), vzero(w)
            b4, b5, b6, b7 = vzero(w), vzero(w), vzero(w), vzero(w)
            for k in range(0, d - 1, 2):
                at = (m * d + k) * Jp + j
                u0, u1 = vload(w, at), vload(w, at + Jp)
                a0, b0 = vfma(a0, noise[i0, q, k], u0), vfma(b0, noise[i0, q, k + 1], u1)
                a1, b1 = vfma(a1, noise[i1, q, k], u0), vfma(b1, noise[i1, q, k + 1], u1)
                a2, b2 = vfma(a2, noise[i2, q, k], u0), vfma(b2, noise[i2, q, k + 1], u1)
                a3, b3 = vfma(a3, noise[i3, q, k], u0), vfma(b3, noise[i3, q, k + 1], u1)
                a4, b4 = vfma(a4, noise[i4, q, k], u0), vfma(b4, noise[i4, q, k + 1], u1)
                a5, b5 = vfma(a5, noise[i5, q, k], u0), vfma(b5, noise[i5, q, k + 1], u1)
                a6, b6 = vfma(a6, noise[i6, q, k], u0), vfma(b6, noise[i6, q, k + 1], u1)
                a7, b7 = vfma(a7, noise[i7, q, k], u0), vfma(b7, noise[i7, q, k + 1], u1)
            if d % 2:
                u0, k = vload(w, (m * d + d - 1) * Jp + j), d - 1
                a0, a1 = vfma(a0, noise[i0, q, k], u0), vfma(a1, noise[i1, q, k], u0)
                a2, a3 = vfma(a2, noise[i2, q, k], u0), vfma(a3, noise[i3, q, k], u0)
                a4, a5 = vfma(a4, noise[i4, q, k], u0), vfma(a5, noise[i5, q, k], u0)
                a6, a7 = vfma(a6, noise[i6, q, k], u0), vfma(a7, noise[i7, q, k], u0)
            o = q * Jp + j
            for a, v in enumerate((vadd(a0, b0), vadd(a1, b1), vadd(a2, b2), vadd(a3, b3))):
                vstore(z, o + a * row, v)
            o += 4 * row
            for a, v in enumerate((vadd(a4, b4), vadd(a5, b5), vadd(a6, b6), vadd(a7, b7))):
                vstore(z, o + a * row, v)


@njit(cache=True, error_model="numpy", inline="always")
def _pair_noise_gradient_by_filters(noise, ids, g, Jp, Jc, r, base, width):
    """r (flat) [base + k·Jp + j] += Σ_a Σ_q ξ_{ids[a], q, k} g_a[q, j], j < Jc: the noise patches' terms
    of (E.2) with filters last (g the pair's (8, Q, Jp) coefficients, flat) for the pair's `width` tiles,
    added tile by tile and patch by patch within a tile, as four samples at a time add them. With one
    patch (Q = 1) and two tiles that order is the eight samples in order, so each row of the (d, Jp)
    sums is loaded and stored once per eight samples; else once per tile and patch."""
    Q, d, L = noise.shape[1], noise.shape[2], lanes(g)
    row, fused = Q * Jp, Q == 1 and width == 2
    for half in range(1 if fused else width):
        a = TILE * half  # the pass's first sample; with `fused` the pass has eight
        i0, i1, i2, i3 = ids[a], ids[a + 1], ids[a + 2], ids[a + 3]
        i4, i5, i6, i7 = ids[4], ids[5], ids[6], ids[7]
        for q in range(Q):
            j = 0
            while j < Jc:
                two = j + 2 * L <= Jc  # else one vector, the last
                o, p = (a * Q + q) * Jp + j, (a * Q + q) * Jp + j + (L if two else 0)
                g0, g1, g2, g3 = _rows4(g, o, o + row, o + 2 * row, o + 3 * row)
                h0, h1, h2, h3 = _rows4(g, p, p + row, p + 2 * row, p + 3 * row)
                g4, g5, g6, g7 = g0, g1, g2, g3  # samples 4..7, past the pair's rows unless fused
                h4, h5, h6, h7 = h0, h1, h2, h3
                if fused:
                    o, p = o + 4 * row, p + 4 * row
                    g4, g5, g6, g7 = _rows4(g, o, o + row, o + 2 * row, o + 3 * row)
                    h4, h5, h6, h7 = _rows4(g, p, p + row, p + 2 * row, p + 3 * row)
                for k in range(d):
                    at = base + k * Jp + j
                    x0, x1, x2, x3 = noise[i0, q, k], noise[i1, q, k], noise[i2, q, k], noise[i3, q, k]
                    r0 = _fma4(vload(r, at), x0, x1, x2, x3, g0, g1, g2, g3)
                    r1 = _fma4(vload(r, at + L), x0, x1, x2, x3, h0, h1, h2, h3) if two else r0
                    if fused:
                        x4, x5, x6, x7 = noise[i4, q, k], noise[i5, q, k], noise[i6, q, k], noise[i7, q, k]
                        r0 = _fma4(r0, x4, x5, x6, x7, g4, g5, g6, g7)
                        r1 = _fma4(r1, x4, x5, x6, x7, h4, h5, h6, h7)
                    vstore(r, at, r0)
                    if two:
                        vstore(r, at + L, r1)
                j += 2 * L if two else L


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
