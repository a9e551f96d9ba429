"""The speed module's activation and normalisation kernels (minifp/_speed.py) against the plain path they stand in
for, bit for bit: GELU (exact and tanh forms, forward and backward) on ties, signed zeros, subnormals, infinities
and NaNs. The speed module's functions are called directly, so these run without the JIT too (small arrays)."""
import math

import numpy as np
import pytest

import minifp as mf
from minifp import _intrinsics, _ops, _speed
from minifp._seams import PLAIN

BIG = 1 << 20 if _intrinsics.JIT else 1 << 10       # the kernels as Python loops: small arrays


def _special(rng, n):
    """float32 values that exercise every branch: normal draws of every scale, ties, zeros of both signs,
    subnormals, the largest floats, infinities and NaNs (both signs, a payload)."""
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 3, n)).astype(np.float32)
    specials = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-38, -1e-38, 3.4e38, -3.4e38, np.inf, -np.inf, np.nan, -np.nan,
                         0.5, -0.5, 1.0, -1.0, 5.0, -5.0, 10.0, -10.0, 38.0, -38.0, 1e4, -1e4], np.float32)
    x[:specials.size] = specials
    x[specials.size] = np.uint32(0x7FC01234).view(np.float32)        # a NaN with a payload
    pick = rng.random(n) < 0.2
    x[pick] = rng.integers(-8, 9, int(pick.sum())) / np.float32(4)   # ties and small integers
    return x


def _same(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype == np.float32
    assert np.array_equal(a.view(np.int32), b.view(np.int32))


def test_exp64_is_within_an_ulp_of_numpys_exp():
    """exp64 (basic operations only) against NumPy's exp over exp's whole range and its ends."""
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.uniform(-750, 720, 100_000), rng.uniform(-3, 1, 100_000),
                        [0.0, -0.0, -745.1, -708.4, 709.78, 709.79, -1e300, 1e300]])
    with np.errstate(all="ignore"):
        got, want = _ops.exp64(np, a), np.exp(a)
    assert np.array_equal(got == 0, want == 0) and np.array_equal(np.isinf(got), np.isinf(want))
    fine = np.isfinite(want) & (want > 0)
    assert np.abs(got.view(np.int64)[fine] - want.view(np.int64)[fine]).max() <= 1
    with np.errstate(all="ignore"):
        ends = _ops.exp64(np, np.array([np.inf, -np.inf, np.nan]))
    assert ends[0] == np.inf and ends[1] == 0 and np.isnan(ends[2])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 129), (BIG // 1024, 1024)])
def test_gelu_kernels_are_the_plain_path(approximate, shape):
    rng = np.random.default_rng(shape[-1])
    x = _special(rng, max(math.prod(shape), 30))[-math.prod(shape):].reshape(shape)
    g = _special(rng, max(x.size, 30))[:x.size][::-1].copy().reshape(shape)
    with np.errstate(all="ignore"):
        _same(_speed.gelu(np, x, approximate), PLAIN.gelu(np, x, approximate))
        _same(_speed.gelu_grad(np, g, x, approximate), PLAIN.gelu_grad(np, g, x, approximate))


def test_gelu_kernels_hand_other_arrays_to_the_plain_path():
    """float64 (the gradient check's), strided and mixed-dtype arrays take the plain path's array math."""
    x = np.linspace(-4, 4, 24).reshape(4, 6)
    assert _speed.gelu(np, x, "none").dtype == np.float64
    assert np.array_equal(_speed.gelu(np, x, "none"), PLAIN.gelu(np, x, "none"))
    x32 = x.astype(np.float32)
    _same(_speed.gelu(np, x32.T, "tanh"), PLAIN.gelu(np, x32.T, "tanh"))
    assert np.array_equal(_speed.gelu_grad(np, x, x32, "none"), PLAIN.gelu_grad(np, x, x32, "none"))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_gelu_through_the_engine(dtype):
    """minifp.gelu and its gradient by the tensor API, with the speed module's seams installed or not, agree."""
    rng = np.random.default_rng(5)
    x, g = _special(rng, 3000).reshape(30, 100), rng.standard_normal((30, 100)).astype(np.float32)
    from minifp._seams import SEAMS

    def run():
        xt = mf.tensor(x, dtype=dtype, requires_grad=True)
        y = mf.apply("gelu", xt)
        (y * mf.tensor(g, dtype=dtype)).sum().backward()
        return y.float32(), xt.grad.float32()
    saved = SEAMS.gelu, SEAMS.gelu_grad
    fast = run()
    SEAMS.gelu, SEAMS.gelu_grad = PLAIN.gelu, PLAIN.gelu_grad
    try:
        plain = run()
    finally:
        SEAMS.gelu, SEAMS.gelu_grad = saved
    for a, b in zip(fast, plain):
        assert np.array_equal(a.view(np.int32), b.view(np.int32), equal_nan=False)
