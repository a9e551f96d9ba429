"""Keras 3's merging layers: Add, Multiply, Subtract, Average, Maximum, Minimum, Concatenate, each called on a list
of tensors (or KerasTensors in a functional model), and their functional forms (layers.add(...), ...). The
elementwise ones fold the list left to right, one rounding per pair, as Keras does."""
from __future__ import annotations

import numpy as np

from ...engine import apply
from .. import ops
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


def batch_dot(x, y, axes):
    """Keras's batch_dot for (a0, a1), neither the batch axis: per sample, the sum over x's axis a0 and y's
    axis a1, as one matmul of x (its axis a0 moved last) with y (its axis a1 moved second)."""
    if x.ndim < 2 or y.ndim < 2:
        raise ValueError(f"Cannot do batch_dot on inputs with rank < 2. Received inputs with shapes {x.shape} and "
                         f"{y.shape}.")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"Cannot do batch_dot on inputs with different batch sizes. Received inputs with shapes "
                         f"{x.shape} and {y.shape}.")
    (a0, a1), x_ndim, y_ndim = axes, x.ndim, y.ndim
    if x_ndim == 2:
        x, a0 = ops.expand_dims(x, 1), a0 + 1
    if y_ndim == 2:
        y = ops.expand_dims(y, 2)
    x = ops.transpose(x, [i for i in range(x.ndim) if i != a0] + [a0])
    y = ops.transpose(y, [0, a1] + [i for i in range(1, y.ndim) if i != a1])
    n, k, middle, trailing = x.shape[0], x.shape[-1], tuple(x.shape[1:-1]), tuple(y.shape[2:])
    out = ops.matmul(ops.reshape(x, (n, int(np.prod(middle)), k)), ops.reshape(y, (n, k, int(np.prod(trailing)))))
    out = ops.reshape(out, (n,) + middle + trailing)
    if x_ndim == 2:
        return ops.squeeze(out, 1)
    return ops.squeeze(out, -1) if y_ndim == 2 else out


class Dot(_Merge):
    """The dot product of two inputs along axes (an int or one per input), per sample; normalize=True divides
    each input by its L2 norm along its axis first (cosine proximity)."""

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(axes, int):
            if not isinstance(axes, (list, tuple)):
                raise TypeError(f"Invalid type for argument `axes`: it should be a list or an int. Received: "
                                f"axes={axes}")
            if len(axes) != 2:
                raise ValueError(f"Invalid format for argument `axes`: it should contain two elements. Received: "
                                 f"axes={axes}")
            if not isinstance(axes[0], int) or not isinstance(axes[1], int):
                raise ValueError(f"Invalid format for argument `axes`: list elements should be integers. "
                                 f"Received: axes={axes}")
        self.axes, self.normalize = axes, normalize

    def _axes(self, shapes):
        """Each input's axis, counted from the front."""
        axes = [self.axes] * 2 if isinstance(self.axes, int) else list(self.axes)
        return [a % len(s) if a < 0 else a for a, s in zip(axes, shapes)]

    def build(self, input_shape):
        if not isinstance(input_shape[0], (tuple, list)) or len(input_shape) != 2:
            raise ValueError(f"A `Dot` layer should be called on a list of 2 inputs. Received: "
                             f"input_shape={input_shape}")
        shape1, shape2 = input_shape
        a0, a1 = self._axes(input_shape) if isinstance(self.axes, int) else self.axes
        if shape1[a0] != shape2[a1]:
            raise ValueError(f"Incompatible input shapes: axis values {shape1[a0]} (at axis {a0}) != "
                             f"{shape2[a1]} (at axis {a1}). Full input shapes: {shape1}, {shape2}")
        self.built = True

    def call(self, inputs):
        if len(inputs) != 2:
            raise ValueError(f"A `Dot` layer should be called on exactly 2 inputs. Received: inputs={inputs}")
        x1, x2 = inputs
        axes = self._axes([x1.shape, x2.shape])
        if 0 in axes:
            raise ValueError("Cannot perform batch_dot over axis 0. If your inputs are not batched, add a dummy "
                             "batch dimension to your inputs using keras.ops.expand_dims(x, 0)")
        if self.normalize:
            x1, x2 = ops.normalize(x1, axis=axes[0]), ops.normalize(x2, axis=axes[1])
        return batch_dot(x1, x2, axes)

    def compute_output_shape(self, input_shape):
        shape1, shape2 = list(input_shape[0]), list(input_shape[1])
        a0, a1 = self._axes([shape1, shape2]) if isinstance(self.axes, int) else self.axes
        shape1.pop(a0)
        shape2.pop(a1)
        out = shape1 + shape2[1:]
        return tuple(out + [1] if len(out) == 1 else out)

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self):
        return {**super().get_config(), "axes": self.axes, "normalize": self.normalize}


def dot(inputs, axes=-1, **kwargs):
    """Dot(axes=axes, **kwargs)(inputs)."""
    return Dot(axes=axes, **kwargs)(inputs)


__all__ += ["Dot", "dot"]
