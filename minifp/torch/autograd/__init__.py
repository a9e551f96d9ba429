"""torch.autograd: grad modes as context managers and decorators, autograd.grad, custom Functions, and
autograd.functional (Jacobians, Hessians and their products with vectors)."""
from __future__ import annotations

import functools

from ... import engine
from ...engine import gradients, grad_mode, made_like, Tensor as _EngineTensor
from .._saved import refuse_stale
from .._tensor import check_output_gradients
from . import function
from .function import Function

__all__ = ["Function", "function", "functional", "no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "is_inference_mode_enabled", "grad",
           "Variable", "set_detect_anomaly", "detect_anomaly"]


class _GradMode:
    """A block, or with `@` a function, in which ops record the graph (enabled) or not; `@no_grad` and
    `@no_grad()` alike."""

    enabled = False

    def __new__(cls, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs and cls is not set_grad_enabled:
            return cls()(args[0])           # the decorator written without parentheses
        return super().__new__(cls)

    def __init__(self):
        self.scopes = []                    # a list: one object may be entered again inside itself

    def __enter__(self):
        scope = grad_mode(self.enabled)
        scope.__enter__()
        self.scopes.append(scope)

    def __exit__(self, *exc):
        self.scopes.pop().__exit__(*exc)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return type(self)()


class no_grad(_GradMode):
    """Ops inside record no graph."""


class enable_grad(_GradMode):
    """Ops inside record the graph, in a no_grad block too."""

    enabled = True


class inference_mode(_GradMode):
    """no_grad for inference (mode=False: grad mode as it is); is_inference_mode_enabled() says so inside."""

    def __init__(self, mode=True):
        super().__init__()
        self.mode = bool(mode)

    def __enter__(self):
        self.enabled = engine.is_grad_enabled() and not self.mode
        super().__enter__()
        _inference.append(self.mode)

    def __exit__(self, *exc):
        _inference.pop()
        return super().__exit__(*exc)

    def clone(self):
        return type(self)(self.mode)


_inference = [False]        # (PyTorch's flag is per thread; minifp's grad mode is, this flag is not)


def is_inference_mode_enabled():
    return _inference[-1]


class set_grad_enabled(_GradMode):
    """Grad mode `mode` from now on in this thread, or, used as a block, inside it."""

    def __init__(self, mode):
        super().__init__()
        self.enabled = bool(mode)
        self.scope = grad_mode(self.enabled)
        self.scope.__enter__()              # a call switches at once, as PyTorch's does

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        self.scope.__exit__(*exc)
        return False

    def clone(self):
        self.scope.__exit__()               # as a decorator: only inside the function
        return set_grad_enabled(self.enabled)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=None,
         materialize_grads=False):
    """The gradients of the outputs' sum with respect to each input (no .grad changes); create_graph: gradients
    that are themselves differentiable."""
    outputs = [outputs] if isinstance(outputs, _EngineTensor) else list(outputs)
    single = isinstance(inputs, _EngineTensor)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is not None and not isinstance(grad_outputs, (list, tuple)):
        grad_outputs = [grad_outputs]
    for o in outputs:
        if not o.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    check_output_gradients(outputs, grad_outputs if grad_outputs is not None else [None] * len(outputs))
    found = gradients(outputs, inputs, grad_outputs, create_graph=bool(create_graph), on_stale=refuse_stale)
    result = []
    for i, x in enumerate(inputs):
        g = found.get(id(x))
        if g is None and not (allow_unused or materialize_grads):
            raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                               "Set allow_unused=True if this is the desired behavior.")
        if g is not None and not create_graph:      # (with create_graph: the graph's own tensor)
            g = made_like(x, g, x.fmt)
        result.append(g if g is not None else (x.new_zeros(x.shape) if materialize_grads else None))
    return tuple(result)


def Variable(data, requires_grad=False, volatile=False):
    """torch.autograd.Variable (deprecated in PyTorch): the tensor itself."""
    return data.requires_grad_(requires_grad) if requires_grad else data


class set_detect_anomaly:
    """Accepted and ignored: minifp's numerics monitor is the tool for finding NaN and inf (minifp.numerics)."""

    def __init__(self, mode, check_nan=True):
        self.mode = mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        return False


detect_anomaly = set_detect_anomaly


from . import functional  # noqa: E402  (it builds on grad above)
