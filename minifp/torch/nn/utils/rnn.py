"""torch.nn.utils.rnn: sequences of different lengths padded into one tensor (what NLP collate functions do)."""
from __future__ import annotations

from ... import _functions, nn as _nn

__all__ = ["pad_sequence", "unpad_sequence"]


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
