"""Rounding float32/float64 -> format and widening format -> float32: the plain path.

Two implementations side by side: the Numba kernels over the raw bits (`_round_bits` for any source and mode,
`_round_nearest_f32` for float32 to nearest-even) and `round_reference`, plain float64 array math (frexp / rint)
that also runs on CuPy. The tests compare them with each other and with the casts of numpy and ml_dtypes.
Rounding can also count what it did (overflow, underflow, subnormal, NaN): in the nearest kernel itself, or by
`count_rounding` elsewhere.

`rounded` and `widened` are the engine's two seams here: every op result and gradient is rounded by `rounded`,
and widened by `widened`; minifp/_speed.py may replace them with faster functions of the same bits.
"""
from __future__ import annotations

import functools
import math
import types
from typing import Callable, NamedTuple

import numba
import numpy as np

from ._backend import array_module as _xp, holds
from ._formats import FORMATS, Format, as_format, bfloat16, float16
from ._intrinsics import JIT, bits_of as _bits, float_of as _float, i32
from ._random import generator
from ._seams import SEAMS, seam

__all__ = ["MODES", "round_to", "round_kernel", "round_reference", "count_rounding", "widen", "rounded", "widened",
           "round_result", "round_gradient"]

# Rounding modes (IEEE 754 names in comments): roundTiesToEven, roundTowardZero, stochastic (up with probability
# the remainder, truncated to `bits` bits), roundTowardPositive, roundTowardNegative, roundTiesToAway, round to odd.

MODES = ("nearest", "toward_zero", "stochastic", "up", "down", "nearest_away", "odd")
_MODE_ID = {m: i for i, m in enumerate(MODES)}

# Source layouts the kernel reads: (integer view, mantissa bits, exponent bias, exponent mask).
_SOURCES = {np.dtype(np.float32): (np.int32, 23, 127, 0xFF), np.dtype(np.float64): (np.int64, 52, 1023, 0x7FF)}
_CODES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16)}
_F32, _BF16 = np.dtype(np.float32), bfloat16.storage


def _clone(fn, name, **constants):
    """fn with some of its globals replaced, for Numba to compile them in as constants; its own name
    gives it its own entry in Numba's on-disk cache."""
    clone = types.FunctionType(fn.__code__, {**fn.__globals__, **constants}, name)
    clone.__qualname__ = name
    return clone


# Mode ids, in MODES order, as the kernels see them.
NEAREST, TOWARD_ZERO, STOCHASTIC, UP, DOWN, NEAREST_AWAY, ODD = range(7)


@numba.njit(cache=True)
def _rounds_up(mode, negative, q, rem, shift, r, nbits):
    """Whether |x| rounds away from zero, past its kept bits q, given the `shift` dropped bits `rem`.

    shift may pass 62 (far below the smallest subnormal): q is then 0 and rem, the whole significand,
    lies below half. r: the random integer of "stochastic", below 2**nbits.
    """
    if rem == 0:                                    # exact: no mode moves it
        return False
    if mode == NEAREST or mode == NEAREST_AWAY:
        if shift > 62:
            return False
        half = np.int64(1) << (shift - 1)
        return rem > half or (rem == half and (mode == NEAREST_AWAY or (q & 1) == 1))
    if mode == STOCHASTIC:                          # up iff r < the remainder truncated to nbits
        if shift >= nbits:
            frac = rem >> (shift - nbits) if shift - nbits < 63 else np.int64(0)
        else:
            frac = rem << (nbits - shift)
        return r < frac
    if mode == UP:                                  # toward +inf: magnitudes of positives grow
        return not negative
    if mode == DOWN:
        return negative
    if mode == ODD:                                 # truncate, then make the last kept bit 1
        return (q & 1) == 0
    return False                                    # toward zero


@numba.njit(cache=True)
def _overflow_code(mode, negative, max_code, overflow_code):
    """The code of a finite value rounding past max (IEEE 754 7.4): the modes that round its magnitude
    down stop at max, the others overflow (to inf, NaN without inf, max when saturating)."""
    if mode == TOWARD_ZERO or mode == ODD or (mode == UP and negative) or (mode == DOWN and not negative):
        return max_code
    return overflow_code


def _round_bits(src, out, rbits, src_man, src_bias, src_emask, m, emin, bias, sign_shift,
                subnormals, max_code, overflow_code, nan_code, mode, nbits, decode, signs):
    """Round each source float (given as raw bits) into the format; write codes, or float32 values if `decode`.

    signs: 2 signed with -0, 1 signed without -0 (fnuz: a zero drops its sign, NaN is -0's code), 0 unsigned
    (e8m0: zero and negatives are NaN). nan_code with the sign bit set (formats whose NaN is, or becomes, a
    zero): the sign is XOR-ed in, so a NaN becomes the zero of the opposite sign where the format has no NaN.
    """
    # Everything in int64: sign-extended source bits, significands below 2**53, shifts below 63.
    man_mask = (1 << src_man) - 1
    src_sign_shift = src.itemsize * 8 - 1
    for i in range(src.size):
        b = np.int64(src[i])
        sign = (b >> src_sign_shift) & 1
        e_field = (b >> src_man) & src_emask
        sig = b & man_mask
        if e_field == src_emask:                       # inf or NaN in the source
            code = nan_code if sig != 0 or signs == 0 else overflow_code
        elif e_field == 0 and sig == 0:                # +-0 keeps its sign
            code = nan_code if signs == 0 else 0
        elif sign and signs == 0:                      # no negative numbers
            code = nan_code
        else:
            if e_field == 0:                           # source subnormal: normalised (e8m0's emin is -127)
                e = 1 - src_bias
                while sig < (1 << src_man):
                    sig <<= 1
                    e -= 1
            else:
                e = e_field - src_bias
                sig |= 1 << src_man
            # The quantum is 2**(max(e, emin) - m): drop `shift` bits of the significand. Without subnormals
            # 0 and the smallest normal are neighbours: below it (where source subnormals all lie, as emin
            # >= -126) the quantum is 2**emin, `low` bits coarser.
            low = m if subnormals or (e >= emin and e_field != 0) else 0
            shift = src_man - low + max(0, emin - e)
            if shift > 62:                             # far below the smallest subnormal
                q, rem = np.int64(0), sig
            else:
                q, rem = sig >> shift, sig & ((np.int64(1) << shift) - 1)
            r = np.int64(rbits[i]) if mode == STOCHASTIC else np.int64(0)
            up = _rounds_up(mode, sign == 1, q, rem, shift, r, nbits)
            # Normal results: exponent field max(e, emin) + bias; a carry out of q bumps it, as it should.
            code = ((max(e, emin) + bias - 1) << m) + ((q + int(up)) << (m - low))
            code = max(code, 0)                        # without a zero (e8m0), the smallest value instead
            if code > max_code:
                code = _overflow_code(mode, sign == 1, max_code, overflow_code)
        source_sign = sign
        if signs == 0 or signs == 1 and code & ((1 << sign_shift) - 1) == 0:
            sign = 0                                   # fnuz: +0, and NaN is -0's code already
        code ^= sign << sign_shift
        if decode:                                     # numbers take the code's sign; inf and NaN the source's
            mag, sign = code & ((1 << sign_shift) - 1), code >> sign_shift
            if mag > max_code or (signs == 1 and sign and mag == 0):
                # max_code + 1 is inf where the format has infinities (its NaN code then lies higher).
                value = math.inf if mag == max_code + 1 and nan_code != max_code + 1 else math.nan
                sign = source_sign
            else:
                e_out = mag >> m
                hidden = e_out > 0 or m == 0           # without mantissa bits, field 0 is normal too
                value = math.ldexp((mag & ((1 << m) - 1)) + hidden * (1 << m),
                                   int(max(e_out, 1 if m else 0) - bias - m))
            out[i] = -value if sign else value
        else:
            out[i] = code


@numba.njit(cache=True)
def _nearest(b, c):
    """One float32 (bits b) -> (|b|, code of |result| before overflow, final code with sign); nearest-even.

    Branch-free, so that LLVM vectorises the loops that call it. `c` holds the format's constants
    (see _constants); the kernels have them frozen in, so shifts are immediates and `general` picks one
    of the two paths at compile time. Every intermediate is cast back to int32 (np.right_shift keeps
    the type): Numba widens integer arithmetic to 64 bits, and the casts let LLVM keep eight 32-bit
    lanes per AVX2 instruction.
    """
    shift, round_bias, min_normal, magic, max_c, over_c, nan_c, sign_down, general, unsigned_zero, code_mask = c
    a = i32(b & i32(0x7FFFFFFF))
    if general:
        # Add half an ulp minus one, plus the ulp's own bit (ties to even), drop the bits; round_bias also
        # moves the exponent to the format's bias.
        code = np.right_shift(i32(i32(a + round_bias) + i32(np.right_shift(a, shift) & i32(1))), shift)
        # Below the smallest normal: adding 2**(emin - m + 23) makes float32's own nearest-even addition
        # round |x| to a whole number of smallest subnormals, which then sit in the low bits.
        small = i32(_bits(_float(a) + _float(magic)) - magic)
        code = small if a < min_normal else code
        # overflow_code is max_code or max_code + 1. b ^ a is the sign bit alone; the arithmetic shift
        # puts it on the format's sign bit (and copies it above, where the 8- or 16-bit store drops it).
        final = nan_c if a > i32(0x7F800000) else min(code, over_c)
        sign = np.right_shift(i32(b ^ a), sign_down)
        if unsigned_zero:                                   # fnuz: zeros are +0, and NaN is -0's code already
            sign = sign if final & i32((1 << (31 - sign_down)) - 1) != 0 else i32(0)
        # XOR, not OR: a NaN becomes the zero of the opposite sign where nan_c is -0's code (formats without
        # NaN, as ml_dtypes); code_mask clears the sign's copies above a sub-byte format's top bit.
        return a, code, i32(i32(final ^ sign) & code_mask)
    # 8 exponent bits and overflow to inf (bfloat16): subnormals line up with float32's, the same formula on
    # the signed bits rounds either sign (add half an ulp minus one plus the kept bits' lowest, drop the
    # rest), and a carry past max lands on the inf code by itself. A NaN instead gets its quiet bit set and
    # is cut (the top of the payload kept, as hardware does). Masking the result to the storage's width lets
    # LLVM narrow two vectors with one pack instruction (bfloat16 at 2**16: 9.8 -> 8.6 us here).
    is_nan = _float(b) != _float(b)                         # one float compare, where |b| > inf takes two
    w = i32(b | i32(nan_c << shift)) if is_nan else i32(i32(b + i32(np.right_shift(b, shift) & i32(1))) + round_bias)
    final = np.right_shift(w, shift)                        # sign_down == shift with 8 exponent bits
    return a, i32(final & i32((1 << (31 - sign_down)) - 1)), i32(final & i32((1 << (32 - sign_down)) - 1))


def _constants(fmt):
    """The int32 constants of _nearest for a coded format (storage of 8 or 16 bits, signed, subnormals)."""
    m, bits = fmt.man_bits, fmt.bits
    # bfloat16's shortcut holds for float32's exponent range where overflow is inf; saturating takes the min.
    general = fmt.bias != 127 or fmt.overflow_code != fmt.max_code + 1
    return (i32(23 - m), i32((1 << (22 - m)) - 1 - ((127 - fmt.bias) << 23)), i32((fmt.emin + 127) << 23),
            i32((fmt.emin - m + 23 + 127) << 23), i32(fmt.max_code), i32(fmt.overflow_code),
            i32(fmt.nan_code), i32(32 - bits), general, fmt.signs == 1, i32((1 << bits) - 1 if bits < 8 else -1))


C = None    # a format's _constants: each compiled copy of the two kernels below has its own (_nearest_kernel)


def _round_nearest_f32(x, out):
    """_round_bits for float32 sources, nearest-even and coded storages, vectorised; C: the format's constants."""
    c = C
    for i in range(x.size):
        out[i] = _nearest(_bits(x[i]), c)[2]


def _round_nearest_f32_counted(x, out):
    """_round_nearest_f32 that also counts (overflow, underflow, subnormal, NaN) in the same pass."""
    c = C
    inf, max_c = i32(0x7F800000), c[4]
    min_normal_code, magnitude = i32(1 << (23 - c[0])), i32((1 << (31 - c[7])) - 1)
    over = under = sub = nan = 0
    for i in range(x.size):
        a, code, final = _nearest(_bits(x[i]), c)
        out[i] = final
        mag = final & magnitude
        over += (a < inf) & (code > max_c)
        under += (a != 0) & (mag == 0) & (a < inf) & (code <= max_c)     # fnuz overflows and NaNs have mag 0
        sub += (mag != 0) & (mag < min_normal_code)
        nan += a > inf
    return over, under, sub, nan


def _round_nearest_wide(x, out):
    """Nearest-even for formats kept in float32 with its exponent, bias and overflow to inf (tf32): the
    bfloat16 formula on the signed bits, the dropped bits cleared instead of shifted out; a NaN becomes the
    quiet NaN of its sign, as the general kernel gives. C: (bits dropped, half an ulp minus one, kept-bits mask)."""
    shift, half, keep = C
    for i in range(x.size):
        b = _bits(x[i])
        w = i32(i32(b + i32(np.right_shift(b, shift) & i32(1))) + half)
        out[i] = i32(i32(b & i32(-0x80000000)) | i32(0x7FC00000)) if x[i] != x[i] else i32(w & keep)


@functools.lru_cache(maxsize=None)
def _nearest_kernel(fmt, counted=False):
    """The hot kernel compiled for one format, with its constants frozen in as a global.

    Numba compiles globals as constants: shifts by a known amount are single instructions, where
    variable ones cost several on the cores we measured (bfloat16 2.0 -> 3.0 Gelem/s, one thread).
    """
    fn = _round_nearest_f32_counted if counted else _round_nearest_f32
    name = (f"{fn.__name__}_e{fmt.exp_bits}m{fmt.man_bits}_{fmt.max_code}_{fmt.overflow_code}_{fmt.nan_code}"
            f"_b{fmt.bias}_s{fmt.signs}".replace("-", "n"))
    return numba.njit(cache=True, nogil=True)(_clone(fn, name, C=_constants(fmt)))


def _random_bits(rng, shape, bits=32):
    """Random integers below 2**bits for stochastic rounding: the top `bits` of 32-bit draws, so that one
    stream rounds alike at every width (fewer bits only coarsen the comparison)."""
    draws = generator(rng).integers(0, 2**32, size=shape, dtype=np.uint32)
    return draws if bits == 32 else draws >> np.uint32(32 - bits)


def _bits_of(mode, bits):
    """The random bits of stochastic rounding (32 for None), or one error naming `bits`."""
    if bits is None:
        return 32
    if mode != "stochastic":
        raise ValueError(f"bits: bits={bits!r} is only for mode='stochastic', not mode={mode!r}; "
                         f"pass bits=None for mode={mode!r}")
    if isinstance(bits, (bool, np.bool_)) or not isinstance(bits, (int, np.integer)) or not 1 <= bits <= 32:
        raise ValueError(f"bits: {bits!r} is not a number of random bits; valid values: integers 1 to 32, or None (32)")
    return int(bits)


def _check(x, fmt, mode, counts=None, bits=None):
    """(x as a float32/float64 array, fmt as a Format, the random bits), or one error naming the bad argument."""
    fmt = fmt if isinstance(fmt, Format) else as_format(fmt, "fmt")
    if not isinstance(mode, str) or mode not in _MODE_ID:
        raise ValueError(f"mode: unknown rounding mode {mode!r}; valid modes: {', '.join(MODES)}")
    bits = _bits_of(mode, bits)
    if counts is not None and not (isinstance(counts, np.ndarray) and counts.dtype == np.int64
                                   and counts.shape == (4,) and counts.flags.writeable):
        given = f"an array of dtype {counts.dtype} and shape {counts.shape}" if isinstance(counts, np.ndarray) \
            else f"a {type(counts).__name__}"
        raise TypeError(f"counts: got {given}; pass a writable int64 NumPy array of 4 (overflow, underflow, "
                        f"subnormal, NaN, added to), or None")
    return _source(x), fmt, bits


# What round_to takes besides float32/float64: minifp's storage dtypes, integers, bool and long double.
_STORED = {np.dtype(f.storage) for f in FORMATS.values()} - {_F32}
_VALID_DTYPES = ("float32, float64, longdouble, float16, bfloat16, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, "
                 "float8_e5m2fnuz, float6_e2m3fn, float6_e3m2fn, float4_e2m1fn, float8_e8m0fnu, integers, bool "
                 "(any byte order)")


def _source(x):
    """x as a float32/float64 array that rounds into every format as x itself would.

    Storage dtypes and small integers widen exactly. Integers past 2**53 and long doubles are rounded
    to odd into float64 (_odd_from_int, _odd_from_long): keeping p + 2 bits or more that way makes the
    second rounding exact in every deterministic mode (53 >= 24 + 2; Boldo and Melquiond 2008: the
    sticky last bit keeps inexactness, direction and which side of a midpoint); stochastic rounding then sees
    their fraction to 53 - p bits rather than 32 (the same for formats of up to 20 mantissa bits).
    """
    dtype = x.dtype
    if dtype in _SOURCES:
        return x
    if dtype.kind in "biuf" and not dtype.isnative:
        return _source(x.astype(dtype.newbyteorder("=")))      # numbers, not reinterpreted bits
    if dtype in _STORED:
        return widen(x)
    if dtype.kind == "b" or dtype.kind in "iu" and dtype.itemsize <= 4:
        return x.astype(np.float64)
    if dtype.kind in "iu":
        return _odd_from_int(x)
    if dtype.kind == "f" and dtype.itemsize > 8:
        return _odd_from_long(x)
    hint = " (take .real or abs() first)" if dtype.kind == "c" else ""
    raise TypeError(f"x: an array of dtype {dtype} cannot be rounded{hint}; valid dtypes: {_VALID_DTYPES}")


def _odd_from_int(x):
    """int64/uint64 -> float64, rounded to odd at 52 or 53 bits (exact below 2**53)."""
    xp = _xp(x)
    a = xp.abs(x).astype(xp.uint64)                      # |int64 min| wraps to itself: as uint64, 2**63
    _, e = xp.frexp(a.astype(xp.float64))                # a's bit length, or one more where the cast rounded up
    drop = xp.maximum(e - 53, 0).astype(xp.uint64)
    kept = (a >> drop) | ((a & ((xp.uint64(1) << drop) - xp.uint64(1))) != 0)    # a sticky 1 if bits dropped
    y = xp.ldexp(kept.astype(xp.float64), drop.astype(xp.int32))                 # at most 53 bits: exact
    return xp.where(x < 0, -y, y)


def _odd_from_long(x):
    """long double -> float64, rounded to odd: the float64 neighbour of x whose last bit is 1, if inexact."""
    with np.errstate(all="ignore"):
        near = x.astype(np.float64)
        near = np.where(np.isinf(near) & np.isfinite(x), np.copysign(np.finfo(np.float64).max, near), near)
        inexact = np.isfinite(x) & (x != near)
        other = np.nextafter(near, np.where(x > near, np.inf, -np.inf))
        return np.where(inexact & (near.view(np.int64) & 1 == 0), other, near)


ROUND_BITS = numba.njit(cache=True, nogil=True)(_round_bits)


def round_to(x, fmt, mode="nearest", rng=None, counts=None, bits=None):
    """Round an array of real numbers into `fmt`; returns an array of the format's storage dtype, of x's shape.

    mode: one of MODES. "up" / "down" round toward +inf / -inf, "nearest_away" breaks ties away from zero,
    "odd" truncates and sets the last kept bit if that dropped anything. "stochastic" rounds |x| up with
    probability its remainder (the fraction of the gap to the next value) truncated to `bits` bits
    (1..32, None: 32), drawing from `rng`. A finite x past max (IEEE 754): "toward_zero" and "odd" give
    +-max, "up" gives max for negatives and "down" for positives, every other case the overflow value (inf,
    NaN without inf; always max when the format saturates). inf stays inf (NaN without inf, max when
    saturating) in every mode. Zeros keep their sign, as do results that round to zero ("down" of a tiny
    negative is -smallest subnormal, of a tiny positive +0).
    counts: an int64 array of 4 to which (overflow, underflow, subnormal, NaN) of this rounding are added.
    """
    _no_tensor(x)
    x, fmt, bits = _check(_asarray(x), fmt, mode, counts, bits)
    if fmt.is_float32 and x.dtype == _F32 and counts is None:
        return x.copy(order="K")        # (in x's memory order, as the other formats' kernels keep it)
    return _round_to(x, fmt, mode, rng, counts, bits)


def _round_to(x, fmt, mode="nearest", rng=None, counts=None, bits=32):
    """round_to for a checked float32/float64 array and a Format."""
    if mode == "nearest":
        return SEAMS.rounded(x, fmt, counts)
    if type(x) is not np.ndarray or not JIT:            # CuPy arrays; kernels that would loop in Python
        with np.errstate(all="ignore"):                 # overflow to inf is the intended result
            return _reference_path(x, fmt, mode, rng, counts, bits)
    return _kernel(_contiguous(x), fmt, mode, rng, counts, bits)     # integer work: no floating-point warnings


@seam
def rounded(x, fmt, counts=None):
    """Float32 or float64 values x (NumPy or CuPy) rounded to nearest-even into fmt's storage dtype, in x's shape and
    memory order; `counts` (an int64 array of 4), when given, gets (overflow, underflow, subnormal, NaN) added.
    The one rounding of every op's result and gradient."""
    if type(x) is not np.ndarray:                       # CuPy
        if counts is None and fmt in _GPU_CASTS and x.dtype == _F32 and holds(_xp(x), fmt.storage):
            return x.astype(fmt.storage)    # the GPU's own conversion: IEEE 754's nearest-even, overflow to inf
        with np.errstate(all="ignore"):
            return _reference_path(x, fmt, "nearest", None, counts)
    if not JIT:                                         # the kernels would loop in Python: array math
        with np.errstate(all="ignore"):
            return _reference_path(x, fmt, "nearest", None, counts)
    if not x.flags.c_contiguous:        # a permuted view (an NCHW view of NHWC data): rounded in its memory order
        base, back = _memory_order(x)
        if base is not None:
            return rounded(base, fmt, counts).transpose(back)
        x = np.ascontiguousarray(x)
    return _kernel(x, fmt, "nearest", None, counts)


_GPU_CASTS = (float16, bfloat16)    # formats whose CuPy dtype converts from float32 as round_to does


@seam
def round_result(x, fmt, exact=False, keep=False, inplace=False):
    """An op's result x rounded into fmt: (its storage, its float32 values or None). exact: x holds values of fmt
    already; keep: the result may keep its values beside its storage (the speed module keeps them where the next
    op, or the backward, would widen them right back, and may write them into x: inplace)."""
    return SEAMS.rounded(x, fmt), None


@seam
def round_gradient(x, fmt, exact=False, inplace=False):
    """A gradient of a tensor inside the graph rounded into fmt: (storage or None, float32 values or None), one at
    least (the speed module may keep only the values, which the sweep reads, and may write them into x: inplace)."""
    return SEAMS.rounded(x, fmt), None


def _reference_path(x, fmt, mode, rng, counts, bits=32):
    """round_to by round_reference, on the array's own device."""
    xp = _xp(x)
    if not holds(xp, fmt.storage):
        usable = [name for name, f in FORMATS.items() if holds(xp, f.storage)]
        raise TypeError(f"{fmt.name} values cannot live on the GPU: CuPy {xp.__version__} has no "
                        f"{np.dtype(fmt.storage).name} dtype; formats it can hold: {', '.join(usable)} "
                        f"(and custom formats, kept in float32)")
    rbits = xp.asarray(_random_bits(rng, x.shape, bits)) if mode == "stochastic" else None   # the CPU's bits
    out = round_reference(x, fmt, mode, rbits, bits if mode == "stochastic" else None)
    if counts is not None:
        counts += count_rounding(x, out, fmt, mode)
    return out


class _Nearest(NamedTuple):
    """How float32 arrays round to nearest-even in one coded format (or one kept in float32 with its exponents)."""
    kernel: Callable        # kernel(float32 array, output array of `codes`)
    codes: np.dtype         # what the kernel writes: the codes' integers (int32: float32 bits)
    storage: np.dtype


@functools.lru_cache(maxsize=None)
def nearest_plan(fmt):
    """fmt's _Nearest, or None for a format no kernel rounds in one pass (kept in float32 with another
    exponent or overflow rule than float32's; unsigned e8m0; without subnormals)."""
    if not fmt.signed or not fmt.subnormals:
        return None
    if fmt.storage == _F32:
        if fmt.is_float32 or fmt.exp_bits != 8 or fmt.bias != 127 or fmt.overflow_code != fmt.max_code + 1 \
                or not fmt.infinities or fmt.nan is not True:
            return None
        shift = 23 - fmt.man_bits
        name = f"_round_nearest_wide_m{fmt.man_bits}"
        kernel = numba.njit(cache=True, nogil=True)(_clone(_round_nearest_wide, name, C=(
            i32(shift), i32((1 << (shift - 1)) - 1), i32(-(1 << shift)))))
        return _Nearest(kernel, np.dtype(np.int32), _F32)
    return _Nearest(_nearest_kernel(fmt), _CODES[fmt.storage.itemsize * 8], fmt.storage)


def _round_nearest(x, plan):
    """A C-contiguous float32 array rounded to nearest-even by plan's kernel."""
    out = np.empty(x.shape, plan.codes)
    plan.kernel(x.reshape(-1), out.reshape(-1))     # views: the kernels take 1-D arrays
    return out.view(plan.storage)


def round_kernel(x, fmt, mode="nearest", rng=None, counts=None, bits=None):
    """round_to through the Numba kernels alone (the tests call it directly, also with NUMBA_DISABLE_JIT)."""
    x, fmt, bits = _check(_asarray(x), fmt, mode, counts, bits)
    return _kernel(_contiguous(x), fmt, mode, rng, counts, bits)


def _kernel(x, fmt, mode, rng, counts, bits=32):
    """round_kernel for a checked contiguous array and a Format. The kernels do integer work, which raises no
    floating-point warnings."""
    storage = fmt.storage
    decode = storage == _F32
    plan = nearest_plan(fmt) if mode == "nearest" and x.dtype == _F32 else None
    if plan is not None and (counts is None or decode):
        out = _round_nearest(x, plan)
        if counts is not None:
            counts += count_rounding(x, out, fmt, mode)
        return out
    out = np.empty(x.shape, _F32 if decode else _CODES[storage.itemsize * 8])
    src, flat = x.ravel(), out.ravel()          # views: both are contiguous
    if plan is not None:                        # a coded format: counted in the same pass
        counts += np.array(_nearest_kernel(fmt, counted=True)(src, flat), np.int64)
        return out.view(storage)
    view, src_man, src_bias, src_emask = _SOURCES[x.dtype]
    rbits = _random_bits(rng, x.size, bits) if mode == "stochastic" else np.empty(0, np.uint32)
    ROUND_BITS(src.view(view), flat, rbits, src_man, src_bias, src_emask, fmt.man_bits, fmt.emin, fmt.bias,
               fmt.exp_bits + fmt.man_bits, fmt.subnormals, fmt.max_code, fmt.overflow_code, fmt.nan_code,
               _MODE_ID[mode], bits, decode, fmt.signs)
    out = out if decode else out.view(storage)
    if counts is not None:
        counts += count_rounding(x, out, fmt, mode)
    return out


def count_rounding(x, out, fmt, mode="nearest"):
    """(overflow, underflow, subnormal, nan) of rounding x into `out` in `mode`, by array math (what the
    counting kernel computes in its loop for nearest)."""
    fmt = as_format(fmt)
    xp = _xp(out)
    y = xp.abs(out.astype(xp.float32))
    x = xp.asarray(x)
    ax = xp.abs(x)
    underflow = (ax != 0) & xp.isfinite(ax) & (y == 0)            # a NaN that becomes a zero is no underflow
    with np.errstate(invalid="ignore"):         # widening a signalling NaN for the float64 thresholds flags it
        over = _overflows(xp, x, ax, out, fmt, mode)
    return np.array([int(over.sum()), int(underflow.sum()),
                     int(((y != 0) & (y < 2.0**fmt.emin)).sum()), int(xp.isnan(ax).sum())], np.int64)


def _overflows(xp, x, ax, out, fmt, mode):
    """Where x overflows (IEEE 754 7.4): rounded as if the exponent range were unbounded, it would pass max.
    Thresholds in float64 (exact: at most p + 1 bits), so that float32 arrays compare without rounding them."""
    big = float(fmt.decode(fmt.max_code))
    step = 2.0 ** (np.floor(np.log2(big)) - fmt.man_bits)          # the spacing at max
    big, mid, nxt = np.float64(big), np.float64(big + step / 2), np.float64(big + step)
    max_odd = bool(fmt.max_code & 1)
    if mode == "nearest":
        over = (ax > mid) | ((ax == mid) & max_odd)
    elif mode == "nearest_away":
        over = ax >= mid
    elif mode == "toward_zero":
        over = ax >= nxt
    elif mode == "odd":                                 # truncated to max, then made odd: past it if max is even
        over = ax >= nxt if max_odd else ax > big
    elif mode == "up":
        over = (x > big) | (x <= -nxt)
    elif mode == "down":
        over = (x < -big) | (x >= nxt)
    else:                                               # stochastic: where it rounded past max (not saturating)
        over = (ax >= nxt) | ((ax > big) & (xp.abs(out.astype(xp.float32)) != big))
    return xp.isfinite(ax) & over


def round_reference(x, fmt, mode="nearest", rbits=None, bits=None):
    """Plain array-math reference of round_to, in float64 (works for NumPy and CuPy arrays).

    rbits: for mode="stochastic", one random integer below 2**bits per element (bits None: 32)."""
    bits = _bits_of(mode, bits)
    xp = _xp(x)
    with np.errstate(all="ignore"):
        return _reference(xp, _float64(xp, x), as_format(fmt), mode, rbits, bits)


# CuPy compiles every kernel with -ftz=true: its float32 arithmetic and conversions flush float32 subnormals
# (bfloat16's subnormals among them) to zero. The reference moves them between float32 and float64 by their bits.
_SUB32 = 2.0 ** -126                # float32's smallest normal
_UNIT32 = 2.0 ** -149               # its smallest subnormal


def _float64(xp, x):
    """x as float64, exactly: float32 subnormals too on a GPU."""
    wide = x.astype(np.float64)
    if xp is np or x.dtype != np.float32:
        return wide
    b = x.view(np.uint32)
    tiny = (b & 0x7FFFFF).astype(np.float64) * _UNIT32              # |x| where x is subnormal: exact
    return xp.where((b & 0x7F800000) == 0, xp.where(b >> 31 == 1, -tiny, tiny), wide)


def _stored(xp, y, storage):
    """Values y (float64, each a value of the storage dtype) in that dtype, float32's subnormals kept on a GPU."""
    if xp is np or np.dtype(storage) not in (_F32, _BF16):
        return y.astype(storage)
    b = y.astype(np.float32).view(np.uint32)
    ay = xp.abs(y)
    tiny = (ay * (1 / _UNIT32)).astype(np.uint32) | xp.where(xp.signbit(y), np.uint32(1 << 31), np.uint32(0))
    b = xp.where(ay < _SUB32, tiny, b)
    return b.view(np.float32) if np.dtype(storage) == _F32 else (b >> 16).astype(np.uint16).view(storage)


def _integer(xp, q, mode, rbits=None, bits=32):
    """Scaled values (a float64 array) rounded to integers in `mode`, as float64 with q's signs (zeros too).

    rbits: for "stochastic", integers below 2**bits, one per element: |q| rounds up iff its bits' integer is
    below the fraction of |q| truncated to `bits` bits. Every step is exact: floor, a fraction, a power of two.
    """
    a = xp.abs(q)
    whole = xp.floor(a)
    frac = a - whole
    if mode in ("nearest", "odd"):
        half = whole * 0.5                               # exact; fmod would cost a third of the reference
        odd = half != xp.floor(half)
    if mode == "nearest":
        up = (frac > 0.5) | ((frac == 0.5) & odd)
    elif mode == "nearest_away":
        up = frac >= 0.5
    elif mode == "up":
        up = (frac > 0) & (q > 0)
    elif mode == "down":
        up = (frac > 0) & (q < 0)
    elif mode == "odd":
        up = (frac > 0) & ~odd
    elif mode == "stochastic":
        up = rbits.reshape(q.shape) < xp.floor(xp.ldexp(frac, bits))
    else:                                                # toward_zero
        up = False
    return xp.copysign(whole + up, q)


def _reference(xp, x, fmt, mode, rbits, bits=32):
    _, e = xp.frexp(x)                                   # |x| = f * 2**e with f in [0.5, 1)
    # Below the smallest normal the quantum is the smallest subnormal, or without subnormals the
    # smallest normal itself: 0 and 2**emin are neighbours there, and x rounds between them.
    low = fmt.man_bits if fmt.subnormals else 0
    quantum_exp = xp.where(e - 1 < fmt.emin, fmt.emin - low, e - 1 - fmt.man_bits)
    q = _integer(xp, xp.ldexp(x, -quantum_exp), mode, rbits, bits)     # the scaling is exact: a power of two
    y = xp.ldexp(q, quantum_exp)
    y = xp.where(x == 0, x, y)                           # keep the sign of zeros
    big = float(fmt.decode(fmt.max_code))
    over = float(fmt.decode(fmt.overflow_code))
    # Past max (IEEE 754 7.4): where the mode rounds the magnitude down, max; elsewhere the overflow value.
    if mode in ("toward_zero", "odd"):
        limit = big
    elif mode in ("up", "down"):
        limit = xp.where((x < 0) == (mode == "up"), big, over)
    else:
        limit = over
    y = xp.where(xp.abs(y) > big, xp.copysign(limit, x), y)
    y = xp.where(xp.isinf(x), xp.copysign(big if fmt.overflow == "saturate" else over, x), y)
    return _stored(xp, _specials(xp, x, y, fmt), fmt.storage)


def _specials(xp, x, y, fmt):
    """The reference's NaNs, zeros and signs, by the format's rules (see _round_bits' signs)."""
    if fmt.nan is False:                                 # the zero of the opposite sign, as ml_dtypes
        y = xp.where(xp.isnan(x), xp.where(xp.signbit(x), 0.0, -0.0), y)
    else:
        y = xp.where(xp.isnan(x), xp.copysign(xp.nan, x), y)
    if fmt.signs == 1:                                   # fnuz: no -0
        y = xp.where(y == 0, 0.0, y)
    if fmt.man_bits == 0:                                # no zero: what rounds to 0 takes the smallest value
        y = xp.where(y == 0, fmt.smallest, y)
    if not fmt.signed:
        y = xp.where((x <= 0) | xp.isinf(x), xp.copysign(xp.nan, x), y)
    return y


@seam
def widened(a, fmt=None):
    """Storage of a format (an array of its storage dtype, NumPy or CuPy) as float32 values, exactly."""
    return a if a.dtype == _F32 else a.astype(np.float32)


def widen(a, fmt=None):
    """Format storage -> float32 values (exact)."""
    return a if a.dtype is _F32 else SEAMS.widened(a, fmt)


def _memory_order(x):
    """(x's axes permuted into memory order, the permutation back) when that is C-contiguous, else (None, None):
    elementwise kernels then run over permuted views (a convolution's NCHW view of NHWC data) without a copy."""
    perm, back = _orders(x.strides)
    base = x.transpose(perm)
    return (base, back) if base.flags.c_contiguous else (None, None)


@functools.lru_cache(maxsize=256)
def _orders(strides):
    """(the axes by decreasing stride, the permutation back): a few strides recur on every step (4 us to sort)."""
    perm = sorted(range(len(strides)), key=lambda i: -strides[i])
    back = [0] * len(strides)
    for i, p in enumerate(perm):
        back[p] = i
    return tuple(perm), tuple(back)


def _contiguous(x):
    """x, or a C-contiguous copy of it; of the same shape (np.ascontiguousarray makes 0-d arrays 1-d)."""
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


def _no_tensor(x):
    """round_to takes arrays: a minifp tensor (anything with a format and an astype) would otherwise become a 0-d
    object array and a confusing error."""
    if type(x) is not np.ndarray and hasattr(x, "fmt") and hasattr(x, "astype"):
        raise TypeError(f"x: got a minifp tensor ({x.fmt or x.dtype}); round_to takes arrays: use "
                        f"x.astype(fmt, mode=..., bits=...) for a tensor, or round_to(x.numpy(), ...)")


def _asarray(x):
    """NumPy arrays for anything host-side (lists, NumPy scalars); CuPy arrays as they are."""
    if type(x) is np.ndarray:
        return x
    return np.asarray(x) if _xp(x) is np else x
