"""Reverse-mode autodiff: the backward walks the graph from the latest op to the first, as PyTorch's engine does.

Each tensor's gradient is a tensor of its own format: the op's gradient functions compute in float32 (the route
its forward took), a gradient broadcast over an input is rounded into the op's format before it is summed to the
input's shape, and every gradient is rounded into the format of the tensor it belongs to; a second gradient of
the same tensor is rounded too before the two are added (PyTorch's and TensorFlow's gradients are tensors). Leaves
that require gradients get `.grad` in their own format, accumulated there across passes.

With create_graph, a second sweep (`_sweep_graph`) walks the same order with gradients that are tensors of the
graph: each op's gradient is its VJP (minifp._vjp) written with the engine's ops, so later sweeps differentiate
through it (higher-order gradients). The plain sweep stays as it is.
"""
from __future__ import annotations

import weakref

import numpy as np

from . import _fp8
from ._backend import array_module
from ._compute import ON_NUMPY, OWNED_MIN, in_format, owned, round_counted, route, unbroadcast, wide
from ._dispatch import _SEQUENCE, CAST, FUNCTION, apply, cast
from ._rounding import round_to
from ._seams import SEAMS
from ._state import STATE, grad_mode
from ._tensor import Tensor, real
from ._vjp import SWEEP, VJP, missing

# The backward sets a leaf's .grad through the slot itself: a face's checking property (a Parameter's p.grad = g)
# is for its users' assignments, and the backward's own gradient passes its checks by construction.
_set_grad = Tensor.grad.__set__

__all__ = ["backward", "gradients", "FREED", "add_gradient_hook", "note_change", "inplace_version"]

_F32 = np.dtype(np.float32)
FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they have "
         "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
         "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
         "if you need to access saved tensors after calling backward.")


class Gradient:
    """A tensor's gradient during the sweep: its storage in the tensor's format, or its float32 values (where the
    speed module keeps them: the sweep would widen them right back), or both."""

    __slots__ = ("tensor", "data", "values")

    def __init__(self, tensor, data, values):
        self.tensor, self.data, self.values = tensor, data, values

    def wide(self, dtype):
        """The values in dtype (float32, or float64 for wide formats)."""
        if self.values is not None and dtype is np.float32:
            return self.values
        w = SEAMS.widened(self.data, self.tensor.fmt) if self.data.dtype != _F32 else self.data
        return w if dtype is np.float32 else w.astype(dtype)

    def storage(self):
        """The storage array (the values rounded: exactly, they are the format's)."""
        return self.data if self.data is not None else SEAMS.rounded(self.values, self.tensor.fmt)


def backward(root, gradient=None, retain_graph=None, inputs=None, create_graph=False, on_stale=None):
    """Reverse-mode autodiff from `root`; leaves that require grad get .grad in their own format (only the tensors
    in `inputs`, leaves or not, where it is given). create_graph: the gradients are tensors of the graph (a leaf's
    .grad accumulates with add), which later sweeps differentiate through. on_stale: called before anything
    changes with each tensor the graph read that an in-place change has changed since (see _stale); it may raise.

    As in PyTorch, the pass frees the values that gradients read (unless retain_graph): a second pass
    through an op that needs them raises before any gradient changes.
    """
    if not root.requires_grad:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn (backward() "
                           "on a tensor that no input with requires_grad=True reaches, or one computed under "
                           "no_grad())")
    if gradient is None and root._data.size != 1:
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs (backward() on a tensor of "
                           f"shape {tuple(root.shape)} needs a gradient argument of that shape)")
    g0 = _seed(root, gradient, "backward()")
    order = _topological(root)
    if on_stale is not None:
        _stale(order, on_stale)
    if any(t._node is not None and t._node.freed for t in order):
        raise RuntimeError(FREED)
    leaves, only = [], None if inputs is None else {id(t) for t in inputs}
    if create_graph:
        reach = None if only is None else _reaching(order, only)
        _check_graph(order, reach)
        _sweep_graph(order, [(root, _seed_tensor(root, gradient, g0))], leaves=leaves, only=only, reach=reach)
    else:
        _sweep(order, [(root, g0)], leaves=leaves, only=only)
    if not retain_graph:
        for t in order:
            if t._node is not None and t._node.op.saves:
                t._node.freed = True
    for m in STATE.monitors:
        m.weight_gradients(leaves)


def gradients(targets, sources, seeds=None, create_graph=False, on_stale=None):
    """{id(source): its gradient's storage} of the sum of the targets with respect to each source reached, by the
    same sweep as backward(); no .grad changes and nothing is freed (tf.GradientTape, torch.autograd.grad).
    seeds: one output gradient per target (a tensor or an array; None: ones). create_graph: {id(source): its
    gradient as a tensor of the graph}, which later sweeps differentiate through. on_stale: as backward's."""
    seeds = [None] * len(targets) if seeds is None else list(seeds)
    if len(seeds) != len(targets):
        raise ValueError(f"gradients(): {len(seeds)} output gradients for {len(targets)} targets")
    given = [(t, g) for t, g in zip(targets, seeds) if t.fmt is not None and t.requires_grad]
    pairs = [(t, _seed(t, g, "gradients()")) for t, g in given]
    wanted, found = {id(s) for s in sources}, {}
    if pairs and wanted:
        order = _topological(*[t for t, _ in pairs])
        if on_stale is not None:
            _stale(order, on_stale)
        if create_graph:
            reach = _reaching(order, wanted)
            _check_graph(order, reach)
            _sweep_graph(order, [(t, _seed_tensor(t, g, g0)) for (t, g), (_, g0) in zip(given, pairs)],
                         collect=(wanted, found), reach=reach)
        else:
            _sweep(order, pairs, collect=(wanted, found))
    return found


# -- in-place changes: what a framework of version counters (PyTorch) refuses to differentiate through -------------

class _History:
    """A tensor's in-place changes: (when, the node whose result it was before, the node whose result it is after,
    the version it made) for each, `when` on the nodes' clock (Node.seq). A tensor changed every step of a long run
    keeps the first change of each node's result and its latest KEPT changes: what _stale reads."""

    KEPT = 64
    __slots__ = ("count", "entries")

    def __init__(self):
        self.count, self.entries = 0, []

    def trim(self):
        old = self.entries[:-self.KEPT]
        self.entries[:-self.KEPT] = [e for i, e in enumerate(old) if i == 0 or e[1] is not old[i - 1][1]]


# id(tensor) -> (a weak reference to it, its _History): the entry goes with the tensor. (Not a WeakKeyDictionary:
# its look-ups compare tensors with ==, elementwise in a face.)
_CHANGES = {}
_NEWEST = [-1]          # the clock at the latest change: nodes made after it read nothing that changed since


def _history(t):
    entry = _CHANGES.get(id(t))
    return entry[1] if entry is not None and entry[0]() is t else None


_SAME = object()


def note_change(t, after=_SAME):
    """Count an in-place change of t's values: made by become (t is node `after`'s result from now on), or outside
    the graph (under no_grad: t keeps its node). (An optimizer step calls it for every parameter: kept lean.)"""
    key = id(t)
    entry = _CHANGES.get(key)
    if entry is None or entry[0]() is not t:
        entry = _CHANGES[key] = (weakref.ref(t, lambda _, key=key: _CHANGES.pop(key, None)), _History())
    history = entry[1]
    if len(history.entries) >= 2 * _History.KEPT:
        history.trim()
    _NEWEST[0] = when = next(_SEQUENCE)
    history.count += 1
    before = t._node
    history.entries.append((when, before, before if after is _SAME else after, history.count))


def inplace_version(t):
    """How many in-place changes t has had (PyTorch's t._version)."""
    history = _history(t)
    return 0 if history is None else history.count


def _stale(order, on_stale):
    """on_stale(op name, its inputs, which it read: "output" or an input's position, that tensor as the node read it,
    as it is now, its version then, its version now) for each tensor a node of `order` read before an in-place
    change of it, the latest node first. (Nothing to look at where every node is newer than the latest change.)"""
    oldest = next((t._node.seq for t in order if t._node is not None), None)
    if oldest is None or _NEWEST[0] < oldest:
        return
    changed = {}        # id(node) -> (tensor, the change that changed that node's result, its history)
    for ref, history in list(_CHANGES.values()):
        t = ref()
        for i, (_, before, _, _) in enumerate(history.entries if t is not None else ()):
            if before is not None:
                changed.setdefault(id(before), (t, i, history))
    for made in reversed(order):
        node = made._node
        if node is None or node.seq > _NEWEST[0]:
            continue
        hit = changed.get(id(node))
        if hit is not None:
            on_stale(node.op.name, node.inputs, "output", made, hit[0], hit[2].entries[hit[1]][3] - 1, hit[2].count)
        for position, a in enumerate(node.inputs):
            if not isinstance(a, Tensor):
                continue
            t, first, history = (a, 0, _history(a)) if a._node is None else changed.get(id(a._node), (a, 0, None))
            # (the in-place op's own node reads the values it replaces: PyTorch keeps what it needs of them)
            first_later = next((n for i, (when, _, after, n) in enumerate(history.entries if history else ())
                                if i >= first and when > node.seq and after is not node), None)
            if first_later is not None:
                on_stale(node.op.name, node.inputs, position, a, t, first_later - 1, history.count)


def _seed(root, gradient, where):
    """The output gradient of `root` as values in its compute dtype, on its device: ones, or the one given."""
    xp = array_module(root._data)        # the seed lives where the graph does: a GPU graph gets a GPU seed
    dtype = root.fmt.compute_dtype
    if gradient is None:
        return xp.ones(root.shape, dtype)
    if not isinstance(gradient, Tensor) and not real(xp.asarray(gradient).dtype):
        raise TypeError(f"{where}: gradient must be a tensor or an array of real numbers, got {gradient!r}")
    g0 = wide(gradient, dtype) if isinstance(gradient, Tensor) else xp.asarray(gradient, dtype=dtype)
    if g0.shape != root.shape:
        raise ValueError(f"{where}: gradient of shape {g0.shape} does not match the tensor's shape {root.shape}")
    return g0


# id(tensor) -> (a weak reference to it, its hooks, its last hook or None): functions of its gradient, run in turn
# when that gradient is complete (before a leaf's .grad takes it); each returns None or the gradient to go on with
_HOOKS = {}


class _Handle:
    """What add_gradient_hook returns: remove() takes the hook off again."""

    def __init__(self, key, fn):
        self._key, self._fn = key, fn

    def remove(self):
        entry = _HOOKS.get(self._key)
        if entry is not None:
            if self._fn in entry[1]:
                entry[1].remove(self._fn)
            if entry[2] is self._fn:
                _HOOKS[self._key] = entry = (entry[0], entry[1], None)
            if not entry[1] and entry[2] is None:
                del _HOOKS[self._key]


def add_gradient_hook(t, fn, last=False):
    """Run fn(gradient) on t's gradient in every backward sweep, once it is complete (a tensor of t's class and
    format; fn returns None or the gradient to go on with, of t's shape), after the hooks added before it; `last`:
    the one hook that runs after all the others (PyTorch's retain_grad). Returns a handle whose remove() undoes it."""
    key = id(t)
    entry = _HOOKS.get(key)
    if entry is None or entry[0]() is not t:
        entry = (weakref.ref(t, lambda _, key=key, hooks=_HOOKS: hooks.pop(key, None)), [], None)
    hooks, final = (entry[1], fn) if last else (entry[1] + [fn], entry[2])
    _HOOKS[key] = (entry[0], hooks, final)
    return _Handle(key, fn)


def _hooked(t, entry):
    """t's gradient entry after t's hooks."""
    found = _HOOKS.get(id(t))
    if found is None or found[0]() is not t:
        return entry
    for fn in found[1] + ([found[2]] if found[2] is not None else []):
        g = t._like(entry.storage(), t.fmt)
        out = fn(g)
        if out is not None and out is not g:
            if tuple(out.shape) != tuple(t.shape):
                raise RuntimeError(f"hook '{getattr(fn, '__name__', fn)}' has changed the size of value")
            entry = Gradient(t, round_to(wide(out, np.float32), t.fmt), None)
    return entry


def _topological(*roots):
    """Every tensor the roots depend on through tensors that require gradients: the leaves, then the others in the
    order their ops ran. The backward walks it from the end, latest op first, as PyTorch's engine does (its ready
    queue takes the latest-made node); so a tensor's gradients arrive, and are summed, in PyTorch's order."""
    leaves, made, seen, stack = [], [], set(), list(roots)
    while stack:
        t = stack.pop()
        if id(t) not in seen:
            seen.add(id(t))
            if t._node is None:
                leaves.append(t)
            else:
                made.append(t)
                node = t._node
                if node.seq < type(node).newest_replacing:      # an input may have changed in place since
                    node.inputs = tuple(_as_read(b, node.seq) if isinstance(b, Tensor) else b for b in node.inputs)
                stack.extend([a for a in node.inputs if isinstance(a, Tensor) and a.requires_grad])
    made.sort(key=_made_at)
    return leaves + made


def _as_read(a, seq):
    """Input a as the node made at seq read it: an input changed in place since (a newer node made it) was, for
    that node, the tensor as it was before (each in-place node keeps it: engine.become)."""
    while a._node is not None and a._node.seq > seq and a._node.replaced is not None:
        a = a._node.replaced
    return a


def _made_at(t):
    return t._node.seq


def _sweep(order, seeds, leaves=None, collect=None, only=None):
    """The reverse sweep from the seeded roots: pop each tensor's gradient, pass it to its inputs. Leaves get .grad
    (and are listed in `leaves`; with `only`, the ids of the tensors that may get one, those tensors), unless
    `collect` = (wanted ids, found dict) asks for the gradients of the wanted tensors instead."""
    store, given = {}, set()        # id(tensor) -> its Gradient; ids of the arrays handed to leaves as .grad
    for t, g0 in seeds:
        _add(store, t, g0)
    with SEAMS.quiet():
        for t in reversed(order):
            entry = store.pop(id(t), None)
            if entry is None:           # several roots: a tensor only some of them reach, and none of those did yet
                continue
            if _HOOKS:
                entry = _hooked(t, entry)
            for m in STATE.monitors:
                m.gradient(t, entry.wide(np.float32))
            if collect is not None and id(t) in collect[0]:
                collect[1][id(t)] = entry.storage()
            if t._node is not None:
                if only is not None and id(t) in only and collect is None:     # backward(inputs=[a non-leaf])
                    _give(t, entry.storage(), given)
                    leaves.append(t)
                _through(t._node, t, entry, store)
            elif collect is None and (only is None or id(t) in only):
                _give(t, entry.storage(), given)
                leaves.append(t)
    _fp8.finish_backward()      # the output-gradient scales of the GEMMs this pass went through roll once


def _through(node, t, entry, store):
    """Pass t's gradient through the op that made it to each input that requires one."""
    op, inputs, params = node.op, node.inputs, node.params
    dtype = t.fmt.compute_dtype
    g = entry.values if entry.values is not None and dtype is np.float32 else entry.wide(dtype)
    if op is CAST:      # the gradient casts back: g itself, rounded into the input's format
        if inputs[0].requires_grad:
            _add(store, inputs[0], g, node)
        return
    if op is FUNCTION:
        _through_function(node, t, entry, store)
        return
    xp = np if type(g) is np.ndarray else array_module(g)
    compute = route(op, t.fmt, [t, *inputs], xp, t.device, node) if op.routed or xp is not np else ON_NUMPY
    args = [compute.operand(a, dtype) for a in inputs]
    ans = wide(t, dtype) if op.saves else t._data      # an op that saves nothing reads no values of its output
    for i, a in enumerate(inputs):
        if not (isinstance(a, Tensor) and a.requires_grad):
            continue
        gi = compute.gradient(op, i, g, ans, args, params)
        if type(gi) is not np.ndarray or gi.dtype.type is not dtype:
            gi = xp.asarray(gi, dtype)
        if gi.shape != a._data.shape:
            if gi is not g:                     # (g itself: values of t's format already)
                # PyTorch's gradient is a tensor of the op's format first
                gi = in_format(gi, t.fmt, node, not t.fmt.is_float32 and _own(compute, gi, g, ans, args, params))
            gi = unbroadcast(xp, gi, a._data.shape)
        exact = (op.masks or gi is g) and a.fmt is t.fmt     # (g: values of t's format)
        _add(store, a, gi, node, exact,
             not exact and not a.fmt.is_float32 and _own(compute, gi, g, ans, args, params))


def _through_function(node, t, entry, store):
    """Call a function node's backward with every output's gradient (the first output the sweep reaches takes the
    others' entries: nothing made later adds to them), then add what it gives into the inputs' entries."""
    grads, outputs = [], node.params["outputs"]
    for ref in outputs:
        o = _output(ref, t, outputs)
        e = entry if o is t else None if o is None else store.pop(id(o), None)
        if e is not None and o is not t and _HOOKS:
            e = _hooked(o, e)
        grads.append(None if e is None else o._like(e.storage(), o.fmt))
    with grad_mode(False):
        given = list(node.params["backward"](*grads))
    for a, gi in zip(node.inputs, given):
        if isinstance(a, Tensor) and a.requires_grad and gi is not None:
            gi = (wide(gi, np.float32) if isinstance(gi, Tensor) else gi).astype(np.float32)     # (a copy: ours)
            _add(store, a, unbroadcast(array_module(gi), gi, a._data.shape) if gi.shape != a._data.shape else gi,
                 node)


def _output(ref, t, outputs):
    """A function node's output, where t is the tensor the sweep reached: of a node of one output, t itself (the
    output, or a tensor that became it: a face's in-place op, engine.become, or its snapshot, rewrap)."""
    return t if len(outputs) == 1 else ref()


def _own(compute, gi, g, ans, args, params):
    """Whether the gradient gi is the op's body's own (its rounding may write into it; g is not)."""
    return gi.size >= OWNED_MIN and owned(gi, compute, (g, ans, *args), params)


def _add(store, t, g, node=None, exact=False, own=False):
    """Add gradient values g into t's entry of the store, rounded into t's format (counted against node's op).
    exact: g holds values of t's format already; own: no one else holds g (the rounding may write into it)."""
    prev = store.get(id(t))
    if prev is not None:    # a second gradient is a tensor of t's format too (PyTorch's and TF's are), then summed
        g = prev.wide(g.dtype.type) + (g if exact else in_format(g, t.fmt, node, own))
        exact, own = False, True        # (the sum: a new array)
    fmt = t.fmt
    if node is None:        # a root's seed: its own array (the caller's, maybe)
        store[id(t)] = Gradient(t, round_to(g, fmt), None)
    elif fmt.is_float32 and g.dtype is _F32:    # float32: nothing to round (a monitor counts its NaNs)
        for m in STATE.monitors:
            m.record(node.layer, node.op.name, "backward", np.array([0, 0, 0, int(np.isnan(g).sum())]), g.size)
        store[id(t)] = Gradient(t, g, g)
    elif STATE.monitors:
        store[id(t)] = Gradient(t, round_counted(g, fmt, node.op.name, node.layer, "backward"), None)
    elif t._node is None:       # a leaf's gradient becomes its .grad: storage
        store[id(t)] = Gradient(t, SEAMS.rounded(g, fmt), None)
    else:
        store[id(t)] = Gradient(t, *SEAMS.round_gradient(g, fmt, exact, own))


def _give(t, g, given):
    """Add the gradient storage g into leaf t's .grad. Each .grad owns its array (a copy where g is a view, or
    already another leaf's: add passes one array to both inputs), as PyTorch's AccumulateGrad clones a shared
    gradient, so that an in-place update of one (GradScaler's unscale_) changes no other."""
    if t.grad is not None:
        total = round_to(t.grad.float32() + SEAMS.widened(g, t.fmt), t.fmt)
        if t.grad.requires_grad:        # a create_graph sweep's .grad: PyTorch adds in place, it keeps its graph
            t.grad.assign(total)
        else:
            _set_grad(t, t._like(total, t.fmt))
        return
    if type(g) is np.ndarray and (g.base is not None or id(g) in given or not g.flags.writeable):
        g = g.copy(order="K")       # (in its own memory order: a convolution's weight gradient comes taps first)
    given.add(id(g))
    _set_grad(t, t._like(g, t.fmt))


# -- the create_graph sweep: gradients as tensors of the graph ---------------------------------------------------


def _seed_tensor(root, gradient, g0):
    """The output gradient of `root` as a tensor of its format: the tensor given (it may be part of a graph), or
    the values g0 (ones, or the array given)."""
    if isinstance(gradient, Tensor) and gradient.fmt is not None:
        return gradient if gradient.fmt == root.fmt else cast(gradient, root.fmt)
    return root._like(round_to(g0, root.fmt), root.fmt)


def _reaching(order, wanted):
    """The ids of the tensors of `order` through which a gradient reaches one of the wanted ids (inputs come
    before their results in order), so that the sweep computes no other gradient, as PyTorch's engine runs only
    the nodes its inputs need."""
    reach = set()
    for t in order:
        if id(t) in wanted or t._node is not None and any(id(a) in reach for a in t._node.inputs):
            reach.add(id(t))
    return reach


def _check_graph(order, reach):
    """Raise, before any gradient changes, where the sweep would pass through an op that has no graph VJP, or one
    that ran under a numerics model whose gradient only the plain sweep follows."""
    for t in order:
        node = t._node
        if node is None or reach is not None and id(t) not in reach:
            continue
        error = missing(node.op)
        if error is not None:
            raise error
        if node.acc is not None and node.op.accumulates or node.saved is not None:
            raise NotImplementedError(f"create_graph=True through '{node.op.name}' computed under "
                                      f"minifp.accumulate or fp8_autocast is not supported by minifp")


def _sweep_graph(order, seeds, leaves=None, collect=None, only=None, reach=None):
    """_sweep with gradients that are tensors: each op's VJP runs as engine ops, recorded in the graph (reach:
    the ids of the tensors worth a gradient, None: all)."""
    store, given = {}, {id(g) for _, g in seeds}        # given: ids of gradients already someone's (no .grad)
    for t, g in seeds:
        _accumulate(store, t, g)
    with grad_mode(True):
        for t in reversed(order):
            g = store.pop(id(t), None)
            if g is None:
                continue
            if _HOOKS:
                g = _hooked_graph(t, g)
            for m in STATE.monitors:
                m.gradient(t, wide(g))
            if collect is not None and id(t) in collect[0]:
                collect[1][id(t)] = g
            if t._node is not None:
                if only is not None and id(t) in only and collect is None:
                    _give_graph(t, g, given)
                    leaves.append(t)
                _through_graph(t._node, t, g, store, reach)
            elif collect is None and (only is None or id(t) in only):
                _give_graph(t, g, given)
                leaves.append(t)


def _through_graph(node, t, g, store, reach):
    """Pass t's gradient tensor through the VJP of the op that made t to each input that needs one."""
    if node.op is FUNCTION:
        _through_function_graph(node, t, g, store, reach)
        return
    fns = VJP[node.op.name]
    for i, a in enumerate(node.inputs):
        if not (isinstance(a, Tensor) and a.requires_grad and (reach is None or id(a) in reach)):
            continue
        if node.op.variadic:
            gi = fns[0](g, t, *node.inputs, i=i, **node.params)
        else:
            gi = fns[i](g, t, *node.inputs, **node.params)
        if gi is not None:
            _accumulate(store, a, _fit(gi, a))


def _through_function_graph(node, t, g, store, reach):
    """_through_function with gradient tensors, its backward recording the graph."""
    grads, outputs = [], node.params["outputs"]
    for ref in outputs:
        o = _output(ref, t, outputs)
        e = g if o is t else None if o is None else store.pop(id(o), None)
        if e is not None and o is not t and _HOOKS:
            e = _hooked_graph(o, e)
        grads.append(e)
    for a, gi in zip(node.inputs, list(node.params["backward"](*grads))):
        if isinstance(a, Tensor) and a.requires_grad and gi is not None and (reach is None or id(a) in reach):
            if not isinstance(gi, Tensor):
                gi = a._like(round_to(np.asarray(gi, np.float32), a.fmt), a.fmt)
            _accumulate(store, a, _fit(gi, a))


def _fit(gi, a):
    """A gradient summed back to a broadcast input's shape (as unbroadcast sums it) and cast into its format."""
    if tuple(gi.shape) != tuple(a.shape):
        if gi.ndim > a.ndim:
            gi = apply("sum", gi, axis=tuple(range(gi.ndim - a.ndim)))
        axes = tuple(i for i, n in enumerate(a.shape) if n == 1 and gi.shape[i] != 1)
        if axes:
            gi = apply("sum", gi, axis=axes, keepdims=True)
    return gi if gi.fmt is a.fmt or gi.fmt == a.fmt else cast(gi, a.fmt)


def _accumulate(store, t, g):
    """Add the gradient tensor g (of t's shape and format) into t's entry: a second one with the add op."""
    prev = store.get(id(t))
    store[id(t)] = g if prev is None else apply("add", prev, g)


def _hooked_graph(t, g):
    """t's gradient tensor after t's hooks."""
    found = _HOOKS.get(id(t))
    if found is None or found[0]() is not t:
        return g
    for fn in found[1] + ([found[2]] if found[2] is not None else []):
        out = fn(g)
        if out is not None and out is not g:
            if tuple(out.shape) != tuple(t.shape):
                raise RuntimeError(f"hook '{getattr(fn, '__name__', fn)}' has changed the size of value")
            g = out if out.fmt == t.fmt else cast(out, t.fmt)
    return g


def _give_graph(t, g, given):
    """Leaf t's .grad becomes the gradient tensor g, or .grad + g where it has one (PyTorch's AccumulateGrad in
    grad mode adds out of place). A gradient someone holds already (a seed, another leaf's) is given as a tensor
    of its own, as AccumulateGrad clones it."""
    if t.grad is not None:
        _set_grad(t, apply("add", t.grad, g))
        return
    if id(g) in given:
        g = apply("reshape", g, shape=tuple(g.shape))
    given.add(id(g))
    _set_grad(t, g)


SWEEP.gradients = gradients      # (for the VJPs that run a sweep of their own: attention's)
