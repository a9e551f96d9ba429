"""torch.utils.checkpoint: activation checkpointing. PyTorch recomputes a segment's forward in the backward to save
memory; minifp keeps the segment's graph instead, so the values and gradients are the ones the recomputation gives
(the same ops on the same inputs) and only the memory differs."""
from __future__ import annotations

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default", debug=False,
               early_stop=True, **kwargs):
    """function(*args, **kwargs)."""
    return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """The functions (a Sequential or a list of modules) applied in turn to input."""
    for fn in (functions.children() if hasattr(functions, "children") else functions):
        input = fn(input)
    return input
