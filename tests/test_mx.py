"""minifp.mx against the OCP Microscaling Formats (MX) v1.0 specification's rule and ml_dtypes' element types.

The rule (OCP MX v1.0, section 6.3, "Conversion to MX"): X = 2**(floor(log2(max |V_i|)) - emax_elem) as e8m0,
P_i = V_i / X rounded to nearest-even into the element type, normal overflows clamped to its max; emax_elem
from the specification's element tables (section 5.3): e4m3 8, e5m2 15, e2m3 2, e3m2 4, e2m1 2, INT8 0 (int8
codes with an implicit 2**-6). The same values in microsoft/microxcaling's mx/formats.py (emax, max_norm).
"""
import math

import ml_dtypes
import numpy as np
import pytest

import minifp as mf
from minifp import mx

ELEMENTS = [("float8_e4m3", ml_dtypes.float8_e4m3fn, 8, 448.0), ("float8_e5m2", ml_dtypes.float8_e5m2, 15, 57344.0),
            ("float6_e2m3", ml_dtypes.float6_e2m3fn, 2, 7.5), ("float6_e3m2", ml_dtypes.float6_e3m2fn, 4, 28.0),
            ("float4_e2m1", ml_dtypes.float4_e2m1fn, 2, 6.0), ("int8", np.int8, 0, 127 / 64)]
IDS = [e[0] for e in ELEMENTS]


def _codes(a):
    return np.asarray(a).view(np.uint8)


@pytest.mark.parametrize("name, dtype, emax, top", ELEMENTS, ids=IDS)
def test_emax_of_the_element_types(name, dtype, emax, top):
    assert mx.scale_exponent(name) == emax
    assert mf.finfo(mx._element(name)).max == top


def _spec(block, name, dtype, emax, top):
    """The specification's rule for one block of float64 values, written out with Python's math:
    (scale code, element codes or None for a NaN scale)."""
    if not all(math.isfinite(v) for v in block):
        return 0xFF, None
    amax = max(abs(v) for v in block)
    e = (math.floor(math.log2(amax)) if amax else -126) - emax     # all zeros: microxcaling's convention
    if e > 127:
        return 0xFF, None
    e = max(e, -127)
    scaled = np.clip(np.array(block) / 2.0**e, -top, top)           # clamp, then round: the same as saturating
    if dtype is np.int8:
        return e + 127, np.rint(scaled * 64).astype(np.int8).view(np.uint8)
    return e + 127, _codes(scaled.astype(dtype))


def _random_blocks(rng, nblocks, specials=True):
    """Blocks of normal values over a wide range, with zeros, float32 subnormals, exact powers of two, values
    just below one, and (specials) infs and NaNs."""
    x = (rng.standard_normal((nblocks, 32)) * np.exp2(rng.integers(-140, 120, (nblocks, 1))))
    x = x.astype(np.float32)
    x[rng.random(x.shape) < 0.1] = 0.0
    x[0] = 0.0                                                       # an all-zero block
    x[1, :4] = [2.0**-140, -2.0**-135, 1e-45, 0.0]                  # a block of float32 subnormals
    x[1, 4:] = 0.0
    x[2, 0] = np.float32(1 - 2.0**-24) * 2.0**20                     # amax just below a power of two
    if specials:
        x[3, 5], x[4, 7], x[5, 0], x[5, 1] = np.inf, np.nan, -np.inf, np.nan
    return x


@pytest.mark.parametrize("name, dtype, emax, top", ELEMENTS, ids=IDS)
def test_random_blocks_follow_the_rule_bit_for_bit(name, dtype, emax, top):
    rng = np.random.default_rng(11)
    x = _random_blocks(rng, 400)
    elements, scales = mx.quantize(x, name)
    assert elements.dtype == dtype and scales.dtype == ml_dtypes.float8_e8m0fnu and scales.shape == (400, 1)
    e64, s64 = mx.quantize(x.astype(np.float64), name)              # the float64 path: the same bits
    np.testing.assert_array_equal(_codes(s64), _codes(scales))
    finite = ~np.isnan(scales.astype(np.float64))[:, 0]
    np.testing.assert_array_equal(_codes(e64)[finite], _codes(elements)[finite])
    for i in range(len(x)):
        code, want = _spec([float(v) for v in x[i]], name, dtype, emax, top)
        assert _codes(scales[i])[0] == code, i
        if want is not None:
            np.testing.assert_array_equal(_codes(elements[i]), want, err_msg=f"block {i}")


def test_worked_examples():
    # MXFP8 e4m3: amax 3 -> floor(log2 3) = 1, X = 2**(1 - 8); 1, 0.5, -3 become 128, 64, -384.
    e, s = mx.quantize(np.array([1.0, 0.5, -3.0] + [0.0] * 29, np.float32), "float8_e4m3")
    assert (float(s[0]), e[:3].astype(float).tolist()) == (2.0**-7, [128.0, 64.0, -384.0])
    # Clamping (section 6.3): amax 511 -> X = 2**0; 511 lies past e4m3's 448 and is clamped to it.
    e, s = mx.quantize(np.array([511.0] + [0.0] * 31), "float8_e4m3")
    assert (float(s[0]), float(e[0])) == (1.0, 448.0)
    # MXFP4: amax 6 -> X = 1; round to nearest-even: 5 -> 4, 0.25 -> 0, 0.75 -> 1, 2.5 -> 2, 1.25 -> 1.
    e, s = mx.quantize(np.array([6.0, 5.0, 0.25, 0.75, 2.5, 1.25] + [0.0] * 26), "float4_e2m1")
    assert (float(s[0]), e[:6].astype(float).tolist()) == (1.0, [6.0, 4.0, 0.0, 1.0, 2.0, 1.0])
    # MXINT8: amax 511 -> X = 2**8; 511 / 256 = 127.75 / 64, clamped to 127 / 64 (max 1 63/64).
    e, s = mx.quantize(np.array([511.0, -1.0] + [0.0] * 30), "int8")
    assert (float(s[0]), e[:2].tolist()) == (256.0, [127, -0])
    assert mx.dequantize(e, s)[:2].tolist() == [508.0, 0.0]
    # A NaN or an inf makes the block's scale NaN (0xFF): every value of the block is NaN.
    e, s = mx.quantize(np.array([1.0, np.inf] + [0.0] * 30 + [1.0, np.nan] + [0.0] * 30), "float6_e3m2")
    assert _codes(s).tolist() == [0xFF, 0xFF] and np.isnan(mx.dequantize(e, s)).all()
    # All zeros: microxcaling's scale 2**max(-127, -126 - emax); the elements are zeros.
    e, s = mx.quantize(np.zeros(64), "float8_e5m2")
    assert _codes(s).tolist() == [0, 0] and not e.astype(float).any()
    assert _codes(mx.quantize(np.zeros(32), "int8")[1]).tolist() == [1]
    # Below e8m0's range the scale clamps to 2**-127: 2**-130 becomes the element 2**-3.
    e, s = mx.quantize(np.array([2.0**-130] + [0.0] * 31, np.float32), "float8_e4m3")
    assert (float(s[0]), float(e[0])) == (2.0**-127, 0.125)
    # Past e8m0's range (float64 input): NaN scale.
    assert _codes(mx.quantize(np.array([1e300] + [0.0] * 31), "float8_e4m3")[1]).tolist() == [0xFF]


@pytest.mark.parametrize("name, dtype, emax, top", ELEMENTS, ids=IDS)
def test_dequantize_round_trips(name, dtype, emax, top):
    rng = np.random.default_rng(4)
    x = _random_blocks(rng, 200, specials=False)
    e, s = mx.quantize(x, name)
    y = mx.dequantize(e, s)
    assert y.dtype == np.float32 and y.shape == x.shape
    e2, s2 = mx.quantize(y, name)                 # what MX holds, it holds exactly (the scale of a block that
    np.testing.assert_array_equal(mx.dequantize(e2, s2), y)        # came back all zeros may differ)
    nonzero = y.any(axis=-1)
    np.testing.assert_array_equal(_codes(s2)[nonzero], _codes(s)[nonzero])
    # error at most half a quantum of the element's top binade, relative to the block's scale
    man = {np.int8: 6}.get(dtype, mf.finfo(mx._element(name)).man_bits)
    bound = np.repeat(s.astype(np.float64), 32, axis=-1) * 2.0 ** (emax - man - 1)
    big = np.abs(x) <= np.repeat(s.astype(np.float64), 32, axis=-1) * top
    assert (np.abs(y.astype(np.float64) - x)[big] <= bound[big]).all()


def test_blocks_along_any_axis_with_padding():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 70, 2)).astype(np.float32)
    e, s = mx.quantize(x, "float6_e2m3", block=32, axis=1)
    assert e.shape == x.shape and s.shape == (3, 3, 2)
    e0, s0 = mx.quantize(np.moveaxis(x, 1, -1), "float6_e2m3")
    np.testing.assert_array_equal(_codes(np.moveaxis(e, 1, -1)), _codes(e0))
    np.testing.assert_array_equal(_codes(np.moveaxis(s, 1, -1)), _codes(s0))
    # the last, short block (6 values) is padded with zeros: its scale is its own values' rule
    last = x[0, 64:, 0].astype(np.float64)
    assert float(s[0, 2, 0]) == 2.0 ** (math.floor(math.log2(np.abs(last).max())) - 2)
    np.testing.assert_array_equal(mx.dequantize(e, s, axis=1), np.moveaxis(mx.dequantize(e0, s0), -1, 1))
    e8, s8 = mx.quantize(x, "float8_e4m3", block=8, axis=-2)
    assert s8.shape == (3, 9, 2) and mx.dequantize(e8, s8, axis=-2, block=8).shape == x.shape


BAD = [
    (lambda: mx.quantize(np.ones(32), "float17"), ValueError, r"elem: unknown format 'float17'; valid formats: "),
    (lambda: mx.quantize(np.ones(32), mf.e8m0), ValueError, r"elem: e8m0 has no sign.*valid: float8_e4m3"),
    (lambda: mx.quantize(np.ones(32), "float4_e2m1", block=0), ValueError, r"block: got 0; valid: a positive"),
    (lambda: mx.quantize(np.ones(32), "float4_e2m1", block=2.5), ValueError, r"block: got 2.5"),
    (lambda: mx.quantize(np.ones((2, 32)), "float4_e2m1", axis=2), ValueError,
     r"axis: got 2; valid: an integer in \[-2, 1\] for 2 dimensions"),
    (lambda: mx.quantize(np.ones(32, complex), "float4_e2m1"), TypeError, r"x: an array of dtype complex128"),
    (lambda: mx.quantize(np.float32(1), "float4_e2m1"), ValueError, r"x: a 0-d array has no axis"),
    (lambda: mx.dequantize(np.ones(32, np.float32), np.ones(1, np.float32)), TypeError,
     r"scales: got an array of dtype float32; valid: ml_dtypes.float8_e8m0fnu"),
    (lambda: mx.dequantize(*mx.quantize(np.ones(64), "float4_e2m1"), block=16), ValueError,
     r"scales: got shape \(2,\); elements of shape \(64,\) in blocks of 16 along axis 0 need shape \(4,\)"),
    (lambda: mx.dequantize(np.ones(32, np.int32), mx.quantize(np.ones(32), "int8")[1]), TypeError,
     r"elements: got an array of dtype int32; valid: the storage dtypes of MX elements"),
]


@pytest.mark.parametrize("call, error, message", BAD, ids=[m[:30] for _, _, m in BAD])
def test_bad_input_names_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_a_minifp_tensor_is_quantised_as_its_values():
    x = np.random.default_rng(3).standard_normal((2, 64)).astype(np.float32)
    for t in (mf.tensor(x), mf.tensor(x, dtype="bfloat16")):
        want = mx.quantize(t.numpy(), "float8_e4m3")
        got = mx.quantize(t, "float8_e4m3")
        assert all(np.array_equal(g.view(np.uint8), w.view(np.uint8)) for g, w in zip(got, want))
