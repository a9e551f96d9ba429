"""torch.nn.utils.rnn: sequences of different lengths padded into one tensor (what NLP collate functions do), and
packed into a PackedSequence (the steps of every sequence still running, time step after time step) that the
recurrent layers read without stepping over padding."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ... import _functions, _methods, _tensor, nn as _nn

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pack_sequence", "unpack_sequence",
           "pad_sequence", "unpad_sequence", "invert_permutation"]


def _bind(optional, fn):
    return None if optional is None else fn(optional)


class PackedSequence(namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """data (sum of lengths, *) holding step t of the batch_sizes[t] longest sequences after step t - 1's;
    sorted_indices: the batch order packing put the sequences in (None: already longest first)."""

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be created "
                             "manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn. "
                             "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """The same sequences with data converted as Tensor.to converts it (the indices follow to its device)."""
        return self._with(self.data.to(*args, **kwargs))

    def cuda(self, *args, **kwargs):
        """On the GPU."""
        return self._with(self.data.cuda(*args, **kwargs))

    def cpu(self, *args, **kwargs):
        """On the CPU."""
        return self._with(self.data.cpu(*args, **kwargs))

    def double(self):
        """With data as float64 (float32 in minifp, which has no float64)."""
        return self._with(self.data.double())

    def float(self):
        """With data as float32."""
        return self._with(self.data.float())

    def half(self):
        """With data as float16."""
        return self._with(self.data.half())

    def long(self):
        """With data as int64."""
        return self._with(self.data.long())

    def int(self):
        """With data as int32."""
        return self._with(self.data.int())

    def short(self):
        """With data as int16."""
        return self._with(self.data.short())

    def char(self):
        """With data as int8."""
        return self._with(self.data.char())

    def byte(self):
        """With data as uint8."""
        return self._with(self.data.byte())

    def pin_memory(self):
        """With data and the indices in pinned memory."""
        return type(self)(self.data.pin_memory(), self.batch_sizes, *(_bind(i, lambda t: t.pin_memory())
                                                                      for i in (self.sorted_indices,
                                                                                self.unsorted_indices)))

    def _with(self, data):
        """self where data is unchanged, else a PackedSequence of the new data, its indices on data's device."""
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, *(_bind(i, lambda t: t.to(data.device))
                                                    for i in (self.sorted_indices, self.unsorted_indices)))

    @property
    def is_cuda(self):
        """Whether data is on the GPU."""
        return self.data.is_cuda

    def is_pinned(self):
        """Whether data is in pinned memory."""
        return self.data.is_pinned()


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """The sequences (L_i, *) stacked as (L, B, *), or (B, L, *) when batch_first, each padded with padding_value
    to the longest L on the right (or the left)."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    for s in sequences[1:]:
        for d in range(1, max(s.ndim, sequences[0].ndim)):
            if d >= s.ndim or d >= sequences[0].ndim or s.shape[d] != sequences[0].shape[d]:
                a, b = (t.shape[d] if d < t.ndim else 1 for t in (sequences[0], s))
                raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                                   f"non-singleton dimension {d}")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        pad = [0, 0] * (s.ndim - 1) + ([0, longest - s.shape[0]] if padding_side == "right" else
                                       [longest - s.shape[0], 0])
        padded.append(_nn.functional.pad(s, pad, value=padding_value) if longest > s.shape[0] else s)
    return _functions.stack(padded, dim=0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The sequences pad_sequence padded, each cut back to its length."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i, :int(n)] for i, n in enumerate(lengths)]


def invert_permutation(permutation):
    """The permutation that undoes `permutation` (None stays None)."""
    if permutation is None:
        return None
    inverse = np.empty(permutation.numel(), np.int64)
    inverse[np.asarray(permutation.tolist(), np.int64)] = np.arange(permutation.numel())
    return _tensor.tensor(inverse, dtype=permutation.dtype, device=permutation.device)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """The padded batch (T, B, *) (or (B, T, *)) packed to each sequence's length; enforce_sorted=False sorts the
    batch longest first and remembers the order."""
    if not isinstance(lengths, _tensor.Tensor):
        lengths = _tensor.as_tensor(lengths, dtype=_tensor.int64, device="cpu")
    else:
        lengths = lengths.to(dtype=_tensor.int64)
    sorted_indices = None
    if not enforce_sorted:
        lengths, sorted_indices = _methods.sort(lengths, descending=True)
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _pack(input, lengths, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def _pack(input, lengths, batch_first):
    """(data, batch_sizes) of a batch sorted longest first, with PyTorch's checks in its order."""
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    x = input.transpose(0, 1) if batch_first else input
    if lengths.ndim != 1 or lengths.device.type != "cpu":
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.ndim}D "
                           f"{lengths.device} Long tensor")
    n = [int(v) for v in lengths.tolist()]
    if len(n) != x.shape[1]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(n)} "
                           f"(batch_size={x.shape[1]})")
    if n[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    if any(a < b for a, b in zip(n, n[1:])):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You "
                           "can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep "
                           "this requirement if you do not need ONNX exportability.")
    if n[0] > x.shape[0]:   # (PyTorch packs the padded steps but counts batch_sizes to the length; minifp refuses)
        raise RuntimeError(f"pack_padded_sequence: the longest length {n[0]} is more than the {x.shape[0]} steps of "
                           f"the padded input")
    sizes = [sum(1 for k in n if k > t) for t in range(n[0])]
    data = _functions.cat([x[t, :b] for t, b in enumerate(sizes)], 0)
    return data, _tensor.tensor(sizes, dtype=_tensor.int64)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """(the padded batch (T, B, *) (or (B, T, *)) in the original order, the lengths): pack_padded_sequence undone,
    padded with padding_value to the longest sequence or to total_length."""
    steps = sequence.batch_sizes.shape[0]
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {steps}")
        steps = total_length
    sizes = [int(b) for b in sequence.batch_sizes.tolist()]
    batch, data = sizes[0], sequence.data
    offsets = np.cumsum([0] + sizes)
    rows = []
    for t in range(steps):
        b = sizes[t] if t < len(sizes) else 0
        step = data[int(offsets[t]):int(offsets[t]) + b] if b else None
        rows.append(_padded_rows(step, b, batch, data, padding_value))
    padded = _functions.stack(rows, 0)
    padded = padded.transpose(0, 1) if batch_first else padded
    lengths = _tensor.tensor([sum(1 for b in sizes if b > i) for i in range(batch)], dtype=_tensor.int64)
    if sequence.unsorted_indices is None:
        return padded, lengths
    return (padded.index_select(0 if batch_first else 1, sequence.unsorted_indices),
            lengths[sequence.unsorted_indices.cpu()])


def _padded_rows(step, b, batch, data, padding_value):
    """One time step's b rows padded to the batch with padding_value (all padding where no sequence runs)."""
    if step is None:
        return _tensor.full((batch,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    if b == batch:
        return step
    return _nn.functional.pad(step, [0, 0] * (data.ndim - 1) + [0, batch - b], value=padding_value)


def pack_sequence(sequences, enforce_sorted=True):
    """The sequences (L_i, *) packed (pad_sequence, then pack_padded_sequence)."""
    lengths = _tensor.as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The sequences pack_sequence packed, as a list in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
