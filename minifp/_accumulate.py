"""Low-precision accumulation: matmul, conv and the sum/mean reductions summing in a chosen format.

`minifp.accumulate(fmt, order)` (the context manager, state in _state.py) makes the ops that accumulate
(matmul, linear, conv2d, sum, mean) call `accumulating(xp, ...)`'s `matmul` and `sum` instead of BLAS's.
Each addition of the sum is rounded into the accumulator format `fmt`:

- "sequential": a fused multiply-add chain, s = round(s + a_k * b_k) for k = 0, 1, ..., with the product
  exact and one rounding per step (what an FMA accumulator does);
- "pairwise": the exact products summed as a binary tree, neighbours first ((p0 + p1) + (p2 + p3)) + ...,
  an odd element carried up unchanged, every addition rounded; the result is rounded once more (a no-op
  unless k == 1).

Exact: each rounded addition is the correctly rounded exact sum, the same as a float64 reference that
rounds after every addition wherever float64 holds that sum (always for float16 inputs in a float16
chain). The kernels add in float64 (products of float32 values need 48 bits: exact); where the float64
sum itself could be inexact in a way that matters (sum_mode decides per call, from the products' width and
the format's range), they make it round-to-odd from its error term (TwoSum, or Fast2Sum where that is
exact), so the second rounding into a format of at most 24 bits (<= 53 - 2) is still correct (Boldo and
Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to odd", 2008).

Chains of narrow products (float16, bfloat16, fp8 inputs) into float16 or a format with float32's exponents
(bfloat16, tf32) run in float32 lanes in minifp/_speed.py, twice as many per instruction, with the same bits.

The kernels are Numba loops parallel over output rows (prange). A row of partial sums (n float64, the
output row itself) stays in L1 while k runs, and the innermost loop runs along it: the rounding, branch-free,
vectorises across output columns, and the chains of different columns overlap their latencies. Sums
(sum, mean) are a row of ones times the values (reduced axes first): vectorised across the outputs, but one
row, so one thread.
"""
from __future__ import annotations

import functools
import math
import threading

import numba
import numpy as np
from numba import prange

from ._backend import to_numpy
from ._formats import Format, as_format
from . import _tensorcore
from ._cublas import cublas_slices
from ._intrinsics import bits64_of as _bits64, float64_of as _float64
from ._seams import SEAMS, seam
from ._state import Accumulator, accumulate_scope

__all__ = ["accumulate", "ORDERS"]

ORDERS = ("sequential", "pairwise")
_LOCK = threading.Lock()        # Numba's workqueue threading layer must not be entered by two threads at once


SIGN, MAGNITUDE = np.int64(-0x8000000000000000), np.int64(0x7FFFFFFFFFFFFFFF)


@functools.lru_cache(maxsize=None)
def constants(fmt: Format):
    """What _round64 needs of a format: (shift, half ulp - 1, smallest normal, magic, max, overflow value)."""
    shift = 52 - fmt.man_bits
    low = fmt.man_bits if fmt.subnormals else 0            # without subnormals 0 and 2**emin are neighbours
    over = float(fmt.decode(fmt.overflow_code))            # inf, max (saturating) or NaN (no infinities)
    return (np.int64(shift), np.int64((1 << (shift - 1)) - 1), 2.0 ** fmt.emin, 2.0 ** (fmt.emin - low + 52),
            float(fmt.decode(fmt.max_code)), over)


PLAIN, FAST_TWO_SUM, TWO_SUM = 0, 1, 2      # how _add makes float64's sum safe to round again


def sum_mode(fmt: Format, product_bits):
    """How _add must add s (a value of fmt) and p (of at most product_bits significant bits) so that rounding
    float64's sum into fmt gives the correctly rounded exact s + p.

    float64's sum is inexact only for far-apart magnitudes. If p is the smaller one (by 53 - product_bits
    binades or more), it moves s by far less than to a midpoint of fmt, as does a one-ulp nudge, when
    product_bits + fmt's precision <= 48. If s is the smaller one, p may lie on a midpoint that s decides:
    that cannot happen when fmt's whole range, from its quantum to 2**(emax + 1) (above: both overflow), fits
    in 53 bits (float16: 40; bfloat16: 261). So: PLAIN when both hold; FAST_TWO_SUM when only the first does
    (Fast2Sum's error s - (t - p) is exact where |p| >= |s|, the only case that needs it); TWO_SUM else."""
    low = fmt.man_bits if fmt.subnormals else 0
    span = math.frexp(float(fmt.decode(fmt.max_code)))[1] - (fmt.emin - low)    # 2**(emax + 1) to the quantum
    if product_bits + fmt.man_bits + 1 > 48:
        return TWO_SUM
    return PLAIN if span <= 53 else FAST_TWO_SUM


@numba.njit(cache=True)
def _round64(x, c):
    """The float64 x rounded to nearest-even into the format of constants c, as a float64; branch-free."""
    shift, half, min_normal, magic, big, over = c
    bx = _bits64(x)
    a = bx & MAGNITUDE
    # Normal results: add half an ulp minus one plus the kept ulp's own bit (ties to even), drop the bits;
    # a carry moves into the exponent by itself.
    r = _float64(np.right_shift(a + half + (np.right_shift(a, shift) & 1), shift) << shift)
    ax = _float64(a)
    # Below the smallest normal: float64's own nearest-even addition of 2**(emin - low + 52) rounds |x| to a
    # whole number of quanta.
    small = (ax + magic) - magic
    r = small if ax < min_normal else r
    r = over if r > big else r
    r = ax if ax != ax else r                               # NaN stays NaN (a + half may wrap for its bits)
    return _float64(_bits64(r) | (bx & SIGN))


@numba.njit(cache=True)
def _add(s, p, c, mode):
    """round(s + p) into the format of c, correctly rounded: unless mode is PLAIN, float64's sum is made
    round-to-odd where it is inexact, from its error term (see sum_mode)."""
    t = s + p
    if mode == PLAIN:
        return _round64(t, c)
    if mode == FAST_TWO_SUM:
        err = s - (t - p)
    else:
        bp = t - s
        err = (s - (t - bp)) + (p - bp)                     # TwoSum: s + p == t + err exactly
    b = _bits64(t)
    # Inexact with an even last bit (where every midpoint and value of a <= 51-bit format lies): one float64
    # ulp toward the exact sum (+1 in magnitude where err has t's sign), so the next rounding sees the side.
    fix = (err != 0) & ((b & 1) == 0) & (abs(t) < math.inf)
    step = np.int64(1) | np.right_shift(_bits64(err) ^ b, 63)
    return _round64(_float64(b + step) if fix else t, c)


@numba.njit(cache=True, parallel=True)
def _chain_matmul(a, b, out, c, mode):
    """out = a @ b, each output a sequential FMA chain over k rounded into c's format.

    A row of partial sums (out[i]) stays in L1 while k runs; the loop over its columns vectorises."""
    m, k = a.shape
    for i in prange(m):
        acc = out[i]
        acc[:] = 0.0
        for kk in range(k):
            aik = np.float64(a[i, kk])
            row = b[kk]
            for j in range(acc.size):
                acc[j] = _add(acc[j], aik * np.float64(row[j]), c, mode)


@numba.njit(cache=True, parallel=True)
def _pairwise_matmul(a, b, out, c):
    """out = a @ b, each output the pairwise sum of its exact products, every addition rounded (products of
    any size meet in the tree: always TWO_SUM).

    The tree is built as the products stream in, as a binary counter: stack[t] holds the sum of the last
    2**t products not yet paired; product number kk + 1 merges once per trailing zero of kk + 1. What is left
    at the end (one sum per set bit of k) is added from the smallest up, which is the level-by-level tree
    with an odd element carried up: (((p0 + p1) + (p2 + p3)) + ((p4 + p5) + p6)) for k = 7."""
    m, k = a.shape
    n = b.shape[1]
    depth = 1
    while (1 << depth) <= k:
        depth += 1
    for i in prange(m):
        stack = np.empty((depth, n))
        carry = np.empty(n)
        for kk in range(k):
            aik = np.float64(a[i, kk])
            row = b[kk]
            for j in range(n):
                carry[j] = aik * np.float64(row[j])
            t, x = 0, kk + 1
            while x & 1 == 0:
                for j in range(n):
                    carry[j] = _add(stack[t, j], carry[j], c, TWO_SUM)
                t, x = t + 1, x >> 1
            stack[t, :] = carry
        acc = out[i]
        acc[:] = 0.0
        first = True
        for t in range(depth):
            if (k >> t) & 1:
                if first:               # as it is: a lone product meets the next sum exact, as in the tree
                    acc[:] = stack[t]
                    first = False
                else:
                    for j in range(n):
                        acc[j] = _add(stack[t, j], acc[j], c, TWO_SUM)
        if k == 1:                      # a single product is rounded all the same
            for j in range(n):
                acc[j] = _add(acc[j], 0.0, c, TWO_SUM)


def matmul2d(a, b, fmt, order="sequential", fmt_in=None):
    """a (m, k) @ b (k, n), float32 or float64 arrays of values of fmt_in (None: any float32 values),
    accumulated in `fmt`; a float64 array of fmt's values."""
    out = np.empty((a.shape[0], b.shape[1]), np.float64)
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    with _LOCK, np.errstate(all="ignore"):     # without JIT: NaN bits wrap in _round64, harmlessly
        if order == "sequential":
            SEAMS.chain_matmul(a, b, out, fmt, fmt_in)
        else:
            _pairwise_matmul(a, b, out, constants(fmt))
    return out


@seam
def chain_matmul(a, b, out, fmt, fmt_in):
    """out = a @ b as sequential FMA chains into fmt (the products' width from fmt_in, None: float32's)."""
    bits = 2 * (24 if fmt_in is None else fmt_in.man_bits + 1)
    _chain_matmul(a, b, out, constants(fmt), sum_mode(fmt, bits))
    return out


def sum_columns(x, fmt, order="sequential", fmt_in=None):
    """Each column of the 2-D array x summed in `fmt` (sequentially in index order, or pairwise): a row of
    ones times x (x * 1 is exact), so the chains of the columns run side by side, vectorised."""
    return matmul2d(np.ones((1, x.shape[0]), x.dtype), x, fmt, order, fmt_in)[0]


class Accumulating:
    """An array namespace whose matmul and sum accumulate as an Accumulator says; everything else is xp's."""

    def __init__(self, xp, acc, fmt_in):
        self._xp, self._acc, self._fmt_in = xp, acc, fmt_in

    def __getattr__(self, name):
        return getattr(self._xp, name)

    def _back(self, out):
        """A host result on the arrays' own device (CuPy's: the emulation ran on the host)."""
        return out if self._xp is np else self._xp.asarray(out)

    def _matmul2d(self, a, b):
        acc = self._acc
        if acc.tensor_core is not None:
            split = {}
            if acc.split_k:
                split = dict(zip(("slices", "tile"), cublas_slices(a.shape[0], b.shape[1], a.shape[1], self._fmt_in)))
            return np.asarray(_tensorcore.matmul(a, b, acc.tensor_core, fmt=self._fmt_in, **split), np.float64)
        return matmul2d(a, b, acc.fmt, acc.order, self._fmt_in)

    def matmul(self, a, b):
        """NumPy's matmul (1-D operands, batching, broadcasting), each 2-D product accumulated as asked."""
        a, b = to_numpy(a), to_numpy(b)
        dtype = np.result_type(a.dtype, b.dtype)
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        if a2.shape[-1] != b2.shape[-2]:
            raise ValueError(f"matmul: inner dimensions differ: {a.shape} @ {b.shape}")
        batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        a3 = np.broadcast_to(a2, batch + a2.shape[-2:]).reshape(-1, *a2.shape[-2:])
        b3 = np.broadcast_to(b2, batch + b2.shape[-2:]).reshape(-1, *b2.shape[-2:])
        out = np.stack([self._matmul2d(x, y) for x, y in zip(a3, b3)]) if a3.shape[0] else \
            np.zeros((0, a2.shape[-2], b2.shape[-1]))
        out = out.reshape(batch + out.shape[-2:]).astype(dtype)     # fmt's values: exact in float32
        if a.ndim == 1:
            out = out[..., 0, :]
        if b.ndim == 1:
            out = out[..., 0]
        return self._back(out)

    def sum(self, x, axis=None, keepdims=False, **kwargs):
        """NumPy's sum, accumulated as asked over the reduced axes (in C order of them) for float arrays."""
        x = x if hasattr(x, "dtype") else np.asarray(x)
        if kwargs or x.dtype.kind != "f" or self._acc.fmt is None:     # tensor cores sum no reductions
            return self._xp.sum(x, axis=axis, keepdims=keepdims, **kwargs)
        x = to_numpy(x)
        axes = tuple(range(x.ndim)) if axis is None else tuple(a % x.ndim for a in np.atleast_1d(axis))
        kept = [d for d in range(x.ndim) if d not in axes]
        k, m = (int(np.prod([x.shape[d] for d in ds])) for ds in (axes, kept))
        columns = np.transpose(x, list(axes) + kept).reshape(k, m)
        out = sum_columns(columns, self._acc.fmt, self._acc.order, self._fmt_in).astype(x.dtype)
        out = out.reshape([x.shape[d] for d in kept])
        if keepdims:
            out = out.reshape([1 if d in axes else x.shape[d] for d in range(x.ndim)])
        return self._back(out)

    def mean(self, x, axis=None, keepdims=False, **kwargs):
        """The accumulated sum divided by the count, in the array's own precision."""
        x = x if hasattr(x, "dtype") else np.asarray(x)
        if kwargs or x.dtype.kind != "f" or self._acc.fmt is None:
            return self._xp.mean(x, axis=axis, keepdims=keepdims, **kwargs)
        axes = tuple(range(x.ndim)) if axis is None else tuple(a % x.ndim for a in np.atleast_1d(axis))
        n = int(np.prod([x.shape[d] for d in axes]))
        return self.sum(x, axis, keepdims) / x.dtype.type(n)


def accumulating(xp, acc, fmt_in):
    """xp itself when acc is None (float32 BLAS), else the namespace that accumulates as acc says."""
    return xp if acc is None else Accumulating(xp, acc, fmt_in)


def _gpu_in_use():
    """The tensor-core model of the GPU CuPy sees, for tensor_core="gpu"."""
    from ._gpu import device_name, model_of
    try:
        name = device_name()
    except Exception as e:      # noqa: BLE001 - no CuPy, no driver, no GPU: one answer
        raise ValueError(f"accumulate(): tensor_core='gpu' needs a GPU that CuPy can see ({type(e).__name__}: "
                         f"{e}); name a model instead: {', '.join(_tensorcore.DEVICES)}") from None
    model = model_of(name)
    if model is None:
        raise ValueError(f"accumulate(): tensor_core='gpu': no tensor-core model for {name}; valid tensor "
                         f"cores: {', '.join(_tensorcore.DEVICES)}")
    return model


def accumulate(fmt=None, order="sequential", tensor_core=None):
    """Within this block (in this thread) matmul, linear, conv2d, sum and mean accumulate in `fmt`
    ("sequential": an FMA chain rounding after every addition; "pairwise": a tree), or as the tensor cores
    of `tensor_core` do ("gpu": the model of the GPU in use); fmt=None and tensor_core=None: float32, through
    BLAS (the default). On GPU tensors the emulation runs on the host and its results go back to the GPU: the
    exact model, in place of the GPU's own GEMMs."""
    if fmt is not None:
        fmt = as_format(fmt, "accumulate(): fmt")
    if not isinstance(order, str) or order not in ORDERS:
        raise ValueError(f"accumulate(): order={order!r} is unknown; valid orders: {', '.join(ORDERS)}")
    if tensor_core == "gpu":
        tensor_core = _gpu_in_use()
    if tensor_core is not None:
        devices = _tensorcore.DEVICES
        if not isinstance(tensor_core, str) or tensor_core not in devices:
            raise ValueError(f"accumulate(): tensor_core={tensor_core!r} is unknown; valid tensor cores: "
                             f"{', '.join(devices)}, 'gpu' (the GPU in use) or None")
        if fmt is not None or order != "sequential":
            raise ValueError(f"accumulate(): tensor_core={tensor_core!r} sets its own accumulator and order; give "
                             f"either tensor_core or fmt= and order=, not both (got fmt={fmt}, order={order!r})")
    elif fmt is None and order != "sequential":
        raise ValueError(f"accumulate(): order={order!r} needs an accumulator format: fmt=None accumulates in "
                         f"float32 through BLAS; give fmt (for example fmt='float32') to sum {order}")
    acc = None if fmt is None and tensor_core is None else Accumulator(fmt, order, tensor_core)
    return accumulate_scope(acc)
