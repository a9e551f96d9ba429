"""Exact and tanh GELU kernels (minifp/_speed.py) against the plain path (minifp/_ops.py), bit for bit, on every
float16 and bfloat16 value (what the engine hands a half-precision GELU: float32 copies of them), the ends of
erfc's and exp64's ranges, subnormals, signed zeros, infinities, NaNs with payloads, and inputs whose float64
result lies nearest a float32 rounding tie. The speed module's functions are called directly, so these run
without the JIT too (on fewer values)."""
import math

import numpy as np
import pytest

from minifp import _intrinsics, _ops, _speed
from minifp._seams import PLAIN

STEP = 1 if _intrinsics.JIT else 97     # every 16-bit pattern with the kernels compiled; a sample as Python loops


def _same(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype == np.float32
    assert np.array_equal(a.view(np.int32), b.view(np.int32))


def _check(x, g):
    for approximate in ("none", "tanh"):
        with np.errstate(all="ignore"):
            _same(_speed.gelu(np, x, approximate), PLAIN.gelu(np, x, approximate))
            _same(_speed.gelu_grad(np, g, x, approximate), PLAIN.gelu_grad(np, g, x, approximate))


def _halves(fmt):
    """Every float16 or bfloat16 bit pattern (every STEP-th), as float32."""
    bits = np.arange(0, 1 << 16, STEP, dtype=np.uint32)
    if fmt == "bfloat16":
        return (bits << 16).view(np.float32)
    return bits.astype(np.uint16).view(np.float16).astype(np.float32)


@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
def test_every_half_value(fmt):
    """Each 16-bit value as x, with gradients of every scale and sign (and the values themselves as g)."""
    x = _halves(fmt)
    rng = np.random.default_rng(16)
    _check(x, (rng.standard_normal(x.size) * 10.0 ** rng.integers(-40, 38, x.size)).astype(np.float32))
    _check(x, x[::-1].copy())


@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
def test_half_values_by_table(fmt):
    """Arrays of 16-bit values take the exact GELU's tables (float16's without NaNs: the CPU's conversion quiets
    the signalling ones, whose arrays take the formula), and a single other value sends an array to the formula."""
    x = _halves(fmt)
    x = x[~np.isnan(x)] if fmt == "float16" else x
    g = np.random.default_rng(17).standard_normal(x.size).astype(np.float32)
    ys, ds = _speed._tables()
    if _intrinsics.JIT and (fmt == "bfloat16" or _speed.HALF):
        assert _speed._half_kind(x, ys.shape[1]) == (1 if fmt == "bfloat16" else 2)
        assert _speed._half_kind(np.append(x, np.float32(1 / 3)), ys.shape[1]) == 0
    _check(x, g)
    _check(np.append(x, np.float32(1 / 3)), np.append(g, np.float32(2)))


def _ends():
    """x about where erfc's and the derivative's exp64 leave the normal range (-z*z + poly and -x*x/2 reach
    -708.4 and -745.1, around x = -37.6 and -38.6) and where 2 - erfc stops moving (x about 8 to 14), with their
    float32 neighbours, and the largest floats."""
    centres = np.array([-38.6, -38.5, -37.65, -37.6, -37.5, -26.6, 8.0, 9.5, 14.0, 26.6, 37.6, 38.6],
                       np.float32)
    steps = np.arange(-40, 41, dtype=np.int32)
    near = (centres.view(np.int32)[:, None] + steps).reshape(-1).view(np.float32)
    big = np.array([3.4028235e38, 1e38, 1e20, 1e10, 65504.0, 1e3], np.float32)
    return np.concatenate([near, big, -big])


def _specials():
    """Signed zeros, infinities, NaNs (quiet and signalling, with payloads, both signs) and subnormals (whose
    float32 halving ties), each against gradients of both signs, zero, inf and NaN."""
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7FC01234, 0x7F800001, 0xFF812345], np.uint32).view(np.float32)
    tiny = np.arange(1, 64, dtype=np.uint32).view(np.float32)
    ends = np.array([0.0, -0.0, np.inf, -np.inf, 1.17549435e-38, -1.17549435e-38], np.float32)
    x = np.concatenate([ends, nans, tiny, -tiny])
    gs = np.array([1.0, -1.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3e38], np.float32)
    return np.repeat(x, gs.size), np.tile(gs, x.size)


def _tie_distance(v):
    """How far float64 v lies from the float32 tie between its two float32 neighbours, in float64 ulps of v."""
    lo = v.astype(np.float32)
    other = np.nextafter(lo, np.where(lo.astype(np.float64) < v, np.inf, -np.inf).astype(np.float32))
    tie = (lo.astype(np.float64) + other.astype(np.float64)) / 2
    return np.abs(v - tie) / np.spacing(np.abs(v))


def _gelu64(x):
    """_ops.gelu's float64 value and its derivative's at float32 x, before their roundings into float32."""
    z = -x * np.float32(math.sqrt(0.5))
    with np.errstate(all="ignore"):
        erfc = _ops._erfc(np, z, _ops._exp(np))
        d = 0.5 * erfc + x * _ops.exp64(np, -0.5 * x.astype(np.float64) ** 2) / math.sqrt(2 * math.pi)
    return (x * np.float32(0.5)).astype(np.float64) * erfc, d


def _near_ties(n=1 << 16):
    """Of n x in [-6, 6], the 200 whose float64 gelu lies nearest a float32 tie, and likewise for the float64
    derivative (g = 1)."""
    x = np.linspace(-6, 6, n, dtype=np.float32)
    y, d = _gelu64(x)
    return np.concatenate([x[np.argsort(_tie_distance(y))[:200]], x[np.argsort(_tie_distance(d))[:200]]])


@pytest.mark.parametrize("case", ["ends", "specials", "near_ties"])
def test_edges(case):
    if case == "specials":
        x, g = _specials()
    else:
        x = _ends() if case == "ends" else _near_ties()
        g = np.where(np.arange(x.size) % 2 == 0, 1.0, -3.0).astype(np.float32)
    _check(x, g)
    _check(x.reshape(-1, 1)[::-1].copy(), g.reshape(-1, 1))     # another order, two dimensions


def test_near_ties_are_near():
    """The chosen inputs' float64 results lie within 2**-6 of a float32 ulp of a tie (2**-2 on average), so the
    final rounding is the step they test."""
    x = _near_ties()
    y, d = _gelu64(x)
    assert _tie_distance(y[:200]).max() < 2.0 ** 23 and _tie_distance(d[200:]).max() < 2.0 ** 23
    assert np.median(_tie_distance(_gelu64(np.linspace(-6, 6, 999, dtype=np.float32))[0])) > 2.0 ** 25
