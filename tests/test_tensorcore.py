"""Tensor-core models against the papers' test vectors, measured GPU results and an exact reference.

[F21] Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor cores", PeerJ CS 7:e330 (2021);
      the vectors below are those of its test suite, github.com/north-numerical-computing/
      tensor-cores-numerical-behavior, files tc_test_numerics-V100.cu and tc_test_numerics-T4-A100-binary16.cu
      (sections B "accuracy of the dot products", C "rounding modes", D "features of the accumulator").
[KM25] Khattak, Mikaitis, "Accurate Models of NVIDIA Tensor Cores", arXiv 2512.07004 (2025): D = A.B + C
      measured on V100, A100, H100 and B200, from the toolbox github.com/north-numerical-computing/
      MATLAB-tensor-core, model_validation/ (first 256 dot products per GPU and format, and the later lines
      that tell models apart, fixtures/tensorcore/).
"""
import math
import zlib
from fractions import Fraction
from pathlib import Path

import numba
import numpy as np
import pytest

from minifp import _tensorcore as tc
from minifp._formats import bfloat16, float8_e4m3, float8_e5m2, float16, float32, tf32
from minifp._rounding import round_to

FMTS = {"fp16": float16, "bf16": bfloat16, "tf32": tf32, "E4M3": float8_e4m3, "E5M2": float8_e5m2}
PAIRS = [(d, f) for d, f in tc._MODELS]
VECTORS = Path(__file__).parent / "fixtures" / "tensorcore" / "vectors.npz"
x = math.ldexp


WIDE = [(d, f) for d, f in PAIRS if f in (float16, bfloat16, tf32)]   # [F21] has tests for these inputs


def dot(a, b, device="V100", fmt=float16, c=0.0):
    return float(tc.dot(np.array(a, float), np.array(b, float), device, fmt, c))


def wide(fn):
    """Parametrise over the (device, 16/19-bit input) pairs: [F21]'s vectors are values of all three formats."""
    return pytest.mark.parametrize("device, fmt", WIDE, ids=lambda v: v if isinstance(v, str) else v.name)(fn)


# -- [F21] section B: products exact, accumulation in binary32 ------------------------------------------

BELOW1 = 1 - x(1, -11)          # largest float16 below 1
MINSUB = x(1, -24)              # smallest float16 subnormal


@wide
def test_products_are_exact(device, fmt):
    # [F21] B "Products are computed exactly": float16 (1 - 2^-11)^2 = 1 - 2^-10 + 2^-22 needs 22 bits; the
    # bfloat16 file uses 1 - 2^-8 (1 - 2^-7 + 2^-16).
    t = fmt.man_bits + 1
    below1, square = 1 - x(1, -t), 1 - x(1, 1 - t) + x(1, -2 * t)
    assert dot([below1], [below1], device, fmt) == square
    assert dot([below1] * 4, [below1] * 4, device, fmt) == 4 * square


def test_subnormals_in_and_out():
    # [F21] A: float16 subnormal inputs are used (2^-24 * 4 = 2^-22), float32 subnormal c comes back.
    assert dot([MINSUB], [4.0]) == x(1, -22)
    assert dot([0.0], [0.0], c=x(1, -149)) == x(1, -149)
    assert dot([x(1, -14)], [1.0], c=x(-1, -15)) == x(1, -15)


def test_v100_small_products_vanish_beside_c():
    # [F21] B "Products are accumulated in binary32" (V100): 1 + 4 * 2^-24 comes back as 1: the products are
    # aligned to c's exponent and their bits below float32's last bit are dropped.
    assert dot([1.0] * 4, [MINSUB] * 4, "V100", c=1.0) == 1.0
    # A100 keeps one more bit, so its test uses 0.5 * 2^-24 ([F21] T4-A100 file).
    assert dot([0.5] * 4, [MINSUB] * 4, "A100", c=1.0) == 1.0
    assert dot([1.0] * 4, [MINSUB] * 4, "A100", c=1.0) == 1 + x(1, -22)


@pytest.mark.parametrize("j", range(4))
def test_alignment_to_the_largest_term(j):
    # [F21] B "Sum starts from largest element": wherever the 1 sits, the tiny terms vanish.
    b = [MINSUB] * 4
    b[j] = 1.0
    assert dot([1.0] * 4, b, "V100", c=MINSUB) == 1.0
    a = [0.5] * 4
    a[j] = 1.0
    assert dot(a, b, "A100", c=MINSUB) == 1.0


# -- [F21] section C: rounding toward zero of the normalised block sum ----------------------------------

@wide
def test_round_toward_zero(device, fmt):
    # [F21] C "Round-down for positive values" / "Round-up for negative values": 2 + 3 * 2^-24 -> 2.
    assert dot([1.0] * 4, [2.0, x(3, -24), 0, 0], device, fmt) == 2.0
    assert dot([1.0] * 4, [-2.0, -x(3, -24), 0, 0], device, fmt) == -2.0


# -- [F21] section D: features of the accumulator ------------------------------------------------------

@wide
def test_extra_alignment_bits(device, fmt):
    # [F21] D1: 1 - (1 - 2^-24). V100 has no guard bit: c is truncated to 1 - 2^-23 and the result is 2^-23;
    # A100 keeps one extra bit and gets the exact 2^-24 (the A100 files assert 2^-24 for fp16, bf16, tf32).
    expected = x(1, -23) if device == "V100" else x(1, -24)
    assert dot([1.0], [1.0], device, fmt, c=-(1 - x(1, -24))) == expected


@wide
def test_no_normalisation_inside_the_block(device, fmt):
    # [F21] D2 "Normalization in addition": (1 - 2^-24) + 4 * 2^-24 = 1 + 3 * 2^-24 is truncated to 1 + 2^-23
    # only if the sum is not renormalised (which would drop the 2^-24 terms one by one).
    assert dot([1.0] * 4, [MINSUB] * 4, device, fmt, c=1 - x(1, -24)) == 1 + x(1, -23)


@wide
def test_normalisation_in_subtraction(device, fmt):
    # [F21] D3: 1 - 2^-24 - (1 - 2^-24): V100 gives 2^-23 (asserted in the V100 file), A100 gives 0 (A100 files);
    # H100 and B200, with two extra bits, are exact too.
    expected = x(1, -23) if device == "V100" else 0.0
    assert dot([1.0, 1.0], [1.0, -MINSUB], device, fmt, c=-1 + x(1, -24)) == expected


@wide
def test_carry_out_bits(device, fmt):
    # [F21] D4 "Extra bits for carry out": sums past 4 and 8 keep their low bits; then truncation.
    for i in range(4):
        b = [1.0] * 4
        b[i] = x(1, -23)
        assert dot([1.0] * 4, b, device, fmt, c=1 + x(1, -22) + x(1, -23)) == 4 + x(1, -21)
    assert dot([1.0] * 4, [1.0, 1.5, 1.75, 1.875], device, fmt, c=1.875) == 8.0
    assert dot([1.0] * 4, [1.0] * 4, device, fmt, c=1 + x(1, -22) + x(1, -23)) == 5.0
    assert dot([1.0] * 4, [-1.0] * 4, device, fmt, c=-1 - x(1, -22) - x(1, -23)) == -5.0


def test_v100_is_not_monotonic():
    # [F21] D5 "Monotonicity of dot product": raising c from 1 - 2^-24 to 1 lowers the result on V100.
    smaller_c = dot([1.0] * 4, [MINSUB] * 4, "V100", c=1 - x(1, -24))
    larger_c = dot([1.0] * 4, [MINSUB] * 4, "V100", c=1.0)
    assert (smaller_c, larger_c) == (1 + x(1, -23), 1.0)


@pytest.mark.parametrize("fmt", [float16, bfloat16, tf32], ids=lambda f: f.name)
def test_a100_is_not_monotonic(fmt):
    # [F21] D5 in the A100 bf16 and tf32 files: 0.5 * (3 * 2^-24 + 3 * 2^-24) with c = 1 - 2^-24, then c = 1.
    a, b = [0.5] * 4, [MINSUB] * 3 + [x(3, -24)]
    smaller_c, larger_c = dot(a, b, "A100", fmt, c=1 - x(1, -24)), dot(a, b, "A100", fmt, c=1.0)
    assert (smaller_c, larger_c) == (1 + x(1, -23), 1.0)


# -- block size ---------------------------------------------------------------------------------------

def _block_probe(device, fmt, n, tiny):
    """n tiny products then 1: whole blocks of tiny products survive as c, those beside the 1 vanish."""
    root = math.sqrt(tiny)
    return dot([root] * n + [1.0], [root] * n + [1.0], device, fmt)


# Products fused per block, from the [KM25] toolbox models (V100 4; A100 8, tf32 4; H100/B200 16, tf32 8,
# fp8 32 = two interleaved groups of 16; [F21]'s test suite does not probe it). B200 fp8 interleaves its two
# blocks of 16 and adds c last, which this probe cannot see: test_b200_fp8_interleaved_blocks.
BLOCKS = {"V100": {float16: 4}, "A100": {float16: 8, bfloat16: 8, tf32: 4},
          "H100": {float16: 16, bfloat16: 16, tf32: 8, float8_e4m3: 32, float8_e5m2: 32},
          "B200": {float16: 16, bfloat16: 16, tf32: 8}}


@pytest.mark.parametrize("device, fmt", [(d, f) for d in BLOCKS for f in BLOCKS[d]],
                         ids=lambda v: v if isinstance(v, str) else v.name)
def test_block_size(device, fmt):
    block = BLOCKS[device][fmt]
    tiny, keep = (x(1, -16), 13) if tc.model(device, fmt).out_man_bits < 23 else (x(1, -26), 23)
    for n in range(3 * block):
        c = Fraction(tiny) * block * (n // block)     # the blocks before the 1, summed exactly
        assert _block_probe(device, fmt, n, tiny) == 1 + math.floor(c * 2 ** keep) / 2 ** keep, n


# -- [KM25] measured GPU results ----------------------------------------------------------------------

def _measured():
    data = np.load(VECTORS)
    for device, name in sorted({tuple(k.split("_")[:2]) for k in data.files}):
        get = lambda part: data[f"{device}_{name}_{part}"].view(np.float32)
        yield pytest.param(device, name, get("a"), get("b"), get("c"), get("d"), id=f"{device}-{name}")


@pytest.mark.parametrize("device, name, a, b, c, d", list(_measured()))
def test_measured_gpu_results(device, name, a, b, c, d):
    got = np.array([tc.dot(a[i], b[i], device, FMTS[name], c[i]) for i in range(len(d))], np.float32)
    bad = np.flatnonzero(got.view(np.uint32) != d.view(np.uint32))
    assert bad.size == 0, f"{device} {name}: rows {bad[:10]} differ, e.g. {got[bad[:1]]} vs GPU {d[bad[:1]]}"
    if not c.any():
        assert np.array_equal(tc.matmul(a[:8], b[:8].T, device, FMTS[name]).diagonal().view(np.uint32),
                              d[:8].view(np.uint32))


def test_b200_fp8_c_added_last():
    # [KM25] model_validation/B200/E5M2, line 3936 (c_B200_fp32.txt, d_B200_fp32.txt): the products' sum
    # -0x1.2bec038p+3 is truncated to float32 (-0x1.2bec02p+3) before c is added to nearest, which gives the
    # GPU's -0x1.1bbef8p+3; one rounding of the exact -0x1.1bbef9ap+3 would give -0x1.1bbefap+3.
    a = [-2, -.5, -.625, -.3125, -.02734375, .0625, .875, -.375, 1.25, .0625, 2, -.75, -.0390625, .5, .625, -1.25,
         -.375, .5, -1, 1, .21875, .5, -1.5, 1.25, -.1875, .625, .625, .02734375, -1.25, -1.75, -1, -.625]
    b = [.4375, -.875, -.375, .3125, x(1, -14), -.5, .125, -.4375, .875, -1, -1, -1, -1.5, 1, -.75, .5,
         -.25, -2, .3125, -.4375, 1, -2, .1875, -.4375, .25, -.109375, -.875, .875, 1.25, .875, .625, 1.5]
    assert dot(a, b, "B200", float8_e5m2, c=float.fromhex("0x1.02d09ep-1")) == float.fromhex("-0x1.1bbef8p+3")


@pytest.mark.parametrize("fmt", [float8_e4m3, float8_e5m2], ids=lambda f: f.name)
def test_b200_fp8_interleaved_blocks(fmt):
    # k = 0, 1, 4 (the first block FMA of 16: k mod 4 in {0, 1}) hold 2**8 + 2**-16 + 2**-17, truncated to
    # float32's 2**8; k = 2 (the second: k mod 4 in {2, 3}) cancels it: 0. One block of 32, or blocks of
    # k < 16 and k >= 16, keep 3 * 2**-17 (2**8's block keeps 25 fraction bits); odd and even k too. The same
    # products with 2**8 - 2**8 in the first block FMA and the small ones in the second keep 3 * 2**-17.
    a = [16, x(1, -8), -16, 0, x(1, -8)] + [0] * 27
    b = [16, x(1, -8), 16, 0, x(1, -9)] + [0] * 27
    assert dot(a, b, "B200", fmt) == 0.0
    assert dot([16, -16, x(1, -8), x(1, -8)], [16, 16, x(1, -8), x(1, -9)], "B200", fmt) == 3 * x(1, -17)
    assert dot(a, b, "B200", fmt, c=1.0) == 1.0
    assert dot(a * 2, b * 2, "B200", fmt, c=x(1, -20)) == x(1, -20)     # two instructions: the same twice


# -- an exact reference of the model (fractions), against the kernels -----------------------------------

def _exp(v, emin):
    return max(math.frexp(v)[1] - 1, emin)


def _round(s, out_man, nearest=False):
    if s == 0:
        return 0.0
    mag = abs(s)
    e = mag.numerator.bit_length() - mag.denominator.bit_length()
    e -= Fraction(2) ** e > mag
    unit = Fraction(2) ** max(e - out_man, -126 - out_man)
    q, r = divmod(mag, unit)
    if nearest and (r > unit / 2 or (r == unit / 2 and q % 2)):
        q += 1
    v = float(q * unit)
    return math.copysign(math.inf if v >= 2.0 ** 128 else v, s)


def _block_fma(terms, d, core):
    """d + one block's products (exact value, exponent ea + eb): the model's steps 2-5."""
    exps = [e for _, e in terms] + ([_exp(d, -126)] if d != 0 else [])
    if not exps:
        return 0.0
    unit = Fraction(2) ** (max(max(exps), core.min_align_exp) - core.frac_bits)
    trunc = lambda v: (abs(v) // unit) * unit * (1 if v >= 0 else -1)     # toward zero
    return _round(sum(trunc(p) for p, _ in terms) + trunc(Fraction(d)), core.out_man_bits)


def reference_dot(a, b, core, c=0.0):
    """The model's definition (tensorcore docstring steps 1-6, B200 fp8's interleaving) in exact rational
    arithmetic."""
    prods = [float(p) * float(q) for p, q in zip(a, b)]
    if any(map(math.isnan, prods + [c])) or (math.inf in prods + [c] and -math.inf in prods + [c]):
        return math.nan
    if any(map(math.isinf, prods + [c])):
        return next(v for v in prods + [c] if math.isinf(v))
    n, d = core.block * core.interleave, c
    for lo in range(0, len(a), n):
        ks = range(lo, min(lo + n, len(a)))
        part = d if core.interleave == 1 else 0.0
        for g in range(core.interleave):        # k in pairs: k mod 4 in {0, 1}, then {2, 3} when interleaved
            part = _block_fma([(Fraction(a[k]) * Fraction(b[k]), _exp(a[k], core.fmt.emin) + _exp(b[k], core.fmt.emin))
                               for k in ks if ((k - lo) // 2) % core.interleave == g and a[k] != 0 and b[k] != 0],
                              part, core)
        d = part if core.interleave == 1 else _round(Fraction(d) + Fraction(part), 23, nearest=True)
        if math.isinf(d):
            break
    return d


def _values(rng, fmt, shape, zeros=0.15):
    """Random values of fmt spread over many binades, subnormals and zeros included."""
    lo = fmt.emin - fmt.man_bits - 1
    e = rng.integers(max(lo, -40), min(fmt.emin + 2 ** fmt.exp_bits - 3, 12), size=shape)
    v = rng.uniform(1, 2, size=shape) * 2.0 ** e * rng.choice([-1, 1], size=shape)
    v[rng.random(shape) < zeros] = 0
    return np.asarray(round_to(v, fmt), np.float64)


@pytest.mark.parametrize("device, fmt", PAIRS, ids=lambda v: v if isinstance(v, str) else v.name)
def test_kernel_equals_reference(device, fmt):
    core = tc.model(device, fmt)
    rng = np.random.default_rng(zlib.crc32(f"{device} {fmt.name}".encode()))
    k = 2 * core.block + 3                              # whole blocks and a ragged one
    a, b = _values(rng, fmt, (3, k)), _values(rng, fmt, (k, 2))
    got = tc.matmul(a, b, device, fmt)
    want = [[reference_dot(a[i], b[:, j], core) for j in range(2)] for i in range(3)]
    assert got.dtype == np.float32 and got.shape == (3, 2)
    assert np.array_equal(got.view(np.uint32), np.array(want, np.float32).view(np.uint32))
    for i in range(4):                                  # with an addend c, cancelling or not
        c = float(np.float32(rng.choice([-1, 1]) * 2.0 ** rng.integers(-30, 8) * rng.uniform(1, 2)))
        p, q = _values(rng, fmt, k), _values(rng, fmt, k)
        assert np.float32(tc.dot(p, q, device, fmt, c)).view(np.uint32) == \
            np.float32(reference_dot(p, q, core, c)).view(np.uint32)


@pytest.mark.parametrize("device, fmt", PAIRS, ids=lambda v: v if isinstance(v, str) else v.name)
def test_fast_kernel_equals_per_element_kernel(device, fmt):
    # matmul's vectorised float64 kernel against the integer one, output by output: wide exponent ranges,
    # rows and columns at the format's largest value (overflow to inf), NaN and infinities.
    core = tc.model(device, fmt)
    rng = np.random.default_rng(zlib.crc32(f"fast {device} {fmt.name}".encode()))
    k, top = 3 * core.block + 1, float(fmt.decode(fmt.max_code))
    a, b = _values(rng, fmt, (6, k)), _values(rng, fmt, (k, 9))
    a[0], a[1] = top, rng.choice([-1, 1], size=k) * top
    b[:, 0], b[:, 1] = top, rng.choice([-1, 1], size=k) * top
    a[2, 1], b[3, 2] = math.nan, math.inf if fmt.infinities else math.nan
    ap, bp = tc._prepare(a, b, core)
    want = tc._matmul(ap, np.ascontiguousarray(bp.T), *tc._params(core))
    got = tc.matmul(a, b, device, fmt)
    assert np.isnan(want).any() and (np.isinf(want).any() or fmt == float8_e4m3)   # e4m3's 448**2 * 32 < 2**128
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got.view(np.uint32)[~np.isnan(got)], want.view(np.uint32)[~np.isnan(want)])


@pytest.mark.parametrize("device, fmt", PAIRS, ids=lambda v: v if isinstance(v, str) else v.name)
def test_special_values(device, fmt):
    core = tc.model(device, fmt)
    big = float(round_to(np.array([2.0 ** (2 ** (fmt.exp_bits - 1) - 1)]), fmt)[0])   # the top binade
    cases = [([math.nan, 1.0], [1.0, 1.0], 0.0), ([math.inf, 1.0], [1.0, 1.0], 0.0) if fmt.infinities else None,
             ([1.0, 1.0], [1.0, 1.0], -math.inf), ([1.0, 1.0], [1.0, 1.0], math.nan),
             ([math.inf, math.inf], [1.0, -1.0], 0.0) if fmt.infinities else None,
             ([big] * 8, [big] * 8, 0.0)]
    for a, b, c in filter(None, cases):
        want, got = reference_dot(a, b, core, c), float(tc.dot(a, b, device, fmt, c))
        assert (math.isnan(want) and math.isnan(got)) or want == got, (a, b, c, got, want)


def test_zero_results_are_positive():
    assert math.copysign(1, dot([1.0, -1.0], [1.0, 1.0])) == 1
    assert math.copysign(1, dot([0.0], [1.0], c=-0.0)) == 1


# -- values and errors ---------------------------------------------------------------------------------

def test_models_are_values():
    core = tc.model("H100", float8_e4m3)
    assert (core.block, core.extra_bits, core.frac_bits, core.out_man_bits) == (32, -10, 13, 13)
    assert tc.model("H100", "float8_e4m3") == core
    assert tc.model("A100", tf32).block == 4 and tc.model("V100", float16).extra_bits == 0
    assert (tc.model("B200", float8_e5m2).block, tc.model("B200", float8_e5m2).interleave) == (16, 2)
    with pytest.raises(Exception):
        core.block = 8


@pytest.mark.parametrize("device, fmt, words", [
    ("P100", float16, ["device='P100'", "V100, A100, H100, B200"]),
    ("V100", bfloat16, ["fmt='bfloat16'", "device='V100'", "float16"]),
    ("A100", float8_e4m3, ["fmt='float8_e4m3'", "device='A100'", "tf32"]),
    ("H100", float32, ["fmt='float32'", "float8_e5m2"]),
    ("B200", None, ["fmt=None", "float16, bfloat16, tf32"]),
])
def test_unsupported_pairs_are_refused(device, fmt, words):
    with pytest.raises(ValueError) as err:
        tc.matmul(np.ones((2, 2)), np.ones((2, 2)), device, fmt)
    for w in words:
        assert w in str(err.value)


def test_bad_arrays_are_refused():
    with pytest.raises(ValueError, match="not float16 values"):
        tc.matmul(np.full((2, 2), 0.1), np.ones((2, 2)), "V100", float16)
    with pytest.raises(ValueError, match="shapes"):
        tc.matmul(np.ones((2, 3)), np.ones((2, 2)), "V100", float16)
    with pytest.raises(ValueError, match="float32 value"):
        tc.dot(np.ones(2), np.ones(2), "V100", float16, c=0.1)


# -- an H100's own cuBLAS GEMMs (benchmarks/gpu_tensorcore.py --record, then --fixture) --------------------------

CUBLAS = np.load(Path(__file__).parent / "fixtures" / "tensorcore" / "h100_cublas.npz")


# The papers' vectors run in CI's first pass: with the JIT off, the model's Python takes ~10 s for each of them.
@pytest.mark.parametrize("key", [pytest.param(k, marks=pytest.mark.skipif(
    numba.config.DISABLE_JIT and "/paper/" in k, reason="the papers' vectors run with the JIT (CI's first run)"))
    for k in sorted(k[:-2] for k in CUBLAS.files if k.endswith("/d"))])
def test_h100_cublas_gemms_are_the_model_with_their_promotion(key):
    # torch.mm(out_dtype=float32) for float16 / bfloat16 (and its 16-bit output), torch.mm with TF32, fp8
    # torch._scaled_mm with use_fast_accum off and on, on an H100 (torch 2.11, CUDA 13.0): the H100 model, with
    # the tensor cores' float32 result added outside them every `promote` products where cuBLAS's kernel does,
    # and c (torch.addmm) added after in float32. The papers' vectors are the diagonal of their GEMM.
    fmt, case, variant = key.split("/")
    a, b, d = CUBLAS[f"{fmt}/{case}/a"], CUBLAS[f"{fmt}/{case}/b"], CUBLAS[key + "/d"]
    promote = int(CUBLAS[key + "/promote"]) or None
    if key + "/rows" in CUBLAS.files:
        vectors = CUBLAS[key + "/rows"] // (len(a) + 1)          # flat diagonal positions -> vector numbers
        want = np.array([tc.matmul(a[i:i + 1], b[:, i:i + 1], "H100", fmt, promote=promote)[0, 0] for i in vectors])
        if variant == "addmm":
            want += CUBLAS[f"{fmt}/{case}/c"][vectors]
        d = d.reshape(len(a), -1)[vectors, vectors]
    else:
        want = tc.matmul(a, b, "H100", fmt, promote=promote)
    want = np.asarray(round_to(want, fmt)).view(np.uint16) if d.dtype == np.uint16 else want.view(np.uint32)
    assert np.array_equal(want.reshape(-1), d.reshape(-1))


def test_promotion_adds_the_blocks_results_in_float32():
    # 1 + 3 * 2**-25 (three quarters of float32's last bit past 1): chained, the tensor core truncates it to 1;
    # promoted after each product, the float32 addition rounds it to nearest, 1 + 2**-23.
    a, b = np.array([[1.0, x(3, -13)]]), np.array([[1.0], [x(1, -12)]])
    assert float(tc.matmul(a, b, "H100", float16)[0, 0]) == 1.0
    assert float(tc.matmul(a, b, "H100", float16, promote=1)[0, 0]) == 1 + x(1, -23)
    with pytest.raises(ValueError, match="promote=0 must be a positive number"):
        tc.matmul(a, b, "H100", float16, promote=0)


@pytest.mark.parametrize("name, model", [("NVIDIA H100 80GB HBM3", "H100"), ("NVIDIA H200", "H100"),
                                         ("NVIDIA GH200 480GB", "H100"), ("NVIDIA B200", "B200"),
                                         ("NVIDIA A100-SXM4-80GB", "A100"), ("Tesla V100-SXM2-16GB", "V100"),
                                         ("NVIDIA GeForce RTX 4090", None)])
def test_the_gpu_in_use_names_its_model(name, model):
    # accumulate(tensor_core="gpu") reads CuPy's device name; Hopper's H200 and GH200 have the H100's cores
    from minifp._gpu import model_of
    assert model_of(name) == model
