"""torch.nn.init: PyTorch's initialisers (fans, gains, bounds), drawing from minifp's generator and rounding
into each tensor's format in place."""
from __future__ import annotations

import math
import warnings

import numpy as np

from ...engine import generator as _engine_generator, no_grad, note_change
from .._generator import Generator
from .._methods import _written as written

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "zeros_", "ones_", "eye_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_"]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    if nonlinearity in _LINEAR or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _generator(generator):
    """The NumPy Generator to draw from: a torch.Generator's own stream, else minifp's (None, a seed, a Generator)."""
    return generator.rng if isinstance(generator, Generator) else _engine_generator(generator)


def _initialised(*tensors):
    """Count an in-place initialisation of each tensor given (None skipped), as PyTorch's init functions, zero_ and
    fill_ make one: a new module's parameters and buffers are at version 1."""
    for t in tensors:
        if t is not None:
            note_change(t)


def _fill(tensor, values):
    tensor.assign(np.broadcast_to(np.asarray(values, np.float64), tuple(tensor.shape)))
    _initialised(tensor)
    with no_grad():         # (as PyTorch's init runs: a view's new values reach the tensor it shows, w[:, :2])
        written(tensor)
    return tensor


def _numel(tensor):
    return int(np.prod(tensor.shape, dtype=np.int64))


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    return _fill(tensor, _generator(generator).uniform(a, b, tuple(tensor.shape)))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _fill(tensor, _generator(generator).normal(mean, std, tuple(tensor.shape)))


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix, of the tensor's first dimension by the rest, times gain: the Q of a normal
    matrix's QR decomposition (in float64), its columns signed by R's diagonal, as PyTorch makes it."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if _numel(tensor) == 0:
        return tensor
    rows = tensor.shape[0]
    cols = _numel(tensor) // rows
    flat = _generator(generator).normal(0.0, 1.0, (rows, cols))
    q, r = np.linalg.qr(flat.T if rows < cols else flat)
    q = q * np.sign(np.diag(r))
    return _fill(tensor, gain * (q.T if rows < cols else q).reshape(tuple(tensor.shape)))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std) redrawn until inside [a, b] (the same distribution as PyTorch's inverse-CDF method)."""
    g, shape = _generator(generator), tuple(tensor.shape)
    out = g.normal(mean, std, shape)
    bad = (out < a) | (out > b)
    while bad.any():
        out[bad] = g.normal(mean, std, int(bad.sum()))
        bad = (out < a) | (out > b)
    return _fill(tensor, out)


def constant_(tensor, val):
    return _fill(tensor, float(val))


def zeros_(tensor):
    return _fill(tensor, 0.0)


def ones_(tensor):
    return _fill(tensor, 1.0)


def eye_(tensor):
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*tensor.shape))


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = int(np.prod(tensor.shape[2:], dtype=np.int64)) if tensor.ndim > 2 else 1
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op")
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op")
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)
