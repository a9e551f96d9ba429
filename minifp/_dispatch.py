"""The dispatcher: `apply` runs every op as the numerics rule says.

    apply(name, *args): resolve the output format (the inputs' promotion, or what autocast or the caller asks),
    compute on the inputs' values (the namespace `route` picks), round once into the output format, and record
    the node the backward will walk.

Casts are the same rule with the format given (`cast`): autocast makes several per layer call.
"""
from __future__ import annotations

import functools
import itertools
import numbers
import weakref

import numpy as np

from ._formats import float32, promote
from ._backend import array_module
from ._compute import ON_NUMPY, OWNED_MIN, owned, round_counted, route, wide
from ._devices import DEVICES, IDEAL, INPUT_FORMAT
from ._ops import OPS, Op
from ._rounding import round_to, widen
from ._seams import SEAMS
from ._state import STATE
from ._tensor import CPU, Tensor, result_class, tensor

__all__ = ["apply", "cast", "cast_in_mode", "Node", "CAST", "FUNCTION", "function_node"]

CAST = OPS["cast"]
_SEQUENCE = itertools.count()


class Node:
    """How a tensor was made: the op, its inputs and parameters, the layer it ran in, and what its backward needs.

    acc: the accumulator the forward ran under (its products' gradients accumulate the same way); saved: what the
    forward's compute kept for the backward (an fp8 GEMM's factors and scaling state, flash attention's row
    statistics); seq: the order of creation, the order PyTorch's engine runs the
    backward in (latest first); replaced: where an in-place op made its tensor this node's result (engine.become),
    that tensor as it was before."""

    __slots__ = ("op", "inputs", "params", "layer", "freed", "acc", "saved", "seq", "replaced")
    newest_replacing = -1       # the latest seq of a node with `replaced`: nodes made after it read no older tensor

    def __init__(self, op, inputs, params, saved=None):
        self.op, self.inputs, self.params, self.layer, self.freed = op, inputs, params, STATE.layer, False
        self.seq, self.acc, self.saved, self.replaced = next(_SEQUENCE), STATE.accumulator, saved, None


FUNCTION = Op("function", lambda xp, *inputs: None, (), "A face's custom function (function_node).",
              function=False, method=False, saves=False)


def function_node(outputs, inputs, backward, name=None):
    """Make `outputs`, float tensors computed from `inputs` without recording the graph, the results of one node:
    the sweep calls backward(*gradients) once, with a gradient for every output (None where none flowed), under
    no_grad (a create_graph sweep: recording the graph), and passes on what it returns, one gradient per input (a
    tensor, an array or None). name: what the node computes ("gelu_backward": the engine's own), for a face to
    show; None for a face's custom function."""
    node = Node(FUNCTION, tuple(inputs), {"backward": backward, "outputs": [weakref.ref(t) for t in outputs],
                                          "name": name})
    for t in outputs:
        t._node, t.requires_grad = node, True
    return outputs


def apply(name, *args, _out=None, **params):
    """Apply a registered op: resolve the formats, compute, round once, record the node."""
    op = OPS[name]
    tensors = [a for a in args if isinstance(a, Tensor)]
    if len(tensors) != len(args):           # numbers, arrays, a missing bias: the rare slow path
        args = tuple([a if isinstance(a, Tensor) or a is None and op.optional else _operand(a, name) for a in args])
        tensors = [a for a in args if isinstance(a, Tensor)]
    device, xp = _place(tensors)
    if name == "div" and DEVICES.get(device, IDEAL).number_divisor == "reciprocal" and _host_scalar(args, device):
        # a tensor over a host scalar, on a device that multiplies by its reciprocal (a number's taken in double)
        x, y = args
        args, params["reciprocal"] = ((x, y), True) if isinstance(y, Tensor) else ((x, np.divide(1.0, y)), "inverted")
    fmt, args, tensors = _formats(op, args, tensors, _out, device)
    values = saved = None
    try:
        if op.layout and all(t.fmt is fmt or t.fmt is None or t.fmt == fmt for t in tensors):
            # No arithmetic: values stay representable, so the storage arrays move as they are.
            fmt = fmt if any(t.fmt is not None for t in tensors) else None
            data = op.forward(xp, *[a._data if isinstance(a, Tensor) else a for a in args], **params)
        else:
            with SEAMS.quiet():               # overflow to inf and 0/0 are what we emulate, not accidents
                compute = route(op, fmt, tensors, xp, device, params=params) if op.routed or xp is not np else ON_NUMPY
                dtype = fmt.compute_dtype
                operands = [compute.operand(a, dtype) for a in args]
                ans = compute.forward(op, operands, params)
                ans = ans if type(ans) is np.ndarray else xp.asarray(ans)      # reductions give scalars
                if op.returns_bool:
                    return (result_class(type(tensors[0])) if tensors else Tensor)._wrap(ans, None, False, None, device)
                data, values = _round(ans, fmt, name, op.selects and _selects(op, fmt, tensors, params),
                                      ans.size >= OWNED_MIN and not fmt.is_float32
                                      and owned(ans, compute, operands, params))
                saved = compute.saved
    except (ValueError, IndexError) as e:      # in the words of the inputs' face (the cause may not be the shapes)
        cls = result_class(type(tensors[0])) if tensors else Tensor
        raise cls.op_error(name, [getattr(a, "shape", None) for a in args], e) from None
    # The result, with the node that made it where a gradient will flow through it
    node = Node(op, args, params, saved) if STATE.grad_enabled and _differentiable(tensors) else None
    out = (result_class(type(tensors[0])) if tensors else Tensor)._wrap(data, fmt, node is not None, node, device)
    out._float32 = values
    return out


def _operand(a, name):
    """Tensors as they are; Python numbers stay weak scalars; arrays become tensors; anything else is refused."""
    if isinstance(a, Tensor) or isinstance(a, (bool, numbers.Real)) and not isinstance(a, np.ndarray):
        return a
    if a is None or isinstance(a, (str, bytes, numbers.Complex)):
        raise TypeError(f"{name}: operands must be tensors, arrays or real numbers, got {a!r}")
    return tensor(a)


def _host_scalar(args, device):
    """Whether a division's divisor is a scalar on the host: a number, or a 0-d CPU tensor under a tensor of
    another device (what PyTorch's TensorIterator calls a CPU scalar)."""
    x, y = args
    return isinstance(x, Tensor) and (not isinstance(y, Tensor) or y.device == "cpu" != device and not y._data.ndim)


def _place(tensors):
    """(the device all the tensors live on, the module of their arrays: NumPy, or CuPy for a GPU's). 0-d tensors may
    come from the host, as in PyTorch."""
    device, xp = tensors[0].device if tensors else CPU, np
    for t in tensors:
        if type(t._data) is not np.ndarray:
            xp = array_module(*[t._data for t in tensors])
        if t.device != device and t._data.ndim:
            if device == "cpu" and not tensors[0]._data.ndim:
                device = t.device
                continue
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{device} and {t.device}!")
    return device, xp


def _formats(op, args, tensors, out, device):
    """(the output format, the inputs and their tensors as the op sees them): `out` where the caller names it, else
    what an autocast on this device says (it may cast inputs first), else the promotion of the inputs' formats."""
    autocast = STATE.autocast
    if out is not None:
        return out, args, tensors
    if autocast is not None and autocast.device == device:
        if autocast.variables_only:         # Keras: variables are read in the compute dtype; formats then promote
            for t in tensors:
                if t._node is None and t.requires_grad:         # most ops read no variable
                    args = tuple([_autocast_cast(a, autocast) if isinstance(a, Tensor) and a._node is None
                                  and a.requires_grad else a for a in args])
                    tensors = [a for a in args if isinstance(a, Tensor)]
                    break
        elif op.name in autocast.lower:
            fmt = autocast.fmt
            args = tuple([a if not isinstance(a, Tensor) or a.fmt is fmt else _autocast_cast(a, autocast)
                          for a in args])
            return fmt, args, [a for a in args if isinstance(a, Tensor)]
        elif op.name in autocast.float32:
            # No casts: the op widens narrower inputs exactly as a cast to float32 would, and its gradient is
            # rounded into each input's format as the cast's would be; but for an op whose steps round into its
            # input's format, the cast PyTorch makes
            if op.name in INPUT_FORMAT:
                args = tuple([cast(a, float32) if isinstance(a, Tensor) and a.fmt is not None and
                              a.fmt.man_bits < float32.man_bits else a for a in args])
                tensors = [a for a in args if isinstance(a, Tensor)]
            return float32, args, tensors
    fmt = None
    for t in tensors:
        if t.fmt is not None and t.fmt is not fmt:
            fmt = t.fmt if fmt is None else promote(fmt, t.fmt)
    return fmt or float32, args, tensors


def _autocast_cast(a, autocast):
    """An eligible input cast to the autocast format: float tensors of at most 32 bits (PyTorch never casts
    float64)."""
    have, fmt = a.fmt, autocast.fmt
    if have is None or have is fmt or have.man_bits > 23 or have._key == fmt._key:      # (Format.__eq__'s test)
        return a
    if autocast.cache and a._node is None and a.requires_grad and have.is_float32:
        key = (id(a), id(autocast))     # PyTorch's cast cache: one cast of a float32 parameter per region
        hit = STATE.cast_cache.get(key)
        if hit is None:     # the entry keeps the leaf and the policy alive: neither id can be reused meanwhile
            hit = STATE.cast_cache[key] = (a, autocast, cast(a, fmt))
        return hit[2]
    return cast(a, fmt)


def _selects(op, fmt, tensors, params):
    """Whether an op that selects gives values of fmt: its inputs are of fmt, and so are the numbers it puts in."""
    return all(t.fmt is fmt for t in tensors) and (op.selects is True or all(_holds(fmt, c)
                                                                               for c in op.selects(**params)))


@functools.lru_cache(maxsize=64)
def _holds(fmt, number):
    """Whether the number is one of fmt's values."""
    x = np.float32(number)
    return bool(x == number and widen(round_to(np.array([x]), fmt), fmt)[0] == x)


def _round(ans, fmt, op_name, exact=False, inplace=False):
    """A result rounded into fmt: (storage, its float32 values or None), counted for watching monitors. exact: ans
    holds values of fmt already (an op that selects some of its input's values); inplace: no one else holds ans."""
    if fmt.is_float32 and ans.dtype == np.float32:      # nothing to round; a monitor counts the NaNs
        for m in STATE.monitors:
            m.record(STATE.layer, op_name, "forward", np.array([0, 0, 0, int(np.isnan(ans).sum())]), ans.size)
        return ans, None
    if STATE.monitors:
        return round_counted(ans, fmt, op_name, STATE.layer, "forward"), None
    return SEAMS.round_result(ans, fmt, exact, STATE.grad_enabled, inplace)     # values kept for the backward


def _differentiable(tensors):
    """Whether a gradient will flow into some of the tensors: a float one requires it."""
    for t in tensors:
        if t.requires_grad and t.fmt is not None:
            return True
    return False


def cast(a, fmt):
    """apply("cast", a, _out=fmt) for a float tensor a of another format, without the general dispatch."""
    data, values = _round(wide(a, fmt.compute_dtype), fmt, "cast")    # (no floating-point warnings to silence)
    return _cast_result(a, data, fmt, values)


def cast_in_mode(a, fmt, mode, rng, bits):
    """Tensor.astype in another rounding mode than nearest: round_to of the exact values (every format
    widens exactly to float32), counted for watching monitors; the cast's node, so the gradient casts back."""
    values = a._data if a.fmt is None else wide(a)
    tally = np.zeros(4, np.int64) if STATE.monitors else None
    data = round_to(values, fmt, mode, rng, tally, bits)
    for m in STATE.monitors:
        m.record(STATE.layer, "cast", "forward", tally, data.size)
    return _cast_result(a, data, fmt, None)


def _cast_result(a, data, fmt, values):
    needs_grad = STATE.grad_enabled and a.requires_grad and a.fmt is not None
    out = result_class(type(a))._wrap(data, fmt, needs_grad, Node(CAST, (a,), {}) if needs_grad else None, a.device)
    out._float32 = values
    return out
