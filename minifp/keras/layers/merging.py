"""Keras 3's merging layers: Add, Multiply, Subtract, Average, Maximum, Minimum, Concatenate, each called on a list
of tensors (or KerasTensors in a functional model), and their functional forms (layers.add(...), ...). The
elementwise ones fold the list left to right, one rounding per pair, as Keras does."""
from __future__ import annotations

import numpy as np

from ...engine import apply
from .._errors import InvalidArgumentError
from .._tensor import convert_to_tensor
from .layer import Layer

__all__ = ["Add", "Multiply", "Subtract", "Average", "Maximum", "Minimum", "Concatenate", "add", "multiply",
           "subtract", "average", "maximum", "minimum", "concatenate"]


def _is_shape_list(input_shape):
    return isinstance(input_shape, (list, tuple)) and len(input_shape) >= 1 and isinstance(input_shape[0],
                                                                                           (list, tuple))


def _broadcast(a, b):
    """The broadcast of two shapes (None where unknown), Keras's error where they do not fit."""
    if len(a) < len(b):
        a, b = b, a
    out = list(a[:len(a) - len(b)])
    for i, j in zip(a[len(a) - len(b):], b):
        if i is None or j is None:
            out.append(None)
        elif i == 1 or j == 1 or i == j:
            out.append(max(i, j) if 1 in (i, j) else i)
        else:
            raise ValueError(f"Inputs have incompatible shapes. Received shapes {tuple(a)} and {tuple(b)}")
    return tuple(out)


def _bools(mask):
    """A mask's values as a NumPy bool array."""
    return np.asarray(mask, dtype=bool)


class _Merge(Layer):
    """Elementwise merges: a list of at least one input of broadcast-compatible shapes."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def compute_mask(self, inputs, mask=None):
        """The inputs' masks or-ed together (None unless every input has one), as Keras's merge layers."""
        if mask is None or not isinstance(mask, (list, tuple)) or any(m is None for m in mask):
            return None
        out = _bools(mask[0])
        for m in mask[1:]:
            out = out | _bools(m)
        return convert_to_tensor(out)

    def build(self, input_shape):
        if not _is_shape_list(input_shape):
            raise ValueError(f"A merge layer should be called on a list of inputs. Received: "
                             f"input_shape={input_shape} (not a list of shapes)")
        self.compute_output_shape(input_shape)
        self.built = True

    def call(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = self._merge(out, x)
        return out

    def compute_output_shape(self, input_shape):
        out = tuple(input_shape[0][1:])
        for shape in input_shape[1:]:
            out = _broadcast(out, tuple(shape[1:]))
        batches = {s[0] for s in input_shape} - {None}
        return ((batches.pop() if len(batches) == 1 else None),) + out


class Add(_Merge):
    """The elementwise sum of a list of inputs."""

    @staticmethod
    def _merge(a, b):
        return a + b


class Multiply(_Merge):
    """The elementwise product of a list of inputs."""

    @staticmethod
    def _merge(a, b):
        return a * b


class Subtract(_Merge):
    """The first of two inputs minus the second."""

    def build(self, input_shape):
        super().build(input_shape)
        if len(input_shape) != 2:
            raise ValueError(f"A `Subtract` layer should be called on exactly 2 inputs. Received: "
                             f"input_shape={input_shape}")

    @staticmethod
    def _merge(a, b):
        return a - b


class Average(_Merge):
    """The elementwise mean of a list of inputs: their sum (folded left to right), divided by their number."""

    def call(self, inputs):
        return super().call(inputs) / len(inputs)

    @staticmethod
    def _merge(a, b):
        return a + b


class Maximum(_Merge):
    """The elementwise maximum of a list of inputs."""

    @staticmethod
    def _merge(a, b):
        return apply("maximum", a, b)


class Minimum(_Merge):
    """The elementwise minimum of a list of inputs."""

    @staticmethod
    def _merge(a, b):
        return apply("minimum", a, b)


class Concatenate(Layer):
    """A list of inputs joined along `axis` (default -1); their other dimensions must match."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis, self.supports_masking = axis, True

    def build(self, input_shape):
        if not _is_shape_list(input_shape):
            raise ValueError(f"A `Concatenate` layer should be called on a list of at least 1 input. Received: "
                             f"input_shape={input_shape}")
        ndim = len(input_shape[0])
        if self.axis < -ndim:       # Keras's shape check deletes the axis from each shape's list
            raise IndexError("list assignment index out of range")
        rest = set()
        for shape in input_shape:
            if len(shape) != ndim:
                raise ValueError(f"A `Concatenate` layer requires inputs with matching shapes except for the "
                                 f"concatenation axis. Received: input_shape={input_shape}")
            rest.add(tuple(d for i, d in enumerate(shape) if i != self.axis % ndim))
        for dims in zip(*rest):
            if len({d for d in dims if d is not None}) > 1:
                raise ValueError(f"A `Concatenate` layer requires inputs with matching shapes except for the "
                                 f"concatenation axis. Received: input_shape={input_shape}")
        self.built = True

    def call(self, inputs):
        ndim = inputs[0].ndim
        if not -ndim <= self.axis < ndim:
            raise InvalidArgumentError(f"ConcatOp : Expected concatenating dimensions in the range [{-ndim}, "
                                       f"{ndim}), but got {self.axis} [Op:ConcatV2] name: concat")
        return apply("concatenate", *inputs, axis=self.axis)

    def compute_mask(self, inputs, mask=None):
        """Keras's: each input's mask (all True where it has none) widened to its rank, joined along axis,
        then any() over the last axis."""
        if mask is None or all(m is None for m in mask):
            return None
        masks = []
        for x, m in zip(inputs, mask):
            m = np.ones(x.shape, bool) if m is None else _bools(m)
            masks.append(np.broadcast_to(m[..., None], x.shape) if m.ndim < x.ndim else m)
        return convert_to_tensor(np.concatenate(masks, axis=self.axis).any(axis=-1))

    def compute_output_shape(self, input_shape):
        if not _is_shape_list(input_shape):
            raise ValueError(f"A `Concatenate` layer should be called on a list of inputs. Received: "
                             f"input_shape={input_shape}")
        out = list(input_shape[0])
        sizes = [s[self.axis] for s in input_shape]
        out[self.axis] = None if None in sizes else sum(sizes)
        return tuple(out)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


def _functional(layer):
    """Keras's functional form of a merge layer: layers.add(inputs, **kwargs) is Add(**kwargs)(inputs)."""
    def merge(inputs, **kwargs):
        return layer(**kwargs)(inputs)
    merge.__name__ = layer.__name__.lower()
    merge.__doc__ = f"{layer.__name__}(**kwargs)(inputs)."
    return merge


add, multiply, subtract, average, maximum, minimum = (_functional(c) for c in (Add, Multiply, Subtract, Average,
                                                                                 Maximum, Minimum))


def concatenate(inputs, axis=-1, **kwargs):
    """Concatenate(axis=axis, **kwargs)(inputs)."""
    return Concatenate(axis=axis, **kwargs)(inputs)
