"""PyTorch's tensors over the engine's: dtypes, devices, creation, and the methods with PyTorch's spellings.

A `minifp.torch.Tensor` is an engine tensor (every op still goes through the one dispatcher, which keeps
the class of its inputs); this module only renames, reorders arguments and adds PyTorch's rules where
they differ from the engine's: 0-dim tensors are weak in promotion, mixed-dtype products raise outside
autocast, reductions take dim=/keepdim=.
"""
from __future__ import annotations

import collections
import dataclasses
import math
import numbers
import re
import warnings
import weakref

import ml_dtypes
import numpy as np

from .. import engine
from ..engine import (apply, array_module, current_autocast, detach_, made_by, made_like, make, set_storage, storage,
    Tensor as _EngineTensor, tensor as _engine_tensor, to_numpy)
from . import _device, _graph, _saved
from . import _generator
from ._generator import stream

__all__ = ["Tensor", "dtype", "Size", "tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty",
           "zeros_like", "ones_like", "full_like", "empty_like", "randn", "rand", "randint", "randperm", "multinomial",
           "rand_like", "randn_like", "randint_like", "bernoulli", "normal", "arange",
           "as_dtype", "format_of", "is_tensor", "get_default_dtype", "set_default_dtype"]


class dtype:
    """A PyTorch dtype: a minifp format (floating) or a NumPy integer/bool dtype."""

    __slots__ = ("name", "fmt", "numpy")

    def __init__(self, name, fmt, numpy):
        self.name, self.fmt, self.numpy = name, fmt, np.dtype(numpy)

    is_floating_point = property(lambda self: self.fmt is not None)
    itemsize = property(lambda self: self.numpy.itemsize)

    def __repr__(self):
        return f"torch.{self.name}"

    def __eq__(self, other):
        if isinstance(other, dtype):
            return self is other or (self.fmt == other.fmt if self.fmt is not None else self.numpy == other.numpy)
        return self.fmt is not None and isinstance(other, engine.Format) and self.fmt == other

    def __hash__(self):
        return hash(self.fmt if self.fmt is not None else self.numpy)


float32 = dtype("float32", engine.float32, np.float32)
float16 = dtype("float16", engine.float16, np.float16)
bfloat16 = dtype("bfloat16", engine.bfloat16, ml_dtypes.bfloat16)
float8_e4m3fn = dtype("float8_e4m3fn", engine.float8_e4m3, ml_dtypes.float8_e4m3fn)
float8_e5m2 = dtype("float8_e5m2", engine.float8_e5m2, ml_dtypes.float8_e5m2)
float8_e4m3fnuz = dtype("float8_e4m3fnuz", engine.float8_e4m3fnuz, ml_dtypes.float8_e4m3fnuz)
float8_e5m2fnuz = dtype("float8_e5m2fnuz", engine.float8_e5m2fnuz, ml_dtypes.float8_e5m2fnuz)
float8_e8m0fnu = dtype("float8_e8m0fnu", engine.e8m0, ml_dtypes.float8_e8m0fnu)
int64, int32, int16, int8 = (dtype(f"int{n}", None, f"int{n}") for n in (64, 32, 16, 8))
uint8, bool_ = dtype("uint8", None, np.uint8), dtype("bool", None, np.bool_)
# PyTorch (2.12 on, pytorch#178817) saturates casts into float8_e4m3fn: past 448, and inf, give +-448, NaN stays
# NaN. The rounding goes through a saturating twin of the format, whose codes are the format's own.
_CASTS = {engine.float8_e4m3: dataclasses.replace(engine.float8_e4m3, overflow="saturate", name="float8_e4m3fn_saturating")}
DTYPES = {d.name: d for d in (float32, float16, bfloat16, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz,
                              float8_e5m2fnuz, float8_e8m0fnu, int64, int32, int16, int8, uint8, bool_)}
# PyTorch's other names. minifp has no float64 format: double means float32 here (documented in the README).
ALIASES = {"float": float32, "half": float16, "long": int64, "int": int32, "short": int16, "float64": float32,
           "double": float32}
_BY_FORMAT = {d.fmt: d for d in DTYPES.values() if d.fmt is not None}
_BY_NUMPY = {d.numpy: d for d in DTYPES.values() if d.fmt is None}
_VALID = ", ".join(f"torch.{n}" for n in DTYPES) + " (or a minifp.Format such as minifp.tf32)"
_default = [float32]
_RETAINED = {}      # id(tensor) -> a weak reference to it: the non-leaf tensors retain_grad() was called on


def as_dtype(x, arg="dtype"):
    """The torch dtype named by x (a torch dtype, a minifp Format or a name); a Format without a torch name stays."""
    if isinstance(x, dtype):
        return x
    if isinstance(x, engine.Format):
        return _BY_FORMAT.get(x, x)
    if isinstance(x, str) and (x in DTYPES or x in ALIASES):
        return DTYPES.get(x) or ALIASES[x]
    if x is float:
        return _default[0]
    if x is int:
        return int64
    if x is bool:
        return bool_
    raise TypeError(f"{arg}: {x!r} is not a dtype; valid dtypes: {_VALID}")


def format_of(x):
    """The minifp Format of a floating dtype (torch dtype or Format), None for integer and bool dtypes."""
    d = as_dtype(x)
    return d if isinstance(d, engine.Format) else d.fmt


def get_default_dtype():
    """The dtype Python floats become (float32)."""
    return _default[0]


def set_default_dtype(d):
    """Make Python floats become `d` (float32, float16 or bfloat16)."""
    d = as_dtype(d, "set_default_dtype(): d")
    if d.fmt is None:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default[0] = d


class Size(tuple):
    """A tensor's shape, as PyTorch prints it."""

    def numel(self):
        return int(np.prod(self, dtype=np.int64))

    def __repr__(self):
        return f"torch.Size({list(self)})"

    # Slices, sums and repeats of a Size are Sizes, as PyTorch's are (a tuple on either side of + too).
    def __getitem__(self, i):
        got = tuple.__getitem__(self, i)
        return Size(got) if isinstance(i, slice) else got

    def __add__(self, other):
        if not isinstance(other, tuple):
            raise TypeError(f"can only concatenate tuple (not {type(other).__name__}) to torch.Size")
        return Size(tuple(self) + other)

    def __radd__(self, other):
        return Size(other + tuple(self))

    def __mul__(self, n):
        return Size(tuple(self) * n)

    __rmul__ = __mul__


def _dim(d, ndim, arg="dim"):
    n = ndim if ndim > 1 else 1
    if type(d) is int and -n <= d < n:      # (the common call, without the checks' ABC look-ups)
        return d % n
    if isinstance(d, bool) or not isinstance(d, numbers.Integral):
        raise TypeError(f"{arg} must be an int, got {d!r}")
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n


def _dims(dim, ndim):
    """dim= as the engine's axis=: None, an int or a tuple of ints."""
    if dim is None:
        return None
    if isinstance(dim, (tuple, list)):
        return tuple(_dim(d, ndim) for d in dim)
    return _dim(dim, ndim)


def _shape_args(shape):
    """f(2, 3) and f((2, 3)) alike."""
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)) else tuple(shape)


def _bits_as(t, d):
    """t's storage bits read as dtype d (x.view(torch.int32)): the last dim scaled by the ratio of the sizes."""
    data = to_numpy(storage(t))
    target = np.dtype(d.fmt.storage if d.fmt is not None else d.numpy)
    if data.itemsize != target.itemsize and (not data.ndim or data.shape[-1] * data.itemsize % target.itemsize):
        raise RuntimeError(f"self.size(-1) must be divisible by {target.itemsize // data.itemsize or 1} to view "
                           f"{t.dtype} as {d} (different element sizes), but got {data.shape[-1] if data.ndim else 1}")
    bits = np.ascontiguousarray(data).view(target)
    return make(Tensor, _device.array_on(bits, t.device), d.fmt, False, t.device)


def _new_shape(t, shape):
    """The shape t is viewed as, checked as PyTorch checks it (one -1 at most, the same number of elements)."""
    shape, n = _shape_args(shape), t.numel()
    inferred = shape.count(-1)
    if inferred > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(s for s in shape if s != -1)
    if inferred and not n and not known:
        raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} because the unspecified "
                           f"dimension size -1 can be any value and is ambiguous")
    if (n % known if inferred and known else known != n) or any(s < -1 for s in shape):
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {n}")
    return shape


_TYPE_NAMES = {engine.float32: "Float", engine.float16: "Half", engine.bfloat16: "BFloat16"}


_INT_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


_CPP_NAMES = {"Float": "float", "Half": "c10::Half", "BFloat16": "c10::BFloat16", "Double": "double", "Long": "long int",
              "Int": "int", "Short": "short int", "Char": "signed char", "Byte": "unsigned char", "Bool": "bool"}


def _type_name(t):
    return _TYPE_NAMES.get(t.fmt, str(t.fmt)) if t.fmt is not None else \
        _INT_NAMES.get(storage(t).dtype.name, storage(t).dtype.name)


_CAFFE2 = {"Float": "float", "Half": "c10::Half", "BFloat16": "c10::BFloat16"}


def check_same_dtype(a, b, bias=None):
    """Outside autocast PyTorch's products need one dtype: its error for a float16 x float32 product
    (addmm's words where a bias takes part, mm's otherwise; mm's differ between the CPU and CUDA)."""
    autocast = current_autocast()
    if autocast is not None and autocast.device == a.device:
        return
    if bias is not None and bias.fmt != b.fmt:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_type_name(bias)} and {_type_name(b)}")
    if a.fmt == b.fmt:
        return
    if bias is not None:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_type_name(a)} and {_type_name(b)}")
    names = [_CAFFE2.get(_type_name(t), _type_name(t)) for t in (a, b)]
    what = "mat1 and mat2" if a.device == "cuda" else "m1 and m2"
    raise RuntimeError(f"expected {what} to have the same dtype, but got: {names[0]} != {names[1]}")


def _weak_out(args):
    """The result format where PyTorch's promotion differs from the engine's (0-dim tensors are weak), else None."""
    out, weak = None, False
    for a in args:
        if isinstance(a, _EngineTensor) and a.fmt is not None:
            if not storage(a).ndim:
                weak = True
            elif out is not a.fmt:
                out = a.fmt if out is None else engine.promote(out, a.fmt)
    return out if weak else None


def alpha_params(alpha, fmt, tensors):
    """The add and sub ops' parameters for PyTorch's alpha: alpha, and on the CPU, for a float16 or bfloat16 result,
    forward_alpha, alpha rounded into that format (the vectorized CPU kernel takes alpha as the result's scalar
    type; the gradient multiplies by alpha itself)."""
    if fmt.man_bits < 23 and all(t.device == "cpu" for t in tensors if isinstance(t, _EngineTensor)):
        rounded = engine.widen(engine.round_to(np.array([alpha], np.float64), fmt), fmt)[0]
        return {"alpha": alpha, "forward_alpha": float(rounded)}
    return {"alpha": alpha}


# -- integer and bool tensors: PyTorch keeps their dtype where no float takes part -----------------------------


def _integral(*args):
    """Whether every operand is an integer or bool tensor or Python int (no float takes part)."""
    return all(a.fmt is None if isinstance(a, _EngineTensor) else
               isinstance(a, (numbers.Integral, np.bool_)) for a in args)


def _int_dtype(*args):
    """PyTorch's result dtype of integer and bool operands: dimensioned tensors first, then 0-dim tensors, then
    Python numbers, a later group counting only where it is of a higher category (bool < integer)."""
    groups = ([storage(a).dtype for a in args if isinstance(a, _EngineTensor) and storage(a).ndim],
              [storage(a).dtype for a in args if isinstance(a, _EngineTensor) and not storage(a).ndim],
              [np.dtype(np.bool_ if isinstance(a, (bool, np.bool_)) else np.int64)
               for a in args if not isinstance(a, _EngineTensor)])
    out = None
    for g in groups:
        if g:
            t = np.result_type(*g)
            out = t if out is None else np.result_type(out, t) if out == np.bool_ else out
    return out


def _numpy_result(fn, *args, dtype=None, like=None):
    """fn of the operands' storage (integers and bools) as a tensor of `dtype` (PyTorch's promotion by default), on
    the device of `like` (by default the first tensor operand)."""
    like = like if like is not None else next(a for a in args if isinstance(a, _EngineTensor))
    dtype = _int_dtype(*args) if dtype is None else dtype
    with np.errstate(all="ignore"):        # (a Python int past the dtype's range wraps, as in PyTorch)
        arrays = [to_numpy(storage(a)).astype(dtype) if isinstance(a, _EngineTensor) else np.asarray(a).astype(dtype)
                  for a in args]
        return made_like(like, np.asarray(fn(*arrays)).astype(dtype, copy=False), None)


def _binary(name):
    """A binary operator with PyTorch's promotion (a 0-dim tensor does not widen a dimensioned one)."""
    def op(self, other):
        return apply(name, self, other, _out=_weak_out((self, other)))

    def rop(self, other):
        return apply(name, other, self, _out=_weak_out((self, other)))
    return op, rop


class _TensorType(type):
    """torch.Tensor's class: torch.Tensor(data) or torch.Tensor(*sizes) is PyTorch's legacy constructor (float32 by
    default). The engine makes its tensors with cls.__new__ alone, which stays the C one (no Python call per op)."""

    legacy = None       # minifp.torch._legacy.construct, which sets itself here

    def __call__(cls, *args, **kwargs):
        if cls is not Tensor:
            return super().__call__(*args, **kwargs)
        return _TensorType.legacy(None, "cpu", *args, **kwargs)


_CYCLE = ("Using backward() with create_graph=True will create a reference cycle between the parameter and its "
          "gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to avoid "
          "this. If you have to use this function, make sure to reset the .grad fields of your parameters to None "
          "after use to break the cycle and avoid the leak.")
_CYCLE_WARNED = []


class Tensor(_EngineTensor, metaclass=_TensorType):
    """A tensor with PyTorch's methods; its values are exactly what the GPU would hold."""

    __slots__ = ()

    # -- what it is -----------------------------------------------------------------------
    dtype = property(lambda self: as_dtype(self.fmt) if self.fmt is not None else _BY_NUMPY[storage(self).dtype])
    shape = property(lambda self: Size(storage(self).shape))
    is_cuda = property(lambda self: self.device == "cuda")
    grad_fn = property(lambda self: _graph.grad_fn(self), doc="The autograd node that made this tensor (None: a "
                                                               "leaf), as PyTorch shows it.")
    _version = property(lambda self: engine.inplace_version(self), doc="How many in-place ops changed this tensor.")

    @classmethod
    def op_error(cls, name, shapes, error):
        """PyTorch's RuntimeError where the inputs' shapes do not broadcast, its words for an index out of range,
        else the engine's words."""
        refused = name not in _NOT_BROADCAST and "broadcast" in str(error) and broadcast_refusal([s for s in shapes
                                                                                               if s])
        if refused:
            return RuntimeError(refused)
        words = isinstance(error, IndexError) and _index_words(str(error))
        return IndexError(words) if words else super().op_error(name, shapes, error)

    def is_floating_point(self):
        return self.fmt is not None

    def size(self, dim=None):
        """The shape, or its length along `dim`."""
        return self.shape if dim is None else storage(self).shape[_dim(dim, self.ndim)]

    def dim(self):
        return storage(self).ndim

    ndimension = dim

    def numel(self):
        return int(storage(self).size)

    def element_size(self):
        return storage(self).dtype.itemsize

    def tolist(self):
        return to_numpy(self.float32() if self.fmt is not None else storage(self)).tolist()

    def numpy(self):
        """The values as a NumPy array: float32 for float32 tensors, the format's storage dtype otherwise."""
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        data = storage(self)
        if type(data) is np.ndarray:
            expose(data)
        return to_numpy(data)

    def __bool__(self):
        n = storage(self).size
        if n != 1:
            raise RuntimeError(f"Boolean value of Tensor with {'no values' if not n else 'more than one value'} is "
                               f"ambiguous")
        return bool(self.item())

    def __float__(self):
        if storage(self).size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return float(self.item())

    def __int__(self):
        if storage(self).size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self.item())

    def __iter__(self):
        if not self.ndim:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def type(self, dtype=None, non_blocking=False):
        """The tensor type's name ('torch.FloatTensor', 'torch.cuda.HalfTensor') with no dtype, else this tensor
        in dtype (a dtype, or a type's name)."""
        if dtype is None:
            return f"torch.{'cuda.' if self.device == 'cuda' else ''}{_type_name(self)}Tensor"
        dtype = getattr(dtype, "_name", dtype)          # torch.LongTensor and its kin: their names
        if isinstance(dtype, str) and dtype.startswith("torch.cuda."):
            return self.to("cuda").type(dtype.replace("cuda.", "", 1))
        if isinstance(dtype, str):
            name = dtype.removeprefix("torch.").removeprefix("cuda.").removesuffix("Tensor")
            by_name = {**{v: k for k, v in _INT_NAMES.items()}, "Float": "float32", "Half": "float16",
                       "BFloat16": "bfloat16", "Double": "float64"}
            if not dtype.endswith("Tensor") or name not in by_name:
                raise ValueError(f"invalid type: {dtype!r}")
            return self.to(as_dtype(by_name[name]))
        return self.to(dtype)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Gradients of this tensor into the .grad of every leaf that requires one (of the tensors in `inputs`
        only, leaves or not, where given); create_graph: gradients that are themselves differentiable."""
        check_output_gradients([self], [gradient])
        if inputs is not None:
            inputs = [inputs] if isinstance(inputs, _EngineTensor) else list(inputs)
            if not inputs:
                raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
            if not all(x.requires_grad for x in inputs):
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if create_graph and not _CYCLE_WARNED:       # PyTorch warns once per process
            _CYCLE_WARNED.append(True)
            warnings.warn(_CYCLE, UserWarning, stacklevel=2)
        # As in PyTorch, retain_graph defaults to create_graph: a graph of gradients reads the forward's values
        engine.backward(self, gradient, create_graph if retain_graph is None else retain_graph, inputs,
                        create_graph=bool(create_graph), on_stale=_saved.refuse_stale)

    def requires_grad_(self, requires_grad=True):
        if self.fmt is None and requires_grad:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = bool(requires_grad)
        return self

    def retain_grad(self):
        """Keep this non-leaf tensor's gradient in .grad at each backward (after its other hooks), as a leaf's."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if made_by(self) is None or self.retains_grad:
            return
        ref = weakref.ref(self)

        def keep(g):
            t = ref()
            t.grad = g if t.grad is None else t.grad + g
        engine.add_gradient_hook(self, keep, last=True)
        _RETAINED[id(self)] = weakref.ref(self, lambda _, key=id(self), kept=_RETAINED: kept.pop(key, None))

    @property
    def retains_grad(self):
        """Whether retain_grad() was called on this (non-leaf) tensor."""
        found = _RETAINED.get(id(self))
        return found is not None and found() is self

    def register_hook(self, hook):
        """Run hook(grad) on this tensor's gradient in each backward, once it is complete; a tensor it returns
        takes the gradient's place. Returns a handle whose remove() takes the hook off."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        return engine.add_gradient_hook(self, hook)

    def zero_(self):
        data = storage(self)
        return self.assign(np.zeros(data.shape, np.float32 if self.fmt is not None else data.dtype))

    def fill_(self, value):
        # (an integer or bool tensor takes the value cast to its dtype, as PyTorch's fill_ does: 2.7 -> 2)
        data = storage(self)
        return self.assign(np.full(data.shape, value, np.float32 if self.fmt is not None else data.dtype))

    def uniform_(self, from_=0, to=1, *, generator=None):
        """Fill in place with uniform samples in [from_, to), rounded into the tensor's format."""
        if from_ > to:
            raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_} > to={to}")
        return self.assign(stream(generator, "uniform_()", self.device).uniform(from_, to, storage(self).shape))

    def normal_(self, mean=0, std=1, *, generator=None):
        """Fill in place with normal samples N(mean, std**2), rounded into the tensor's format."""
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        return self.assign(stream(generator, "normal_()", self.device).normal(mean, std, storage(self).shape))

    def random_(self, *bounds, generator=None):
        """random_(), random_(to), random_(from, to): integers drawn uniformly, [from, to) or [0, the largest
        integer the dtype holds exactly]."""
        if len(bounds) > 2:
            raise TypeError(f"random_() takes at most 2 positional arguments ({len(bounds)} given)")
        low, high = (0, None) if not bounds else ((0, bounds[0]) if len(bounds) == 1 else bounds)
        if high is None and self.fmt is not None:
            high = 2 ** (self.fmt.man_bits + 1) + 1          # every integer up to 2**digits, as PyTorch
        elif high is None:
            kind = storage(self).dtype
            high = 2 if kind == np.bool_ else int(np.iinfo(kind).max) + 1
        if low >= high:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
        drawn = stream(generator, "random_()", self.device).integers(low, high, storage(self).shape,
                                                        dtype=np.int64 if high <= 2 ** 63 else np.uint64)
        return self.assign(drawn) if self.fmt is not None else self._fill_ints(drawn)

    def _fill_ints(self, values):
        """An integer tensor's storage replaced in place by values (cast to its dtype)."""
        return set_storage(self, np.asarray(values).astype(storage(self).dtype), None)

    def bernoulli_(self, p=0.5, *, generator=None):
        """Fill in place with 1 (probability p, a number or a tensor) or 0."""
        probs = np.asarray(to_numpy(p.float32()), np.float64) if isinstance(p, _EngineTensor) else p
        if not (np.all(np.asarray(probs) >= 0) and np.all(np.asarray(probs) <= 1)):
            shown = "" if isinstance(p, _EngineTensor) else f", but got p={p:g}"
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1]{shown}")
        drawn = stream(generator, "bernoulli_()", self.device).random(storage(self).shape) < probs
        return self.assign(drawn.astype(np.float32)) if self.fmt is not None else self._fill_ints(drawn)

    def exponential_(self, lambd=1.0, *, generator=None):
        """Fill in place with exponential samples of rate lambd."""
        if lambd <= 0:
            raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
        g = stream(generator, "exponential_()", self.device)
        return self.assign(g.exponential(1.0 / lambd, storage(self).shape))

    def bernoulli(self, p=None, *, generator=None):
        """torch.bernoulli(self, ...)."""
        return bernoulli(self, p, generator=generator)

    def multinomial(self, num_samples, replacement=False, *, generator=None):
        """torch.multinomial(self, ...)."""
        return multinomial(self, num_samples, replacement, generator=generator)

    def copy_(self, src):
        return self.assign(src.float32() if isinstance(src, _EngineTensor) and src.fmt is not None else src)

    # -- dtype and device ---------------------------------------------------------------------
    def to(self, *args, **kwargs):
        """to(dtype), to(device), to(device, dtype), to(other tensor): a differentiable cast and/or move (self where
        nothing changes, unless copy=True)."""
        copy = kwargs.get("copy", False)
        device, d = parse_to(args, kwargs, self)
        out = self
        if d is not None:
            fmt = format_of(d)
            if fmt is None:
                out = _int_cast(out, as_dtype(d))
            elif fmt != out.fmt:
                out = apply("cast", out, _out=_CASTS.get(fmt, fmt))
                out.fmt = fmt           # the same codes, read as the dtype's format
        if device is not None and device != out.device:
            out = _device.moved(out, device)
        return self.clone() if copy and out is self else out

    def float(self):
        return self.to(float32)

    def half(self):
        return self.to(float16)

    def bfloat16(self):
        return self.to(bfloat16)

    def double(self):
        return self.to(float32)

    def long(self):
        return self.to(int64)

    def int(self):
        return self.to(int32)

    def bool(self):
        return self.to(bool_)

    def type_as(self, other):
        return self.to(other.dtype)

    def cuda(self, device=None):
        return self.to("cuda")

    def cpu(self):
        return self.to("cpu")

    def clone(self, *, memory_format=None):
        return apply("cast", self, _out=self.fmt) if self.fmt is not None else made_like(self, storage(self).copy(), None)

    # -- shapes ---------------------------------------------------------------------------------
    def view(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (dtype, engine.Format)):
            return _bits_as(self, as_dtype(shape[0]))
        return apply("reshape", self, shape=_new_shape(self, shape))

    def reshape(self, *shape):
        return apply("reshape", self, shape=_new_shape(self, shape))

    def view_as(self, other):
        return self.view(other.shape)

    def permute(self, *dims):
        return apply("transpose", self, axes=tuple(_dim(d, self.ndim) for d in _shape_args(dims)))

    def transpose(self, dim0, dim1):
        axes = list(range(self.ndim))
        a, b = _dim(dim0, self.ndim, "dim0"), _dim(dim1, self.ndim, "dim1")
        axes[a], axes[b] = b, a
        return apply("transpose", self, axes=tuple(axes))

    def t(self):
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
        return self.transpose(0, 1) if self.ndim == 2 else self

    T = property(lambda self: apply("transpose", self))
    mT = property(lambda self: self.transpose(-2, -1))

    def unsqueeze(self, dim):
        d = _dim(dim, self.ndim + 1)
        return self.reshape(self.shape[:d] + (1,) + self.shape[d:])

    def squeeze(self, dim=None):
        if dim is None:
            return self.reshape(tuple(n for n in self.shape if n != 1))
        dims = _dims(dim if isinstance(dim, (tuple, list)) else (dim,), self.ndim)
        return self.reshape(tuple(n for i, n in enumerate(self.shape) if not (i in dims and n == 1)))

    def flatten(self, start_dim=0, end_dim=-1):
        if self.ndim == 0:
            return self.reshape(1)
        s, e = _dim(start_dim, self.ndim, "start_dim"), _dim(end_dim, self.ndim, "end_dim")
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        return self.reshape(self.shape[:s] + (-1,) + self.shape[e + 1:])

    def contiguous(self, memory_format=None):
        """self where its storage is in C order (or another memory format is named: minifp's arrays choose their
        own), else a C-order copy, as PyTorch's (a conv weight takes its gradient's layout at its first update)."""
        other = getattr(memory_format, "name", "contiguous_format") != "contiguous_format"
        return self if other or storage(self).flags.c_contiguous else self.clone()

    def detach_(self):
        return detach_(self)

    # -- math with PyTorch's spellings ------------------------------------------------------------
    def sum(self, dim=None, keepdim=False, dtype=None):
        x = self.to(dtype) if dtype is not None else self
        if x.fmt is None:
            xp = array_module(storage(x))
            return made_like(x, xp.asarray(storage(x).sum(axis=_dims(dim, x.ndim), keepdims=keepdim), np.int64), None)
        return apply("sum", x, axis=_dims(dim, x.ndim) if x.ndim else None, keepdims=keepdim)

    def mean(self, dim=None, keepdim=False, dtype=None):
        if self.fmt is None and dtype is None:
            raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating "
                               f"point or complex dtype. Got: {_type_name(self)}")
        if dtype is not None and not as_dtype(dtype).is_floating_point:
            raise RuntimeError(f"mean(): could not infer output dtype. Optional dtype must be either a floating "
                               f"point or complex dtype. Got: {_type_name(zeros(0, dtype=dtype))}")
        x = self.to(dtype) if dtype is not None else self
        # a 0-dim tensor takes dim 0 (or -1), as PyTorch allows: its one value
        return apply("mean", x, axis=_dims(dim, x.ndim) if x.ndim else None, keepdims=keepdim)

    def max(self, dim=None, keepdim=False):
        """The largest value, or with dim: (values, indices) along dim."""
        if isinstance(dim, _EngineTensor):
            return maximum(self, dim)
        if dim is None:
            return _numpy_result(np.max, self) if self.fmt is None and self.numel() else apply("max", self)
        d = _dim(dim, self.ndim)
        return _MAX(apply("max", self, axis=d, keepdims=keepdim), self.argmax(d, keepdim))

    def min(self, dim=None, keepdim=False):
        if isinstance(dim, _EngineTensor):
            return minimum(self, dim)
        if dim is None:
            return _numpy_result(np.min, self) if self.fmt is None and self.numel() else -apply("max", -self)
        d = _dim(dim, self.ndim)
        return _MIN(-apply("max", -self, axis=d, keepdims=keepdim), self.argmin(d, keepdim))

    def argmax(self, dim=None, keepdim=False):
        return _arg(np.argmax, self, dim, keepdim)

    def argmin(self, dim=None, keepdim=False):
        return _arg(np.argmin, self, dim, keepdim)

    def softmax(self, dim, dtype=None):
        x = self.to(dtype) if dtype is not None else self
        return apply("softmax", x, axis=_dim(dim, x.ndim) if x.ndim else None)     # a 0-dim tensor: its one value

    def log_softmax(self, dim, dtype=None):
        x = self.to(dtype) if dtype is not None else self
        return apply("log_softmax", x, axis=_dim(dim, x.ndim) if x.ndim else None)

    def clamp(self, min=None, max=None):
        if self.fmt is not None and not isinstance(min, _EngineTensor) and not isinstance(max, _EngineTensor) \
                and (min is not None or max is not None):
            return apply("clamp", self, min=None if min is None else float(min), max=None if max is None else
                         float(max))        # one op: the gradient passes at the bounds too, as PyTorch's
        out = self if min is None else maximum(self, min)
        return out if max is None else minimum(out, max)

    clip = clamp

    def pow(self, exponent):
        return self ** exponent

    def matmul(self, other):
        return matmul(self, other)

    __matmul__ = matmul
    __add__, __radd__ = _binary("add")
    __sub__, __rsub__ = _binary("sub")
    __mul__, __rmul__ = _binary("mul")
    __truediv__ = _binary("div")[0]

    def __rtruediv__(self, other):          # PyTorch's: reciprocal(self) * other, two ops (and two roundings)
        return apply("mul", apply("reciprocal", self), other, _out=_weak_out((self, other)))
    __pow__, __rpow__ = _binary("pow")

    def isfinite(self):
        return _predicate(np.isfinite, self)

    def isnan(self):
        return _predicate(np.isnan, self)

    def isinf(self):
        return _predicate(np.isinf, self)

    def all(self):
        return made_like(self, np.asarray(bool(np.all(to_numpy(storage(self))))), None)

    def any(self):
        return made_like(self, np.asarray(bool(np.any(to_numpy(storage(self))))), None)

    def __repr__(self):
        values = to_numpy(self.float32() if self.fmt is not None else storage(self))
        formatter = {"float_kind": _float_formatter(values)} if self.fmt is not None else \
            {"bool": lambda v, w=5 if not values.all() else 4: str(bool(v)).rjust(w)}   # (as wide as needed)
        body = np.array2string(values, separator=", ", prefix="tensor(", threshold=PRINT["threshold"],
                               edgeitems=PRINT["edgeitems"], max_line_width=PRINT["linewidth"], formatter=formatter).replace(", ..., ", ",  ..., ")     # (PyTorch's " ...")
        extras = ["device='cuda:0'"] if self.device == "cuda" else []
        if values.size == 0 and values.ndim != 1:
            extras.append(f"size={values.shape}")
        if self.fmt is not None and not self.fmt.is_float32 or self.fmt is None and (values.size == 0 or storage(
                self).dtype not in (np.int64, np.bool_)):   # PyTorch names no default dtype, unless no value shows it
            extras.append(f"dtype={self.dtype}")
        if made_by(self) is not None:
            extras.append(f"grad_fn=<{_graph.grad_fn(self).name().rsplit('::', 1)[-1]}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return f"tensor({body}{''.join(', ' + e for e in extras)})"

    __hash__ = _EngineTensor.__hash__


for _name in ("exp", "log", "sqrt", "tanh", "sigmoid", "relu", "abs", "neg"):
    setattr(Tensor, _name, getattr(_EngineTensor, _name))


# torch.set_printoptions' settings (its "default" profile)
PRINT = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}


def _float_formatter(values):
    """PyTorch's way of printing floats: "17." when every value is whole, else `precision` decimals, or scientific
    notation when the magnitudes span more than 1000x (or pass 1e8, or fall under 1e-4) unless sci_mode says;
    one width."""
    edge, precision = PRINT["edgeitems"], PRINT["precision"]
    if values.size > PRINT["threshold"]:    # only the values printed count, as PyTorch's summary
        for axis in range(values.ndim):
            if values.shape[axis] > 2 * edge:
                values = np.concatenate([np.take(values, range(edge), axis), np.take(values, range(-edge, 0), axis)],
                                        axis)
    shown = values[np.isfinite(values) & (values != 0)]
    finite = np.abs(shown).astype(np.float64)
    whole = bool(np.all(np.ceil(finite) == finite))
    big, small = (finite.max(), finite.min()) if finite.size else (1.0, 1.0)
    sci = big / small > 1000 or big > 1e8 or (not whole and small < 1e-4)
    sci = sci if PRINT["sci_mode"] is None else PRINT["sci_mode"]
    spec = f"{{:.{precision}e}}" if sci else "{:.0f}." if whole else f"{{:.{precision}f}}"
    text = lambda v: spec.format(v) if np.isfinite(v) else str(float(v))
    # One width, that of the widest nonzero finite value (PyTorch's _Formatter: zeros, inf and NaN count not)
    width = max((len(text(v)) for v in shown[:2000]), default=1)
    return lambda v: text(v).rjust(width)


def return_type(name, fields=("values", "indices")):
    """torch.return_types.<name>: a named tuple, printed as PyTorch prints its results."""
    def __repr__(self):
        return f"torch.return_types.{name}(\n" + ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self)) + ")"
    return type(name, (collections.namedtuple(name, fields),), {"__slots__": (), "__repr__": __repr__,
                                                               "__module__": "torch.return_types"})


_MAX, _MIN = return_type("max"), return_type("min")


def _arg(fn, x, dim, keepdim):
    """argmax/argmin as an int64 tensor (no gradient)."""
    data = to_numpy(x.float32() if x.fmt is not None else storage(x))
    if dim is None:
        return made_like(x, np.asarray(fn(data), np.int64), None)
    d = _dim(dim, x.ndim)
    out = fn(data, axis=d)
    return made_like(x, np.expand_dims(out, d) if keepdim else np.asarray(out, np.int64), None)


def _predicate(fn, x):
    """isfinite/isnan/isinf as a bool tensor; integers are all finite."""
    return made_like(x, fn(x.float32()) if x.fmt is not None else np.full(storage(x).shape, fn is np.isfinite), None)


def _int_cast(x, d):
    """A float or integer tensor converted to an integer dtype (toward zero, as PyTorch)."""
    values = x.float32() if x.fmt is not None else storage(x)
    return made_like(x, np.trunc(values).astype(d.numpy) if x.fmt is not None else values.astype(d.numpy), None)


# -- making tensors ------------------------------------------------------------------------------------------


def _on(t, device, requires_grad=False):
    """An engine tensor's values as a new face tensor on `device`."""
    return make(Tensor, _device.array_on(storage(t), device), t.fmt, requires_grad, device)


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding `data` (numbers, nested lists, arrays or tensors) rounded into `dtype`."""
    device = _device.parse(device) if device is not None else None
    numbers_given = not isinstance(data, (_EngineTensor, np.ndarray))     # Python numbers (lists of them)
    if isinstance(data, _EngineTensor):
        source_device = data.device
        data = data.float32() if data.fmt is not None else storage(data)
    else:
        source_device = "cpu"
    arr = np.asarray(to_numpy(data)) if not hasattr(data, "__cuda_array_interface__") else data
    d = as_dtype(dtype) if dtype is not None else _infer(arr)
    fmt = format_of(d)
    if fmt is None:
        if requires_grad:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        if numbers_given and d is not bool_ and arr.dtype.kind in "iuf" and not _fits(arr, d.numpy):
            raise RuntimeError(f"value cannot be converted to type {np.dtype(d.numpy).name} without overflow")
        values = np.trunc(arr).astype(d.numpy) if arr.dtype.kind == "f" else np.array(arr, d.numpy)
        return make(Tensor, _device.array_on(values, device or source_device), None, False, device or source_device)
    t = _engine_tensor(arr, dtype=_CASTS.get(fmt, fmt))
    t.fmt = fmt
    return _on(t, device or source_device, requires_grad)


def as_tensor(data, dtype=None, device=None):
    """data itself where it is a tensor of that dtype and device (else cast or moved), a NumPy array's memory shared
    where it has the dtype (from_numpy), else a new tensor of data's values."""
    if isinstance(data, _EngineTensor):
        out = data.to(dtype) if dtype is not None else data
        return out.to(device) if device is not None else out
    if isinstance(data, np.ndarray) and (dtype is None or as_dtype(dtype) is _infer(data)) and \
            (device is None or str(device) == "cpu"):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def _fits(arr, dtype):
    """Whether every number (finite) lies in the integer dtype's range, as PyTorch checks the Python numbers it
    converts (arrays wrap around, as NumPy's casts do)."""
    info = np.iinfo(dtype)
    return bool(np.all((arr >= info.min) & (arr <= info.max)))     # (NaN compares false)


def _infer(arr):
    """PyTorch's dtype for data: floats -> the default dtype (float64 arrays too: minifp has no float64)."""
    kind = arr.dtype.kind
    if kind == "b":
        return bool_
    if kind in "iu":
        return _BY_NUMPY.get(arr.dtype, int64)
    if engine.format_of(arr.dtype) is not None and arr.dtype not in (np.float32, np.float64):
        return as_dtype(engine.format_of(arr.dtype))
    return _default[0]


# id(array) -> a weak reference to a NumPy array that a tensor's user holds (from_numpy's, numpy()'s) or that views
# of the tensor look into: an in-place change of the tensor is written into it, as PyTorch's shared memory shows it
EXPOSED = {}


def expose(array):
    """Note that `array`, a tensor's storage, is seen from outside the tensor."""
    key = id(array)
    if key not in EXPOSED:
        EXPOSED[key] = weakref.ref(array, lambda _, key=key: EXPOSED.pop(key, None))


def from_numpy(a):
    """A tensor over the array's memory, in its own dtype (PyTorch's shares it; float64 becomes a float32 copy:
    minifp has no float64)."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(a).__name__})")
    t = tensor(a)
    if storage(t).dtype == a.dtype and a.dtype.isnative and a.flags.c_contiguous and a.flags.writeable:
        set_storage(t, a, t.fmt)
        expose(a)
    return t


def _filled(shape, value, dtype, device, requires_grad):
    d = as_dtype(dtype) if dtype is not None else (_default[0] if isinstance(value, float) or value is None
                                                  else _infer(np.asarray(value)))
    return tensor(np.full(_sizes(shape), 0 if value is None else value), dtype=d, device=device,
                  requires_grad=requires_grad)


def _dense(layout):
    """PyTorch's layout, pin_memory and memory_format arguments are accepted (minifp's tensors are dense and their
    values do not depend on memory); a layout other than torch.strided is refused."""
    if layout is not None and repr(layout) != "torch.strided":
        raise NotImplementedError(f"layout={layout!r}: minifp's tensors are dense (torch.strided only)")


def _sizes(shape, fn=None):
    """A factory's shape (f(2, 3) or f((2, 3))), refused as PyTorch refuses a negative size (zeros: its own words)."""
    shape = _shape_args(shape)
    bad = next((n for n in shape if isinstance(n, numbers.Integral) and n < 0), None)
    if bad is not None:
        raise RuntimeError(f"{fn}: Dimension size must be non-negative." if fn else
                           f"Trying to create tensor with negative dimension {bad}: {list(shape)}")
    return shape


def zeros(*size, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    _dense(layout)
    _sizes(size, "zeros")
    return _filled(size, 0.0 if dtype is None else 0, dtype, device, requires_grad)


def ones(*size, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    _dense(layout)
    return _filled(size, 1.0 if dtype is None else 1, dtype, device, requires_grad)


def empty(*size, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=None):
    _dense(layout)
    return _filled(size, 0.0 if dtype is None else 0, dtype, device, requires_grad)


def full(size, fill_value, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    _dense(layout)
    return _filled(size, fill_value, dtype, device, requires_grad)


def _like(fn, x, dtype, device, requires_grad, *args):
    return fn(x.shape, *args, dtype=x.dtype if dtype is None else dtype, device=device or x.device,
              requires_grad=requires_grad)


def zeros_like(input, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    _dense(layout)
    return _like(zeros, input, dtype, device, requires_grad)


def ones_like(input, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    _dense(layout)
    return _like(ones, input, dtype, device, requires_grad)


def empty_like(input, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    _dense(layout)
    return _like(zeros, input, dtype, device, requires_grad)


def full_like(input, fill_value, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    _dense(layout)
    return _like(full, input, dtype, device, requires_grad, fill_value)


def randn(*size, generator=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """Standard normal samples from minifp's seeded generator (not PyTorch's stream: values differ)."""
    _dense(layout)
    values = _rng(generator, "randn()", device).standard_normal(_sizes(size))
    return tensor(values, dtype=dtype or _default[0], device=device, requires_grad=requires_grad)


def rand(*size, generator=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """Uniform samples in [0, 1) from minifp's seeded generator."""
    _dense(layout)
    values = _rng(generator, "rand()", device).random(_sizes(size))
    return tensor(values, dtype=dtype or _default[0], device=device, requires_grad=requires_grad)


def randint(*args, size=None, low=None, high=None, generator=None, dtype=None, device=None, requires_grad=False):
    """randint(high, size) or randint(low, high, size): integers in [low, high) (int64 unless told)."""
    if size is None and args and isinstance(args[-1], (tuple, list, Size)):
        args, size = args[:-1], args[-1]
    bounds = [*args, *([low] if low is not None else []), *([high] if high is not None else [])]
    if size is None or len(bounds) not in (1, 2) or not all(isinstance(b, numbers.Real) for b in bounds):
        raise TypeError("randint() received an invalid combination of arguments: expected (high, size) or "
                        "(low, high, size), with size a tuple of ints")
    low, high = (0, bounds[0]) if len(bounds) == 1 else bounds
    if not low < high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return tensor(_rng(generator, "randint()", device).integers(low, high, size=_sizes(size)), dtype=dtype or int64,
                  device=device, requires_grad=requires_grad)


def _rng(g, where="random", device=None):
    return stream(g, where, device)


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False):
    """A random permutation of 0..n-1 (int64 unless dtype says otherwise), from `generator` or the global stream."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"randperm(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    d = int64 if dtype is None else as_dtype(dtype)
    if getattr(d, "fmt", d) is None and d.numpy != np.bool_ and n > 0 and n - 1 > np.iinfo(d.numpy).max:
        raise RuntimeError(f"value cannot be converted to type {np.dtype(d.numpy).name}_t without overflow")
    return tensor(_rng(generator, "randperm()", device).permutation(int(n)), dtype=d, device=device,
                  requires_grad=requires_grad)


def rand_like(input, *, dtype=None, device=None, requires_grad=False, generator=None):
    """rand of input's shape, dtype and device."""
    d = _float_like(input, dtype, "check_uniform_bounds")
    return rand(input.shape, generator=generator, dtype=d, device=device or input.device, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, generator=None):
    """randn of input's shape, dtype and device."""
    d = _float_like(input, dtype, "normal_kernel_cpu")
    return randn(input.shape, generator=generator, dtype=d, device=device or input.device, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False, generator=None):
    """randint_like(input, high) or (input, low, high): integers in [low, high) of input's shape and dtype."""
    low, high = (0, low) if high is None else (low, high)
    values = _rng(generator, "randint_like()", device or input.device).integers(low, high, size=tuple(input.shape))
    return tensor(values, dtype=input.dtype if dtype is None else dtype, device=device or input.device,
                  requires_grad=requires_grad)


def _float_like(input, dtype, kernel):
    """The floating dtype a *_like sampler makes: dtype, else input's; PyTorch's error for an integer one."""
    d = input.dtype if dtype is None else as_dtype(dtype)
    if not getattr(d, "is_floating_point", True):
        name = _type_name(input) if dtype is None else {"int64": "Long", "int32": "Int"}.get(d.name, d.name)
        raise NotImplementedError(f'"{kernel}" not implemented for \'{name}\'')
    return d


def bernoulli(input, p=None, *, generator=None, out=None):
    """1 with probability input (or p), else 0, in input's dtype and shape."""
    probs = np.asarray(to_numpy(input.float32()), np.float64) if p is None else np.full(tuple(input.shape), p)
    if not ((probs >= 0) & (probs <= 1)).all():
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    draws = _rng(generator, "bernoulli()", input.device).random(probs.shape) < probs
    return tensor(draws, dtype=input.dtype, device=input.device)


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, device=None, requires_grad=False):
    """Normal samples: mean and std tensors or numbers broadcast together, or numbers and a size."""
    tensors = [t for t in (mean, std) if isinstance(t, _EngineTensor)]
    if not tensors and size is None:
        raise TypeError("normal() received an invalid combination of arguments: two numbers need a size")
    m, sd = (np.asarray(to_numpy(t.float32()), np.float64) if isinstance(t, _EngineTensor) else np.float64(t)
             for t in (mean, std))
    if (np.asarray(sd) < 0).any():
        raise RuntimeError("normal expects all elements of std >= 0.0" if isinstance(std, _EngineTensor) else
                           f"normal expects std >= 0.0, but found std {std:g}")
    shape = broadcast_shape(np.shape(m), np.shape(sd)) if size is None else _shape_args((size,))
    device = device or (tensors[0].device if tensors else None)
    values = _rng(generator, "normal()", device).normal(np.broadcast_to(m, shape), np.broadcast_to(sd, shape))
    d = dtype or (tensors[0].dtype if tensors else _default[0])
    return tensor(values, dtype=d, device=device, requires_grad=requires_grad)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Indices drawn from the categories of each row of `input` (weights, not necessarily normalised), int64 of
    shape (num_samples,) or (rows, num_samples); without replacement each row's draws are distinct."""
    p = _multinomial_weights(input, num_samples, replacement)
    g = _rng(generator, "multinomial()", input.device)
    rows = p if p.ndim == 2 else p[None]
    if replacement:                      # inverse CDF: a zero-weight category owns no interval of [0, total)
        cdf = np.cumsum(rows, axis=1)
        u = g.random((rows.shape[0], num_samples)) * cdf[:, -1:]
        last = rows.shape[1] - 1 - np.argmax(rows[:, ::-1] > 0, axis=1)
        picks = np.stack([np.minimum(np.searchsorted(c, r, side="right"), m) for c, r, m in zip(cdf, u, last)])
    else:                                # the largest weight / Exp(1) keys: draws in order, without replacement
        keys = rows / g.standard_exponential(rows.shape)
        picks = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    picks = picks.astype(np.int64)
    return make(Tensor, _device.array_on(picks if p.ndim == 2 else picks[0], input.device), None, False,
                input.device)


def _multinomial_weights(input, num_samples, replacement):
    """The rows of weights as float64, after PyTorch's checks (in its order)."""
    if isinstance(num_samples, bool) or not isinstance(num_samples, numbers.Integral):
        raise TypeError(f"multinomial(): argument 'num_samples' (position 2) must be int, not "
                        f"{type(num_samples).__name__}")
    if input.fmt is None:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {_type_name(input)}")
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > input.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if input.shape[-1] > 2 ** 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    p = np.asarray(to_numpy(input.float32()), dtype=np.float64)
    if p.size and not (np.isfinite(p).all() and (p >= 0).all()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if p.size == 0 or (p.sum(axis=-1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    return p


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Evenly spaced values in [start, end): int64 for integer arguments, else the default float dtype."""
    start, end = (0, start) if end is None else (start, end)
    ints = all(isinstance(v, numbers.Integral) for v in (start, end, step))
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    values = np.arange(start, end, step, dtype=np.int64 if ints else np.float64)
    return tensor(values, dtype=dtype or (int64 if ints else _default[0]), device=device, requires_grad=requires_grad)


def is_tensor(x):
    return isinstance(x, _EngineTensor)


# -- functions with PyTorch's names --------------------------------------------------------------------------


def matmul(input, other):
    """Matrix product; outside autocast both must have one dtype, as in PyTorch."""
    input, other = _t(input), _t(other)
    check_same_dtype(input, other)
    try:
        return apply("matmul", input, other)
    except ValueError:
        raise RuntimeError(_matmul_refusal(tuple(input.shape), tuple(other.shape))) from None


def _matmul_refusal(a, b):
    """PyTorch's words for shapes its matmul cannot multiply: those of the kernel each case runs (dot, mv, mm, or
    bmm over the broadcast batch)."""
    if not a or not b:
        return f"both arguments to matmul need to be at least 1D, but they are {len(a)}D and {len(b)}D"
    if len(a) == len(b) == 1:
        return (f"inconsistent tensor size, expected tensor [{a[0]}] and src [{b[0]}] to have the same number of "
                f"elements, but got {a[0]} and {b[0]} elements respectively")
    if len(b) <= 2:                 # a folds to one matrix (its rows, every batch's): mv or mm
        rows = math.prod(a[:-1]) if len(a) > 1 else 1
        if len(b) == 1:
            return f"size mismatch, got input ({rows}), mat ({rows}x{a[-1]}), vec ({b[0]})"
        return f"mat1 and mat2 shapes cannot be multiplied ({rows}x{a[-1]} and {b[0]}x{b[1]})"
    batch_a, batch_b = a[:-2], b[:-2]
    refused = broadcast_refusal([batch_a, batch_b])
    if refused:
        return refused
    batch = math.prod(np.broadcast_shapes(batch_a, batch_b))
    return (f"Expected size for first two dimensions of batch2 tensor to be: [{batch}, {a[-1]}] but got: "
            f"[{batch}, {b[-2]}].")


# Ops whose NumPy refusal may speak of broadcasting though PyTorch's words are others (a product's batch, a
# value assigned into a tensor): they keep the engine's words (matmul gets PyTorch's from the face's matmul).
_NOT_BROADCAST = {"matmul", "setitem"}


def check_output_gradients(outputs, gradients):
    """PyTorch's RuntimeErrors for output gradients that cannot seed a backward: a missing one of a non-scalar
    output, or one of another shape."""
    for i, (out, g) in enumerate(zip(outputs, gradients)):
        if g is None:
            if out.requires_grad and storage(out).size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
        elif isinstance(g, _EngineTensor) and tuple(g.shape) != tuple(out.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {Size(g.shape)} and "
                               f"output[{i}] has a shape of {Size(out.shape)}.")


def broadcast_shape(*shapes):
    """The shape the shapes broadcast to, or PyTorch's RuntimeError naming the first dimension that clashes."""
    refused = broadcast_refusal(shapes)
    if refused:
        raise RuntimeError(refused)
    return np.broadcast_shapes(*shapes)


def _index_words(message):
    """PyTorch's words for NumPy's refusal of an index out of range or of too many indices, else None."""
    found = re.fullmatch(r"index (-?\d+) is out of bounds for axis (\d+) with size (\d+)", message)
    if found:
        return "index {} is out of bounds for dimension {} with size {}".format(*found.groups())
    found = re.fullmatch(r"too many indices for array: array is (\d+)-dimensional, but \d+ were indexed", message)
    return found and f"too many indices for tensor of dimension {found.group(1)}"


def broadcast_refusal(shapes):
    """PyTorch's words where shapes do not broadcast (its infer_size, operand by operand from the last
    dimension), else None."""
    out = ()
    for shape in shapes:
        n = max(len(out), len(shape))
        a, b = (1,) * (n - len(out)) + tuple(out), (1,) * (n - len(shape)) + tuple(shape)
        for i in reversed(range(n)):
            if a[i] != b[i] and a[i] != 1 and b[i] != 1:
                return (f"The size of tensor a ({a[i]}) must match the size of tensor b ({b[i]}) at non-singleton "
                        f"dimension {i}")
        out = tuple(x if y == 1 else y for x, y in zip(a, b))
    return None


def maximum(input, other):
    return apply("maximum", input, other, _out=_weak_out((input, other)))


def minimum(input, other):
    return apply("minimum", input, other, _out=_weak_out((input, other)))


def _t(x):
    return x if isinstance(x, _EngineTensor) else tensor(x)


def parse_to(args, kwargs, t):
    """(device, dtype) from the ways PyTorch's .to() is called: to(dtype), to(device, dtype), to(tensor)."""
    where, d = kwargs.pop("device", None), kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None), kwargs.pop("copy", None), kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, _EngineTensor):
            where, d = a.device, as_dtype(a.fmt) if a.fmt is not None else None
        elif isinstance(a, (str, _device.device, int)) and not isinstance(a, bool):
            where = a
        elif a is not None and not isinstance(a, bool):
            d = a
    return (_device.parse(where) if where is not None else None), (as_dtype(d) if d is not None else None)


_generator.tensor_of = tensor      # (a copy: the generator's state arrays are its own)
