"""Keras 3's recurrent layers: SimpleRNN, LSTM and GRU (and their cells), the generic RNN, Bidirectional and
TimeDistributed.

The cells keep Keras's weights ("kernel" (input_dim, gates * units), "recurrent_kernel" (units, gates * units),
"bias"), its gate order (LSTM: i, f, c, o; GRU: z, r, h) and its order of operations (the layer's "implementation
2": one product of the inputs with every gate's kernel, one of the state, then the gates). The time loop is
Keras's backend.rnn: masked steps keep the previous state and output (zeros with zero_output_for_mask), and
go_backwards walks the sequence from its end and returns the outputs in the order it walked them.
"""
from __future__ import annotations

import inspect
import numbers

import numpy as np

from ...engine import apply, generator, storage, Tensor as _EngineTensor
from .. import activations, backend, initializers
from .._tensor import convert_to_tensor
from .layer import InputSpec, Layer, map_structure

__all__ = ["SimpleRNNCell", "LSTMCell", "GRUCell", "StackedRNNCells", "RNN", "SimpleRNN", "LSTM", "GRU",
           "Bidirectional", "TimeDistributed"]


def _cols(x, i, size):
    """Columns i*size .. (i+1)*size of the last axis (one gate's slice)."""
    return apply("getitem", x, index=(Ellipsis, slice(i * size, (i + 1) * size)))


def _serialize(layer):
    return {"module": "keras.layers", "class_name": type(layer).__name__, "config": layer.get_config(),
            "registered_name": None}


def _deserialize(config):
    from . import deserialize          # the package imports this module: look it up when needed
    return config if isinstance(config, Layer) else deserialize(config)


def _leaves(x):
    """The tensors of a nested list of states, in order."""
    return [y for item in x for y in _leaves(item)] if isinstance(x, (list, tuple)) else [x]


def _zip_map(fn, a, b):
    """fn over the paired leaves of two nested lists of the same structure."""
    if isinstance(a, (list, tuple)):
        return [_zip_map(fn, x, y) for x, y in zip(a, b)]
    return fn(a, b)


class _DropoutCell(Layer):
    """What SimpleRNNCell, LSTMCell and GRUCell share: arguments, weights, dropout masks fixed over a call."""

    _gates = 1

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, seed=None,
                 **kwargs):
        implementation = kwargs.pop("implementation", 2)
        super().__init__(**kwargs)
        if isinstance(units, bool) or not isinstance(units, numbers.Integral) or units <= 0:
            raise ValueError(f"Received an invalid value for argument `units`, expected a positive integer, got "
                             f"{units}.")
        self.units, self.implementation = int(units), implementation
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer, self.recurrent_regularizer = kernel_regularizer, recurrent_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint, self.recurrent_constraint = kernel_constraint, recurrent_constraint
        self.bias_constraint = bias_constraint
        # clipped into [0, 1], not checked (Keras's cells take any number)
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        self.seed = seed
        self._masks = None

    def _build_kernels(self, input_dim, bias_shape, bias_initializer):
        width = self._gates * self.units
        self.kernel = self.add_weight(shape=(input_dim, width), name="kernel", initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight(shape=(self.units, width), name="recurrent_kernel",
                                                initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint)
        self.bias = self.add_weight(shape=bias_shape, name="bias", initializer=bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        self.built = True

    def start_masks(self, inputs, states, training):
        """Draw the dropout masks of one call (the same for every step, as Keras's DropoutRNNCell keeps them)."""
        state = _leaves(states)[0]

        def mask(rate, shape):
            if not training or not 0 < rate < 1:
                return None
            keep = generator(self.seed).random(shape) >= rate
            return keep, np.float32(1.0 / (1.0 - rate))
        self._masks = (mask(self.dropout, tuple(inputs.shape)), mask(self.recurrent_dropout, tuple(state.shape)))

    def end_masks(self):
        self._masks = None

    @staticmethod
    def _drop(x, mask):
        return x if mask is None else apply("dropout", x, mask=mask[0], scale=mask[1])

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "use_bias": self.use_bias, "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": None, "recurrent_regularizer": None, "bias_regularizer": None,
                "kernel_constraint": None, "recurrent_constraint": None, "bias_constraint": None,
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout, "seed": self.seed}


class SimpleRNNCell(_DropoutCell):
    """One plain recurrent step: h' = activation(x @ kernel + bias + h @ recurrent_kernel)."""

    def __init__(self, units, activation="tanh", use_bias=True, **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias, **kwargs)
        self.state_size = self.units
        self.output_size = self.units

    def build(self, input_shape):
        self._build_kernels(input_shape[-1], (self.units,), self.bias_initializer)

    def call(self, sequence, states, training=False):
        h = states[0] if isinstance(states, (list, tuple)) else states
        dropped, recurrent = self._masks or (None, None)
        x = apply("matmul", self._drop(sequence, dropped), self.kernel)
        if self.use_bias:
            x = apply("add", x, self.bias)
        out = self.activation(apply("add", x, apply("matmul", self._drop(h, recurrent), self.recurrent_kernel)))
        return out, [out]

    def get_config(self):
        config = super().get_config()
        del config["recurrent_activation"]          # a plain step has none
        return config


class LSTMCell(_DropoutCell):
    """One LSTM step: z = x @ kernel + h @ recurrent_kernel + bias split into i, f, c, o;
    c' = f * c + i * activation(c~), h' = o * activation(c')."""

    _gates = 4

    def __init__(self, units, *args, unit_forget_bias=True, **kwargs):
        super().__init__(units, *args, **kwargs)
        self.unit_forget_bias = unit_forget_bias
        self.state_size = [self.units, self.units]
        self.output_size = self.units

    def build(self, input_shape):
        self._build_kernels(input_shape[-1], (4 * self.units,),
                            self._forget_bias_ones if self.unit_forget_bias else self.bias_initializer)

    def _forget_bias_ones(self, shape, dtype=None):
        """unit_forget_bias: the bias initializer's values, but ones for the forget gate."""
        u, init = self.units, self.bias_initializer
        return np.concatenate([np.asarray(init((u,), dtype=dtype)), np.ones(u, np.float32),
                               np.asarray(init((2 * u,), dtype=dtype))])

    def call(self, inputs, states, training=False):
        h, c = states
        dropped, recurrent = self._masks or (None, None)
        z = apply("add", apply("matmul", self._drop(inputs, dropped), self.kernel),
                  apply("matmul", self._drop(h, recurrent), self.recurrent_kernel))
        if self.use_bias:
            z = apply("add", z, self.bias)
        i, f, g, o = (_cols(z, k, self.units) for k in range(4))
        i, f, o = self.recurrent_activation(i), self.recurrent_activation(f), self.recurrent_activation(o)
        c = apply("add", apply("mul", f, c), apply("mul", i, self.activation(g)))
        h = apply("mul", o, self.activation(c))
        return h, [h, c]

    def get_config(self):
        return {**super().get_config(), "unit_forget_bias": self.unit_forget_bias}


class GRUCell(_DropoutCell):
    """One GRU step: gates z, r from the inputs' and the state's products; candidate hh; h' = z * h + (1 - z) * hh.
    reset_after=True (Keras 3's default, cuDNN's form) applies r after the state's product and keeps two biases."""

    _gates = 3

    def __init__(self, units, *args, reset_after=True, **kwargs):
        super().__init__(units, *args, **kwargs)
        self.reset_after = reset_after
        self.state_size = self.units
        self.output_size = self.units

    def build(self, input_shape):
        shape = (2, 3 * self.units) if self.reset_after else (3 * self.units,)
        self._build_kernels(input_shape[-1], shape, self.bias_initializer)

    def call(self, inputs, states, training=False):
        h = states[0] if isinstance(states, (list, tuple)) else states
        dropped, recurrent = self._masks or (None, None)
        u = self.units
        input_bias = recurrent_bias = None
        if self.use_bias:
            input_bias = self.bias
            if self.reset_after:
                input_bias = apply("getitem", self.bias, index=0)
                recurrent_bias = apply("getitem", self.bias, index=1)
        x = apply("matmul", self._drop(inputs, dropped), self.kernel)
        if input_bias is not None:
            x = apply("add", x, input_bias)
        h_in = self._drop(h, recurrent)
        if self.reset_after:
            inner = apply("matmul", h_in, self.recurrent_kernel)
            if recurrent_bias is not None:
                inner = apply("add", inner, recurrent_bias)
        else:
            inner = apply("matmul", h_in, apply("getitem", self.recurrent_kernel, index=(slice(None),
                                                                                          slice(0, 2 * u))))
        z = self.recurrent_activation(apply("add", _cols(x, 0, u), _cols(inner, 0, u)))
        r = self.recurrent_activation(apply("add", _cols(x, 1, u), _cols(inner, 1, u)))
        if self.reset_after:
            rh = apply("mul", r, _cols(inner, 2, u))
        else:
            rh = apply("matmul", apply("mul", r, h_in), _cols(self.recurrent_kernel, 2, u))
        hh = self.activation(apply("add", _cols(x, 2, u), rh))
        h = apply("add", apply("mul", z, h), apply("mul", 1 - z, hh))
        return h, [h]

    def get_config(self):
        return {**super().get_config(), "reset_after": self.reset_after}


class StackedRNNCells(Layer):
    """Cells run one after the other at each step, each one's output the next one's input (RNN([cell, ...]))."""

    def __init__(self, cells, **kwargs):
        super().__init__(**kwargs)
        for cell in cells:
            if not hasattr(cell, "call"):
                raise ValueError(f"All cells must have a `call` method. Received cell without a `call` method: "
                                 f"{cell}")
            if not hasattr(cell, "state_size"):
                raise ValueError(f"All cells must have a `state_size` attribute. Received cell without a "
                                 f"`state_size`: {cell}")
        self.cells = list(cells)

    state_size = property(lambda self: [c.state_size for c in self.cells])

    @property
    def output_size(self):
        last = self.cells[-1]
        size = getattr(last, "output_size", None)
        return size if size is not None else _leaves([last.state_size])[0]

    def get_initial_state(self, batch_size=None):
        """Each cell's initial states: its own get_initial_state, or zeros."""
        out = []
        for cell in self.cells:
            own = getattr(cell, "get_initial_state", None)
            sizes = [cell.state_size] if isinstance(cell.state_size, int) else list(cell.state_size)
            out.append(own(batch_size=batch_size) if own is not None else [
                convert_to_tensor(np.zeros((batch_size, n), np.float32), dtype=cell.compute_dtype) for n in sizes])
        return out

    def build(self, input_shape):
        for cell in self.cells:
            if not cell.built:
                cell.build(input_shape)
                cell.built = True
            size = getattr(cell, "output_size", None) or _leaves([cell.state_size])[0]
            input_shape = tuple(input_shape[:-1]) + (size,)
        self.built = True

    def start_masks(self, inputs, states, training):
        """Each dropout cell's masks, for the width of what it reads."""
        width = inputs.shape[-1]
        for cell, state in zip(self.cells, states):
            if hasattr(cell, "start_masks"):
                cell.start_masks(np.zeros((inputs.shape[0], width), np.float32), state, training)
            width = getattr(cell, "output_size", None) or _leaves([cell.state_size])[0]

    def end_masks(self):
        for cell in self.cells:
            if hasattr(cell, "end_masks"):
                cell.end_masks()

    def call(self, inputs, states, training=False):
        new_states = []
        for cell, state in zip(self.cells, states):
            state = list(state) if isinstance(state, (list, tuple)) else [state]
            if "training" in inspect.signature(cell.call).parameters:
                inputs, state = cell.call(inputs, state, training=training)
            else:
                inputs, state = cell.call(inputs, state)
            new_states.append(list(state) if isinstance(state, (list, tuple)) else [state])
        return inputs, new_states

    def get_config(self):
        return {**super().get_config(), "cells": [_serialize(c) for c in self.cells]}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["cells"] = [_deserialize(c) for c in config["cells"]]
        return super().from_config.__func__(cls, config)


class RNN(Layer):
    """A cell run over the time axis of (batch, timesteps, features) inputs (Keras's RNN layer)."""

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False, stateful=False,
                 unroll=False, zero_output_for_mask=False, **kwargs):
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if not hasattr(cell, "call"):
            raise ValueError(f"Argument `cell` should have a `call` method. Received: cell={cell}")
        if not hasattr(cell, "state_size"):
            raise ValueError(f"The RNN cell should have a `state_size` attribute (single integer or list of "
                             f"integers, one integer per RNN state). Received: cell={cell}")
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.stateful, self.unroll = bool(go_backwards), bool(stateful), bool(unroll)
        object.__setattr__(self, "states", None)       # stateful: the last states, not among the weights
        self.zero_output_for_mask = zero_output_for_mask
        self.supports_masking = True
        size = cell.state_size
        self.state_size = [size] if isinstance(size, int) else list(size)

    def build(self, sequences_shape, initial_state_shape=None):
        if not self.cell.built:
            self.cell.build(tuple(sequences_shape[:1]) + tuple(sequences_shape[2:]))
            self.cell.built = True
        if self.stateful:
            if self.states is not None:
                self.reset_state()
            elif sequences_shape[0] is None:
                raise ValueError(f"When using `stateful=True` in a RNN, the batch size must be static. Found "
                                 f"dynamic batch size: sequence.shape={tuple(sequences_shape)}")
            else:
                self._keep_states(self.get_initial_state(sequences_shape[0]))
        self.built = True

    def _keep_states(self, states):
        """Hold these states (float32 copies, cut from the graph) for the next call of a stateful layer."""
        object.__setattr__(self, "states", map_structure(lambda s: convert_to_tensor(s.float32()), states))

    def reset_state(self):
        """A stateful layer's states back to zeros."""
        if self.states is not None:
            self._keep_states(self.get_initial_state(_leaves(self.states)[0].shape[0]))

    reset_states = reset_state

    def _symbolic_call(self, args, kwargs):
        out = super()._symbolic_call(args, kwargs)
        self.reset_state()              # the shape probe's run is no step of the sequence
        return out

    def get_initial_state(self, batch_size):
        """The cell's initial states (its get_initial_state), or zeros, one (batch_size, size) per state."""
        own = getattr(self.cell, "get_initial_state", None)
        if own is not None:
            states = own(batch_size=batch_size)
            return list(states) if isinstance(states, (list, tuple)) else [states]
        return [convert_to_tensor(np.zeros((batch_size, s), np.float32), dtype=self.cell.compute_dtype)
                for s in self.state_size]

    def call(self, sequences, initial_state=None, mask=None, training=False):
        batch, steps = sequences.shape[0], sequences.shape[1]
        expected = _leaves(self.states)[0].shape[0] if self.stateful and self.states is not None else batch
        if batch != expected:
            raise ValueError(f"If an RNN is stateful, the batch size of the input sequences must be the same as the "
                             f"batch size of the initial state. \n- Expected batch size: {expected}"
                             f"\n- Received batch size: {batch}")
        if initial_state is None and self.stateful:
            initial_state = self.states
        if initial_state is None:
            states = self.get_initial_state(batch)
        else:
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
            states = map_structure(lambda s: convert_to_tensor(s, dtype=self.cell.compute_dtype) if not isinstance(
                s, _EngineTensor) or s.dtype != self.cell.compute_dtype else s, states)
        if mask is not None:
            mask = storage(mask) if isinstance(mask, _EngineTensor) else np.asarray(mask)
            mask = mask.astype(bool).reshape(batch, steps, 1)
        order = range(steps - 1, -1, -1) if self.go_backwards else range(steps)
        masked = hasattr(self.cell, "start_masks")
        takes_training = "training" in inspect.signature(self.cell.call).parameters
        if masked:
            self.cell.start_masks(apply("getitem", sequences, index=(slice(None), 0)), states, training)
        try:
            outputs, output = [], None
            for t in order:
                step = apply("getitem", sequences, index=(slice(None), t))
                out, new_states = (self.cell.call(step, states, training=training) if takes_training
                                   else self.cell.call(step, states))
                new_states = list(new_states) if isinstance(new_states, (list, tuple)) else [new_states]
                if mask is not None:
                    keep = mask[:, t]
                    previous = output if output is not None and not self.zero_output_for_mask else out * 0.0
                    out = apply("where", keep, out, previous)
                    new_states = _zip_map(lambda n, s: apply("where", keep, n, s), new_states, states)
                output, states = out, new_states
                if self.return_sequences:
                    outputs.append(apply("reshape", out, shape=(batch, 1) + tuple(out.shape[1:])))
        finally:
            if masked:
                self.cell.end_masks()
        if self.stateful:
            self._keep_states(states)
        result = apply("concatenate", *outputs, axis=1) if self.return_sequences else output
        return (result, *states) if self.return_state else result

    def compute_output_shape(self, sequences_shape, initial_state_shape=None):
        size = getattr(self.cell, "output_size", None) or self.state_size[0]
        batch = sequences_shape[0]
        out = (batch, sequences_shape[1], size) if self.return_sequences else (batch, size)
        states = map_structure(lambda s: (batch, s), self.state_size)
        return (out, *states) if self.return_state else out

    def compute_mask(self, _, mask):
        """The output's mask: the input's where the whole sequence is returned."""
        mask = mask[0] if isinstance(mask, (list, tuple)) else mask
        out = mask if self.return_sequences else None
        return [out] + [None] * len(self.state_size) if self.return_state else out

    def get_config(self):
        return {**super().get_config(), "return_sequences": self.return_sequences,
                "return_state": self.return_state, "go_backwards": self.go_backwards, "stateful": self.stateful,
                "unroll": self.unroll, "zero_output_for_mask": self.zero_output_for_mask,
                **({"cell": _serialize(self.cell)} if type(self) is RNN else {})}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if cls is RNN:
            config["cell"] = _deserialize(config["cell"])
        return super().from_config.__func__(cls, config)


_CELL_ARGS = ("units", "activation", "recurrent_activation", "use_bias", "kernel_initializer",
              "recurrent_initializer", "bias_initializer", "kernel_regularizer", "recurrent_regularizer",
              "bias_regularizer", "kernel_constraint", "recurrent_constraint", "bias_constraint", "dropout",
              "recurrent_dropout", "seed")
_RNN_ARGS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll")


class _CellRNN(RNN):
    """LSTM and GRU: an RNN over its own cell, named "<kind>_cell", taking the cell's arguments."""

    _cell_class = None
    _extra = ()

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0.0, recurrent_dropout=0.0, seed=None, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False, use_cudnn="auto", **kwargs):
        extra = {k: kwargs.pop(k) for k in self._extra if k in kwargs}
        cell = self._cell_class(
            units, activation=activation, recurrent_activation=recurrent_activation, use_bias=use_bias,
            kernel_initializer=kernel_initializer, recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer, bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint, recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint, dropout=dropout, recurrent_dropout=recurrent_dropout, seed=seed,
            dtype=kwargs.get("dtype"), trainable=kwargs.get("trainable", True),
            name=backend.to_snake_case(self._cell_class.__name__[:-4]) + "_cell",
            implementation=kwargs.pop("implementation", 2), **extra)
        kwargs.pop("zero_output_for_mask", None)       # in the config, not an argument of LSTM / GRU
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, unroll=unroll,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.input_spec = InputSpec(ndim=3)
        if use_cudnn not in ("auto", True, False):
            raise ValueError(f"Invalid valid received for argument `use_cudnn`. Expected one of {{'auto', True, "
                             f"False}}. Received: use_cudnn={use_cudnn}")
        self.use_cudnn = use_cudnn

    def call(self, sequences, initial_state=None, mask=None, training=False):
        return super().call(sequences, initial_state=initial_state, mask=mask, training=training)

    def __getattr__(self, name):
        # units, activation, kernel_initializer, ...: the cell's (Keras's properties of LSTM and GRU)
        cell = self.__dict__.get("cell")
        if cell is not None and (name in _CELL_ARGS or name in self._extra):
            return getattr(cell, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def get_config(self):
        cell = self.cell.get_config()
        for k in ("name", "trainable", "dtype"):
            cell.pop(k)
        config = {**super().get_config(), **cell}
        config["activity_regularizer"] = None
        return config


class SimpleRNN(_CellRNN):
    """A fully connected recurrent layer: the output fed back as the next step's state."""

    _cell_class = SimpleRNNCell

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros", kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0, recurrent_dropout=0.0,
                 return_sequences=False, return_state=False, go_backwards=False, stateful=False, unroll=False,
                 seed=None, **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, recurrent_regularizer=recurrent_regularizer,
                         bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, recurrent_constraint=recurrent_constraint,
                         bias_constraint=bias_constraint, dropout=dropout, recurrent_dropout=recurrent_dropout,
                         seed=seed, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, unroll=unroll, **kwargs)
        del self.use_cudnn                          # LSTM's and GRU's only

    def get_config(self):
        config = super().get_config()
        del config["seed"]                          # Keras's SimpleRNN leaves its cell's seed out
        return config


class LSTM(_CellRNN):
    """Long Short-Term Memory (Hochreiter 1997) over a sequence; states (h, c)."""

    _cell_class = LSTMCell
    _extra = ("unit_forget_bias",)


class GRU(_CellRNN):
    """Gated Recurrent Unit (Cho et al. 2014) over a sequence; Keras 3's default reset_after=True."""

    _cell_class = GRUCell
    _extra = ("reset_after",)


_MERGE_MODES = ("sum", "mul", "ave", "concat", None)


class Bidirectional(Layer):
    """A recurrent layer run forwards and (a copy) backwards, the outputs merged: concat, sum, mul, ave or None
    (both returned)."""

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"Please initialize `Bidirectional` layer with a `keras.layers.Layer` instance. "
                             f"Received: {layer}")
        if backward_layer is not None and not isinstance(backward_layer, Layer):
            raise ValueError(f"`backward_layer` need to be a `keras.layers.Layer` instance. Received: "
                             f"{backward_layer}")
        if merge_mode not in _MERGE_MODES:
            raise ValueError(f"Invalid merge mode. Received: {merge_mode}. Merge mode should be one of "
                             f'{{"sum", "mul", "ave", "concat", None}}')
        super().__init__(**kwargs)
        # Copies made from the layer's config: the wrapper holds fresh layers, not the one given.
        config = layer.get_config()
        self.forward_layer = type(layer).from_config({**config, "name": "forward_" + _strip(layer.name,
                                                                                              "forward_")})
        if backward_layer is None:
            backward_layer = type(layer).from_config({**config, "go_backwards": not layer.go_backwards,
                                                      "name": "backward_" + _strip(layer.name, "backward_")})
        self.backward_layer = backward_layer
        if self.forward_layer.go_backwards == self.backward_layer.go_backwards:
            raise ValueError(f"Forward layer and backward layer should have different `go_backwards` value. "
                             f"Received: forward_layer.go_backwards {self.forward_layer.go_backwards}, "
                             f"backward_layer.go_backwards={self.backward_layer.go_backwards}")
        for a in ("stateful", "return_sequences", "return_state"):
            f, b = getattr(self.forward_layer, a), getattr(self.backward_layer, a)
            if f != b:
                raise ValueError(f'Forward layer and backward layer are expected to have the same value for '
                                 f'attribute "{a}", got "{f}" for forward layer and "{b}" for backward layer')
        for sub in (self.forward_layer, self.backward_layer):
            if getattr(sub, "zero_output_for_mask", None) is not None:
                sub.zero_output_for_mask = sub.return_sequences
        self.merge_mode = merge_mode
        self._initial_weights = list(weights) if weights else None
        self.stateful, self.return_sequences = layer.stateful, layer.return_sequences
        self.return_state = layer.return_state
        self.supports_masking = True
        self.input_spec = layer.input_spec

    def build(self, sequences_shape, initial_state_shape=None):
        for sub in (self.forward_layer, self.backward_layer):
            if not sub.built:
                sub.build(sequences_shape)
                sub.built = True
        self.built = True
        if self._initial_weights is not None:
            n = len(self._initial_weights) // 2
            self.forward_layer.set_weights(self._initial_weights[:n])
            self.backward_layer.set_weights(self._initial_weights[n:])
            self._initial_weights = None

    def call(self, sequences, initial_state=None, mask=None, training=None):
        forward_state = backward_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            forward_state, backward_state = list(initial_state[:half]), list(initial_state[half:])
        y = self.forward_layer(sequences, initial_state=forward_state, mask=mask, training=training)
        y_rev = self.backward_layer(sequences, initial_state=backward_state, mask=mask, training=training)
        states = ()
        if self.return_state:
            states = tuple(y[1:]) + tuple(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        y, y_rev = self._cast(y), self._cast(y_rev)
        if self.return_sequences:
            y_rev = apply("getitem", y_rev, index=(slice(None), slice(None, None, -1)))
        if self.merge_mode == "concat":
            output = apply("concatenate", y, y_rev, axis=-1)
        elif self.merge_mode == "sum":
            output = apply("add", y, y_rev)
        elif self.merge_mode == "ave":
            output = apply("add", y, y_rev) / 2
        elif self.merge_mode == "mul":
            output = apply("mul", y, y_rev)
        else:
            output = (y, y_rev)
        if self.return_state:
            return output + states if self.merge_mode is None else (output,) + states
        return output

    def _cast(self, y):
        fmt = self._format
        return y if fmt is None or y.fmt == fmt else y.astype(fmt)

    def compute_output_shape(self, sequences_shape, initial_state_shape=None):
        out = self.forward_layer.compute_output_shape(sequences_shape)
        states = []
        if self.return_state:
            states = list(out[1:]) * 2
            out = out[0]
        if self.merge_mode == "concat":
            out = tuple(out[:-1]) + (out[-1] * 2,)
        elif self.merge_mode is None:
            out = [out, out]
        if self.return_state:
            return (list(out) if self.merge_mode is None else [out]) + states
        return out

    def compute_mask(self, _, mask):
        """The output's mask: the input's where sequences are returned (one per output with merge_mode=None)."""
        mask = mask[0] if isinstance(mask, list) else mask
        if self.return_sequences:
            return (mask, mask) if not self.merge_mode else mask
        return (None, None) if not self.merge_mode else None

    def get_config(self):
        return {**super().get_config(), "merge_mode": self.merge_mode,
                "layer": _serialize(self.forward_layer), "backward_layer": _serialize(self.backward_layer)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["layer"] = _deserialize(config["layer"])
        if config.get("backward_layer") is not None:
            config["backward_layer"] = _deserialize(config["backward_layer"])
        return super().from_config.__func__(cls, config)


def _strip(name, prefix):
    return name[len(prefix):] if name.startswith(prefix) else name


class TimeDistributed(Layer):
    """A layer applied to every time step (axis 1) of its input, one step at a time."""

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"Please initialize `TimeDistributed` layer with a `keras.layers.Layer` instance. "
                             f"Received: {layer}")
        super().__init__(**kwargs)
        self.layer = layer
        self.supports_masking = True
        self.input_spec = InputSpec(min_ndim=3)

    def build(self, input_shape):
        if not isinstance(input_shape, (tuple, list)) or len(input_shape) < 3:
            raise ValueError(f"`TimeDistributed` Layer should be passed an `input_shape` with at least 3 "
                             f"dimensions, received: {input_shape}")
        if not self.layer.built:
            self.layer.build((input_shape[0],) + tuple(input_shape[2:]))
            self.layer.built = True
        self.built = True

    def call(self, inputs, training=None, mask=None):
        if mask is not None:
            mask_shape, shape = tuple(mask.shape), tuple(inputs.shape)
            if len(mask_shape) < 2:
                raise ValueError(f"The `mask` passed to the `TimeDistributed` layer must be at least 2D (e.g., "
                                 f"`(batch_size, timesteps)`), but it has {len(mask_shape)} dimension(s) with "
                                 f"shape {mask_shape}.")
            if mask_shape[:2] != shape[:2]:
                raise ValueError(f"The `mask` passed to the `TimeDistributed` layer has a shape {mask_shape} that "
                                 f"is incompatible with the input shape {shape}. The first two dimensions of the "
                                 f"mask (batch size and timesteps) must match the input's first two dimensions. "
                                 f"Expected mask shape prefix: ({shape[0]}, {shape[1]}).")
            mask = storage(mask) if isinstance(mask, _EngineTensor) else np.asarray(mask)
        params, _ = self.layer._call_params()
        steps = []
        for t in range(inputs.shape[1]):
            kwargs = {}
            if "mask" in params and mask is not None:
                kwargs["mask"] = mask[:, t]
            if "training" in params:
                kwargs["training"] = training
            y = self.layer.call(apply("getitem", inputs, index=(slice(None), t)), **kwargs)
            steps.append(apply("reshape", y, shape=(y.shape[0], 1) + tuple(y.shape[1:])))
        return apply("concatenate", *steps, axis=1)

    def compute_output_shape(self, input_shape):
        inner = self.layer.compute_output_shape((input_shape[0],) + tuple(input_shape[2:]))
        return (inner[0], input_shape[1]) + tuple(inner[1:])

    def get_config(self):
        return {**super().get_config(), "layer": _serialize(self.layer)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["layer"] = _deserialize(config["layer"])
        return super().from_config.__func__(cls, config)
