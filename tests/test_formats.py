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


@pytest.mark.parametrize("args, what", [((9, 3), "exp_bits=9"), ((1, 3), "exp_bits=1"), ((5, 0), "man_bits=0"),
                                        ((5, 24), "man_bits=24"), ((5.5, 3), "exp_bits=5.5")])
def test_impossible_widths(args, what):
    with pytest.raises(ValueError, match=f"{what} is impossible"):
        mf.Format(*args)


def test_unknown_overflow_mode():
    with pytest.raises(ValueError, match="unknown overflow mode 'wrap'; valid modes: inf, saturate"):
        mf.Format(5, 10, overflow="wrap")


def test_promotion_follows_pytorch():
    assert mf.promote_types(mf.float16, mf.bfloat16) == mf.float32
    assert mf.promote_types(mf.float16, mf.float32) == mf.float32
    assert mf.promote_types(mf.float8_e4m3, mf.float16) == mf.float16
    assert mf.promote_types(mf.bfloat16, mf.bfloat16) == mf.bfloat16
