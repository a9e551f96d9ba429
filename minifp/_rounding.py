"""Rounding float32/float64 -> format and widening format -> float32.

Two implementations side by side: the Numba kernels over the raw bits
(`_round_bits` for any source and mode, `_round_nearest_f32` for the hot path)
and `round_reference`, plain float64 array math (frexp / rint) that also runs on
CuPy. The tests compare them with each other and with the casts of numpy and
ml_dtypes. Rounding can also count what it did (overflow, underflow, subnormal,
NaN): in the hot kernel itself, or by `count_rounding` elsewhere.
"""
from __future__ import annotations

import functools
import math
import types

import numba
import numpy as np

from ._backend import array_module as _xp
from ._formats import Format, as_format

MODES = ("nearest", "toward_zero", "stochastic")
_MODE_ID = {m: i for i, m in enumerate(MODES)}

# Source layouts the kernel reads: (integer view, mantissa bits, exponent bias, exponent mask).
_SOURCES = {np.dtype(np.float32): (np.int32, 23, 127, 0xFF), np.dtype(np.float64): (np.int64, 52, 1023, 0x7FF)}
_CODES = {8: np.uint8, 16: np.uint16}
# Below this many elements a parallel kernel's start-up costs more than the work: use the native
# casts, which agree with the kernels on all 2**32 float32 inputs (benchmarks/exhaustive.py).
SMALL = 4096
# Below this many, a serial kernel: waking Numba's OpenMP workers costs more than they save, and on a
# small machine they and OpenBLAS's spinning threads fight over the cores (CNN steps ran 4x slower).
PARALLEL = 1 << 20


def _kernel(fn):
    """fn compiled twice: (serial, parallel). prange is range in the serial one."""
    serial = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_serial")
    serial.__qualname__ = serial.__name__            # its own entry in Numba's on-disk cache
    return (numba.njit(cache=True, nogil=True)(serial),
            numba.njit(cache=True, nogil=True, parallel=True)(fn))


def _round_bits(src, out, rbits, src_man, src_bias, src_emask, m, emin, bias, sign_shift,
                subnormals, max_code, overflow_code, nan_code, mode, decode):
    """Round each source float (given as raw bits) into the format; write codes, or float32 values if `decode`."""
    # Everything in int64: sign-extended source bits, significands below 2**53, shifts below 63.
    man_mask = (1 << src_man) - 1
    src_sign_shift = src.itemsize * 8 - 1
    for i in numba.prange(src.size):
        b = np.int64(src[i])
        sign = (b >> src_sign_shift) & 1
        e_field = (b >> src_man) & src_emask
        sig = b & man_mask
        if e_field == src_emask:                       # inf or NaN in the source
            code = nan_code if sig != 0 else overflow_code
        elif e_field == 0 and sig == 0:                # +-0 keeps its sign
            code = 0
        else:
            if e_field == 0:                           # source subnormal: no implicit bit
                e = 1 - src_bias
            else:
                e = e_field - src_bias
                sig |= 1 << src_man
            # The quantum is 2**(max(e, emin) - m): drop `shift` bits of the significand.
            shift = src_man - m + max(0, emin - e)
            if shift > 62:                             # far below the smallest subnormal
                q = 0
                up = mode == 2 and shift - 32 < 53 and np.int64(rbits[i]) < (sig >> (shift - 32))
            else:
                q = sig >> shift
                rem = sig & ((1 << shift) - 1)
                if mode == 0:
                    half = (1 << shift) >> 1
                    up = shift > 0 and (rem > half or (rem == half and (q & 1) == 1))
                elif mode == 1:
                    up = False
                else:                                  # round up with probability rem / 2**shift (32-bit)
                    frac32 = rem >> (shift - 32) if shift >= 32 else rem << (32 - shift)
                    up = np.int64(rbits[i]) < frac32
            # Normal results: exponent field max(e, emin) + bias; a carry out of q bumps it, as it should.
            code = ((max(e, emin) + bias - 1) << m) + q + int(up)
            if code > max_code:                         # toward zero never rounds up past max (IEEE)
                code = max_code if mode == 1 else overflow_code
            elif not subnormals and code < (1 << m):
                code = 0
        if decode:
            if code > max_code:
                # max_code + 1 is inf where the format has infinities (its NaN code then lies higher).
                value = math.inf if code == max_code + 1 and nan_code != max_code + 1 else math.nan
            else:
                e_out = code >> m
                value = math.ldexp((code & ((1 << m) - 1)) + (e_out > 0) * (1 << m), int(max(e_out, 1) - bias - m))
            out[i] = -value if sign else value
        else:
            out[i] = code | (sign << sign_shift)


@functools.lru_cache(maxsize=None)
def _fields(fmt):
    """The integer fields of a format that the nearest-even kernels take."""
    return fmt.man_bits, fmt.emin, fmt.bias, fmt.bits - 1, fmt.max_code, fmt.overflow_code, fmt.nan_code


@numba.njit(cache=True)
def _nearest_setup(m, emin, bias, sign_shift, max_code, overflow_code, nan_code):
    """The kernel's constants, typed as it uses them. (Derived inside the kernel: passed in as arguments,
    the same int32 values made the loop 30% slower.)"""
    i32 = np.int32
    # Results below the format's smallest normal: scale to units of the smallest subnormal and let
    # float32's own nearest-even addition of 2**23 round to an integer.
    return (i32(23 - m), i32((1 << (22 - m)) - 1), i32((127 - bias) << m), i32((emin + 127) << 23),
            np.float32(2.0 ** min(m - emin, 127)), np.float32(2.0**23), i32(max_code), i32(overflow_code),
            i32(nan_code), i32(31 - sign_shift), i32(1 << sign_shift))


@numba.njit(cache=True)
def _nearest(b, xi, c, narrow):
    """One float32 (bits b, value xi) -> (|b|, code before overflow, final code with sign).

    `narrow`: the format has fewer exponent bits than float32, so its subnormals need the float path
    (with 8 exponent bits they line up with float32's, and the bit formula covers them). Callers pass a
    constant, so each loop compiles without the other's work. Every intermediate is cast back to int32
    (np.right_shift keeps the type): Numba widens integer arithmetic to 64 bits, and the casts let LLVM
    keep eight 32-bit lanes per AVX2 instruction. All values are below 2**31: signed compares are safe.
    """
    shift, round_bias, rebias, min_normal, scale, magic, max_c, over_c, nan_c, sign_down, sign_bit = c
    i32 = np.int32
    a = i32(b & i32(0x7FFFFFFF))
    # The bit formula: add half an ulp minus one, plus the ulp's own bit (ties to even), drop the bits.
    code = i32(np.right_shift(i32(i32(a + round_bias) + i32(np.right_shift(a, shift) & i32(1))), shift) - rebias)
    if narrow:
        small = i32((abs(xi) * scale + magic) - magic)
        code = small if a < min_normal else code
    final = over_c if code > max_c else code
    final = nan_c if a > i32(0x7F800000) else final
    return a, code, i32(final | (np.right_shift(b, sign_down) & sign_bit))


def _round_nearest_f32(bits, x, out, m, emin, bias, sign_shift, max_code, overflow_code, nan_code):
    """_round_bits for float32 sources, round-to-nearest-even and coded storages (whose formats all have
    subnormals), branch-free so that it vectorises."""
    c = _nearest_setup(m, emin, bias, sign_shift, max_code, overflow_code, nan_code)
    if bias != 127:
        for i in numba.prange(bits.size):
            out[i] = _nearest(bits[i], x[i], c, True)[2]
    else:
        for i in numba.prange(bits.size):
            out[i] = _nearest(bits[i], x[i], c, False)[2]


def _round_nearest_f32_counted(bits, x, out, m, emin, bias, sign_shift, max_code, overflow_code, nan_code):
    """_round_nearest_f32 that also counts (overflow, underflow, subnormal, NaN) in the same pass."""
    c = _nearest_setup(m, emin, bias, sign_shift, max_code, overflow_code, nan_code)
    i32 = np.int32
    min_normal_code, magnitude, inf, max_c = i32(1 << m), i32((1 << sign_shift) - 1), i32(0x7F800000), c[6]
    over = under = sub = nan = 0
    for i in numba.prange(bits.size):
        a, code, final = _nearest(bits[i], x[i], c, bias != 127)
        out[i] = final
        mag = final & magnitude
        over += (a < inf) & (code > max_c)
        under += (a != 0) & (mag == 0)
        sub += (mag != 0) & (mag < min_normal_code)
        nan += a > inf
    return over, under, sub, nan


def _gather(codes, table, out):
    """out[i] = table[codes[i]]: widening through a table of every value of a <= 16-bit format."""
    for i in numba.prange(codes.size):
        out[i] = table[codes[i]]


ROUND_BITS, ROUND_NEAREST_F32, GATHER = _kernel(_round_bits), _kernel(_round_nearest_f32), _kernel(_gather)
ROUND_NEAREST_F32_COUNTED = _kernel(_round_nearest_f32_counted)    # compiled only when a monitor asks


def _random_bits(rng, shape):
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    return rng.integers(0, 2**32, size=shape, dtype=np.uint32)


def _check(x, fmt, mode):
    fmt = fmt if isinstance(fmt, Format) else as_format(fmt)
    if mode not in _MODE_ID:
        raise ValueError(f"unknown rounding mode {mode!r}; valid modes: {', '.join(MODES)}")
    if x.dtype not in _SOURCES:
        x = x.astype(np.float32) if x.dtype.kind in "biuf" else x
        if x.dtype not in _SOURCES:
            raise TypeError(f"round_to takes a float32 or float64 array, got dtype {x.dtype}")
    return x, fmt


def round_to(x, fmt, mode="nearest", rng=None, counts=None):
    """Round a float32/float64 array into `fmt`; returns an array of the format's storage dtype.

    counts: an int64 array of 4 to which (overflow, underflow, subnormal, NaN) of this rounding are added.
    """
    x, fmt = _check(_asarray(x), fmt, mode)
    if fmt.is_float32 and x.dtype == np.float32 and counts is None:
        return x.copy()
    with np.errstate(all="ignore"):             # overflow to inf is the intended result
        return _round_to(x, fmt, mode, rng, counts)


def _round_to(x, fmt, mode="nearest", rng=None, counts=None):
    """round_to for a checked float32/float64 array and a Format, inside the caller's np.errstate."""
    if type(x) is np.ndarray and not numba.config.DISABLE_JIT:
        if counts is None and x.size <= SMALL and mode == "nearest" and x.dtype == np.float32 and fmt.native:
            return x.astype(fmt.storage)
        return round_kernel(x, fmt, mode, rng, counts)
    # CuPy arrays (and pure-Python runs) take the array-math path.
    out = round_reference(x, fmt, mode, _random_bits(rng, x.shape) if mode == "stochastic" else None)
    if counts is not None:
        counts += count_rounding(x, out, fmt)
    return out


def round_kernel(x, fmt, mode="nearest", rng=None, counts=None):
    """round_to through the Numba kernels alone (the tests call it directly, also with NUMBA_DISABLE_JIT)."""
    x, fmt = _check(np.ascontiguousarray(x), fmt, mode)
    view, src_man, src_bias, src_emask = _SOURCES[x.dtype]
    storage = fmt.storage
    decode = storage == np.float32
    out = np.empty(x.shape, np.float32 if decode else _CODES[storage.itemsize * 8])
    par = x.size >= PARALLEL
    if mode == "nearest" and x.dtype == np.float32 and not decode:
        args = (x.reshape(-1).view(np.int32), x.reshape(-1), out.reshape(-1), *_fields(fmt))
        if counts is None:
            ROUND_NEAREST_F32[par](*args)
        else:
            counts += ROUND_NEAREST_F32_COUNTED[par](*args)     # counted in the same pass
        return out.view(storage)
    rbits = _random_bits(rng, x.size) if mode == "stochastic" else np.empty(0, np.uint32)
    ROUND_BITS[par](x.reshape(-1).view(view), out.reshape(-1), rbits, src_man, src_bias, src_emask,
                fmt.man_bits, fmt.emin, fmt.bias, fmt.bits - 1, fmt.subnormals, fmt.max_code,
                fmt.overflow_code, fmt.nan_code, _MODE_ID[mode], decode)
    out = out if decode else out.view(storage)
    if counts is not None:
        counts += count_rounding(x, out, fmt)
    return out


def count_rounding(x, out, fmt):
    """(overflow, underflow, subnormal, nan) of rounding x into `out`, by array math (what the counting
    kernel computes in its loop)."""
    fmt = as_format(fmt)
    xp = _xp(out)
    y = xp.abs(out.astype(xp.float32))
    ax = xp.abs(xp.asarray(x, dtype=xp.float32))
    big = float(fmt.decode(fmt.max_code))
    # Overflow: nearest-even would pass max, i.e. |x| beyond the midpoint above max (on it, if max is odd).
    mid = big + 2.0 ** (np.floor(np.log2(big)) - fmt.man_bits - 1)
    over = xp.isfinite(ax) & ((ax > mid) | ((ax == mid) & bool(fmt.max_code & 1)))
    return np.array([int(over.sum()), int(((ax != 0) & (y == 0)).sum()),
                     int(((y != 0) & (y < 2.0**fmt.emin)).sum()), int(xp.isnan(ax).sum())], np.int64)


def round_reference(x, fmt, mode="nearest", rbits=None):
    """Plain array-math reference of round_to, in float64 (works for NumPy and CuPy arrays)."""
    with np.errstate(all="ignore"):
        return _reference(_xp(x), x.astype(np.float64), as_format(fmt), mode, rbits)


def _reference(xp, x, fmt, mode, rbits):
    _, e = xp.frexp(x)                                   # |x| = f * 2**e with f in [0.5, 1)
    quantum_exp = xp.maximum(e - 1, fmt.emin) - fmt.man_bits
    q = xp.ldexp(x, -quantum_exp)                        # exact: a power-of-two scaling
    if mode == "nearest":
        q = xp.rint(q)                                   # ties to even
    elif mode == "toward_zero":
        q = xp.trunc(q)
    else:
        frac = xp.abs(q) - xp.floor(xp.abs(q))
        up = rbits.reshape(x.shape) < xp.floor(frac * 2.0**32)
        q = xp.sign(q) * (xp.floor(xp.abs(q)) + up)
    y = xp.ldexp(q, quantum_exp)
    y = xp.where(x == 0, x, y)                           # keep the sign of zeros
    if not fmt.subnormals:
        y = xp.where(xp.abs(y) < 2.0**fmt.emin, 0.0 * x, y)
    big = float(fmt.decode(fmt.max_code))
    over = float(fmt.decode(fmt.overflow_code))
    y = xp.where(xp.abs(y) > big, xp.copysign(big if mode == "toward_zero" else over, x), y)
    y = xp.where(xp.isinf(x), xp.copysign(big if fmt.overflow == "saturate" else over, x), y)
    y = xp.where(xp.isnan(x), xp.copysign(xp.nan, x), y)
    return y.astype(fmt.storage)


@functools.lru_cache(maxsize=None)
def _table(fmt: Format):
    """float32 value of every code of a <= 16-bit format, indexed by its code."""
    return fmt.decode(np.arange(1 << fmt.bits)).astype(np.float32)


def widen(a, fmt=None):
    """Format storage -> float32 values (exact)."""
    if a.dtype == np.float32:
        return a
    if not isinstance(a, np.ndarray) or numba.config.DISABLE_JIT or a.dtype.itemsize > 2 or a.size <= SMALL:
        return a.astype(np.float32)
    fmt = as_format(a.dtype) if fmt is None else fmt
    out = np.empty(a.shape, np.float32)
    codes = np.ascontiguousarray(a).reshape(-1).view(_CODES[a.dtype.itemsize * 8])
    GATHER[a.size >= PARALLEL](codes, _table(fmt), out.reshape(-1))
    return out


def _asarray(x):
    """NumPy arrays for anything host-side (lists, NumPy scalars); CuPy arrays as they are."""
    if type(x) is np.ndarray:
        return x
    return np.asarray(x) if _xp(x) is np else x
