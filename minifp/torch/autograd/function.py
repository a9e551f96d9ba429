"""torch.autograd.function: custom autograd functions. Function.apply runs forward outside the graph and makes its
float outputs the results of one engine node, whose backward calls the class's backward with their gradients."""
from __future__ import annotations

import inspect
import warnings

import numpy as np

from ...engine import Tensor as _EngineTensor, function_node, grad_mode, is_grad_enabled, made_like, storage
from .. import _graph

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable", "InplaceFunction"]


class FunctionCtx:
    """What forward (or setup_context) hands to backward: save_for_backward, saved_tensors, needs_input_grad,
    mark_non_differentiable, set_materialize_grads, mark_dirty, and any attribute set on it."""

    to_save, non_differentiable, dirty_tensors, materialize_grads = (), (), (), True

    def save_for_backward(self, *tensors):
        self.to_save = tensors

    saved_tensors = property(lambda self: self.to_save)

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors

    def mark_dirty(self, *tensors):
        self.dirty_tensors = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class BackwardCFunction(FunctionCtx, _graph.Node):
    """The ctx of one call, which is also its outputs' grad_fn (<Name>Backward)."""

    _forward_cls = None

    def __init__(self):
        _graph.Node.__init__(self, type(self).__name__, ())

    def __repr__(self):
        return f"<torch.autograd.function.{self.name()} object at {id(self):#x}>"

    def __call__(self, *grads):
        """The class's backward on every output's gradient (grads: those of the differentiable outputs, in
        order; None where none flowed), its gradients checked against the inputs as PyTorch checks them."""
        grads = iter(grads)
        given = [next(grads) if k else None for k in self._differentiable]
        if self.materialize_grads:      # zeros of each tensor output's dtype and shape, from a 0-d one kept
            given = [z.new_zeros(shape) if g is None and z is not None else g
                     for g, (z, shape) in zip(given, self._outputs)]
        result = self._forward_cls.backward(self, *given)
        result = result if isinstance(result, tuple) else (result,)
        inputs, name = self._args, self.name()
        if len(result) > len(inputs) and all(r is None for r in result[len(inputs):]):
            result = result[:len(inputs)]
        if len(result) != len(inputs):
            raise RuntimeError(f"function {name} returned an incorrect number of gradients (expected {len(inputs)}, "
                               f"got {len(result)})")
        for i, (a, r) in enumerate(zip(inputs, result)):
            if r is None:
                continue
            if not isinstance(a, _EngineTensor):
                raise RuntimeError(f"function {name} returned a gradient different than None at position {i + 1}, "
                                   f"but the corresponding forward input was not a Variable")
            if not _expandable(a.shape, r.shape):
                raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} - got "
                                   f"{list(r.shape)} but expected shape compatible with {list(a.shape)}")
        return result


def _expandable(shape, to):
    """Whether `shape` broadcasts to `to` (the gradient is then summed back to `shape`)."""
    try:
        return np.broadcast_shapes(tuple(shape), tuple(to)) == tuple(to)
    except ValueError:
        return False


class Function:
    """A custom autograd op: subclass it with static forward(ctx, *args) (or forward(*args) and
    setup_context(ctx, inputs, output)) and backward(ctx, *grads), and call Function.apply(*args)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(cls.__name__ + "Backward", (BackwardCFunction,), {"_forward_cls": cls})

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd functions are all static, so "
                      f"you should invoke them on the class itself. Instantiating an autograd function will raise an "
                      f"error in a future version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        """forward on the arguments without recording the graph; its float outputs then differentiable through
        backward where some input requires a gradient."""
        ctx = cls._backward_cls()
        separate = cls.setup_context.__func__ is not Function.setup_context.__func__ \
            if hasattr(cls.setup_context, "__func__") else cls.setup_context is not Function.setup_context
        bound = inspect.signature(cls.forward).bind(*(() if separate else (ctx,)), *args, **kwargs)
        bound.apply_defaults()
        args = bound.args[0 if separate else 1:]
        ctx.needs_input_grad = tuple(isinstance(a, _EngineTensor) and a.requires_grad for a in args)
        with grad_mode(False):
            out = cls.forward(*args) if separate else cls.forward(ctx, *args)
            if separate:
                cls.setup_context(ctx, args, out)
        if not (is_grad_enabled() and any(ctx.needs_input_grad)):
            return out
        outputs = list(out) if isinstance(out, tuple) else [out]
        # An input handed back as it is becomes a new tensor over the same storage, as PyTorch's view of it
        outputs = [made_like(o, storage(o), o.fmt) if any(o is a for a in args) else o for o in outputs]
        kept = {id(t) for t in ctx.non_differentiable}
        ctx._differentiable = [isinstance(o, _EngineTensor) and o.is_floating_point() and id(o) not in kept
                               for o in outputs]
        ctx._args, ctx._inputs = args, tuple(a for a in args if isinstance(a, _EngineTensor))
        ctx._outputs = [(o.new_zeros(()), o.shape) if isinstance(o, _EngineTensor) else (None, None)
                        for o in outputs]
        function_node([o for o, d in zip(outputs, ctx._differentiable) if d], args, ctx)
        return tuple(outputs) if isinstance(out, tuple) else outputs[0]


InplaceFunction = Function


def once_differentiable(fn):
    """backward that is not itself differentiable: minifp's backwards never are, so fn as it is."""
    return fn
