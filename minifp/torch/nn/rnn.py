"""torch.nn's recurrent layers RNN, LSTM and GRU, composed of the engine's ops in PyTorch's CPU order: the input
projection of every time step at once, then per step the hidden projection and the gates (aten/src/ATen/native/
RNN.cpp). Parameters are PyTorch's (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, ..._reverse), and so are
the arguments, shapes, initialisation and errors. A PackedSequence input runs the same cell steps on the sequences
still running at each step, as PyTorch's packed path does."""
from __future__ import annotations

import math
import warnings

from ...engine import apply
from .. import _tensor
from . import functional as F, init
from .module import Module, Parameter
from .utils.rnn import PackedSequence

__all__ = ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"]


def _step(x, t):
    return apply("getitem", x, index=t)


def _chunk(x, n, i):
    size = x.shape[-1] // n
    return apply("getitem", x, index=(Ellipsis, slice(i * size, (i + 1) * size)))


def _stack(steps):
    """(L, N, H) from L tensors (N, H)."""
    return apply("concatenate", *[apply("reshape", s, shape=(1,) + tuple(s.shape)) for s in steps], axis=0)


def _rows(x, start, stop=None):
    return apply("getitem", x, index=slice(start, stop))


def _cat_rows(parts):
    return parts[0] if len(parts) == 1 else apply("concatenate", *parts, axis=0)


class _RNNBase(Module):
    """Parameters, checks and the time loop shared by RNN, LSTM and GRU; subclasses give _gates and _cell."""

    _gates = 1
    _projects = False       # only LSTM has proj_size

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, (int, float)) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=2)
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size and not self._projects:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        directions = 2 if bidirectional else 1
        real_hidden = proj_size or hidden_size          # what h holds: the projection, where there is one
        self._flat_weights_names = []
        for layer in range(num_layers):
            for direction in range(directions):
                size_in = input_size if layer == 0 else real_hidden * directions
                suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
                shapes = {"weight_ih": (self._gates * hidden_size, size_in),
                          "weight_hh": (self._gates * hidden_size, real_hidden)}
                if bias:
                    shapes.update(bias_ih=(self._gates * hidden_size,), bias_hh=(self._gates * hidden_size,))
                if proj_size:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                for name, shape in shapes.items():
                    setattr(self, name + suffix, Parameter(_tensor.empty(*shape, dtype=dtype, device=device)))
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    def _weights(self, layer, direction):
        """(weight_ih, weight_hh, bias_ih, bias_hh, weight_hr) of one layer and direction (None where absent)."""
        suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
        return tuple(getattr(self, name + suffix, None) for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh",
                                                                      "weight_hr"))

    def _initial(self, x, hx, directions, size, index=0, batch=None):
        """The initial state (num_layers * directions, N, size): zeros, or hx (the `index`th state given); N is x's
        batch (x is (L, N, H_in)) unless given."""
        shape = (self.num_layers * directions, x.shape[1] if batch is None else batch, size)
        if hx is None:
            return _tensor.zeros(*shape, dtype=x.dtype, device=x.device)
        if tuple(hx.shape) != shape:
            which = f"[{index}]" if self._n_states > 1 else ""
            raise RuntimeError(f"Expected hidden{which} size {shape}, got {list(hx.shape)}")
        return hx

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        batched = input.ndim == 3
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[-1]}")
        x = input if batched else apply("reshape", input, shape=(input.shape[0], 1, input.shape[1]))
        if batched and self.batch_first:
            x = apply("transpose", x, axes=(1, 0, 2))
        states = self._states(x, hx, batched)
        out, finals = self._run(x, states)
        if batched and self.batch_first:
            out = apply("transpose", out, axes=(1, 0, 2))
        if not batched:
            out = apply("reshape", out, shape=(out.shape[0], out.shape[2]))
            finals = [apply("reshape", f, shape=(f.shape[0], f.shape[2])) for f in finals]
        return out, self._pack(finals)

    def _states(self, x, hx, batched):
        """The initial states, each (num_layers * directions, N, H)."""
        directions = 2 if self.bidirectional else 1
        sizes = [self.proj_size or self.hidden_size, self.hidden_size][:self._n_states]   # LSTM: (h, c)
        if hx is None:
            return [self._initial(x, None, directions, size) for size in sizes]
        if self._n_states == 1 and not isinstance(hx, _tensor.Tensor):
            raise AttributeError(f"'{type(hx).__name__}' object has no attribute 'dim'")
        hx = [hx[0], hx[1]] if self._n_states == 2 else [hx]    # (h_0, c_0) as PyTorch reads it: hx[0], hx[1]
        rank = 3 if batched else 2
        if any(h.ndim != rank for h in hx):
            kind = "batched 3-D" if batched else "unbatched 2-D"
            got = f"({hx[0].ndim}-D, {hx[1].ndim}-D) tensors" if len(hx) == 2 else f"{hx[0].ndim}-D tensor"
            raise RuntimeError(f"For {kind} input, {'hx and cx' if len(hx) == 2 else 'hx'} should also be {rank}-D "
                               f"but got {got}")
        if not batched:
            hx = [apply("reshape", h, shape=(h.shape[0], 1, h.shape[1])) for h in hx]
        return [self._initial(x, h, directions, size, i) for i, (h, size) in enumerate(zip(hx, sizes))]

    def _forward_packed(self, input, hx):
        """PyTorch's packed path: (the output packed as the input, the final states), both in the caller's batch
        order; hx is in that order too."""
        data, batch_sizes, sorted_indices, unsorted_indices = input
        sizes = [int(b) for b in batch_sizes.tolist()]
        if hx is not None and sorted_indices is not None:       # into the packed (longest first) order
            hx = [h.index_select(1, sorted_indices) for h in hx] if self._n_states == 2 else \
                hx.index_select(1, sorted_indices)
        if data.ndim != 2:
            raise RuntimeError(f"input must have 2 dimensions, got {data.ndim}")
        if data.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {data.shape[-1]}")
        if hx is not None and self._n_states == 2 and hx[0].shape[1] != sizes[0]:
            # (PyTorch checks no packed LSTM state; its kernel fails adding the state to the batch's gates)
            raise RuntimeError(f"The size of tensor a ({hx[0].shape[1]}) must match the size of tensor b "
                               f"({sizes[0]}) at non-singleton dimension 0")
        directions = 2 if self.bidirectional else 1
        given = [None] * self._n_states if hx is None else list(hx) if self._n_states == 2 else [hx]
        states = [self._initial(data, h, directions, size, i, batch=sizes[0]) for i, (h, size) in
                  enumerate(zip(given, [self.proj_size or self.hidden_size, self.hidden_size]))]
        out, finals = self._run(data, states, sizes)
        if unsorted_indices is not None:
            finals = [f.index_select(1, unsorted_indices) for f in finals]
        return PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices), self._pack(finals)

    def _run(self, x, states, sizes=None):
        """Every layer over the whole sequence x (L, N, H_in), or the packed steps x (sum of sizes, H_in) when the
        batch sizes are given: (output of the last layer, final states)."""
        directions = 2 if self.bidirectional else 1
        finals = [[] for _ in states]
        for layer in range(self.num_layers):
            outs = []
            for direction in range(directions):
                k = layer * directions + direction
                state = [_step(s, k) for s in states]
                weights, reverse = self._weights(layer, direction), direction == 1
                out, state = self._direction(x, state, weights, reverse) if sizes is None else \
                    self._packed_direction(x, sizes, state, weights, reverse)
                outs.append(out)
                for f, s in zip(finals, state):
                    f.append(s)
            x = outs[0] if directions == 1 else apply("concatenate", *outs, axis=x.ndim - 1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, [_stack(f) for f in finals]

    def _direction(self, x, state, weights, reverse):
        """One direction of one layer: the input projections at once, then the cell step by step."""
        w_ih, w_hh, b_ih, b_hh, w_hr = weights
        projected = F.linear(x, w_ih, b_ih)
        order = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
        outs = {}
        for t in order:
            state = self._cell(_step(projected, t), state, w_hh, b_hh, w_hr)
            outs[t] = state[0]
        return _stack([outs[t] for t in range(x.shape[0])]), state

    def _packed_direction(self, x, sizes, state, weights, reverse):
        """One direction over packed steps: step t runs the cell on the first sizes[t] sequences. Forward, a
        sequence's final state is its state after its own last step; reverse, each sequence starts from its initial
        state at its own last step and ends at step 0."""
        w_ih, w_hh, b_ih, b_hh, w_hr = weights
        projected = F.linear(x, w_ih, b_ih)
        starts = [sum(sizes[:t]) for t in range(len(sizes))]
        outs, finished = {}, []         # finished: the states of sequences that ended, the latest ended first
        running = state if not reverse else [_rows(s, 0, sizes[-1]) for s in state]
        for t in (reversed(range(len(sizes))) if reverse else range(len(sizes))):
            b, now = sizes[t], running[0].shape[0]
            if b < now:                 # forward: the shortest sequences have ended
                finished.insert(0, [_rows(s, b) for s in running])
                running = [_rows(s, 0, b) for s in running]
            elif b > now:               # reverse: more sequences start here, from their initial states
                running = [_cat_rows([r, _rows(s, now, b)]) for r, s in zip(running, state)]
            running = self._cell(_rows(projected, starts[t], starts[t] + b), running, w_hh, b_hh, w_hr)
            outs[t] = running[0]
        finals = [_cat_rows([r] + [f[k] for f in finished]) for k, r in enumerate(running)]
        return _cat_rows([outs[t] for t in range(len(sizes))]), finals

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(_RNNBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu), returns (output, h_n)."""

    _n_states = 1

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)

    def _cell(self, xw, state, w_hh, b_hh, w_hr=None):
        pre = apply("add", xw, F.linear(state[0], w_hh, b_hh))
        return [apply("tanh" if self.nonlinearity == "tanh" else "relu", pre)]

    def _pack(self, finals):
        return finals[0]


class LSTM(_RNNBase):
    """Input, forget, cell and output gates; returns (output, (h_n, c_n))."""

    _gates = 4
    _n_states = 2
    _projects = True

    def _cell(self, xw, state, w_hh, b_hh, w_hr=None):
        h, c = state
        gates = apply("add", xw, F.linear(h, w_hh, b_hh))
        i, f = apply("sigmoid", _chunk(gates, 4, 0)), apply("sigmoid", _chunk(gates, 4, 1))
        g, o = apply("tanh", _chunk(gates, 4, 2)), apply("sigmoid", _chunk(gates, 4, 3))
        c = apply("add", apply("mul", f, c), apply("mul", i, g))
        h = apply("mul", o, apply("tanh", c))
        return [h if w_hr is None else F.linear(h, w_hr), c]      # proj_size: h @ weight_hr.T

    def _pack(self, finals):
        return tuple(finals)


class GRU(_RNNBase):
    """Reset and update gates; h' = (h - n) * z + n (PyTorch's order); returns (output, h_n)."""

    _gates = 3
    _n_states = 1

    def _cell(self, xw, state, w_hh, b_hh, w_hr=None):
        h = state[0]
        hw = F.linear(h, w_hh, b_hh)
        r = apply("sigmoid", apply("add", _chunk(xw, 3, 0), _chunk(hw, 3, 0)))
        z = apply("sigmoid", apply("add", _chunk(xw, 3, 1), _chunk(hw, 3, 1)))
        n = apply("tanh", apply("add", _chunk(xw, 3, 2), apply("mul", _chunk(hw, 3, 2), r)))
        return [apply("add", apply("mul", apply("sub", h, n), z), n)]

    def _pack(self, finals):
        return finals[0]


class _CellBase(Module):
    """One step of RNN, LSTM or GRU (RNNCell, LSTMCell, GRUCell): weight_ih, weight_hh, bias_ih, bias_hh, and the
    layer's own cell math."""

    _layer = None       # the layer class whose _cell a step is

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        gates = self._layer._gates
        shapes = {"weight_ih": (gates * hidden_size, input_size), "weight_hh": (gates * hidden_size, hidden_size)}
        if bias:
            shapes.update(bias_ih=(gates * hidden_size,), bias_hh=(gates * hidden_size,))
        for name, shape in shapes.items():
            setattr(self, name, Parameter(_tensor.empty(*shape, dtype=dtype, device=device)))
        if not bias:
            self.bias_ih = self.bias_hh = None
        _RNNBase.reset_parameters(self)

    def forward(self, input, hx=None):
        if input.ndim not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        n_states = self._layer._n_states
        if x.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {x.shape[1]} expected {self.input_size}")
        if hx is None:
            states = [_tensor.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)] * n_states
        else:
            states = list(hx) if n_states == 2 else [hx]
            if any(s.ndim not in (1, 2) for s in states):
                raise ValueError(f"{type(self).__name__}: Expected hidden to be 1D or 2D, got "
                                 f"{next(s.ndim for s in states if s.ndim not in (1, 2))}D instead")
            states = [s if batched else s.unsqueeze(0) for s in states]
            for k, s in enumerate(states):          # (the step's checks, in PyTorch's order and words)
                if s.shape[0] != x.shape[0]:
                    raise RuntimeError(f"Input batch size {x.shape[0]} doesn't match hidden{k} batch size "
                                       f"{s.shape[0]}")
                if s.shape[1] != self.hidden_size:
                    raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {s.shape[1]}, expected "
                                       f"{self.hidden_size}")
        xw = F.linear(x, self.weight_ih, self.bias_ih)
        out = self._layer._cell(self, xw, states, self.weight_hh, self.bias_hh)
        out = out if batched else [s.squeeze(0) for s in out]
        return tuple(out) if n_states == 2 else out[0]

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class RNNCell(_CellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu), one step."""

    _layer = RNN

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, device, dtype)


class LSTMCell(_CellBase):
    """One LSTM step: returns (h', c')."""

    _layer = LSTM


class GRUCell(_CellBase):
    """One GRU step: returns h'."""

    _layer = GRU
