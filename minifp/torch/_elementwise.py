"""PyTorch's elementwise family: the binary math functions with their argument checks, integer and bool tensor
arithmetic with PyTorch's type promotion, bitwise and logical ops, and the methods around them.

Ops that compute new float values are the engine's (one rounding each); those that only select values (fmax,
clamp_min, nan_to_num) compose `where`; integer and bool results are computed with NumPy on the storage, exactly.
"""
from __future__ import annotations

import functools
import math
import numbers

import numpy as np

from .. import engine
from ..engine import apply, made_like, storage, Tensor as _EngineTensor, to_numpy
from ._tensor import (Tensor, alpha_params, _dim, _int_dtype, _integral, _numpy_result, _type_name, _weak_out,
                      float32, int8, int16, tensor, uint8)
from ._tensor import maximum as _maximum, minimum as _minimum, return_type
from ._methods import _in_place

__all__ = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "rsub", "atan2",
           "arctan2", "hypot", "logaddexp", "logaddexp2", "copysign", "xlogy", "ldexp", "nextafter", "fmax", "fmin",
           "heaviside", "gcd", "lcm", "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and",
           "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "clamp_min",
           "clamp_max", "clamp", "clip", "isclose", "logit", "lerp", "addcmul", "addcdiv", "square", "float_power",
           "nan_to_num", "round", "eq", "ne", "lt", "le", "gt", "ge", "maximum", "minimum", "max", "min", "neg",
           "negative", "positive", "frac", "deg2rad", "rad2deg", "signbit", "isposinf", "isneginf", "frexp", "pow", "abs",
           "sign"]


# -- argument checks and PyTorch's promotion of integers --------------------------------------------------------


def _tensors(name, *args, scalars=()):
    """PyTorch's TypeError where an argument must be a tensor: every position not in `scalars`, and at least one."""
    for i, a in enumerate(args):
        if not isinstance(a, _EngineTensor) and (i not in scalars or
                                                 not any(isinstance(b, _EngineTensor) for b in args)):
            what = ("input", "other")[i] if i < 2 else f"arg{i}"
            raise TypeError(f"{name}(): argument '{what}' (position {i + 1}) must be Tensor, not {type(a).__name__}")


def _values(t):
    """A tensor's values as float32 (floats) or its integer storage."""
    return to_numpy(t.float32() if t.fmt is not None else storage(t)) if isinstance(t, _EngineTensor) else t


# -- arithmetic: integer and bool tensors stay integer ------------------------------------------------------------
_ENGINE = {name: getattr(Tensor, name) for name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__",
                                                     "__rmul__", "__truediv__", "__rtruediv__", "__pow__", "__rpow__",
                                                     "add_", "sub_", "mul_")}


def _is_bool(v):
    return isinstance(v, (bool, np.bool_)) or isinstance(v, _EngineTensor) and v.fmt is None and \
        storage(v).dtype == np.bool_


def _no_bool_sub(fn):
    """fn (a subtraction) after PyTorch's refusal of bool operands."""
    def checked(self, other):
        n = _is_bool(self) + _is_bool(other)
        if n == 2:
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
                               "or `logical_xor()` operator instead.")
        if n:
            raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                               "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
        return fn(self, other)
    checked.__name__ = fn.__name__
    return checked


def _int_division(fn, kernel):
    """An integer division (floor, trunc, remainder) as PyTorch's: bools refused, division by zero an error."""
    def checked(a, b):
        if a.dtype == np.bool_:             # (both operands are arrays of the result's dtype)
            raise NotImplementedError(f"\"{kernel}_cpu\" not implemented for 'Bool'")
        if np.any(b == 0):
            raise RuntimeError("ZeroDivisionError")
        return fn(a, b)
    return checked


def _self_tensor(name, self):
    """PyTorch's TypeError for Tensor.<name>(self, ...) called with a self that is no tensor."""
    if not isinstance(self, _EngineTensor):
        raise TypeError(f"descriptor '{name}' requires a 'torch._C.TensorBase' object but received a "
                        f"'{type(self).__name__}'")


def _integer_aware(name, np_fn):
    """A binary operator that computes integer and bool operands with NumPy, PyTorch's dtype; floats by the engine."""
    engine_fn = _ENGINE[name]

    def op(self, other):
        if not isinstance(self, _EngineTensor):
            _self_tensor(name, self)
        if self.fmt is None and _integral(self, other):
            return _numpy_result(np_fn, self, other)
        return engine_fn(self, other)           # (a float operand: the engine's promotion and rounding)
    op.__name__ = name
    return op


def _int_power(a, b):
    """a ** b of integers; a negative power gives 1 of 1, +-1 of -1, 0 of the rest (PyTorch's)."""
    if a.dtype == np.bool_:
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    powered = np.power(a, np.maximum(b, 0))
    if not np.any(b < 0):
        return powered
    ones = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(b < 0, ones, powered)


def _no_negative_power(fn):
    """fn (a power) after PyTorch's refusal of a negative Python integer as an integer tensor's exponent."""
    def checked(self, other):
        if isinstance(self, _EngineTensor) and self.fmt is None and isinstance(other, numbers.Integral) and \
                not isinstance(other, bool) and other < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        return fn(self, other)
    checked.__name__ = fn.__name__
    return checked


def pow(input, exponent, *, out=None):
    """input ** exponent (integer tensors to integer powers stay integer)."""
    _tensors("pow", input, exponent, scalars=(0, 1))
    return Tensor.__pow__(input, exponent) if isinstance(input, _EngineTensor) else Tensor.__rpow__(exponent, input)


def _in_place_arith(name, fn):
    """x.add_(y) and the like: integer and bool tensors keep their dtype (a float result is refused)."""
    engine_fn = _ENGINE[name]

    def method(self, other, **kwargs):
        if self.fmt is not None:
            return engine_fn(self, other, **kwargs)
        return _in_place(self, lambda t: _into(fn(t, other, **kwargs), t))
    method.__name__ = name
    return method


def _into(new, t):
    """new in t's integer dtype (PyTorch's in-place casting rule: floats do not go into integers)."""
    if new.fmt is not None:
        raise RuntimeError(f"result type {_type_name(new)} can't be cast to the desired output type {_type_name(t)}")
    return new if storage(new).dtype == storage(t).dtype else made_like(t, storage(new).astype(storage(t).dtype),
                                                                       None)


def _swap(fn):
    return lambda self, other: fn(other, self)


def _floor_div(a, b):
    if _integral(a, b):
        return _numpy_result(_int_division(np.floor_divide, "div_floor"), a, b)
    return apply("div_floor", a, b, _out=_weak_out((a, b)))


def _trunc_div(a, b):
    if _integral(a, b):
        return _numpy_result(_int_division(lambda x, y: np.where((x % y != 0) & ((x < 0) != (y < 0)), x // y + 1,
                                                                 x // y), "div_trunc"), a, b)
    # PyTorch's kernel truncates the quotient as rounded into the result's dtype: trunc(a / b), two ops
    return _ENGINE["__truediv__"](a, b).trunc() if isinstance(a, _EngineTensor) else \
        _ENGINE["__rtruediv__"](b, a).trunc()


def _scaled(other, alpha):
    return other if alpha == 1 else other * alpha


def _fused(name, input, other, alpha):
    """input + alpha * other (name "add") or input - alpha * other ("sub") as PyTorch's kernels compute it for a
    floating result: one FMA, alpha in float32 (see alpha_params: on the CPU, a half-precision result's kernel
    rounds alpha first); None where it stays integer (or alpha is 1: a plain add)."""
    tensors = [a for a in (input, other) if isinstance(a, _EngineTensor)]
    if alpha == 1 or not any(a.fmt is not None for a in tensors):
        return None
    out = _weak_out((input, other))
    fmt = out or functools.reduce(engine.promote, [a.fmt for a in tensors if a.fmt is not None])
    return apply(name, input, other, _out=out, **alpha_params(alpha, fmt, tensors))


def add(input, other, *, alpha=1, out=None):
    """input + alpha * other, with PyTorch's promotion (integer tensors stay integer)."""
    _tensors("add", input, other, scalars=(0, 1))
    fused = _fused("add", input, other, alpha)
    if fused is not None:
        return fused
    return Tensor.__add__(input, _scaled(other, alpha)) if isinstance(input, _EngineTensor) else \
        Tensor.__radd__(other, input)


def sub(input, other, *, alpha=1, out=None):
    """input - alpha * other."""
    _tensors("sub", input, other, scalars=(0, 1))
    fused = _fused("sub", input, other, alpha)
    if fused is not None:
        return fused
    return Tensor.__sub__(input, _scaled(other, alpha)) if isinstance(input, _EngineTensor) else \
        Tensor.__rsub__(other, input)


def mul(input, other, *, out=None):
    """input * other."""
    _tensors("mul", input, other, scalars=(0, 1))
    return Tensor.__mul__(input, other) if isinstance(input, _EngineTensor) else Tensor.__rmul__(other, input)


def div(input, other, *, rounding_mode=None, out=None):
    """input / other: true division (integers give floats), or rounded "trunc" or "floor"."""
    _tensors("div", input, other, scalars=(0, 1))
    if rounding_mode is None:
        return _ENGINE["__truediv__"](input, other) if isinstance(input, _EngineTensor) else \
            _ENGINE["__rtruediv__"](other, input)
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"'{rounding_mode}'")
    return (_trunc_div if rounding_mode == "trunc" else _floor_div)(input, other)


def true_divide(input, other, *, out=None):
    """input / other (always a true division)."""
    return div(input, other)


def floor_divide(input, other, *, out=None):
    """input / other rounded down."""
    _tensors("floor_divide", input, other, scalars=(0, 1))
    return _floor_div(input, other)


def rsub(input, other, *, alpha=1):
    """other - alpha * input."""
    _tensors("rsub", input, other, scalars=(1,))
    if isinstance(other, _EngineTensor):
        return sub(other, input, alpha=alpha)
    fused = _fused("sub", other, input, alpha)
    return fused if fused is not None else Tensor.__rsub__(_scaled(input, alpha), other)


def _not_for(name, *args):
    """PyTorch's NotImplementedError for a kernel that has no integer (or bool) version."""
    t = next(a for a in args if isinstance(a, _EngineTensor))
    raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_type_name(t)}'")


def _float_binary(name, op=None, scalars=(), integer=None, ints=True):
    """torch.<name>(input, other): the engine's op (one rounding); integer operands by `integer` with NumPy, else
    (ints) as float32, as PyTorch promotes them, or refused."""
    def fn(input, other, *, out=None):
        _tensors(name, input, other, scalars=scalars)
        if _integral(input, other):
            if integer is not None:
                return _numpy_result(integer, input, other)
            if not ints:
                _not_for(name, input, other)
        input, other = (v.long() if _is_bool(v) and not isinstance(v, bool) else v for v in (input, other))
        return apply(op or name, input, other, _out=_weak_out((input, other)))
    fn.__name__, fn.__doc__ = name, f"torch.{name}(input, other), elementwise."
    return fn


remainder = _float_binary("remainder", scalars=(0, 1), integer=_int_division(np.remainder, "remainder"))
fmod = _float_binary("fmod", scalars=(1,), integer=_int_division(np.fmod, "fmod"))
atan2 = arctan2 = _float_binary("atan2")
hypot = _float_binary("hypot", ints=False)
logaddexp = _float_binary("logaddexp", ints=False)
logaddexp2 = _float_binary("logaddexp2", ints=False)
copysign = _float_binary("copysign", scalars=(1,))
xlogy = _float_binary("xlogy", scalars=(0, 1))


def ldexp(input, other, *, out=None):
    """input * 2 ** other (PyTorch's two ops)."""
    _tensors("ldexp", input, other)
    if other.fmt is not None:
        return input * (2.0 ** other)
    powers = 2.0 ** other.float()            # exact powers of two: the product rounds once, into input's dtype
    return apply("mul", input, powers, _out=input.fmt) if input.fmt is not None else input * powers


def _next_toward(a, b):
    """The neighbour of each a toward b in a's own storage dtype (a format of 16 or 32 bits), by its bits."""
    ints = {2: np.uint16, 4: np.uint32}.get(a.dtype.itemsize)
    if ints is None:
        raise NotImplementedError(f"nextafter of {a.dtype} is not supported by minifp.torch")
    a, b = np.broadcast_arrays(a, b)
    wa, wb = a.astype(np.float32), b.astype(np.float32)
    bits = a.view(ints).astype(np.int64)
    tiny = np.where(wb < 0, 1 | 1 << (8 * a.dtype.itemsize - 1), 1)           # the smallest subnormal, b's sign
    moved = np.where(wa == 0, tiny, np.where((wb > wa) == (wa > 0), bits + 1, bits - 1))
    out = moved.astype(ints).view(a.dtype)
    return np.where(np.isnan(wa) | np.isnan(wb), np.nan, np.where(wa == wb, b, out)).astype(a.dtype)


def nextafter(input, other, *, out=None):
    """The next value of the result's dtype after input toward other."""
    _tensors("nextafter", input, other)
    if _integral(input, other):
        _not_for("nextafter", input, other)
    fmt = _weak_out((input, other)) or (input.fmt if other.fmt is None else other.fmt if input.fmt is None else
                                        engine.promote(input.fmt, other.fmt))
    x, y = (v if v.fmt == fmt and v.fmt is not None else v.to(fmt) for v in (input, other))
    a = to_numpy(storage(x))
    with np.errstate(all="ignore"):
        after = _next_toward(a, to_numpy(storage(y)))
        step = after.astype(np.float32) - a.astype(np.float32)     # one unit in the last place: exact
    finite = np.isfinite(step) | np.isnan(after.astype(np.float32))
    # PyTorch's gradients: 1 for input (x plus its exact step), 0 for other (a `where` that always picks the
    # result gives other its zero); steps to or from infinity take the value as it is
    moved = apply("add", x, made_like(x, np.where(finite, step, 0).astype(a.dtype), fmt), _out=fmt)
    if not finite.all():
        moved = apply("where", made_like(x, finite, None), moved, made_like(x, after, fmt), _out=fmt)
    return apply("where", made_like(x, np.ones(after.shape, bool), None), moved, y, _out=fmt)


def _selects(name, keep):
    """fmax / fmin / clamp_min / clamp_max: input where keep(input values, other values) holds, else other."""
    def fn(input, other, *, out=None):
        _tensors(name, input, other, scalars=() if name.startswith("f") else (1,))
        if _integral(input, other):
            return _numpy_result(lambda x, y: np.where(keep(x, y), x, y), input, other)
        with np.errstate(invalid="ignore"):
            mask = np.asarray(keep(_values(input), _values(other)))
        return apply("where", made_like(input, mask, None), input, other, _out=_weak_out((input, other)))
    fn.__name__, fn.__doc__ = name, f"torch.{name}(input, other), elementwise (selects values: exact)."
    return fn


fmax = _selects("fmax", lambda x, y: (x >= y) | np.isnan(y))
fmin = _selects("fmin", lambda x, y: (x <= y) | np.isnan(y))
clamp_min = _selects("clamp_min", lambda x, m: (x >= m) | np.isnan(x))
clamp_max = _selects("clamp_max", lambda x, m: (x <= m) | np.isnan(x))
_NUMBER_CLAMP = Tensor.clamp


def clamp(input, min=None, max=None, *, out=None):
    """input clamped to [min, max] (numbers or tensors; either may be None)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if _integral(input, *[v for v in (min, max) if v is not None]):      # integers keep their dtype
        out = input if min is None else _numpy_result(np.maximum, input, min)
        return out if max is None else _numpy_result(np.minimum, out, max)
    if not isinstance(min, _EngineTensor) and not isinstance(max, _EngineTensor):
        return _NUMBER_CLAMP(input, min, max)
    out = input if min is None else clamp_min(input, min)
    return out if max is None else clamp_max(out, max)


clip = clamp


def heaviside(input, values, *, out=None):
    """0 where input < 0, values where input == 0, 1 where input > 0 (no gradient)."""
    _tensors("heaviside", input, values)
    if input.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
    x, v = _values(input), _values(values)
    data = np.where(x == 0, v, x > 0).astype(x.dtype)
    return input.new_tensor(np.broadcast_to(data, np.broadcast_shapes(x.shape, v.shape)))


def _integer_only(name, fn, scalars=(0, 1), bools=True):
    """An op of integer (and bool) tensors, computed with NumPy; PyTorch's error for a floating tensor."""
    def op(input, other=None, *, out=None):
        args = (input,) if other is None and name == "bitwise_not" else (input, other)
        _tensors(name, *args, scalars=scalars)
        for a in args:
            if isinstance(a, _EngineTensor) and a.fmt is not None:
                raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_type_name(a)}'")
            if not isinstance(a, (_EngineTensor, numbers.Integral, np.bool_)):
                raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Float'")
        if not bools and _int_dtype(*args) == np.bool_:
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Bool'")
        return _numpy_result(fn, *args)
    op.__name__, op.__doc__ = name, f"torch.{name}: elementwise, of integer and bool tensors."
    return op


bitwise_and = _integer_only("bitwise_and", np.bitwise_and)
bitwise_or = _integer_only("bitwise_or", np.bitwise_or)
bitwise_xor = _integer_only("bitwise_xor", np.bitwise_xor)
bitwise_not = _integer_only("bitwise_not", np.invert)
bitwise_left_shift = _integer_only("bitwise_left_shift", np.left_shift, bools=False)
bitwise_right_shift = _integer_only("bitwise_right_shift", np.right_shift, bools=False)
gcd = _integer_only("gcd", np.gcd, scalars=(), bools=False)
lcm = _integer_only("lcm", np.lcm, scalars=(), bools=False)


def _logical(name, fn):
    def op(input, other, *, out=None):
        _tensors(name, input, other)
        a, b = _values(input), _values(other)
        return made_like(input, np.asarray(fn(a != 0, b != 0)), None)
    op.__name__, op.__doc__ = name, f"torch.{name}(input, other): bool, elementwise (nonzero is true)."
    return op


logical_and = _logical("logical_and", np.logical_and)
logical_or = _logical("logical_or", np.logical_or)
logical_xor = _logical("logical_xor", np.logical_xor)


def logical_not(input, *, out=None):
    """True where input is zero."""
    _tensors("logical_not", input)
    return made_like(input, np.asarray(_values(input) == 0), None)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other|, elementwise (equal infinities too; NaN where equal_nan)."""
    _tensors("isclose", input, other)
    if input.dtype != other.dtype:
        raise RuntimeError(f"{_type_name(input)} did not match {_type_name(other)}")
    if rtol < 0 or atol < 0:
        which, v = ("rtol", rtol) if rtol < 0 else ("atol", atol)
        raise RuntimeError(f"{which} must be greater than or equal to zero, but got {v}")
    a, b = (v if v.dtype.kind == "f" else v.astype(np.float64) for v in (_values(input), _values(other)))
    with np.errstate(all="ignore"):
        close = (a == b) | (np.isfinite(a) & np.isfinite(b) & (np.abs(a - b) <= atol + rtol * np.abs(b)))
    if equal_nan:
        close |= np.isnan(a) & np.isnan(b)
    return made_like(input, np.asarray(close), None)


def logit(input, eps=None, *, out=None):
    """log(input / (1 - input)), input clamped to [eps, 1 - eps] where eps is given."""
    return apply("logit", input, eps=eps)


def lerp(input, end, weight, *, out=None):
    """input + weight * (end - input), exact at weight 0 and 1."""
    _tensors("lerp", input, end)
    for what, v in (("end", end), ("weight", weight)):
        if isinstance(v, _EngineTensor) and v.dtype != input.dtype:
            raise RuntimeError(f"expected dtype {input.dtype} for `{what}` but got dtype {v.dtype}")
    if input.fmt is None:
        _not_for("lerp", input)
    return apply("lerp", input, end, weight, _out=_weak_out((input, end, weight)))


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    """input + value * tensor1 * tensor2, one rounding."""
    return apply("addcmul", input, tensor1, tensor2, value=value, _out=_weak_out((input, tensor1, tensor2)))


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    """input + value * tensor1 / tensor2, one rounding."""
    if input.fmt is None and tensor1.fmt is None and tensor2.fmt is None:
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release "
                           "addcdiv will perform a true division of tensor1 and tensor2.")
    return apply("addcdiv", input, tensor1, tensor2, value=value, _out=_weak_out((input, tensor1, tensor2)))


def square(input, *, out=None):
    """input * input (one rounding; bools square into int64)."""
    return Tensor.__mul__(input, input) if not _is_bool(input) else Tensor.__mul__(input.long(), input.long())


def float_power(input, exponent, *, out=None):
    """input ** exponent in PyTorch's double precision (float32 here: minifp has no float64)."""
    _tensors("float_power", input, exponent, scalars=(0, 1))
    widen = lambda v: v.float() if isinstance(v, _EngineTensor) else float(v)
    return widen(input) ** widen(exponent) if isinstance(input, _EngineTensor) else Tensor.__rpow__(
        widen(exponent), widen(input))


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """NaN, +inf and -inf replaced by nan, posinf and neginf (the dtype's largest finite values by default)."""
    if input.fmt is None:
        return input.clone()
    from ._functions import finfo        # (imported here: _functions imports this module's names)
    info = finfo(input.dtype)
    v = _values(input)
    out = input
    for mask, value in ((np.isnan(v), nan), (v == np.inf, info.max if posinf is None else posinf),
                        (v == -np.inf, info.min if neginf is None else neginf)):
        if mask.any():
            out = apply("where", made_like(input, mask, None), value, out, _out=input.fmt)
    return out if out is not input else apply("cast", input, _out=input.fmt)


_ROUND = Tensor.round


def round(input, *, decimals=0, out=None):
    """input rounded to `decimals` decimal places, halves to even."""
    if input.fmt is None:
        if storage(input).dtype == np.bool_:
            _not_for("round", input)
        return input.clone()
    return _ROUND(input) if decimals == 0 else apply("round_decimals", input, decimals=decimals)


_COMPARISONS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
                "ge": np.greater_equal}
_ENGINE_COMPARISONS = {n: getattr(Tensor, f"__{n}__") for n in _COMPARISONS}


def _compared(name, input, other):
    """input <op> other: integers compared exactly with NumPy (past 2**24 float32 would not tell them apart)."""
    if input.fmt is None and _integral(input, other):
        dtype = _int_dtype(input, other)
        a, b = (to_numpy(storage(v)).astype(dtype) if isinstance(v, _EngineTensor) else v for v in (input, other))
        return made_like(input, np.asarray(_COMPARISONS[name](a, b)), None)
    return _ENGINE_COMPARISONS[name](input, other)


def _compare(name):
    def fn(input, other, *, out=None):
        _tensors(name, input, other, scalars=(1,))
        return _compared(name, input, other)
    fn.__name__, fn.__doc__ = name, f"torch.{name}(input, other): a bool tensor."
    return fn


eq, ne, lt, le, gt, ge = (_compare(n) for n in _COMPARISONS)


def maximum(input, other, *, out=None):
    """The elementwise larger of two tensors (NaN wins)."""
    _tensors("maximum", input, other)
    return _numpy_result(np.maximum, input, other) if _integral(input, other) else _maximum(input, other)


def minimum(input, other, *, out=None):
    """The elementwise smaller of two tensors (NaN wins)."""
    _tensors("minimum", input, other)
    return _numpy_result(np.minimum, input, other) if _integral(input, other) else _minimum(input, other)


def max(input, *args, **kwargs):
    """torch.max(input), torch.max(input, dim) or torch.max(input, other)."""
    _tensors("max", input)
    return input.max(*args, **kwargs)


def min(input, *args, **kwargs):
    """torch.min(input), torch.min(input, dim) or torch.min(input, other)."""
    _tensors("min", input)
    return input.min(*args, **kwargs)


_ENGINE_NEG = Tensor.neg


def _integers_kept(name, np_fn, engine_fn):
    """An elementwise op whose integer and bool results keep their dtype (NumPy on the storage); floats by the
    engine's op."""
    def op(input, *args, **kwargs):
        if isinstance(input, _EngineTensor) and input.fmt is None:
            return _numpy_result(np_fn, input)
        return engine_fn(input, *args, **kwargs)
    op.__name__, op.__doc__ = name, engine_fn.__doc__
    return op


abs = _integers_kept("abs", np.abs, Tensor.abs)
sign = _integers_kept("sign", np.sign, engine.op_function("sign"))


def neg(input, *, out=None):
    """-input; integer tensors stay integer, bool tensors are refused (as PyTorch)."""
    _tensors("neg", input)
    if input.fmt is None:
        if storage(input).dtype == np.bool_:
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                               "invert a mask, use the `~` or `logical_not()` operator instead.")
        return _numpy_result(np.negative, input)
    return _ENGINE_NEG(input)


negative = neg


def positive(input):
    """input itself (PyTorch refuses bool tensors)."""
    if input.fmt is None and storage(input).dtype == np.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def frac(input, *, out=None):
    """input - trunc(input) (exact; the gradient is the identity)."""
    if input.fmt is None:
        _not_for("frac", input)
    return input - input.trunc()


def deg2rad(input, *, out=None):
    """input * pi / 180, one rounding."""
    return input * (math.pi / 180)


def rad2deg(input, *, out=None):
    """input * 180 / pi, one rounding."""
    return input * (180 / math.pi)


def _bool_of_values(name, fn):
    def op(input, *, out=None):
        _tensors(name, input)
        return made_like(input, np.asarray(fn(_values(input))), None)
    op.__name__, op.__doc__ = name, f"torch.{name}(input): a bool tensor."
    return op


signbit = _bool_of_values("signbit", np.signbit)
isposinf = _bool_of_values("isposinf", lambda v: v == np.inf)
isneginf = _bool_of_values("isneginf", lambda v: v == -np.inf)
_frexp = return_type("frexp", ("mantissa", "exponent"))


def frexp(input, *, out=None):
    """(mantissa in [0.5, 1) with input's sign, int32 exponent): input == mantissa * 2 ** exponent."""
    if input.fmt is None:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, e = np.frexp(_values(input))
    scale = np.ldexp(np.float32(1), -e)            # a power of two: the product is exact
    mantissa = apply("mul", input, made_like(input, scale.astype(np.float32), float32.fmt), _out=input.fmt)
    return _frexp(mantissa, made_like(input, e.astype(np.int32), None))


# -- Tensor methods ----------------------------------------------------------------------------------------------
_ENGINE_ITEM = Tensor.item


def _item(self):
    """The one value of a one-element tensor, as a Python number."""
    n = storage(self).size
    if n != 1:
        raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
    return _ENGINE_ITEM(self)


def _softmax_method(name):
    def method(self, dim, dtype=None):
        x = self if dtype is None else self.to(dtype)
        if not storage(x).size:             # nothing to normalise (NumPy's max of nothing would raise)
            return apply("cast", x, _out=x.fmt)
        return apply(name, x, axis=_dim(dim, x.ndim))
    method.__name__ = name
    return method


def _cast(dtype_name):
    original = getattr(Tensor, dtype_name)

    def method(self, memory_format=None):
        if dtype_name == "bool":            # nonzero is true (NaN too), not truncation toward zero
            return made_like(self, np.asarray(_values(self) != 0), None)
        return original(self)
    method.__name__ = dtype_name
    return method


_FACE_TO = Tensor.to


def _to(self, *args, **kwargs):
    """Tensor.to, with an integer or bool tensor cast to a floating dtype stored in that format (the engine's
    cast moves an integer storage as it is)."""
    out = _FACE_TO(self, *args, **kwargs)
    if self.fmt is None and out.fmt is not None:
        return tensor(to_numpy(storage(self)), dtype=out.dtype, device=out.device)
    return out


def _rdiv(self, other):
    """other / self as PyTorch's Tensor.__rdiv__: self.reciprocal() * other."""
    return self.reciprocal() * other


def _bitwise_method(fn, name):
    """Tensor.__rand__ and the like: fn(other, self), self a tensor."""
    def method(self, other):
        _self_tensor(name, self)
        return fn(other, self)
    return method


for _name, _fn in {
        "__add__": _integer_aware("__add__", np.add), "__radd__": _integer_aware("__radd__", np.add),
        "__sub__": _no_bool_sub(_integer_aware("__sub__", np.subtract)),
        "__rsub__": _no_bool_sub(_integer_aware("__rsub__", _swap(np.subtract))),
        "__mul__": _integer_aware("__mul__", np.multiply),
        "__rmul__": _integer_aware("__rmul__", np.multiply),
        "__pow__": _no_negative_power(_integer_aware("__pow__", _int_power)),
        "__rpow__": _integer_aware("__rpow__", _swap(_int_power)),
        "pow": pow, "add_": _in_place_arith("add_", add), "sub_": _in_place_arith("sub_", sub),
        "mul_": _in_place_arith("mul_", mul),
        "__floordiv__": _floor_div, "__rfloordiv__": _swap(_floor_div),
        "__mod__": lambda self, other: remainder(self, other), "__rmod__": lambda self, other: remainder(other, self),
        "__rdiv__": _rdiv, "__div__": _ENGINE["__truediv__"],
        "__and__": bitwise_and, "__or__": bitwise_or, "__xor__": bitwise_xor,
        "__rand__": _bitwise_method(bitwise_and, "__rand__"), "__ror__": _bitwise_method(bitwise_or, "__ror__"),
        "__rxor__": _bitwise_method(bitwise_xor, "__rxor__"), "__invert__": bitwise_not,
        "__lshift__": bitwise_left_shift, "__rshift__": bitwise_right_shift,
        "add": add, "sub": sub, "mul": mul, "div": div, "true_divide": true_divide, "floor_divide": floor_divide,
        "remainder": remainder, "fmod": fmod, "atan2": atan2, "arctan2": atan2, "hypot": hypot,
        "logaddexp": logaddexp, "logaddexp2": logaddexp2, "copysign": copysign, "xlogy": xlogy, "ldexp": ldexp,
        "nextafter": nextafter, "fmax": fmax, "fmin": fmin, "heaviside": heaviside, "gcd": gcd, "lcm": lcm,
        "logical_and": logical_and, "logical_or": logical_or, "logical_xor": logical_xor, "logical_not": logical_not,
        "bitwise_and": bitwise_and, "bitwise_or": bitwise_or, "bitwise_xor": bitwise_xor, "bitwise_not": bitwise_not,
        "bitwise_left_shift": bitwise_left_shift, "bitwise_right_shift": bitwise_right_shift,
        "clamp_min": clamp_min, "clamp_max": clamp_max, "clamp": clamp, "clip": clamp, "isclose": isclose,
        "logit": logit, "lerp": lerp, "addcmul": addcmul, "addcdiv": addcdiv, "square": square,
        "float_power": float_power, "nan_to_num": nan_to_num, "round": round, "maximum": maximum,
        "minimum": minimum, "neg": neg, "negative": neg, "__neg__": neg, "abs": abs, "__abs__": abs, "sign": sign,
        "lerp_": lambda self, end, weight: _in_place(self, lambda t: lerp(t, end, weight)),
        "addcmul_": lambda self, tensor1, tensor2, *, value=1: _in_place(self, lambda t: addcmul(t, tensor1, tensor2,
                                                                                                 value=value)),
        "addcdiv_": lambda self, tensor1, tensor2, *, value=1: _in_place(self, lambda t: addcdiv(t, tensor1, tensor2,
                                                                                                 value=value)),
        "positive": positive, "__pos__": positive,
        "frac": frac, "deg2rad": deg2rad, "rad2deg": rad2deg, "signbit": signbit, "isposinf": isposinf,
        "isneginf": isneginf, "frexp": frexp,
        "item": _item, "softmax": _softmax_method("softmax"), "log_softmax": _softmax_method("log_softmax"),
        "byte": lambda self, memory_format=None: self.to(uint8), "char": lambda self, memory_format=None: self.to(int8),
        "short": lambda self, memory_format=None: self.to(int16)}.items():
    setattr(Tensor, _name, _fn)
Tensor.to = _to
for _name in ("float", "half", "double", "bfloat16", "long", "int", "bool"):
    setattr(Tensor, _name, _cast(_name))
Tensor.__iadd__, Tensor.__isub__, Tensor.__imul__ = Tensor.add_, Tensor.sub_, Tensor.mul_
for _name, _fn in zip(_COMPARISONS, (eq, ne, lt, le, gt, ge)):
    setattr(Tensor, _name, _fn)
    setattr(Tensor, f"__{_name}__", (lambda n: lambda self, other: _compared(n, self, other))(_name))
