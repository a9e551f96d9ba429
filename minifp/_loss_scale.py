"""The engine's loss scales as values (no scaling, static, dynamic) and the in-place unscaling every face uses.

Each face (PyTorch's GradScaler, Keras 3's and tf.keras's LossScaleOptimizer) adds its own API and rules on top
of these; the state machine itself lives here once.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ._backend import array_module
from ._rounding import _memory_order
from ._seams import SEAMS, seam
from ._tensor import Tensor, take, tensor

__all__ = ["NoOpLossScale", "StaticLossScale", "DynamicLossScale", "LossScaler", "all_finite", "unscale_grads",
           "unscaled"]

_F32 = np.dtype(np.float32)


def all_finite(grads):
    """True when no gradient (tensors or arrays, None skipped) holds an inf or NaN."""
    return all(bool(np.isfinite((g if isinstance(g, Tensor) else tensor(g)).float32()).all())
               for g in grads if g is not None)


def _mul(x, factor):
    """x times a float32 factor, rounded once into x's own format (a float16 gradient stays float16)."""
    if x is None:
        return None
    return (x if isinstance(x, Tensor) else tensor(x)) * factor


@dataclass(frozen=True)
class NoOpLossScale:
    """No scaling: scale and unscale are the identity."""

    loss_scale = np.float32(1.0)

    def scale(self, x):
        return x

    def unscale(self, grads):
        return grads

    def adjust(self, grads_finite):
        return self


@dataclass(frozen=True)
class StaticLossScale:
    """A fixed loss scale."""

    loss_scale: float

    def __post_init__(self):
        object.__setattr__(self, "loss_scale", np.float32(self.loss_scale))

    def scale(self, x):
        return _mul(x, self.loss_scale)

    def unscale(self, grads):
        inv = np.float32(1.0 / np.float64(self.loss_scale))
        return [_mul(g, inv) for g in grads]

    def adjust(self, grads_finite):
        return self


@dataclass(frozen=True)
class DynamicLossScale(StaticLossScale):
    """A loss scale that backs off on overflow and grows after `period` good steps.

    adjust(grads_finite) returns the next state:

        if grads_finite:
            if counter == period - 1:          # period finite steps in a row
                loss_scale = loss_scale * factor, unless that is not finite
            counter = (counter + 1) % period
        else:
            loss_scale = max(min_loss_scale, loss_scale * backoff)   # backoff defaults to 1 / factor
            counter = 0

    The scale is kept in float32, as PyTorch and TensorFlow keep it; scale * factor is computed in double
    and rounded once, as PyTorch's kernel does (for factor 2 every way gives the same value).
    """

    counter: int = 0
    period: int = 2000
    factor: float = 2.0
    min_loss_scale: float = 1.0
    backoff: float | None = None

    def adjust(self, grads_finite):
        if not grads_finite:
            backoff = 1 / self.factor if self.backoff is None else self.backoff
            scale = _times(self.loss_scale, backoff)
            return _with(self, loss_scale=max(np.float32(self.min_loss_scale), scale), counter=0)
        successful = self.counter + 1
        if successful != self.period:       # '!=', as PyTorch: a counter past a shortened period never grows
            return _with(self, counter=successful)
        grown = _times(self.loss_scale, self.factor)
        return _with(self, loss_scale=grown if np.isfinite(grown) else self.loss_scale, counter=0)


class LossScaler:
    """A training run's loss scale, kept in one place: its state (a NoOpLossScale, StaticLossScale or
    DynamicLossScale value), which adjust() and set() replace. Every face's scaler (PyTorch's GradScaler, Keras 3's
    and tf.keras's LossScaleOptimizer) holds one and shows it under its framework's names; checkpoints read it."""

    __slots__ = ("state",)

    def __init__(self, state):
        self.state = state

    loss_scale = property(lambda self: self.state.loss_scale, doc="The scale, a float32.")
    counter = property(lambda self: getattr(self.state, "counter", 0), doc="Finite steps in a row (dynamic scales).")

    def adjust(self, grads_finite):
        """Move to the state after a step whose gradients were all finite (or not); returns it."""
        self.state = self.state.adjust(grads_finite)
        return self.state

    def set(self, **changes):
        """Replace fields of the state (loss_scale, counter, factor, backoff, period, ...); the scale in float32."""
        if "loss_scale" in changes:
            with np.errstate(over="ignore"):
                changes["loss_scale"] = np.float32(changes["loss_scale"])
        self.state = dataclasses.replace(self.state, **changes)
        return self.state

    def __repr__(self):
        return f"LossScaler({self.state})"


def _with(state, **changes):
    """dataclasses.replace(state, **changes) for values adjust() has made (a float32 scale, an int counter):
    without __init__ and its checks, which would cost more than the rest of a small model's update()."""
    new = object.__new__(type(state))
    new.__dict__.update(state.__dict__, **changes)
    return new


def _times(scale, factor):
    """scale * factor in double precision, rounded once to float32 (PyTorch's _amp_update_scale_ kernel)."""
    with np.errstate(over="ignore"):
        return np.float32(np.float64(scale) * float(factor))


def unscale_grads(grads, inv_scale):
    """Multiply each gradient tensor by inv_scale rounded to float32, in place (PyTorch's unscale_): a float32
    gradient's array itself takes the products, as PyTorch's kernel writes them; another gets a new array of
    the products rounded into its own format.

    Returns the positions in `grads` of the gradients that held inf or NaN before unscaling (none: []). The
    check reads the values before the multiplication, as PyTorch's kernel does.
    """
    nonfinite = []
    inv_scale = float(inv_scale)
    for i, g in enumerate(grads):
        data = g._data
        if type(data) is np.ndarray and data.dtype is _F32 and g.fmt.is_float32 and data.flags.writeable:
            # (C order, or another order of the axes: a convolution's weight gradient, taps first)
            base = data if data.flags.c_contiguous else _memory_order(data)[0]
            if base is not None:
                if not SEAMS.times_in_place(base, inv_scale):
                    nonfinite.append(i)
                continue
        values, finite = SEAMS.unscaled(g.float32(), inv_scale)
        take(g, values)        # a new array: a float32 gradient takes it without a copy
        if not finite:
            nonfinite.append(i)
    return nonfinite


@seam
def times_in_place(x, factor):
    """x *= factor for a C-contiguous float32 NumPy array (factor rounded to float32); whether every x was finite
    before."""
    finite = bool(np.isfinite(x).all())
    with np.errstate(all="ignore"):
        np.multiply(x, np.float32(factor), out=x)
    return finite


@seam
def unscaled(values, factor, divide=False):
    """(values * factor, or values / factor, as a new float32 array; whether every value was finite): IEEE float32
    products and quotients, the factor rounded to float32 first."""
    xp = array_module(values)
    with np.errstate(all="ignore"):     # a factor past float32's range rounds to inf
        finite = bool(xp.isfinite(values).all())
        return (xp.divide if divide else xp.multiply)(values, np.float32(factor)), finite
