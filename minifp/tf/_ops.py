"""TensorFlow's tensor functions (tf.constant, tf.cast, tf.reduce_mean, tf.math.*, tf.nn.*, tf.random.*),
thin wrappers over the engine's ops with TensorFlow's names, argument orders and dtype rules.

Every result is a `minifp.keras` Tensor (the one tensor class of both Keras doors); those these functions make are
`tf.Tensor`s, its subclass whose arithmetic operators keep TensorFlow's rule. TensorFlow's rules kept here: Python
floats become float32 and Python ints int32; a float to integer cast truncates toward zero; reductions of integer
tensors stay integers; an op refuses tensors of different dtypes (InvalidArgumentError, where Keras 3 and the
engine promote), reading a layer's variables in its compute dtype inside a mixed-precision layer call, as
tf.keras's autocast variables read.
"""
from __future__ import annotations

import builtins
import numbers

import numpy as np

from ..engine import (apply, array_module, current_autocast, generator, make, manual_seed, op_function, rewrap,
    storage, Tensor as _EngineTensor, to_numpy)
from ..keras import _tensor as _K
from . import _dtypes
from ._errors import InvalidArgumentError

__all__ = ["Tensor", "constant", "convert_to_tensor", "cast", "is_tensor", "zeros", "ones", "zeros_like",
           "ones_like", "fill", "range", "reshape", "transpose", "matmul", "shape", "concat", "stack", "where",
           "add", "subtract", "multiply", "divide", "pow", "square", "sqrt", "exp", "log", "abs", "negative",
           "maximum", "minimum", "equal", "not_equal", "less", "greater", "argmax", "reduce_sum", "reduce_mean",
           "reduce_max", "reduce_min", "norm", "is_finite", "is_nan", "is_inf", "sigmoid", "tanh", "softmax",
           "log_softmax", "relu", "relu6", "leaky_relu", "gelu", "silu", "swish", "random_normal", "random_uniform",
           "set_seed"]

# TensorFlow's kernel names of the dtypes, as its errors print them
_KERNEL_DTYPE = {"float16": "half", "float32": "float", "float64": "double"}


def _seen_dtype(x):
    """The dtype an op reads x in: a trainable float variable inside a mixed-precision layer call is read in
    the layer's compute dtype (Keras's AutocastScope, tf.keras's AutoCastVariable); otherwise x's own."""
    autocast = current_autocast()
    if autocast is not None and autocast.variables_only and x.fmt is not None and x.requires_grad and x.is_leaf:
        return _K.as_dtype(autocast.fmt).name
    return _K.as_dtype(x.fmt if x.fmt is not None else storage(x).dtype).name


def _kernel_name(dtype):
    return _KERNEL_DTYPE.get(dtype, dtype)


def check_dtypes(kernel, operands, name="", first=0):
    """TensorFlow's refusal of an op on tensors of different dtypes: the first tensor's dtype is the op's, a later
    tensor of another dtype (or a Python float where it is an integer dtype) raises InvalidArgumentError with
    TensorFlow's message. Python ints, and floats beside float tensors, take the op's dtype. `first`: the index
    of operands[0] among the op's inputs (tf.where's x is input 1)."""
    want = None
    for i, x in enumerate(operands):
        if isinstance(x, _EngineTensor):
            got = _seen_dtype(x)
        elif isinstance(x, builtins.float) or (isinstance(x, np.floating) and not isinstance(x, np.ndarray)):
            got = "float32" if want is None or want in ("int8", "int16", "int32", "int64", "uint8") else want
        else:
            continue
        if want is None:
            want = got
        elif got != want:
            raise InvalidArgumentError(None, None, f"cannot compute {kernel} as input #{i + first}(zero-based) was "
                                       f"expected to be a {_kernel_name(want)} tensor but is a {_kernel_name(got)} "
                                       f"tensor [Op:{kernel}] name: {name}")


def _check_divide(x, y):
    """tf.divide and `/`: TensorFlow's TypeError for tensors of different dtypes."""
    if isinstance(x, _EngineTensor) and isinstance(y, _EngineTensor) and _seen_dtype(x) != _seen_dtype(y):
        raise TypeError(f"`x` and `y` must have the same dtype, got tf.{_seen_dtype(x)} != tf.{_seen_dtype(y)}.")


def _check_operator(kernel, x, y):
    """An arithmetic operator: a Python float beside an integer tensor cannot be converted (TensorFlow's
    TypeError); tensors of different dtypes are refused as the op refuses them."""
    for t, other in ((x, y), (y, x)):
        if isinstance(t, _EngineTensor) and t.fmt is None and isinstance(other, builtins.float):
            raise TypeError(f"Cannot convert {other!r} to EagerTensor of dtype {_seen_dtype(t)}")
    if kernel == "RealDiv":
        _check_divide(x, y)
    else:
        check_dtypes(kernel, (x, y))


class _TensorType(type):
    """tf.Tensor's class: every tensor of minifp's Keras faces is a tf.Tensor to isinstance (a Keras layer's
    output included), as every tensor is one in TensorFlow."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _K.Tensor)


def _operator(method, kernel, reflected=False):
    parent = getattr(_K.Tensor, method)

    def op(self, other):
        x, y = (other, self) if reflected else (self, other)
        _check_operator(kernel, x, y)
        return parent(self, other)
    op.__name__ = method
    return op


class Tensor(_K.Tensor, metaclass=_TensorType):
    """A TensorFlow eager tensor: a minifp.keras Tensor whose operators refuse mixed dtypes as TensorFlow's do."""

    __slots__ = ()


for _method, _kernel in (("add", "AddV2"), ("sub", "Sub"), ("mul", "Mul"), ("truediv", "RealDiv"), ("pow", "Pow"),
                         ("matmul", "MatMul")):
    setattr(Tensor, f"__{_method}__", _operator(f"__{_method}__", _kernel))
    setattr(Tensor, f"__r{_method}__", _operator(f"__r{_method}__", _kernel, reflected=True))
for _method, _kernel in (("lt", "Less"), ("le", "LessEqual"), ("gt", "Greater"), ("ge", "GreaterEqual")):
    setattr(Tensor, f"__{_method}__", _operator(f"__{_method}__", _kernel))


def _as_tf(t):
    """t as a tf.Tensor (same storage and graph node)."""
    return t if type(t) is Tensor else rewrap(t, Tensor)
def _tf_tensor(arr, dtype, device=None):
    """A face tensor over a NumPy/CuPy array of values, rounded once into `dtype`."""
    d = _dtypes.as_dtype(dtype)
    fmt = _dtypes.format_of(d)
    if fmt is None:
        return make(Tensor, arr.astype(_dtypes.numpy_dtype(d), copy=False), None, False, device)
    if arr.dtype.kind in "biu":
        arr = arr.astype(np.float64)        # integers round once into the format
    return _as_tf(_K.convert_to_tensor(arr, d.name))


def _inferred(value):
    """TensorFlow's dtype for a value without one: Python floats float32, ints int32, bools bool; arrays keep
    theirs (float64, which minifp lacks, becomes float32)."""
    arr = np.asarray(value)
    if arr.dtype.kind == "b":
        return _dtypes.bool
    if arr.dtype.kind in "iu":
        if isinstance(value, np.ndarray) or isinstance(value, np.generic):
            return _dtypes.as_dtype(arr.dtype)
        return _dtypes.int32 if np.all((arr >= -2 ** 31) & (arr < 2 ** 31)) else _dtypes.int64
    if arr.dtype.kind == "f":
        return _dtypes.as_dtype(arr.dtype) if isinstance(value, (np.ndarray, np.generic)) else _dtypes.float32
    raise TypeError(f"cannot convert {value!r} to a tensor: TensorFlow tensors here hold real numbers or bools "
                    f"(dtype {arr.dtype} is not supported)")


def constant(value, dtype=None, shape=None, name=None):
    """tf.constant: a tensor of `value` in `dtype` (inferred as TensorFlow does), filled or reshaped to `shape`."""
    if isinstance(value, _EngineTensor):
        value = to_numpy(value.float32() if value.fmt is not None else storage(value))
    d = _dtypes.as_dtype(dtype) if dtype is not None else _inferred(value)
    arr = np.asarray(value)
    if not _dtypes.format_of(d) and arr.dtype.kind == "f" and not d.is_bool and np.any(arr != np.trunc(arr)):
        raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {d.name}")
    if shape is not None:
        shape = tuple(int(n) for n in ((shape,) if isinstance(shape, numbers.Integral) else shape))
        n = int(np.prod(shape, dtype=np.int64))
        if arr.size == 1:
            arr = np.full(shape, arr.reshape(()))
        elif arr.size == n:
            arr = arr.reshape(shape)
        else:
            raise TypeError(f"Eager execution of tf.constant with unsupported shape. Tensor {value!r} (converted "
                            f"from {value!r}) has {arr.size} elements, but got `shape` {shape} with {n} elements).")
    t = _tf_tensor(arr, d)
    t.name = name
    return t


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    """tf.convert_to_tensor: tensors as they are (their dtype must match `dtype`), anything else as tf.constant."""
    if isinstance(value, _EngineTensor):
        t = value if isinstance(value, Tensor) else _K.convert_to_tensor(value)
        if dtype is not None and _dtypes.as_dtype(dtype) != _dtypes.as_dtype(t.dtype):
            raise ValueError(f"Tensor conversion requested dtype {_dtypes.as_dtype(dtype).name} for Tensor with dtype "
                             f"{_dtypes.as_dtype(t.dtype).name}: {t!r}")
        return t
    if dtype is None and dtype_hint is not None:
        try:
            return constant(value, dtype_hint, name=name)
        except TypeError:
            pass
    return constant(value, dtype, name=name)


def is_tensor(x):
    """Whether x is a tensor (a minifp tensor of any face)."""
    return isinstance(x, _EngineTensor)


def _t(x):
    return convert_to_tensor(x)


def _values(t):
    """The values of a tensor as an array: float32 for floats, the stored integers or bools otherwise."""
    return t.float32() if t.fmt is not None else storage(t)


def cast(x, dtype, name=None):
    """tf.cast: x in `dtype`. Float to float is the engine's differentiable cast (one rounding); float to integer
    truncates toward zero; to bool is `!= 0`."""
    x = _t(x)
    d = _dtypes.as_dtype(dtype)
    if _dtypes.as_dtype(x.dtype) == d:
        return x
    fmt = _dtypes.format_of(d)
    if fmt is not None and x.fmt is not None:
        return apply("cast", x, _out=fmt)
    xp = array_module(storage(x))
    v = _values(x)
    if fmt is not None:
        return _as_tf(_K.convert_to_tensor(to_numpy(v).astype(np.float64), d.name))
    if d.is_bool:
        return make(Tensor, v != 0, None, False, x.device)
    with np.errstate(invalid="ignore"):
        return make(Tensor, (xp.trunc(v) if x.fmt is not None else v).astype(_dtypes.numpy_dtype(d)), None, False, x.device)


def _shape(shape):
    return (int(shape),) if isinstance(shape, numbers.Integral) else tuple(int(n) for n in shape)


def zeros(shape, dtype=_dtypes.float32, name=None):
    """tf.zeros."""
    return _tf_tensor(np.zeros(_shape(shape), np.float32), dtype)


def ones(shape, dtype=_dtypes.float32, name=None):
    """tf.ones."""
    return _tf_tensor(np.ones(_shape(shape), np.float32), dtype)


def fill(dims, value, name=None):
    """tf.fill: a tensor of shape `dims` holding `value` (its dtype inferred as tf.constant's)."""
    return constant(value, shape=_shape(dims))


def zeros_like(input, dtype=None, name=None):      # noqa: A002  (TensorFlow's argument name)
    """tf.zeros_like."""
    x = _t(input)
    return _tf_tensor(np.zeros(x.shape, np.float32), dtype or x.dtype)


def ones_like(input, dtype=None, name=None):       # noqa: A002
    """tf.ones_like."""
    x = _t(input)
    return _tf_tensor(np.ones(x.shape, np.float32), dtype or x.dtype)


def range(start, limit=None, delta=1, dtype=None, name="range"):   # noqa: A001
    """tf.range: like Python's range; int32 for integer arguments, float32 when any is a float."""
    if limit is None:
        start, limit = 0, start
    args = [a.item() if isinstance(a, _EngineTensor) else a for a in (start, limit, delta)]
    if dtype is None:
        dtype = _dtypes.float32 if any(isinstance(a, float) for a in args) else _dtypes.int32
    return _tf_tensor(np.arange(*args, dtype=np.float64), dtype)


def reshape(tensor, shape, name=None):
    """tf.reshape (a -1 entry takes the rest)."""
    return apply("reshape", _t(tensor), shape=_shape(shape))


def transpose(a, perm=None, conjugate=False, name="transpose"):
    """tf.transpose: axes permuted by `perm` (reversed when None)."""
    return apply("transpose", _t(a), axes=None if perm is None else tuple(perm))


def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    """tf.matmul / tf.linalg.matmul, with TensorFlow's transpose flags (last two axes)."""
    a, b = _t(a), _t(b)
    if transpose_a:
        a = _swap_last(a)
    if transpose_b:
        b = _swap_last(b)
    check_dtypes("MatMul", (a, b))
    return apply("matmul", a, b)


def _swap_last(x):
    axes = list(builtins.range(x.ndim))
    axes[-2:] = axes[-1], axes[-2]
    return apply("transpose", x, axes=tuple(axes))


def shape(input, out_type=_dtypes.int32, name=None):     # noqa: A002
    """tf.shape: the shape as an int32 tensor."""
    return _tf_tensor(np.asarray(_t(input).shape, np.int64), out_type)


def concat(values, axis, name="concat"):
    """tf.concat (of tensors of one dtype, as TensorFlow's)."""
    ts = [_t(v) for v in values]
    check_dtypes("ConcatV2", ts, name)
    return apply("concatenate", *ts, axis=axis)


def stack(values, axis=0, name="stack"):
    """tf.stack: the tensors along a new axis."""
    ts = [_t(v) for v in values]
    check_dtypes("Pack", ts, name)
    ax = axis if axis >= 0 else ts[0].ndim + 1 + axis
    return apply("concatenate", *[apply("reshape", t, shape=t.shape[:ax] + (1,) + t.shape[ax:]) for t in ts],
                 axis=ax)


def where(condition, x=None, y=None, name=None):
    """tf.where(condition, x, y): elementwise choice (the one-argument form, indices, is not supported)."""
    if x is None or y is None:
        raise NotImplementedError("tf.where(condition) (indices of true elements) is not supported by minifp.tf; "
                                  "pass x and y")
    x, y = _operand(x), _operand(y)
    check_dtypes("SelectV2", (x, y), first=1)
    return apply("where", _t(condition), x, y)


def _operand(x):
    """Tensors as they are, Python numbers as weak scalars (the engine's rule), arrays as tf.constant."""
    return x if isinstance(x, (_EngineTensor, numbers.Real)) and not isinstance(x, np.ndarray) else _t(x)


def _binary(op, kernel, doc):
    def fn(x, y, name=None):
        x, y = _operand(x), _operand(y)
        if kernel == "RealDiv":
            _check_divide(x, y)
        else:
            check_dtypes(kernel, (x, y))
        return apply(op, x, y)
    fn.__doc__ = doc
    return fn


def generated(op, place):
    """The engine's op under a TensorFlow name (tf.less_equal, ...): tensors and numbers as TensorFlow takes them,
    `name=` accepted, the op's own signature otherwise."""
    fn = op_function(op)
    kernel = "".join(part.capitalize() for part in fn.__name__.split("_"))

    def call(*args, name=None, **kwargs):
        args = [_operand(a) for a in args]
        check_dtypes(kernel, args)
        return fn(*args, **kwargs)
    call.__name__, call.__doc__ = fn.__name__, fn.__doc__
    return call


def _unary(op, doc):
    def fn(x, name=None):
        return apply(op, _t(x))
    fn.__doc__ = doc
    return fn


add = _binary("add", "AddV2", "tf.add / tf.math.add.")
subtract = _binary("sub", "Sub", "tf.subtract / tf.math.subtract.")
multiply = _binary("mul", "Mul", "tf.multiply / tf.math.multiply.")
divide = _binary("div", "RealDiv", "tf.divide / tf.math.divide.")
pow = _binary("pow", "Pow", "tf.pow / tf.math.pow.")           # noqa: A001
maximum = _binary("maximum", "Maximum", "tf.maximum / tf.math.maximum.")
minimum = _binary("minimum", "Minimum", "tf.minimum / tf.math.minimum.")
equal = _binary("eq", "Equal", "tf.equal / tf.math.equal (bool).")
not_equal = _binary("ne", "NotEqual", "tf.not_equal / tf.math.not_equal (bool).")
less = _binary("lt", "Less", "tf.less / tf.math.less (bool).")
greater = _binary("gt", "Greater", "tf.greater / tf.math.greater (bool).")
sqrt = _unary("sqrt", "tf.sqrt / tf.math.sqrt.")
exp = _unary("exp", "tf.exp / tf.math.exp.")
log = _unary("log", "tf.math.log (natural logarithm).")
abs = _unary("abs", "tf.abs / tf.math.abs.")            # noqa: A001
negative = _unary("neg", "tf.negative / tf.math.negative.")
sigmoid = _unary("sigmoid", "tf.sigmoid / tf.math.sigmoid / tf.nn.sigmoid.")
tanh = _unary("tanh", "tf.tanh / tf.math.tanh / tf.nn.tanh.")
relu = _unary("relu", "tf.nn.relu.")
silu = _unary("silu", "tf.nn.silu: x * sigmoid(x).")


def square(x, name=None):
    """tf.square / tf.math.square: x * x (one rounding, as the engine's mul)."""
    x = _t(x)
    return apply("mul", x, x)


def swish(features, beta=1.0, name=None):
    """tf.nn.swish: x * sigmoid(beta * x) (beta 1 is silu)."""
    x = _t(features)
    return apply("silu", x) if beta == 1.0 else apply("mul", x, apply("sigmoid", apply("mul", x, beta)))


def relu6(features, name=None):
    """tf.nn.relu6: min(max(x, 0), 6)."""
    return apply("hardtanh", _t(features), min_val=0.0, max_val=6.0)


def leaky_relu(features, alpha=0.2, name=None):
    """tf.nn.leaky_relu: x where x > 0, else alpha * x (TensorFlow's argument name and default)."""
    return apply("leaky_relu", _t(features), negative_slope=float(alpha))


def gelu(features, approximate=False, name=None):
    """tf.nn.gelu (exact erf form, or the tanh approximation)."""
    return apply("gelu", _t(features), approximate="tanh" if approximate else "none")


def softmax(logits, axis=None, name=None):
    """tf.nn.softmax / tf.math.softmax (over the last axis by default)."""
    return apply("softmax", _t(logits), axis=-1 if axis is None else axis)


def log_softmax(logits, axis=None, name=None):
    """tf.nn.log_softmax / tf.math.log_softmax (over the last axis by default)."""
    return apply("log_softmax", _t(logits), axis=-1 if axis is None else axis)


def _axis(axis):
    if axis is None or isinstance(axis, numbers.Integral):
        return axis
    return tuple(int(a) for a in axis)


def _int_reduce(fn, x, axis, keepdims):
    """A reduction of an integer or bool tensor, in integers, as TensorFlow's (no gradient to carry)."""
    xp = array_module(storage(x))
    out = getattr(xp, fn)(storage(x), axis=_axis(axis), keepdims=keepdims)
    if fn == "mean":        # integer mean truncates, as TensorFlow's
        out = xp.trunc(out)
    return make(Tensor, xp.asarray(out).astype(storage(x).dtype), None, False, x.device)


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    """tf.reduce_sum / tf.math.reduce_sum."""
    x = _t(input_tensor)
    return _int_reduce("sum", x, axis, keepdims) if x.fmt is None else \
        apply("sum", x, axis=_axis(axis), keepdims=keepdims)


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """tf.reduce_mean / tf.math.reduce_mean (integer tensors: the truncated integer mean, as TensorFlow)."""
    x = _t(input_tensor)
    return _int_reduce("mean", x, axis, keepdims) if x.fmt is None else \
        apply("mean", x, axis=_axis(axis), keepdims=keepdims)


def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    """tf.reduce_max / tf.math.reduce_max."""
    x = _t(input_tensor)
    return _int_reduce("max", x, axis, keepdims) if x.fmt is None else \
        apply("max", x, axis=_axis(axis), keepdims=keepdims)


def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    """tf.reduce_min / tf.math.reduce_min: -max(-x), exact."""
    x = _t(input_tensor)
    return _int_reduce("min", x, axis, keepdims) if x.fmt is None else \
        apply("neg", apply("max", apply("neg", x), axis=_axis(axis), keepdims=keepdims))


_MATRIX_NORMS = ["euclidean", "fro", 1, 2, np.inf]


def _norm_checks(ord, axis):
    """tf.norm's refusals of `ord` and `axis`, with its messages; whether it is a matrix norm."""
    matrix = isinstance(axis, (tuple, list)) and len(axis) == 2
    if matrix:
        if not all(isinstance(a, builtins.int) for a in axis) or axis[0] == axis[1]:
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {tuple(axis)}")
        if ord not in _MATRIX_NORMS:
            raise ValueError(f"'ord' must be a supported matrix norm in {_MATRIX_NORMS}, got {ord}")
        if ord in (2, 2.0):     # TensorFlow takes the largest singular value; minifp has no SVD
            raise NotImplementedError("tf.norm(ord=2) of matrices (the spectral norm) is not supported by minifp.tf")
    else:
        if not (axis is None or isinstance(axis, builtins.int)):
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}")
        if ord not in ("euclidean", 1, 2, np.inf) and (isinstance(ord, str) or ord <= 0):
            raise ValueError(f"'ord' must be a supported vector norm, got {ord}")
    return matrix


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):     # noqa: A002  (TensorFlow's names)
    """tf.norm / tf.linalg.norm: a vector norm over all entries or `axis`, or a matrix norm over two axes."""
    matrix = _norm_checks(ord, axis)
    axes = None if axis is None else tuple(axis) if matrix else (axis,)
    x = _t(tensor)
    # TensorFlow's steps, each kept with its axes so the gradient flows as it does there
    if ord in ("fro", "euclidean", 2, 2.0):
        result = sqrt(reduce_sum(multiply(x, x), axes, keepdims=True))
    elif ord == 1:
        result = reduce_sum(abs(x), None if axes is None else axes[0], keepdims=True)
        result = reduce_max(result, axes[-1], keepdims=True) if matrix else result
    elif ord == np.inf:
        result = reduce_sum(abs(x), axes[1], keepdims=True) if matrix else abs(x)
        result = reduce_max(result, None if axes is None else axes[0], keepdims=True)
    else:
        result = pow(reduce_sum(pow(abs(x), ord), axes, keepdims=True), 1.0 / ord)
    if keepdims:
        return result
    dropped = builtins.range(x.ndim) if axes is None else [a % x.ndim for a in axes]
    return reshape(result, [n for i, n in enumerate(result.shape) if i not in dropped])


def argmax(input, axis=None, output_type=_dtypes.int64, name=None):     # noqa: A002
    """tf.argmax / tf.math.argmax: indices of the largest values along `axis` (0 when None, as TensorFlow)."""
    x = _t(input)
    xp = array_module(storage(x))
    return make(Tensor, xp.argmax(_values(x), axis=0 if axis is None else axis).astype(_dtypes.numpy_dtype(output_type)),
                None, False, x.device)


def _test(fn, doc):
    def test(x, name=None):
        x = _t(x)
        xp = array_module(storage(x))
        v = x.float32() if x.fmt is not None else storage(x).astype(np.float32)
        return make(Tensor, getattr(xp, fn)(v), None, False, x.device)
    test.__doc__ = doc
    return test


is_finite = _test("isfinite", "tf.math.is_finite (bool).")
is_nan = _test("isnan", "tf.math.is_nan (bool).")
is_inf = _test("isinf", "tf.math.is_inf (bool).")


def set_seed(seed):
    """tf.random.set_seed: seeds minifp's one generator (weights, dropout, shuffling, tf.random.*)."""
    manual_seed(seed)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    """tf.random.normal: drawn in float64 from minifp's generator, rounded once into `dtype`."""
    return _tf_tensor(generator(seed).normal(mean, stddev, _shape(shape)), dtype)


def random_uniform(shape, minval=0, maxval=None, dtype=_dtypes.float32, seed=None, name=None):
    """tf.random.uniform: floats in [minval, maxval) (maxval 1 by default); integer dtypes need maxval."""
    d = _dtypes.as_dtype(dtype)
    g = generator(seed)
    if not d.is_floating:
        if maxval is None:
            raise ValueError(f"Must specify maxval for integer dtype {d.name}")
        return _tf_tensor(g.integers(minval, maxval, _shape(shape)), d)
    return _tf_tensor(g.uniform(minval, 1.0 if maxval is None else maxval, _shape(shape)), d)
