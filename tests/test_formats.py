import ml_dtypes
import numpy as np
import pytest

import minifp as mf


@pytest.mark.parametrize("fmt, native", [(mf.float16, np.float16), (mf.bfloat16, ml_dtypes.bfloat16),
                                         (mf.float8_e4m3, ml_dtypes.float8_e4m3fn),
                                         (mf.float8_e5m2, ml_dtypes.float8_e5m2)])
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
    (lambda: mf.Format(5, True), ValueError, r"man_bits=True is impossible: it must be an integer in \[1, 23\]"),
    (lambda: mf.Format(False, 3), ValueError, r"exp_bits=False is impossible: it must be an integer in \[2, 8\]"),
    (lambda: mf.Format(9, 3), ValueError, r"exp_bits=9 is impossible: it must be an integer in \[2, 8\]"),
    (lambda: mf.Format(5, 0), ValueError, r"man_bits=0 is impossible: it must be an integer in \[1, 23\]"),
    (lambda: mf.Format(5, 24), ValueError, r"man_bits=24 is impossible"),
    (lambda: mf.Format(5.5, 3), ValueError, r"exp_bits=5.5 is impossible"),
    (lambda: mf.Format(5, 2, subnormals="no"), TypeError, r"subnormals='no' is not a flag; valid values: True, False"),
    (lambda: mf.Format(5, 2, infinities="yes"), TypeError, r"infinities='yes' is not a flag; valid values: True, False"),
    (lambda: mf.Format(5, 2, subnormals=None), TypeError, r"subnormals=None is not a flag; valid values: True, False"),
    (lambda: mf.Format(5, 10, overflow="wrap"), ValueError, r"overflow='wrap': .*valid modes: inf, saturate"),
    (lambda: mf.Format(5, 10, overflow=None), ValueError, r"overflow=None: .*valid modes: inf, saturate"),
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
