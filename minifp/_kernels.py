"""Numba twins of pieces of _ops' array math whose NumPy form makes many short strided passes: col2im (a
convolution's input gradient adding every kernel tap's window back), and 2x2 max pooling of channels-last data
and its gradient. _ops calls them for NumPy arrays with the JIT on; their array math stays what CuPy and
NUMBA_DISABLE_JIT run, and the tests compare the two bit for bit (the same sums in the same order).
"""
from __future__ import annotations

import numba
import numpy as np

from ._rounding import JIT

__all__ = ["native", "col2im", "max_pool_2x2", "max_pool_2x2_grad"]


def native(xp, *arrays):
    """Whether the kernels serve: NumPy arrays, the JIT on, every array C-contiguous."""
    return JIT and xp is np and all(type(a) is np.ndarray and a.flags.c_contiguous for a in arrays)


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
    x's shape; g without -0). Branch-free: a tile's winner is data, and a mispredicted branch costs more than
    the ands that replace it. The last tap wins where no other did, top being the tile's maximum."""
    n, ho, wo, c = top.shape
    for a in range(n):
        for y in range(ho):
            for z in range(wo):
                for k in range(c):
                    t, v = top[a, y, z, k], g[a, y, z, k]
                    p, q, r = x[a, 2 * y, 2 * z, k], x[a, 2 * y, 2 * z + 1, k], x[a, 2 * y + 1, 2 * z, k]
                    nan = np.int32(t != t)
                    hp = np.int32(p == t) | (nan & np.int32(p != p))
                    hq = (np.int32(q == t) | (nan & np.int32(q != q))) & (1 - hp)
                    hr = (np.int32(r == t) | (nan & np.int32(r != r))) & (1 - (hp | hq))
                    gx[a, 2 * y, 2 * z, k] = v & -hp
                    gx[a, 2 * y, 2 * z + 1, k] = v & -hq
                    gx[a, 2 * y + 1, 2 * z, k] = v & -hr
                    gx[a, 2 * y + 1, 2 * z + 1, k] = v & -(1 - (hp | hq | hr))
    return gx
