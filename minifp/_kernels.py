"""Numba twins of two pieces of _ops' array math whose NumPy form makes many short strided passes: the
max-pool gradient over windows that tile the input, and col2im (a convolution's input gradient adding every
kernel tap's window back). _ops calls these for NumPy arrays with the JIT on; its array math stays what CuPy
and NUMBA_DISABLE_JIT run, and the tests compare the two bit for bit (the same comparisons, the same sums in
the same order). On the PyTorch face's small CNN (benchmarks/torch_face.py) they take a float32 step from
about 31 to 22 ms on the 2-core machine.
"""
from __future__ import annotations

import numba
import numpy as np

from ._rounding import JIT

__all__ = ["native", "max_tiles_grad", "col2im"]


def native(xp, *arrays):
    """Whether the kernels serve: NumPy arrays, the JIT on, every array C-contiguous."""
    return JIT and xp is np and all(type(a) is np.ndarray and a.flags.c_contiguous for a in arrays)


def max_tiles_grad(x, g, kh, kw, channels_last):
    """The gradient of max pooling over kh x kw windows that tile x (stride == kernel, no padding): g at each
    window's first maximum (its first NaN where it holds one; g + 0, so -0 lands as +0), 0 everywhere else."""
    out = np.empty(x.shape, g.dtype)
    if channels_last:                       # (N, H, W, C) as it is
        _max_tiles_grad(x, g, kh, kw, out)
    else:                                   # (N, C, H, W) as (N*C, H, W, 1): one kernel for both layouts
        n, c, h, w = x.shape
        _max_tiles_grad(x.reshape(n * c, h, w, 1), g.reshape(n * c, g.shape[2], g.shape[3], 1), kh, kw,
                        out.reshape(n * c, h, w, 1))
    return out


@numba.njit(cache=True, nogil=True)
def _max_tiles_grad(x, g, kh, kw, out):
    """max_tiles_grad on (A, H, W, B) arrays. The fold keeps the first of equal maxima (>=) and turns to the
    first NaN, so the last tap it took is the window's first maximum: the array math's argmax."""
    out[:] = 0
    for a in range(g.shape[0]):
        for i in range(g.shape[1]):
            for j in range(g.shape[2]):
                for b in range(g.shape[3]):
                    top, at_p, at_q = x[a, i * kh, j * kw, b], 0, 0
                    for p in range(kh):
                        for q in range(kw):
                            v = x[a, i * kh + p, j * kw + q, b]
                            if not (top >= v or top != top):
                                top, at_p, at_q = v, p, q
                    out[a, i * kh + at_p, j * kw + at_q, b] = g[a, i, j, b] + 0
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
