"""A Numba twin of a piece of _ops' array math whose NumPy form makes many short strided passes: col2im (a
convolution's input gradient adding every kernel tap's window back). _ops calls it for NumPy arrays with the JIT
on; its array math stays what CuPy and NUMBA_DISABLE_JIT run, and the tests compare the two bit for bit (the
same sums in the same order).
"""
from __future__ import annotations

import numba
import numpy as np

from ._rounding import JIT

__all__ = ["native", "col2im"]


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
