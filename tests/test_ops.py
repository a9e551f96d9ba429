"""The numerics rule, the gradient of every registered op, and the dispatcher's errors."""
import inspect

import ml_dtypes
import numpy as np
import pytest

import minifp as mf
from minifp._ops import OPS
from minifp._tensor import _unbroadcast

FORMATS = [mf.float16, mf.bfloat16, mf.float8_e4m3, mf.float8_e5m2, mf.tf32, mf.float32, mf.Format(3, 4)]

# Independent float32 definitions of each elementwise op (not the registry's bodies).
UNARY = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "abs": np.abs, "neg": np.negative,
         "relu": lambda x: np.maximum(x, np.float32(0)),
         "sigmoid": lambda x: np.float32(1) / (np.float32(1) + np.exp(-x))}
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "pow": np.power,
          "maximum": np.maximum, "minimum": np.minimum}


def values(fmt, shape, rng):
    """Representable values of fmt spread over its range, some negative, zeros and edges included."""
    big = np.log2(mf.finfo(fmt).max)
    x = rng.choice([-1, 1], shape) * np.exp2(rng.uniform(np.log2(mf.finfo(fmt).smallest_subnormal), big, shape))
    x.flat[:3] = [0.0, mf.finfo(fmt).max, -mf.finfo(fmt).tiny]
    return mf.tensor(x, dtype=fmt)


def bits_equal(t, expected):
    a, b = t.numpy(), np.asarray(expected)
    assert a.dtype == b.dtype
    same = (a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}")) | (np.isnan(a.astype(np.float32))
                                                                      & np.isnan(b.astype(np.float32)))
    return same.all()


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY) + sorted(BINARY))
def test_numerics_rule(name, fmt):
    rng = np.random.default_rng(0)
    x, y = values(fmt, (40, 50), rng), values(fmt, (50,), rng)
    args = (x,) if name in UNARY else (x, y)
    with np.errstate(all="ignore"):
        expected = (UNARY.get(name) or BINARY.get(name))(*(a.float32() for a in args))
        got = mf.apply(name, *args)
    assert got.dtype == fmt
    assert bits_equal(got, mf.round_to(expected, fmt))


@pytest.mark.parametrize("name, native", [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                                          ("div", np.divide), ("sqrt", np.sqrt)])
@pytest.mark.parametrize("fmt, storage", [(mf.float16, np.float16), (mf.bfloat16, ml_dtypes.bfloat16)])
def test_matches_native_half_arithmetic(name, native, fmt, storage):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(10_000) * 100, rng.standard_normal(10_000)
    ta, tb = mf.tensor(a, dtype=fmt), mf.tensor(b, dtype=fmt)
    with np.errstate(all="ignore"):
        expected = native(*(t.numpy() for t in ([ta] if name == "sqrt" else [ta, tb])))
        got = mf.apply(name, *([ta] if name == "sqrt" else [ta, tb]))
    assert bits_equal(got, expected.astype(storage))


def test_guide_examples():
    assert mf.tensor([256.0], dtype="float16") ** 2 == np.inf
    assert (mf.tensor([1e-5], dtype="float16") ** 2).item() == 0.0
    assert (mf.tensor([1.0], dtype="float16") + 2**-11).item() == 1.0
    total = mf.tensor([0.0], dtype="float16")
    for _ in range(4096):
        total = total + 1
    assert total.item() == 2048.0


def test_scalars_are_weak_and_formats_promote():
    h, b = mf.tensor([1.0], dtype="float16"), mf.tensor([1.0], dtype="bfloat16")
    assert (h * 2.0).dtype == mf.float16 and (2 + h).dtype == mf.float16
    assert (h + b).dtype == mf.float32
    assert (h + mf.tensor([1.0])).dtype == mf.float32
    assert (mf.tensor([1.0], dtype="float8_e4m3") * h).dtype == mf.float16


def test_matmul_accumulates_in_float32():
    # 4096 products of 1 * 1 (+ one tiny term): a float16 accumulator would stop at 2048.
    x = mf.tensor(np.ones((1, 4096)), dtype="float16")
    assert (x @ mf.tensor(np.ones((4096, 1)), dtype="float16")).item() == 4096.0
    assert mf.sum(x).item() == 4096.0 and mf.sum(x).dtype == mf.float16


def test_reductions_and_softmax_round_once():
    rng = np.random.default_rng(2)
    x = mf.tensor(rng.standard_normal((8, 30)), dtype="bfloat16")
    w = x.float32()
    assert bits_equal(x.sum(axis=1), mf.round_to(w.sum(axis=1), "bfloat16"))
    assert bits_equal(x.mean(axis=0), mf.round_to(w.mean(axis=0), "bfloat16"))
    e = np.exp(w - w.max(axis=-1, keepdims=True))
    assert bits_equal(x.softmax(), mf.round_to(e / e.sum(axis=-1, keepdims=True), "bfloat16"))


def test_nbytes_are_real():
    assert mf.tensor(np.zeros(1000), dtype="float16").nbytes == 2000
    assert mf.tensor(np.zeros(1000), dtype="float8_e5m2").nbytes == 1000
    assert mf.tensor(np.zeros(1000), dtype="tf32").nbytes == 4000


# -- gradients: every registered op, by central differences in float64 ----------------------


def example(op, rng):
    if op.example is not None:
        return op.example(rng)
    arity = sum(1 for p in list(inspect.signature(op.forward).parameters.values())[1:]
                if p.default is inspect.Parameter.empty)
    shapes = [(3, 4), (4,), (1, 4)][:arity]      # the second input broadcasts
    return tuple(rng.uniform(0.5, 2.0, s) for s in shapes), {}


DIFFERENTIABLE = sorted(name for name, op in OPS.items() if not op.returns_bool)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradient_by_finite_differences(name):
    op = OPS[name]
    rng = np.random.default_rng(3)
    args, params = example(op, rng)
    ans = op.forward(np, *args, **params)
    r = rng.standard_normal(np.shape(ans))          # loss = sum(r * op(args))
    for i, a in enumerate(args):
        if a.dtype == bool or op.grads[i] is None:
            continue
        analytic = _unbroadcast(np, np.asarray(op.grads[i](np, r, ans, *args, **params), np.float64), a.shape)
        numeric = np.zeros_like(a)
        h = 1e-6
        for j in np.ndindex(a.shape):
            hi, lo = a.copy(), a.copy()
            hi[j] += h
            lo[j] -= h
            f = [np.sum(r * op.forward(np, *(v if k == i else b for k, b in enumerate(args)), **params))
                 for v in (hi, lo)]
            numeric[j] = (f[0] - f[1]) / (2 * h)
        np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7, err_msg=f"{name}, input {i}")


def test_every_op_is_covered():
    assert {"add", "matmul", "getitem", "concatenate", "softmax", "cast", "where"} <= set(DIFFERENTIABLE)
    assert {"lt", "eq"}.isdisjoint(DIFFERENTIABLE)


def test_backward_through_the_dispatcher():
    x = mf.tensor([[1.0, -2.0, 3.0]], requires_grad=True)
    b = mf.tensor([0.5, 0.5, 0.5], requires_grad=True)
    y = ((x * b + 1.0).relu() ** 2).sum()
    y.backward()
    # d/dx of (0.5x + 1)^2 = (0.5x + 1) where positive; d/db sums x * 2(bx + 1) over the broadcast axis.
    np.testing.assert_allclose(x.grad.numpy(), [[1.5, 0.0, 2.5]])
    np.testing.assert_allclose(b.grad.numpy(), [3.0, 0.0, 15.0])


def test_gradients_round_into_each_tensors_format():
    w = mf.tensor([1.0, 2.0], requires_grad=True)          # float32 master weight
    h = w.astype("float16")
    y = (h * 1e-8).sum()                                  # the float16 gradient of h is 1e-8 -> 0 (underflow)
    y.backward()
    assert h.dtype == mf.float16 and w.grad.dtype == mf.float32
    assert w.grad.numpy().tolist() == [0.0, 0.0]
    w2 = mf.tensor([1.0], requires_grad=True)
    (w2.astype("float16") * 1e-3).sum().backward()
    assert w2.grad.item() == float(np.float16(1e-3))   # the cast back is exact


def test_leaf_gradients_accumulate_in_the_leaf_format():
    # Each backward adds 1 to a float16 .grad: like any float16 sum it stops at 2048.
    w = mf.tensor([1.0], dtype="float16", requires_grad=True)
    for _ in range(3000):
        (w * 1.0).sum().backward()
    assert w.grad.dtype == mf.float16 and w.grad.item() == 2048.0


def test_no_grad_and_detach():
    w = mf.tensor([1.0], requires_grad=True)
    with mf.no_grad():
        y = w * 2
    assert not y.requires_grad
    assert not (w.detach() * 2).requires_grad


# -- clear errors -------------------------------------------------------------------------


def test_mismatched_shapes():
    with pytest.raises(ValueError, match=r"add: cannot apply to inputs of shapes \(3,\), \(4,\)"):
        mf.tensor([1.0, 2, 3]) + mf.tensor([1.0, 2, 3, 4])
    with pytest.raises(ValueError, match=r"matmul: cannot apply to inputs of shapes \(2, 3\), \(2, 3\)"):
        mf.tensor(np.ones((2, 3))) @ mf.tensor(np.ones((2, 3)))


def test_backward_on_non_scalar_needs_a_gradient():
    y = mf.tensor([1.0, 2.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=r"non-scalar tensor of shape \(2,\) needs a gradient"):
        y.backward()
    with pytest.raises(ValueError, match=r"gradient of shape \(3,\) does not match the tensor's shape \(2,\)"):
        y.backward(np.ones(3))
    y.backward(np.ones(2))


def test_backward_without_grad():
    with pytest.raises(RuntimeError, match="does not require grad"):
        (mf.tensor([1.0]) * 2).sum().backward()


def test_raw_storage_is_guarded_and_assign_rounds():
    with pytest.raises(TypeError, match="storage dtype float16"):
        mf.Tensor(np.float32([1.0, 2.0]), mf.float16)
    with pytest.raises(ValueError, match="cannot represent"):
        mf.Tensor(np.float32([1 + 2**-20]), mf.tf32)
    t = mf.Tensor(np.float16([1.0, 2.0]), mf.float16)
    assert t.assign(np.float32([65520.0, 1 + 2**-11])) is t
    assert t.numpy().tolist() == [np.inf, 1.0]              # rounded into float16, not stored as given
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        t.assign(np.zeros(3))
    with pytest.raises(AttributeError):
        t.data = np.float16([0.0, 0.0])
