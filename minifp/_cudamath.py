"""CUDA's float32 math library where it is not correctly rounded: powf, op for op as nvcc 13 compiles it for sm_90.

Fused Adam's bias corrections 1 - beta**step come from the device's powf, which is off by an ulp from the correctly
rounded power for some steps (0.999**102, 0.95**6); an H200 recorded it (tests/fixtures/pytorch/cuda_powf.json).
"""
import numpy as np

from ._ops import fma

__all__ = ["powf"]

F32 = np.float32


def _f(bits):
    return np.uint32(bits).view(F32)


def _fma(a, b, c):
    return fma(np, F32(a), F32(b), F32(c))[()]


# The log polynomial's leading coefficient, which the compiler builds from two float16 halves (HFMA2.MMA)
_C_LOG = _f(0x3A2C32E4)
_LOG2E = F32(1.4426950216293334961)


def powf(a, b):
    """CUDA's powf(a, b) for float32 numbers a > 0 and b finite: log2(a) in two parts, from a reciprocal of
    mantissa + 1 (MUFU.RCP, taken as correctly rounded), then 2**(b * log2 a) by a polynomial."""
    a, b = F32(a), F32(b)
    if a == 1 or b == 0:
        return F32(1)
    normal = a >= _f(0x00800000)
    x = a if normal else a * F32(16777216)
    e = F32(0) if normal else F32(-24)
    bits = int(np.array(x).view(np.int32))
    shift = (bits - 0x3F3504F3) & -0x800000
    m = F32(np.int32(bits - shift).view(F32))                          # the mantissa, in [sqrt(1/2), sqrt(2))
    e = _fma(F32(shift), F32(1.1920928955078125e-07), e)                # the exponent
    up, down = m + F32(1), m - F32(1)
    r = F32(1) / up
    u = r * (down + down)                                               # 2 (m - 1) / (m + 1)
    u2 = u * u
    hi = _fma(u, _LOG2E, e)
    rt = r * _fma(down, -u, (down - u) + (down - u))       # u's correction: r times 2 (m - 1) - u (m + 1)
    poly = _fma(u2, _fma(u2, _fma(u2, _C_LOG, F32(0.0032181653659790754318)), F32(0.018033718690276145935)),
                F32(0.12022458761930465698))
    lo = _fma(u, _LOG2E, e - hi)
    lo = _fma(rt, _LOG2E, lo)
    poly = u2 * poly
    lo = _fma(u, F32(1.9251366722983220825e-08), lo)
    lo = _fma(u, poly, _fma(rt, poly * F32(3), lo))
    head = hi + lo                                                      # log2(a): head and tail
    tail = lo - (-hi + head)
    y = b * head
    frac = _fma(b, tail, _fma(b, head, -y)) + (y - F32(np.rint(y)))
    if abs(y) > F32(152):
        return F32(np.inf) if not y < 0 else F32(0)
    n = int(np.rint(y))
    p = _fma(frac, _f(0x391FCB8E), F32(0.0013391353422775864601))
    for c in (F32(0.0096188392490148544312), F32(0.055503588169813156128), F32(0.24022644758224487305),
              F32(0.69314718246459960938), F32(1)):
        p = _fma(frac, p, c)                                            # 2**frac
    bias = 0 if n > 0 else 0x83000000
    scale1 = _f((bias + 0x7F000000) & 0xFFFFFFFF)
    scale2 = _f(((n << 23) - bias) & 0xFFFFFFFF)
    return F32(p * scale1) * scale2                                     # times 2**n, in two steps
