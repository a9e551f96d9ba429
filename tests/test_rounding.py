"""Rounding is exact: kernels against numpy/ml_dtypes casts and against the float64 reference."""

import math
import warnings

import ml_dtypes
import numba
import numpy as np
import pytest

import minifp as mf
from minifp import _rounding as R, _speed
from minifp._seams import PLAIN

BIG = 4096           # arrays of more elements than this go through every kernel

JIT = not numba.config.DISABLE_JIT
NATIVE = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
          "float8_e4m3": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2}


def edge_sample(fmt, n_random=2**22 if JIT else 2**12, seed=0):
    """float32 values around every value of `fmt`: each one, the midpoints to its neighbours, and one
    float32 ulp either side of them; every float32 exponent; random bit patterns; inf, NaN, zeros."""
    rng = np.random.default_rng(seed)
    np.seterr(all="ignore")
    pos = mf.Format.decode(fmt, np.arange(1 << (fmt.bits - 1)))
    pos = np.unique(pos[np.isfinite(pos)])
    pos = np.append(pos, 2 * pos[-1] - pos[-2])                    # one step past max: the overflow boundary
    mids = ((pos[1:] + pos[:-1]) / 2).astype(np.float32)          # exact: at most p+1 bits
    around = np.concatenate([pos.astype(np.float32), mids, np.nextafter(mids, np.float32(np.inf)),
                             np.nextafter(mids, np.float32(0))])
    every_exponent = (np.arange(256, dtype=np.uint32)[:, None] << 23 |
                      rng.integers(0, 1 << 23, (256, 64), dtype=np.uint32)).view(np.float32).ravel()
    random_bits = rng.integers(0, 2**32, n_random, dtype=np.uint32).view(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan], np.float32)
    x = np.concatenate([around, -around, every_exponent, random_bits, special])
    return x if JIT else x[:: max(1, x.size // 50_000)]


def same_bits(a, b):
    """Equal bit patterns, any NaN equal to any NaN of the same sign."""
    a, b = np.asarray(a), np.asarray(b)
    ai, bi = a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}")
    nan_a, nan_b = np.isnan(a.astype(np.float32)), np.isnan(b.astype(np.float32))
    sign = ai >> (8 * a.itemsize - 1)
    ok = np.where(nan_a & nan_b, sign == bi >> (8 * b.itemsize - 1), ai == bi)
    return int((~ok).sum())


@pytest.mark.parametrize("name", NATIVE)
def test_kernel_matches_native_casts(name):
    fmt = mf.FORMATS[name]
    x = edge_sample(fmt)
    with np.errstate(all="ignore"):
        expected = x.astype(NATIVE[name])
    assert same_bits(R.round_kernel(x, fmt), expected) == 0
    assert same_bits(R.round_reference(x, fmt), expected) == 0


def test_float16_conversions_of_the_speed_module_match_numpy_too():
    # round_kernel is the bit kernel; the speed module rounds float16 by the CPU's own conversion where there is one
    x = edge_sample(mf.float16)
    with np.errstate(all="ignore"):
        want = x.astype(np.float16)
    assert same_bits(_speed.rounded(x, mf.float16), want) == 0
    assert same_bits(_speed.round_result(x, mf.float16)[0], want) == 0
    codes, values = _speed.round_result(x, mf.float16, keep=True)
    assert same_bits(codes, want) == 0 and (values is None or same_bits(values, want.astype(np.float32)) == 0)


@pytest.mark.parametrize("name", NATIVE)
def test_float64_sources_round_once(name):
    # Values just off a float16 tie in float64 would be tied after a float32 step: no double rounding.
    fmt = mf.FORMATS[name]
    rng = np.random.default_rng(1)
    x = rng.standard_normal(20_000) * np.exp2(rng.integers(-30, 20, 20_000)) + 2.0**-60
    assert same_bits(R.round_kernel(x, fmt), R.round_reference(x, fmt)) == 0


CUSTOM = [mf.Format(3, 4), mf.Format(6, 12, subnormals=False), mf.Format(8, 23), mf.tf32, mf.Format(2, 1),
          mf.Format(4, 3, overflow="saturate"), mf.Format(7, 20, infinities=False), mf.Format(5, 2, subnormals=False),
          mf.Format(8, 7, overflow="saturate"), mf.Format(5, 10, overflow="saturate"),
          mf.Format(8, 23, overflow="saturate"), mf.Format(8, 23, subnormals=False)]


# Every named format (those of other branches too, by name) and the custom ones above.
EVERY_FORMAT = list(mf.FORMATS.values()) + CUSTOM
# (mode, bits): every mode, and stochastic rounding with few random bits.
MODES_AND_BITS = [(mode, None) for mode in R.MODES] + [("stochastic", n) for n in (1, 3, 8)]


@pytest.mark.parametrize("fmt", EVERY_FORMAT, ids=str)
@pytest.mark.parametrize("mode, bits", MODES_AND_BITS, ids=str)
@pytest.mark.parametrize("src", [np.float32, np.float64])
def test_kernel_matches_float64_reference(fmt, mode, bits, src):
    rng = np.random.default_rng(2)
    n = 100_000 if JIT else 3_000
    with np.errstate(all="ignore"):
        x = (rng.standard_normal(n) * np.exp2(rng.integers(-150, 130, n))).astype(src)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 2.0**-149]
    rbits = R._random_bits(np.random.default_rng(7), n, bits or 32) if mode == "stochastic" else None
    with np.errstate(all="ignore"):
        got = R.round_kernel(x, fmt, mode, rng=np.random.default_rng(7), bits=bits)
        assert same_bits(got, R.round_reference(x, fmt, mode, rbits, bits)) == 0
        assert same_bits(mf.round_to(x, fmt, mode, rng=np.random.default_rng(7), bits=bits), got) == 0


@pytest.mark.parametrize("x, expected", [(65519.99, 65504.0), (65520.0, np.inf), (-65520.0, -np.inf),
                                         (2.0**-25, 0.0), (2.0**-25 * (1 + 2**-10), 2.0**-24),
                                         (1 + 2**-11, 1.0), (1 + 3 * 2**-11, 1 + 2**-9)])
def test_float16_edges(x, expected):
    assert mf.round_to(np.array([x], np.float32), "float16")[0] == np.float16(expected)


def test_signed_zero_and_nan_survive():
    out = mf.round_to(np.array([-0.0, np.nan, -1e-30], np.float32), "float16")
    assert np.signbit(out[0]) and out[0] == 0
    assert np.isnan(out[1])
    assert np.signbit(out[2]) and out[2] == 0


@pytest.mark.parametrize("x, default, saturate", [(448.0, 448.0, 448.0), (464.0, 448.0, 448.0),
                                                   (464.01, np.nan, 448.0), (1e6, np.nan, 448.0),
                                                   (-500.0, np.nan, -448.0), (np.inf, np.nan, 448.0)])
def test_e4m3_overflow(x, default, saturate):
    sat = mf.Format(4, 3, infinities=False, overflow="saturate")
    got = mf.round_to(np.array([x], np.float32), "float8_e4m3").astype(np.float32)[0]
    assert got == default or (np.isnan(default) and np.isnan(got))
    assert mf.round_to(np.array([x], np.float32), sat).astype(np.float32)[0] == saturate


@pytest.mark.parametrize("mode", R.MODES)
@pytest.mark.parametrize("src", [np.float32, np.float64])
@pytest.mark.parametrize("fmt", [mf.Format(8, 7, overflow="saturate"), mf.Format(8, 23, overflow="saturate")], ids=str)
def test_saturating_formats_with_float32_exponents_saturate(fmt, src, mode):
    # bfloat16's shortcut in the hot kernel carried past max onto inf; float32's widths were taken for float32.
    big = mf.finfo(fmt).max
    x = np.array([np.float32(3.4e38), np.inf, -np.inf, np.float32(-3.4e38), 1.0] +
                 ([1e39, -1e300] if src == np.float64 else []), src)    # 3.4e38 passes bfloat16's max, not e8m23's
    expected = np.clip(x.astype(np.float64), -big, big)
    assert mf.round_to(x, fmt, mode, rng=0).astype(np.float64).tolist() == expected.tolist()


def test_float32_widths_without_subnormals_are_not_float32():
    fmt = mf.Format(8, 23, subnormals=False)
    x = np.array([1e-40, -1e-40, 2.0**-126, 1.0], np.float32)
    assert mf.round_to(x, fmt).tolist() == [0.0, 0.0, 2.0**-126, 1.0]


NO_SUBNORMALS = [mf.Format(5, 2, subnormals=False), mf.Format(5, 10, subnormals=False),
                 mf.Format(8, 7, subnormals=False), mf.Format(8, 23, subnormals=False)]


@pytest.mark.parametrize("fmt", NO_SUBNORMALS, ids=str)
@pytest.mark.parametrize("src", [np.float32, np.float64])
def test_without_subnormals_zero_and_the_smallest_normal_are_neighbours(fmt, src):
    # As chop and CPFloat: below xmin the step is xmin itself; nearest rounds the tie xmin/2 to 0 (even).
    xmin = mf.finfo(fmt).tiny
    x = np.array([0.49, 0.5, 0.51, 0.75, 1 - 2.0**-20, 1.0, -0.6, -0.5, 2.0**-30], src) * src(xmin)
    nearest = [0, 0, 1, 1, 1, 1, -1, -0.0, 0]
    for fn in (mf.round_to, R.round_kernel):
        assert fn(x, fmt).astype(np.float64).tolist() == [v * xmin for v in nearest]
        assert fn(x, fmt, "toward_zero").astype(np.float64).tolist() == [0, 0, 0, 0, 0, xmin, 0, 0, 0]
        assert np.signbit(fn(x, fmt)[-3]) and np.signbit(fn(x, fmt, "toward_zero")[-3])


@pytest.mark.parametrize("fmt", NO_SUBNORMALS, ids=str)
def test_stochastic_rounding_is_unbiased_below_the_smallest_normal(fmt):
    # Up with probability |x| / xmin (it used to flush after rounding: a bias of -0.42 of the gap).
    xmin, n = mf.finfo(fmt).tiny, 40_000
    for share in (0.125, 0.3, 0.75):
        x = np.full(n, share * xmin, np.float32)
        for fn in (mf.round_to, R.round_kernel):
            y = fn(x, fmt, "stochastic", rng=np.random.default_rng(8)).astype(np.float64)
            assert set(np.unique(y)) == {0.0, xmin}
            assert abs(y.mean() - x[0]) < 4 * xmin * np.sqrt(0.25 / n)


@pytest.mark.parametrize("fmt", NO_SUBNORMALS + [mf.float16], ids=str)
def test_counts_follow_the_rule(fmt):
    xmin = mf.finfo(fmt).tiny
    x = np.array([0.3, 0.5, 0.6, 1.5, 0.0, np.nan], np.float32) * np.float32(xmin)
    underflow = 2 if not fmt.subnormals else 0
    subnormal = 0 if not fmt.subnormals else 3
    for fn in (mf.round_to, R.round_kernel):
        tally = np.zeros(4, np.int64)
        fn(x, fmt, counts=tally)
        assert tally.tolist() == [0, underflow, subnormal, 1]
    assert mf.numerics.count_rounding(x, R.round_reference(x, fmt), fmt).tolist() == [0, underflow, subnormal, 1]


@pytest.mark.parametrize("fmt", [mf.float16, mf.bfloat16, mf.float8_e4m3, mf.float8_e5m2, mf.Format(3, 4)]
                         + NO_SUBNORMALS, ids=str)
def test_share_flushed_is_what_rounding_flushes(fmt):
    # Log-uniform magnitudes, and every power of two (the ties at half the smallest nonzero magnitude).
    rng = np.random.default_rng(9)
    v = np.concatenate([np.exp2(rng.uniform(-150, 0, 20_000)) * rng.choice([-1, 1], 20_000),
                        np.exp2(np.arange(-149.0, 1)), [0.0, np.inf, np.nan]]).astype(np.float32)
    h = mf.numerics.Histogram()
    h.add(v)
    for scale in (1.0, 8.0, 1024.0, 2.0**20):
        with np.errstate(all="ignore"):
            flushed = (v != 0) & (mf.round_to(v * np.float32(scale), fmt).astype(np.float32) == 0)
        assert h.share_flushed(fmt, scale) == flushed.sum() / v.size


def test_toward_zero_truncates_and_never_overflows():
    x = np.array([1 + 2**-10 - 2**-20, -(1 + 2**-10 - 2**-20), 70000.0, np.inf], np.float32)
    out = mf.round_to(x, "float16", mode="toward_zero").astype(np.float32)
    assert out.tolist() == [1.0, -1.0, 65504.0, np.inf]


def test_stochastic_rounding_is_unbiased_reproducible_and_lands_on_neighbours():
    x = np.full(200_000, 1 + 2**-12, np.float32)             # a quarter of the way from 1 to 1 + 2**-10
    a = mf.round_to(x, "float16", mode="stochastic", rng=np.random.default_rng(3)).astype(np.float64)
    b = mf.round_to(x, "float16", mode="stochastic", rng=np.random.default_rng(3)).astype(np.float64)
    assert np.array_equal(a, b)                              # the same generator state draws the same bits
    assert set(np.unique(a)) == {1.0, 1 + 2**-10}
    share_up = (a > 1).mean()
    assert abs(share_up - 0.25) < 4 * np.sqrt(0.25 * 0.75 / x.size)
    assert abs(a.mean() - (1 + 2**-12)) < 1e-5
    exact = np.array([1.5, -2.0], np.float32)                # representable values never move
    assert mf.round_to(exact, "float16", mode="stochastic", rng=0).tolist() == [1.5, -2.0]


def test_storage_dtypes():
    x = np.ones(4, np.float32)
    assert mf.round_to(x, "float16").dtype == np.float16
    assert mf.round_to(x, "bfloat16").dtype == ml_dtypes.bfloat16
    assert mf.round_to(x, "float8_e4m3").dtype == ml_dtypes.float8_e4m3fn
    assert mf.round_to(x, "float8_e5m2").dtype == ml_dtypes.float8_e5m2
    assert mf.round_to(x, "tf32").dtype == np.float32
    assert mf.round_to(x, mf.Format(3, 4)).dtype == np.float32


def test_tf32_keeps_ten_mantissa_bits():
    x = np.array([1 + 2**-10, 1 + 2**-11, 1 + 3 * 2**-11, 2.0**-130], np.float32)
    assert mf.round_to(x, "tf32").tolist() == [1 + 2**-10, 1.0, 1 + 2**-9, 2.0**-130]


@pytest.mark.skipif(not JIT, reason="the kernels' plans need the JIT")
def test_tf32_takes_its_one_pass_kernel_with_the_general_kernels_results():
    # float32's max rounds past tf32's onto inf (both signs); a NaN with a payload becomes the quiet NaN of its sign
    nan = np.array([0xFF800001], np.uint32).view(np.float32)[0]
    x = np.array([3.4028235e38, -3.4028235e38, nan, -(1 + 3 * 2**-11), -2.0**-140, 1e-45], np.float32)
    got = mf.round_to(x, "tf32")
    assert R.nearest_plan(mf.tf32) is not None
    assert got.view(np.uint32).tolist() == [0x7F800000, 0xFF800000, 0xFFC00000,
                                            np.float32(-(1 + 2**-9)).view(np.uint32), 0x80000000, 0]
    counts = np.zeros(4, np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # the signalling NaN raises no warning while counted
        assert same_bits(mf.round_to(x, "tf32", counts=counts), got) == 0
    assert counts.tolist() == [2, 2, 0, 1]


@pytest.mark.parametrize("widened", [PLAIN.widened, _speed.widened], ids=["plain", "speed"])
def test_widen_is_exact_for_every_code(widened):
    for name, native in NATIVE.items():
        codes = np.arange(1 << mf.FORMATS[name].bits, dtype=np.uint16 if mf.FORMATS[name].bits == 16 else np.uint8)
        stored = np.tile(codes, 2 * BIG // codes.size + 1).view(native)      # past the speed module's smallest size
        assert same_bits(widened(stored), stored.astype(np.float32)) == 0


def exact_integer_rounding(v, fmt, mode):
    """The float64 value of the Python int v rounded into fmt (nearest-even or toward zero), by integer math."""
    a, p, big = abs(v), fmt.man_bits + 1, mf.finfo(fmt).max
    drop = max(a.bit_length() - p, 0)
    q, r = a >> drop, a & ((1 << drop) - 1)
    if mode == "nearest" and drop and (r > 1 << (drop - 1) or r == 1 << (drop - 1) and q & 1):
        q += 1
    y = float(q << drop)
    if y > big:
        y = big if mode == "toward_zero" or fmt.overflow == "saturate" else np.inf if fmt.infinities else np.nan
    return -y if v < 0 else y


@pytest.mark.parametrize("fmt", [mf.bfloat16, mf.float16, mf.Format(8, 23), mf.Format(7, 20, infinities=False),
                                 mf.Format(5, 2, overflow="saturate")], ids=str)
@pytest.mark.parametrize("mode", ["nearest", "toward_zero"])
@pytest.mark.parametrize("dtype", [np.int64, np.uint64, ">i8"])
def test_integers_round_once(fmt, mode, dtype):
    # Ties and one off them, at every width: a float32 (or float64) step first would round them twice.
    rng = np.random.default_rng(4)
    p = fmt.man_bits + 1
    values = [2**24 + 2**16 + 1, 2**63 - 1, 2**64 - 1, 0, 1, 7]
    for width in range(p + 1, 65):
        base = int(rng.integers(1 << (p - 1), 1 << p)) << (width - p)
        values += [base + (1 << (width - p - 1)) + d for d in (-1, 0, 1)]
    signed = np.dtype(dtype).kind == "i"
    values = [v if v < 2**63 else 2**63 - 1 for v in values] if signed else values
    values += [-v for v in values] + [-2**63] if signed else []
    x = np.array(values, dtype)
    expected = [exact_integer_rounding(v, fmt, mode) for v in values]
    with np.errstate(all="ignore"):
        for fn in (mf.round_to, R.round_kernel):
            got = fn(x, fmt, mode).astype(np.float64)
            assert np.array_equal(got, expected, equal_nan=True), (fn, x[got != expected])


def test_the_example_of_the_issue():
    assert mf.round_to(np.array([2**24 + 2**16 + 1]), "bfloat16")[0] == 16908288


@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 60, reason="long double is float64 here")
@pytest.mark.parametrize("mode", ["nearest", "toward_zero"])
def test_long_doubles_round_once(mode):
    one = np.longdouble(1)
    tie = 2**24 + 2**16                                  # halfway between two bfloat16 values
    x = np.array([tie + one / 2**38, tie - one / 2**38, -(tie + one / 2**38), one / 2**38, one * 2**100,
                  np.longdouble("1e400"), np.longdouble("1e-400"), np.inf, -np.inf], np.longdouble)
    big = mf.finfo(mf.bfloat16).max
    expected = ([2**24 + 2**17, 2**24, -(2**24 + 2**17), 2.0**-38, 2.0**100, np.inf, 0.0, np.inf, -np.inf]
                if mode == "nearest" else [2**24, 2**24, -2**24, 2.0**-38, 2.0**100, big, 0.0, np.inf, -np.inf])
    with np.errstate(all="ignore"):
        assert mf.round_to(x, "bfloat16", mode).astype(np.float64).tolist() == expected
        assert R.round_kernel(x, "bfloat16", mode).astype(np.float64).tolist() == expected


@pytest.mark.parametrize("storage", sorted({np.dtype(f.storage) for f in mf.FORMATS.values()}, key=str), ids=str)
@pytest.mark.parametrize("fmt", [mf.float8_e4m3, mf.float16, mf.Format(3, 4)], ids=str)
def test_every_storage_dtype_is_taken_as_its_values(storage, fmt):
    x = np.random.default_rng(5).standard_normal(3 * BIG).astype(np.float32).astype(storage)   # past the casts
    wide = x.astype(np.float32)
    with np.errstate(all="ignore"):
        assert same_bits(mf.round_to(x, fmt), mf.round_to(wide, fmt)) == 0
        assert same_bits(mf.round_to(x[:5], fmt), mf.round_to(wide[:5], fmt)) == 0


@pytest.mark.parametrize("dtype", [">f4", ">f8", ">f2", ">i4", ">i8", ">u2"])
def test_big_endian_arrays_are_numbers(dtype):
    x = np.array([1.5, 3.0, 96.0, 0.0, 7.0] * 1000, dtype)           # past the native casts' sizes
    for n in (5, x.size):
        assert mf.round_to(x[:n], "bfloat16").astype(np.float32).tolist() == x[:n].astype(np.float32).tolist()
    if dtype == ">f2":
        assert R.widen(x).tolist() == x.astype(np.float32).tolist()


SHAPES_OF_PATHS = [(fmt, mode, counts) for fmt in (mf.float16, mf.bfloat16, mf.tf32, mf.float32, mf.Format(3, 4))
                   for mode in R.MODES for counts in (False, True)]


@pytest.mark.parametrize("fmt, mode, counts", SHAPES_OF_PATHS, ids=str)
@pytest.mark.parametrize("make", [np.float32, np.float64, float, int, np.longdouble,
                                  lambda v: np.array(v, ml_dtypes.bfloat16)], ids=lambda m: getattr(m, "__name__", "bf16"))
def test_shapes_are_kept(fmt, mode, counts, make):
    tally = np.zeros(4, np.int64) if counts else None
    for fn in (mf.round_to, R.round_kernel):
        assert fn(make(1.25), fmt, mode, rng=0, counts=tally).shape == ()
    for shape in ((2, 0), (3, 1, 2), (BIG + 1, 2)):
        assert mf.round_to(np.full(shape, make(1.25)), fmt, mode, rng=0, counts=tally).shape == shape
    assert R.widen(np.float16(1.0)).shape == () and R.widen(np.zeros((0, 3), np.float16)).shape == (0, 3)


BAD = [  # (keyword arguments of round_to, error, message naming the argument, what was given and the valid choices)
    (dict(fmt=None), TypeError, r"fmt: None is not a format; valid formats: float32, tf32, float16, bfloat16"),
    (dict(fmt="float17"), ValueError, r"fmt: unknown format 'float17'; valid formats: float32, tf32, float16"),
    (dict(fmt=16), TypeError, r"fmt: 16 is not a format; valid formats: float32, tf32"),
    (dict(fmt=np.int16), TypeError, r"fmt: <class 'numpy.int16'> is not a format; valid formats: float32"),
    (dict(mode="upward"), ValueError, r"mode: unknown rounding mode 'upward'; valid modes: nearest, toward_zero, "
                                      r"stochastic, up, down, nearest_away, odd"),
    (dict(mode=None), ValueError, r"mode: unknown rounding mode None; valid modes: nearest, toward_zero, stochastic"),
    (dict(mode="stochastic", bits=0), ValueError, r"bits: 0 is not a number of random bits; valid values: "
                                                  r"integers 1 to 32, or None \(32\)"),
    (dict(mode="stochastic", bits=33), ValueError, r"bits: 33 is not a number of random bits; valid values"),
    (dict(mode="stochastic", bits=8.0), ValueError, r"bits: 8.0 is not a number of random bits"),
    (dict(mode="stochastic", bits=True), ValueError, r"bits: True is not a number of random bits"),
    (dict(mode="up", bits=8), ValueError, r"bits: bits=8 is only for mode='stochastic', not mode='up'; pass "
                                          r"bits=None for mode='up'"),
    (dict(bits=8), ValueError, r"bits: bits=8 is only for mode='stochastic', not mode='nearest'"),
    (dict(mode=["nearest"]), ValueError, r"mode: unknown rounding mode \['nearest'\]; valid modes: nearest"),
    (dict(x=np.array([1 + 2j])), TypeError, r"x: an array of dtype complex128 cannot be rounded \(take .real or "
                                            r"abs\(\) first\); valid dtypes: float32, float64, longdouble, float16"),
    (dict(x=np.array(["1.0"])), TypeError, r"x: an array of dtype <U3 cannot be rounded; valid dtypes: float32"),
    (dict(x=None), TypeError, r"x: an array of dtype object cannot be rounded; valid dtypes: float32"),
    (dict(x=np.array([1.0], ml_dtypes.float8_e4m3b11fnuz)), TypeError, r"x: an array of dtype float8_e4m3b11fnuz"),
    (dict(counts=[0, 0, 0, 0]), TypeError, r"counts: got a list; pass a writable int64 NumPy array of 4 "
                                           r"\(overflow, underflow, subnormal, NaN, added to\), or None"),
    (dict(counts=np.zeros(4, np.int32)), TypeError, r"counts: got an array of dtype int32 and shape \(4,\); pass"),
    (dict(counts=np.zeros(3, np.int64)), TypeError, r"counts: got an array of dtype int64 and shape \(3,\); pass"),
]


@pytest.mark.parametrize("fn", [mf.round_to, R.round_kernel], ids=["round_to", "round_kernel"])
@pytest.mark.parametrize("kwargs, error, message", BAD, ids=[m[:30] for _, _, m in BAD])
def test_bad_input_is_one_clear_error_before_anything_changes(fn, kwargs, error, message):
    tally = np.zeros(4, np.int64)
    args = {"x": np.array([1.0, np.inf], np.float32), "fmt": "float16", "counts": tally, **kwargs}
    with pytest.raises(error, match=message):
        fn(**args)
    assert not tally.any()                                   # nothing counted before the error


def test_an_integer_seed_is_a_stream_that_advances():
    w = np.float32([1.0] * 64)
    with_seed = [mf.round_to(w + np.float32(1e-3), "bfloat16", mode="stochastic", rng=5) for _ in range(2)]
    assert not np.array_equal(with_seed[0], with_seed[1])    # a loop passing rng=5 does not repeat its bits
    mf.manual_seed(0)                                        # restarts the streams: the first draw comes again
    again = mf.round_to(w + np.float32(1e-3), "bfloat16", mode="stochastic", rng=5)
    assert np.array_equal(again, with_seed[0])
    stream = np.random.default_rng(5)                        # the stream of 5 is default_rng(5), advancing
    first = mf.round_to(w + np.float32(1e-3), "bfloat16", mode="stochastic", rng=stream)
    assert np.array_equal(first, with_seed[0])


# -- The modes against an exact reference in integer arithmetic --------------------------------------------

DETERMINISTIC = [m for m in R.MODES if m != "stochastic"]


def exact_roundings(v, fmt):
    """{mode: the float v rounded into fmt} for the deterministic modes, in exact integer arithmetic:
    |v| = n / 2**k is split at its quantum 2**qe (the format's spacing at |v|) into whole quanta and a
    remainder, each mode picks a neighbour, and past max IEEE 754's rule picks max or the overflow value."""
    over = float(fmt.decode(fmt.overflow_code))
    if np.isnan(v) and fmt.nan is False:                 # no NaN: the zero of the opposite sign, as ml_dtypes
        return dict.fromkeys(DETERMINISTIC, math.copysign(0.0, -math.copysign(1.0, v)))
    if not np.isfinite(v) or v == 0:
        special = math.copysign(over, v) if np.isinf(v) else v
        return dict.fromkeys(DETERMINISTIC, format_rules(v, special, fmt) if not np.isnan(v) else v)
    n, d = abs(v).as_integer_ratio()                                  # d = 2**k
    k = d.bit_length() - 1
    e = n.bit_length() - 1 - k                                        # 2**e <= |v| < 2**(e + 1)
    qe = max(e, fmt.emin) - fmt.man_bits if fmt.subnormals or e >= fmt.emin else fmt.emin
    s = k + qe                                                        # |v| / 2**qe = n / 2**s
    whole, rem, unit = (n >> s, n & ((1 << s) - 1), 1 << s) if s >= 0 else (n << -s, 0, 1)
    negative, big = v < 0, mf.finfo(fmt).max
    ups = {"nearest": 2 * rem > unit or 2 * rem == unit and whole % 2 == 1, "nearest_away": 2 * rem >= unit,
           "toward_zero": False, "up": rem > 0 and not negative, "down": rem > 0 and negative,
           "odd": rem > 0 and whole % 2 == 0}
    out = {}
    for mode, up in ups.items():
        mag = math.ldexp(whole + up, qe)                              # exact: at most p + 1 bits
        if mag > big:
            shrinks = mode in ("toward_zero", "odd") or mode == ("up" if negative else "down")
            mag = big if shrinks else over
        out[mode] = format_rules(v, -mag if negative else mag, fmt)
    return out


def format_rules(v, y, fmt):
    """y, the rounding of v, under the format's own rules for zeros and signs: fnuz formats have no -0,
    e8m0 has no zero (the smallest value instead) and no sign (NaN for v <= 0)."""
    if fmt.signs == 1 and y == 0:
        y = 0.0
    if fmt.man_bits == 0 and y == 0:
        y = float(fmt.smallest)
    return math.nan if not fmt.signed and v <= 0 else y


def midpoint_sample(fmt, src, n_codes):
    """Each chosen positive value of fmt, the midpoint to the next one (the step past max too) and one
    ulp of `src` either side of the midpoint, both signs; the codes: all of a small format, else a random
    share with the smallest and the largest."""
    top = fmt.max_code
    codes = np.arange(top + 1) if top < n_codes else np.unique(np.concatenate(
        [np.arange(8), np.random.default_rng(11).integers(0, top, n_codes), np.arange(top - 8, top + 1),
         (fmt.emin + fmt.bias + np.arange(-1, 2)) << fmt.man_bits]))
    lo = fmt.decode(codes)
    hi = np.where(codes < top, fmt.decode(np.minimum(codes + 1, top)), lo + 2.0 ** (fmt.bias - fmt.man_bits))
    if not fmt.subnormals:                            # the step below the smallest normal is the smallest normal
        hi = np.where(codes < 1 << fmt.man_bits, 2.0 ** fmt.emin, hi)
        lo = np.where(codes < 1 << fmt.man_bits, 0.0, lo)
    with np.errstate(over="ignore"):                 # float32: the midpoint past float32's max is inf
        mid = ((lo + hi) / 2).astype(src)             # exact in float64; the nearest float32 for float32
    x = np.concatenate([lo.astype(src), mid, np.nextafter(mid, src(np.inf)), np.nextafter(mid, src(0)),
                        ((3 * lo + hi) / 4).astype(src)])
    return np.concatenate([x, -x, np.array([np.inf, -np.inf, np.nan, 0.0, -0.0], src)])


MIDPOINT_FORMATS = list(mf.FORMATS.values()) + [mf.Format(3, 4), mf.Format(4, 3, overflow="saturate"),
                                                mf.Format(5, 2, subnormals=False), mf.Format(6, 12, subnormals=False),
                                                mf.Format(7, 20, infinities=False), mf.Format(2, 1)]


@pytest.mark.parametrize("fmt", MIDPOINT_FORMATS, ids=str)
@pytest.mark.parametrize("src", [np.float64, np.float32])
def test_every_mode_matches_rationals_at_midpoints(fmt, src):
    x = midpoint_sample(fmt, src, 1000 if JIT else 100)
    exact = [exact_roundings(float(v), fmt) for v in x]
    for mode in DETERMINISTIC:
        expected = np.array([e[mode] for e in exact])
        with np.errstate(all="ignore"):
            for fn in (mf.round_to, R.round_kernel, R.round_reference):
                got = fn(x, fmt, mode).astype(np.float64)
                wrong = ~((got == expected) & (np.signbit(got) == np.signbit(expected))
                          | np.isnan(got) & np.isnan(expected))
                assert not wrong.any(), (mode, fn.__name__, x[wrong][:5], got[wrong][:5], expected[wrong][:5])


def spacing_above(fmt, mag):
    """The gap from each magnitude `mag` (values of fmt, below max) to the next larger one."""
    with np.errstate(divide="ignore"):
        e = np.maximum(np.floor(np.log2(np.where(mag > 0, mag, 1.0))), fmt.emin)
    gap = np.exp2(e - fmt.man_bits)
    return np.where(mag > 0, gap, mf.finfo(fmt).smallest_subnormal)


def in_range_sample(fmt, src, n=20_000 if JIT else 2_000):
    """Values of both signs, log-uniform from a quarter of the smallest subnormal to max."""
    rng = np.random.default_rng(12)
    fi = mf.finfo(fmt)
    mag = np.exp2(rng.uniform(np.log2(fi.smallest_subnormal) - 2, np.log2(fi.max), n))
    return (mag * rng.choice([-1.0, 1.0], n)).astype(src)


# The properties below hold for formats with a sign, zero and a mantissa; e8m0 (scales: unsigned powers of two,
# no zero) is checked against the exact reference above.
PROPERTY_FORMATS = [f for f in MIDPOINT_FORMATS if f.signed and f.man_bits > 0]


@pytest.mark.parametrize("fmt", PROPERTY_FORMATS, ids=str)
@pytest.mark.parametrize("src", [np.float64, np.float32])
def test_directed_modes_bracket_x_one_ulp_apart(fmt, src):
    x = in_range_sample(fmt, src)
    x = x[np.abs(x) <= mf.finfo(fmt).max]
    up, down, near, away = (mf.round_to(x, fmt, mode).astype(np.float64) for mode in ("up", "down", "nearest",
                                                                                       "nearest_away"))
    wide = x.astype(np.float64)
    assert (down <= wide).all() and (wide <= up).all()
    inexact = up != down
    assert ((up == wide) == ~inexact).all() and ((down == wide) == ~inexact).all()
    low = np.minimum(np.abs(up), np.abs(down))[inexact]
    assert np.array_equal(np.abs(up - down)[inexact], spacing_above(fmt, low))
    assert ((near == up) | (near == down)).all() and ((away == up) | (away == down)).all()
    tie = inexact & (wide - down == up - wide)
    assert np.array_equal(np.abs(away[tie]), np.maximum(np.abs(up), np.abs(down))[tie])
    assert np.array_equal(away[~tie], near[~tie])
    assert np.array_equal(mf.round_to(x, fmt, "toward_zero").astype(np.float64), np.where(x < 0, up, down))


@pytest.mark.parametrize("fmt", PROPERTY_FORMATS, ids=str)
@pytest.mark.parametrize("src", [np.float64, np.float32])
def test_round_to_odd_is_odd_whenever_inexact(fmt, src):
    x = in_range_sample(fmt, src)
    fi = mf.finfo(fmt)
    x = x[(np.abs(x) <= fi.max) & (fmt.subnormals | (np.abs(x) >= fi.tiny))]
    odd = mf.round_to(x, fmt, "odd").astype(np.float64)
    up, down = (mf.round_to(x, fmt, mode).astype(np.float64) for mode in ("up", "down"))
    inexact = odd != x.astype(np.float64)
    assert ((odd == up) | (odd == down)).all()
    mag = np.abs(odd[inexact])
    units = mag / np.exp2(np.maximum(np.floor(np.log2(mag)), fmt.emin) - fmt.man_bits)
    max_is_even = fi.max / np.exp2(np.floor(np.log2(fi.max)) - fmt.man_bits) % 2 == 0   # e4m3: 448 = 14 * 32
    assert ((units % 2 == 1) | (max_is_even & (mag == fi.max))).all()


@pytest.mark.parametrize("fmt", [mf.float16, mf.bfloat16, mf.float8_e4m3, mf.float8_e5m2,
                                 mf.Format(5, 2, subnormals=False), mf.Format(4, 3, overflow="saturate")], ids=str)
@pytest.mark.parametrize("src", [np.float64, np.float32])
def test_directed_overflow_follows_ieee(fmt, src):
    fi = mf.finfo(fmt)
    over = float(fmt.decode(fmt.overflow_code))
    a, b = min(fi.max * 1.5, float(np.finfo(src).max)), float(np.finfo(src).max)     # past max, both
    x = np.array([a, -a, b, -b, np.inf, -np.inf], src)
    inf = np.copysign(over, [1, 1])                          # the overflow value (inf, NaN, or max)
    expect = {"up": [inf[0], -fi.max, inf[0], -fi.max], "down": [fi.max, -inf[0], fi.max, -inf[0]],
              "toward_zero": [fi.max, -fi.max] * 2, "odd": [fi.max, -fi.max] * 2,
              "nearest": [inf[0], -inf[0]] * 2, "nearest_away": [inf[0], -inf[0]] * 2}
    for mode, values in expect.items():
        got = mf.round_to(x, fmt, mode).astype(np.float64)
        ends = [over, -over] if fmt.overflow == "inf" else [fi.max, -fi.max]     # inf in: inf out, in every mode
        np.testing.assert_array_equal(got, values + ends, err_msg=mode)


@pytest.mark.parametrize("fmt", [mf.float16, mf.bfloat16, mf.float8_e4m3, mf.Format(5, 2, subnormals=False)], ids=str)
def test_signs_of_tiny_results(fmt):
    tiny = mf.finfo(fmt).smallest_subnormal
    x = np.array([tiny / 8, -tiny / 8], np.float32)
    cases = {"up": [tiny, -0.0], "down": [0.0, -tiny], "toward_zero": [0.0, -0.0], "odd": [tiny, -tiny],
             "nearest": [0.0, -0.0], "nearest_away": [0.0, -0.0]}
    for mode, expected in cases.items():
        for fn in (mf.round_to, R.round_kernel, R.round_reference):
            got = fn(x, fmt, mode).astype(np.float64)
            assert got.tolist() == expected and np.signbit(got).tolist() == np.signbit(expected).tolist(), (mode, fn)


# -- Stochastic rounding with n random bits: P(up) is the remainder truncated to n bits -------------------

CHI2_16_AT_1E_3 = 39.252        # the chi-square distribution with 16 degrees of freedom: P(X > 39.252) = 0.001


@pytest.mark.parametrize("bits", [1, 3, 8, 32])
@pytest.mark.parametrize("fn", [mf.round_to, R.round_kernel], ids=["round_to", "round_kernel"])
def test_stochastic_rounds_up_with_the_truncated_remainder(bits, fn):
    # Sixteen float64 values 1 + (k + r) * 2**-10 whose remainders r (40 random bits) truncate to a
    # nonzero share below 1; each rounded `draws` times to float16, the ups of each counted. Pearson's
    # statistic over the 16 binomials is chi-square with 16 degrees of freedom if P(up) = floor(r * 2**n) / 2**n.
    rng = np.random.default_rng(13)
    draws = 20_000 if JIT else 2_000
    r = (rng.integers(1 << (40 - bits), 1 << 40, 16) >> 0) / 2.0**40          # at least 2**-bits: p > 0
    p = np.floor(r * 2.0**bits) / 2.0**bits
    x = np.repeat(1 + (np.arange(16) * 3 + r) * 2.0**-10, draws)
    y = fn(x, mf.float16, "stochastic", rng=np.random.default_rng(14), bits=bits).astype(np.float64)
    base = np.repeat(1 + np.arange(16) * 3 * 2.0**-10, draws)
    assert set(np.unique(y - base)) <= {0.0, 2.0**-10}
    ups = ((y > base).reshape(16, draws)).sum(axis=1)
    expected = draws * p
    stat = ((ups - expected) ** 2 / expected + (ups - expected) ** 2 / (draws - expected)).sum()
    assert stat < CHI2_16_AT_1E_3, (stat, ups / draws, p)
    # A remainder below 2**-bits never rounds up; representable values never move.
    small = np.full(draws, 1 + (2.0**-bits - 2.0**-40) * 2.0**-10)
    assert (fn(small, mf.float16, "stochastic", rng=1, bits=bits).astype(np.float64) == 1.0).all()
    assert (fn(base[:draws], mf.float16, "stochastic", rng=1, bits=bits).astype(np.float64) == base[0]).all()


def test_stochastic_bits_32_is_the_default_bit_for_bit():
    x = np.random.default_rng(15).standard_normal(50_000).astype(np.float32)
    default = mf.round_to(x, "bfloat16", "stochastic", rng=np.random.default_rng(16))
    assert same_bits(mf.round_to(x, "bfloat16", "stochastic", rng=np.random.default_rng(16), bits=32), default) == 0


def test_fewer_random_bits_only_coarsen_one_stream():
    # The n bits are the top of the same 32-bit draws: with one stream, fewer bits never round up more often
    # than the truncation allows, and 1 bit is a coin: up iff the remainder is at least a half and the coin says so.
    x = np.random.default_rng(17).uniform(1, 2, 50_000).astype(np.float32)
    ups = [mf.round_to(x, "bfloat16", "stochastic", rng=np.random.default_rng(18), bits=n).astype(np.float32) > x
           for n in (32, 8, 1)]
    assert not (ups[1] & ~ups[0]).any() and not (ups[2] & ~ups[1]).any()


@pytest.mark.parametrize("mode, bits", MODES_AND_BITS, ids=str)
def test_astype_rounds_in_every_mode_and_the_gradient_casts_back(mode, bits):
    x = np.random.default_rng(19).standard_normal(1000).astype(np.float32) * 3
    t = mf.tensor(x, requires_grad=True)
    y = t.astype("bfloat16", mode, rng=np.random.default_rng(20), bits=bits)
    assert y.fmt == mf.bfloat16
    expected = mf.round_to(x, "bfloat16", mode, rng=np.random.default_rng(20), bits=bits)
    assert same_bits(y.data, expected) == 0
    (y * 2).sum().backward()
    assert (t.grad.float32() == 2).all()
    with mf.numerics.watch() as report:
        t.to(mf.float8_e4m3, mode, rng=0, bits=bits)
    assert report.total("overflow") == 0 and report.rows()[0][1] == "cast"


def test_astype_checks_mode_and_bits():
    t = mf.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match=r"mode: unknown rounding mode 'upward'; valid modes: nearest"):
        t.astype("float16", "upward")
    with pytest.raises(ValueError, match=r"bits: bits=4 is only for mode='stochastic', not mode='nearest'"):
        t.astype("float16", bits=4)
    with pytest.raises(ValueError, match=r"bits: 40 is not a number of random bits; valid values: integers 1 to 32"):
        t.astype("float16", "stochastic", bits=40)


@pytest.mark.parametrize("src", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [mf.round_to, R.round_kernel], ids=["round_to", "round_kernel"])
def test_overflow_is_counted_as_ieee_signals_it(fn, src):
    # IEEE 754 7.4: overflow when the result, rounded as if the exponent range were unbounded, passes max;
    # in float16 max = 65504, the midpoint above it 65520, the next step 65536.
    pos = [65505.0, 65519.0, 65520.0, 65521.0, 65535.0, 65536.0, 1e6, np.inf]
    x = np.array(pos + [-v for v in pos], src)
    expected = {"nearest": 10, "nearest_away": 10, "toward_zero": 4, "odd": 4, "up": 7 + 2, "down": 2 + 7}
    for mode, overflows in expected.items():
        tally = np.zeros(4, np.int64)
        fn(x, "float16", mode, counts=tally)
        assert tally[0] == overflows, mode
    e4m3 = np.array([449.0, 479.0, 480.0, -449.0], src)                   # max 448 is even: odd passes it at once
    for mode, overflows in {"odd": 4, "toward_zero": 1, "up": 3, "down": 2}.items():
        tally = np.zeros(4, np.int64)
        fn(e4m3, "float8_e4m3", mode, counts=tally)
        assert tally[0] == overflows, mode


@pytest.mark.parametrize("fmt", [mf.bfloat16, mf.float16, mf.Format(8, 23), mf.float8_e4m3], ids=str)
@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_integers_round_once_in_every_mode(fmt, dtype):
    # Rounded to odd into float64 first (53 bits >= p + 2): the second rounding is then right in every mode.
    rng = np.random.default_rng(21)
    p = fmt.man_bits + 1
    values = [2**63 - 1, 0, 1, 7, 2**40 + 1]
    for width in range(p + 1, 64):
        base = int(rng.integers(1 << (p - 1), 1 << p)) << (width - p)
        values += [base + (1 << (width - p - 1)) + d for d in (-1, 0, 1)] + [base + 1, base - 1]
    values += [-v for v in values] if dtype == np.int64 else []
    x = np.array(values, dtype)
    exact = [exact_roundings(v, fmt) for v in values]
    with np.errstate(all="ignore"):
        for mode in DETERMINISTIC:
            expected = np.array([e[mode] for e in exact])
            for fn in (mf.round_to, R.round_kernel):
                got = fn(x, fmt, mode).astype(np.float64)
                assert np.array_equal(got, expected, equal_nan=True), (mode, x[got != expected])


@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 60, reason="long double is float64 here")
@pytest.mark.parametrize("fmt", [mf.bfloat16, mf.float16, mf.Format(8, 23)], ids=str)
def test_long_doubles_round_once_in_every_mode(fmt):
    one, p = np.longdouble(1), fmt.man_bits + 1
    tie = np.longdouble(2**p + 1) / 2                         # halfway between 2**(p-1) + 0 and + 1 quanta
    tiny = one / 2**62
    x = np.array([tie, tie + tiny, tie - tiny, 1 + tiny, 1 - tiny / 4, tiny], np.longdouble)
    x = np.concatenate([x, -x])
    exact = [exact_roundings(v, fmt) for v in x]
    with np.errstate(all="ignore"):
        for mode in DETERMINISTIC:
            expected = np.array([e[mode] for e in exact])
            for fn in (mf.round_to, R.round_kernel):
                assert np.array_equal(fn(x, fmt, mode).astype(np.float64), expected), mode


def test_a_tensor_given_to_round_to_points_to_astype():
    with pytest.raises(TypeError, match=r"x: got a minifp tensor \(float16\); round_to takes arrays: use "
                                        r"x.astype\(fmt, mode=..., bits=...\)"):
        mf.round_to(mf.tensor([1.0], dtype="float16"), "bfloat16")


class _NotNumPy:
    """NumPy under another name: the code paths the reference takes for CuPy arrays, run on the host."""

    def __getattr__(self, name):
        return getattr(np, name)


def test_the_gpu_reference_moves_float32_subnormals_by_their_bits():
    # CuPy compiles its kernels with -ftz=true, so the reference widens float32 and stores float32 / bfloat16 by
    # bits on a GPU; those paths must give NumPy's own conversions (on every float32 exponent and subnormal).
    from minifp._rounding import _float64, _stored
    x = np.arange(0, 2**32, 65537, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([x, -x, np.float32([2.0**-149, -(2.0**-149), 2.0**-126 * (1 - 2.0**-23)])])
    wide = _float64(_NotNumPy(), x)
    finite = np.isfinite(x)
    assert np.array_equal(wide[finite].view(np.uint64), x[finite].astype(np.float64).view(np.uint64))
    assert np.isnan(wide[~finite & np.isnan(x)]).all()
    for storage in (np.float32, ml_dtypes.bfloat16):
        y = x.astype(storage).astype(np.float64)
        keep = ~np.isnan(y)
        got = _stored(_NotNumPy(), y[keep], storage)
        assert got.dtype == np.dtype(storage)
        assert np.array_equal(got.view(f"u{got.itemsize}"), y[keep].astype(storage).view(f"u{got.itemsize}"))
