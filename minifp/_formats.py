"""Floating-point formats as data: widths, limits and storage, one table."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import ml_dtypes
import numpy as np

OVERFLOW_MODES = ("inf", "saturate")
F32_MAX = float.fromhex("0x1.fffffep127")


@dataclass(frozen=True)
class Format:
    """A binary floating-point format: sign, `exp_bits` exponent and `man_bits` mantissa bits."""

    exp_bits: int
    man_bits: int
    subnormals: bool = True
    overflow: str = "inf"
    infinities: bool = True
    name: str = field(default="", compare=False)

    def __post_init__(self):
        for what, value, lo, hi in (("exp_bits", self.exp_bits, 2, 8), ("man_bits", self.man_bits, 1, 23)):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
                    or not lo <= value <= hi:
                raise ValueError(f"Format {what}={value!r} is impossible: it must be an integer in "
                                 f"[{lo}, {hi}] so that every value fits a float32 container")
            object.__setattr__(self, what, int(value))
        for what in ("subnormals", "infinities"):
            value = getattr(self, what)
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"Format {what}={value!r} is not a flag; valid values: True, False")
            object.__setattr__(self, what, bool(value))
        if not isinstance(self.overflow, str) or self.overflow not in OVERFLOW_MODES:
            raise ValueError(f"Format overflow={self.overflow!r}: unknown overflow mode {self.overflow!r}; "
                             f"valid modes: {', '.join(OVERFLOW_MODES)}")
        # Only 8 exponent bits without infinities can pass float32's max (by a binade: 6.8e38).
        if self.decode(self.max_code) > F32_MAX:
            raise ValueError(f"Format(exp_bits={self.exp_bits}, man_bits={self.man_bits}, infinities=False) is "
                             f"impossible: its max {float(self.decode(self.max_code)):.4g} does not fit its "
                             f"float32 container (max {F32_MAX:.4g}); with 8 exponent bits use infinities=True, "
                             f"or at most 7 exponent bits")
        if not self.name:
            suffix = "" if self.infinities else "fn"
            object.__setattr__(self, "name", f"e{self.exp_bits}m{self.man_bits}{suffix}")

    # -- derived layout -------------------------------------------------
    @cached_property
    def bits(self) -> int:
        """Total bits of one encoded value."""
        return 1 + self.exp_bits + self.man_bits

    @cached_property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @cached_property
    def emin(self) -> int:
        """Exponent of the smallest normal number."""
        return 1 - self.bias

    @cached_property
    def max_code(self) -> int:
        """Encoding (sign bit clear) of the largest finite value."""
        all_ones = (1 << (self.exp_bits + self.man_bits)) - 1
        # IEEE-like formats reserve the top exponent for inf/NaN; "fn" formats reserve only all-ones for NaN.
        return all_ones - (1 << self.man_bits) if self.infinities else all_ones - 1

    @cached_property
    def nan_code(self) -> int:
        """Encoding of the canonical quiet NaN (sign bit clear)."""
        top = ((1 << self.exp_bits) - 1) << self.man_bits
        return top | (1 << (self.man_bits - 1)) if self.infinities else top | ((1 << self.man_bits) - 1)

    @cached_property
    def overflow_code(self) -> int:
        """What a value rounding past max becomes: inf, NaN for formats without inf, or max when saturating."""
        if self.overflow == "saturate":
            return self.max_code
        return self.max_code + 1 if self.infinities else self.nan_code

    @cached_property
    def storage(self) -> np.dtype:
        """The NumPy dtype that holds this format's values."""
        key = (self.exp_bits, self.man_bits, self.infinities, self.subnormals)
        return np.dtype(_STORAGE.get(key, np.float32))

    @cached_property
    def native(self) -> bool:
        """True when the storage dtype's own casts round exactly as this format (numpy/ml_dtypes types)."""
        return self.storage != np.float32 and _BY_STORAGE[self.storage] == self

    def __hash__(self):         # kernels are looked up by format on every call: hash once
        return self._hash

    @cached_property
    def _hash(self) -> int:
        return hash((self.exp_bits, self.man_bits, self.subnormals, self.overflow, self.infinities))

    @cached_property
    def is_float32(self) -> bool:
        """True for float32 itself: its widths, subnormals, infinities and overflow to inf, all of them."""
        return self == float32

    def __repr__(self):
        return f"minifp.{self.name}" if self.name in FORMATS else (
            f"Format(exp_bits={self.exp_bits}, man_bits={self.man_bits}, subnormals={self.subnormals}, "
            f"overflow={self.overflow!r}, infinities={self.infinities})")

    def __str__(self):
        return self.name

    def decode(self, code):
        """Values (float64) of integer encodings; the reference decoder."""
        code = np.asarray(code, dtype=np.int64)
        mag = code & ((1 << (self.exp_bits + self.man_bits)) - 1)
        exp_field, man = mag >> self.man_bits, mag & ((1 << self.man_bits) - 1)
        normal = np.ldexp(1.0 + man / 2.0**self.man_bits, exp_field - self.bias)
        sub = np.ldexp(man / 2.0**self.man_bits, self.emin) if self.subnormals else 0.0 * man
        value = np.where(exp_field == 0, sub, normal)
        value = np.where(mag > self.max_code, np.inf, value)
        value = np.where(mag > self.max_code + (1 if self.infinities else 0), np.nan, value)
        return np.where(code >> (self.exp_bits + self.man_bits) & 1, -value, value)   # -NaN keeps its sign


@dataclass(frozen=True)
class finfo:
    """Machine limits of a format, like numpy.finfo: max, tiny, smallest_subnormal, eps, widths."""

    fmt: Format

    def __init__(self, fmt):
        object.__setattr__(self, "fmt", as_format(fmt))

    bits = property(lambda self: self.fmt.bits)
    exp_bits = property(lambda self: self.fmt.exp_bits)
    man_bits = property(lambda self: self.fmt.man_bits)
    max = property(lambda self: float(self.fmt.decode(self.fmt.max_code)))
    min = property(lambda self: -self.max)
    tiny = property(lambda self: 2.0 ** self.fmt.emin)
    smallest_normal = tiny
    smallest_subnormal = property(lambda self: 2.0 ** (self.fmt.emin - self.fmt.man_bits)
                                  if self.fmt.subnormals else self.tiny)
    eps = property(lambda self: 2.0 ** -self.fmt.man_bits)
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

FORMATS = {f.name: f for f in (float32, tf32, float16, bfloat16, float8_e4m3, float8_e5m2)}
ALIASES = {"half": float16, "fp16": float16, "bf16": bfloat16, "single": float32, "fp32": float32,
           "float": float32, "float8_e4m3fn": float8_e4m3, "e4m3": float8_e4m3, "e5m2": float8_e5m2}

# (exp_bits, man_bits, infinities, subnormals) -> storage dtype with exactly that encoding.
_STORAGE = {(5, 10, True, True): np.float16, (8, 7, True, True): ml_dtypes.bfloat16,
            (4, 3, False, True): ml_dtypes.float8_e4m3fn, (5, 2, True, True): ml_dtypes.float8_e5m2}
_BY_STORAGE = {np.dtype(np.float16): float16, np.dtype(ml_dtypes.bfloat16): bfloat16,
               np.dtype(ml_dtypes.float8_e4m3fn): float8_e4m3, np.dtype(ml_dtypes.float8_e5m2): float8_e5m2,
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


def promote(a: Format, b: Format) -> Format:
    """The narrowest format holding every value of both, as PyTorch's type promotion (float16+bfloat16 -> float32)."""
    if a == b:
        return a
    if a.exp_bits >= b.exp_bits and a.man_bits >= b.man_bits:
        return a
    if b.exp_bits >= a.exp_bits and b.man_bits >= a.man_bits:
        return b
    return float32
