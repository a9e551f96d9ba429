import ml_dtypes
import numpy as np
import pytest

import minifp as mf


NATIVE = [(mf.float16, np.float16), (mf.bfloat16, ml_dtypes.bfloat16), (mf.float8_e4m3, ml_dtypes.float8_e4m3fn),
          (mf.float8_e5m2, ml_dtypes.float8_e5m2), (mf.float8_e4m3fnuz, ml_dtypes.float8_e4m3fnuz),
          (mf.float8_e5m2fnuz, ml_dtypes.float8_e5m2fnuz), (mf.float6_e2m3, ml_dtypes.float6_e2m3fn),
          (mf.float6_e3m2, ml_dtypes.float6_e3m2fn), (mf.float4_e2m1, ml_dtypes.float4_e2m1fn),
          (mf.e8m0, ml_dtypes.float8_e8m0fnu)]


@pytest.mark.parametrize("fmt, native", NATIVE, ids=[f.name for f, _ in NATIVE])
def test_finfo_agrees_with_ml_dtypes(fmt, native):
    ours, theirs = mf.finfo(fmt), ml_dtypes.finfo(native)
    assert ours.max == float(theirs.max)
    assert ours.tiny == float(theirs.smallest_normal)
    assert ours.smallest_subnormal == float(theirs.smallest_subnormal)
    assert ours.eps == float(theirs.eps)
    assert ours.bits == theirs.bits


def test_named_limits():
    assert mf.finfo("float16").max == 65504 == float.fromhex("0x1.ffcp15")
    assert mf.finfo("float16").tiny == 2.0**-14
    assert mf.finfo("float16").smallest_subnormal == 2.0**-24
    assert mf.finfo("bfloat16").max == float.fromhex("0x1.fep127")
    assert mf.finfo("float8_e4m3").max == 448
    assert mf.finfo("float8_e5m2").max == 57344
    tf = mf.finfo("tf32")
    assert (tf.exp_bits, tf.man_bits, tf.eps, tf.max) == (8, 10, 2.0**-10, float.fromhex("0x1.ffcp127"))
    assert mf.finfo(mf.float32).max == float(np.finfo(np.float32).max)


def test_custom_format_and_equality():
    e3m4 = mf.Format(3, 4)
    assert mf.finfo(e3m4).max == 15.5 and mf.finfo(e3m4).tiny == 0.25
    assert mf.Format(5, 10) == mf.float16 and mf.Format(5, 10).storage == np.float16
    assert mf.finfo(mf.Format(5, 10, subnormals=False)).smallest_subnormal == 2.0**-14
    assert mf.Format(4, 3, infinities=False, overflow="saturate").storage == ml_dtypes.float8_e4m3fn


def test_names_and_aliases():
    assert mf._formats.as_format("float16") is mf.float16
    assert mf._formats.as_format("BF16") is mf.bfloat16
    assert mf._formats.as_format(np.float16) is mf.float16


def test_unknown_format_name_lists_valid_ones():
    with pytest.raises(ValueError, match="unknown format 'float17'; valid formats: float32, tf32, float16"):
        mf.tensor([1.0], dtype="float17")


def test_float32_only_with_all_its_properties():
    assert mf.Format(8, 23).is_float32 and mf.float32.is_float32
    for other in (mf.Format(8, 23, overflow="saturate"), mf.Format(8, 23, subnormals=False), mf.tf32):
        assert not other.is_float32 and other != mf.float32


def test_formats_a_float32_container_cannot_hold_are_refused():
    with pytest.raises(ValueError, match=r"infinities=False\) is impossible: its max 6.75\d*e\+38 does not fit "
                                         r"its float32 container.*use infinities=True"):
        mf.Format(8, 7, infinities=False)
    assert mf.finfo(mf.Format(7, 7, infinities=False)).max < mf.finfo(mf.float32).max


VALID_FORMATS = "valid formats: float32, tf32, float16, bfloat16, float8_e4m3, float8_e5m2"
BAD = [  # (call, error, message naming the argument, what was given and the valid choices)
    (lambda: mf.Format(5, True), ValueError, r"man_bits=True is impossible: it must be an integer in \[0, 23\]"),
    (lambda: mf.Format(False, 3), ValueError, r"exp_bits=False is impossible: it must be an integer in \[1, 8\]"),
    (lambda: mf.Format(9, 3), ValueError, r"exp_bits=9 is impossible: it must be an integer in \[1, 8\]"),
    (lambda: mf.Format(5, 0), ValueError, r"man_bits=0 has no subnormals: pass subnormals=False"),
    (lambda: mf.Format(2, 3, infinities=False, nan=False, overflow="inf"), ValueError,
     r"overflow='inf' is impossible without infinities and NaN.*use overflow='saturate'"),
    (lambda: mf.Format(2, 3, nan=False), ValueError, r"infinities=True\) is impossible.*use infinities=False"),
    (lambda: mf.Format(4, 3, infinities=False, nan="maybe"), ValueError,
     r"nan='maybe': unknown NaN kind; valid values: True, False, 'negzero'"),
    (lambda: mf.Format(8, 0, subnormals=False, infinities=False, nan="negzero", signed=False), ValueError,
     r"nan='negzero' needs signed=True"),
    (lambda: mf.Format(4, 3, bias=7.5), TypeError, r"bias=7.5 is not an integer"),
    (lambda: mf.Format(4, 3, bias=200), ValueError, r"bias=200 is impossible.*below float32's smallest subnormal"),
    (lambda: mf.Format(4, 3, signed=1), TypeError, r"signed=1 is not a flag"),
    (lambda: mf.Fixed(2, 0), ValueError, r"Fixed bits=2 is impossible: it must be an integer in \[3, 25\]"),
    (lambda: mf.Fixed(16, 1.5), ValueError, r"Fixed frac_bits=1.5 is impossible"),
    (lambda: mf.Format(5, 24), ValueError, r"man_bits=24 is impossible"),
    (lambda: mf.Format(1, 3), ValueError, r"Format\(exp_bits=1, man_bits=3, infinities=True\) has no normal numbers: "
                                          r"its only exponent field above 0 would hold inf and NaN; use infinities=False"),
    (lambda: mf.Format(5.5, 3), ValueError, r"exp_bits=5.5 is impossible"),
    (lambda: mf.Format(5, 2, subnormals="no"), TypeError, r"subnormals='no' is not a flag; valid values: True, False"),
    (lambda: mf.Format(5, 2, infinities="yes"), TypeError, r"infinities='yes' is not a flag; valid values: True, False"),
    (lambda: mf.Format(5, 2, subnormals=None), TypeError, r"subnormals=None is not a flag; valid values: True, False"),
    (lambda: mf.Format(5, 10, overflow="wrap"), ValueError, r"overflow='wrap': .*valid modes: inf, saturate"),
    (lambda: mf.Format(5, 10, overflow=5), ValueError, r"overflow=5: .*valid modes: inf, saturate"),
    (lambda: mf.Format(8, 7, infinities=False), ValueError, r"infinities=False\) is impossible.*infinities=True"),
    (lambda: mf.finfo(3), TypeError, rf"fmt: 3 is not a format; {VALID_FORMATS}"),
    (lambda: mf.finfo(None), TypeError, rf"fmt: None is not a format; {VALID_FORMATS}"),
    (lambda: mf.finfo("float17"), ValueError, rf"fmt: unknown format 'float17'; {VALID_FORMATS}"),
    (lambda: mf.finfo(np.int32), TypeError, rf"fmt: <class 'numpy.int32'> is not a format; {VALID_FORMATS}"),
    (lambda: mf.finfo([5, 10]), TypeError, rf"fmt: \[5, 10\] is not a format; {VALID_FORMATS}"),
]


@pytest.mark.parametrize("call, error, message", BAD, ids=[m[:30] for _, _, m in BAD])
def test_bad_input_is_one_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_flags_and_widths_are_plain_values():
    f = mf.Format(np.int64(5), np.int32(10), subnormals=np.True_)
    assert f == mf.float16 and type(f.exp_bits) is int and f.subnormals is True


def test_promotion_follows_pytorch():
    assert mf.promote_types(mf.float16, mf.bfloat16) == mf.float32
    assert mf.promote_types(mf.float16, mf.float32) == mf.float32
    assert mf.promote_types(mf.float8_e4m3, mf.float16) == mf.float16
    assert mf.promote_types(mf.bfloat16, mf.bfloat16) == mf.bfloat16


# -- the formats of issue 16: fnuz, OCP MX elements (FP6, FP4), e8m0, fixed point -----------------------------

from minifp import _rounding as R  # noqa: E402
from minifp._intrinsics import JIT  # noqa: E402

NEW_NATIVE = NATIVE[4:]
E8M0_QUIRK = (0x400001, 0x600000)  # float32 subnormal bits where ml_dtypes rounds up to 2**-126 (see below)


def test_new_named_limits_and_names():
    assert [mf.finfo(f).max for f in (mf.float6_e2m3, mf.float6_e3m2, mf.float4_e2m1)] == [7.5, 28.0, 6.0]
    assert mf.finfo(mf.float8_e4m3fnuz).max == 240 and mf.finfo(mf.float8_e4m3fnuz).smallest_subnormal == 2.0**-10
    assert mf.finfo(mf.float8_e5m2fnuz).max == 57344 and mf.float8_e5m2fnuz.bias == 16
    e8 = mf.finfo(mf.e8m0)
    assert (e8.max, e8.min, e8.tiny, e8.eps, e8.bits) == (2.0**127, 2.0**-127, 2.0**-127, 1.0, 8)
    i8 = mf.finfo(mf.int8)
    assert (i8.max, i8.min, i8.smallest_subnormal, i8.eps, i8.bits) == (127.0, -127.0, 1.0, 1.0, 8)
    q = mf.finfo(mf.Fixed(16, 8))
    assert (q.max, q.smallest_subnormal, q.eps) == (32767 / 256, 2.0**-8, 2.0**-8)
    for alias, fmt in (("float6_e2m3fn", mf.float6_e2m3), ("float4_e2m1fn", mf.float4_e2m1),
                       ("float6_e3m2fn", mf.float6_e3m2), ("float8_e8m0fnu", mf.e8m0), ("INT8", mf.int8)):
        assert mf._formats.as_format(alias) is fmt
    for fmt, native in NEW_NATIVE:
        assert fmt.storage == native and fmt.native and mf._formats.as_format(native) is fmt
    assert mf.int8.storage == np.float32 and repr(mf.Fixed(16, 8)) == "minifp.Fixed(16, 8)"


def test_equality_is_by_properties_never_by_name():
    assert mf.Fixed(8, 0) == mf.int8 and hash(mf.Fixed(8, 0)) == hash(mf.int8)
    assert mf.Format(2, 3, infinities=False, nan=False) == mf.float6_e2m3
    assert mf.Format(2, 3, infinities=False, nan=False).storage == ml_dtypes.float6_e2m3fn
    assert mf.Format(4, 3, infinities=False, nan="negzero", bias=8, name="x") == mf.float8_e4m3fnuz
    assert mf.Format(4, 3, infinities=False, nan="negzero") != mf.float8_e4m3fnuz          # bias 7
    assert mf.Format(4, 3, infinities=False, nan="negzero").storage == np.float32
    assert mf.Format(2, 3, infinities=False, nan=False, overflow="saturate").overflow == "saturate"
    assert mf.float8_e4m3 != mf.float8_e4m3fnuz and mf.float6_e2m3 != mf.Format(2, 3)


def _codes(a):
    return np.asarray(a).view(np.uint8 if np.asarray(a).dtype.itemsize == 1 else np.uint16)


def _sample():
    """Every float32 whose low 16 bits are 0 (so every midpoint of a format of <= 6 mantissa bits), with its
    neighbours one float32 ulp either side and a few more low-bit patterns: 393,216 inputs, both signs,
    zeros, subnormals, infs, NaNs."""
    hi = np.arange(1 << 16, dtype=np.uint32) << 16
    lo = np.array([0, 1, 0xFFFF, 0x8000, 0x1234, 0x7FFF], np.uint32)
    return (hi[:, None] | lo[None, :]).ravel().view(np.float32)


def _e8m0_quirk(x):
    u = x.view(np.uint32)
    return (u >= E8M0_QUIRK[0]) & (u < E8M0_QUIRK[1])


@pytest.mark.parametrize("fmt, native", NEW_NATIVE, ids=[f.name for f, _ in NEW_NATIVE])
def test_new_formats_match_ml_dtypes_bit_for_bit(fmt, native):
    x = _sample() if JIT else _sample()[::7]        # (the kernels as Python: every 7th input, each pattern kept)
    with np.errstate(all="ignore"):
        want = _codes(x.astype(native))
        x64 = x.astype(np.float64)                  # signalling NaNs warn as they widen
    skip = _e8m0_quirk(x) if fmt == mf.e8m0 else np.zeros(x.shape, bool)
    for got in (R.round_kernel(x, fmt), R.round_reference(x, fmt), R.round_kernel(x64, fmt),
                R.round_reference(x64, fmt), mf.round_to(x, fmt), mf.round_to(x[:100], fmt)):
        n = got.size
        assert got.dtype == native
        np.testing.assert_array_equal(_codes(got)[~skip[:n]], want[:n][~skip[:n]])


def test_e8m0_rounds_float32_subnormals_to_nearest_where_ml_dtypes_rounds_up():
    # ml_dtypes 0.6.0 sends every float32 subnormal in (2**-127, 1.5 * 2**-127) to 2**-126; the nearest
    # e8m0 value is 2**-127 (1.5 * 2**-127 itself is the tie, which goes up: the significand 1 is odd).
    x = np.array([0x400001, 0x500000, 0x5FFFFF, 0x600000, 0x400000, 0x200000, 1], np.uint32).view(np.float32)
    expected = [2.0**-127] * 3 + [2.0**-126] + [2.0**-127] * 3
    for fn in (R.round_kernel, R.round_reference, mf.round_to):
        assert fn(x, mf.e8m0).astype(np.float64).tolist() == expected


def test_special_values_of_the_new_formats():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e30, -1e30, -1e-30], np.float32)
    for fn in (R.round_kernel, R.round_reference):
        assert _codes(fn(x, mf.float8_e4m3fnuz)).tolist() == [0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0]
        assert fn(x, mf.float4_e2m1).astype(np.float64).tolist()[:4] == [0.0, -0.0, 6.0, -6.0]
        # NaN -> the zero of the opposite sign (ml_dtypes; OCP leaves NaN -> FP6/FP4 to the implementation)
        assert _codes(fn(x, mf.float6_e2m3))[4:6].tolist() == [0x20, 0x00]
        assert _codes(fn(x, mf.e8m0)).tolist() == [0xFF] * 6 + [127 + 100, 0xFF, 0xFF]     # 1e30 -> 2**100
        assert fn(x, mf.int8).tolist()[2:] == [127.0, -127.0, -0.0, 0.0, 127.0, -127.0, -0.0]


def _toward_zero_by_table(x, fmt):
    """Independent toward-zero: the largest representable magnitude <= |x|, from every code's value."""
    values = np.unique(np.abs(fmt.decode(np.arange(1 << fmt.bits))))
    values = values[np.isfinite(values)]
    ax = np.abs(x.astype(np.float64))
    i = np.clip(np.searchsorted(values, ax, side="right") - 1, 0, None)
    return np.copysign(values[i], x)


MODE_FORMATS = [f for f, _ in NEW_NATIVE] + [mf.int8, mf.Fixed(6, 3), mf.Fixed(16, 8),
                                               mf.Format(3, 2, infinities=False, nan="negzero", bias=4)]


@pytest.mark.parametrize("fmt", MODE_FORMATS, ids=[f.name for f in MODE_FORMATS])
@pytest.mark.parametrize("mode", ["nearest", "toward_zero", "stochastic"])
@pytest.mark.parametrize("src", [np.float32, np.float64])
def test_kernel_matches_reference_in_every_mode(fmt, mode, src):
    rng = np.random.default_rng(5)
    n = 30_000
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(src)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 2.0**-130]
    got = R.round_kernel(x, fmt, mode, rng=np.random.default_rng(7))
    want = R.round_reference(x, fmt, mode, R._random_bits(np.random.default_rng(7), n))
    np.testing.assert_array_equal(_codes(got) if got.dtype.itemsize == 1 else got.view(np.uint32),
                                  _codes(want) if want.dtype.itemsize == 1 else want.view(np.uint32))
    if mode == "toward_zero" and fmt.signed:
        finite = np.isfinite(x)
        np.testing.assert_array_equal(got[finite].astype(np.float64), _toward_zero_by_table(x[finite], fmt))


@pytest.mark.parametrize("bits, frac", [(8, 0), (16, 8), (6, 3), (16, 14), (25, 2)])
def test_fixed_point_is_rounding_of_scaled_integers_with_saturation(bits, frac):
    rng = np.random.default_rng(3)
    top = 2.0 ** (bits - 1 - frac)
    x = np.concatenate([rng.uniform(-1.2 * top, 1.2 * top, 20_000), (np.arange(-300, 300) + 0.5) * 2.0**-frac])
    limit = 2 ** (bits - 1) - 1
    fmt = mf.Fixed(bits, frac)
    with np.errstate(over="ignore"):
        expected = np.clip(np.rint(x * 2.0**frac), -limit, limit) * 2.0**-frac
        truncated = np.clip(np.trunc(x * 2.0**frac), -limit, limit) * 2.0**-frac
    for src in (np.float64, np.float32):
        xs = x.astype(src)
        exp = expected if src is np.float64 else np.clip(np.rint(xs.astype(np.float64) * 2.0**frac), -limit,
                                                          limit) * 2.0**-frac
        assert mf.round_to(xs, fmt).dtype == np.float32
        np.testing.assert_array_equal(mf.round_to(xs, fmt).astype(np.float64), exp)
        np.testing.assert_array_equal(R.round_reference(xs, fmt).astype(np.float64), exp)
    np.testing.assert_array_equal(mf.round_to(x, fmt, "toward_zero").astype(np.float64), truncated)


def test_stochastic_fixed_point_is_unbiased():
    x = np.full(200_000, 0.3, np.float64)        # Gupta et al. 2015: 16-bit fixed point, stochastic rounding
    y = mf.round_to(x, mf.Fixed(16, 2), "stochastic", rng=np.random.default_rng(1)).astype(np.float64)
    assert set(np.unique(y)) == {0.25, 0.5} and abs(y.mean() - 0.3) < 2e-3


def test_tensors_hold_the_new_formats():
    t = mf.tensor([1.3, 100.0, -0.2], dtype="float6_e2m3")
    assert t.numpy().astype(np.float64).tolist() == [1.25, 7.5, -0.25]
    assert mf.tensor([3.7, -300.0], dtype=mf.int8).numpy().tolist() == [4.0, -127.0]
    assert mf.tensor([1e-9, -0.0], dtype="float8_e4m3fnuz").numpy().view(np.uint8).tolist() == [0, 0]
    assert mf.promote_types(mf.float8_e4m3fnuz, mf.float16) == mf.float16
    assert mf.promote_types(mf.float8_e4m3fnuz, mf.float8_e4m3) == mf.float32


EXHAUSTIVE = [f for f, _ in NEW_NATIVE]


@pytest.mark.exhaustive
@pytest.mark.parametrize("fmt, native", NEW_NATIVE, ids=[f.name for f, _ in NEW_NATIVE])
def test_new_formats_on_all_float32_inputs(fmt, native):
    """All 2**32 float32 inputs, round_to's kernels against ml_dtypes' casts (e8m0: but its quirk, above)."""
    chunk = 1 << 24
    base = np.arange(chunk, dtype=np.uint32)
    for start in range(0, 1 << 32, chunk):
        x = (base + np.uint32(start)).view(np.float32)
        with np.errstate(all="ignore"):
            want = _codes(x.astype(native))
        got = _codes(R.round_kernel(x, fmt))
        bad = got != want
        if fmt == mf.e8m0:
            bad &= ~_e8m0_quirk(x)
        assert not bad.any(), (fmt.name, hex(int(x.view(np.uint32)[bad][0])))


@pytest.mark.parametrize("fmt, native", NEW_NATIVE, ids=[f.name for f, _ in NEW_NATIVE])
def test_widening_every_code_matches_ml_dtypes(fmt, native):
    codes = np.tile(np.arange(1 << fmt.bits, dtype=np.uint8), 5000 >> fmt.bits << 1)    # past the kernel's SMALL
    a = codes.view(native)
    got, want = R.widen(a), a.astype(np.float32)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(fmt.decode(codes[:1 << fmt.bits]).astype(np.float32), want[:1 << fmt.bits])


@pytest.mark.parametrize("fmt", MODE_FORMATS, ids=[f.name for f in MODE_FORMATS])
def test_counts_of_the_new_formats(fmt):
    # (overflow, underflow, subnormal, NaN): an fnuz overflow (NaN, -0's code) and a NaN that becomes a zero
    # are no underflows; the counting kernel (large arrays) and count_rounding (small ones) agree.
    x = np.array([1e6, -1e6, 1e-9, 0.3, np.nan, 0.01, -np.inf, 1.0], np.float32)
    small, large = np.zeros(4, np.int64), np.zeros(4, np.int64)
    mf.round_to(x, fmt, counts=small)
    mf.round_to(np.tile(x, 1000), fmt, counts=large)
    assert (large == 1000 * small).all() and small[3] == 1
    assert small[1] == sum(v != 0 and float(mf.round_to(np.float32(v), fmt).astype(np.float64)) == 0
                           for v in (1e-9, 0.3, 0.01, 1.0))
