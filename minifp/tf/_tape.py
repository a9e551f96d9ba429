"""tf.GradientTape over the engine's autograd.

minifp records the graph of every op whose inputs require gradients (trainable variables do), so the tape only
has to (1) make the tensors it is told to `watch` require gradients, and (2) run the engine's reverse sweep from
the target, collecting the gradients of the sources instead of writing `.grad` (a tape leaves `.grad` alone, as
TensorFlow has no `.grad`). Gradients come in each source's own dtype: a float32 variable read in float16 under
mixed_float16 gets a float32 gradient, as in TensorFlow.

Nested tapes: TensorFlow records the gradient computation itself on every tape still recording, so a gradient taken
while a tape records (an outer tape's block, or a persistent tape's own) is swept with the engine's create_graph
and can be differentiated again (second derivatives, Hessians as the jacobian of a gradient); one taken when no
tape records is a plain value. As in TensorFlow, a non-persistent tape stops recording when its gradient is taken
inside its own block. `jacobian` and `batch_jacobian` sweep once per element of the target (a row of a batch),
with one-hot output gradients, where TensorFlow vectorises the loop (pfor).

Differences from TensorFlow, documented: ops run outside the `with` block on tensors that require gradients are
recorded too (the engine records by tensor, not by tape), so an outer tape that watches a tensor also gets the
gradients of ops an inner tape saw on it outside its own block; `stop_recording` pauses every tape, not only its
own (it is the engine's no_grad); `parallel_iterations` and `experimental_use_pfor` are accepted and change nothing;
`watched_variables()` lists the variables watched explicitly, in the order they were watched, where TensorFlow also
lists every trainable variable read in the block (the engine does not say which tensors an op read) and orders them
by creation.
"""
from __future__ import annotations

import enum
import threading
import weakref

import numpy as np

from ..engine import apply, array_module, grad_mode, gradients, make, rewrap, storage, Tensor as _EngineTensor
from ..keras import Variable as _KerasVariable, _tensor as _K

__all__ = ["GradientTape", "UnconnectedGradients"]

NON_PERSISTENT = "A non-persistent GradientTape can only be used to compute one set of gradients (or jacobians)"

_RECORDING = threading.local()      # .tapes: this thread's tapes recording now, innermost last; .paused: how many
                                    # stop_recording blocks it is in
_WATCHING = weakref.WeakSet()       # tapes holding watched tensors (which stay watchable while one of them lives)


def _recording_tapes():
    """This thread's list of recording tapes."""
    if not hasattr(_RECORDING, "tapes"):
        _RECORDING.tapes = []
    return _RECORDING.tapes


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
        _recording_tapes().append(self)
        return self

    def __exit__(self, *exc):
        self._recording.__exit__(*exc)
        self._recording = None
        self._stop()
        return False

    def _stop(self):
        """This tape records no more (its block ended, or its non-persistent gradient was taken inside it)."""
        tapes = _recording_tapes()
        if self in tapes:
            tapes.remove(self)

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
            _WATCHING.add(self)
            if not t.requires_grad:
                t.requires_grad = True
                self._made_to_require.append(t)

    def watched_variables(self):
        """The variables watched explicitly, in order (not constants), as TensorFlow lists them; a non-persistent
        tape still lists them after its gradient."""
        if self._used and not self._persistent:
            return self._kept
        return tuple(t for t in self._watched.values() if isinstance(t, _KerasVariable))

    def stop_recording(self):
        """A block whose ops are not recorded (the engine's no_grad; gradients taken in it are plain values)."""
        return _Paused()

    def reset(self):
        """Forget what was watched; the tape can compute gradients again."""
        self._release()
        self._used = False

    def __del__(self):
        self._release()         # a persistent tape lets go of what it watched when it is deleted, as TensorFlow's

    def _release(self):
        _WATCHING.discard(self)
        for t in getattr(self, "_made_to_require", ()):
            other = next((tape for tape in _WATCHING if id(t) in tape._watched), None)
            if other is not None:           # another tape still watches it: that one lets go of it later
                other._made_to_require.append(t)
            else:
                t.requires_grad = False
        self._made_to_require, self._watched = [], {}

    # -- gradients ---------------------------------------------------------------------------------------
    def gradient(self, target, sources, output_gradients=None, unconnected_gradients=UnconnectedGradients.NONE):
        """The gradients of `target` (a tensor, or a list of them: their sum) with respect to `sources` (a
        tensor, a variable, or a nested list/tuple/dict of them), in the structure of `sources`."""
        self._begin_use()
        unconnected = _unconnected(unconnected_gradients)
        if not isinstance(sources, (dict, list, tuple, _EngineTensor)) and hasattr(sources, "__iter__"):
            sources = list(sources)         # a generator or a view: read once, returned as a list
        targets = _flatten(target)
        for t in targets:
            if not isinstance(t, _EngineTensor):
                raise TypeError(f"gradient(): target must be a tensor or a list of tensors, got {t!r}")
        flat = _sources(sources)
        out = self._sweep(targets, flat, _seeds(targets, output_gradients), unconnected)
        self._end_use()
        return _pack(sources, iter(out))

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE, parallel_iterations=None,
                 experimental_use_pfor=True):
        """d target[i] / d source[j] for each source (nested as `sources`), of shape target.shape + source.shape."""
        self._begin_use()
        unconnected = _unconnected(unconnected_gradients)
        target = _one_target(target, "jacobian")
        flat = _sources(sources)
        rows = [self._sweep([target], flat, [_one_hot((target.size,), i, target.shape)], unconnected)
                for i in range(target.size)]
        out = [_stacked([r[k] for r in rows], 0, tuple(target.shape) + tuple(s.shape), s) for k, s in enumerate(flat)]
        self._end_use()
        return _pack(sources, iter(out))

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """d target[b, i] / d source[b, j] for each example b (the examples independent of each other), of shape
        target.shape + source.shape[1:]."""
        self._begin_use()
        unconnected = _unconnected(unconnected_gradients)
        target = _one_target(target, "batch_jacobian")
        (source,) = _sources([source])
        for t in (target, source):
            if t.ndim < 2:
                raise ValueError(f"Shape {tuple(t.shape)} must have rank at least 2")
        if target.shape[0] != source.shape[0]:
            raise ValueError(f"Need first dimension of target shape ({tuple(target.shape)}) and source shape "
                             f"({tuple(source.shape)}) to match.")
        batch, per_example = target.shape[0], int(np.prod(target.shape[1:]))
        rows = [self._sweep([target], [source], [_one_hot((batch, per_example), (slice(None), j), target.shape)],
                            unconnected)[0] for j in range(per_example)]
        out = _stacked(rows, 1, tuple(target.shape) + tuple(source.shape[1:]), source)
        self._end_use()
        return out

    def _begin_use(self):
        """Refuse a second use of a non-persistent tape; taken inside its block, such a tape stops recording."""
        if self._used and not self._persistent:
            raise RuntimeError(NON_PERSISTENT)
        if not self._persistent:
            self._stop()

    def _end_use(self):
        if not self._persistent:
            self._kept = self.watched_variables()
            self._release()
        self._used = True

    def _sweep(self, targets, flat, seeds, unconnected):
        """Each source's gradient as a face tensor (None or zeros where unconnected): with a graph of its own while
        a tape records, so that tape can differentiate it again."""
        graph = bool(_recording_tapes()) and not getattr(_RECORDING, "paused", 0)
        grads = gradients(targets, [s for s in flat if self._differentiable(s)], seeds, create_graph=graph)
        return [_as_face(s, grads.get(id(s)), unconnected) for s in flat]

    def _differentiable(self, s):
        """Whether the tape gives s a gradient: float tensors it records (watched ones, and trainable variables
        unless watch_accessed_variables=False)."""
        if s.fmt is None or not s.requires_grad:
            return False
        return id(s) in self._watched or self._watch_accessed or not s.is_leaf


class _Paused:
    """tape.stop_recording(): nothing is recorded in the block, and gradients taken there are plain values."""

    def __enter__(self):
        self._grad = grad_mode(False)
        self._grad.__enter__()
        _RECORDING.paused = getattr(_RECORDING, "paused", 0) + 1
        return self

    def __exit__(self, *exc):
        _RECORDING.paused -= 1
        self._grad.__exit__(*exc)
        return False


def _unconnected(value):
    """UnconnectedGradients from the enum or its value ("none", "zero")."""
    return UnconnectedGradients(value.value if isinstance(value, UnconnectedGradients) else value)


def _sources(sources):
    """The tensors of a nested structure of sources, each checked."""
    flat = _flatten(sources)
    for s in flat:
        if not isinstance(s, _EngineTensor):
            raise ValueError(f"gradient(): sources must be tensors or variables, got {s!r} of type "
                             f"{type(s).__name__!r}")
    return flat


def _one_target(target, where):
    if not isinstance(target, _EngineTensor):
        raise TypeError(f"{where}(): target must be a tensor, got {target!r}")
    return target


def _one_hot(shape, index, reshape_to=None):
    """An output gradient of ones at `index` of an array of `shape` and zeros elsewhere (float32)."""
    seed = np.zeros(int(np.prod(shape)), np.float32).reshape(shape)
    seed[index] = 1
    return seed if reshape_to is None else seed.reshape(reshape_to)


def _stacked(rows, axis, shape, source):
    """Rows of gradients stacked along `axis` and shaped `shape` (differentiable where they are); None if the
    rows are (the source is unconnected); zeros where there are no rows."""
    if any(r is None for r in rows):
        return None
    if not rows:
        return make(_K.Tensor, array_module(storage(source)).zeros(shape, storage(source).dtype), source.fmt, False,
                    source.device)
    lined = [apply("reshape", r, shape=tuple(r.shape[:axis]) + (1,) + tuple(r.shape[axis:])) for r in rows]
    return rewrap(apply("reshape", apply("concatenate", *lined, axis=axis), shape=shape), _K.Tensor)


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
    if isinstance(g, _EngineTensor):            # a gradient with a graph (a tape records): the graph's own tensor
        return rewrap(g, _K.Tensor)
    if g is None:
        if unconnected is UnconnectedGradients.NONE:
            return None
        g = array_module(storage(source)).zeros(source.shape, storage(source).dtype)
    return make(_K.Tensor, g, source.fmt, False, source.device)
