"""Numba twins of pieces of _ops' array math whose NumPy form makes many short strided passes or temporaries:
col2im (a convolution's input gradient adding every kernel tap's window back), 2x2 max pooling of channels-last
data and its gradient, and a gradient masked by a condition. _ops calls them for NumPy arrays with the JIT on;
their array math stays what CuPy and NUMBA_DISABLE_JIT run, and the tests compare the two bit for bit (the same
sums in the same order).
"""
from __future__ import annotations

import numba
import numpy as np

from ._rounding import JIT, _memory_order

__all__ = ["native", "shared_order", "col2im", "masked", "max_pool_2x2", "max_pool_2x2_grad"]


def native(xp, *arrays):
    """Whether the kernels serve: NumPy arrays, the JIT on, every array C-contiguous."""
    return JIT and xp is np and all(type(a) is np.ndarray and a.flags.c_contiguous for a in arrays)


def shared_order(*arrays):
    """(the arrays with their axes permuted into the memory order they share, the permutation back) where each
    is C-contiguous in it (C order itself, or a convolution's channels-last NCHW view), else None."""
    bases, back = [], None
    for a in arrays:
        base, b = (a, tuple(range(a.ndim))) if a.flags.c_contiguous else _memory_order(a)
        if base is None or back is not None and b != back:
            return None
        bases.append(base)
        back = b
    return bases, back


@numba.njit(cache=True, nogil=True)
def masked(keep, g, out):
    """out = g where keep holds, else 0, on flat arrays of g's bits (integer views, so inf and NaN pass as
    they are): _ops._masked in one pass and no temporaries."""
    for i in range(g.size):
        out[i] = g[i] if keep[i] else 0
    return out


@numba.njit(cache=True, nogil=True)
def col2im(gcols, gx, sh, sw, dh, dw):
    """gx[n, i*dh + y*sh, j*dw + z*sw, c] += gcols[n, y, z, i, j, c] for every tap (i, j) in row-major order
    (_untap_last's sums, element by element in the same order); gcols (N, Ho, Wo, kh, kw, C), gx (N, H, W, C)."""
    n, ho, wo, kh, kw, c = gcols.shape
    for a in range(n):
        for i in range(kh):
            for j in range(kw):
                for y in range(ho):
                    for z in range(wo):
                        r, s = i * dh + y * sh, j * dw + z * sw
                        for k in range(c):
                            gx[a, r, s, k] += gcols[a, y, z, i, j, k]
    return gx


@numba.njit(cache=True, nogil=True, inline="always")
def _max(a, b):
    """np.maximum(a, b): a's NaN, else b's, else the larger; b on ties (of +0 and -0 too)."""
    return a if a > b or a != a else b


@numba.njit(cache=True, nogil=True)
def max_pool_2x2(x, top):
    """top[n, y, z, c] = the maximum of channel c's 2x2 tile at (2y, 2z) in float32 channels-last x (N, 2*Ho,
    2*Wo, C), folded in row-major order as _tile_max folds its taps with np.maximum (the same NaNs and signs of
    zero); top (N, Ho, Wo, C). The runs of channels vectorise."""
    n, ho, wo, c = top.shape
    for a in range(n):
        for y in range(ho):
            for z in range(wo):
                for k in range(c):
                    top[a, y, z, k] = _max(_max(_max(x[a, 2 * y, 2 * z, k], x[a, 2 * y, 2 * z + 1, k]),
                                                x[a, 2 * y + 1, 2 * z, k]), x[a, 2 * y + 1, 2 * z + 1, k])
    return top


@numba.njit(cache=True, nogil=True)
def max_pool_2x2_grad(x, top, g, gx):
    """gx = g at the first maximum of each 2x2 tile of x (its first NaN where the tile holds one), +0 elsewhere:
    _max_pool2d_tiles_grad for max_pool_2x2's arrays, on g's and gx's bits (int32 views, (N, Ho, Wo, C) and
    x's shape; g without -0). Two passes whose loops over runs of channels vectorise (one loop doing both
    does not: 1.1 against 0.4 ms at 64x28x28x16): which tap is each tile's first maximum (the last where no
    other is, top being the tile's maximum), then g or 0 into every tap. Branch-free: a tile's winner is
    data, and a mispredicted branch costs more than the ands that replace it."""
    n, ho, wo, c = top.shape
    first = np.empty(top.shape, np.int8)
    for a in range(n):
        for y in range(ho):
            for z in range(wo):
                for k in range(c):
                    t = top[a, y, z, k]
                    nan = np.int8(t != t)
                    p, q, r = x[a, 2 * y, 2 * z, k], x[a, 2 * y, 2 * z + 1, k], x[a, 2 * y + 1, 2 * z, k]
                    hp = np.int8(p == t) | (nan & np.int8(p != p))
                    hq = np.int8(q == t) | (nan & np.int8(q != q))
                    hr = np.int8(r == t) | (nan & np.int8(r != r))
                    first[a, y, z, k] = 3 - (hp | hq | hr) - (hp | hq) - hp
    for a in range(n):
        for y in range(ho):
            for i in range(2):
                for z in range(wo):
                    for j in range(2):
                        for k in range(c):
                            gx[a, 2 * y + i, 2 * z + j, k] = g[a, y, z, k] & -np.int32(first[a, y, z, k] == 2 * i + j)
    return gx
