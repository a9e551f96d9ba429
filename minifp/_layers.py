"""What every face's layers share with the engine: calls the numerics monitor can attribute, and names.

A face's layer class (torch.nn.Module, keras.layers.Layer) calls `watched_call` to run its computation, so
that the ops created inside belong to the layer and monitors see its output, and implements the two methods
the engine's tools (minifp.numerics.watch, minifp.checkpoint) read:

    _engine_layers()     -> iterable of (dotted name, layer) for the layer itself and every layer inside it
    _engine_variables()  -> iterable of (dotted name, tensor) for every variable (trainable or not), in order

Objects that hold training state (a face's optimizer, its loss scaler) implement the training-state protocol, which
minifp.checkpoint saves and restores through:

    _engine_state()              -> the state as plain data and arrays (what a checkpoint holds)
    _engine_restore(state, ...)  -> checks `state` whole (an error naming what does not fit, nothing changed) and
                                    returns the function that applies it; an optimizer is also given the variables
                                    it will update (for one not yet built)
    _engine_params()             -> (optimizers) the variables it updates, in its order ([] before it is built)

and, where the face's own names are not stable keys (Keras's automatic names count what the process built
before), `_engine_checkpoint_names()` -> iterable of (name, layer or variable) for every layer inside and every
variable, named as minifp.checkpoint keys them.
"""
from __future__ import annotations

import numpy as np

from ._backend import array_module
from ._seams import SEAMS, seam
from ._state import STATE, layer_scope
from ._tensor import Tensor

__all__ = ["watched_call", "is_layer", "holds_training_state", "update_running_stats"]


def watched_call(layer, fn, *args, **kwargs):
    """fn(*args, **kwargs) with its ops attributed to `layer`; monitors see each floating tensor it returns."""
    with layer_scope(layer):
        out = fn(*args, **kwargs)
    if STATE.monitors:
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, Tensor) and t.fmt is not None:
                for m in STATE.monitors:
                    m.layer_output(layer, t)
    return out


def is_layer(obj):
    """True for a layer or model of any face (it speaks the engine's protocol above)."""
    return hasattr(obj, "_engine_layers") and hasattr(obj, "_engine_variables")


def holds_training_state(obj):
    """True for an optimizer or a loss scaler of any face (it speaks the training-state protocol above)."""
    return hasattr(obj, "_engine_state") and hasattr(obj, "_engine_restore")


def update_running_stats(running_mean, running_var, x, keep, new, dtype=np.float32, ddof=0):
    """A normalisation layer's running statistics (NCHW-style x: channels on axis 1), computed in `dtype` and
    rounded once into each statistic's format: running * keep + batch * new, the batch variance with `ddof`
    (0: biased, Keras; 1: unbiased, PyTorch). keep and new are the framework's own two numbers (1 - (1 - m)
    need not be m)."""
    data = x.float32()
    mean, var = SEAMS.batch_stats(array_module(data), data, ddof, dtype)
    keep, new = dtype(keep), dtype(new)
    for stat, batch in ((running_mean, mean), (running_var, var)):
        stat.assign(stat.float32().astype(dtype, copy=False) * keep + batch * new)


@seam
def batch_stats(xp, data, ddof, dtype=np.float32):
    """(the mean, the variance with ddof) of data (N, C, ...) per channel in `dtype`, each of shape (C,)."""
    data = data.astype(dtype, copy=False)
    axes = (0,) + tuple(range(2, data.ndim))
    n = int(np.prod([data.shape[a] for a in axes]))
    mean = xp.mean(data, axis=axes, keepdims=True)
    return mean.reshape(-1), xp.sum(xp.square(data - mean), axis=axes) / (n - ddof)
