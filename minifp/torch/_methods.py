"""Tensor methods a training script reaches beyond the basics: assignment and in-place ops, splitting, selecting,
sorting, masks, expansion, statistics, and the Python protocols of a 0-dim tensor, with PyTorch's spellings.

Each is an engine op or a composition of them (values exact where only values move); in-place ops compute the
result from the tensor's value before the change and the tensor then stands for it (engine.become), so a graph
through it stays correct. `.data` and `detach()` give an alias whose in-place changes reach the tensor too, as
PyTorch's shared storage does (old scripts update parameters through `p.data.add_(...)`); `p.data = t` re-stores p.
"""
from __future__ import annotations

import numbers
import weakref

import numpy as np

from .. import engine
from ..engine import apply, become, made_by, made_like, rewrap, set_storage, storage, Tensor as _EngineTensor, to_numpy
from . import _tensor
from ._graph import Strided, grad_fn
from ._legacy import construct
from .linalg import vector_norm
from ._tensor import Tensor, _CPP_NAMES, alpha_params, return_type, _dense, _dim, _dims, _shape_args, _type_name, empty, full, ones, \
    tensor

__all__ = ["check_grad", "topk", "sort", "argsort", "split", "chunk", "unbind", "tril", "triu", "flip", "gather", "var", "std",
           "cumsum", "masked_fill", "broadcast_to", "count_nonzero", "amax", "amin", "norm"]

_SORT, _TOPK = return_type("sort"), return_type("topk")


def _as_operand(x, like):
    """x as a tensor of like's dtype and device (Python numbers, arrays and tensors of other dtypes alike)."""
    if isinstance(x, _EngineTensor):
        return x if x.fmt == like.fmt and x.fmt is not None else x.to(like.dtype) if like.fmt is not None or \
            x.fmt is None else _cast_refused(x, like)
    return tensor(x, dtype=like.dtype, device=like.device)


def _cast_refused(x, like):
    raise RuntimeError(f"result type {_type_name(x)} can't be cast to the desired output type {_type_name(like)}")


# -- assignment and in-place ops ---------------------------------------------------------------------------

# id(an alias or a view) -> (a weak reference to it, the tensor it shows, where: None for an alias (.data, detach():
# all of it), else the view's _Place in that tensor (PyTorch's views x[0], x.view(...), x.t(): NumPy views of x's
# storage, found by their memory))
_ORIGINS = {}
# id(a tensor) -> the keys in _ORIGINS of its live aliases and views (an in-place change of it reaches them)
_VIEWS = {}


def _alias_of(alias, origin, where=None):
    key, at = id(alias), id(origin)     # (tensors compare elementwise: no WeakKeyDictionary; entries leave with alias)
    _ORIGINS[key] = (weakref.ref(alias, lambda _, key=key, at=at, forget=_forget: forget(key, at)), origin, where)
    _VIEWS.setdefault(at, set()).add(key)
    return alias


def _forget(key, at, origins=_ORIGINS, views=_VIEWS):
    # (the tables bound as defaults, as _forget is in the callback: an alias that lives until the interpreter's
    # exit is forgotten after this module's globals are gone)
    origins.pop(key, None)
    keys = views.get(at)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del views[at]


def _detach(self):
    """The same values, cut from the graph (PyTorch's detach() and .data); in-place changes to it reach this
    tensor, as PyTorch's shared storage does."""
    return _alias_of(_EngineTensor.detach(self), self)


def _set_data(self, new):
    """p.data = t: p holds t's values, dtype and device from now on (p stays the parameter its optimizer holds)."""
    if not isinstance(new, _EngineTensor):
        raise TypeError(f"data must be a Tensor, got {type(new).__name__}")
    set_storage(self, storage(new), new.fmt, new.device)


class _Place:
    """Where a view's elements lie in its origin: worked out on the first write, from `flat()`, their flat
    positions in an origin of `shape`; and how PyTorch made the view (its CreationMeta): `multi` (("Split", i):
    output i of an op giving several views, or a view of one), `no_grad` (made under no_grad, or a view of such a
    view)."""

    __slots__ = ("shape", "flat", "found", "multi", "no_grad")

    def __init__(self, shape, flat, origin=None, multi=None):
        self.shape, self.flat, self.found, self.multi = shape, flat, None, multi
        above = _where(origin) if origin is not None else None
        self.no_grad = not engine.is_grad_enabled() or above is not None and above.no_grad
        if multi is None and above is not None and above.multi is not None:    # (a view of output i: as restricted)
            self.multi = (None, 0)

    def index(self):
        """The index (a tuple of integer arrays) of the view's elements in the origin."""
        if self.found is None:
            self.found, self.flat = np.unravel_index(self.flat(), self.shape), None
        return self.found


def _where(t):
    """t's _Place in the tensor it is a view of, or None (no view: a tensor of its own, or an alias)."""
    entry = _ORIGINS.get(id(t))
    return entry[2] if entry is not None and entry[0]() is t else None


def _positions(view, base):
    """The flat index in `base` of every element of `view`, a NumPy view into base's memory."""
    lo_b, hi_b = np.lib.array_utils.byte_bounds(base)
    lo_v, hi_v = np.lib.array_utils.byte_bounds(view)
    lo, item = min(lo_b, lo_v), base.itemsize
    memory = np.zeros((max(hi_b, hi_v) - lo) // item, np.int64)

    def laid(a):        # a's elements as places in `memory`
        at = (a.__array_interface__["data"][0] - lo) // item
        return np.lib.stride_tricks.as_strided(memory[at:], a.shape, [s // item * 8 for s in a.strides])
    laid(base)[...] = np.arange(base.size).reshape(base.shape)
    return laid(view).copy()


def _viewing(method, multi=None):
    """A Tensor method whose result PyTorch makes a view of self: in-place changes to the result reach self."""
    def view(self, *args, **kwargs):
        out = method(self, *args, **kwargs)
        data, base = storage(out), storage(self)
        if type(data) is np.ndarray and type(base) is np.ndarray and data.size and np.may_share_memory(data, base):
            _alias_of(out, self, _Place(base.shape, lambda: _positions(data, base), self, multi))
            _tensor.expose(base)
        return out
    view.__name__ = getattr(method, "__name__", "view")
    return view


def _basic(index):
    """Whether an index is PyTorch's basic indexing (ints, slices, None, ...), whose result is a view."""
    parts = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or type(i) in (int, slice) for i in parts)


def _viewing_at(method, positions, viewing=lambda *args, **kwargs: True):
    """A Tensor method whose result is a view of self's elements at positions(self's flat positions, *args,
    **kwargs) where viewing(*args, **kwargs) (else a copy): worked out on the first write (__getitem__, diagonal)."""
    def view(self, *args, **kwargs):
        out = method(self, *args, **kwargs)
        if storage(out).size and viewing(*args, **kwargs):
            if type(storage(self)) is np.ndarray and np.may_share_memory(storage(out), storage(self)):
                _tensor.expose(storage(self))
            shape = tuple(self.shape)
            _alias_of(out, self, _Place(shape, lambda: positions(np.arange(int(np.prod(shape))).reshape(shape),
                                                                 *args, **kwargs), self))
        return out
    view.__name__ = method.__name__
    return view


def _kept_in(old, t):
    """Where t's storage before an in-place change, `old`, is seen from outside (a NumPy array its user holds, or
    that views of t look into), t's new values are written into it and t keeps it; not where autograd may still read
    the old values (t requires grad and grad mode is on)."""
    ref = _tensor.EXPOSED.get(id(old))
    data = storage(t)
    if ref is None or ref() is not old or data is old or type(data) is not np.ndarray or data.shape != old.shape \
            or data.dtype != old.dtype or not old.flags.writeable or t.requires_grad and engine.is_grad_enabled():
        return
    np.copyto(old, data)
    set_storage(t, old, t.fmt)


def _views_checked(t):
    """PyTorch's refusal of an in-place change to a view of a leaf that requires grad (before anything changes)."""
    entry = _ORIGINS.get(id(t))
    while entry is not None and entry[0]() is t and entry[2] is not None:
        t = entry[1]
        if t.requires_grad and made_by(t) is None and engine.is_grad_enabled():
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
        entry = _ORIGINS.get(id(t))


_MULTI = (" This view is the output of a function that returns multiple views. Such functions do not allow the output "
          "views to be modified inplace. You should replace the inplace operation by an out-of-place one.")
_NO_GRAD = (" Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
            "moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace "
            "to be tracked) or both outside (if you want the inplace to be tracked).")


def _rebase_checked(t, new):
    """PyTorch's refusals of a tracked in-place change (to `new`) of a view it will not rebase: an output of split,
    chunk or unbind (or a view of one), or a view made under no_grad (before anything changes)."""
    where = _where(t)
    if where is None or not (where.multi or where.no_grad) or not engine.is_grad_enabled():
        return
    root, _ = _root(t)
    if not (new.requires_grad or root is not None and root.requires_grad):
        return
    if where.no_grad:
        raise RuntimeError("A view was created in no_grad mode and is being modified inplace with grad mode enabled."
                           + _NO_GRAD)
    if made_by(t) is None:      # (an output of a tensor that requires no grad: PyTorch words it so)
        raise RuntimeError("A view was created in no_grad mode and is being modified inplace with grad mode enabled."
                           + _MULTI)
    name, i = where.multi
    name = name or grad_fn(t).name().removesuffix("Backward0")
    raise RuntimeError(f"Output {i} of {name} is a view and is being modified inplace." + _MULTI)


def _root(t):
    """(the tensor at the end of t's chain of views, the index of t's elements in it: None where t is no view), or
    (None, None) where an in-place shape op has changed a tensor of the chain since its view was taken."""
    index, where = None, _where(t)
    while where is not None:
        origin = _ORIGINS[id(t)][1]
        if tuple(origin.shape) != where.shape:
            return None, None
        index = where.index() if index is None else tuple(a[index] for a in where.index())
        t, where = origin, _where(origin)
    return t, index


def _shared_version(t):
    """t._version: the count of in-place changes of the tensor at the end of t's chain of views and .data aliases,
    which every in-place op on one of them reaches (PyTorch's views and their base share one version counter)."""
    entry = _ORIGINS.get(id(t))
    while entry is not None and entry[0]() is t:
        t = entry[1]
        entry = _ORIGINS.get(id(t))
    return engine.inplace_version(t)


def _before(t):
    """What an in-place op on t computes from: t as it was (values and place in the graph), a tensor of its own
    where a node may read it (t itself then stands for the result)."""
    return rewrap(t, type(t)) if t.requires_grad or engine.is_grad_enabled() else t


def _written(t, region=None):
    """t's new values (at region, an index into t; None: all of it) reach the tensor it is the .data of, or a view
    of (its elements there written, as setitem), and the views of t."""
    entry = _ORIGINS.get(id(t))
    if entry is not None and entry[0]() is t:
        origin, where = entry[1], entry[2]
        if where is None:
            set_storage(origin, storage(t), t.fmt, t.device)
            engine.note_change(origin)          # (PyTorch's .data and detach() share the version counter)
            _written(origin, region)
        elif engine.is_grad_enabled() and t.requires_grad:
            # Under autograd the view's base takes t's values through a node (PyTorch's CopySlices); then the views
            # of the base that show them, t among them, are made anew from it (_refresh)
            root, index = _root(t)
            if root is not None:
                value = rewrap(t, type(t))
                _in_place(root, lambda base: apply("setitem", base, value, index=Strided(index)), index)
                return
        elif tuple(origin.shape) == where.shape:    # (unless an in-place shape op has changed the origin's shape)
            index = where.index()
            _in_place(origin, lambda o: apply("setitem", o, t, index=index), index)
            return
    _refresh(t, region)


def _views(t):
    """(view, its _Place) for each live view of t."""
    found = []
    for key in list(_VIEWS.get(id(t), ())):
        ref, _, where = _ORIGINS.get(key, (lambda: None, None, None))
        view = ref()
        if view is not None and where is not None:
            found.append((view, where))
    return found


def _refresh(base, region=None):
    """The live views of base, and theirs, that show its elements at region (None: all) show base's values now.
    Under autograd each is made anew from base, as PyTorch regenerates a view whose base has changed
    (AsStridedBackward0); elsewhere a view that does not share base's memory takes its values, its node kept. A
    view that shows none of them keeps its node (the backward reads base there as the node read it: the same
    values)."""
    views = _views(base) if id(base) in _VIEWS else ()
    if not views:
        return
    tracked = engine.is_grad_enabled() and base.requires_grad
    source = rewrap(base, type(base)) if tracked else base
    hit = None
    if region is not None:
        hit = np.zeros(base.shape, bool)
        hit[region] = True
    todo = [(base, None, views)]
    while todo:
        origin, above, views = todo.pop()
        for view, where in views:
            if tuple(origin.shape) != where.shape:
                continue
            index = where.index() if above is None else tuple(a[where.index()] for a in above)
            if hit is not None and not hit[index].any():
                continue
            if tracked:         # (the write that changed base counted once: PyTorch's views share its version)
                become(view, apply("getitem", source, index=Strided(index)), counted=False)
            elif not np.may_share_memory(storage(view), storage(base)):
                set_storage(view, storage(base)[index], base.fmt, base.device)
            todo.append((view, index, _views(view)))


def _in_place(t, compute, region=None):
    """t becomes compute(t as it was), rounded into t's own dtype, as PyTorch's in-place ops (x.add_(y), x[i] = v);
    region: where its values change (an index into t), where not everywhere."""
    _views_checked(t)
    if t.requires_grad and made_by(t) is None and engine.is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    old = storage(t)
    new = compute(_before(t))
    if new.shape != t.shape:        # (x += y broadcasts y into x's shape, never x into a larger one)
        raise RuntimeError(f"output with shape {list(t.shape)} doesn't match the broadcast shape {list(new.shape)}")
    if new.fmt is not t.fmt and new.fmt != t.fmt:
        if t.fmt is None:
            _cast_refused(new, t)
        new = new.to(t.dtype)
    _rebase_checked(t, new)
    if engine.is_grad_enabled():
        requires_grad = t.requires_grad
        become(t, new)
        if made_by(t) is None:
            t.requires_grad = requires_grad
    else:               # under no_grad only the values change: a parameter stays one, a result keeps its node
        set_storage(t, storage(new), new.fmt, new.device)
        engine.note_change(t)
    _kept_in(old, t)
    _written(t, region)
    return t


def _filled(t, value, name):
    """t's shape filled with value, as a node of its own that gives t's old values a zero gradient (PyTorch's
    FillBackward2, ZeroBackward0)."""
    out = made_like(t, storage(t).copy(), t.fmt).assign(np.full(t.shape, value, np.float32))
    return engine.function_node([out], [t], lambda g: (_zeros(g),), name=name)[0]


def _copied(t, src):
    """src's values in t's shape and dtype, as a node of its own (PyTorch's CopyBackwards): src's gradient summed
    back to its shape and rounded into its dtype, none for t's old values."""
    values = src.float32() if isinstance(src, _EngineTensor) and src.fmt is not None else np.asarray(src)
    out = made_like(t, storage(t).copy(), t.fmt).assign(np.broadcast_to(values, t.shape))
    return engine.function_node([out], [t, src], lambda g: (_zeros(g), g), name="copy")[0]


def _zeros(g):
    return made_like(g, np.zeros_like(storage(g)), g.fmt)


# fill_, zero_, copy_ under autograd: the node each new value is
_AS_NODES = {"fill_": lambda t, value: _filled(t, value, "fill"), "zero_": lambda t: _filled(t, 0, "zero"),
             "copy_": _copied}


def _refuse_on_leaf(method):
    """fill_, zero_, copy_ (and the random fills): values written straight in, refused on a leaf that requires grad
    as every in-place op; under autograd fill_, zero_ and copy_ are nodes, as other in-place ops."""
    as_node = _AS_NODES.get(method.__name__)

    def checked(self, *args, **kwargs):
        if as_node is not None and engine.is_grad_enabled() and (self.requires_grad or any(
                isinstance(a, _EngineTensor) and a.requires_grad for a in args)):
            return _in_place(self, lambda t: as_node(t, *args, **kwargs))
        _views_checked(self)
        if self.requires_grad and made_by(self) is None and engine.is_grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        old = storage(self)
        out = method(self, *args, **kwargs)
        _kept_in(old, self)
        engine.note_change(self)
        _written(self)
        return out
    checked.__name__ = method.__name__
    return checked


# C++'s names of dtypes, in PyTorch's error for a gradient of another dtype than its tensor's

def check_grad(p, g):
    """What p.grad = g must be: None or a tensor of p's dtype, device and shape (PyTorch's checks, in its order)."""
    if g is None or isinstance(g, _EngineTensor) and g.fmt is p.fmt and g.device == p.device \
            and storage(g).shape == storage(p).shape:      # (the backward's own: the quick test)
        return
    if not isinstance(g, _EngineTensor):
        raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(g).__name__}")
    if g.dtype != p.dtype:
        name = _type_name(g)
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{_CPP_NAMES.get(name, name)}' to a tensor with grad_dtype "
            f"'{_type_name(p)}'. The gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). "
            f"You can set the tensor's grad_dtype attribute with a specific dtype, or None to allow any dtype. Set "
            f"grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may break downstream "
            f"systems that assume they match.")
    if tuple(g.shape) != tuple(p.shape):
        raise RuntimeError(f"attempting to assign a gradient of size '{list(g.shape)}' to a tensor of size "
                           f"'{list(p.shape)}'. Please ensure that the gradient and the tensor are the same size")
    if g.device != p.device:
        raise RuntimeError("assigned grad has data located on a different device")


def _setitem(self, index, value):
    index = _index(index)
    _in_place(self, lambda t: apply("setitem", t, _as_operand(value, t), index=index))


def _index(index):
    """An index with tensors in it as NumPy reads it (bool masks, integer arrays)."""
    if isinstance(index, _EngineTensor):
        return to_numpy(storage(index))
    if isinstance(index, tuple):
        return tuple(to_numpy(storage(i)) if isinstance(i, _EngineTensor) else i for i in index)
    return index


def _arith(name, sign=1.0):
    """x.add_(y, alpha=1) and the like: in place, in x's dtype (other widens into it)."""
    def method(self, other, *, alpha=1):
        alpha = alpha * sign
        if alpha != 1 and name == "add" and self.fmt is not None:    # one FMA, as PyTorch's kernels
            return _in_place(self, lambda t: apply(name, t, other, _out=t.fmt,
                                                   **alpha_params(alpha, t.fmt, (t, other))))
        other = other * alpha if alpha != 1 else other
        return _in_place(self, lambda t: apply(name, t, other, _out=t.fmt if t.fmt is not None else None))
    method.__name__ = f"{name}_"
    return method


def _unary_(name):
    def method(self):
        return _in_place(self, lambda t: getattr(t, name)())
    method.__name__ = f"{name}_"
    return method


def _clamp_(self, min=None, max=None):
    return _in_place(self, lambda t: t.clamp(min, max))


def _masked_fill_(self, mask, value):
    if engine.is_grad_enabled() and self.requires_grad and not (isinstance(value, _EngineTensor)
                                                                 and value.requires_grad):
        return _in_place(self, lambda t: _masked_filled(t, mask, value))
    return _in_place(self, lambda t: masked_fill(t, mask, value))


def _masked_filled(t, mask, value):
    """masked_fill as a node of its own that reads t alone (PyTorch's MaskedFillBackward0: the filled places get no
    gradient), so that a view's CopySlices lists what PyTorch's does."""
    with engine.no_grad():
        out = masked_fill(t, mask, value)
    return engine.function_node([out], [t], lambda g: (masked_fill(g, mask, 0),), name="masked_fill")[0]


# -- splitting and selecting --------------------------------------------------------------------------------


def split(tensor, split_size_or_sections, dim=0):
    """Pieces of `split_size` along dim (the last may be smaller), or of the listed sizes."""
    d = _dim(dim, tensor.ndim)
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, numbers.Integral):
        size = int(split_size_or_sections)
        if size <= 0 and n:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
        sizes = [min(size, n - i) for i in range(0, n, size)] if size else [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {d}), but got split_sizes={sizes}")
    starts = np.cumsum([0] + sizes[:-1])
    return tuple(tensor[(slice(None),) * d + (slice(int(s), int(s) + k),)] for s, k in zip(starts, sizes))


def chunk(input, chunks, dim=0):
    """At most `chunks` pieces of ceil(size / chunks) along dim."""
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    n = input.shape[_dim(dim, input.ndim)]
    return split(input, max(-(-n // chunks), 1), dim)


def unbind(input, dim=0):
    """The slices along dim, each without it."""
    d = _dim(dim, input.ndim)
    return tuple(input[(slice(None),) * d + (i,)] for i in range(input.shape[d]))


def gather(input, dim, index, *, sparse_grad=False):
    """input's values at `index` along dim (index has input's number of dims)."""
    d, idx = _dim(dim, input.ndim), to_numpy(storage(index))
    if idx.size == 0:                   # nothing to read: no checks (PyTorch's)
        return input.reshape(-1)[np.zeros(idx.shape, np.int64)]
    if max(idx.ndim, 1) != max(input.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    if index.fmt is not None or idx.dtype.kind not in "iu":
        raise RuntimeError("gather(): Expected dtype int64 for index")
    if input.ndim == 0 or idx.ndim == 0:    # a 0-dim tensor acts as one of shape [1]
        return gather(input.reshape(1), 0, index.reshape(-1)).reshape(index.shape)
    for i, (m, n) in enumerate(zip(idx.shape, input.shape)):
        if i != d and m > n:
            raise RuntimeError(f"Size does not match at dimension {i} expected index {list(idx.shape)} to be "
                               f"smaller than self {list(input.shape)} apart from dimension {d}")
    if idx.min() < 0 or idx.max() >= input.shape[d]:
        bad = idx.min() if idx.min() < 0 else idx.max()
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {input.shape[d]}")
    grid = list(np.indices(idx.shape, sparse=True))
    grid[d] = idx
    return input[tuple(grid)]


def _select(input, order, k, dim, result):
    """result(values, indices) of the first k positions of `order` (an argsort along dim) along dim."""
    idx = np.take(order, np.arange(k), axis=dim)
    return result(gather(input, dim, made_like(input, idx.astype(np.int64), None)),
                   made_like(input, idx.astype(np.int64), None))


def _order(input, dim, descending, stable=True):
    """The argsort of input along dim (NaN counts as the largest, as in PyTorch)."""
    v = to_numpy(input.float32() if input.fmt is not None else storage(input))
    key = -np.where(np.isnan(v), np.inf, v) if descending else v
    return np.argsort(key, axis=dim, kind="stable")


def topk(input, k, dim=-1, largest=True, sorted=True):
    """(values, indices) of the k largest (smallest) entries along dim."""
    d = _dim(dim, input.ndim)
    n = input.shape[d] if input.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    if input.ndim == 0:                 # a 0-dim tensor: its value, at position 0 (k == 1)
        pick = np.zeros(k, np.int64)
        return _TOPK(input.reshape(1)[pick].reshape(() if k else (0,)), made_like(input, pick.reshape(
            () if k else (0,)), None))
    return _select(input, _order(input, d, largest), k, d, _TOPK)


def sort(input, dim=-1, descending=False, stable=False):
    """(values, indices) sorted along dim."""
    d = _dim(dim, input.ndim)
    return _select(input, _order(input, d, descending), input.shape[d] if input.ndim else 1, d, _SORT)


def argsort(input, dim=-1, descending=False, stable=False):
    return sort(input, dim, descending).indices


def amax(input, dim=(), keepdim=False):
    """The largest values over dim (all dims when empty); ties share the gradient."""
    return apply("max", input, axis=_dims(dim, input.ndim) if dim != () else None, keepdims=keepdim)


def amin(input, dim=(), keepdim=False):
    return -amax(-input, dim, keepdim)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """torch.norm: the 2-norm ("fro") or p-norm over dim (all by default)."""
    return vector_norm(input, 2 if p in ("fro", None) else p, dim, keepdim, dtype=dtype)


def count_nonzero(input, dim=None):
    return made_like(input, np.asarray(np.count_nonzero(to_numpy(storage(input)), axis=_dims(dim, input.ndim)),
                                       np.int64), None)


# -- masks, triangles, flips, expansion -------------------------------------------------------------------


def masked_fill(input, mask, value):
    """input with `value` where mask holds (mask broadcasts)."""
    if not isinstance(mask, _EngineTensor) or storage(mask).dtype != np.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if input.fmt is None:
        return made_like(input, np.where(to_numpy(storage(mask)), np.asarray(value).astype(storage(input).dtype),
                                         storage(input)), None)
    return apply("where", mask, _as_operand(value, input), input, _out=input.fmt)


def _triangle(input, diagonal, lower):
    if input.ndim < 2:
        raise RuntimeError(f"{'tril' if lower else 'triu'}: input tensor must have at least 2 dimensions")
    r, c = input.shape[-2:]
    keep = np.tri(r, c, diagonal, dtype=bool) if lower else ~np.tri(r, c, diagonal - 1, dtype=bool)
    return masked_fill(input, made_like(input, ~keep, None), 0)


def tril(input, diagonal=0):
    return _triangle(input, diagonal, True)


def triu(input, diagonal=0):
    return _triangle(input, diagonal, False)


def flip(input, dims):
    dims = _dims(dims if isinstance(dims, (tuple, list)) else (dims,), input.ndim)
    return input[tuple(slice(None, None, -1) if i in dims else slice(None) for i in range(input.ndim))]


def broadcast_to(input, size):
    return apply("broadcast_to", input, shape=tuple(size))


def _expand(self, *sizes):
    sizes = _shape_args(sizes)
    lead = len(sizes) - self.ndim
    if lead < 0:
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(self.shape)}}}, size={list(sizes)}): the number of sizes "
                           f"provided ({len(sizes)}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({self.ndim})")
    return broadcast_to(self, [self.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes)])


def _repeat(self, *sizes):
    """The tensor tiled `sizes` times along each dim (leading new dims where sizes has more)."""
    sizes = _shape_args(sizes)
    x = self.reshape((1,) * (len(sizes) - self.ndim) + tuple(self.shape))
    spread = [n for pair in zip(sizes, x.shape) for n in (pair[0], pair[1])]
    ones = [n for s in x.shape for n in (1, s)]
    return broadcast_to(x.reshape(ones), spread).reshape([r * s for r, s in zip(sizes, x.shape)])


# -- statistics ----------------------------------------------------------------------------------------------


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over dim (all by default): correction 1 (unbiased) unless told otherwise."""
    if isinstance(dim, bool):                   # var(input, unbiased)
        dim, unbiased = None, dim
    c = correction if correction is not None else (1 if unbiased is None or unbiased else 0)
    return apply("var", input, axis=_dims(dim, input.ndim), correction=c, keepdims=keepdim)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return var(input, dim, unbiased, keepdim, correction=correction).sqrt()


def cumsum(input, dim, *, dtype=None):
    x = input.to(dtype) if dtype is not None else input
    if x.ndim == 0:                     # a 0-dim tensor: its one value (dim 0 or -1)
        _dim(dim, 0)
        return cumsum(x.reshape(1), 0).reshape(())
    if x.fmt is None:
        return made_like(x, np.cumsum(storage(x), axis=_dim(dim, x.ndim)).astype(np.int64), None)
    return apply("cumsum", x, axis=_dim(dim, x.ndim))


# -- Python protocols ------------------------------------------------------------------------------------------


def _index_protocol(self):
    if self.fmt is not None or storage(self).size != 1:
        raise TypeError("only integer tensors of a single element can be converted to an index")
    return int(self.item())


def _format(self, spec):
    """f"{loss:.4f}": a 0-dim tensor formats as its number; others as their str."""
    return format(self.item(), spec) if self.ndim == 0 else object.__format__(self, spec)


def _new(fill):
    """x.new_zeros(size) and the like: x's dtype and device unless told (PyTorch's layout and pin_memory taken)."""
    def method(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
        return fill(_shape_args(size), dtype=dtype or self.dtype, device=device or self.device,
                    requires_grad=requires_grad, layout=layout)
    return method


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad, layout=layout)


def _logical(fn):
    """&, |, ^ of bool (or integer) tensors and Python values, elementwise; no gradient."""
    def method(self, other):
        b = storage(other) if isinstance(other, _EngineTensor) else other
        if self.fmt is not None or isinstance(other, _EngineTensor) and other.fmt is not None:
            raise RuntimeError(f"\"{fn.__name__}_cpu\" not implemented for 'Float'")
        return made_like(self, fn(storage(self), b), None)
    return method


def _invert(self):
    if self.fmt is not None:
        raise TypeError("~ (bitwise_not) is only for integer and bool tensors")
    return made_like(self, ~storage(self), None)


def _is_contiguous(self, memory_format=None):
    """Whether the storage is laid out in C order (channels_last: in NHWC order), as its strides tell."""
    data = storage(self)
    if memory_format is not None and "channels_last" in repr(memory_format):
        return data.ndim == 4 and data.transpose(0, 2, 3, 1).flags.c_contiguous
    return bool(data.flags.c_contiguous)


def _stride(self, dim=None):
    """The storage's strides in elements (all of them, or dim's)."""
    data = storage(self)
    strides = tuple(s // data.itemsize for s in data.strides)
    return strides if dim is None else strides[_dim(dim, self.ndim)]


def _shape_in_place(method):
    """x.squeeze_(), x.unsqueeze_(d), x.t_(), x.transpose_(a, b): the shape op, x itself taking its result."""
    def in_place(self, *args, **kwargs):
        return _in_place_shape(self, getattr(Tensor, method)(self, *args, **kwargs))
    in_place.__name__ = method + "_"
    return in_place


def _in_place_shape(t, new):
    """t becomes new (a view of t in another shape), as PyTorch's in-place shape ops make t."""
    if t.requires_grad and made_by(t) is None and engine.is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    requires_grad = t.requires_grad
    become(t, new)
    if made_by(t) is None:
        t.requires_grad = requires_grad
    return t


def _fill_diagonal_(self, fill_value, wrap=False):
    """The main diagonal (every dim's index equal) set to fill_value, in place; wrap: on down past a tall matrix's
    square, as NumPy's fill_diagonal."""
    values = self.float32().copy() if self.fmt is not None else to_numpy(storage(self)).copy()
    if values.ndim > 2 and len(set(values.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    np.fill_diagonal(values, fill_value, wrap=wrap)
    return _in_place(self, lambda t: tensor(values, dtype=t.dtype, device=t.device))


def new_tensor(self, data, dtype=None, device=None, requires_grad=False, layout=None):
    _dense(layout)
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


for _name, _fn in {
        "__setitem__": _setitem, "add_": _arith("add"), "sub_": _arith("add", -1.0), "mul_": _arith("mul"),
        "div_": _arith("div"), "pow_": _arith("pow"), "clamp_": _clamp_, "clip_": _clamp_,
        "masked_fill_": _masked_fill_,
        "split": split, "chunk": chunk, "unbind": unbind, "gather": gather, "topk": topk, "sort": sort,
        "argsort": argsort, "masked_fill": masked_fill, "tril": tril, "triu": triu, "flip": flip,
        "broadcast_to": broadcast_to, "expand": _expand, "expand_as": lambda self, other: _expand(self, other.shape),
        "repeat": _repeat, "var": var, "std": std, "cumsum": cumsum, "count_nonzero": count_nonzero,
        "amax": amax, "amin": amin, "norm": norm,
        "nelement": Tensor.numel, "__index__": _index_protocol, "__format__": _format,
        "__and__": _logical(np.bitwise_and), "__or__": _logical(np.bitwise_or), "__xor__": _logical(np.bitwise_xor),
        "__rand__": _logical(np.bitwise_and), "__ror__": _logical(np.bitwise_or), "__invert__": _invert,
        "logical_not": lambda self: made_like(self, np.logical_not(to_numpy(storage(self))), None),
        "__array__": lambda self, dtype=None, copy=None: self.numpy() if dtype is None else self.numpy().astype(dtype),
        "pin_memory": lambda self, device=None: self, "is_pinned": lambda self, device=None: False,
        "is_contiguous": _is_contiguous, "stride": _stride, "itemsize": property(Tensor.element_size),
        "data_ptr": lambda self: int(to_numpy(storage(self)).ctypes.data),
        "squeeze_": _shape_in_place("squeeze"), "unsqueeze_": _shape_in_place("unsqueeze"),
        "t_": _shape_in_place("t"), "transpose_": _shape_in_place("transpose"),
        "fill_diagonal_": _fill_diagonal_,
        "new": lambda self, *args, **kwargs: construct(self.dtype, self.device, *args, **kwargs),
        "new_tensor": new_tensor, "new_zeros": _new(empty), "new_ones": _new(ones), "new_empty": _new(empty),
        "new_full": new_full, "_version": property(_shared_version)}.items():
    setattr(Tensor, _name, _fn)
Tensor.detach = _detach
Tensor.data = property(_detach, _set_data, doc=_detach.__doc__)
for _name in ("fill_", "zero_", "copy_", "normal_", "uniform_", "random_", "bernoulli_", "exponential_"):
    setattr(Tensor, _name, _refuse_on_leaf(getattr(Tensor, _name)))
for _name in ("neg", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "relu"):
    setattr(Tensor, f"{_name}_", _unary_(_name))
Tensor.tril_ = lambda self, diagonal=0: _in_place(self, lambda t: tril(t, diagonal))
Tensor.triu_ = lambda self, diagonal=0: _in_place(self, lambda t: triu(t, diagonal))
Tensor.__iadd__, Tensor.__isub__, Tensor.__imul__, Tensor.__itruediv__ = (Tensor.add_, Tensor.sub_, Tensor.mul_,
                                                                          Tensor.div_)


def watch_views(cls):
    """Make the results of cls's view methods (PyTorch's views of a tensor's storage) pass in-place changes back."""
    cls.__getitem__ = _viewing_at(cls.__getitem__, lambda flat, index: flat[index], _basic)
    cls.diagonal = _viewing_at(cls.diagonal, lambda flat, offset=0, dim1=0, dim2=1: flat.diagonal(offset, dim1, dim2))
    for name in ("view", "reshape", "view_as", "reshape_as", "flatten", "unflatten", "squeeze",
                 "unsqueeze", "permute", "transpose", "swapaxes", "swapdims", "movedim", "moveaxis", "t", "narrow",
                 "select"):
        setattr(cls, name, _viewing(getattr(cls, name)))
    for name, node in (("split", "Split"), ("chunk", "Split"), ("unbind", "Unbind"), ("tensor_split", None),
                       ("hsplit", None), ("vsplit", None)):     # (PyTorch's tensor_split takes slices: plain views)
        setattr(cls, name, _viewing_each(getattr(cls, name), node))
    for name in ("T", "mT"):
        setattr(cls, name, property(_viewing(getattr(cls, name).fget)))


def _viewing_each(method, name=None):
    """A Tensor method giving several views of self (split, chunk, unbind): each passes in-place changes back.
    name: the node PyTorch's error names where an output of the method is changed under autograd."""
    def views(self, *args, **kwargs):
        parts = method(self, *args, **kwargs)
        called = name if name != "Split" or isinstance(args[0] if args else kwargs.get("split_size_or_sections"),
                                                        numbers.Integral) else "SplitWithSizes"
        return type(parts)(_viewing(lambda s, part=part: part, called and (called, i))(self)
                           for i, part in enumerate(parts))
    views.__name__ = method.__name__
    return views
