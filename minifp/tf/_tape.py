"""tf.GradientTape over the engine's autograd.

minifp records the graph of every op whose inputs require gradients (trainable variables do), so the tape only
has to (1) make the tensors it is told to `watch` require gradients, and (2) run the engine's reverse sweep from
the target, collecting the gradients of the sources instead of writing `.grad` (a tape leaves `.grad` alone, as
TensorFlow has no `.grad`). Gradients come in each source's own dtype: a float32 variable read in float16 under
mixed_float16 gets a float32 gradient, as in TensorFlow.

Differences from TensorFlow, documented: ops run outside the `with` block on tensors that require gradients are
recorded too (the engine records by tensor, not by tape); gradients are values without a graph, so nested tapes
for second derivatives are not supported; `jacobian` and `batch_jacobian` are not provided.
"""
from __future__ import annotations

import enum

import numpy as np

from ..engine import array_module, grad_mode, gradients, make, storage, Tensor as _EngineTensor
from ..keras import _tensor as _K

__all__ = ["GradientTape", "UnconnectedGradients"]

NON_PERSISTENT = "A non-persistent GradientTape can only be used to compute one set of gradients (or jacobians)"


class UnconnectedGradients(enum.Enum):
    """What gradient() returns for a source the target does not depend on: None, or zeros."""

    NONE = "none"
    ZERO = "zero"


class GradientTape:
    """tf.GradientTape(persistent=False, watch_accessed_variables=True): `with tf.GradientTape() as tape:`,
    `tape.watch(x)`, `tape.gradient(target, sources)`."""

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = bool(persistent)
        self._watch_accessed = bool(watch_accessed_variables)
        self._watched = {}          # id -> tensor the tape was told to watch
        self._made_to_require = []  # watched tensors that did not require gradients before
        self._used = False
        self._recording = None

    # -- recording -----------------------------------------------------------------------------------
    def __enter__(self):
        self._recording = grad_mode(True)       # a tape records inside a no_grad block too
        self._recording.__enter__()
        return self

    def __exit__(self, *exc):
        self._recording.__exit__(*exc)
        self._recording = None
        return False

    def watch(self, tensor):
        """Record the ops on `tensor` (a tensor, a variable, or a nested list/tuple/dict of them); integer and
        bool tensors are not differentiable and are ignored, as TensorFlow does (with its warning)."""
        for t in _flatten(tensor):
            if not isinstance(t, _EngineTensor):
                raise ValueError(f"Passed in object {t!r} of type {type(t).__name__!r}, not tf.Tensor or "
                                 f"tf.Variable or ExtensionType.")
            if t.fmt is None:
                continue
            self._watched[id(t)] = t
            if not t.requires_grad:
                t.requires_grad = True
                self._made_to_require.append(t)

    def watched_variables(self):
        """The tensors and variables watched explicitly, in order."""
        return tuple(self._watched.values())

    def stop_recording(self):
        """A block whose ops are not recorded (the engine's no_grad)."""
        return grad_mode(False)

    def reset(self):
        """Forget what was watched; the tape can compute gradients again."""
        self._release()
        self._used = False

    def __del__(self):
        self._release()         # a persistent tape lets go of what it watched when it is deleted, as TensorFlow's

    def _release(self):
        for t in getattr(self, "_made_to_require", ()):
            t.requires_grad = False
        self._made_to_require, self._watched = [], {}

    # -- gradients -----------------------------------------------------------------------------------
    def gradient(self, target, sources, output_gradients=None, unconnected_gradients=UnconnectedGradients.NONE):
        """The gradients of `target` (a tensor, or a list of them: their sum) with respect to `sources` (a
        tensor, a variable, or a nested list/tuple/dict of them), in the structure of `sources`."""
        if self._used and not self._persistent:
            raise RuntimeError(NON_PERSISTENT)
        unconnected = UnconnectedGradients(unconnected_gradients.value
                                           if isinstance(unconnected_gradients, UnconnectedGradients)
                                           else unconnected_gradients)
        if not isinstance(sources, (dict, list, tuple, _EngineTensor)) and hasattr(sources, "__iter__"):
            sources = list(sources)         # a generator or a view: read once, returned as a list
        targets = _flatten(target)
        for t in targets:
            if not isinstance(t, _EngineTensor):
                raise TypeError(f"gradient(): target must be a tensor or a list of tensors, got {t!r}")
        flat = _flatten(sources)
        for s in flat:
            if not isinstance(s, _EngineTensor):
                raise ValueError(f"gradient(): sources must be tensors or variables, got {s!r} of type "
                                 f"{type(s).__name__!r}")
        grads = gradients(targets, [s for s in flat if self._differentiable(s)], _seeds(targets, output_gradients))
        out = [_as_face(s, grads.get(id(s)), unconnected) for s in flat]
        self._used = True
        if not self._persistent:
            self._release()
        return _pack(sources, iter(out))

    def _differentiable(self, s):
        """Whether the tape gives s a gradient: float tensors it records (watched ones, and trainable variables
        unless watch_accessed_variables=False)."""
        if s.fmt is None or not s.requires_grad:
            return False
        return id(s) in self._watched or self._watch_accessed or not s.is_leaf


def _flatten(x):
    """The tensors of a nested list/tuple/dict (TensorFlow's nest), in order."""
    if isinstance(x, dict):
        return [t for k in sorted(x) for t in _flatten(x[k])]
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in _flatten(item)]
    return [x]


def _pack(structure, values):
    """`values` in the nesting of `structure` (lists stay lists, tuples tuples, dicts dicts)."""
    if isinstance(structure, dict):
        packed = {k: _pack(structure[k], values) for k in sorted(structure)}
        return {k: packed[k] for k in structure}
    if isinstance(structure, (list, tuple)):
        items = [_pack(s, values) for s in structure]
        return items if isinstance(structure, list) else type(structure)(items) if not hasattr(structure, "_fields") \
            else type(structure)(*items)
    return next(values)


def _seeds(targets, output_gradients):
    """One output gradient per target (None: ones), checked as TensorFlow checks them."""
    if output_gradients is None:
        return [None] * len(targets)
    outs = _flatten(output_gradients)
    if len(outs) != len(targets):
        raise ValueError(f"gradient(): {len(outs)} output_gradients for {len(targets)} targets")
    for t, g in zip(targets, outs):
        shape = tuple(g.shape) if hasattr(g, "shape") else np.shape(g)
        if t.fmt is not None and t.requires_grad and shape != tuple(t.shape):
            raise ValueError(f"gradient(): output gradient of shape {shape} for a target of shape {t.shape}")
    return outs


def _as_face(source, g, unconnected):
    """A gradient as a face tensor in the source's format (None, or zeros, when it is not connected)."""
    if g is None:
        if unconnected is UnconnectedGradients.NONE:
            return None
        g = array_module(storage(source)).zeros(source.shape, storage(source).dtype)
    return make(_K.Tensor, g, source.fmt, False, source.device)
