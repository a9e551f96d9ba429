"""The fused multiply-add in one pass (minifp/_speed.py's fma) against the plain path's float64 steps
(minifp/_ops.py's fma), bit for bit: random values over a wide range of exponents (products near float32's
overflow and in its subnormals), ties, signed zeros, infinities and NaNs with payloads; a number or an array as
either factor; whole and cut into parts on threads. An input that is not finite sends the whole call to the plain
path, so every case compares all bits."""
import numpy as np
import pytest

from minifp import _speed
from minifp._seams import PLAIN, SEAMS

NAN_BITS = (0x7FC00000, 0xFFC00000, 0x7F801234, 0xFFA00001)


def _values(rng, n, special):
    x = (rng.standard_normal(n) * 2.0 ** rng.integers(-75, 64, n)).astype(np.float32)
    if special:
        specials = np.array([0.0, -0.0, np.inf, -np.inf, *np.array(NAN_BITS, np.uint32).view(np.float32)], np.float32)
        pick = rng.random(n) < 0.05
        x[pick] = rng.choice(specials, pick.sum())
    return x


def _same_bits(got, want):
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("special", [False, True])
@pytest.mark.parametrize("factor", ["array", "number first", "number second"])
@pytest.mark.parametrize("parts,shape", [(1, (4099,)), (3, (4099,)), (1, (7, 3)), (3, "hwio")])
def test_one_pass_equals_the_plain_steps(special, factor, parts, shape, monkeypatch):
    """("hwio": (out 37, in 11, 3, 3) views of (3, 3, in, out) memory, a PyTorch conv weight's after an update.)"""
    monkeypatch.setattr(_speed, "THREADS", parts)
    monkeypatch.setattr(_speed, "SPLIT_MIN", 1 if parts > 1 else _speed.SPLIT_MIN)
    rng = np.random.default_rng(11)
    layout = (lambda v: v.reshape(3, 3, 11, 37).transpose(3, 2, 0, 1)) if shape == "hwio" else \
        (lambda v: v.reshape(shape))
    a, b, c = (layout(_values(rng, 3 * 3 * 11 * 37 if shape == "hwio" else int(np.prod(shape)), special))
               for _ in range(3))
    if factor == "number first":
        a = np.float32(-0.3)
    elif factor == "number second":
        b = np.float32(1.7)
    with np.errstate(all="ignore"):
        got = _speed.fma(np, a, b, c)
        _same_bits(got, PLAIN.fma(np, a, b, c))
    assert special or got.strides == c.strides         # (the one-pass kernel keeps the operands' memory order)


def test_ties_round_to_even_and_double_rounding_is_avoided():
    f32 = np.float32
    one = np.ones(16, f32)
    # exactly halfway between 1 and its successor: to even (1); a hair above it: up
    _same_bits(_speed.fma(np, f32(2.0**-24), one, one), one)
    _same_bits(_speed.fma(np, f32(3 * 2.0**-25), one, one), np.full(16, 1 + 2.0**-23, f32))
    # 1 + 2**-23 + 2**-24 - 2**-70: float64's own rounding would make it the midpoint, then even (up): one rounding
    # goes down
    c = np.full(16, 1 + 2.0**-23, f32)
    _same_bits(_speed.fma(np, f32(1 + 2.0**-23), np.full(16, 2.0**-24 - 2.0**-47, f32), c), c)
    # -0 + -0 is -0, x - x is +0
    _same_bits(_speed.fma(np, f32(-0.0), one, -0.0 * one), -0.0 * one)
    assert not np.signbit(_speed.fma(np, f32(-1.0), one, one)).any()


def test_a_non_finite_input_takes_the_plain_path():
    c = np.arange(8, dtype=np.float32)
    b = np.ones(8, np.float32)
    b[3] = np.nan
    with np.errstate(all="ignore"):
        got = _speed.fma(np, np.float32(2.0), b, c)
    assert np.isnan(got[3]) and np.array_equal(np.delete(got, 3), np.delete(2 * np.ones(8, np.float32) + c, 3))


def test_other_arrays_take_the_plain_path():
    c = np.arange(12, dtype=np.float32).reshape(3, 4)
    strided = np.ones((4, 3), np.float32).T                     # not C-contiguous
    _same_bits(_speed.fma(np, np.float32(0.5), strided, c), PLAIN.fma(np, np.float32(0.5), strided, c))
    row = np.arange(4, dtype=np.float32)                        # broadcast
    _same_bits(_speed.fma(np, row, c, c), PLAIN.fma(np, row, c, c))


@pytest.mark.skipif(not _speed.ENABLED, reason="the speed module is off without the JIT")
def test_the_engine_fuses_through_the_seam():
    assert SEAMS.fma is _speed.fma
