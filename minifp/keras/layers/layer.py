"""Keras 3's Layer and Variable over the engine: names, dtype policies, weights, building, the functional graph.

A layer's `__call__` does what Keras 3's does: converts array arguments to tensors and casts floating ones to
the compute dtype, builds the layer once from its input shape, reads float32 variables in the compute dtype
under mixed precision (the engine's variables-only Autocast, Keras's AutocastScope), and runs `call` through
the engine's watched_call. Called on symbolic KerasTensors (from keras.Input) it builds the layer, works out
the output's shape and dtype by running it once on a batch of zeros (no graph, no monitors, training=False),
and records a node of the functional graph.
"""
from __future__ import annotations

import collections
import functools
import inspect
import itertools
import math
import re
import threading
import weakref
import warnings

import numpy as np

from ...engine import (Autocast, autocast_scope, current_autocast, current_training, get_random_state, grad_mode,
    set_random_state, storage, Tensor as _EngineTensor, training_scope, unwatched, watched_call)
from .. import backend
from .._scope import current_path, joined, name_scope
from .._tensor import Tensor, as_dtype, convert_to_tensor, format_of, is_float_dtype
from ..mixed_precision import policy as _policy

__all__ = ["Layer", "Variable", "KerasTensor", "InputSpec", "Node", "is_keras_tensor"]

_FORMAT_OF = {}                     # dtype name -> minifp.Format (None for integer dtypes)
_AUTOCASTS = {}                     # (Format, device) -> the engine's variables-only Autocast
# Held while a layer's first call builds it: threads first calling one layer together make one set of
# variables, the others waiting until it is built. One lock for all layers, re-entrant (a model's build builds
# its layers); a built layer's call takes it too, as a build may set `built` before it ends (Embedding's does).
_BUILD_LOCK = threading.RLock()
class _Calls(threading.local):
    """Per thread: how deep layer calls run (the outermost clears added losses) and which layers hold added losses
    (so an outermost call with none anywhere clears nothing: most calls)."""
    depth = 0

    def __init__(self):
        self.holding = weakref.WeakSet()


_CALLS = _Calls()
_AGGREGATIONS = (None, "none", "mean", "sum", "only_first_replica")


def _autocast(fmt, device):
    key = (fmt, device)
    if key not in _AUTOCASTS:
        _AUTOCASTS[key] = Autocast(fmt=fmt, lower=frozenset(), float32=frozenset(), device=device, cache=True,
                                   variables_only=True)
    return _AUTOCASTS[key]


# -- variables ----------------------------------------------------------------------------


class Variable(Tensor):
    """A Keras variable: a tensor with a name, a path ("dense/kernel") and `trainable`; values change only
    through assign, assign_add, assign_sub (rounded into its dtype). Trainable variables require gradients,
    so the engine's autograd fills their .grad."""

    _result_class = Tensor          # ops on variables give plain tensors

    def __init__(self, initializer, shape=None, dtype=None, trainable=True, autocast=True, aggregation="none",
                 synchronization="auto", name=None):
        dtype = as_dtype(dtype if dtype is not None else backend.floatx())
        if aggregation not in _AGGREGATIONS:
            raise ValueError(f"Invalid value for argument `aggregation`. Expected one of `None`, `'none'`, `'mean'`, "
                             f"`'sum'`, `'only_first_replica'`. Received: aggregation={aggregation}")
        if callable(initializer):
            if shape is None:
                raise ValueError("When creating a Variable from an initializer, the `shape` argument should be "
                                 f"specified. Received: initializer={initializer} and shape={shape}")
            values = initializer(tuple(int(d) for d in shape), dtype=str(dtype))
        else:
            values = initializer
        t = convert_to_tensor(values, dtype=dtype)
        if shape is not None and tuple(t.shape) != tuple(shape):
            raise ValueError(f"Initial value has shape {tuple(t.shape)}, but variable shape is {tuple(shape)}")
        super().__init__(storage(t).copy(), t.fmt, requires_grad=bool(trainable) and t.fmt is not None)
        self.name = name or backend.auto_name("variable")
        self._name_prefix = None if name else "variable"      # made up: see _stable_names
        self.path = joined(self.name)               # under the name scopes open here (Keras's)
        self._trainable = bool(trainable)
        self.autocast = autocast
        self.aggregation = aggregation

    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        self._trainable = bool(value)
        self.requires_grad = self._trainable and self.fmt is not None

    value = property(lambda self: self, doc="The variable's current value (the variable itself).")

    def assign(self, value):
        """Replace the values (rounded into the variable's dtype); the shape must match."""
        if isinstance(value, _EngineTensor):
            value = value.float32() if value.fmt is not None else storage(value)
        value = np.asarray(value)
        if value.shape != self.shape:
            raise ValueError(f"The shape of the target variable and the shape of the target value in "
                             f"`variable.assign(value)` must match. variable.shape={self.shape}, Received: "
                             f"value.shape={value.shape}. Target variable: {self!r}")
        return super().assign(value)

    def assign_add(self, value):
        """Add to the values (one rounding)."""
        return self.assign(self.float32() + _values(value))

    def assign_sub(self, value):
        """Subtract from the values (one rounding)."""
        return self.assign(self.float32() - _values(value))

    def __repr__(self):
        vals = np.array2string(self.float32() if self.fmt else storage(self), precision=6, separator=", ",
                               threshold=20)
        return f"<Variable path={self.path}, shape={self.shape}, dtype={self.dtype}, value={vals}>"


def _values(x):
    if isinstance(x, _EngineTensor):
        return x.float32() if x.fmt is not None else storage(x)
    return np.asarray(x, np.float32)


# -- the symbolic side: KerasTensor, Node, InputSpec --------------------------------------


class KerasTensor:
    """A symbolic tensor of the functional API: a shape (None for unknown sizes), a dtype and its history; ops and
    operators on it record nodes of the graph (layers/operation.py)."""

    symbolic = True

    def __init__(self, shape, dtype="float32", name=None, sparse=False, ragged=False):
        self._shape = tuple(None if d is None else int(d) for d in shape)
        self._dtype = as_dtype(dtype)
        self.name = name or backend.auto_name("keras_tensor")
        self.sparse, self.ragged = sparse, ragged
        self._keras_history = None       # (layer, node_index, tensor_index)
        self._keras_mask = None          # a KerasTensor of the mask the tensor will carry (Keras's, symbolic)

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    ndim = property(lambda self: len(self._shape))

    def __repr__(self):
        return (f"<KerasTensor shape={self.shape}, dtype={self.dtype}, sparse={self.sparse}, ragged="
                f"{self.ragged}, name={self.name}>")

    def __len__(self):
        if self._shape and self._shape[0] is not None:
            return self._shape[0]
        raise TypeError("len() of a KerasTensor whose first dimension is unknown")

    def __array__(self, *args, **kwargs):
        raise ValueError("A KerasTensor is symbolic: it's a placeholder for a shape and a dtype. It doesn't have "
                         "any actual numerical value. You cannot convert it to a NumPy array.")


def is_keras_tensor(x):
    return isinstance(x, KerasTensor)


class Node:
    """One call of a layer in the functional graph: its arguments (with KerasTensors) and outputs."""

    def __init__(self, layer, args, kwargs, outputs):
        self.operation, self.call_args, self.call_kwargs, self.outputs = layer, args, kwargs, outputs
        self.input_tensors = [t for t in _flatten((args, kwargs)) if isinstance(t, KerasTensor)]
        self.output_tensors = [t for t in _flatten(outputs) if isinstance(t, KerasTensor)]
        self.is_input = not self.input_tensors
        self.parent_nodes = [t._keras_history[0]._inbound_nodes[t._keras_history[1]]
                             for t in self.input_tensors if t._keras_history is not None]


class InputSpec:
    """What a layer accepts: ndim, min_ndim, max_ndim, dtype, shape, axes ({axis: size})."""

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None, axes=None,
                 allow_last_axis_squeeze=False, name=None, optional=False):
        self.dtype, self.shape, self.max_ndim, self.min_ndim = dtype, shape, max_ndim, min_ndim
        self.ndim = len(shape) if shape is not None else ndim
        self.axes = dict(axes or {})
        self.name, self.optional = name, optional


def _check_spec(spec, shape, layer_name, index=0):
    """Keras 3's errors (its input_spec texts) for inputs that do not fit a layer's InputSpec."""
    start = f"Input {index} with name '{spec.name}' of layer '{layer_name}' is incompatible with the layer: "
    if spec.ndim is not None and len(shape) != spec.ndim:
        raise ValueError(f"{start}expected ndim={spec.ndim}, found ndim={len(shape)}. Full shape received: {shape}")
    if spec.min_ndim is not None and len(shape) < spec.min_ndim:
        raise ValueError(f"{start}expected min_ndim={spec.min_ndim}, found ndim={len(shape)}. Full shape "
                         f"received: {shape}")
    if spec.max_ndim is not None and len(shape) > spec.max_ndim:
        raise ValueError(f"{start}expected max_ndim={spec.max_ndim}, found ndim={len(shape)}")
    for axis, value in spec.axes.items():
        if value is not None and shape and shape[axis] not in (value, None):
            raise ValueError(f"{start}expected axis {axis} of input shape to have value {value}, but received "
                             f"input with shape {shape}")
    if spec.shape is not None:
        for want, got in zip(spec.shape, shape):
            if want is not None and got is not None and want != got:
                raise ValueError(f"{start}expected shape={spec.shape}, found shape={shape}")


# -- structures -------------------------------------------------------------------------


def _flatten(x):
    if isinstance(x, (list, tuple)):
        return [y for item in x for y in _flatten(item)]
    if isinstance(x, dict):
        return [y for k in x for y in _flatten(x[k])]
    return [x]


def map_structure(fn, x):
    """fn applied to each leaf of nested lists, tuples and dicts."""
    if isinstance(x, list):
        return [map_structure(fn, y) for y in x]
    if isinstance(x, tuple):
        return tuple(map_structure(fn, y) for y in x)
    if isinstance(x, dict):
        return {k: map_structure(fn, v) for k, v in x.items()}
    return fn(x)


def _shape_of(x):
    return tuple(x.shape) if isinstance(x, (KerasTensor, _EngineTensor, np.ndarray)) else None


def _shapes(x):
    """The shape structure of a layer's first argument: a tuple, or a list/dict of them."""
    if isinstance(x, (list, tuple)) and not isinstance(x, (KerasTensor, _EngineTensor)):
        return [_shapes(y) for y in x]
    if isinstance(x, dict):
        return {k: _shapes(v) for k, v in x.items()}
    return _shape_of(x)


# -- layers --------------------------------------------------------------------------------


_INPUT_KWARGS = ("input_shape", "input_dim", "batch_input_shape", "batch_size", "input_dtype")


def _scoped(build):
    """A layer's build run inside its name scope, its path noted (Keras wraps every layer's build so)."""
    @functools.wraps(build)
    def scoped_build(self, *args, **kwargs):
        with self._open_name_scope():
            object.__setattr__(self, "_path", current_path())
            return build(self, *args, **kwargs)
    scoped_build._scoped = True
    return scoped_build


class Layer:
    """The base class of every Keras layer (and of Model)."""

    def __init__(self, *, activity_regularizer=None, trainable=True, dtype=None, autocast=True, name=None,
                 **kwargs):
        self._init_tracking()
        object.__setattr__(self, "_parent_path", None)      # the path its scope was first opened under
        unknown = {k: v for k, v in kwargs.items() if k not in _INPUT_KWARGS}
        if unknown:
            raise ValueError(f"Unrecognized keyword arguments passed to {self.__class__.__name__}: {unknown}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Argument `name` must be a string. Received: name={name!r}")
        self.name = name or backend.auto_name(self.__class__.__name__)
        self._name_prefix = None if name else backend.to_snake_case(self.__class__.__name__)   # see _stable_names
        self._dtype_policy = _policy.get(dtype)
        self._trainable = bool(trainable)
        self.autocast = autocast
        self.built = False
        self.input_spec = None
        # Keras: a layer whose class overrides compute_mask supports masking; others set it themselves
        self.supports_masking = type(self).compute_mask is not Layer.compute_mask
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self._inbound_nodes = []
        self._build_shapes = None
        self._seen_output_shape = None
        self._input_shape_arg = self._input_shape_from(kwargs)

    @staticmethod
    def _input_shape_from(kwargs):
        """(batch, *shape) from input_shape=/input_dim=/batch_input_shape= (the Sequential's first layer)."""
        if kwargs.get("batch_input_shape") is not None:
            return tuple(kwargs["batch_input_shape"])
        if kwargs.get("input_shape") is not None:
            return (kwargs.get("batch_size"),) + tuple(kwargs["input_shape"])
        if kwargs.get("input_dim") is not None:
            return (kwargs.get("batch_size"), kwargs["input_dim"])
        return None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        build = cls.__dict__.get("build")
        if build is not None and not getattr(build, "_scoped", False):
            cls.build = _scoped(build)

    def _open_name_scope(self):
        """This layer's name scope (Keras's): under the path it was first opened under, wherever it runs later."""
        if self.__dict__.get("_parent_path") is None:
            object.__setattr__(self, "_parent_path", current_path())
        return name_scope(self.name, caller=self)

    @property
    def path(self):
        """The layer's path among the name scopes it was built under ("sequential/dense"); None until built."""
        return self.__dict__.get("_path")

    def _init_tracking(self):
        if "_layers" not in self.__dict__:
            object.__setattr__(self, "_layers", [])
            object.__setattr__(self, "_trainable_variables", [])
            object.__setattr__(self, "_non_trainable_variables", [])
            object.__setattr__(self, "_losses", [])
            object.__setattr__(self, "_seed_generators", [])

    def __setattr__(self, name, value):
        # Sub-layers and variables assigned as attributes are tracked, as Keras's auto-tracking does.
        if not name.startswith("__"):
            self._init_tracking()
            for v in _flatten(value) if isinstance(value, (list, tuple, dict)) else (value,):
                if isinstance(v, Layer) and v is not self and all(v is not l for l in self._layers):
                    self._layers.append(v)
                elif isinstance(v, Variable):
                    self._track_variable(v)
                elif getattr(v, "_is_seed_generator", False) and all(v is not g for g in self._seed_generators):
                    self._seed_generators.append(v)     # its state is one of the layer's variables, as in Keras
        object.__setattr__(self, name, value)

    def _track_variable(self, v):
        store = self._trainable_variables if v.trainable else self._non_trainable_variables
        if all(v is not w for w in self._trainable_variables + self._non_trainable_variables):
            store.append(v)

    # -- dtypes --------------------------------------------------------------------------
    @property
    def dtype_policy(self):
        return self._dtype_policy

    @dtype_policy.setter
    def dtype_policy(self, value):
        self._dtype_policy = _policy.get(value)

    compute_dtype = property(lambda self: self._dtype_policy.compute_dtype, doc="The dtype of the computation.")
    variable_dtype = property(lambda self: self._dtype_policy.variable_dtype, doc="The dtype of the variables.")
    dtype = property(lambda self: self._dtype_policy.variable_dtype, doc="Alias of variable_dtype.")
    input_dtype = property(lambda self: self._dtype_policy.compute_dtype)
    @property
    def _format(self):
        """The compute minifp.Format (looked up once per dtype name: every call of every layer reads it)."""
        dtype = self.compute_dtype
        fmt = _FORMAT_OF.get(dtype)
        if fmt is None:
            fmt = _FORMAT_OF[dtype] = format_of(dtype)
        return fmt

    # -- weights -------------------------------------------------------------------------
    def add_weight(self, *args, shape=None, initializer=None, dtype=None, trainable=True, autocast=True,
                   regularizer=None, constraint=None, aggregation="none", overwrite_with_gradient=False,
                   name=None):
        """A new variable of this layer, initialised now (in the variable dtype unless dtype= says); shape,
        initializer and dtype may come positionally, as in Keras 3."""
        shape, initializer, dtype = _weight_args(args, shape, initializer, dtype)
        shape = () if shape is None else tuple(shape)
        dtype = as_dtype(dtype or self.variable_dtype)
        if initializer is None:
            initializer = "glorot_uniform" if is_float_dtype(dtype) else "zeros"
        init = initializers.get(initializer)
        v = Variable(init, shape=shape, dtype=dtype, trainable=trainable, autocast=autocast,
                     aggregation=aggregation, name=name)
        with name_scope(self.name, caller=self):
            v.path = joined(v.name)
        v.regularizer, v.constraint = regularizers.get(regularizer), constraints.get(constraint)
        if v.regularizer is not None:
            object.__setattr__(self, "_regularized", True)
        v.overwrite_with_gradient = bool(overwrite_with_gradient)
        self._track_variable(v)
        return v

    def _own_variables(self):
        return self._trainable_variables + self._non_trainable_variables

    # -- added losses ----------------------------------------------------------------------
    def add_loss(self, loss):
        """Add a scalar loss (a tensor, or a list of them) from inside call() or build(): it shows in `losses`
        until the next outermost layer call, and fit adds it to the loss."""
        losses = _flatten(loss)
        for x in losses:
            if not isinstance(x, _EngineTensor):
                raise ValueError(f"`add_loss()` can only be called from inside `build()` or `call()`, on a tensor "
                                 f"input. Received invalid value: {x}")
        self._losses.extend(losses)
        _CALLS.holding.add(self)

    def _flatten_layers(self):
        """The layers inside this one, each once, in Keras's order (a child's own layers right after it)."""
        out, seen, queue = [], set(), collections.deque(self._layers)
        while queue:
            layer = queue.popleft()
            if id(layer) not in seen:
                seen.add(id(layer))
                out.append(layer)
                queue.extendleft(layer._layers)
        return out

    @property
    def losses(self):
        """The losses added in the last call (this layer's, then its layers'), then the trainable weights'
        regularizer penalties (computed now, from the current values)."""
        layers = [self] + self._flatten_layers()
        out = [loss for layer in layers for loss in layer._losses]
        if any(layer.__dict__.get("_regularized") for layer in layers):   # fit asks every step: skip the scan
            out.extend(v.regularizer(v) for v in self.trainable_weights if getattr(v, "regularizer", None) is not None)
        return out

    def _clear_losses(self):
        self._losses.clear()
        _CALLS.holding.discard(self)
        for layer in self._layers:
            layer._clear_losses()

    @property
    def weights(self):
        out, seen = [], set()
        for v in self._own_variables() + [w for layer in self._layers for w in layer.weights]:
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        return out

    @property
    def variables(self):
        """The weights, then the states of the seed generators (this layer's and its layers')."""
        layers = [self] + self._flatten_layers()
        return self.weights + [g.state for layer in layers for g in layer.__dict__.get("_seed_generators", ())]

    @property
    def trainable_weights(self):
        return [v for v in self.weights if v.trainable] if self.trainable else []

    @property
    def non_trainable_weights(self):
        return [v for v in self.weights if not v.trainable] if self.trainable else self.weights

    trainable_variables = trainable_weights

    @property
    def non_trainable_variables(self):
        return [v for v in self.variables if not v.trainable or not self.trainable]

    def zero_grad(self, set_to_none=True):
        """Clear every trainable variable's gradient (None, or zeros in place): the torch Module's zero_grad, which
        Keras's torch-backend layers have and its "customizing fit()" guide calls in train_step."""
        for v in self.trainable_weights:
            if set_to_none:
                v.grad = None
            elif v.grad is not None:
                v.grad.assign(np.zeros(tuple(v.grad.shape), np.float32))

    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        value = bool(value)
        self._trainable = value
        for v in self._trainable_variables:
            v.trainable = value
        for layer in self._layers:
            layer.trainable = value

    def get_weights(self):
        """The weights' values as NumPy arrays."""
        return [v.numpy() for v in self.weights]

    def set_weights(self, weights):
        """Set the weights from a list of arrays of the weights' shapes (checked whole before any changes)."""
        layer_weights = self.weights
        if len(layer_weights) != len(weights):
            raise ValueError(f"You called `set_weights(weights)` on layer '{self.name}' with a weight list of "
                             f"length {len(weights)}, but the layer was expecting {len(layer_weights)} weights.")
        arrays = []
        for variable, value in zip(layer_weights, weights):
            value = _values(value) if isinstance(value, _EngineTensor) else np.asarray(value)
            if tuple(variable.shape) != tuple(value.shape):
                raise ValueError(f"Layer {self.name} weight shape {tuple(variable.shape)} is not compatible with "
                                 f"provided weight shape {tuple(value.shape)}.")
            arrays.append(value)
        for variable, value in zip(layer_weights, arrays):
            variable.assign(value)

    def count_params(self):
        """How many numbers the weights hold."""
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on layer '{self.name}', but the layer isn't built. "
                             f"You can build it manually via: `layer.build(input_shape)`.")
        return int(sum(math.prod(v.shape) for v in self.weights))

    # -- building and calling ---------------------------------------------------------------
    @_scoped
    def build(self, input_shape=None):
        """Create the weights for inputs of this shape (the base layer has none)."""
        self.built = True

    def call(self, *args, **kwargs):
        raise NotImplementedError(f"Layer {self.__class__.__name__} does not have a `call()` method implemented.")

    def compute_output_shape(self, *args, **kwargs):
        raise NotImplementedError(f"Layer {self.__class__.__name__} should implement "
                                  f"`def compute_output_shape(self, input_shape)`.")

    def compute_mask(self, inputs, previous_mask):
        """The mask of the outputs: the inputs' (for layers that support masking and keep the time axis)."""
        return previous_mask

    def _call_params(self):
        cls = type(self)
        cache = cls.__dict__.get("_call_params_cache")
        if cache is None or cache[0] is not cls.call:
            params = inspect.signature(self.call).parameters
            cache = (cls.call, frozenset(params), any(p.kind == p.VAR_KEYWORD for p in params.values()),
                     tuple(params))
            type.__setattr__(cls, "_call_params_cache", cache)
        return cache[1], cache[2]

    def _call_names(self):
        """The names of call's parameters, in order."""
        self._call_params()
        return type(self).__dict__["_call_params_cache"][3]

    def _maybe_build(self, args):
        if self.built:
            return
        shapes = _shapes(args[0]) if args else None
        self._build_shapes = shapes
        self.build(shapes)
        self.built = True

    def _inputs_by_name(self, kwargs):
        """((call()'s first argument,), the other keyword arguments) where it is given by name; Python's TypeError
        where it is not given at all (missing a required argument: 'inputs')."""
        first = next(iter(inspect.signature(self.call).parameters.values()), None)
        if first is None:
            return (), kwargs
        if first.name in kwargs:
            kwargs = dict(kwargs)
            return (kwargs.pop(first.name),), kwargs
        if first.default is first.empty and first.kind not in (first.VAR_POSITIONAL, first.VAR_KEYWORD):
            raise TypeError(f"missing a required argument: '{first.name}'")
        return (), kwargs

    def _check_positional(self, args, kwargs):
        """Keras's refusal of a positional argument that is no tensor (numbers, strings, lists of them: keyword
        arguments), except in layers that take data of their own kind (models, preprocessing)."""
        if self._allow_non_tensor_positional_args:
            return
        for x in _flatten(args):
            if x is not None and not isinstance(x, (_EngineTensor, KerasTensor)):
                raise ValueError(f"Only input tensors may be passed as positional arguments. The following argument "
                                 f"value should be passed as a keyword argument: {x} (of type {type(x)})")

    def _convert(self, x):
        """Arrays become tensors; floating ones are cast to the compute dtype (Keras's convert_input)."""
        if isinstance(x, KerasTensor):
            return x
        if isinstance(x, _EngineTensor):
            t = x if isinstance(x, Tensor) else convert_to_tensor(x)
        elif hasattr(x, "__array__") and not isinstance(x, (str, bytes)):
            t = convert_to_tensor(x)
        else:
            return x
        if self.autocast and t.fmt is not None:
            fmt = self._format
            if fmt is not None and t.fmt != fmt:
                t = t.astype(fmt)
                if _MASKS[0]:
                    t = _with_mask(t, _mask_of(x))              # the cast keeps the input's mask (Keras's too)
        return t

    def __call__(self, *args, **kwargs):
        if not args:        # call(inputs=x): the inputs as Keras takes them, positionally
            args, kwargs = self._inputs_by_name(kwargs)
        flat = _flatten((args, kwargs))
        if any(isinstance(t, KerasTensor) for t in flat):
            return self._symbolic_call(args, kwargs)
        masked = _MASKS[0] and any(_mask_of(t) is not None for t in flat)
        params, any_kw = self._call_params()
        if "mask" in kwargs and "mask" not in params and not any_kw:
            # Keras passes mask= on as given, and call() refuses it; refused here before the layer is built
            raise TypeError(f"{type(self).__name__}.call() got an unexpected keyword argument 'mask'")
        if self._convert_input_args:
            args = map_structure(self._convert, args)
            kwargs = {k: map_structure(self._convert, v) for k, v in kwargs.items()}
        self._check_positional(args, kwargs)
        self._check_input_spec(args)
        with self._open_name_scope():     # the variables it and the layers it calls make are named under it
            with _BUILD_LOCK:
                self._maybe_build(args)
            # training: given, else an outer call's; passed on only to a call() that names it (Keras drops it
            # otherwise), and passed down to the layers this one calls either way
            training, outer = kwargs.pop("training", None), current_training()
            if training is None:
                training = outer
            if training is not None and "training" in params:
                kwargs["training"] = training
            masked = masked or kwargs.get("mask") is not None
            previous_mask = self._pass_masks(args, kwargs, params) if masked else None
            calls = _CALLS
            depth = calls.depth
            if depth == 0 and calls.holding:
                self._clear_losses()                    # Keras: each outermost call starts the added losses afresh
            calls.depth = depth + 1
            try:
                # autocast_scope, so the cast cache (one float16 copy of each variable) ends with the outermost call
                with self._autocast_scope(args):
                    if training is None or training is outer:
                        out = watched_call(self, self.call, *args, **kwargs)
                    else:
                        with training_scope(training):  # passed down to the layers this one calls
                            out = watched_call(self, self.call, *args, **kwargs)
                if self.activity_regularizer is not None:
                    self._add_activity_losses(out)
            finally:
                calls.depth = depth
            if self.supports_masking and (masked or type(self).compute_mask is not Layer.compute_mask):
                # unmasked inputs keep unmasked outputs unless compute_mask makes a mask of its own (Embedding's)
                self._set_output_masks(args[0] if args else None, out, previous_mask)
            elif previous_mask is not None and any(m is not None for m in _flatten(previous_mask)):
                warnings.warn(f"Layer '{self.name}' (of type {type(self).__name__}) was passed an input with a mask "
                              f"attached to it. However, this layer does not support masking and will therefore "
                              f"destroy the mask information. Downstream layers will not see the mask.", stacklevel=2)
            self._seen_output_shape = map_structure(lambda t: (None,) + tuple(t.shape[1:]) if _shape_of(t) else t,
                                                    out)
            return out

    def _check_input_spec(self, args):
        """Keras's errors for inputs (tensors or KerasTensors) that do not fit the layer's input_spec."""
        if self.input_spec is None or not args:
            return
        for i, (spec, x) in enumerate(zip(_flatten(self.input_spec), _flatten(args[0]))):
            if spec is not None and x is None:
                raise ValueError(f"Inputs to a layer should be tensors. Got '{x}' (of type {type(x)}) as input "
                                 f"for layer '{self.name}'.")
            if spec is not None and _shape_of(x) is not None:
                _check_spec(spec, _shape_of(x), self.name, i)

    # -- masks: Keras's rules ----------------------------------------------------------------
    def _pass_masks(self, args, kwargs, params):
        """Give call() the masks its inputs carry, as Keras does: `mask` when call() takes one tensor argument
        and names `mask`, `<argument>_mask` for each of several; returns the mask the outputs inherit (an
        explicit mask=, else the first argument's)."""
        names = self._call_names()
        given = dict(zip(names, args))
        given.update(kwargs)
        tensors = {k: v for k, v in given.items() if k not in ("mask", "training") and _holds_tensor(v)}
        if len(tensors) == 1:
            if "mask" in params and kwargs.get("mask") is None:
                mask = map_structure(_mask_of, next(iter(tensors.values())))
                if any(m is not None for m in _flatten(mask)):
                    kwargs["mask"] = mask
        else:
            for k, v in tensors.items():
                if f"{k}_mask" in params and given.get(f"{k}_mask") is None:
                    mask = map_structure(_mask_of, v)
                    if any(m is not None for m in _flatten(mask)):
                        kwargs[f"{k}_mask"] = mask
        if kwargs.get("mask") is not None:
            return kwargs["mask"]
        return map_structure(_mask_of, args[0]) if args else None

    def _set_output_masks(self, inputs, outputs, previous_mask):
        """Attach compute_mask's masks to the outputs that carry none yet (Keras's _set_mask_metadata)."""
        flat_out = _flatten(outputs)
        if all(_mask_of(t) is not None for t in flat_out):
            return
        masks = self.compute_mask(inputs, previous_mask)
        if masks is None:
            return
        for t, m in zip(flat_out, _flatten(masks)):
            if m is not None and _mask_of(t) is None:
                _with_mask(t, m)

    def _add_activity_losses(self, outputs):
        """activity_regularizer(output), divided by the batch size (Keras 3), for each output tensor."""
        for t in _flatten(outputs):
            if isinstance(t, _EngineTensor):
                loss = self.activity_regularizer(t)
                if t.ndim and t.shape[0]:
                    loss = loss / t.shape[0]
                self.add_loss(loss)

    _convert_input_args = True
    _allow_non_tensor_positional_args = False     # (Keras's: models and preprocessing layers take data)

    def _autocast_plan(self):
        """(the Format this layer autocasts to, None if it does not; whether its compute and variable dtypes
        differ), worked out once per policy: every call of every layer reads it."""
        policy, autocast = self._dtype_policy, self.autocast
        cached = self.__dict__.get("_autocast_cached")
        if cached is None or cached[0] is not policy or cached[1] != autocast:
            fmt = self._format if autocast and is_float_dtype(self.compute_dtype) else None
            cached = (policy, autocast, fmt, self.compute_dtype != self.variable_dtype)
            object.__setattr__(self, "_autocast_cached", cached)        # not a tracked attribute
        return cached[2], cached[3]

    def _autocast_scope(self, args):
        """The AutocastScope this call enters, or _NULL: Keras 3 enters one where the layer's compute dtype
        differs from its variables', and leaves the one around it where the layer does not autocast to it."""
        fmt, differs = self._autocast_plan()
        current = current_autocast()
        if current is None:
            unchanged = fmt is None or not differs
        else:
            unchanged = fmt is not None and current.fmt == fmt
        if unchanged:
            return _NULL
        if fmt is None:
            return autocast_scope(None)
        device = next((t.device for t in _flatten(args) if isinstance(t, _EngineTensor)), "cpu")
        return autocast_scope(_autocast(fmt, device))

    # -- the functional graph --------------------------------------------------------------
    def _symbolic_call(self, args, kwargs):
        """Build the layer for these KerasTensors, infer the outputs, record the node."""
        self._check_input_spec(args)        # (on the symbolic shapes, the batch unknown, as Keras reports them)
        with self._open_name_scope():
            with _BUILD_LOCK:
                if not self.built:
                    first = args[0] if args else next(iter(kwargs.values()))
                    shapes = _shapes(first)
                    self._build_shapes = shapes
                    self.build(shapes)
                    self.built = True
            out = _infer_outputs(self, args, kwargs)
        node_index = len(self._inbound_nodes)
        for i, t in enumerate(_flatten(out)):
            t._keras_history = (self, node_index, i)
        self._inbound_nodes.append(Node(self, args, kwargs, out))
        return out

    @property
    def output(self):
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self.name} has no inbound nodes (it was never called on a KerasTensor)")
        return self._inbound_nodes[0].outputs

    @property
    def input(self):
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self.name} is not connected, no input to return.")
        node = self._inbound_nodes[0]
        return node.call_args[0] if node.call_args else node.outputs

    # -- the engine's protocol --------------------------------------------------------------
    def _engine_layers(self, prefix=None):
        name = prefix or self.name
        yield name, self
        for layer in self._layers:
            yield from layer._engine_layers(f"{name}.{layer.name}")

    def _engine_variables(self):
        for v in self.variables:
            yield v.path, v

    def _engine_checkpoint_names(self, prefix=""):
        """(name, layer or variable) for every layer inside this one and every variable, as minifp.checkpoint
        keys them: the path of layer names to each ("dense_1/kernel"), each name as the user gave it, or made
        up as auto_name does it but counted among its siblings (see _stable_names); the model itself is ""."""
        own = self._own_variables()
        for name, v in zip(_stable_names(own), own):
            yield prefix + name, v
        for name, layer in zip(_stable_names(self._layers), self._layers):
            yield prefix + name, layer
            yield from layer._engine_checkpoint_names(f"{prefix}{name}/")

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, "dtype": self._dtype_policy.get_config()}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = _policy.get(config["dtype"])
        return cls(**config)

    def __repr__(self):
        return f"<{self.__class__.__name__} name={self.name}, built={self.built}>"


def check_axis(axis, input_shape, layer_axis=None):
    """Refuse an axis (or list of axes) outside [-rank, rank) with Keras 3's error, its compute_output_shape's
    ValueError (tf.keras raises a ValueError too; Keras 3's eager build fails on an IndexError, an accident of
    its indexing, not a refusal)."""
    rank = len(input_shape)
    for a in axis if isinstance(axis, (list, tuple)) else [axis]:
        if not -rank <= a < rank:
            raise ValueError(f"Axis {a} is out of bounds for input shape {tuple(input_shape)}. "
                             f"Received: axis={axis if layer_axis is None else layer_axis}")


# Whether any eager tensor has carried a mask in this process: until one has, a call skips reading its inputs'
# `_keras_mask` slots (an unset slot raises inside getattr: a microsecond a tensor, on every layer call)
_MASKS = [False]


def _mask_of(x):
    """The mask a tensor carries (Keras's `_keras_mask`), None if none."""
    return getattr(x, "_keras_mask", None)


def _with_mask(t, mask):
    """t, carrying `mask` (a bool tensor; arrays are converted) when it can hold one."""
    if mask is not None:
        _MASKS[0] = True
        try:
            t._keras_mask = mask if isinstance(mask, _EngineTensor) else convert_to_tensor(np.asarray(mask, bool))
        except AttributeError:          # an engine tensor of another face: no slot for a mask
            pass
    return t


def _holds_tensor(x):
    return any(isinstance(t, _EngineTensor) for t in _flatten(x))


def _weight_args(args, shape, initializer, dtype):
    """Keras 3's add_weight(shape, initializer, dtype) given positionally: (shape, initializer, dtype)."""
    if not args:
        return shape, initializer, dtype
    if len(args) > 3:
        raise TypeError(f"add_weight() takes at most 3 positional arguments but {len(args)} were given.")
    if isinstance(args[0], str):
        raise ValueError(f"`name` must be passed as a keyword argument. Received: add_weight('{args[0]}', ...). "
                         f"Use: add_weight(shape=..., name='{args[0]}').")
    given = {"shape": shape, "initializer": initializer, "dtype": dtype}
    for key, value in zip(given, args):
        if given[key] is not None:
            raise ValueError(f"`{key}` was passed both positionally and as a keyword argument.")
        given[key] = value
    return given["shape"], given["initializer"], given["dtype"]


def _stable_names(objects):
    """Names for sibling layers (or a layer's variables) that do not depend on what the process made before.

    An automatic name's number counts every object of its kind made earlier in the process, so a second,
    identical model holds dense_2 where the first held dense, and a fresh process numbers differently again.
    So a made-up name becomes its prefix numbered by its place among its siblings (dense, dense_1, ..., as a
    fresh process building only this model would name them), skipping the names a user gave; a given name
    stays as it is (a renamed layer is another layer), and a repeated one is numbered the same way."""
    prefixes = [_made_up(o) for o in objects]
    given = {o.name for o, prefix in zip(objects, prefixes) if prefix is None}
    taken, out = set(), []
    for o, prefix in zip(objects, prefixes):
        if prefix is None and o.name not in taken:
            name = o.name
        else:
            base = o.name if prefix is None else prefix
            numbered = (base if n == 0 else f"{base}_{n}" for n in itertools.count())     # auto_name's sequence
            name = next(c for c in numbered if c not in taken and c not in given)
        taken.add(name)
        out.append(name)
    return out


def _made_up(obj):
    """The prefix of obj's name if auto_name made it up (dense of dense_7), None if it was given (or renamed)."""
    prefix = getattr(obj, "_name_prefix", None)
    return prefix if prefix is not None and re.fullmatch(re.escape(prefix) + r"(_\d+)?", obj.name) else None


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NULL = _Null()


PROBING = [0]       # how many shape probes are running (keras.random's seed generators stand still meanwhile)


def _probe_value(kt, fill):
    """A concrete batch for a KerasTensor: unknown sizes set to fill = (batch size, any other size), zeros of its
    dtype."""
    sizes = lambda shape: tuple(fill[i > 0] if d is None else d for i, d in enumerate(shape))
    fmt = format_of(kt.dtype)
    if fmt is None:
        value = convert_to_tensor(np.zeros(sizes(kt.shape), str(kt.dtype)))
    else:
        value = convert_to_tensor(np.zeros(sizes(kt.shape), np.float32), dtype=kt.dtype)
    mask = kt._keras_mask
    if mask is not None:            # a masked input: a mask keeping everything (a call may divide by its count)
        _with_mask(value, np.ones(sizes(mask.shape), bool))
    return value


def _run_probe(layer, args, kwargs, fill):
    """The layer run eagerly on zero batches standing for the KerasTensors (no graph, no monitors, no state
    changes: training=False)."""
    to_value = lambda x: _probe_value(x, fill) if isinstance(x, KerasTensor) else x
    a = map_structure(to_value, args)
    kw = {k: map_structure(to_value, v) for k, v in kwargs.items()}
    params, any_kw = layer._call_params()
    if "training" in params:
        kw["training"] = False
    state = get_random_state()
    PROBING[0] += 1         # (seed generators do not advance: Keras's symbolic build draws nothing)
    try:
        with grad_mode(False), unwatched(), training_scope(False):
            return Layer.__call__(layer, *a, **kw)
    finally:
        PROBING[0] -= 1
        set_random_state(state)


# Unknown sizes in the probes: the batch (1, or 2 and 3 for an op, which may reduce or index it), and the others
# (a sequence's length, an image's side) long enough for any kernel or pooling window, then twice that
_PROBE_FILLS = {False: ((1, 32), (1, 64)), True: ((2, 32), (3, 64))}


def _infer_outputs(layer, args, kwargs):
    """KerasTensors for a layer's outputs: shapes from runs on zero batches (sizes that depend on unknown input
    sizes found by running with two fills), the batch axis unknown."""
    inputs = [t for t in _flatten((args, kwargs)) if isinstance(t, KerasTensor)]
    operation = getattr(layer, "_is_operation", False)
    fills = _PROBE_FILLS[operation]
    one = _run_probe(layer, args, kwargs, fills[0])
    unknown_inner = operation or any(d is None for t in inputs for d in t.shape[1:])
    two = _run_probe(layer, args, kwargs, fills[1]) if unknown_inner else None
    batch_known = inputs and inputs[0].shape and inputs[0].shape[0] is not None
    flat_two = _flatten(two) if two is not None else None

    def known(a, b):
        """A shape whose sizes that differ between the two runs are unknown (a layer's batch axis too, unless
        given: its runs share a batch of 1)."""
        shape = list(a)
        if b is not None:
            shape = [None if x != y else x for x, y in zip(shape, b)]
        if shape and not batch_known and not operation:
            shape[0] = None
        return shape

    def make(t, i):
        if not isinstance(t, _EngineTensor):
            return t
        other = flat_two[i] if flat_two is not None else None
        out = KerasTensor(known(t.shape, None if other is None else other.shape), t.dtype)
        mask = _mask_of(t)
        if mask is not None:
            mask_two = _mask_of(other) if other is not None else None
            out._keras_mask = KerasTensor(known(mask.shape, None if mask_two is None else mask_two.shape), "bool")
        return out

    counter = iter(range(10 ** 9))
    return map_structure(lambda t: make(t, next(counter)), one)


# Importing here keeps Layer's module free of a cycle with the initializers.
from .. import constraints, initializers, regularizers  # noqa: E402,F401
