"""t.grad_fn: the autograd graph as PyTorch shows it (name(), next_functions), read from the engine's graph.

Each node is named as PyTorch names the node of the same op (MulBackward0, AddmmBackward0, NllLossBackward0, ...)
and lists an entry per input PyTorch's node takes: the input's own node, AccumulateGrad for a leaf that requires a
gradient, None for the rest. Where PyTorch's op is several nodes and the engine's one (or the reverse), the names
follow the engine's graph; tests/fixtures/pytorch/grad_fns.json holds PyTorch's for common expressions.
"""
from __future__ import annotations

import numbers
import weakref

import numpy as np

from ..engine import Tensor as _EngineTensor, made_by, made_of

__all__ = ["grad_fn", "Strided"]

# The engine's op -> PyTorch's node, where the name is not the op's in CamelCase
_NAMES = {"cast": "ToCopy", "concatenate": "Cat", "reshape": "View", "matmul": "Mm", "nll_loss": "NllLoss",
          "mse_loss": "MseLoss", "layer_norm": "NativeLayerNorm", "batch_norm": "NativeBatchNorm",
          "conv2d": "Convolution", "max_pool2d": "MaxPool2DWithIndices", "broadcast_to": "Expand",
          "vector_norm": "LinalgVectorNorm", "setitem": "torch::autograd::CopySlices"}
# Ops whose Python-number operands PyTorch wraps as tensors (an entry None in next_functions)
_WRAPS_NUMBERS = {"add", "sub", "mul", "div"}
_SHOWN = {}     # id(tensor) -> (a weak reference to it, what made it, its node): one node per tensor, as PyTorch's
# Face function nodes whose PyTorch name is not their name in CamelCase + "Backward0"
_FUNCTION_NAMES = {"fill": "FillBackward2", "copy": "torch::autograd::CopyBackwards"}


class Strided(tuple):
    """The index of a view's elements in its base, as the view + in-place rebase uses it: a getitem by it shows as
    PyTorch's regenerated view (AsStridedBackward0), a setitem by it as CopySlices around the in-place op's node."""


class Node:
    """One node of the graph: name(), next_functions ((node or None, 0) per input: a tensor, or a node)."""

    def __init__(self, name, inputs):
        self._name, self._inputs = name, inputs

    def name(self):
        return self._name

    @property
    def next_functions(self):
        return tuple((_node_of(a), 0) for a in self._inputs)

    metadata = property(lambda self: {})

    def __repr__(self):
        return f"<{self._name.rsplit('::', 1)[-1]} object at {id(self):#x}>"


class AccumulateGrad(Node):
    """The node that adds a leaf's gradient into its .grad."""

    def __init__(self, variable):
        super().__init__("torch::autograd::AccumulateGrad", ())
        self._variable = weakref.ref(variable)      # (the leaf's entry in _SHOWN must not keep it alive)

    variable = property(lambda self: self._variable())


def grad_fn(t):
    """The node that made t, or None for a leaf."""
    return None if made_of(t) is None else _shown(t, _made)


def _shown(t, make):
    """t's node, made by make(t) the first time it is asked for (and again once an in-place op made t anew)."""
    made = made_of(t)
    mark = None if made is None else (made_by(t), tuple(map(id, made[0])))
    hit = _SHOWN.get(id(t))
    if hit is not None and hit[0]() is t and hit[1] == mark:
        return hit[2]
    node, key = make(t), id(t)
    _SHOWN[key] = (weakref.ref(t, lambda _, key=key, shown=_SHOWN: shown.pop(key, None)), mark, node)
    return node


def _made(t):
    """The node of the op that made t."""
    op, (inputs, params) = made_by(t), made_of(t)
    if op == "function" and params["name"] is None:        # a custom autograd.Function: its ctx is the node
        return params["backward"]
    if op == "function":        # an engine gradient's own node (create_graph): "gelu_backward", GeluBackwardBackward0
        name = "".join(part.capitalize() for part in params["name"].split("_")) + "Backward0"
        return Node(_FUNCTION_NAMES.get(params["name"], name), tuple(a for a in inputs if isinstance(a, _EngineTensor)))
    if op == "setitem" and isinstance(params["index"], Strided):     # a view's in-place op, written into its base
        return Node("torch::autograd::CopySlices", (inputs[0],) + _wrapped(inputs[1]))
    if op == "linear" and inputs[0].ndim == 2:      # PyTorch: addmm(b, x, w.t()), or mm(x, w.t()) without a bias
        w = Node("TBackward0", (inputs[1],))
        return Node("AddmmBackward0", (inputs[2], inputs[0], w)) if inputs[2] is not None else \
            Node("MmBackward0", (inputs[0], w))
    if op == "concatenate" and _stacked(inputs, params["axis"]):
        return Node("StackBackward0", tuple(made_of(a)[0][0] for a in inputs))
    name = _NAMES.get(op) or "".join(part.capitalize() for part in op.split("_"))
    name = _overload(op, name, inputs, params)
    kept = [a for a in inputs if not (isinstance(a, _EngineTensor) and a.fmt is None)     # (indices, conditions)
            and (a is None or isinstance(a, _EngineTensor) or op in _WRAPS_NUMBERS)]
    return Node(name + ("" if name[-1].isdigit() or "::" in name else "Backward0"), tuple(kept))


def _overload(op, name, inputs, params):
    """The name of PyTorch's node for this form of the op (its overload's number, or another op's node)."""
    if op in ("sum", "mean"):
        return name + ("Backward0" if params.get("axis") is None else "Backward1")
    if op == "max" and params.get("axis") is None:
        return "MaxBackward1"
    if op == "transpose":
        axes = params.get("axes") or tuple(reversed(range(inputs[0].ndim)))     # (None: all reversed, .T)
        moved = [i for i, a in enumerate(axes) if a != i]
        return "T" if len(axes) == 2 else "Transpose" if len(moved) == 2 else "Permute"
    if op == "getitem" and isinstance(params["index"], Strided):
        return "AsStrided"
    if op == "getitem":
        index = params["index"] if isinstance(params["index"], tuple) else (params["index"],)
        while index and isinstance(index[-1], slice) and index[-1] == slice(None):
            index = index[:-1]
        last = index[-1] if index else slice(None)
        if any(isinstance(i, (np.ndarray, list, _EngineTensor)) for i in index):
            return "Index"
        return "Select" if isinstance(last, numbers.Integral) else "Unsqueeze" if last is None else "Slice"
    if op == "clamp":
        return "ClampBackward1"         # (the overload with number bounds)
    if op == "matmul":
        ranks = tuple(a.ndim for a in inputs)
        return {(1, 1): "Dot", (2, 1): "Mv"}.get(ranks, name)
    return name


def _wrapped(value):
    """What PyTorch's CopySlices lists after the base: the next functions of the in-place op's node but its first
    (the view's old values, which the base stands for)."""
    node = grad_fn(value) if isinstance(value, _EngineTensor) else None
    return () if node is None else tuple(n for n, _ in node.next_functions[1:])


def _stacked(inputs, axis):
    """Whether a concatenation is torch.stack's: every input its own input with a size-1 axis put in at `axis`."""
    for a in inputs:
        if not isinstance(a, _EngineTensor) or made_by(a) != "reshape":
            return False
        shape = list(made_of(a)[0][0].shape)
        if list(a.shape) != shape[:axis] + [1] + shape[axis:]:
            return False
    return True


def _node_of(a):
    """An input's entry in next_functions: its node, AccumulateGrad for a leaf that requires a gradient, or None
    (a node of PyTorch's that the engine's graph has not: itself)."""
    if isinstance(a, Node):
        return a
    if not isinstance(a, _EngineTensor) or not a.requires_grad:
        return None
    return grad_fn(a) or _shown(a, AccumulateGrad)
