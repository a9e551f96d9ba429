"""Bit-accurate models of NVIDIA tensor-core inner products (V100, A100, H100, B200), float32 output.

Sources (each parameter below names its own):
  [F21] M. Fasi, N. J. Higham, M. Mikaitis, S. Pranesh, "Numerical behavior of NVIDIA tensor cores",
        PeerJ Computer Science 7:e330 (2021), and its test suite
        github.com/north-numerical-computing/tensor-cores-numerical-behavior (tc_test_numerics-*.cu).
  [KM25] F. A. Khattak, M. Mikaitis, "Accurate Models of NVIDIA Tensor Cores", arXiv 2512.07004 (2025;
        ACM TACO), and its companion toolbox github.com/north-numerical-computing/MATLAB-tensor-core
        (models/V100TC.m, A100TC.m, H100TC.m, B200TC.m, tools/Generic_BFMA_TC.m, tools/GEMM.m), whose
        models were refined until they agreed bit for bit with the GPUs on randomised inputs; the
        measured vectors in its model_validation/ folder are the ones tests/test_tensorcore.py replays.

The model, one block FMA d = c + sum of `block` products ([F21] test suite sections B-D; [KM25] Generic_BFMA_TC,
global-alignment path):
  1. every product a*b is exact (inputs with at most 11-bit significands; [F21] test B "Products are computed
     exactly");
  2. the block's exponent is the largest of the products' exponents ea + eb (unnormalised: a significand
     product in [2, 4) keeps exponent ea + eb) and of c's (c takes part in the alignment when c != 0);
     it is raised to at least `min_align_exp`;
  3. each term is shifted to that exponent keeping `23 + extra_bits` fraction bits, the bits shifted out
     are dropped (truncation, no sticky bit; [F21] D1 "no guard digits" on V100, one extra bit on A100);
  4. the terms are added exactly in a wide fixed-point accumulator (no normalisation inside the block;
     [F21] D2 and D5: non-monotonic sums);
  5. the sum is normalised once and truncated toward zero to a float32 significand ([F21] tests C "Round-down
     for positive values", "Round-up for negative values"); for fp8 on H100 to 13 fraction bits (extra_bits =
     -10 in [KM25]);
  6. a longer k is split into blocks of `block` products, each block's d becomes the next block's c
     (recursive summation over tensor-core invocations, [KM25] GEMM.m).
B200 with fp8 inputs (mma.sync m16n8k32, the instruction [KM25]'s model_validation/CUDA/mma_fp8_output_fp32.cu
measures) differs in how the 32 products and c meet: the 32 products run as two block FMAs of 16 over k taken
in interleaved pairs (k mod 4 in {0, 1}, then k mod 4 in {2, 3}); the first starts from 0, each is truncated
to float32 as above and passed to the next as its c, and the instruction's c is added to their result last in
one float32 addition rounded to nearest even (`interleave=2`). This is the toolbox's first B200 model
(commit 109e412, B200TC.m inter_pattern = 1 and GEMM.m: "interleaved pattern -> C added with different
rounding mode ... Fixed to RN"), since replaced there by one block of 32 with c aligned (B200TC.m, fma = 32).
Against the toolbox's measured data (model_validation/B200/E4M3 and E5M2, all 5000 lines each): this model
matches every d_B200_fp32 line of both formats; today's B200TC.m (round toward zero) misses 1793 e4m3 and 1764
e5m2, B200TCRN.m (c aligned, nearest) 246 and 283, one block of 32 rounded to nearest with c added exactly 0
and 1 (E5M2 line 3936). The grouping is what the float16-output measurements of the same instruction
(d_B200_fp16.txt, c rounded to float16, not modelled here) single out: the same structure with float16
nearest rounding after each step matches all 5000 lines of both formats; one block of 32, halves (k < 16,
k >= 16), odd then even k, k mod 8 < 4 then >= 4, or four blocks of 8 miss 759 to 1960 of them.
NaN and infinities follow [KM25] GEMM.m: a NaN product, a NaN c or both infinities give NaN, one infinity wins;
a block whose sum reaches 2**128 gives inf (the toolbox's overflow rule; the hardware's was not measured).
Not modelled: float16 outputs (the toolbox rounds those to nearest with other exponent limits), the limited
carry-out bits of the hardware ([F21] D4 checks that sums up to 8 keep their low bits; the integer accumulator
here never overflows), mixed fp8 inputs (e4m3 x e5m2), and the order in which cuBLAS visits the k blocks (here
left to right, as the toolbox's GEMM.m).
Kernels: matmul and dot run _fast, the model in float64 and int64 vectorised over output columns (see "the fast
kernel" below); _matmul, the per-element integer kernel it equals bit for bit, is kept as its reference.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from ._intrinsics import bits64_of as _bits64, float64_of as _float64
from ._rounding import round_to
from ._formats import Format, bfloat16, float8_e4m3, float8_e5m2, float16, tf32

DEVICES = ("V100", "A100", "H100", "B200")
_F32_FRAC = 23
_F32_EMIN = -126
_F32_EMAX = 127
_NO_LIMIT = -1024   # V100TC.m: min_exp_limit = -1024, i.e. no lower limit on the block exponent


@dataclass(frozen=True)
class TensorCore:
    """One tensor core's inner-product arithmetic for one input format (float32 output)."""

    device: str
    fmt: Format
    block: int              # products fused per block FMA, plus the accumulator c
    extra_bits: int         # alignment bits kept beyond float32's 23 fraction bits (negative: fewer)
    min_align_exp: int      # the block exponent is raised to at least this (tiny blocks lose bits)
    source: str
    interleave: int = 1     # >1: an instruction of block * interleave products runs that many block FMAs over
                            # k in interleaved pairs from 0, then adds c rounding to nearest (B200 fp8)

    @property
    def frac_bits(self) -> int:
        """Fraction bits of the aligned terms, relative to the block exponent."""
        return _F32_FRAC + self.extra_bits

    @property
    def out_man_bits(self) -> int:
        """Fraction bits of each block's result (23, fewer where extra_bits < 0: H100 fp8 keeps 13)."""
        return _F32_FRAC + min(self.extra_bits, 0)


def _core(device, fmt, block, extra_bits, min_align_exp, source, interleave=1):
    return TensorCore(device, fmt, block, extra_bits, min_align_exp, source, interleave)


_KM = "Khattak & Mikaitis 2025 (arXiv 2512.07004), toolbox models/"
_B200_FP8 = "B200TC.m and tools/GEMM.m of commit 109e412 (fp8: fma = 16, inter_pattern = 1; c added with rne)"
_MODELS = {
    # V100: 4 products + c, no extra alignment bits, truncation ([F21] tests B-D; [KM25] V100TC.m).
    ("V100", float16): _core("V100", float16, 4, 0, _NO_LIMIT, "Fasi et al. 2021 tests B-D; " + _KM + "V100TC.m"),
    # A100: 8 products for fp16/bf16, 4 for tf32 ([KM25] A100TC.m), one extra alignment bit ([F21] D1 passes
    # on A100; [KM25] A100TC.m neab = 1, min_exp_limit = -132).
    ("A100", float16): _core("A100", float16, 8, 1, -132, _KM + "A100TC.m; Fasi et al. 2021 A100 tests B-D"),
    ("A100", bfloat16): _core("A100", bfloat16, 8, 1, -132, _KM + "A100TC.m; Fasi et al. 2021 A100 tests B-D"),
    ("A100", tf32): _core("A100", tf32, 4, 1, -132, _KM + "A100TC.m (tf32: fma = 4)"),
    # H100: 16 products, two extra alignment bits; tf32 8; fp8 32 products (two interleaved 16-element halves)
    # aligned and truncated to 13 fraction bits (neab = -10) ([KM25] H100TC.m, min_exp_limit = -133).
    ("H100", float16): _core("H100", float16, 16, 2, -133, _KM + "H100TC.m"),
    ("H100", bfloat16): _core("H100", bfloat16, 16, 2, -133, _KM + "H100TC.m"),
    ("H100", tf32): _core("H100", tf32, 8, 2, -133, _KM + "H100TC.m (tf32: fma = 8)"),
    ("H100", float8_e4m3): _core("H100", float8_e4m3, 32, -10, -133, _KM + "H100TC.m (fp8: fma = 32, neab = -10)"),
    ("H100", float8_e5m2): _core("H100", float8_e5m2, 32, -10, -133, _KM + "H100TC.m (fp8: fma = 32, neab = -10)"),
    # B200: as H100; fp8 keeps the full 23 + 2 bits ([KM25] B200TC.m, neab = 2) in two interleaved block FMAs
    # of 16 whose result c is added to, rounding to nearest (the module docstring; [KM25] B200TC.m and GEMM.m
    # of the toolbox's commit 109e412, inter_pattern = 1, and its measured model_validation/B200/E4M3, E5M2).
    ("B200", float16): _core("B200", float16, 16, 2, -133, _KM + "B200TC.m"),
    ("B200", bfloat16): _core("B200", bfloat16, 16, 2, -133, _KM + "B200TC.m"),
    ("B200", tf32): _core("B200", tf32, 8, 2, -133, _KM + "B200TC.m (tf32: fma = 8)"),
    ("B200", float8_e4m3): _core("B200", float8_e4m3, 16, 2, -133, _KM + _B200_FP8, 2),
    ("B200", float8_e5m2): _core("B200", float8_e5m2, 16, 2, -133, _KM + _B200_FP8, 2),
}


def model(device, fmt) -> TensorCore:
    """The tensor-core model of `device` ("V100", "A100", "H100", "B200") for input format `fmt`."""
    if device not in DEVICES:
        raise ValueError(f"tensor core device={device!r} is unknown; valid devices: {', '.join(DEVICES)}")
    valid = ", ".join(f.name for d, f in _MODELS if d == device)
    if fmt is None:
        raise ValueError(f"tensor core fmt=None: the inputs' format is needed (tensor cores take low-precision "
                         f"inputs); valid formats on {device}: {valid}")
    if not isinstance(fmt, Format):
        from ._formats import as_format
        fmt = as_format(fmt, "fmt")
    core = _MODELS.get((device, fmt))
    if core is None:
        raise ValueError(f"tensor core fmt={fmt.name!r} is not modelled on device={device!r}; "
                         f"valid formats on {device}: {valid} (tensor cores take low-precision inputs: cast them "
                         f"to one of these inside accumulate(tensor_core={device!r}), for example with .half())")
    return core


# -- kernels ------------------------------------------------------------------------------------

@numba.njit(cache=True, nogil=True)
def _split(x, emin, man):
    """x (a value of a format with `man` fraction bits, min exponent emin) -> (signed integer significand, exponent)."""
    if x == 0.0:
        return 0, 0
    m, e = math.frexp(x)           # |m| in [0.5, 1): floor(log2|x|) = e - 1
    e = max(e - 1, emin)           # subnormals keep the format's min exponent and a significand < 1
    return int(math.ldexp(x, man - e)), e


@numba.njit(cache=True, nogil=True)
def _align(mag, t):
    """mag * 2**t, the bits below the unit dropped (truncation of the alignment shift)."""
    if t >= 0:
        return mag << t
    if t <= -63:
        return 0
    return mag >> (-t)


@numba.njit(cache=True, nogil=True)
def _bitlen(mag):
    """Bits of a positive int64."""
    n = math.frexp(float(mag))[1]            # the float may round up to the next power of two
    return n - 1 if (mag >> (n - 1)) == 0 else n


@numba.njit(cache=True, nogil=True)
def _normalise(s, base, out_man):
    """The exact s * 2**base truncated to out_man fraction bits in float32's exponent range as (q, lo): the value
    q * 2**lo, q of at most out_man + 2 bits."""
    if s == 0:
        return 0, 0
    mag = abs(s)
    lo = max(base + _bitlen(mag) - 1 - out_man, _F32_EMIN - out_man)   # unit of the last kept bit
    if lo <= base:
        return s, base
    q = _align(mag, base - lo)
    return (q if s > 0 else -q), lo


@numba.njit(cache=True, nogil=True)
def _block(am, ae, bm, be, lo, hi, cm, cb, man, frac, out_man, min_exp):
    """One block FMA: c + sum of products lo..hi-1 (split), c = cm * 2**cb; the model's steps 2-5."""
    mx = -(1 << 30)
    for k in range(lo, hi):
        if am[k] != 0 and bm[k] != 0:
            mx = max(mx, ae[k] + be[k])
    if cm != 0:                    # c's exponent as a float32's: subnormals at -126
        mx = max(mx, cb + _bitlen(abs(cm)) - 1, _F32_EMIN)
    if mx == -(1 << 30):
        return 0, 0                # nothing at all: +0 (GEMM.m)
    mx = max(mx, min_exp)
    s = 0
    for k in range(lo, hi):
        p = am[k] * bm[k]
        if p != 0:
            v = _align(abs(p), frac - 2 * man + ae[k] + be[k] - mx)
            s += v if p > 0 else -v
    base = mx - frac
    if cm != 0:
        v = _align(abs(cm), cb - base)
        s += v if cm > 0 else -v
    return _normalise(s, base, out_man)


@numba.njit(cache=True, nogil=True)
def _special(a, b, c):
    """NaN/inf result of a dot product with a non-finite product or c ([KM25] GEMM.m), else 0.0."""
    pos = c == math.inf
    neg = c == -math.inf
    nan = c != c
    for k in range(a.shape[0]):
        p = a[k] * b[k]
        nan |= p != p
        pos |= p == math.inf
        neg |= p == -math.inf
    if nan or (pos and neg):
        return math.nan
    if pos:
        return math.inf
    if neg:
        return -math.inf
    return 0.0


@numba.njit(cache=True, nogil=True)
def _split_rows(x, emin, man):
    """Rows of x split once into integer significands and exponents, and whether each row is all finite."""
    m, k = x.shape
    sig, exp = np.zeros((m, k), np.int64), np.zeros((m, k), np.int64)
    finite = np.ones(m, np.bool_)
    for i in range(m):
        for j in range(k):
            if math.isfinite(x[i, j]):
                sig[i, j], exp[i, j] = _split(x[i, j], emin, man)
            else:
                finite[i] = False
    return sig, exp, finite


@numba.njit(cache=True, nogil=True)
def _blocks(am, ae, bm, be, c, man, block, frac, out_man, min_exp, late):
    """c + a . b (split, finite) block after block, each block's result the next block's c (kept as an
    integer and its unit between blocks: no float conversions inside the loop). With late > 0 (k interleaved
    and padded by _prepare) every `late` blocks start from 0 and c is added to their result, to nearest."""
    k = am.shape[0]
    cm, ce = _split(c, _F32_EMIN, _F32_FRAC)
    cb = ce - _F32_FRAC
    pm, pb = cm, cb                # the block FMAs' running result: c itself unless c comes late
    for lo in range(0, k, block):
        if late > 0 and (lo // block) % late == 0:
            pm, pb = 0, 0
        pm, pb = _block(am, ae, bm, be, lo, min(lo + block, k), pm, pb, man, frac, out_man, min_exp)
        if late > 0 and ((lo // block) % late == late - 1 or lo + block >= k):
            d = np.float32(math.ldexp(float(cm), int(cb))) + np.float32(math.ldexp(float(pm), int(pb)))
            if not math.isfinite(d):        # float32 addition, nearest even; past float32's range: inf
                return float(d)
            cm, ce = _split(float(d), _F32_EMIN, _F32_FRAC)
            cb, pm, pb = ce - _F32_FRAC, cm, ce - _F32_FRAC
        if pm != 0 and pb + _bitlen(abs(pm)) > _F32_EMAX + 1:
            return math.copysign(math.inf, pm)   # past float32's range: later finite products cannot return
    return math.ldexp(float(pm), int(pb))          # int(): numpy ints when run without the JIT


@numba.njit(cache=True, parallel=True)
def _matmul(a, bt, emin, man, block, frac, out_man, min_exp, late):
    """The per-element kernel (integer significands, one output at a time; a and bt as _prepare gives them):
    the reference for _fast."""
    m, n = a.shape[0], bt.shape[0]
    am, ae, fa = _split_rows(a, emin, man)         # split once, not once per output element
    bm, be, fb = _split_rows(bt, emin, man)
    out = np.empty((m, n), np.float32)
    for ij in numba.prange(m * n):
        i, j = ij // n, ij % n
        if fa[i] and fb[j]:
            out[i, j] = _blocks(am[i], ae[i], bm[j], be[j], 0.0, man, block, frac, out_man, min_exp, late)
        else:
            out[i, j] = _special(a[i], bt[j], 0.0)
    return out


# -- the fast kernel ------------------------------------------------------------------------------
# The same arithmetic in float64, vectorised over output columns: products of <= 11-bit significands are exact
# in float64, scaling by a power of two is exact, converting the scaled product to int64 truncates it toward
# zero as the alignment does, and the block's sum of < 2**34 integers is exact in int64. Powers of two and
# exponents come from float64 bits (_bits64 and _float64 are bitcasts, so the loops stay vectorisable).

_NO_TERM = -(1 << 20)     # exponent given to zeros: a product with a zero never sets a block's exponent
_TILE = 128               # most output columns per pass: a tile of b (k = 512) fits L2, the state L1


@numba.njit(cache=True, nogil=True)     # serial: O(n**2), and one parallel region per matmul, not three
def _exponents(x, emin):
    """x with non-finite values zeroed, and each value's exponent as _split gives it (_NO_TERM for zeros)."""
    clean, exp = np.empty(x.shape), np.empty(x.shape, np.int64)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            v = x[i, j] if abs(x[i, j]) < math.inf else 0.0
            e = max(((_bits64(v) >> 52) & 0x7FF) - 1023, emin)    # float64's exponent: every value is normal there
            clean[i, j], exp[i, j] = v, e if v != 0.0 else _NO_TERM
    return clean, exp


@numba.njit(cache=True, nogil=True)
def _tile(ai, aei, b, be, c0, frac, out_man, low, keep, sub_up, sub_down, block, late):
    """c0 + ai . b for one row ai of a (aei its exponents) and one packed tile b (k, tile width) of b's columns."""
    k, tw = b.shape
    c, scale, inv = np.empty(tw), np.empty(tw), np.empty(tw)
    mx, acc = np.empty(tw, np.int64), np.empty(tw, np.int64)
    c[:] = c0 + 0.0                 # -0.0 counts as +0.0
    part = c if late == 0 else np.zeros(tw)     # the block FMAs' running result: c itself unless c comes late
    for kb in range(0, k, block):
        ke = min(kb + block, k)
        if late > 0 and (kb // block) % late == 0:
            part[:] = 0.0
        # the block's exponent: its largest product's and its c's, at least min_exp
        for j in range(tw):
            e = max(((_bits64(part[j]) >> 52) & 0x7FF) - 1023, _F32_EMIN)
            mx[j] = e if part[j] != 0.0 else _NO_TERM
        for kk in range(kb, ke):
            e, bek = aei[kk], be[kk]
            for j in range(tw):
                mx[j] = max(mx[j], e + bek[j])
        for j in range(tw):          # 2**(frac - mx) and its inverse, from their bits
            t = max(mx[j], low)
            scale[j] = _float64((1023 + frac - t) << 52)
            inv[j] = _float64((1023 - frac + t) << 52)
            cj = part[j] if abs(part[j]) < math.inf else 0.0   # an infinite c's result is c
            acc[j] = np.int64(cj * scale[j])
        # the terms truncated to frac bits below the block's exponent, summed exactly
        for kk in range(kb, ke):
            x, bk = ai[kk], b[kk]
            for j in range(tw):
                acc[j] += np.int64((x * bk[j]) * scale[j])
        # the block's result: the sum truncated to out_man fraction bits in float32's exponent range; an
        # infinite c stays
        for j in range(tw):
            v = float(acc[j]) * inv[j]
            y = v * sub_up if abs(v) < 2.0 ** _F32_EMIN else 0.0
            r = _float64(_bits64(v) & keep) if abs(v) >= 2.0 ** _F32_EMIN else float(np.int64(y)) * sub_down
            r = (math.inf if v > 0 else -math.inf) if abs(v) >= 2.0 ** (_F32_EMAX + 1) else r
            part[j] = r + 0.0 if abs(part[j]) < math.inf else part[j]
        if late > 0 and ((kb // block) % late == late - 1 or ke >= k):
            for j in range(tw):      # c added last: one float32 addition, to nearest even
                c[j] = float(np.float32(c[j]) + np.float32(part[j])) + 0.0
    return c


@numba.njit(cache=True, parallel=True)
def _fast(a, b, c0, frac, out_man, min_exp, block, late, emin):
    """c0 + a (m, k) @ b (k, n) block FMA after block FMA, as _blocks computes it; non-finite inputs are left
    to _special (the caller)."""
    (m, k), n = a.shape, b.shape[1]
    a, ae = _exponents(a, emin)
    b, be = _exponents(b, emin)
    # b's columns packed into contiguous tiles (zeros past n): a thread works through all rows of a on one
    # tile, which stays in its L2 cache, instead of streaming the whole of b once per row
    tw = min(_TILE, 8 * -(-n // 8))        # a narrow b (conv channels, 10 classes) packs no unused columns
    tiles = (n + tw - 1) // tw
    bp, bep = np.zeros((tiles, k, tw)), np.full((tiles, k, tw), _NO_TERM, np.int64)
    for t in range(tiles):
        w = min(tw, n - t * tw)
        bp[t, :, :w], bep[t, :, :w] = b[:, t * tw:t * tw + w], be[:, t * tw:t * tw + w]
    out = np.empty((m, n), np.float32)
    low = max(min_exp, -400)                # no product of finite inputs nor c lies below 2**-400
    keep = ~((1 << (52 - out_man)) - 1)     # float64 bits kept by truncation to out_man fraction bits
    sub_up, sub_down = 2.0 ** (-_F32_EMIN + out_man), 2.0 ** (_F32_EMIN - out_man)
    for ti in numba.prange(tiles * m):      # tile-major: each thread's share covers few tiles
        t, i = ti // m, ti % m
        w = min(tw, n - t * tw)
        c = _tile(a[i], ae[i], bp[t], bep[t], c0, frac, out_man, low, keep, sub_up, sub_down, block, late)
        out[i, t * tw:t * tw + w] = c[:w]
    return out


def _prepare(a, b, core):
    """a (m, k), b (k, n) as the kernels take them: for an interleaving core k is padded with zeros to whole
    instructions (GEMM.m pads too), and each instruction's k is reordered so that its block FMAs take
    contiguous runs (B200 fp8: k mod 4 in {0, 1}, then {2, 3})."""
    if core.interleave == 1:
        return np.ascontiguousarray(a), np.ascontiguousarray(b)
    n, k = core.block * core.interleave, a.shape[1]
    pos = np.arange(n)
    order = np.concatenate([pos[(pos // 2) % core.interleave == g] for g in range(core.interleave)])
    idx = (np.arange(0, -(-k // n) * n, n)[:, None] + order).ravel()
    a2, b2 = np.zeros((a.shape[0], idx.size)), np.zeros((idx.size, b.shape[1]))
    a2[:, :k], b2[:k] = a, b
    return np.ascontiguousarray(a2[:, idx]), np.ascontiguousarray(b2[idx])


def _run(a, b, core, c=0.0):
    """c + a (m, k) @ b (k, n) (float64 arrays of fmt values) on `core`: float32 (m, n)."""
    emin, man, block, frac, out_man, min_exp, late = _params(core)
    out = _fast(*_prepare(a, b, core), float(c), frac, out_man, min_exp, block, late, emin)
    rows, cols = ~np.isfinite(a).all(axis=1), ~np.isfinite(b).all(axis=0)
    rows |= not math.isfinite(c)
    for i, j in zip(*np.nonzero(rows[:, None] | cols[None, :])):   # NaN and infinities: the outputs they reach
        out[i, j] = _special(a[i], b[:, j], c)
    return out


def _params(core):
    return (core.fmt.emin, core.fmt.man_bits, core.block, core.frac_bits, core.out_man_bits, core.min_align_exp,
            core.interleave if core.interleave > 1 else 0)


@numba.njit(cache=True, nogil=True)     # serial: a parallel region costs more than it saves here
def _outside(x, emin, man, top):
    """How many finite values of the flat x are not values of a format with subnormals (emin, man fraction bits,
    largest value top): too large, or with bits below the unit of the format's exponent for them."""
    bad = 0
    for i in range(x.size):
        v = x[i] if abs(x[i]) < math.inf else 0.0
        e = max(((_bits64(v) >> 52) & 0x7FF) - 1023, emin)
        y = v * _float64((1023 + man - e) << 52)            # v in units of its last significand bit: < 2**(man + 1)
        bad += 1 if abs(v) > top or float(np.int64(y)) != y else 0
    return bad


def _check_values(x, fmt, arg):
    """x as a float64 array whose values are all in `fmt` (the caller rounds; the model does not)."""
    x = np.asarray(x, dtype=np.float64)
    if fmt.subnormals:          # every finite value the format holds, read off its bits (round_to's check, faster)
        ok = _outside(x.ravel(), fmt.emin, fmt.man_bits, float(fmt.decode(fmt.max_code))) == 0
    else:
        finite = np.isfinite(x)
        ok = np.array_equal(np.asarray(round_to(x[finite], fmt), np.float64), x[finite])
    if not ok:
        raise ValueError(f"tensor core {arg}= holds values that are not {fmt.name} values; round them to "
                         f"{fmt.name} first (minifp.round_to)")
    return x


def dot(a, b, device, fmt, c=0.0) -> np.float32:
    """c + a . b on `device`'s tensor core for `fmt` inputs a, b (1-D), c a float32 value."""
    core = model(device, fmt)
    a, b = _check_values(a, core.fmt, "a"), _check_values(b, core.fmt, "b")
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"tensor core dot: a and b must be 1-D of one length; got shapes {a.shape}, {b.shape}")
    c32 = np.float32(c)
    if not (np.isnan(c) and np.isnan(c32)) and float(c32) != float(c):
        raise ValueError(f"tensor core dot: c={c!r} is not a float32 value")
    return _run(a[None], b[:, None], core, float(c32))[0, 0]


def matmul(a, b, device, fmt, promote=None, slices=1, tile=64) -> np.ndarray:
    """a (m, k) @ b (k, n) as `device`'s tensor cores compute it for `fmt` inputs: float32 (m, n).

    slices > 1: k cut into that many runs of whole k-tiles of `tile` whose float32 results are added in order
    (cuBLAS's split-K: splitk_matmul).

    promote: every `promote` products along k, the tensor cores' float32 result is added to a float32
    accumulator outside them, rounding to nearest (a GEMM kernel's promotion to CUDA cores: cuBLAS's fp8
    GEMM without fast accumulation every 128, measured on an H100, benchmarks/gpu_tensorcore.py). None:
    the tensor cores chain the whole k."""
    core = model(device, fmt)
    a, b = _check_values(a, core.fmt, "a"), _check_values(b, core.fmt, "b")
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"tensor core matmul: a (m, k) and b (k, n) must be 2-D with matching k; "
                         f"got shapes {a.shape}, {b.shape}")
    if slices > 1:
        return splitk_matmul(a, b, core, slices, tile)
    if promote is None:
        return _run(a, b, core)
    if not isinstance(promote, int) or isinstance(promote, bool) or promote < 1:
        raise ValueError(f"tensor core matmul: promote={promote!r} must be a positive number of products or None")
    out = np.zeros((a.shape[0], b.shape[1]), np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        for lo in range(0, a.shape[1], promote):
            out += _run(a[:, lo:lo + promote], b[lo:lo + promote], core)     # float32 addition: nearest-even
    return out


def splitk_matmul(a, b, core, slices, tile=64) -> np.ndarray:
    """a (m, k) @ b (k, n) as cuBLAS's split-K GEMMs compute it on `core`: float32 (m, n).

    k is cut into `slices` runs of ceil(k-tiles / slices) whole k-tiles of `tile` (the last run takes what is
    left); each run is chained on the tensor cores from 0 (_run), and the float32 partials are added in run order,
    each addition rounded to nearest even (cuBLAS's splitKreduce_kernel). Fit bit for bit to an H100's recordings
    (tools/fit_splitk.py, docs/h100_splitk.md); slices=1 is the unsplit chained GEMM."""
    k = a.shape[1]
    tiles = -(-k // tile)
    step = max(-(-tiles // slices), 1) * tile       # whole k-tiles per run
    out = _run(a[:, :step], b[:step], core)
    with np.errstate(over="ignore", invalid="ignore"):
        for lo in range(step, k, step):
            out += _run(a[:, lo:lo + step], b[lo:lo + step], core)    # float32 addition: nearest even
    return out
