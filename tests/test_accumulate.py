"""minifp.accumulate: sums rounded after every addition, against references written here.

The references share nothing with minifp/_accumulate.py: the float64 ones add in float64 and round with
NumPy's float16 cast or minifp.round_to; the exact one adds Fractions. Sizes stay small, so that the suite
also runs these with NUMBA_DISABLE_JIT=1.
"""
import sys
import threading
import types
from fractions import Fraction

import numpy as np
import pytest

import minifp as mf
from minifp import _accumulate, _speed

CUSTOM = mf.Format(4, 5)


def rounder(fmt):
    """float64 array -> the float64 values of fmt nearest to it (ties to even)."""
    if fmt == mf.float16:
        return lambda v: np.asarray(v, np.float64).astype(np.float16).astype(np.float64)
    return lambda v: mf.round_to(np.asarray(v, np.float64), fmt).astype(np.float64)


def chain(a, b, fmt):
    """a @ b by a float64 reference that rounds after every addition, k in order."""
    rnd = rounder(fmt)
    s = np.zeros((a.shape[0], b.shape[1]))
    for k in range(a.shape[1]):
        s = rnd(s + np.outer(a[:, k].astype(np.float64), b[k].astype(np.float64)))
    return s


def tree(values, rnd):
    """Pairwise sum of a list, level by level (neighbours first, an odd last element carried up), each
    addition rounded by rnd; a lone value rounded too."""
    while len(values) > 1:
        pairs = [rnd(values[i] + values[i + 1]) for i in range(0, len(values) - 1, 2)]
        values = pairs + values[len(values) - 1:] if len(values) % 2 else pairs
    return rnd(values[0]) if values else 0.0


def exact_round(q, fmt):
    """The Fraction q rounded to nearest-even into fmt, as a float (the exact reference)."""
    if q == 0:
        return 0.0
    e = abs(q).numerator.bit_length() - abs(q).denominator.bit_length()
    e = e if abs(q) >= Fraction(2) ** e else e - 1                  # 2**e <= |q| < 2**(e + 1)
    low = fmt.man_bits if fmt.subnormals else 0
    quantum = Fraction(2) ** (fmt.emin - low if e < fmt.emin else e - fmt.man_bits)
    y = round(q / quantum) * quantum                                 # round() on a Fraction: ties to even
    big = mf.finfo(fmt).max
    return float(y) if abs(y) <= big else float(np.copysign(np.inf, float(q)))


def values(rng, shape, fmt, spread=0):
    """Random normal values of fmt, scaled by 2**(-spread..spread) to reach far exponents."""
    v = rng.standard_normal(shape) * 2.0 ** rng.integers(-spread, spread + 1, shape)
    return mf.round_to(v, fmt).astype(np.float64) if fmt is not None else v.astype(np.float32).astype(np.float64)


@pytest.mark.parametrize("fmt", [mf.float16, mf.bfloat16, CUSTOM], ids=str)
def test_the_chain_equals_a_float64_reference_rounding_after_every_addition(fmt):
    rng = np.random.default_rng(0)
    a, b = values(rng, (5, 300), fmt), values(rng, (300, 7), fmt)
    with mf.accumulate(fmt):
        out = mf.matmul(mf.tensor(a, dtype=fmt), mf.tensor(b, dtype=fmt)).float32()
    want = chain(a, b, fmt)
    assert np.array_equal(out, mf.round_to(want, fmt).astype(np.float32))
    assert np.abs(want - a @ b).max() > 0           # the chain does lose what a float32 sum keeps


@pytest.mark.parametrize("fmt_in, fmt, spread", [(mf.bfloat16, mf.bfloat16, 30), (mf.bfloat16, mf.bfloat16, 62),
                                                 (mf.bfloat16, mf.tf32, 20), (None, mf.float16, 5),
                                                 (None, mf.float32, 30), (mf.float16, mf.float16, 5),
                                                 (mf.float16, mf.float32, 12)], ids=str)
def test_each_step_is_the_correctly_rounded_exact_sum(fmt_in, fmt, spread):
    """Far-apart exponents, where float64's (or float32's) own sum is inexact: the kernel still rounds s + a*b
    once. (bfloat16 products beyond float32's range, spread 62, take the float64 kernel.)"""
    rng = np.random.default_rng(1)
    a, b = values(rng, (3, 40), fmt_in, spread), values(rng, (40, 4), fmt_in, spread)
    out = _accumulate.matmul2d(a.astype(np.float32), b.astype(np.float32), fmt, "sequential", fmt_in)
    assert np.array_equal(out, exact_chain(a, b, fmt))


def exact_chain(a, b, fmt):
    """a @ b, each step the exact s + a*b (Fractions) rounded to nearest-even into fmt."""
    out = np.zeros((a.shape[0], b.shape[1]))
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            s = 0.0
            for k in range(a.shape[1]):
                s = exact_round(Fraction(s) + Fraction(float(a[i, k])) * Fraction(float(b[k, j])), fmt)
            out[i, j] = s
    return out


def test_products_beyond_float32s_range_take_the_float64_kernel():
    rng = np.random.default_rng(8)
    a, b = values(rng, (2, 30), mf.bfloat16).astype(np.float32), values(rng, (30, 3), mf.bfloat16).astype(np.float32)
    assert _speed._lanes32(a, b, mf.bfloat16, mf.bfloat16) is not None     # float32 lanes (the speed module)
    a[0, 0] = b[0, 0] = 2.0**-75                                     # a product of 2**-150
    assert _speed._lanes32(a, b, mf.bfloat16, mf.bfloat16) is None
    out = _accumulate.matmul2d(a, b, mf.bfloat16, "sequential", mf.bfloat16)
    assert np.array_equal(out, exact_chain(a, b, mf.bfloat16))
    chain = np.empty_like(out)
    assert np.array_equal(_speed.chain_matmul(a, b, chain, mf.bfloat16, mf.bfloat16), out)


def test_a_tie_that_float64_would_make_is_rounded_as_the_exact_sum():
    # bfloat16: 2**-100 + 261/256. Exactly, just above the midpoint 261/256 of 260/256 and 262/256, so 262/256;
    # float64 drops 2**-100 and the tie goes to the even 260/256.
    a, b = np.array([[2.0**-50, 9 / 8]], np.float32), np.array([[2.0**-50], [29 / 32]], np.float32)
    assert _accumulate.matmul2d(a, b, mf.bfloat16, "sequential", mf.bfloat16)[0, 0] == 262 / 256
    assert chain(a, b, mf.bfloat16)[0, 0] == 260 / 256


def test_a_tie_that_float32_would_make_is_rounded_as_the_exact_sum():
    # float16: 2**-24 + 2049/2048 (683/1024 * 3/2). Exactly, above the midpoint 1 + 2**-11, so 1 + 2**-10;
    # a float32 sum rounds 2**-24 away (a tie, to even), and the float16 tie then goes to 1.
    a, b = np.array([[2.0**-12, 683 / 1024]], np.float32), np.array([[2.0**-12], [3 / 2]], np.float32)
    want = 1 + 2.0**-10
    assert _accumulate.matmul2d(a, b, mf.float16, "sequential", mf.float16)[0, 0] == want
    assert chain(a, b, mf.float16)[0, 0] == want                   # float64 holds this sum exactly
    s = np.float32(np.float32(2.0**-24) + np.float32(683 / 1024) * np.float32(3 / 2))
    assert float(np.float16(s)) == 1.0


def test_products_are_exact_in_the_chain():
    # 1 + (1 + 2**-11)(1 - 2**-11)... in float16: an FMA chain rounds once, s + a*b, never the product alone.
    a, b = np.array([[1.0, 1 + 2.0**-10]], np.float32), np.array([[1.0], [1 + 2.0**-10]], np.float32)
    with mf.accumulate("float16"):
        out = mf.matmul(mf.tensor(a, dtype="float16"), mf.tensor(b, dtype="float16")).item()
    assert out == float(np.float16(1 + (1 + 2.0**-10) ** 2))      # 2 + 2**-9 + 2**-20 -> 2 + 2**-9


@pytest.mark.parametrize("k", [0, 1, 2, 3, 5, 6, 7, 8, 11, 13, 64, 100])
@pytest.mark.parametrize("fmt", [mf.float16, mf.bfloat16], ids=str)
def test_pairwise_is_the_tree_of_rounded_additions(k, fmt):
    rng = np.random.default_rng(k)
    a, b = values(rng, (2, k), fmt), values(rng, (k, 3), fmt)
    out = _accumulate.matmul2d(a.astype(np.float32), b.astype(np.float32), fmt, "pairwise", fmt)
    rnd = rounder(fmt)
    for i in range(2):
        for j in range(3):
            assert out[i, j] == tree([a[i, kk] * b[kk, j] for kk in range(k)], rnd)


def test_ones_stall_a_float16_chain_at_2048_and_not_a_pairwise_sum():
    ones = mf.tensor(np.ones(4096), dtype="float16")
    assert mf.sum(ones).item() == 4096                          # float32 accumulation (the default)
    with mf.accumulate("float16"):
        assert mf.sum(ones).item() == 2048                      # 2048 + 1 is a tie: it stays 2048
    with mf.accumulate("float16", order="pairwise"):
        assert mf.sum(ones).item() == 4096
    with mf.accumulate("bfloat16"):
        assert mf.sum(ones.astype("float32")).item() == 256


def test_sum_and_mean_over_axes():
    rng = np.random.default_rng(2)
    x = values(rng, (3, 50, 4), mf.float16)
    t = mf.tensor(x, dtype="float16")
    rnd = rounder(mf.float16)
    with mf.accumulate("float16"):
        s = mf.sum(t, axis=1)
        m = mf.mean(t, axis=(0, 1), keepdims=True)
        total = mf.sum(t)
    want = np.zeros((3, 4))
    for k in range(50):
        want = rnd(want + x[:, k])
    assert np.array_equal(s.float32(), want.astype(np.float32))
    flat = np.zeros(4)
    for v in x.reshape(150, 4):                               # the reduced axes in C order
        flat = rnd(flat + v)
    assert np.array_equal(m.float32().reshape(4), rnd(np.float32(flat) / np.float32(150)).astype(np.float32))
    seq = 0.0
    for v in x.reshape(-1):
        seq = rnd(seq + v)
    assert total.item() == seq


def test_empty_and_0d_sums():
    with mf.accumulate("float16"):
        assert mf.sum(mf.tensor(np.zeros((0, 3)), dtype="float16"), axis=0).float32().tolist() == [0, 0, 0]
        assert mf.sum(mf.tensor(np.zeros((0, 3)), dtype="float16"), axis=1).shape == (0,)
        assert mf.sum(mf.tensor(2.5, dtype="float16")).item() == 2.5
        assert mf.mean(mf.tensor([[1.0, 2.0]], dtype="float16"), axis=1, keepdims=True).shape == (1, 1)


def test_linear_and_conv2d_accumulate_in_the_format():
    rng = np.random.default_rng(3)
    x, w, bias = values(rng, (4, 30), mf.float16), values(rng, (6, 30), mf.float16), values(rng, 6, mf.float16)
    f16 = lambda v: mf.tensor(v, dtype="float16")      # noqa: E731
    with mf.accumulate("float16"):
        y = mf.linear(f16(x), f16(w), f16(bias)).float32()
    assert np.array_equal(y, (chain(x, w.T, mf.float16) + bias).astype(np.float16).astype(np.float32))
    # conv2d: the sum runs over (row, column, channel) of the kernel, in that order (cuDNN's NHWC im2col columns).
    img, ker = values(rng, (2, 3, 5, 5), mf.float16), values(rng, (4, 3, 2, 3), mf.float16)
    with mf.accumulate("float16"):
        out = mf.apply("conv2d", f16(img), f16(ker), stride=1, padding=1).float32()
    padded = np.pad(img, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ho, wo = padded.shape[2] - 1, padded.shape[3] - 2
    want = np.zeros((2, 4, ho, wo))
    rnd = rounder(mf.float16)
    for i in range(2):
        for j in range(3):
            for c in range(3):
                want = rnd(want + padded[:, None, c, i:i + ho, j:j + wo] * ker[None, :, c, i, j, None, None])
    assert np.array_equal(out, want.astype(np.float32))


def test_the_backward_products_accumulate_as_their_forward_did():
    rng = np.random.default_rng(4)
    x, w = values(rng, (3, 40), mf.float16), values(rng, (40, 5), mf.float16)
    xt, wt = mf.tensor(x, dtype="float16", requires_grad=True), mf.tensor(w, dtype="float16", requires_grad=True)
    g = values(rng, (3, 5), mf.float16)
    with mf.accumulate("float16"):
        y = mf.matmul(xt, wt)
    y.backward(mf.tensor(g, dtype="float16"))                  # outside the block: the node remembers
    assert np.array_equal(xt.grad.float32(), chain(g, w.T, mf.float16).astype(np.float32))
    assert np.array_equal(wt.grad.float32(), chain(x.T, g, mf.float16).astype(np.float32))


def test_batched_and_vector_matmuls():
    rng = np.random.default_rng(5)
    a, b, v = values(rng, (2, 3, 20), mf.bfloat16), values(rng, (20, 4), mf.bfloat16), values(rng, 20, mf.bfloat16)
    bf = lambda t: mf.tensor(t, dtype="bfloat16")      # noqa: E731
    with mf.accumulate("bfloat16"):
        out, dot = mf.matmul(bf(a), bf(b)).float32(), mf.matmul(bf(v), bf(v)).item()
    assert np.array_equal(out, np.stack([chain(a[i], b, mf.bfloat16) for i in range(2)]).astype(np.float32))
    assert dot == chain(v[None], v[:, None], mf.bfloat16)[0, 0]


def test_float32_chain_and_default_blas():
    rng = np.random.default_rng(6)
    a, b = values(rng, (4, 64), None), values(rng, (64, 3), None)
    ta, tb = mf.tensor(a.astype(np.float32)), mf.tensor(b.astype(np.float32))
    with mf.accumulate("float32"):
        out = mf.matmul(ta, tb).float32()
    assert np.array_equal(out, chain(a, b, mf.float32).astype(np.float32))
    with mf.accumulate("float16"), mf.accumulate():             # fmt=None: float32 through BLAS again
        assert np.array_equal(mf.matmul(ta, tb).float32(), a.astype(np.float32) @ b.astype(np.float32))


def test_the_context_nests_restores_and_belongs_to_its_thread():
    from minifp._state import STATE
    assert STATE.accumulator is None
    with mf.accumulate("float16"):
        outer = STATE.accumulator
        with mf.accumulate("bfloat16", order="pairwise"):
            assert STATE.accumulator.fmt == mf.bfloat16 and STATE.accumulator.order == "pairwise"
        assert STATE.accumulator is outer
        seen = []
        thread = threading.Thread(target=lambda: seen.append(STATE.accumulator))
        thread.start()
        thread.join()
        assert seen == [None]
    with pytest.raises(RuntimeError), mf.accumulate("float16"):
        raise RuntimeError
    assert STATE.accumulator is None


def test_two_threads_accumulate_their_own_way():
    ones = mf.tensor(np.ones(3000), dtype="float16")
    results, barrier = {}, threading.Barrier(2)

    def run(name, fmt):
        with mf.accumulate(fmt):
            barrier.wait(10)
            results[name] = [mf.sum(ones).item() for _ in range(3)]
    threads = [threading.Thread(target=run, args=("f16", "float16")), threading.Thread(target=run, args=("f32", None))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == {"f16": [2048] * 3, "f32": [3000] * 3}


@pytest.mark.parametrize("kwargs, match", [
    ({"fmt": "float13"}, "fmt: unknown format 'float13'"),
    ({"fmt": 3.5}, "fmt: 3.5 is not a format"),
    ({"fmt": "float16", "order": "random"}, "order='random' is unknown; valid orders: sequential, pairwise"),
    ({"order": "pairwise"}, "order='pairwise' needs an accumulator format"),
    ({"tensor_core": "P100"}, "tensor_core='P100' is unknown; valid tensor cores: .*V100"),
    ({"fmt": "float16", "tensor_core": "A100"}, "give either tensor_core or fmt="),
    ({"tensor_core": "A100", "order": "pairwise"}, "give either tensor_core or fmt="),
])
def test_bad_arguments_are_refused_before_anything_changes(kwargs, match):
    from minifp._state import STATE
    with pytest.raises((ValueError, TypeError), match=match):
        mf.accumulate(**kwargs)
    assert STATE.accumulator is None


def test_a_tensor_core_given_float32_inputs_names_the_formats_it_takes():
    a = mf.tensor(np.ones((2, 8)), dtype="float32")
    with mf.accumulate(tensor_core="V100"), pytest.raises(
            ValueError, match=r"tensor core fmt='float32' is not modelled on device='V100'; valid formats on V100: "
                              r"float16 \(tensor cores take low-precision inputs: cast them to one of these"):
        mf.matmul(a, a.T)


def test_tensor_cores_route_matmuls_to_the_model(monkeypatch):
    calls = []

    def matmul(a, b, device, fmt):
        calls.append((a.shape, b.shape, device, fmt))
        return (a.astype(np.float32) @ b.astype(np.float32)) + 1      # a recognisable stand-in
    fake = types.SimpleNamespace(DEVICES=("V100", "A100", "H100", "B200"), matmul=matmul)
    monkeypatch.setattr(_accumulate, "_tensorcore", fake)
    a, b = mf.tensor(np.ones((2, 3)), dtype="float16"), mf.tensor(np.ones((3, 4)), dtype="float16")
    with mf.accumulate(tensor_core="H100"):
        out = mf.matmul(a, b)
        total = mf.sum(a)                                       # reductions: not a tensor-core product
    assert np.array_equal(out.float32(), np.full((2, 4), 4, np.float32)) and total.item() == 6
    assert calls == [((2, 3), (3, 4), "H100", mf.float16)]


def test_the_float64_shortcuts_are_taken_only_where_they_are_exact():
    from minifp._accumulate import FAST_TWO_SUM, PLAIN, TWO_SUM, sum_mode
    assert sum_mode(mf.float16, 22) == PLAIN                # float16 products in a float16 chain
    assert sum_mode(mf.float16, 48) == TWO_SUM              # float32 products
    assert sum_mode(mf.bfloat16, 16) == FAST_TWO_SUM        # 8 exponent bits: a wide range
    assert sum_mode(mf.float32, 22) == FAST_TWO_SUM and sum_mode(mf.float32, 48) == TWO_SUM


@pytest.mark.parametrize("fmt", [mf.float16, mf.bfloat16, mf.float8_e4m3, mf.Format(5, 2, subnormals=False),
                                 mf.Format(3, 4, overflow="saturate"), mf.float32], ids=repr)
def test_the_kernels_rounding_agrees_with_round_to(fmt):
    """One product x * 1 added to 0: the kernels' float64 -> fmt rounding alone, over every exponent."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(3000) * 2.0 ** rng.integers(-160, 140, 3000)
    x[:9] = [0.0, np.inf, -np.inf, np.nan, 2.0**-150, -2.0**-149, 65520.0, -65519.99, 1e-300]
    out = _accumulate.matmul2d(x[:, None], np.ones((1, 1)), fmt)[:, 0]
    with np.errstate(all="ignore"):
        want = mf.round_to(x, fmt).astype(np.float64)
    assert np.array_equal(out, want, equal_nan=True)
    assert np.array_equal(np.signbit(out), np.signbit(want))


def test_the_faces_layers_accumulate_too():
    import minifp.torch as torch
    from minifp import keras
    lin = torch.nn.Linear(4096, 1, bias=False).half()
    with torch.no_grad():
        lin.weight.fill_(1.0)
    dense = keras.layers.Dense(1, use_bias=False, kernel_initializer="ones", dtype="float16")
    x = np.ones((1, 4096), np.float16)
    with mf.accumulate("float16"):
        assert lin(torch.tensor(x)).item() == 2048
        assert float(np.asarray(dense(x).numpy())[0, 0]) == 2048
    assert lin(torch.tensor(x)).item() == 4096


def test_the_gpu_in_use_needs_a_gpu():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        pytest.skip("a GPU is here: tests/test_gpu.py checks tensor_core='gpu'")
    except Exception:  # noqa: BLE001 - no CuPy or no GPU: the case under test
        pass
    with pytest.raises(ValueError, match="tensor_core='gpu' needs a GPU that CuPy can see .*name a model instead: "
                                         "V100, A100, H100, B200"):
        mf.accumulate(tensor_core="gpu")
