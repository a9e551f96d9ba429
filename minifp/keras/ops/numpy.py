"""keras.ops's numpy part (Keras 3's keras/src/ops/numpy.py): NumPy-named math, reductions, creation and shapes.

Semantics are Keras 3's: its dtype promotion (`result_type`, JAX's lattice: int32 + float16 -> float16, Python
numbers weak), its defaults (ops.mean of integers is float32, ops.arange of Python ints int32) and argument names.
Floating tensors go through the engine's ops and stay differentiable; values that only move (flip, roll, take,
pad, sort, ...) are gathered from the input by one engine getitem with an index array NumPy computes on positions,
so their gradients scatter back. Integer and bool tensors (which the engine holds as plain arrays) are computed
with NumPy, as they carry no gradient.
"""
from __future__ import annotations

import builtins
import functools
import math

import numpy as np

from ...engine import apply, current_autocast, finfo, made_by, storage, Tensor as _EngineTensor, to_numpy
from .._tensor import _as_face, as_dtype, convert_to_tensor as _convert, format_of

__all__ = ["result_type", "abs", "absolute", "negative", "square", "sqrt", "exp", "exp2", "expm1", "log", "log2",
           "log10", "log1p", "sign", "floor", "ceil", "round", "trunc", "sin", "cos", "tan", "arcsin", "arccos",
           "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "reciprocal", "cbrt", "deg2rad",
           "rad2deg", "isnan", "isinf", "isfinite", "signbit", "add", "subtract", "multiply", "divide",
           "true_divide", "divide_no_nan", "floor_divide", "mod", "fmod", "power", "maximum", "minimum", "arctan2",
           "hypot", "logaddexp", "logaddexp2", "heaviside", "nextafter", "equal", "not_equal", "less",
           "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor", "logical_not",
           "sum", "mean", "max", "min", "amax", "amin", "prod", "var", "std", "all", "any", "argmax", "argmin",
           "average", "median", "quantile", "percentile", "count_nonzero", "nansum", "nanmean", "cumsum",
           "cumprod", "ptp", "arange", "zeros", "ones", "full", "empty", "eye", "identity", "tri", "linspace",
           "logspace", "zeros_like", "ones_like", "full_like", "empty_like", "reshape", "transpose",
           "expand_dims", "squeeze", "ravel", "flip", "fliplr", "flipud", "roll", "rot90", "moveaxis",
           "swapaxes", "broadcast_to", "tile", "repeat", "concatenate", "stack", "hstack", "vstack", "dstack",
           "append", "split", "array_split", "hsplit", "vsplit", "dsplit", "pad", "diag", "diagonal", "diagflat",
           "trace", "tril", "triu", "where", "take", "take_along_axis", "sort", "argsort", "nonzero", "clip",
           "searchsorted", "digitize", "isin", "isclose", "allclose", "nan_to_num", "bincount", "diff",
           "meshgrid", "size", "ndim", "copy", "real", "conj", "conjugate", "matmul", "dot", "vdot",
           "inner", "outer", "tensordot", "einsum", "kron", "cross", "trapezoid", "vander", "correlate",
           "unravel_index", "array", "fabs", "fmax", "fmin", "isneginf", "isposinf", "isreal", "imag",
           "get_item", "histogram", "argpartition", "select", "corrcoef"]

FLOATX = "float32"

# -- dtypes: Keras 3's promotion lattice (keras/src/backend/common/dtypes.py) -----------------------------------

_UP = {"bool": ["int"], "uint8": ["int16", "uint16"], "uint16": ["int32", "uint32"],
       "uint32": ["int64", "uint64"], "uint64": ["float"], "int": ["uint8", "int8"], "int8": ["int16"],
       "int16": ["int32"], "int32": ["int64"], "int64": ["float"], "float": ["bfloat16", "float16"],
       "bfloat16": ["float32"], "float16": ["float32"], "float32": ["float64"], "float64": []}


def _bounds(node):
    out, todo = {node}, [node]
    while todo:
        for up in _UP[todo.pop()]:
            if up not in out:
                out.add(up)
                todo.append(up)
    return out


_BOUNDS = {n: _bounds(n) for n in _UP}


def _lub(nodes):
    common = set.intersection(*(_BOUNDS[n] for n in nodes))
    least = (common & set(nodes)) or {c for c in common if common <= _BOUNDS[c]}
    return least.pop()


def _std(d):
    """A dtype (name, DType, Python type, NumPy dtype, Format) as Keras's name; Python int/float stay weak."""
    if d is int or d is float:
        return d
    if d is None:
        return FLOATX
    return str(as_dtype(d))


def result_type(*dtypes):
    """The dtype Keras 3 promotes `dtypes` to (Python int and float are weak: they defer to tensors' dtypes)."""
    if not dtypes:
        return FLOATX
    ds = [_std(d) for d in dtypes]
    weak = [d in (int, float) for d in ds]
    names = ["int64" if d is int else "float32" if d is float else d for d in ds]
    if builtins.any(n.startswith("float8") for n in names):
        raise ValueError(f"There is no implicit conversions from float8 dtypes to others. You must cast it "
                         f"internally. Received: {dtypes}")
    if len(names) == 1:
        out, out_weak = names[0], weak[0]
    elif len(set(names)) == 1 and not builtins.all(weak):
        out, out_weak = names[0], False
    elif builtins.all(weak):
        out, out_weak = _lub(set(names)), True
    else:
        out = _lub({("float" if "float" in n else "int") if w and n != "bool" else n for n, w in zip(names, weak)})
        out_weak = out in ("int", "float")
    if out_weak and out != "bool":
        out = "bool" if out == "bool" else ("int32" if out.startswith("int") else "uint32" if out.startswith("u")
                                             else "float32")
    return {"uint64": "uint32"}.get(out, out)


def _read_as(x):
    """The dtype a layer call under a mixed policy reads variable x in (Keras's autocast: a trainable float32
    variable is read in the compute dtype), else None. The dispatcher does the cast itself (and caches it)."""
    ac = current_autocast()
    if (ac is None or not ac.variables_only or x.fmt is None or not x.requires_grad or made_by(x) is not None
            or x.device != ac.device or not x.fmt.is_float32):
        return None
    return str(as_dtype(ac.fmt))


def _dtype(x):
    """x's dtype for promotion: a tensor's (a variable's as a layer call reads it), a NumPy array's, or Python
    int/float (weak) and bool."""
    if isinstance(x, _EngineTensor):
        return _read_as(x) or str(_as_face(x).dtype)
    if isinstance(x, (bool, np.bool_)):
        return "bool"
    if isinstance(x, int):
        return int
    if isinstance(x, float):
        return float
    if isinstance(x, (np.ndarray, np.generic)):
        return {"float64": "float32"}.get(x.dtype.name, x.dtype.name)
    return _dtype_of_values(x)


def _dtype_of_values(x):
    arr = np.asarray(x)
    return "bool" if arr.dtype.kind == "b" else "int32" if arr.dtype.kind in "iu" else FLOATX


def _is_float(dtype):
    return format_of(dtype) is not None


def _t(x, dtype=None):
    """x as a face Tensor, in `dtype` where given (float to float rounded once, differentiable); Python numbers
    and lists take Keras's default dtypes (int32, float32, bool)."""
    if not isinstance(x, _EngineTensor):
        if dtype is None:
            d = _dtype(x)
            dtype = FLOATX if d is float else "int32" if d is int else d
        return _convert(np.asarray(x), dtype)
    x = _as_face(x)
    return x if dtype is None or str(x.dtype) == str(dtype) or _read_as(x) == str(dtype) else _convert(x, dtype)


def _np(x):
    """A tensor's values as NumPy (float32 for floating tensors)."""
    return to_numpy(x.float32() if x.fmt is not None else storage(x))


def _out(arr, dtype):
    """A face Tensor of NumPy values in Keras dtype `dtype`."""
    return _convert(np.asarray(arr), dtype)


def _axis(axis, ndim):
    """axis (None, an int or a sequence) normalised against ndim: None or a tuple (raises where out of range)."""
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < builtins.max(ndim, 1):
            raise ValueError(f"Invalid reduction axis: {a} for a tensor of rank {ndim}")
        out.append(int(a) % builtins.max(ndim, 1))
    return tuple(out)


# -- moving values: one gather of positions --------------------------------------------------------------------


def _moved(x, fn):
    """fn (a NumPy function that only moves or repeats values) applied to x: a gather of x's values at the
    positions fn gives for an array of positions (differentiable), NumPy's own for integer tensors."""
    x = _t(x)
    if x.fmt is None:
        return _out(np.ascontiguousarray(fn(storage(x))), x.dtype)
    pos = fn(np.arange(x.size, dtype=np.int64).reshape(x.shape))
    return _as_face(apply("getitem", apply("reshape", x, shape=(-1,)), index=np.asarray(pos)))


def _gather_flat(x, pos):
    """x's values (flattened) at positions pos (an int array of any shape)."""
    if x.fmt is None:
        return _out(storage(x).reshape(-1)[pos], x.dtype)
    return _as_face(apply("getitem", apply("reshape", x, shape=(-1,)), index=np.asarray(pos, np.int64)))


# -- elementwise -----------------------------------------------------------------------------------------------


def _float_unary(op, name):
    def fn(x):
        x = _t(x)
        return _as_face(apply(op, x if _is_float(x.dtype) else _t(x, FLOATX)))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name} of x, elementwise (integer inputs in float32)."
    return fn


exp, log, sqrt, sin, cos, tan = (_float_unary(o, n) for o, n in [("exp", "exp"), ("log", "log"),
                                 ("sqrt", "sqrt"), ("sin", "sin"), ("cos", "cos"), ("tan", "tan")])
tanh, arcsin, arccos, arctan = (_float_unary(o, n) for o, n in [("tanh", "tanh"), ("asin", "arcsin"),
                                ("acos", "arccos"), ("atan", "arctan")])
sinh, cosh, arcsinh, arccosh, arctanh = (_float_unary(o, n) for o, n in [
    ("sinh", "sinh"), ("cosh", "cosh"), ("asinh", "arcsinh"), ("acosh", "arccosh"), ("atanh", "arctanh")])
log1p, expm1, log2, log10, exp2 = (_float_unary(o, n) for o, n in [
    ("log1p", "log1p"), ("expm1", "expm1"), ("log2", "log2"), ("log10", "log10"), ("exp2", "exp2")])


def reciprocal(x):
    """1 / x, elementwise (floating x only, as TensorFlow's kernel)."""
    x = _t(x)
    if not _is_float(x.dtype):
        raise TypeError(f"reciprocal has no kernel for {x.dtype} inputs")
    return _as_face(apply("reciprocal", x))


def cbrt(x):
    """The cube root of x, elementwise (sign kept)."""
    x = _t(x)
    if not _is_float(x.dtype):
        x = _t(x, FLOATX)
    return multiply(sign(x), power(abs(x), 1.0 / 3.0))


def deg2rad(x):
    """x degrees in radians."""
    x = _t(x)
    return multiply(x if _is_float(x.dtype) else _t(x, FLOATX), math.pi / 180.0)


def rad2deg(x):
    """x radians in degrees."""
    x = _t(x)
    return multiply(x if _is_float(x.dtype) else _t(x, FLOATX), 180.0 / math.pi)


def _same_dtype_unary(op, np_fn, name, doc):
    def fn(x):
        x = _t(x)
        if x.fmt is None:
            return _out(np_fn(storage(x)), x.dtype)
        return _as_face(apply(op, x))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


absolute = _same_dtype_unary("abs", np.abs, "absolute", "|x|, elementwise, in x's dtype.")
abs = _same_dtype_unary("abs", np.abs, "abs", "|x|, elementwise, in x's dtype.")
negative = _same_dtype_unary("neg", np.negative, "negative", "-x, elementwise, in x's dtype.")
sign = _same_dtype_unary("sign", np.sign, "sign", "The sign of x (-1, 0, 1), in x's dtype.")
fabs = absolute


def square(x):
    """x * x, elementwise (bool inputs as int32)."""
    x = _t(x)
    if str(x.dtype) == "bool":
        x = _t(x, "int32")
    return multiply(x, x)


def _rounding(op, name):
    def fn(x):
        x = _t(x)
        if x.fmt is None:
            x = _t(x, FLOATX)
        return _as_face(apply(op, x))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name} of x, elementwise (integer inputs in float32)."
    return fn


floor, ceil = _rounding("floor", "floor"), _rounding("ceil", "ceil")


def trunc(x):
    """x rounded toward zero, in x's dtype (integers unchanged)."""
    x = _t(x)
    return x if x.fmt is None else _as_face(apply("trunc", x))


def round(x, decimals=0):
    """x rounded half to even to `decimals` decimals, in x's dtype."""
    x = _t(x)
    if x.fmt is None:
        if decimals >= 0:
            return x
        f = 10 ** (-decimals)
        return _out(np.round(storage(x) / f) * f, x.dtype)
    if decimals == 0:
        return _as_face(apply("round", x))
    return _as_face(apply("round_decimals", x, decimals=decimals))


def _predicate(np_fn, name, doc):
    def fn(x):
        x = _t(x)
        return _out(np_fn(_np(x)), "bool")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


isnan = _predicate(np.isnan, "isnan", "Whether x is NaN, elementwise.")
isinf = _predicate(np.isinf, "isinf", "Whether x is infinite, elementwise.")
isfinite = _predicate(np.isfinite, "isfinite", "Whether x is finite, elementwise.")
isneginf = _predicate(np.isneginf, "isneginf", "Whether x is -inf, elementwise.")
isposinf = _predicate(np.isposinf, "isposinf", "Whether x is +inf, elementwise.")
signbit = _predicate(np.signbit, "signbit", "Whether x's sign bit is set, elementwise.")


def isreal(x):
    """True everywhere: minifp has no complex dtype."""
    return _out(np.ones(_t(x).shape, bool), "bool")


def _binary(op, np_fn, name, doc, float_only=False):
    def fn(x1, x2):
        dtype = result_type(_dtype(x1), _dtype(x2))
        if float_only and not _is_float(dtype):
            dtype = FLOATX
        if dtype == "bool":     # TensorFlow has no bool kernel for arithmetic
            raise TypeError(f"{name} has no kernel for bool inputs")
        a, b = _t(x1, dtype), _t(x2, dtype)
        if not _is_float(dtype):
            with np.errstate(all="ignore"):
                return _out(np_fn(storage(a), storage(b)), dtype)
        return _as_face(apply(op, a, b))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


add = _binary("add", np.add, "add", "x1 + x2 with Keras's dtype promotion.")
subtract = _binary("sub", np.subtract, "subtract", "x1 - x2 with Keras's dtype promotion.")
multiply = _binary("mul", np.multiply, "multiply", "x1 * x2 with Keras's dtype promotion.")
maximum = _binary("maximum", np.maximum, "maximum", "The larger of x1 and x2, elementwise.")
minimum = _binary("minimum", np.minimum, "minimum", "The smaller of x1 and x2, elementwise.")
fmax, fmin = maximum, minimum
arctan2 = _binary("atan2", None, "arctan2", "The angle of (x2, x1), elementwise.", float_only=True)
hypot = _binary("hypot", None, "hypot", "sqrt(x1**2 + x2**2), elementwise.", float_only=True)
logaddexp = _binary("logaddexp", None, "logaddexp", "log(exp(x1) + exp(x2)), elementwise.", float_only=True)
logaddexp2 = _binary("logaddexp2", None, "logaddexp2", "log2(2**x1 + 2**x2), elementwise.", float_only=True)



def divide(x1, x2):
    """x1 / x2 (true division; integer inputs give float32)."""
    dtype = result_type(_dtype(x1), _dtype(x2), float)
    return _as_face(apply("div", _t(x1, dtype), _t(x2, dtype)))


true_divide = divide


def divide_no_nan(x1, x2):
    """x1 / x2, and 0 where x2 is 0."""
    dtype = result_type(_dtype(x1), _dtype(x2), float)
    a, b = _t(x1, dtype), _t(x2, dtype)
    zero = equal(b, 0)
    safe = where(zero, _t(1.0, dtype), b)
    return where(zero, _t(0.0, dtype), _as_face(apply("div", a, safe)))


def _division(x1, x2, integer_fn, op, bool_as=None):
    """A division family member with Keras's dtype promotion: NumPy's integer_fn on integers (wrapping as the
    backends do), the engine op `op` on floats; bools computed as bool_as where given."""
    dtype = result_type(_dtype(x1), _dtype(x2))
    if dtype == "bool" and bool_as:
        dtype = bool_as
    a, b = _t(x1, dtype), _t(x2, dtype)
    if not _is_float(dtype):
        with np.errstate(all="ignore"):
            return _out(integer_fn(storage(a), storage(b)), dtype)
    return _as_face(apply(op, a, b))


def floor_divide(x1, x2):
    """floor(x1 / x2) with Keras's dtype promotion (integer inputs stay integers)."""
    return _division(x1, x2, np.floor_divide, "div_floor")


def mod(x1, x2):
    """x1 mod x2 with the divisor's sign (Python's %)."""
    return _division(x1, x2, np.mod, "remainder", bool_as="int32")


def fmod(x1, x2):
    """x1 mod x2 with the dividend's sign (C's fmod)."""
    return _division(x1, x2, np.fmod, "fmod", bool_as="int32")


def power(x1, x2):
    """x1 ** x2 with Keras's dtype promotion."""
    dtype = result_type(_dtype(x1), _dtype(x2))
    a, b = _t(x1, dtype), _t(x2, dtype)
    if not _is_float(dtype):
        with np.errstate(all="ignore"):
            return _out(np.power(storage(a), storage(b)), dtype)
    return _as_face(apply("pow", a, b))


def heaviside(x1, x2):
    """0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0."""
    dtype = result_type(_dtype(x1), _dtype(x2))
    if not _is_float(dtype):
        dtype = FLOATX
    a, b = _t(x1, dtype), _t(x2, dtype)
    return where(less(a, 0), _t(0.0, dtype), where(equal(a, 0), b, _t(1.0, dtype)))


def nextafter(x1, x2):
    """The next float64 after x1 towards x2, in the promoted dtype (Keras's: an unchanged half value)."""
    dtype = result_type(_dtype(x1), _dtype(x2), float)
    a, b = _t(x1, dtype), _t(x2, dtype)
    step = _out(np.nextafter(_np(a).astype(np.float64), _np(b).astype(np.float64)), dtype)
    # x1 plus a constant step: the gradient flows to x1 unchanged (TensorFlow's), none to x2
    return add(a, _out(np.nan_to_num(_np(step) - _np(a)), dtype))


def _compare(op, np_fn, name):
    def fn(x1, x2):
        dtype = result_type(_dtype(x1), _dtype(x2))
        a, b = _t(x1, dtype), _t(x2, dtype)
        if not _is_float(dtype):
            return _out(np_fn(storage(a), storage(b)), "bool")
        return _as_face(apply(op, a, b))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"x1 {name.replace('_', ' ')} x2, elementwise, as bools."
    return fn


equal, not_equal = _compare("eq", np.equal, "equal"), _compare("ne", np.not_equal, "not_equal")
less, less_equal = _compare("lt", np.less, "less"), _compare("le", np.less_equal, "less_equal")
greater, greater_equal = _compare("gt", np.greater, "greater"), _compare("ge", np.greater_equal, "greater_equal")


def _logical(np_fn, name):
    def fn(x1, x2):
        return _out(np_fn(_np(_t(x1)) != 0, _np(_t(x2)) != 0), "bool")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name.split('_')[1]} of x1 and x2 as truth values, elementwise."
    return fn


logical_and, logical_or = _logical(np.logical_and, "logical_and"), _logical(np.logical_or, "logical_or")
logical_xor = _logical(np.logical_xor, "logical_xor")


def logical_not(x):
    """not x as a truth value, elementwise."""
    return _out(_np(_t(x)) == 0, "bool")


# -- reductions ------------------------------------------------------------------------------------------------


def _sum_dtype(dtype):
    return {"bool": "int32", "int8": "int32", "int16": "int32", "uint8": "uint32", "uint16": "uint32"}.get(dtype,
                                                                                                           dtype)


def sum(x, axis=None, keepdims=False):
    """The sum over axis (all by default); bool and small integers sum into int32."""
    x = _t(x)
    axes = _axis(axis, x.ndim)
    if x.fmt is None:
        return _out(np.sum(storage(x), axis=axes, keepdims=keepdims), _sum_dtype(str(x.dtype)))
    return _as_face(apply("sum", x, axis=axes, keepdims=keepdims))


def prod(x, axis=None, keepdims=False, dtype=None):
    """The product over axis (all by default)."""
    x = _t(x)
    axes = _axis(axis, x.ndim)
    out_dtype = str(as_dtype(dtype)) if dtype is not None else _sum_dtype(str(x.dtype))
    if not _is_float(out_dtype):
        return _out(np.prod(_np(x), axis=axes, keepdims=keepdims), out_dtype)
    return _as_face(apply("prod", _t(x, out_dtype), axis=axes, keepdims=keepdims))


def _float_input(x):
    x = _t(x)
    return x if _is_float(x.dtype) else _t(x, FLOATX)


def mean(x, axis=None, keepdims=False):
    """The mean over axis (all by default); integer inputs give float32."""
    x = _float_input(x)
    return _as_face(apply("mean", x, axis=_axis(axis, x.ndim), keepdims=keepdims))


def var(x, axis=None, keepdims=False):
    """The (biased) variance over axis (all by default); integer inputs give float32."""
    x = _float_input(x)
    return _as_face(apply("var", x, axis=_axis(axis, x.ndim), correction=0, keepdims=keepdims))


def std(x, axis=None, keepdims=False):
    """The (biased) standard deviation over axis (all by default)."""
    return sqrt(var(x, axis=axis, keepdims=keepdims))


def max(x, axis=None, keepdims=False, initial=None):
    """The largest value over axis (all by default), at least `initial` where given."""
    x = _t(x)
    axes = _axis(axis, x.ndim)
    if x.size == 0 and initial is None:
        raise ValueError("Cannot compute the max of an empty tensor.")
    if x.fmt is None:
        out = _out(np.max(storage(x), axis=axes, keepdims=keepdims), x.dtype)
    else:
        out = _as_face(apply("max", x, axis=axes, keepdims=keepdims))
    return out if initial is None else maximum(out, _t(initial, x.dtype))


def min(x, axis=None, keepdims=False, initial=None):
    """The smallest value over axis (all by default), at most `initial` where given."""
    x = _t(x)
    axes = _axis(axis, x.ndim)
    if x.size == 0 and initial is None:
        raise ValueError("Cannot compute the min of an empty tensor.")
    if x.fmt is None:
        out = _out(np.min(storage(x), axis=axes, keepdims=keepdims), x.dtype)
    else:
        out = _as_face(apply("neg", apply("max", apply("neg", x), axis=axes, keepdims=keepdims)))
    return out if initial is None else minimum(out, _t(initial, x.dtype))


amax, amin = max, min


def all(x, axis=None, keepdims=False):
    """Whether every value over axis (all by default) is nonzero."""
    x = _t(x)
    return _out(np.all(_np(x) != 0, axis=_axis(axis, x.ndim), keepdims=keepdims), "bool")


def any(x, axis=None, keepdims=False):
    """Whether any value over axis (all by default) is nonzero."""
    x = _t(x)
    return _out(np.any(_np(x) != 0, axis=_axis(axis, x.ndim), keepdims=keepdims), "bool")


def _arg(np_fn):
    def fn(x, axis=None, keepdims=False):
        x = _t(x)
        if isinstance(axis, (tuple, list)):
            raise TypeError(f"{np_fn.__name__} takes one axis, got {axis!r}")
        v = _np(x)
        if v.dtype.kind == "f":     # NaNs never win a comparison in TensorFlow's kernel
            v = np.where(np.isnan(v), -np.inf if np_fn is np.argmax else np.inf, v)
        if axis is None:
            out = np_fn(v.reshape(-1))
            return _out(np.reshape(out, (1,) * x.ndim) if keepdims else out, "int32")
        ax = _axis(axis, x.ndim)[0]
        return _out(np_fn(v, axis=ax, keepdims=keepdims), "int32")
    fn.__name__ = fn.__qualname__ = np_fn.__name__
    fn.__doc__ = f"The index of the first {np_fn.__name__[3:]} value over axis (of the flattened x by default), int32."
    return fn


argmax, argmin = _arg(np.argmax), _arg(np.argmin)


def count_nonzero(x, axis=None):
    """The number of nonzero values over axis (all by default), int32."""
    x = _t(x)
    return _out(np.count_nonzero(_np(x), axis=_axis(axis, x.ndim)), "int32")


def _nan_to_zero(x):
    return where(isnan(x), _t(0.0, x.dtype), x) if _is_float(x.dtype) else x


def nansum(x, axis=None, keepdims=False):
    """The sum over axis, NaNs counted as zero."""
    x = _t(x)
    return sum(_nan_to_zero(x), axis=axis, keepdims=keepdims)


def nanmean(x, axis=None, keepdims=False):
    """The mean over axis of the values that are not NaN."""
    x = _float_input(x)
    count = sum(_t(logical_not(isnan(x)), x.dtype), axis=axis, keepdims=keepdims)
    return divide(sum(_nan_to_zero(x), axis=axis, keepdims=keepdims), count)


def average(x, axis=None, weights=None):
    """The mean over axis, weighted by `weights` (x's shape, or 1-D along a single axis)."""
    x = _t(x)
    if weights is None:
        return mean(x, axis=axis)
    w = _t(weights)
    dtype = result_type(x.dtype, w.dtype, float)
    x, w = _t(x, dtype), _t(w, dtype)
    if w.ndim == 1 and x.ndim > 1 and axis is not None:
        ax = _axis(axis, x.ndim)[0]
        if w.shape[0] != x.shape[ax]:
            raise ValueError("Length of weights not compatible with specified axis.")
        w = reshape(w, tuple(-1 if i == ax else 1 for i in range(x.ndim)))
        return divide(sum(multiply(x, w), axis=axis), sum(w))
    return divide(sum(multiply(x, w), axis=axis), sum(broadcast_to(w, x.shape), axis=axis))


def _quantiles(x, q, axis, keepdims, skip_nan=False):
    """Linear interpolation between the sorted neighbours (NumPy's default), a gather of x's own values and so
    differentiable; skip_nan: over each row's values that are not NaN (NaN sorts last), NaN where all are."""
    x = _float_input(x)
    qs = np.asarray(_np(_t(q)) if isinstance(q, _EngineTensor) else q, np.float64)
    if axis is None:
        xs, ax = reshape(x, (-1,)), 0
    else:
        ax = _axis(axis, x.ndim)
        if len(ax) > 1:
            rest = [i for i in range(x.ndim) if i not in ax]
            xs = reshape(transpose(x, rest + list(ax)), tuple(x.shape[i] for i in rest) + (-1,))
            ax = len(rest)
        else:
            xs, ax = x, ax[0]
    s = sort(xs, axis=ax)
    vals = np.sort(_np(xs), axis=ax)
    n = (np.sum(~np.isnan(vals), axis=ax, keepdims=True) if skip_nan
         else np.full([1 if i == ax else d for i, d in enumerate(vals.shape)], vals.shape[ax]))
    outs = []
    for qq in qs.reshape(-1):
        pos = qq * np.maximum(n - 1, 0)
        lo, hi = np.floor(pos).astype(np.int64), np.ceil(pos).astype(np.int64)
        a, b = take_along_axis(s, lo, axis=ax), take_along_axis(s, hi, axis=ax)
        out = add(a, multiply(subtract(b, a), _out(pos - lo, x.dtype)))
        if skip_nan:
            out = where(_out(n == 0, "bool"), _t(float("nan"), x.dtype), out)
        outs.append(squeeze(out, axis=ax))
    out = stack(outs) if qs.ndim else outs[0]
    if keepdims:
        for a in sorted(range(x.ndim) if axis is None else _axis(axis, x.ndim)):
            out = expand_dims(out, a + (1 if qs.ndim else 0))
    return out


def quantile(x, q, axis=None, method="linear", keepdims=False):
    """The q-th quantiles (q in [0, 1]) over axis, by linear interpolation."""
    return _quantiles(x, q, axis, keepdims)


def percentile(x, q, axis=None, method="linear", keepdims=False):
    """The q-th percentiles (q in [0, 100]) over axis."""
    qv = np.asarray(_np(_t(q)) if isinstance(q, _EngineTensor) else q, np.float64) / 100.0
    return _quantiles(x, qv, axis, keepdims)


def median(x, axis=None, keepdims=False):
    """The median over axis (all by default)."""
    return _quantiles(x, 0.5, axis, keepdims)


def ptp(x, axis=None, keepdims=False):
    """max - min over axis."""
    return subtract(max(x, axis=axis, keepdims=keepdims), min(x, axis=axis, keepdims=keepdims))


def _cumulative(op, np_fn, name):
    def fn(x, axis=None, dtype=None):
        x = _t(x)
        if dtype is not None:
            x = _t(x, as_dtype(dtype))
        elif str(x.dtype) == "bool":
            x = _t(x, "int32")
        if axis is None:
            x, axis = reshape(x, (-1,)), 0
        ax = _axis(axis, x.ndim)[0]
        if x.fmt is None:
            return _out(np_fn(storage(x), axis=ax), x.dtype)
        return _as_face(apply(op, x, axis=ax))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"The cumulative {name[3:]} along axis (of the flattened x by default)."
    return fn


cumsum, cumprod = _cumulative("cumsum", np.cumsum, "cumsum"), _cumulative("cumprod", np.cumprod, "cumprod")


# -- creation --------------------------------------------------------------------------------------------------


def _shape_arg(shape):
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)


def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values in [start, stop) (Python ints give int32, floats float32)."""
    if dtype is None:
        dtype = result_type(*[_dtype(v) for v in (start, stop, step) if v is not None])
    dtype = str(as_dtype(dtype))
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    start, stop, step = (float(_np(_t(v))) if isinstance(v, _EngineTensor) else v for v in (start, stop, step))
    if step == 0 or (stop - start) * step < 0:
        raise ValueError(f"arange needs start <= stop for a positive step and start >= stop for a negative one "
                         f"(TensorFlow's range), got start={start}, stop={stop}, step={step}")
    vals = np.arange(start, stop, step, dtype=np.float64)
    return _out(vals, dtype)


def zeros(shape, dtype=None):
    """A tensor of zeros (float32 by default)."""
    return _out(np.zeros(_shape_arg(shape), np.float32), as_dtype(dtype or FLOATX))


def ones(shape, dtype=None):
    """A tensor of ones (float32 by default)."""
    return _out(np.ones(_shape_arg(shape), np.float32), as_dtype(dtype or FLOATX))


empty = zeros


def full(shape, fill_value, dtype=None):
    """A tensor of `fill_value` (float32 by default)."""
    dtype = as_dtype(dtype or FLOATX)
    return broadcast_to(_t(fill_value, dtype), _shape_arg(shape))


def eye(N, M=None, k=0, dtype=None):
    """A 2-D tensor with ones on diagonal k (float32 by default)."""
    return _out(np.eye(N, M, k=k, dtype=np.float32), as_dtype(dtype or FLOATX))


def identity(n, dtype=None):
    """The n x n identity (float32 by default)."""
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    """Ones at and below diagonal k (float32 by default)."""
    return _out(np.tri(N, M, k=k, dtype=np.float32), as_dtype(dtype or FLOATX))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """num evenly spaced values from start to stop (float32 by default)."""
    if dtype is None:
        dtype = result_type(_dtype(start), _dtype(stop), float)
    if axis == 0 and not retstep and builtins.any(isinstance(v, _EngineTensor) and v.fmt is not None
                                                   for v in (start, stop)):
        # start + fraction * (stop - start): differentiable in tensors start and stop
        a, b = _t(start, as_dtype(dtype)), _t(stop, as_dtype(dtype))
        frac = np.linspace(0.0, 1.0, num, endpoint=endpoint) if num else np.zeros(0)
        frac = _out(frac.reshape((num,) + (1,) * builtins.max(a.ndim, b.ndim)), as_dtype(dtype))
        return add(expand_dims(a, 0), multiply(frac, expand_dims(subtract(b, a), 0)))
    a = _np(_t(start)) if isinstance(start, _EngineTensor) else np.asarray(start, np.float64)
    b = _np(_t(stop)) if isinstance(stop, _EngineTensor) else np.asarray(stop, np.float64)
    vals, step = np.linspace(a.astype(np.float64), b.astype(np.float64), num, endpoint=endpoint, retstep=True,
                             axis=axis)
    out = _out(vals, as_dtype(dtype))
    return (out, _out(step, as_dtype(dtype))) if retstep else out


def logspace(start, stop, num=50, endpoint=True, base=10, dtype=None, axis=0):
    """num values spaced evenly on a log scale from base**start to base**stop."""
    if dtype is None:
        dtype = result_type(_dtype(start), _dtype(stop), float)
    vals = np.logspace(start, stop, num, endpoint=endpoint, base=base, axis=axis)
    return _out(vals, as_dtype(dtype))


def zeros_like(x, dtype=None):
    """Zeros of x's shape, in x's dtype by default."""
    x = _t(x)
    return _out(np.zeros(x.shape, np.float32), as_dtype(dtype or x.dtype))


def ones_like(x, dtype=None):
    """Ones of x's shape, in x's dtype by default."""
    x = _t(x)
    return _out(np.ones(x.shape, np.float32), as_dtype(dtype or x.dtype))


def full_like(x, fill_value, dtype=None):
    """fill_value in x's shape, in x's dtype by default."""
    x = _t(x)
    return broadcast_to(_t(fill_value, as_dtype(dtype or x.dtype)), x.shape)


empty_like = zeros_like


# -- shapes ----------------------------------------------------------------------------------------------------


def reshape(x, newshape):
    """x's values in the shape newshape (one entry may be -1)."""
    x = _t(x)
    shape = _shape_arg(newshape)
    if x.fmt is None:
        return _out(storage(x).reshape(shape), x.dtype)
    return _as_face(apply("reshape", x, shape=shape))


def transpose(x, axes=None):
    """x with its axes permuted (reversed by default)."""
    x = _t(x)
    if axes is not None:
        axes = tuple(int(a) % builtins.max(x.ndim, 1) for a in axes)
        if sorted(axes) != list(range(x.ndim)):
            raise ValueError(f"axes {axes} is not a permutation of the axes of a rank-{x.ndim} tensor")
    if x.fmt is None:
        return _out(np.ascontiguousarray(np.transpose(storage(x), axes)), x.dtype)
    return _as_face(apply("transpose", x, axes=axes))


def expand_dims(x, axis):
    """x with new axes of size 1 at axis (an int or a tuple)."""
    x = _t(x)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    shape = np.expand_dims(np.empty(x.shape, bool), axes).shape
    return reshape(x, shape)


def squeeze(x, axis=None):
    """x without its axes of size 1 (or only those of axis, which must have size 1)."""
    x = _t(x)
    shape = np.squeeze(np.empty(x.shape, bool), axis=axis).shape
    return reshape(x, shape)


def ravel(x):
    """x flattened."""
    return reshape(x, (-1,))


def flip(x, axis=None):
    """x with the order of its values reversed along axis (all axes by default)."""
    return _moved(x, functools.partial(np.flip, axis=axis))


def fliplr(x):
    """x reversed along axis 1."""
    return _moved(x, np.fliplr)


def flipud(x):
    """x reversed along axis 0."""
    return _moved(x, np.flipud)


def roll(x, shift, axis=None):
    """x's values shifted by `shift` along axis (of the flattened x by default)."""
    return _moved(x, functools.partial(np.roll, shift=shift, axis=axis))


def rot90(array, k=1, axes=(0, 1)):
    """array rotated by 90 degrees k times in the plane of axes."""
    return _moved(array, functools.partial(np.rot90, k=k, axes=tuple(axes)))


def moveaxis(x, source, destination):
    """x with axes source moved to destination."""
    x = _t(x)
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [s % x.ndim for s in src]
    dst = [d % x.ndim for d in dst]
    rest = [i for i in range(x.ndim) if i not in src]
    perm = [None] * x.ndim
    for s, d in zip(src, dst):
        perm[d] = s
    it = iter(rest)
    perm = [p if p is not None else next(it) for p in perm]
    return transpose(x, perm)


def swapaxes(x, axis1, axis2):
    """x with axes axis1 and axis2 exchanged."""
    x = _t(x)
    perm = list(range(x.ndim))
    a, b = axis1 % x.ndim, axis2 % x.ndim
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(x, perm)


def broadcast_to(x, shape):
    """x broadcast to `shape`."""
    x = _t(x)
    shape = _shape_arg(shape)
    np.broadcast_shapes(x.shape, shape)
    if np.broadcast_shapes(x.shape, shape) != shape:
        raise ValueError(f"Cannot broadcast a tensor of shape {x.shape} to {shape}")
    if x.fmt is None:
        return _out(np.ascontiguousarray(np.broadcast_to(storage(x), shape)), x.dtype)
    return _as_face(apply("broadcast_to", x, shape=shape))


def tile(x, repeats):
    """x repeated `repeats` times along each axis."""
    return _moved(x, functools.partial(np.tile, reps=repeats))


def repeat(x, repeats, axis=None):
    """Each value of x repeated `repeats` times along axis (of the flattened x by default)."""
    reps = _np(_t(repeats)) if isinstance(repeats, _EngineTensor) else repeats
    return _moved(x, functools.partial(np.repeat, repeats=reps, axis=axis))


def _join_dtype(xs):
    return result_type(*[_dtype(x) for x in xs])


def concatenate(xs, axis=0):
    """The tensors of xs joined along axis."""
    dtype = _join_dtype(xs)
    xs = [_t(x, dtype) for x in xs]
    if axis is None:
        raise ValueError("concatenate needs an axis: Keras does not flatten the tensors for axis=None")
    if not _is_float(dtype):
        return _out(np.concatenate([storage(x) for x in xs], axis=axis), dtype)
    return _as_face(apply("concatenate", *xs, axis=axis))


def stack(x, axis=0):
    """The tensors of x stacked along a new axis."""
    xs = [_t(v) for v in x]
    if len({v.shape for v in xs}) > 1:
        raise ValueError(f"All input tensors must have the same shape, got {[v.shape for v in xs]}")
    nd = xs[0].ndim + 1
    ax = axis % nd
    return concatenate([expand_dims(v, ax) for v in xs], axis=ax)


def hstack(xs):
    """The tensors of xs joined along axis 1 (axis 0 for 1-D tensors)."""
    xs = [_t(x) for x in xs]
    return concatenate(xs, axis=0 if xs[0].ndim == 1 else 1)


def vstack(xs):
    """The tensors of xs (seen as at least 2-D) joined along axis 0."""
    return concatenate([reshape(x, (1, -1)) if _t(x).ndim < 2 else x for x in xs], axis=0)


def dstack(xs):
    """The tensors of xs (seen as at least 3-D) joined along axis 2."""
    xs = [_t(x) for x in xs]
    xs = [reshape(x, (1, -1, 1)) if x.ndim == 1 else expand_dims(x, -1) if x.ndim == 2 else x for x in xs]
    return concatenate(xs, axis=2)


def append(x1, x2, axis=None):
    """x2 appended to x1 along axis (both flattened by default)."""
    if axis is None:
        x1, x2, axis = reshape(x1, (-1,)), reshape(x2, (-1,)), 0
    return concatenate([x1, x2], axis=axis)


def _split_points(n, indices_or_sections, even):
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if even and n % k:
            raise ValueError("array split does not result in an equal division")
        size, extra = divmod(n, k)
        sizes = [size + 1] * extra + [size] * (k - extra)
        return list(np.cumsum(sizes)[:-1])
    return list(indices_or_sections)


def _split(x, indices_or_sections, axis, even):
    x = _t(x)
    ax = _axis(axis, x.ndim)[0]
    n = x.shape[ax]
    points = [int(p) for p in _split_points(n, indices_or_sections, even)]
    if builtins.any(p > n or p < 0 for p in points):
        raise ValueError(f"split indices {points} fall outside an axis of size {n}")
    bounds = [0] + points
    bounds.append(n)
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        index = (slice(None),) * ax + (slice(lo, builtins.max(lo, hi)),)
        out.append(get_item(x, index))
    return out


def split(x, indices_or_sections, axis=0):
    """x split into equal sections or at indices along axis (a list of tensors)."""
    return _split(x, indices_or_sections, axis, True)


def array_split(x, indices_or_sections, axis=0):
    """x split into sections (the first ones one longer where they do not divide) along axis."""
    return _split(x, indices_or_sections, axis, False)


def hsplit(x, indices_or_sections):
    """split along axis 1 (axis 0 for 1-D)."""
    return split(x, indices_or_sections, axis=0 if _t(x).ndim == 1 else 1)


def vsplit(x, indices_or_sections):
    """split along axis 0."""
    return split(x, indices_or_sections, axis=0)


def dsplit(x, indices_or_sections):
    """split along axis 2."""
    return split(x, indices_or_sections, axis=2)


def get_item(x, key):
    """x[key] (NumPy's basic and advanced indexing)."""
    x = _t(x)
    if isinstance(key, _EngineTensor):
        key = _np(_t(key)) if str(_t(key).dtype) == "bool" else storage(_t(key))
    if x.fmt is None:
        return _out(np.ascontiguousarray(storage(x)[key]), x.dtype)
    return _as_face(apply("getitem", x, index=key))


def pad(x, pad_width, mode="constant", constant_values=None):
    """x padded by pad_width ((before, after) per axis, or one pair / int for all) in mode "constant"
    (constant_values, 0 by default), "reflect" or "symmetric"."""
    x = _t(x)
    if np.ndim(pad_width) == 0:
        raise ValueError(f"pad_width must give (before, after) per axis, got {pad_width!r}")
    width = np.broadcast_to(np.asarray(pad_width, np.int64), (x.ndim, 2))
    if mode not in ("constant", "reflect", "symmetric"):
        raise ValueError(f"Invalid mode: {mode}. Expected one of 'constant', 'reflect', 'symmetric'.")
    if mode != "constant":
        if constant_values is not None:
            raise ValueError("Argument `constant_values` can only be provided when `mode == 'constant'`.")
        return _moved(x, lambda p: np.pad(p, width, mode=mode))
    value = _t(0 if constant_values is None else constant_values, x.dtype)
    pos = np.pad(np.arange(x.size, dtype=np.int64).reshape(x.shape), width, constant_values=x.size)
    flat = concatenate([reshape(x, (-1,)), reshape(value, (1,))])
    return _gather_flat(flat, pos)


def diag(x, k=0):
    """The diagonal k of a 2-D x, or a 2-D tensor with 1-D x on diagonal k."""
    x = _t(x)
    if x.ndim not in (1, 2):
        raise ValueError(f"`x` must be 1d or 2d. Received: x.shape={x.shape}")
    if x.ndim == 2:
        return _moved(x, functools.partial(np.diag, k=k))
    n = x.shape[0] + builtins.abs(k)
    pos = np.diag(np.arange(x.size, dtype=np.int64) + 1, k=k) - 1
    zero = _t(0, x.dtype)
    flat = concatenate([reshape(x, (-1,)), reshape(zero, (1,))])
    pos = np.where(pos < 0, x.size, pos).reshape(n, n)
    return _gather_flat(flat, pos)


def diagonal(x, offset=0, axis1=0, axis2=1):
    """The diagonal `offset` over axes axis1, axis2 (moved last)."""
    return _moved(x, lambda p: np.diagonal(p, offset, axis1, axis2))


def diagflat(x, k=0):
    """The flattened x on diagonal k of a 2-D tensor."""
    return diag(reshape(x, (-1,)), k=k)


def trace(x, offset=0, axis1=0, axis2=1):
    """The sum of the diagonal `offset` (small integers sum into int32)."""
    return sum(diagonal(x, offset, axis1, axis2), axis=-1)


def _triangle(x, k, lower):
    x = _t(x)
    rows, cols = x.shape[-2:]
    keep = np.tri(rows, cols, k=k, dtype=bool) if lower else ~np.tri(rows, cols, k=k - 1, dtype=bool)
    return where(_out(keep, "bool"), x, _t(0, x.dtype))


def tril(x, k=0):
    """x with the values above diagonal k zeroed (on the last two axes)."""
    return _triangle(x, k, True)


def triu(x, k=0):
    """x with the values below diagonal k zeroed (on the last two axes)."""
    return _triangle(x, k, False)


def where(condition, x1=None, x2=None):
    """x1 where condition holds, else x2 (promoted together); the indices of nonzero values without them."""
    if x1 is None and x2 is None:
        return nonzero(condition)
    if x1 is None or x2 is None:
        raise ValueError("`x1` and `x2` either both should be `None` or both should have non-None value.")
    cond = _t(condition)
    if str(cond.dtype) != "bool":
        cond = _out(_np(cond) != 0, "bool")
    dtype = result_type(_dtype(x1), _dtype(x2))
    a, b = _t(x1, dtype), _t(x2, dtype)
    if not _is_float(dtype):
        return _out(np.where(storage(cond), storage(a), storage(b)), dtype)
    return _as_face(apply("where", cond, a, b))


def nonzero(x):
    """The indices of x's nonzero values, one int32 tensor per axis."""
    return tuple(_out(i, "int32") for i in np.nonzero(_np(_t(x))))


def _index_array(indices):
    return storage(_t(indices)) if isinstance(indices, _EngineTensor) else np.asarray(indices)


def take(x, indices, axis=None):
    """The values of x at `indices` along axis (of the flattened x by default); negative indices count back."""
    x = _t(x)
    idx = _index_array(indices).astype(np.int64)
    if axis is None:
        return _moved(x, lambda p: np.take(p.reshape(-1), idx))
    ax = _axis(axis, x.ndim)[0]
    return _moved(x, lambda p: np.take(p, idx, axis=ax))


def take_along_axis(x, indices, axis=None):
    """The values of x at `indices` along axis (indices broadcast against x's other axes)."""
    x = _t(x)
    idx = _index_array(indices).astype(np.int64)
    if axis is None:
        return _moved(x, lambda p: np.take_along_axis(p.reshape(-1), idx.reshape(-1), axis=0))
    ax = _axis(axis, x.ndim)[0]
    shape = list(np.broadcast_shapes(tuple(s for i, s in enumerate(x.shape) if i != ax),
                                     tuple(s for i, s in enumerate(idx.shape) if i != ax)))
    xs, ids = list(shape), list(shape)
    xs.insert(ax, x.shape[ax])
    ids.insert(ax, idx.shape[ax])
    idx = np.broadcast_to(idx, ids)
    return _moved(x, lambda p: np.take_along_axis(np.broadcast_to(p, xs), idx, axis=ax))


def sort(x, axis=-1):
    """x's values sorted ascending along axis."""
    x = _t(x)
    order = np.argsort(_np(x), axis=axis, kind="stable")
    return _moved(x, lambda p: np.take_along_axis(p, order, axis=axis))


def argsort(x, axis=-1):
    """The indices that sort x along axis, int32 (ties in order)."""
    return _out(np.argsort(_np(_t(x)), axis=axis, kind="stable"), "int32")


def argpartition(x, kth, axis=-1):
    """Indices that put the kth value in place along axis (NumPy's partition order), int32."""
    return _out(np.argpartition(_np(_t(x)), kth, axis=axis), "int32")


def clip(x, x_min, x_max):
    """x limited to [x_min, x_max] (bool inputs as int32)."""
    x = _t(x)
    if str(x.dtype) == "bool":
        x = _t(x, "int32")
    dtype = x.dtype
    if not _is_float(dtype) and builtins.any(isinstance(v, float) for v in (x_min, x_max)):
        raise TypeError(f"clip of a {dtype} tensor needs integer bounds, got {x_min!r}, {x_max!r}")
    if _is_float(dtype) and builtins.all(isinstance(v, (int, float)) for v in (x_min, x_max)) and x_min <= x_max:
        # one op: the gradient passes at the bounds too, as TensorFlow's and PyTorch's clip pass it
        return _as_face(apply("clamp", x, min=float(x_min), max=float(x_max)))
    return _t(maximum(minimum(x, x_max), x_min), dtype)     # x_min wins where x_min > x_max, as TensorFlow's


def searchsorted(sorted_sequence, values, side="left"):
    """Where values would be inserted into the 1-D sorted_sequence to keep it sorted, int32."""
    s = _t(sorted_sequence)
    if s.ndim != 1:
        raise ValueError("`searchsorted` only supports 1-D sorted sequences.")
    return _out(np.searchsorted(_np(s), _np(_t(values)), side=side), "int32")


def digitize(x, bins):
    """The index of the bin each value of x falls in, int32."""
    return _out(np.digitize(_np(_t(x)), _np(_t(bins))), "int32")


def isin(x1, x2, assume_unique=False, invert=False):
    """Whether each value of x1 is in x2."""
    return _out(np.isin(_np(_t(x1)), _np(_t(x2)), invert=invert), "bool")


def isclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    """Whether x1 and x2 are close, elementwise."""
    dtype = result_type(_dtype(x1), _dtype(x2))
    return _out(np.isclose(_np(_t(x1, dtype)), _np(_t(x2, dtype)), rtol=rtol, atol=atol, equal_nan=equal_nan),
                "bool")


def allclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    """Whether x1 and x2 are close everywhere."""
    return all(isclose(x1, x2, rtol=rtol, atol=atol, equal_nan=equal_nan))


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """x with NaN, +inf and -inf replaced (by 0 and the dtype's extremes by default)."""
    x = _t(x)
    if not _is_float(x.dtype):
        return x
    big = float(finfo(format_of(x.dtype)).max)
    x = where(isnan(x), _t(nan, x.dtype), x)
    x = where(isposinf(x), _t(big if posinf is None else posinf, x.dtype), x)
    return where(isneginf(x), _t(-big if neginf is None else neginf, x.dtype), x)


def bincount(x, weights=None, minlength=0, sparse=False):
    """The count of each value of the non-negative integers x (the sum of their weights where given)."""
    x = _t(x)
    v = storage(x)
    if weights is None:
        return _out(np.bincount(v.reshape(-1), minlength=minlength), "int32")
    w = _t(weights)
    return _out(np.bincount(v.reshape(-1), weights=_np(w).reshape(-1), minlength=minlength), w.dtype)


def diff(a, n=1, axis=-1):
    """The n-th differences along axis."""
    x = _t(a)
    ax = _axis(axis, x.ndim)[0]
    for _ in range(n):
        m = x.shape[ax]
        hi = get_item(x, (slice(None),) * ax + (slice(1, m),))
        lo = get_item(x, (slice(None),) * ax + (slice(0, builtins.max(m - 1, 0)),))
        x = subtract(hi, lo)
    return x


def meshgrid(*x, indexing="xy"):
    """Coordinate grids of the 1-D tensors x ("xy": the first two axes swapped, "ij": matrix indexing)."""
    xs = [_t(v) for v in x]
    shape = [v.size for v in xs]
    if indexing == "xy" and len(xs) > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, v in enumerate(xs):
        ax = i
        if indexing == "xy" and len(xs) > 1 and i < 2:
            ax = 1 - i
        view = [1] * len(xs)
        view[ax] = v.size
        out.append(broadcast_to(reshape(v, tuple(view)), tuple(shape)))
    return out


def size(x):
    """The number of values of x, an int32 tensor (as Keras's)."""
    return _out(_t(x).size, "int32")


def ndim(x):
    """The number of axes of x, an int64 tensor (as Keras's with TensorFlow)."""
    return _out(_t(x).ndim, "int64")


def copy(x):
    """A copy of x."""
    return _moved(x, np.copy)


def real(x):
    """x (minifp has no complex dtype)."""
    return _t(x)


def imag(x):
    """Zeros of x's shape and dtype (minifp has no complex dtype)."""
    return zeros_like(x)


conj = conjugate = real


def array(x, dtype=None):
    """x as a tensor (in dtype where given)."""
    return _t(x, as_dtype(dtype) if dtype is not None else None)


def select(condlist, choicelist, default=0):
    """The value of the first choice whose condition holds, elementwise (default where none does)."""
    out = default
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        out = where(cond, choice, out)
    return _t(out)


# -- products --------------------------------------------------------------------------------------------------


def _product_dtype(x1, x2):
    return result_type(_dtype(x1), _dtype(x2))


def matmul(x1, x2):
    """The matrix product of x1 and x2 (NumPy's broadcasting rules; float32 accumulation, one rounding)."""
    dtype = _product_dtype(x1, x2)
    a, b = _t(x1, dtype), _t(x2, dtype)
    if not _is_float(dtype):
        out_dtype = {"int8": "int32", "int16": "int32", "uint8": "int32", "bool": "int32"}.get(dtype, dtype)
        return _out(np.matmul(storage(a).astype(np.int64), storage(b).astype(np.int64)), out_dtype)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul does not accept scalars.")
    return _as_face(apply("matmul", a, b))


def dot(x1, x2):
    """NumPy's dot: a product over x1's last and x2's second-to-last axis (scalars multiply)."""
    a, b = _t(x1), _t(x2)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    if b.ndim <= 2:
        return matmul(a, b)
    return tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 2]))


def vdot(x1, x2):
    """The dot product of x1 and x2 flattened."""
    return matmul(reshape(x1, (-1,)), reshape(x2, (-1,)))


def inner(x1, x2):
    """The product over the last axes of x1 and x2."""
    a, b = _t(x1), _t(x2)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    return tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 1]))


def outer(x1, x2):
    """The outer product of x1 and x2 flattened."""
    return multiply(reshape(x1, (-1, 1)), reshape(x2, (1, -1)))


def tensordot(x1, x2, axes=2):
    """The sum of products over axes (an int: x1's last and x2's first ones; or two lists), one matmul."""
    a, b = _t(x1), _t(x2)
    if isinstance(axes, (int, np.integer)):
        ax_a, ax_b = list(range(a.ndim - axes, a.ndim)), list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, int) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, int) else list(ax_b)
    ax_a, ax_b = [i % a.ndim for i in ax_a], [i % b.ndim for i in ax_b]
    if [a.shape[i] for i in ax_a] != [b.shape[i] for i in ax_b]:
        raise ValueError(f"Shape mismatch for tensordot: {a.shape} and {b.shape} over axes {axes}")
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [i for i in range(b.ndim) if i not in ax_b]
    k = math.prod(a.shape[i] for i in ax_a)
    am = reshape(transpose(a, free_a + ax_a), (-1, k))
    bm = reshape(transpose(b, ax_b + free_b), (k, -1))
    return reshape(matmul(am, bm), tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b))


def einsum(subscripts, *operands):
    """Einstein summation over operands (`...` for leading axes); products of two operands are one matmul."""
    xs = [_t(x) for x in operands]
    dtype = result_type(*[x.dtype for x in xs])
    xs = [_t(x, dtype) for x in xs]
    spec = subscripts.replace(" ", "")
    lhs, _, rhs = spec.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(xs):
        raise ValueError(f"einsum: {len(ins)} operands in {subscripts!r}, got {len(xs)}")
    letters = "".join(sorted(set(c for c in lhs if c.isalpha())))
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in letters]
    nell = builtins.max([x.ndim - len(s.replace("...", "")) for s, x in zip(ins, xs) if "..." in s] or [0])
    ell = "".join(free[:nell])
    ins = [s.replace("...", ell[len(ell) - (x.ndim - len(s.replace("...", ""))):]) for s, x in zip(ins, xs)]
    if "->" not in spec:
        if ell:
            raise ValueError(f"einsum with '...' needs an explicit output ('->'), got {subscripts!r}")
        counts = {c: "".join(ins).count(c) for c in set("".join(ins))}
        rhs = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        rhs = rhs.replace("...", ell)
    for s, x in zip(ins, xs):
        if len(s) != x.ndim:
            raise ValueError(f"einsum: subscripts {s!r} do not match an operand of rank {x.ndim}")
    # Diagonals first (a letter repeated within one operand).
    for i, (s, x) in enumerate(zip(ins, xs)):
        while len(set(s)) < len(s):
            c = next(c for c in s if s.count(c) > 1)
            p, q = s.index(c), s.index(c, s.index(c) + 1)
            x = diagonal(x, 0, p, q)
            s = "".join(ch for j, ch in enumerate(s) if j not in (p, q)) + c
        ins[i], xs[i] = s, x
    while len(xs) > 1:
        (s1, a), (s2, b) = (ins[0], xs[0]), (ins[1], xs[1])
        later = set(rhs).union(*ins[2:])
        batch = [c for c in s1 if c in s2 and c in later]
        contract = [c for c in s1 if c in s2 and c not in later]
        only1 = [c for c in s1 if c not in s2]
        only2 = [c for c in s2 if c not in s1]
        a = _sum_letters(a, s1, [c for c in only1 if c not in later])
        only1 = [c for c in only1 if c in later]
        s1 = "".join(c for c in s1 if c in batch + contract + only1)
        b = _sum_letters(b, s2, [c for c in only2 if c not in later])
        only2 = [c for c in only2 if c in later]
        s2 = "".join(c for c in s2 if c in batch + contract + only2)
        sizes = {c: n for s, x in ((s1, a), (s2, b)) for c, n in zip(s, x.shape)}
        bsh = [builtins.max(a.shape[s1.index(c)], b.shape[s2.index(c)]) for c in batch]
        am = reshape(transpose(a, [s1.index(c) for c in batch + only1 + contract]),
                     tuple(bsh) + (math.prod(sizes[c] for c in only1), math.prod(sizes[c] for c in contract)))
        bm = reshape(transpose(b, [s2.index(c) for c in batch + contract + only2]),
                     tuple(bsh) + (math.prod(sizes[c] for c in contract), math.prod(sizes[c] for c in only2)))
        out = reshape(matmul(am, bm), tuple(bsh) + tuple(sizes[c] for c in only1 + only2))
        ins, xs = ["".join(batch + only1 + only2)] + ins[2:], [out] + xs[2:]
    s, x = ins[0], xs[0]
    x = _sum_letters(x, s, [c for c in s if c not in rhs])
    s = "".join(c for c in s if c in rhs)
    return transpose(x, [s.index(c) for c in rhs]) if s != rhs else x


def _sum_letters(x, s, letters):
    if not letters:
        return x
    return sum(x, axis=tuple(s.index(c) for c in letters))


def kron(x1, x2):
    """The Kronecker product of x1 and x2."""
    a, b = _t(x1), _t(x2)
    nd = builtins.max(a.ndim, b.ndim)
    a = reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = reshape(b, (1,) * (nd - b.ndim) + b.shape)
    ae = reshape(a, tuple(v for n in a.shape for v in (n, 1)))
    be = reshape(b, tuple(v for n in b.shape for v in (1, n)))
    return reshape(multiply(ae, be), tuple(p * q for p, q in zip(a.shape, b.shape)))


def cross(x1, x2, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 3-vectors along the last axes."""
    a, b = _t(x1), _t(x2)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    comp = lambda v, i: take(v, i, axis=-1)     # noqa: E731
    c = stack([subtract(multiply(comp(a, 1), comp(b, 2)), multiply(comp(a, 2), comp(b, 1))),
               subtract(multiply(comp(a, 2), comp(b, 0)), multiply(comp(a, 0), comp(b, 2))),
               subtract(multiply(comp(a, 0), comp(b, 1)), multiply(comp(a, 1), comp(b, 0)))], axis=-1)
    return moveaxis(c, -1, axisc)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of y along axis by the trapezoidal rule."""
    y = _float_input(y)
    ax = _axis(axis, y.ndim)[0]
    n = y.shape[ax]
    hi = get_item(y, (slice(None),) * ax + (slice(1, n),))
    lo = get_item(y, (slice(None),) * ax + (slice(0, n - 1),))
    mids = multiply(add(hi, lo), 0.5)
    if x is None:
        return multiply(sum(mids, axis=ax), dx)
    return sum(multiply(mids, diff(x, axis=axis)), axis=ax)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of the 1-D x."""
    x = _t(x)
    n = x.shape[0] if N is None else N
    powers = np.arange(n) if increasing else np.arange(n - 1, -1, -1)
    return power(reshape(x, (-1, 1)), _out(powers, "int32" if not _is_float(x.dtype) else x.dtype))


def correlate(x1, x2, mode="valid"):
    """The cross-correlation of the 1-D x1 and x2 (mode "valid", "same" or "full")."""
    a, b = _float_input(x1), _float_input(x2)
    dtype = result_type(a.dtype, b.dtype)
    a, b = _t(a, dtype), _t(b, dtype)
    n, m = a.shape[0], b.shape[0]
    if mode == "full":
        a, n = pad(a, ((m - 1, m - 1),)), n + 2 * (m - 1)
    elif mode == "same":
        left = (m - 1) // 2
        a, n = pad(a, ((left, m - 1 - left),)), n + m - 1
    pos = np.arange(n - m + 1)[:, None] + np.arange(m)[None, :]
    return matmul(_gather_flat(a, pos), b)


def corrcoef(x):
    """The correlation coefficients of the rows of x."""
    x = _float_input(x)
    c = subtract(x, mean(x, axis=-1, keepdims=True))
    cov = matmul(c, transpose(c))
    d = sqrt(diagonal(cov))
    return divide(divide(cov, reshape(d, (-1, 1))), reshape(d, (1, -1)))


def unravel_index(indices, shape):
    """The coordinates of flat indices in an array of `shape` (a tuple of tensors, the indices' dtype)."""
    idx = _t(indices)
    return tuple(_out(c, idx.dtype) for c in np.unravel_index(storage(idx), tuple(shape)))


def histogram(x, bins=10, range=None):
    """(counts, bin edges) of x's values in `bins` equal bins over range (x's min and max by default)."""
    x = _t(x)
    counts, edges = np.histogram(_np(x), bins=bins, range=range)
    return _out(counts, x.dtype), _out(edges, x.dtype)



# -- NaN-skipping reductions and the rest ----------------------------------------------------------------------


def _nan_filled(x, value):
    return where(isnan(x), _t(value, x.dtype), x) if _is_float(x.dtype) else x


def _nan_extreme(pick, fill, name):
    def fn(x, axis=None, keepdims=False):
        x = _t(x)
        if not _is_float(x.dtype):
            return (any if pick is max else all)(x, axis, keepdims) if str(x.dtype) == "bool" else \
                pick(x, axis=axis, keepdims=keepdims)
        out = pick(_nan_filled(x, fill), axis=axis, keepdims=keepdims)
        return where(all(isnan(x), axis=axis, keepdims=keepdims), _t(float("nan"), x.dtype), out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"The {name[3:]} over axis ignoring NaNs (NaN where every value is NaN)."
    return fn


nanmax = _nan_extreme(max, float("-inf"), "nanmax")
nanmin = _nan_extreme(min, float("inf"), "nanmin")


def _nan_arg(pick, fill, name):
    def fn(x, axis=None, keepdims=False):
        x = _t(x)
        if not _is_float(x.dtype):
            return pick(x, axis=axis, keepdims=keepdims)
        out = pick(_nan_filled(x, fill), axis=axis, keepdims=keepdims)
        nan_all = np.all(np.isnan(_np(x)), axis=axis, keepdims=keepdims)
        return _out(np.where(nan_all, -1, storage(out)), "int32")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"The index of the {name[6:]} value over axis ignoring NaNs (-1 where every value is NaN), int32."
    return fn


nanargmax = _nan_arg(argmax, float("-inf"), "nanargmax")
nanargmin = _nan_arg(argmin, float("inf"), "nanargmin")


def nanprod(x, axis=None, keepdims=False):
    """The product over axis, NaNs counted as one."""
    return prod(_nan_filled(_t(x), 1.0), axis=axis, keepdims=keepdims)


def nancumsum(x, axis=None, dtype=None):
    """The cumulative sum along axis, NaNs counted as zero."""
    return cumsum(_nan_filled(_t(x), 0.0), axis=axis, dtype=dtype)


def nancumprod(x, axis=None, dtype=None):
    """The cumulative product along axis, NaNs counted as one."""
    return cumprod(_nan_filled(_t(x), 1.0), axis=axis, dtype=dtype)


def nanvar(x, axis=None, keepdims=False):
    """The (biased) variance over axis of the values that are not NaN."""
    x = _float_input(x)
    mu = nanmean(x, axis=axis, keepdims=True)
    nan = isnan(x)      # NaNs leave the squares before they are taken: their gradient stays 0, not NaN
    sq = where(nan, _t(0.0, x.dtype), square(subtract(_nan_filled(x, 0.0), mu)))
    count = sum(_t(logical_not(nan), x.dtype), axis=axis, keepdims=keepdims)
    return divide(sum(sq, axis=axis, keepdims=keepdims), count)


def nanstd(x, axis=None, keepdims=False):
    """The (biased) standard deviation over axis of the values that are not NaN."""
    return sqrt(nanvar(x, axis=axis, keepdims=keepdims))


def nanquantile(x, q, axis=None, method="linear", keepdims=False):
    """The q-th quantiles over axis of the values that are not NaN (linear interpolation; NaN where all are)."""
    if not _is_float(_t(x).dtype):
        raise TypeError(f"nanquantile needs a floating tensor, got {_t(x).dtype}")
    return _quantiles(x, q, axis, keepdims, skip_nan=True)


def nanpercentile(x, q, axis=None, method="linear", keepdims=False):
    """The q-th percentiles over axis of the values that are not NaN."""
    qv = np.asarray(_np(_t(q)) if isinstance(q, _EngineTensor) else q, np.float64) / 100.0
    return nanquantile(x, qv, axis=axis, method=method, keepdims=keepdims)


def nanmedian(x, axis=None, keepdims=False):
    """The median over axis of the values that are not NaN."""
    if axis == () or axis == []:
        return _t(x)
    return nanquantile(x, 0.5, axis=axis, keepdims=keepdims)


def ldexp(x1, x2):
    """x1 * 2**x2 (x2 integers)."""
    dtype = result_type(_dtype(x1), _dtype(x2), float)
    if str(_dtype(x2)) not in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64") \
            and _dtype(x2) is not int:
        raise TypeError(f"ldexp exponent must be an integer type. Received: x2 dtype={_dtype(x2)}")
    a = _t(x1, dtype)
    scale = _out(np.ldexp(np.float32(1), _np(_t(x2)).astype(np.int32)), dtype)
    return multiply(a, scale)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """num values spaced evenly on a log scale from start to stop."""
    vals = np.geomspace(_np(_t(start)).astype(np.float64), _np(_t(stop)).astype(np.float64), num,
                        endpoint=endpoint, axis=axis)
    return _out(vals, as_dtype(dtype or FLOATX))


def sinc(x):
    """sin(pi x) / (pi x), and 1 at 0."""
    x = _t(x)
    return _as_face(apply("sinc", x if _is_float(x.dtype) else _t(x, FLOATX)))


__all__ += ["nanmax", "nanmin", "nanargmax", "nanargmin", "nanprod", "nancumsum", "nancumprod", "nanvar",
            "nanstd", "nanquantile", "nanpercentile", "nanmedian", "ldexp", "geomspace", "sinc"]


def view(x, dtype=None):
    """x's bytes read as `dtype` (the last axis rescaled where the item sizes differ), as NumPy's view."""
    x = _t(x)
    dtype = str(as_dtype(dtype or x.dtype))
    target = storage(_out(np.zeros(1), dtype)).dtype
    data = to_numpy(storage(x))
    if data.ndim == 0 and data.itemsize != target.itemsize or data.ndim and \
            data.shape[-1] * data.itemsize % target.itemsize:
        raise ValueError(f"Cannot view array of shape {x.shape} and dtype {x.dtype} as dtype {dtype} because the "
                         "total number of bytes is not divisible by the new itemsize.")
    return _out(np.ascontiguousarray(data).view(target), dtype)


__all__ += ["view"]
