"""Numba twins of pieces of _ops' array math whose NumPy form makes many short strided passes: col2im (a
convolution's input gradient adding every kernel tap's window back) and 2x2 max pooling and its gradient. _ops calls it for NumPy arrays with the JIT
on; its array math stays what CuPy and NUMBA_DISABLE_JIT run, and the tests compare the two bit for bit (the
same sums in the same order).
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
def max_pool_2x2(x, top, width):
    """top = the maximum of each 2x2 tile of flat float32 x, whose rows (`width` long) pair up exactly, folded
    in row-major order as _tile_max folds its taps with np.maximum (the same NaNs and signs of zero)."""
    wo = width // 2
    for row in range(top.size // wo):       # a row of tiles: input rows 2 * row and 2 * row + 1
        for z in range(wo):
            i = 2 * row * width + 2 * z
            top[row * wo + z] = _max(_max(_max(x[i], x[i + 1]), x[i + width]), x[i + width + 1])
    return top


@numba.njit(cache=True, nogil=True)
def max_pool_2x2_grad(x, top, g, gx, width):
    """gx = g at the first maximum of each 2x2 tile of x (its first NaN where the tile holds one), +0 elsewhere:
    _max_pool2d_tiles_grad for NCHW 2x2 tiles whose rows, `width` long, pair up exactly, on flat float32 x and
    top and on g's and gx's bits (flat int32 views; g without -0). Branch-free: a tile's winner is data, and a
    mispredicted branch costs more than the ands that replace it."""
    wo = width // 2
    for row in range(top.size // wo):       # a row of tiles: input rows 2 * row and 2 * row + 1
        for z in range(wo):
            k, i = row * wo + z, 2 * row * width + 2 * z
            t, v = top[k], g[k]
            a, b, c = x[i], x[i + 1], x[i + width]
            nan = np.int32(t != t)
            ha = np.int32(a == t) | (nan & np.int32(a != a))
            hb = (np.int32(b == t) | (nan & np.int32(b != b))) & (1 - ha)
            hc = (np.int32(c == t) | (nan & np.int32(c != c))) & (1 - (ha | hb))
            hd = 1 - (ha | hb | hc)
            gx[i] = v & -ha
            gx[i + 1] = v & -hb
            gx[i + width] = v & -hc
            gx[i + width + 1] = v & -hd
    return gx
