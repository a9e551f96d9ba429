"""OCP Microscaling (MX) v1.0 block quantisation: blocks of elements sharing one e8m0 power-of-two scale.

The specification's rule (section 6.3), for each block of `block` values V_i along `axis`:
    X   = 2**(floor(log2(max_i |V_i|)) - emax_elem), stored as e8m0
    P_i = V_i / X rounded to nearest-even into the element format, saturating at its max.
emax_elem is the exponent of the element format's largest power of two: 8 for FP8 e4m3, 15 for e5m2, 2 for
FP6 e2m3, 4 for e3m2, 2 for FP4 e2m1 and 0 for MXINT8 (elements are int8 with an implicit 2**-6).
Edge cases, as the specification and microsoft/microxcaling (its authors' reference) treat them:
  - a block holding a NaN or an inf gets the NaN scale (0xFF); every value of that block dequantises to NaN;
  - an all-zero block gets the scale 2**max(-127, -126 - emax_elem) (microxcaling takes log2 of float32's
    smallest normal for it; the specification leaves it open), and its elements are zeros;
  - a scale exponent below -127 is clamped to -127 (e8m0's smallest); above 127 (float64 inputs past
    float32's range) the scale is NaN;
  - floor(log2(amax)) is exact here (frexp); microxcaling's float32 log2 can round up for amax just below a
    power of two.
A last block shorter than `block` is padded with zeros, which change no scale; the elements come back with x's
shape, the scales with ceil(n / block) along `axis`.
"""
from __future__ import annotations

import math
from dataclasses import replace

import ml_dtypes
import numpy as np

from ._formats import Fixed, as_format, finfo, int8
from ._rounding import round_to
from ._tensor import Tensor

__all__ = ["quantize", "dequantize", "scale_exponent"]

_MXINT8 = Fixed(8, 6)                     # MXINT8's element values: int8 codes times 2**-6
_E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)
_NAN_CODE = 0xFF


def scale_exponent(elem) -> int:
    """emax_elem of the MX rule: the exponent of the element format's largest power of two (MXINT8: 0)."""
    fmt = _element(elem)
    return math.frexp(finfo(fmt).max)[1] - 1


def quantize(x, elem, block=32, axis=-1):
    """MX-quantise x (an array, or a minifp tensor: its values) into (elements in elem's storage dtype, e8m0
    scales), blocks of `block` along `axis`.

    elem: an element format (float8_e4m3, float8_e5m2, float6_e2m3, float6_e3m2, float4_e2m1, or int8 for
    MXINT8, whose elements come back as np.int8 codes), or any other signed minifp Format.
    """
    x, fmt, block, axis = _check(x, elem, block, axis)
    moved = np.moveaxis(x, axis, -1)
    n = moved.shape[-1]
    nblocks = -(-n // block)
    padded = np.zeros(moved.shape[:-1] + (nblocks * block,), x.dtype)
    padded[..., :n] = moved
    blocks = padded.reshape(moved.shape[:-1] + (nblocks, block))
    exps, bad = _shared_exponents(blocks, scale_exponent(fmt))
    with np.errstate(all="ignore"):                      # inf / NaN elements of NaN-scaled blocks
        # Exact in float64. In float32 too (chosen for elements whose smallest value is 2**-124 or more), but
        # for quotients below 2**-126, which round to a signed zero in the element format either way.
        scaled = np.ldexp(blocks, -exps[..., None].astype(np.int32))
    elements = round_to(scaled, replace(fmt, overflow="saturate"))
    elements = elements.reshape(padded.shape)[..., :n]
    if as_format(elem, "elem") == int8:
        elements = (elements.astype(np.float64) * 64).astype(np.int8)
    codes = np.where(bad, _NAN_CODE, exps + 127).astype(np.uint8)
    return np.moveaxis(elements, -1, axis).copy(), np.moveaxis(codes.view(_E8M0), -1, axis).copy()


def dequantize(elements, scales, axis=-1, block=32):
    """The float32 values of MX-quantised (elements, scales), as quantize returned them; NaN scales give NaN."""
    elements, scales = np.asarray(elements), np.asarray(scales)
    if scales.dtype != _E8M0:
        raise TypeError(f"scales: got an array of dtype {scales.dtype}; valid: ml_dtypes.float8_e8m0fnu "
                        f"(as quantize returns them)")
    if elements.ndim == 0 or elements.ndim != scales.ndim:
        raise ValueError(f"elements and scales: got {elements.ndim} and {scales.ndim} dimensions; they must have "
                         f"the same number, at least 1")
    axis = _axis(axis, elements.ndim)
    block = _block(block)
    n = elements.shape[axis]
    want = elements.shape[:axis] + (-(-n // block),) + elements.shape[axis + 1:]
    if scales.shape != want:
        raise ValueError(f"scales: got shape {scales.shape}; elements of shape {elements.shape} in blocks of "
                         f"{block} along axis {axis} need shape {want}")
    if elements.dtype == np.int8:                        # MXINT8: two's complement codes of k * 2**-6
        values = elements.astype(np.float64) * 2.0**-6
    elif elements.dtype in _ELEMENT_DTYPES or elements.dtype in _FLOATS:     # exact widening casts
        values = elements.astype(np.float64)
    else:
        raise TypeError(f"elements: got an array of dtype {elements.dtype}; valid: the storage dtypes of MX "
                        f"elements (float8_e4m3fn, float8_e5m2, float6_e2m3fn, float6_e3m2fn, float4_e2m1fn, "
                        f"int8) or float32 for other formats")
    x = np.repeat(scales.astype(np.float64), block, axis=axis)
    x = np.take(x, np.arange(n), axis=axis)
    with np.errstate(all="ignore"):
        return (values * x).astype(np.float32)           # exact: a few bits times a power of two


_ELEMENT_DTYPES = {np.dtype(t) for t in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float6_e2m3fn,
                                          ml_dtypes.float6_e3m2fn, ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e4m3fnuz,
                                          ml_dtypes.float8_e5m2fnuz, ml_dtypes.bfloat16)}
_FLOATS = {np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)}


def _shared_exponents(blocks, emax):
    """(the scale exponents of the blocks, which blocks get the NaN scale)."""
    with np.errstate(invalid="ignore"):
        a = np.abs(blocks)
        finite = np.isfinite(blocks).all(axis=-1)
        amax = np.max(np.where(np.isfinite(a), a, 0.0), axis=-1)
    e = np.frexp(amax)[1] - 1                            # floor(log2(amax)), exactly
    e = np.where(amax == 0, -126, e) - emax              # microxcaling: log2 of float32's smallest normal
    bad = ~finite | (e > 127)
    return np.where(bad, 0, np.maximum(e, -127)).astype(np.int64), bad


def _element(elem):
    """The element Format (int8 -> MXINT8's k * 2**-6)."""
    fmt = as_format(elem, "elem")
    return _MXINT8 if fmt == int8 else fmt


def _check(x, elem, block, axis):
    fmt = _element(elem)
    if not fmt.signed:
        raise ValueError(f"elem: {fmt.name} has no sign, so it cannot hold an MX element; valid: float8_e4m3, "
                         f"float8_e5m2, float6_e2m3, float6_e3m2, float4_e2m1, int8 or another signed Format")
    a = np.asarray(x.numpy() if isinstance(x, Tensor) else x)      # a tensor: its values, in its storage dtype
    if a.dtype.kind not in "biuf" and a.dtype.kind != "V":
        raise TypeError(f"x: an array of dtype {a.dtype} cannot be quantised; valid: real numbers")
    if a.ndim == 0:
        raise ValueError("x: a 0-d array has no axis to block; pass at least one dimension")
    # float32 and narrower widen exactly into float32, where the quotients by X round once (see quantize)
    narrow = a.dtype.kind in "fV" and a.dtype.itemsize <= 4 and fmt.smallest >= 2.0**-124
    with np.errstate(invalid="ignore"):
        a = a.astype(np.float32 if narrow else np.float64)
    return a, fmt, _block(block), _axis(axis, a.ndim)


def _block(block):
    if isinstance(block, (bool, np.bool_)) or not isinstance(block, (int, np.integer)) or block < 1:
        raise ValueError(f"block: got {block!r}; valid: a positive integer (the MX specification's is 32)")
    return int(block)


def _axis(axis, ndim):
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
        raise ValueError(f"axis: got {axis!r}; valid: an integer in [{-ndim}, {ndim - 1}] for {ndim} dimensions")
    return int(axis) % ndim

