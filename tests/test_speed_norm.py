"""The speed module's activation, normalisation and embedding kernels (minifp/_speed.py) against the plain path
they stand in for, bit for bit: GELU (exact and tanh forms), LayerNorm over the last axis (NumPy's pairwise sums)
and embedding's gradient (np.add.at's order), forward and backward, on ties, signed zeros, subnormals, infinities
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
    """exp64 (basic operations only) against NumPy's exp over exp's whole range and its ends: both are within an
    ulp of exp (fdlibm's bound; NumPy's libm or AVX-512 code), so at most 2 apart (1 with glibc's)."""
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.uniform(-750, 720, 100_000), rng.uniform(-3, 1, 100_000),
                        [0.0, -0.0, -745.1, -708.4, 709.78, 709.79, -1e300, 1e300]])
    with np.errstate(all="ignore"):
        got, want = _ops.exp64(np, a), np.exp(a)
    assert np.array_equal(got == 0, want == 0) and np.array_equal(np.isinf(got), np.isinf(want))
    fine = np.isfinite(want) & (want > 0)
    assert np.abs(got.view(np.int64)[fine] - want.view(np.int64)[fine]).max() <= 2
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


def _counted(monkeypatch, *names):
    """Calls of the speed module's kernels `names`, as a list that grows by their names."""
    calls = []
    for name in names:
        monkeypatch.setattr(_speed, name, lambda *a, f=getattr(_speed, name), n=name: calls.append(n) or f(*a))
    return calls


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_gelu_through_the_engine(dtype, monkeypatch):
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
    if _speed.ENABLED:
        calls = _counted(monkeypatch, "_gelu_kernel", "_gelu_grad_kernel")
    fast = run()
    assert not _speed.ENABLED or calls == ["_gelu_kernel", "_gelu_grad_kernel"]
    SEAMS.gelu, SEAMS.gelu_grad = PLAIN.gelu, PLAIN.gelu_grad
    try:
        plain = run()
    finally:
        SEAMS.gelu, SEAMS.gelu_grad = saved
    for a, b in zip(fast, plain):
        assert np.array_equal(a.view(np.int32), b.view(np.int32), equal_nan=False)


LENGTHS = [1, 7, 8, 9, 127, 128, 129, 1000, 1024]


def _rows_of(rng, rows, n):
    """Rows of every kind: spread scales, a row of ties, one of zeros of both signs, and (for n > 1) rows with an
    inf, a NaN, a subnormal, and a row of one value repeated (variance 0)."""
    x = (rng.standard_normal((rows, n)) * 10.0 ** rng.integers(-3, 4, (rows, n))).astype(np.float32)
    x[1] = rng.integers(-2, 3, n) / np.float32(2)
    x[2] = np.where(rng.random(n) < 0.5, -0.0, 0.0)
    x[3] = 3.0
    x[4, n // 2] = np.inf
    x[5, n // 3] = np.nan
    x[6, :] = rng.standard_normal(n).astype(np.float32) * np.float32(1e-40)    # subnormals
    x[7, n - 1] = -np.inf
    return x


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("n", LENGTHS)
def test_layer_norm_kernels_are_the_plain_path(n, affine):
    """Forward and both gradients, over odd and even lengths around NumPy's pairwise blocks (8 and 128)."""
    rng = np.random.default_rng(n)
    x = _rows_of(rng, 9, n).reshape(3, 3, n)
    g = rng.standard_normal(x.shape).astype(np.float32)
    g[0, 0, 0], g[1, 1, -1] = -0.0, np.nan
    w, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2)) if affine else (None, None)
    for eps in (1e-5, 0.0):
        with np.errstate(all="ignore"):
            _same(_speed.layer_norm(np, x, w, b, 1, eps), PLAIN.layer_norm(np, x, w, b, 1, eps))
            _same(_speed.layer_norm_grad(np, g, x, w, 1, eps), PLAIN.layer_norm_grad(np, g, x, w, 1, eps))
            _same(_speed.layer_norm_grad_w(np, g, x, 1, eps), PLAIN.layer_norm_grad_w(np, g, x, 1, eps))


@pytest.mark.parametrize("n", [8191, 8192, 8193, 100_003] if _intrinsics.JIT else [300])
def test_pairwise_sum_is_numpys_on_long_rows(n):
    """NumPy's float32 add.reduce over a long contiguous axis: one pairwise sum of the whole row, no chunks."""
    x = (np.random.default_rng(n).standard_normal(n) * 1000).astype(np.float32)
    assert np.float32(0) + _speed._pairwise(x, 0, n, *_speed._stacks()) == np.add.reduce(x)
    mean = np.float32(_speed._mean(x, n, _speed._stacks()))
    assert mean.view(np.int32) == np.mean(x[None], axis=-1)[0].view(np.int32)


def test_layer_norm_kernels_hand_other_cases_to_the_plain_path():
    """Two normalised axes, float64 and non-contiguous x take the plain path's array math."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    _same(_speed.layer_norm(np, x, None, None, 2, 1e-5), PLAIN.layer_norm(np, x, None, None, 2, 1e-5))
    xt = x.transpose(0, 2, 1)
    _same(_speed.layer_norm(np, xt, None, None, 1, 1e-5), PLAIN.layer_norm(np, xt, None, None, 1, 1e-5))
    x64 = x.astype(np.float64)
    assert _speed.layer_norm(np, x64, None, None, 1, 1e-5).dtype == np.float64


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_layer_norm_through_the_engine(dtype, monkeypatch):
    """minifp's layer_norm and its three gradients by the tensor API agree with the seams installed or not."""
    rng = np.random.default_rng(6)
    x, g = _rows_of(rng, 12, 129).reshape(3, 4, 129), rng.standard_normal((3, 4, 129)).astype(np.float32)
    w, b = rng.standard_normal(129).astype(np.float32), rng.standard_normal(129).astype(np.float32)
    from minifp._seams import SEAMS
    names = ("layer_norm", "layer_norm_grad", "layer_norm_grad_w")

    def run():
        xt, wt, bt = (mf.tensor(a, dtype=dtype, requires_grad=True) for a in (x, w, b))
        y = mf.apply("layer_norm", xt, wt, bt, normalized_ndim=1, eps=1e-5)
        (y * mf.tensor(g, dtype=dtype)).sum().backward()
        return [t.float32() for t in (y, xt.grad, wt.grad, bt.grad)]
    saved = [getattr(SEAMS, n) for n in names]
    kernels = ["_layer_norm_kernel", "_layer_norm_grad_kernel", "_layer_norm_grad_w_kernel"]
    calls = _counted(monkeypatch, *kernels) if _speed.ENABLED else None
    with np.errstate(all="ignore"):
        fast = run()
    assert not _speed.ENABLED or sorted(calls) == sorted(kernels)
    with np.errstate(all="ignore"):
        for n in names:
            setattr(SEAMS, n, getattr(PLAIN, n))
        try:
            plain = run()
        finally:
            for n, f in zip(names, saved):
                setattr(SEAMS, n, f)
    for a, p in zip(fast, plain):
        assert np.array_equal(a.view(np.int32), p.view(np.int32))


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32, np.uint8])
def test_embedding_grad_kernel_is_np_add_at(index_dtype, padding_idx):
    """Repeated indices add in order (the sums' bits), -0 and NaN rows of g included; the padding row is 0."""
    rng = np.random.default_rng(9)
    indices = rng.integers(0, 6, (4, 7)).astype(index_dtype)
    g = (rng.standard_normal((4, 7, 5)) * 10.0 ** rng.integers(-6, 7, (4, 7, 5))).astype(np.float32)
    g[0, 0], g[1, 1, 2], g[2, 2, 3] = -0.0, np.nan, np.inf
    with np.errstate(all="ignore"):
        got = _speed.embedding_grad(np, g, (6, 5), indices, padding_idx)
        _same(got, PLAIN.embedding_grad(np, g, (6, 5), indices, padding_idx))
    assert padding_idx is None or not got[padding_idx].any()


@pytest.mark.skipif(not _intrinsics.JIT, reason="without the JIT the kernel's sums are NumPy scalars', whose C code "
                                               "keeps the other NaN (the speed module is off then anyway)")
def test_embedding_grad_keeps_np_add_ats_nan():
    """Two NaNs of opposite signs into one element: np.add.at keeps the later one (it adds g's row first)."""
    g = np.zeros((4, 3), np.float32)
    g[:, 0], g[:, 1], g[:2, 2] = [np.nan, -np.nan, 1, 2], [-np.nan, np.nan, 0, 0], [np.inf, -np.inf]
    with np.errstate(all="ignore"):
        _same(_speed.embedding_grad(np, g, (3, 3), np.array([1, 1, 1, 1]), None),
              PLAIN.embedding_grad(np, g, (3, 3), np.array([1, 1, 1, 1]), None))


def test_embedding_grad_hands_bad_indices_to_the_plain_path():
    """Negative indices wrap and out-of-range ones raise IndexError, as np.add.at does."""
    g = np.ones((3, 2), np.float32)
    _same(_speed.embedding_grad(np, g, (4, 2), np.array([0, -1, -1]), None),
          PLAIN.embedding_grad(np, g, (4, 2), np.array([0, -1, -1]), None))
    with pytest.raises(IndexError):
        _speed.embedding_grad(np, g, (4, 2), np.array([0, 4, 1]), None)
