"""Number formats as data: widths, bias, limits, special values and storage, one table."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import ml_dtypes
import numpy as np

OVERFLOW_MODES = ("inf", "saturate")
NAN_KINDS = (True, False, "negzero")
F32_MAX = float.fromhex("0x1.fffffep127")
F32_MIN_SUBNORMAL = 2.0**-149


@dataclass(frozen=True)
class Format:
    """A binary format: sign, `exp_bits` exponent and `man_bits` mantissa bits (OCP, IEEE, fnuz, e8m0, fixed point).

    bias: exponent bias (None: IEEE's 2**(exp_bits-1) - 1). nan: True (IEEE's NaNs in the top exponent, or the
    all-ones code where there are no infinities), False (no NaN: every code is a number, as OCP's FP6/FP4), or
    "negzero" (fnuz: the code of -0 is the one NaN, and there is no -0). signed=False: no sign bit (e8m0).
    With no mantissa bits there is no zero and no subnormal: exponent field 0 is 2**-bias (e8m0).
    overflow: None chooses "saturate" where the format has neither inf nor NaN, else "inf" (inf, or NaN
    for formats without inf).
    """

    exp_bits: int
    man_bits: int
    subnormals: bool = True
    overflow: str | None = None
    infinities: bool = True
    nan: bool | str = True
    bias: int | None = None
    signed: bool = True
    name: str = field(default="", compare=False)

    def __post_init__(self):
        for what, value, lo, hi in (("exp_bits", self.exp_bits, 1, 8), ("man_bits", self.man_bits, 0, 23)):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
                    or not lo <= value <= hi:
                raise ValueError(f"Format {what}={value!r} is impossible: it must be an integer in "
                                 f"[{lo}, {hi}] so that every value fits a float32 container")
            object.__setattr__(self, what, int(value))
        for what in ("subnormals", "infinities", "signed"):
            value = getattr(self, what)
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"Format {what}={value!r} is not a flag; valid values: True, False")
            object.__setattr__(self, what, bool(value))
        self._check_specials()
        bias = (1 << (self.exp_bits - 1)) - 1 if self.bias is None else self.bias
        if isinstance(bias, (bool, np.bool_)) or not isinstance(bias, (int, np.integer)):
            raise TypeError(f"Format bias={bias!r} is not an integer; valid values: an int, or None for IEEE's "
                            f"2**(exp_bits-1) - 1")
        object.__setattr__(self, "bias", int(bias))
        self._check_range()
        if not self.name and self.is_fixed:
            object.__setattr__(self, "name", f"fixed{self.man_bits + 2}_{self.bias + self.man_bits - 1}")
        if not self.name:
            suffix = "" if self.infinities else {True: "fn", False: "fn", "negzero": "fnuz"}[self.nan]
            object.__setattr__(self, "name", f"e{self.exp_bits}m{self.man_bits}{suffix}"
                                             + ("" if self.signed else "u"))

    def _check_specials(self):
        """Validate nan, overflow, and the flags that go with them (one error naming the argument)."""
        nan = bool(self.nan) if isinstance(self.nan, np.bool_) else self.nan
        if not (nan is True or nan is False or isinstance(nan, str) and nan == "negzero"):
            raise ValueError(f"Format nan={self.nan!r}: unknown NaN kind; valid values: True, False, 'negzero'")
        object.__setattr__(self, "nan", nan)
        if self.man_bits == 0 and self.subnormals:
            raise ValueError("Format man_bits=0 has no subnormals: pass subnormals=False (exponent field 0 is then "
                             "2**-bias, as e8m0's)")
        if self.infinities and (self.nan is not True or self.man_bits == 0):
            raise ValueError(f"Format(exp_bits={self.exp_bits}, man_bits={self.man_bits}, nan={self.nan!r}, "
                             f"infinities=True) is impossible: infinities take IEEE's top exponent, which needs "
                             f"nan=True and man_bits >= 1; use infinities=False")
        if self.infinities and self.exp_bits == 1:
            raise ValueError(f"Format(exp_bits=1, man_bits={self.man_bits}, infinities=True) has no normal numbers: "
                             f"its only exponent field above 0 would hold inf and NaN; use infinities=False (with "
                             f"nan=False: fixed point's layout, as minifp.Fixed builds it)")
        if self.nan == "negzero" and not self.signed:
            raise ValueError("Format nan='negzero' needs signed=True: its NaN is the code of -0")
        overflow = self.overflow
        if overflow is None:
            overflow = "saturate" if not self.infinities and self.nan is False else "inf"
        if not isinstance(overflow, str) or overflow not in OVERFLOW_MODES:
            raise ValueError(f"Format overflow={overflow!r}: unknown overflow mode {overflow!r}; "
                             f"valid modes: {', '.join(OVERFLOW_MODES)}")
        if overflow == "inf" and not self.infinities and self.nan is False:
            raise ValueError("Format overflow='inf' is impossible without infinities and NaN (nan=False, "
                             "infinities=False): use overflow='saturate'")
        object.__setattr__(self, "overflow", overflow)

    def _check_range(self):
        # Only 8 exponent bits without infinities can pass float32's max (by a binade: 6.8e38).
        if self.decode(self.max_code) > F32_MAX:
            raise ValueError(f"Format(exp_bits={self.exp_bits}, man_bits={self.man_bits}, infinities=False) is "
                             f"impossible: its max {float(self.decode(self.max_code)):.4g} does not fit its "
                             f"float32 container (max {F32_MAX:.4g}); with 8 exponent bits use infinities=True, "
                             f"or at most 7 exponent bits")
        if self.smallest < F32_MIN_SUBNORMAL:
            raise ValueError(f"Format bias={self.bias} is impossible for exp_bits={self.exp_bits}, "
                             f"man_bits={self.man_bits}: its smallest value {self.smallest:.4g} is below float32's "
                             f"smallest subnormal 2**-149 (its container's); use a bias of at most "
                             f"{self.bias - round(np.log2(F32_MIN_SUBNORMAL / self.smallest))}")

    # -- derived layout -------------------------------------------------
    @cached_property
    def bits(self) -> int:
        """Total bits of one encoded value."""
        return int(self.signed) + self.exp_bits + self.man_bits

    @cached_property
    def is_fixed(self) -> bool:
        """True for fixed point: one exponent bit, subnormals, no inf or NaN, saturating (what Fixed builds)."""
        return (self.exp_bits == 1 and self.man_bits >= 1 and self.subnormals and not self.infinities
                and self.nan is False and self.signed and self.overflow == "saturate")

    @cached_property
    def emin(self) -> int:
        """Exponent of the smallest normal number (exponent field 1; field 0 itself without mantissa bits)."""
        return (1 if self.man_bits else 0) - self.bias

    @cached_property
    def smallest(self) -> float:
        """The smallest positive value."""
        return 2.0 ** (self.emin - (self.man_bits if self.subnormals else 0))

    @cached_property
    def max_code(self) -> int:
        """Encoding (sign bit clear) of the largest finite value."""
        all_ones = (1 << (self.exp_bits + self.man_bits)) - 1
        # IEEE-like formats reserve the top exponent for inf/NaN; "fn" formats reserve only all-ones for NaN;
        # formats without NaN, or whose NaN is -0 (fnuz), use every code.
        if self.infinities:
            return all_ones - (1 << self.man_bits)
        return all_ones - 1 if self.nan is True else all_ones

    @cached_property
    def nan_code(self) -> int:
        """Encoding of the canonical quiet NaN (sign bit clear), or of -0 where NaN becomes a zero.

        fnuz: -0's code, the format's NaN. No NaN (nan=False): also -0's code, since a NaN rounds to the zero of
        the opposite sign (ml_dtypes' choice; OCP leaves it to the implementation): the kernels XOR the sign in.
        """
        top = ((1 << self.exp_bits) - 1) << self.man_bits
        if self.nan is not True:
            return 1 << (self.exp_bits + self.man_bits)
        return top | (1 << (self.man_bits - 1)) if self.infinities else top | ((1 << self.man_bits) - 1)

    @cached_property
    def overflow_code(self) -> int:
        """What a value rounding past max becomes: inf, NaN for formats without inf, or max when saturating."""
        if self.overflow == "saturate":
            return self.max_code
        return self.max_code + 1 if self.infinities else self.nan_code

    @cached_property
    def signs(self) -> int:
        """The kernels' sign rule: 2 signed with -0, 1 signed without -0 (fnuz), 0 unsigned (e8m0)."""
        return 0 if not self.signed else 1 if self.nan == "negzero" else 2

    @cached_property
    def storage(self) -> np.dtype:
        """The NumPy dtype that holds this format's values."""
        return np.dtype(_STORAGE.get(self._layout, np.float32))

    @cached_property
    def _layout(self):
        """What fixes the encoding (not the overflow rule): the key of the storage table."""
        return (self.exp_bits, self.man_bits, self.infinities, self.subnormals, self.nan, self.bias, self.signed)

    @cached_property
    def native(self) -> bool:
        """True when the storage dtype's own casts round exactly as this format (numpy/ml_dtypes types)."""
        return self.storage != np.float32 and _BY_STORAGE[self.storage] == self

    def __hash__(self):         # kernels are looked up by format on every call: hash once
        return self._hash

    def __eq__(self, other):    # the dataclass's comparison (every field but name), from one cached tuple
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self is other or self._key == other._key

    @cached_property
    def _key(self) -> tuple:
        return self._layout + (self.overflow,)

    @cached_property
    def _hash(self) -> int:
        return hash(self._key)

    @cached_property
    def compute_dtype(self):
        """The dtype an op computes in for results of this format: float32 holds 24 bits, enough for one rounding
        into formats of at most 10 mantissa bits (24 >= 2p + 2); wider formats compute in float64."""
        return np.float32 if self.man_bits <= 10 or self.is_float32 else np.float64

    @cached_property
    def is_float32(self) -> bool:
        """True for float32 itself: its widths, subnormals, infinities and overflow to inf, all of them."""
        return self == float32

    def __repr__(self):
        if FORMATS.get(self.name, ALIASES.get(self.name)) == self:
            return f"minifp.{self.name}"
        if self.is_fixed:
            return f"minifp.Fixed({self.man_bits + 2}, {self.bias + self.man_bits - 1})"
        extra = "".join(f", {k}={getattr(self, k)!r}" for k, default in (("nan", True), ("signed", True))
                        if getattr(self, k) != default)
        bias = "" if self.bias == (1 << (self.exp_bits - 1)) - 1 else f", bias={self.bias}"
        return (f"Format(exp_bits={self.exp_bits}, man_bits={self.man_bits}, subnormals={self.subnormals}, "
                f"overflow={self.overflow!r}, infinities={self.infinities}{extra}{bias})")

    def __str__(self):
        return self.name

    def decode(self, code):
        """Values (float64) of integer encodings; the reference decoder."""
        code = np.asarray(code, dtype=np.int64)
        width = self.exp_bits + self.man_bits
        mag = code & ((1 << width) - 1)
        exp_field, man = mag >> self.man_bits, mag & ((1 << self.man_bits) - 1)
        normal = np.ldexp(1.0 + man / 2.0**self.man_bits, exp_field - self.bias)
        sub = np.ldexp(man / 2.0**self.man_bits, self.emin) if self.subnormals else 0.0 * man
        value = np.where((exp_field == 0) & (self.man_bits > 0), sub, normal)
        value = np.where(mag > self.max_code, np.inf, value)
        value = np.where(mag > self.max_code + (1 if self.infinities else 0), np.nan, value)
        negative = (code >> width & 1).astype(bool) if self.signed else np.zeros(code.shape, bool)
        if self.nan == "negzero":
            value = np.where(negative & (mag == 0), np.nan, value)
        return np.where(negative, -value, value)   # -NaN keeps its sign


def Fixed(bits, frac_bits, name=""):
    """A signed fixed-point format: `bits` bits in all, values k * 2**-frac_bits, |k| < 2**(bits-1), saturating.

    Sign and magnitude, so symmetric (as MXINT8's elements in microsoft/microxcaling): two's complement's
    extra negative, -2**(bits-1) * 2**-frac_bits, is left out. As a Format: one exponent bit whose field 0
    holds the subnormals k * 2**-frac_bits, k < 2**(bits-2), and field 1 the rest, each with the same
    quantum: fixed point is a float format with no exponent range. Kept in float32 (exact up to 25 bits).
    """
    for what, value, lo, hi in (("bits", bits, 3, 25), ("frac_bits", frac_bits, -100, 149)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
            raise ValueError(f"Fixed {what}={value!r} is impossible: it must be an integer in [{lo}, {hi}] so "
                             f"that every value fits a float32 container")
    bits, frac_bits = int(bits), int(frac_bits)
    return Format(1, bits - 2, subnormals=True, overflow="saturate", infinities=False, nan=False,
                  bias=frac_bits - bits + 3, name=name or f"fixed{bits}_{frac_bits}")


@dataclass(frozen=True)
class finfo:
    """Machine limits of a format, like numpy.finfo: max, tiny, smallest_subnormal, eps, widths.

    For fixed point: tiny is 2**emin of its one-exponent-bit layout; smallest_subnormal and eps are its resolution.
    """

    fmt: Format

    def __init__(self, fmt):
        object.__setattr__(self, "fmt", as_format(fmt))

    bits = property(lambda self: self.fmt.bits)
    exp_bits = property(lambda self: self.fmt.exp_bits)
    man_bits = property(lambda self: self.fmt.man_bits)
    max = property(lambda self: float(self.fmt.decode(self.fmt.max_code)))
    min = property(lambda self: -self.max if self.fmt.signed else self.fmt.smallest)
    tiny = property(lambda self: 2.0 ** self.fmt.emin)
    smallest_normal = tiny
    smallest_subnormal = property(lambda self: self.fmt.smallest)
    # The spacing of values at 1.0: 2**-man_bits, or the subnormals' quantum where 1.0 lies below 2**emin.
    eps = property(lambda self: 2.0 ** (max(0, self.fmt.emin) - self.fmt.man_bits))
    dtype = property(lambda self: self.fmt.storage)

    def __repr__(self):
        return (f"finfo({self.fmt.name}: max={self.max!r}, tiny={self.tiny!r}, "
                f"smallest_subnormal={self.smallest_subnormal!r}, eps={self.eps!r}, bits={self.bits})")


float32 = Format(8, 23, name="float32")
tf32 = Format(8, 10, name="tf32")
float16 = Format(5, 10, name="float16")
bfloat16 = Format(8, 7, name="bfloat16")
float8_e4m3 = Format(4, 3, infinities=False, name="float8_e4m3")
float8_e5m2 = Format(5, 2, name="float8_e5m2")
# AMD/Graphcore's fnuz fp8: one more binade below (bias + 1), no infinities, no -0; -0's code is the NaN.
float8_e4m3fnuz = Format(4, 3, infinities=False, nan="negzero", bias=8, name="float8_e4m3fnuz")
float8_e5m2fnuz = Format(5, 2, infinities=False, nan="negzero", bias=16, name="float8_e5m2fnuz")
# OCP Microscaling (MX) v1.0 element types: no inf, no NaN, every exponent holds numbers; they saturate.
float6_e2m3 = Format(2, 3, infinities=False, nan=False, name="float6_e2m3")
float6_e3m2 = Format(3, 2, infinities=False, nan=False, name="float6_e3m2")
float4_e2m1 = Format(2, 1, infinities=False, nan=False, name="float4_e2m1")
# MX's shared scale: unsigned powers of two 2**-127 .. 2**127, 0xFF the NaN, no zero.
e8m0 = Format(8, 0, subnormals=False, infinities=False, signed=False, bias=127, name="e8m0")
int8 = Fixed(8, 0, name="int8")

FORMATS = {f.name: f for f in (float32, tf32, float16, bfloat16, float8_e4m3, float8_e5m2, float8_e4m3fnuz,
                               float8_e5m2fnuz, float6_e2m3, float6_e3m2, float4_e2m1, e8m0, int8)}
ALIASES = {"half": float16, "fp16": float16, "bf16": bfloat16, "single": float32, "fp32": float32,
           "float": float32, "float8_e4m3fn": float8_e4m3, "e4m3": float8_e4m3, "e5m2": float8_e5m2,
           "float6_e2m3fn": float6_e2m3, "float6_e3m2fn": float6_e3m2, "float4_e2m1fn": float4_e2m1,
           "float8_e8m0fnu": e8m0, "e2m3": float6_e2m3, "e3m2": float6_e3m2, "e2m1": float4_e2m1}

# The formats whose encoding a storage dtype has exactly (numpy's and ml_dtypes' types).
_NATIVE = {float16: np.float16, bfloat16: ml_dtypes.bfloat16, float8_e4m3: ml_dtypes.float8_e4m3fn,
           float8_e5m2: ml_dtypes.float8_e5m2, float8_e4m3fnuz: ml_dtypes.float8_e4m3fnuz,
           float8_e5m2fnuz: ml_dtypes.float8_e5m2fnuz, float6_e2m3: ml_dtypes.float6_e2m3fn,
           float6_e3m2: ml_dtypes.float6_e3m2fn, float4_e2m1: ml_dtypes.float4_e2m1fn, e8m0: ml_dtypes.float8_e8m0fnu}
_STORAGE = {f._layout: dtype for f, dtype in _NATIVE.items()}
_BY_STORAGE = {**{np.dtype(dtype): f for f, dtype in _NATIVE.items()},
               np.dtype(np.float32): float32, np.dtype(np.float64): float32}
_VALID = f"{', '.join(FORMATS)} (or a minifp.Format(exp_bits, man_bits), or the NumPy dtype of one of them)"


def as_format(fmt, arg="fmt") -> Format:
    """The Format named by `fmt`: a Format, a name such as "float16", or a NumPy float dtype."""
    if isinstance(fmt, Format):
        return fmt
    if isinstance(fmt, str):
        key = fmt.lower()
        if key in FORMATS or key in ALIASES:
            return FORMATS.get(key) or ALIASES[key]
        raise ValueError(f"{arg}: unknown format {fmt!r}; valid formats: {_VALID}")
    try:
        if fmt is not None:                 # np.dtype(None) would be float64, i.e. float32 here
            return _BY_STORAGE[np.dtype(fmt)]
    except (TypeError, ValueError, KeyError):
        pass
    raise TypeError(f"{arg}: {fmt!r} is not a format; valid formats: {_VALID}")


def _holds(a: Format, b: Format) -> bool:
    """Every value of b is one of a's (by limits: a's significand, range and sign cover b's)."""
    fa, fb = finfo(a), finfo(b)
    return (a.man_bits >= b.man_bits and fa.max >= fb.max and fa.tiny <= fb.tiny and a.smallest <= b.smallest
            and (a.signed or not b.signed))


@lru_cache(maxsize=256)      # the dispatcher promotes per op; _holds builds two finfos (~50 us)
def promote(a: Format, b: Format) -> Format:
    """The narrowest format holding every value of both, as PyTorch's type promotion (float16+bfloat16 -> float32)."""
    if a == b:
        return a
    if _holds(a, b):
        return a
    if _holds(b, a):
        return b
    return float32
