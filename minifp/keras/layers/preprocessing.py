"""Keras 3's preprocessing layers: Rescaling, Resizing, RandomFlip, RandomRotation (images), StringLookup,
IntegerLookup and TextVectorization (vocabularies).

The image layers compose the engine's ops (gathers by index arrays, products, sums), so gradients reach their
inputs; resampling follows TensorFlow's kernels (tf.image.resize with half-pixel centres, and the projective
transform behind RandomRotation with its fill modes), in float32, the result cast to the compute dtype. Called
directly the random layers train (Keras's default, training=True); inside a model's predict or a training=False
call they return their inputs. The text layers work on NumPy arrays of strings (minifp tensors hold numbers):
their integer results are int64 tensors, StringLookup(invert=True) gives a NumPy array of str.
"""
from __future__ import annotations

import itertools
import math
import numbers
import re
from collections import Counter

import numpy as np

from ...engine import apply, current_training, generator, new_stream, storage, values, Tensor as _EngineTensor
from .. import backend
from .._tensor import convert_to_tensor
from ._farmhash import fingerprint64
from .layer import Layer

__all__ = ["Rescaling", "Resizing", "RandomFlip", "RandomRotation", "StringLookup", "IntegerLookup",
           "TextVectorization"]


# -- images ------------------------------------------------------------------------------


def _float32(x):
    return x if x.fmt is not None and x.dtype == "float32" else convert_to_tensor(x, "float32")


def _gather(images, rows, cols):
    """images (B, H, W, C) read at integer rows and cols (B, H', W'): (B, H', W', C)."""
    batch = np.arange(images.shape[0]).reshape(-1, 1, 1)
    return apply("getitem", images, index=(np.broadcast_to(batch, rows.shape), rows, cols))


def _weight(w):
    """A float32 constant of shape (..., 1) that scales every channel."""
    return convert_to_tensor(np.asarray(w, np.float32)[..., None])


class _ImageLayer(Layer):
    """Image layers: data_format, batched (4-D) or single (3-D) images, float results in the compute dtype."""

    _allow_non_tensor_positional_args = True

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format or backend.image_data_format()
        self.supports_masking = False

    def _to_nhwc(self, images):
        """(images as B, H, W, C float32, a function that puts a result back into the input's layout)."""
        if images.ndim not in (3, 4):
            raise ValueError(f"Invalid images rank: expected rank 3 (single image) or rank 4 (batch of images). "
                             f"Received input with shape: images.shape={tuple(images.shape)}")
        single = images.ndim == 3
        x = _float32(images)
        if single:
            x = apply("reshape", x, shape=(1,) + tuple(x.shape))
        if self.data_format == "channels_first":
            x = apply("transpose", x, axes=(0, 2, 3, 1))

        def back(y, cast=True):
            if self.data_format == "channels_first":
                y = apply("transpose", y, axes=(0, 3, 1, 2))
            if single:
                y = apply("reshape", y, shape=tuple(y.shape[1:]))
            return self._cast(y) if cast else y
        return x, back

    def _cast(self, x):
        return convert_to_tensor(x, self.compute_dtype) if x.dtype != self.compute_dtype else x

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class _RandomImageLayer(_ImageLayer):
    """A random augmentation: its own seeded stream when given a seed (minifp's generator otherwise)."""

    def __init__(self, seed=None, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.seed = seed
        self._stream = new_stream(seed) if seed is not None else None

    def _rng(self):
        return self._stream if self._stream is not None else generator(None)

    def __call__(self, *args, **kwargs):
        if kwargs.get("training") is None and current_training() is None:
            kwargs["training"] = True       # Keras's default for augmentation layers called on their own
        return super().__call__(*args, **kwargs)


class Rescaling(_ImageLayer):
    """inputs * scale + offset in the compute dtype (scale and offset rounded into it first, as Keras does)."""

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.scale, self.offset = scale, offset
        self.built = True

    def call(self, inputs):
        x = inputs if inputs.fmt is not None and inputs.dtype == self.compute_dtype else self._cast(inputs)
        scale = convert_to_tensor(np.asarray(self.scale, np.float32), self.compute_dtype)
        offset = convert_to_tensor(np.asarray(self.offset, np.float32), self.compute_dtype)
        if scale.ndim and self.data_format == "channels_first":
            scale = apply("reshape", scale, shape=tuple(scale.shape) + (1,) * (3 - scale.ndim))
        return apply("add", apply("mul", x, scale), offset)

    def get_config(self):
        config = {**super().get_config(), "scale": self.scale, "offset": self.offset}
        config.pop("data_format")
        return config


def _resize_axis(in_size, out_size):
    """TensorFlow's bilinear resize along one axis (half-pixel centres): lower and upper indices, the weight."""
    scale = np.float32(in_size / out_size)
    pos = (np.arange(out_size, dtype=np.float32) + np.float32(0.5)) * scale - np.float32(0.5)
    floor = np.floor(pos)
    lower = np.maximum(floor, 0).astype(np.int64)
    upper = np.minimum(np.ceil(pos), in_size - 1).astype(np.int64)
    return lower, upper, (pos - floor).astype(np.float32)


def _nearest_axis(in_size, out_size):
    """TensorFlow's nearest-neighbour resize along one axis (half-pixel centres)."""
    scale = np.float32(in_size / out_size)
    pos = (np.arange(out_size, dtype=np.float32) + np.float32(0.5)) * scale
    return np.minimum(np.floor(pos), in_size - 1).astype(np.int64)


class Resizing(_ImageLayer):
    """Images resized to (height, width), bilinear or nearest, as tf.image.resize does; crop_to_aspect_ratio
    first takes the largest centred crop of the target's aspect ratio, pad_to_aspect_ratio pads to it."""

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False,
                 pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0, antialias=False, data_format=None,
                 **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        if interpolation not in ("bilinear", "nearest"):
            raise NotImplementedError(f"Resizing(interpolation={interpolation!r}) is not supported by minifp.keras "
                                      f"(bilinear and nearest are)")
        if pad_to_aspect_ratio and crop_to_aspect_ratio:
            raise ValueError("Only one of `pad_to_aspect_ratio` & `crop_to_aspect_ratio` can be `True`.")
        if antialias:
            raise NotImplementedError("Resizing(antialias=True) is not supported by minifp.keras")
        self.height, self.width = height, width
        self.interpolation, self.crop_to_aspect_ratio = interpolation, crop_to_aspect_ratio
        self.pad_to_aspect_ratio, self.fill_mode, self.fill_value = pad_to_aspect_ratio, fill_mode, fill_value
        self.antialias = antialias
        self.built = True

    def call(self, inputs):
        x, back = self._to_nhwc(inputs)
        out = back(self._resize(x), cast=inputs.fmt is not None)
        if inputs.fmt is not None:
            return out
        # Integer images stay integers, as Keras's Resizing gives them back: rounded half to even, saturated
        dtype = storage(inputs).dtype
        info = np.iinfo(dtype) if dtype.kind in "iu" else None
        values = np.round(out.float32())
        if info is not None:
            values = np.clip(values, info.min, info.max)
        return convert_to_tensor(values.astype(dtype))

    def _resize(self, x):
        """x (B, H, W, C) float32, cropped or padded as asked, resized."""
        if self.crop_to_aspect_ratio:
            x = self._crop(x)
        elif self.pad_to_aspect_ratio:
            x = self._pad(x)
        b, h, w = x.shape[0], x.shape[1], x.shape[2]
        if self.interpolation == "nearest":
            rows, cols = _nearest_axis(h, self.height), _nearest_axis(w, self.width)
            grid = (b, self.height, self.width)
            return _gather(x, np.broadcast_to(rows[None, :, None], grid), np.broadcast_to(cols[None, None, :], grid))
        top, bottom, y_lerp = _resize_axis(h, self.height)
        left, right, x_lerp = _resize_axis(w, self.width)
        grid = (b, self.height, self.width)
        at = lambda rows, cols: _gather(x, np.broadcast_to(rows[None, :, None], grid),
                                        np.broadcast_to(cols[None, None, :], grid))
        xl, yl = _weight(np.broadcast_to(x_lerp[None, None, :], grid)), _weight(
            np.broadcast_to(y_lerp[None, :, None], grid))
        top_left, top_right = at(top, left), at(top, right)
        bottom_left, bottom_right = at(bottom, left), at(bottom, right)
        # TensorFlow's order: lerp along x within the two rows, then between them
        upper = apply("add", top_left, apply("mul", apply("sub", top_right, top_left), xl))
        lower = apply("add", bottom_left, apply("mul", apply("sub", bottom_right, bottom_left), xl))
        return apply("add", upper, apply("mul", apply("sub", lower, upper), yl))

    def _crop(self, x):
        """The centred crop of the target aspect ratio (TensorFlow's float32 arithmetic for its size)."""
        h, w = x.shape[1], x.shape[2]
        crop_h = max(min(h, int(np.float32(w * self.height) / np.float32(self.width))), 1)
        crop_w = max(min(w, int(np.float32(h * self.width) / np.float32(self.height))), 1)
        top, left = int(np.float32(h - crop_h) / 2), int(np.float32(w - crop_w) / 2)
        return apply("getitem", x, index=(slice(None), slice(top, top + crop_h), slice(left, left + crop_w)))

    def _pad(self, x):
        """fill_value bands on both sides (TensorFlow's float32 arithmetic for their width) to the target's aspect
        ratio: the same number of rows above and below, of columns left and right."""
        b, h, w, c = x.shape
        pad_h = max(h, int(np.float32(w * self.height) / np.float32(self.width)))
        pad_w = max(w, int(np.float32(h * self.width) / np.float32(self.height)))
        top, left = int(np.float32(pad_h - h) / 2), int(np.float32(pad_w - w) / 2)
        fill = lambda shape: convert_to_tensor(np.full(shape, self.fill_value, np.float32))
        if top > 0:
            x = apply("concatenate", fill((b, top, w, c)), x, fill((b, top, w, c)), axis=1)
        if left > 0:
            x = apply("concatenate", fill((b, x.shape[1], left, c)), x, fill((b, x.shape[1], left, c)), axis=2)
        return x

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        axes = (-3, -2) if self.data_format == "channels_last" else (-2, -1)
        shape[axes[0]], shape[axes[1]] = self.height, self.width
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "interpolation": self.interpolation, "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
                "pad_to_aspect_ratio": self.pad_to_aspect_ratio, "fill_mode": self.fill_mode,
                "fill_value": self.fill_value, "antialias": self.antialias}


_FLIP_MODES = ("horizontal", "vertical", "horizontal_and_vertical")


class RandomFlip(_RandomImageLayer):
    """While training, each image flipped with probability 1/2: left-right, upside down, or both at once."""

    def __init__(self, mode="horizontal_and_vertical", seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if mode not in _FLIP_MODES:
            raise ValueError(f"RandomFlip layer {self.name} received an unknown mode argument {mode}")
        self.mode = mode
        self.built = True

    def call(self, inputs, training=True):
        if not training:
            return self._cast(inputs)
        x, back = self._to_nhwc(inputs)
        flips = self._rng().random(x.shape[0]) <= 0.5
        flipped = x
        if self.mode in ("horizontal", "horizontal_and_vertical"):
            flipped = apply("getitem", flipped, index=(slice(None), slice(None), slice(None, None, -1)))
        if self.mode in ("vertical", "horizontal_and_vertical"):
            flipped = apply("getitem", flipped, index=(slice(None), slice(None, None, -1)))
        return back(apply("where", flips.reshape(-1, 1, 1, 1), flipped, x))

    def get_config(self):
        return {**super().get_config(), "seed": self.seed, "mode": self.mode}


def _map_coordinate(coord, size, mode):
    """An input coordinate outside [0, size - 1] mapped back in as TensorFlow's projective transform does."""
    coord = coord.astype(np.float32)
    if mode == "reflect":
        if size <= 1:
            return np.zeros_like(coord)
        period = np.float32(2 * size)
        low = coord < 0
        c = np.where(low & (coord < -period), period * np.trunc(-coord / period) + coord, coord)
        c = np.where(low, np.where(c < -size, c + period, -c - 1), c)
        high = coord > size - 1
        c2 = c - period * np.trunc(c / period)
        c2 = np.where(c2 >= size, period - c2 - 1, c2)
        c = np.where(high, c2, c)
        return np.clip(c, 0, size - 1)
    if mode == "wrap":
        if size <= 1:
            return np.zeros_like(coord)
        span = np.float32(size - 1)
        c = np.where(coord < 0, coord + size * (np.trunc(-coord / span) + 1), coord)
        c = np.where(coord > size - 1, coord - size * np.trunc(coord / span), c)
        return np.clip(c, 0, size - 1)
    if mode == "nearest":
        return np.clip(coord, 0, size - 1)
    return coord                                                    # constant: read as fill outside


class RandomRotation(_RandomImageLayer):
    """While training, each image rotated about its centre by a random angle in factor * 360 degrees
    (counter-clockwise for positive angles), pixels from outside filled by fill_mode."""

    _FILL_MODES = ("reflect", "wrap", "constant", "nearest")

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None, fill_value=0.0,
                 data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self._set_factor(factor)
        if fill_mode not in self._FILL_MODES:
            raise NotImplementedError(f"Unknown `fill_mode` {fill_mode}. Expected of one {self._FILL_MODES}.")
        if interpolation not in ("nearest", "bilinear"):
            raise NotImplementedError(f"Unknown `interpolation` {interpolation}. Expected of one "
                                      f"('nearest', 'bilinear').")
        self.fill_mode, self.interpolation, self.fill_value = fill_mode, interpolation, fill_value
        self.built = True

    def _set_factor(self, factor):
        message = (f"The `factor` argument should be a number (or a list of two numbers) in the range [-1.0, 1.0]. "
                   f"Received: factor={factor}")
        if isinstance(factor, (tuple, list)):
            if len(factor) != 2 or factor[0] > 1.0 or factor[1] < -1.0:
                raise ValueError(message)
            self.factor = tuple(sorted(factor))
        elif isinstance(factor, numbers.Real) and not isinstance(factor, bool):
            if not -1.0 <= factor <= 1.0:
                raise ValueError(message)
            self.factor = (max(-abs(factor), -1.0), abs(factor))
        else:
            raise ValueError(message)

    def call(self, inputs, training=True):
        if not training:
            return self._cast(inputs)
        x, back = self._to_nhwc(inputs)
        lower, upper = np.float32(self.factor[0] * 360.0), np.float32(self.factor[1] * 360.0)
        angles = lower + (upper - lower) * self._rng().random(x.shape[0]).astype(np.float32)
        return back(self._rotate(x, angles))

    def _rotate(self, x, degrees):
        """x rotated by these angles (one per image, degrees), as Keras's affine matrix and TensorFlow's
        ImageProjectiveTransformV3 do: output pixel (row y, column x) reads input (b0 x + b1 y + b2, a0 x + ...)."""
        h, w = x.shape[1], x.shape[2]
        theta = (degrees.astype(np.float32) * np.float32(math.pi / 180.0)).astype(np.float32)
        cos, sin = np.cos(theta), np.sin(theta)
        cx, cy = np.float32(0.5 * (w - 1)), np.float32(0.5 * (h - 1))
        a0, a1, b0, b1 = cos, -sin, sin, cos
        a2, b2 = cx - cx * a0 - cy * a1, cy - cx * b0 - cy * b1
        ys, xs = np.meshgrid(np.arange(h, dtype=np.float32), np.arange(w, dtype=np.float32), indexing="ij")
        col = a0[:, None, None] * xs + a1[:, None, None] * ys + a2[:, None, None]
        row = b0[:, None, None] * xs + b1[:, None, None] * ys + b2[:, None, None]
        col, row = _map_coordinate(col, w, self.fill_mode), _map_coordinate(row, h, self.fill_mode)
        if self.interpolation == "nearest":
            half_away = lambda v: np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))   # std::round, not np.round
            return self._read(x, half_away(row), half_away(col))
        r0, c0 = np.floor(row), np.floor(col)
        r1, c1 = r0 + 1, c0 + 1
        left, right = _weight(c1 - col), _weight(col - c0)
        top = apply("add", apply("mul", left, self._read(x, r0, c0)), apply("mul", right, self._read(x, r0, c1)))
        bottom = apply("add", apply("mul", left, self._read(x, r1, c0)), apply("mul", right, self._read(x, r1, c1)))
        return apply("add", apply("mul", _weight(r1 - row), top), apply("mul", _weight(row - r0), bottom))

    def _read(self, x, rows, cols):
        """Pixels at (rows, cols); those outside the image read fill_value."""
        h, w = x.shape[1], x.shape[2]
        inside = (rows >= 0) & (rows <= h - 1) & (cols >= 0) & (cols <= w - 1)
        values = _gather(x, np.clip(rows, 0, h - 1).astype(np.int64), np.clip(cols, 0, w - 1).astype(np.int64))
        if inside.all():
            return values
        fill = convert_to_tensor(np.full(values.shape, self.fill_value, np.float32))
        return apply("where", inside[..., None], values, fill)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "fill_mode": self.fill_mode,
                "fill_value": self.fill_value, "interpolation": self.interpolation, "seed": self.seed}


# -- vocabularies ---------------------------------------------------------------------------


_OUTPUT_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")
_INT64_MAX = np.iinfo(np.int64).max


def _as_array(x, strings):
    """Inputs as a NumPy array: str for string layers, int64 for integer ones."""
    if isinstance(x, _EngineTensor):
        x = storage(x) if x.fmt is None else x.float32()
    x = np.asarray(x)
    if strings:
        if x.dtype.kind == "S" or x.dtype.kind == "O":
            x = np.vectorize(lambda s: s.decode("utf-8") if isinstance(s, bytes) else str(s), otypes=[str])(x) \
                if x.size else x.astype(str)
        return x.astype(str)
    return x.astype(np.int64)


class _IndexLookup(Layer):
    """StringLookup and IntegerLookup: tokens to indices (mask, OOV indices, then the vocabulary), or back."""

    _allow_non_tensor_positional_args = True

    _strings = True

    def __init__(self, max_tokens, num_oov_indices, mask_token, oov_token, vocabulary_dtype, vocabulary=None,
                 idf_weights=None, invert=False, output_mode="int", sparse=False, pad_to_max_tokens=False,
                 oov_method="floormod", name=None, salt=None, **kwargs):
        if max_tokens is not None and max_tokens <= 1:
            raise ValueError(f"If set, `max_tokens` must be greater than 1. Received: max_tokens={max_tokens}")
        if pad_to_max_tokens and max_tokens is None:
            raise ValueError(f"If pad_to_max_tokens is True, must set `max_tokens`. Received: "
                             f"max_tokens={max_tokens}")
        if num_oov_indices < 0:
            raise ValueError(f"`num_oov_indices` must be greater than or equal to 0. Received: "
                             f"num_oov_indices={num_oov_indices}")
        output_mode = {"binary": "multi_hot", "tf-idf": "tf_idf"}.get(output_mode, output_mode)
        if output_mode not in _OUTPUT_MODES:
            raise ValueError(f"Unknown value for `output_mode`. Allowed values are: {list(_OUTPUT_MODES)}. "
                             f"Received: output_mode={output_mode}")
        if oov_method not in ("floormod", "farmhash"):
            raise ValueError(f"Unknown value for `oov_method`. Allowed values are: ['floormod', 'farmhash']. "
                             f"Received: oov_method={oov_method}")
        if sparse or salt is not None:
            raise NotImplementedError("sparse=True and salt (SipHash buckets) are not supported by minifp.keras's "
                                      "lookup layers")
        if invert and output_mode != "int":
            raise ValueError(f"`output_mode` must be `'int'` when `invert` is true. Received: "
                             f"output_mode={output_mode}")
        if idf_weights is not None and output_mode != "tf_idf":
            raise ValueError(f"`idf_weights` should only be set if `output_mode` is `'tf_idf'`. Received: "
                             f"idf_weights={idf_weights} and output_mode={output_mode}")
        if output_mode == "tf_idf" and vocabulary is not None and idf_weights is None:
            raise ValueError("When specifying the `vocabulary` argument, in TF-IDF output mode, the `idf_weights` "
                             "argument must also be provided.")
        frozen = kwargs.pop("vocabulary_size", None)
        has_vocabulary = kwargs.pop("has_input_vocabulary", vocabulary is not None)
        for k in ("trainable", "dtype", "encoding"):
            kwargs.pop(k, None)
        if kwargs:
            raise ValueError(f"Unrecognized keyword argument(s): {kwargs}")
        super().__init__(name=name)
        self.invert, self.max_tokens, self.num_oov_indices = invert, max_tokens, num_oov_indices
        self.mask_token, self.oov_token, self.output_mode = mask_token, oov_token, output_mode
        self.sparse, self.pad_to_max_tokens, self.vocabulary_dtype = sparse, pad_to_max_tokens, vocabulary_dtype
        self.oov_method, self.salt = oov_method, salt
        self.input_vocabulary = vocabulary if not isinstance(vocabulary, str) else None
        self.input_idf_weights = idf_weights
        self._has_input_vocabulary = has_vocabulary
        self._frozen_vocab_size = frozen
        self._tokens = []
        self._idf = None                # tf_idf: one float32 weight per index
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)
        self.built = True

    # indices of the special tokens
    def _oov_start_index(self):
        return 1 if self.mask_token is not None and self.output_mode == "int" else 0

    def _token_start_index(self):
        return self._oov_start_index() + self.num_oov_indices

    def vocabulary_size(self):
        """The size of the vocabulary, mask and OOV indices included."""
        return len(self._tokens) + self._token_start_index()

    def get_vocabulary(self, include_special_tokens=True):
        """The tokens in index order (with the mask and OOV tokens first unless include_special_tokens=False)."""
        special = [self.oov_token] * self._token_start_index()
        if self.mask_token is not None and self.output_mode == "int":
            special[0] = self.mask_token
        vocab = special + list(self._tokens)
        return vocab if include_special_tokens else vocab[self._token_start_index():]

    def _as_token(self, token):
        return str(token) if self._strings else int(token)

    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Use this vocabulary (the mask and OOV tokens may lead it, in that order)."""
        if self.output_mode == "tf_idf" and idf_weights is None:
            raise ValueError("`idf_weights` must be set if output_mode is 'tf_idf'.")
        if self.output_mode != "tf_idf" and idf_weights is not None:
            raise ValueError(f"`idf_weights` should only be set if output_mode is `'tf_idf'`. Received: "
                             f"output_mode={self.output_mode} and idf_weights={idf_weights}")
        if isinstance(vocabulary, str):
            raise NotImplementedError("A vocabulary file is not supported by minifp.keras: pass a list")
        vocabulary = [self._as_token(t) for t in _as_array(vocabulary, self._strings).reshape(-1)]
        if not vocabulary:
            raise ValueError(f"Cannot set an empty vocabulary. Received: vocabulary={np.array(vocabulary)}")
        start = self._token_start_index()
        special = [self.mask_token] * self._oov_start_index() + [self.oov_token] * self.num_oov_indices
        found_special = vocabulary[:start] == special
        tokens = vocabulary[start:] if found_special else vocabulary
        repeated = sorted(t for t, n in Counter(tokens).items() if n > 1)
        if repeated:
            raise ValueError(f"The passed vocabulary has at least one repeated term. Please uniquify your dataset. "
                             f"The repeated terms are: {repeated}")
        for kind, token, check in (("mask", self.mask_token, True), ("OOV", self.oov_token, self.invert)):
            if check and token is not None and token in tokens:
                index = max(i for i, t in enumerate(vocabulary) if t == token)
                raise ValueError(f"Found reserved {kind} token at unexpected location in `vocabulary`. Note that "
                                 f"passed `vocabulary` does not need to include the OOV and mask tokens. Either "
                                 f"remove all mask and OOV tokens, or include them only at the start of the "
                                 f"vocabulary in precisely this order: {special}. Received: "
                                 f"{kind.lower()}_token={token} at vocabulary index [{index}]")
        if self.max_tokens is not None and start + len(tokens) > self.max_tokens:
            raise ValueError(f"Attempted to set a vocabulary larger than the maximum vocab size. Received "
                             f"vocabulary size is {start + len(tokens)}; `max_tokens` is {self.max_tokens}.")
        self._tokens = tokens
        self._frozen_vocab_size = self.vocabulary_size()
        if idf_weights is not None:
            idf = np.asarray(idf_weights, np.float64).reshape(-1)
            if len(idf) != len(vocabulary):
                raise ValueError(f"`idf_weights` must be the same length as vocabulary. len(idf_weights) is "
                                 f"{len(idf)}; len(vocabulary) is {len(vocabulary)}")
            front = 0 if found_special else start
            self._set_idf(idf, np.average(idf) if len(idf) else 0.0, front)

    def _set_idf(self, idf, front_value, front):
        """The weights per index: front_value for the OOV indices in front, zeros up to max_tokens if padded."""
        back = self.max_tokens - front - len(idf) if self.pad_to_max_tokens and self.max_tokens is not None else 0
        self._idf = np.pad(idf, (front, back), constant_values=(front_value, 0)).astype(np.float32)

    def adapt(self, data, batch_size=None, steps=None):
        """Learn the vocabulary from data: tokens by count, most frequent first, ties in descending token order
        (Keras's order), cut to max_tokens."""
        if self._has_input_vocabulary:
            raise ValueError(f"Cannot adapt layer '{self.name}' after setting a static vocabulary via `vocabulary` "
                             f"argument or `set_vocabulary()` method.")
        counts, documents, n_documents = Counter(), Counter(), 0
        for batch in self._batches(data, steps):
            for doc in self._documents(batch):
                doc = [self._as_token(t) for t in doc]
                counts.update(doc)
                documents.update(set(doc))
                n_documents += 1
        for special in (self.mask_token, self.oov_token):
            counts.pop(special, None)
        order = sorted(counts, key=lambda t: (counts[t], t.encode("utf-8") if self._strings else t), reverse=True)
        if self.max_tokens:
            order = order[:self.max_tokens - self._token_start_index()]
        self._tokens = order
        self._frozen_vocab_size = self.vocabulary_size()
        if self.output_mode == "tf_idf":
            # log(1 + documents / (1 + documents holding the token)) in float64, then float32; the OOV indices
            # get the mean of the learned weights
            idf = np.log(1 + n_documents / (1 + np.array([documents[t] for t in order], np.float64)))
            idf = idf.astype(np.float32)
            self._set_idf(idf, np.mean(idf) if len(idf) else np.float32(0), self._token_start_index())

    @staticmethod
    def _batches(data, steps):
        if isinstance(data, (list, tuple, np.ndarray, _EngineTensor)):
            return [data]
        return [b for i, b in enumerate(data) if steps is None or i < steps]

    def _documents(self, batch):
        """The documents of a batch: its rows (a 1-D batch is one document), or given token lists."""
        if isinstance(batch, list) and batch and isinstance(batch[0], list):
            return batch
        x = _as_array(batch, self._strings)
        x = x.reshape(1, -1) if x.ndim <= 1 else x.reshape(x.shape[0], -1)
        return [list(row) for row in x]

    def _convert(self, x):
        return x                         # strings stay as they are; call() reads whatever it is given

    def call(self, inputs):
        x = _as_array(inputs, self._strings if not self.invert else False)
        if self.invert:
            return self._invert(x)
        index = {t: i for i, t in enumerate(self._tokens, self._token_start_index())}
        out = np.empty(x.shape, np.int64)
        oov = []
        for pos, token in np.ndenumerate(x):
            token = self._as_token(token)
            if self.mask_token is not None and token == self.mask_token:
                out[pos] = 0 if self.output_mode == "int" else _INT64_MAX
            elif token in index:
                out[pos] = index[token]
            elif self.num_oov_indices == 0:
                oov.append(token)
            elif self.num_oov_indices == 1:
                out[pos] = self._oov_start_index()
            elif self._strings or self.oov_method == "farmhash":
                # TensorFlow's to_hash_bucket_fast: FarmHash's fingerprint of the UTF-8 bytes (integers: digits)
                bucket = fingerprint64(str(token).encode("utf-8")) % self.num_oov_indices
                out[pos] = bucket + self._oov_start_index()
            else:
                out[pos] = token % self.num_oov_indices + self._oov_start_index()
        if oov:
            raise ValueError(f"When `num_oov_indices=0` all inputs should be in vocabulary, found OOV values "
                             f"{oov}, consider setting `num_oov_indices=1`.")
        if self.output_mode == "int":
            return convert_to_tensor(out)
        if self.output_mode != "int" and self._frozen_vocab_size is None and not self.pad_to_max_tokens:
            raise RuntimeError(f"When using `output_mode={self.output_mode}` and `pad_to_max_tokens=False`, you "
                               f"must set the layer's vocabulary before calling it. Either pass a `vocabulary` "
                               f"argument to the layer, or call `adapt` with some sample data.")
        depth = self.max_tokens if self.pad_to_max_tokens else self._frozen_vocab_size
        if self.output_mode == "tf_idf":
            if self._idf is None:
                raise ValueError("When `output_mode` is `'tf_idf'`, `idf_weights` must be provided.")
            counts = _encode(out, "count", depth).astype(np.float32)
            return convert_to_tensor(counts * self._idf[:depth])
        return convert_to_tensor(_encode(out, self.output_mode, depth))

    def _invert(self, x):
        vocab = self.get_vocabulary()
        values = np.empty(x.shape, object if self._strings else np.int64)
        for pos, i in np.ndenumerate(x):
            if self.mask_token is not None and i == 0:
                values[pos] = self.mask_token
            else:
                values[pos] = vocab[i] if self._token_start_index() <= i < len(vocab) else self.oov_token
        return values.astype(str) if self._strings else convert_to_tensor(values)

    def compute_output_shape(self, input_shape):
        if self.output_mode == "int":
            return input_shape
        depth = self.max_tokens if self.pad_to_max_tokens else self._frozen_vocab_size
        return tuple(input_shape) + (depth,) if self.output_mode == "one_hot" and (
            not input_shape or input_shape[-1] != 1) else tuple(input_shape[:-1]) + (depth,)

    def get_config(self):
        vocab = self.input_vocabulary
        if isinstance(vocab, np.ndarray):
            vocab = vocab.tolist()
        return {**super().get_config(), "invert": self.invert, "max_tokens": self.max_tokens,
                "num_oov_indices": self.num_oov_indices, "oov_token": self.oov_token, "mask_token": self.mask_token,
                "output_mode": self.output_mode, "sparse": self.sparse, "pad_to_max_tokens": self.pad_to_max_tokens,
                "vocabulary_dtype": self.vocabulary_dtype, "idf_weights": self.input_idf_weights,
                "vocabulary": list(vocab) if isinstance(vocab, tuple) else vocab,
                "vocabulary_size": self._frozen_vocab_size, "oov_method": self.oov_method, "salt": self.salt}


def _encode(indices, mode, depth):
    """Keras's encode_categorical_inputs for one_hot, multi_hot and count (int64); indices outside
    [0, depth) count for nothing (the mask token's)."""
    x = indices.reshape(1) if indices.ndim == 0 else indices
    if mode == "one_hot":
        if x.ndim > 1 and x.shape[-1] == 1:
            x = x.reshape(x.shape[:-1])
        return (x[..., None] == np.arange(depth)).astype(np.int64)
    hits = (x[..., None] == np.arange(depth)).astype(np.int64)
    counts = hits.sum(axis=-2)
    return counts if mode == "count" else (counts > 0).astype(np.int64)


class StringLookup(_IndexLookup):
    """Strings to integer indices over a vocabulary: mask_token (index 0, when set), num_oov_indices OOV
    indices, then the vocabulary; invert=True maps indices back to strings."""

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token="[UNK]", vocabulary=None,
                 idf_weights=None, invert=False, output_mode="int", pad_to_max_tokens=False, sparse=False,
                 encoding="utf-8", name=None, salt=None, **kwargs):
        kwargs.pop("vocabulary_dtype", None)
        super().__init__(max_tokens=max_tokens, num_oov_indices=num_oov_indices, mask_token=mask_token,
                         oov_token=oov_token, vocabulary_dtype="string", vocabulary=vocabulary,
                         idf_weights=idf_weights, invert=invert, output_mode=output_mode, sparse=sparse,
                         pad_to_max_tokens=pad_to_max_tokens, name=name, salt=salt, **kwargs)
        self.encoding = encoding

    def get_config(self):
        config = {**super().get_config(), "encoding": self.encoding}
        del config["vocabulary_dtype"]        # one dtype for strings: Keras leaves it out
        return config


class IntegerLookup(_IndexLookup):
    """Integers to indices over a vocabulary of integers (oov_token -1); invert=True maps them back."""

    _strings = False

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1, vocabulary=None,
                 vocabulary_dtype="int64", idf_weights=None, invert=False, output_mode="int", sparse=False,
                 pad_to_max_tokens=False, oov_method="floormod", salt=None, name=None, **kwargs):
        if vocabulary_dtype != "int64":
            raise ValueError(f"When `vocabulary_dtype` is not 'int64', the layer is not supported. Received: "
                             f"vocabulary_dtype={vocabulary_dtype}")
        super().__init__(max_tokens=max_tokens, num_oov_indices=num_oov_indices, mask_token=mask_token,
                         oov_token=oov_token, vocabulary_dtype=vocabulary_dtype, vocabulary=vocabulary,
                         idf_weights=idf_weights, invert=invert, output_mode=output_mode, sparse=sparse,
                         pad_to_max_tokens=pad_to_max_tokens, oov_method=oov_method, name=name, salt=salt,
                         **kwargs)


# TensorFlow's regex for "strip_punctuation": ASCII punctuation
_PUNCTUATION = re.compile(r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']')
_ASCII_UPPER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_WHITESPACE = re.compile(r"[ \t\n\r\v\f]+")


class TextVectorization(Layer):
    """Strings to token indices (or multi-hot / count / tf-idf vectors): standardize, split, ngrams, then look up
    in a vocabulary learned by adapt() or given (index 0 the padding "", 1 the OOV token "[UNK]" in int mode)."""

    _allow_non_tensor_positional_args = True

    def __init__(self, max_tokens=None, standardize="lower_and_strip_punctuation", split="whitespace", ngrams=None,
                 output_mode="int", output_sequence_length=None, pad_to_max_tokens=False, vocabulary=None,
                 idf_weights=None, sparse=False, ragged=False, encoding="utf-8", name=None, **kwargs):
        standardizers = ("lower_and_strip_punctuation", "lower", "strip_punctuation")
        if not (standardize is None or callable(standardize) or standardize in standardizers):
            raise ValueError(f"Unknown value for `standardize`. Allowed values are: {list(standardizers)}, None, "
                             f"or a callable. Received: standardize={standardize}")
        if not (split is None or callable(split) or split in ("whitespace", "character")):
            raise ValueError(f"Unknown value for `split`. Allowed values are: ['whitespace', 'character'], None, "
                             f"or a callable. Received: split={split}")
        output_mode = {"binary": "multi_hot", "tf-idf": "tf_idf"}.get(output_mode, output_mode)
        if output_mode not in _OUTPUT_MODES:
            raise ValueError(f"Unknown value for `output_mode`. Allowed values are: {list(_OUTPUT_MODES)}. "
                             f"Received: output_mode={output_mode}")
        if not (ngrams is None or isinstance(ngrams, int) or isinstance(ngrams, tuple) and all(
                isinstance(n, int) for n in ngrams)):
            raise ValueError(f"`ngrams` must be None, an integer, or a tuple of integers. Received: ngrams={ngrams}")
        if output_mode == "int" and not (output_sequence_length is None or isinstance(output_sequence_length, int)):
            raise ValueError(f"`output_sequence_length` must be either None or an integer when `output_mode` is "
                             f"'int'. Received: output_sequence_length={output_sequence_length}")
        if output_mode != "int" and output_sequence_length is not None:
            raise ValueError(f"`output_sequence_length` must not be set if `output_mode` is not 'int'. Received "
                             f"output_sequence_length={output_sequence_length}.")
        if ragged:
            raise NotImplementedError("TextVectorization(ragged=True) is not supported by minifp.keras")
        has_vocabulary = kwargs.pop("has_input_vocabulary", vocabulary is not None)
        vocabulary_size = kwargs.pop("vocabulary_size", None)
        super().__init__(name=name, **kwargs)
        self._standardize, self._split, self._ngrams_arg = standardize, split, ngrams
        self._ngrams = tuple(range(1, ngrams + 1)) if isinstance(ngrams, int) else ngrams
        self._output_mode, self._output_sequence_length = output_mode, output_sequence_length
        self._ragged, self._encoding = ragged, encoding
        self._lookup_layer = StringLookup(max_tokens=max_tokens, vocabulary=vocabulary, idf_weights=idf_weights,
                                          pad_to_max_tokens=pad_to_max_tokens, mask_token="",
                                          output_mode=output_mode, sparse=sparse,
                                          has_input_vocabulary=has_vocabulary, encoding=encoding,
                                          vocabulary_size=vocabulary_size)
        self.built = True

    def _convert(self, x):
        return x

    def _preprocess(self, inputs):
        """Each string standardized and split: a list of token lists (one per string), or of strings."""
        x = _as_array(inputs, True)
        if self._split is not None and x.ndim > 1:
            if x.shape[-1] != 1:
                raise ValueError(f"When using `TextVectorization` to tokenize strings, the input rank must be 1 or "
                                 f"the last shape dimension must be 1. Received: inputs.shape={x.shape} with "
                                 f"rank={x.ndim}")
            x = x.reshape(x.shape[:-1])
        if self._standardize in ("lower", "lower_and_strip_punctuation"):
            x = np.vectorize(lambda s: s.translate(_ASCII_UPPER), otypes=[str])(x) if x.size else x
        if self._standardize in ("strip_punctuation", "lower_and_strip_punctuation"):
            x = np.vectorize(lambda s: _PUNCTUATION.sub("", s), otypes=[str])(x) if x.size else x
        if callable(self._standardize):
            x = _as_array(self._standardize(x), True)
        if self._split is None:
            return x
        if self._split == "whitespace":
            split = lambda s: [t for t in _WHITESPACE.split(s) if t]
        elif self._split == "character":
            split = list
        else:
            split = lambda s: [str(t) for t in _as_array(self._split(s), True).reshape(-1)]
        rows = [split(s) for s in x.reshape(-1)] if x.ndim else split(str(x))
        if self._ngrams is None:
            return rows
        return [self._with_ngrams(r) for r in rows] if x.ndim else self._with_ngrams(rows)

    def _with_ngrams(self, tokens):
        """tf.strings.ngrams: for each width in order, every run of that many tokens joined by a space."""
        return [" ".join(tokens[i:i + n]) for n in self._ngrams for i in range(len(tokens) - n + 1)]

    def adapt(self, data, batch_size=None, steps=None):
        """Learn the vocabulary from a list or array of strings (or an iterable of batches of them)."""
        batches = [data] if isinstance(data, (list, tuple, np.ndarray, _EngineTensor)) else [
            b for i, b in enumerate(data) if steps is None or i < steps]
        documents = []
        for batch in batches:
            documents.extend(r if isinstance(r, list) else [r] for r in self._preprocess(batch))
        self._lookup_layer.adapt(documents)

    def call(self, inputs):
        rows = self._preprocess(inputs)
        lookup = self._lookup_layer
        if self._split is None and self._ngrams is None:
            return lookup.call(np.asarray(rows))
        if self._output_mode != "int":
            return convert_to_tensor(np.stack([storage(lookup.call(np.array(r, dtype=str))) for r in rows])
                                     if rows and isinstance(rows[0], list) else storage(lookup.call(np.array(rows))))
        indices = [storage(lookup.call(np.array(r, dtype=str))) if r else np.zeros(0, np.int64) for r in rows]
        length = self._output_sequence_length
        if length is None:
            length = max((len(i) for i in indices), default=0)
        out = np.zeros((len(indices), length), np.int64)
        for k, i in enumerate(indices):
            out[k, :min(length, len(i))] = i[:length]
        return convert_to_tensor(out)

    def get_vocabulary(self, include_special_tokens=True):
        """The vocabulary in index order ("" and "[UNK]" first in int mode)."""
        return self._lookup_layer.get_vocabulary(include_special_tokens)

    def vocabulary_size(self):
        return self._lookup_layer.vocabulary_size()

    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Use this vocabulary instead of one learned by adapt()."""
        self._lookup_layer.set_vocabulary(vocabulary, idf_weights)

    def compute_output_shape(self, input_shape):
        if self._output_mode == "int":
            return (input_shape[0], self._output_sequence_length)
        return (input_shape[0], self._lookup_layer._frozen_vocab_size)

    def get_config(self):
        lookup = self._lookup_layer
        vocab = lookup.input_vocabulary
        return {**super().get_config(), "max_tokens": lookup.max_tokens, "standardize": self._standardize,
                "split": self._split, "ngrams": self._ngrams_arg, "output_mode": self._output_mode,
                "output_sequence_length": self._output_sequence_length,
                "pad_to_max_tokens": lookup.pad_to_max_tokens, "sparse": lookup.sparse, "ragged": self._ragged,
                "vocabulary": vocab.tolist() if isinstance(vocab, np.ndarray) else vocab,
                "idf_weights": lookup.input_idf_weights, "encoding": self._encoding,
                "vocabulary_size": self.vocabulary_size()}


# -- Normalization: a mean and variance given, or learned by adapt() -------------------------------------------------

class Normalization(Layer):
    """(x - mean) / max(sqrt(variance), epsilon) per index of the kept axes (invert: mean + x * that), the mean
    and variance given or learned by adapt(), as Keras 3's layer computes them."""

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        self.axis = () if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
        self.input_mean, self.input_variance, self.invert = mean, variance, invert
        self.supports_masking = True
        self._build_input_shape = None
        if (mean is not None) != (variance is not None):
            raise ValueError(f"When setting values directly, both `mean` and `variance` must be set. Received: "
                             f"mean={mean} and variance={variance}")
        if mean is not None:
            if np.shape(mean) != np.shape(variance):
                raise ValueError(f"When setting values directly, `mean` and `variance` must have the same shape. "
                                 f"Received: mean shape {np.shape(mean)} and variance shape {np.shape(variance)}")
            if len(np.shape(mean)) > len(self.axis):
                raise ValueError(f"The rank of `mean` must be less than or equal to the number of axes "
                                 f"({len(self.axis)}). Received: mean shape {np.shape(mean)} for axis {self.axis}")

    def build(self, input_shape):
        if input_shape is None:
            return
        ndim = len(input_shape)
        self._build_input_shape = tuple(input_shape)
        if any(a < -ndim or a >= ndim for a in self.axis):
            raise ValueError(f"All `axis` values must be in the range [-ndim, ndim). Received inputs with "
                             f"ndim={ndim}, while axis={self.axis}")
        self._keep_axis = tuple(sorted(d % ndim for d in self.axis))
        for d in self._keep_axis:
            if input_shape[d] is None:
                raise ValueError(f"All `axis` values to be kept must have a known shape. Received axis={self.axis}, "
                                 f"inputs.shape={tuple(input_shape)}, with unknown axis at index {d}")
        self._reduce_axis = tuple(d for d in range(ndim) if d not in self._keep_axis)
        self._broadcast_shape = tuple(input_shape[d] if d in self._keep_axis else 1 for d in range(ndim))
        self._mean_and_var_shape = tuple(input_shape[d] for d in self._keep_axis)
        if self.input_mean is None:
            self.adapt_mean = self.add_weight(name="mean", shape=self._mean_and_var_shape, initializer="zeros",
                                              trainable=False)
            self.adapt_variance = self.add_weight(name="variance", shape=self._mean_and_var_shape,
                                                  initializer="ones", trainable=False)
            self.count = self.add_weight(name="count", shape=(), dtype="int", initializer="zeros", trainable=False)
        else:
            # the given values broadcast over the kept axes (trailing ones first), as Keras places them
            mean, variance = np.asarray(self.input_mean, np.float32), np.asarray(self.input_variance, np.float32)
            if mean.ndim:
                expanded = [1] * ndim
                for i in range(1, mean.ndim + 1):
                    expanded[self._keep_axis[-i]] = mean.shape[-i]
                mean, variance = mean.reshape(expanded), variance.reshape(expanded)
            self._given = (np.broadcast_to(mean, self._broadcast_shape), np.broadcast_to(variance,
                                                                                        self._broadcast_shape))
        self.built = True

    def adapt(self, data):
        """Learn the mean and variance of `data` (an array, a tensor, a PyDataset or an iterable of batches) over
        every axis but the kept ones; batches are combined as Keras combines them."""
        if isinstance(data, (np.ndarray, _EngineTensor)):
            batches, shape = None, tuple(data.shape)
        elif hasattr(data, "__getitem__") and hasattr(data, "__len__") and hasattr(data, "on_epoch_end"):
            batches = (_first(data[i]) for i in range(len(data)))       # a PyDataset
            shape = tuple(_first(data[0]).shape)
        elif hasattr(data, "__iter__"):
            items = iter(data)
            first = next(items, None)
            if first is None:
                raise ValueError("adapt() received an empty iterable (no batches). Expected at least one batch. Pass "
                                 "a non-empty iterable of arrays or tensors, e.g. layer.adapt([x]) or "
                                 "layer.adapt(list_of_batches).")
            first = _first(first)
            if getattr(first, "shape", None) is None:
                raise TypeError(f"adapt() expects an iterable that yields arrays or tensors with a `.shape` attribute "
                                f"(e.g. numpy arrays or backend tensors). Got an element of type "
                                f"{type(first).__name__}. Ensure each yielded element is array-like with a `.shape` "
                                f"attribute.")
            batches, shape = itertools.chain([first], items), tuple(first.shape)
        else:
            raise TypeError(f"Unsupported data type: {type(data)}. `adapt` supports `np.ndarray`, backend tensors, "
                            f"`tf.data.Dataset`, `keras.utils.PyDataset`, and iterables of batches (e.g. list, "
                            f"generator).")
        if not self.built:
            self.build(shape)
        elif any(shape[d] != self._build_input_shape[d] for d in self._keep_axis):
            raise ValueError(f"The layer was built with input_shape={self._build_input_shape}, but adapt() is being "
                             f"called with data with an incompatible shape, data.shape={shape}")
        if batches is None:
            values = data if isinstance(data, np.ndarray) else _values(data)
            mean, var = np.mean(values, axis=self._reduce_axis), np.var(values, axis=self._reduce_axis)
        else:
            mean, var = self._combined(batches)
        self.adapt_mean.assign(mean)
        self.adapt_variance.assign(var)

    def _combined(self, batches):
        """Mean and variance of the batches by Keras's running formula (a lack-of-fit sum of squares), in float32."""
        mean = var = np.zeros(self._mean_and_var_shape, np.float32)
        count = 0
        for batch in batches:
            batch = _values(convert_to_tensor(_first(batch), dtype=self.compute_dtype))
            for d in self._keep_axis:
                if batch.shape[d] != self._build_input_shape[d]:
                    raise ValueError(f"adapt() yielded a batch with incompatible shape. Expected "
                                     f"{self._build_input_shape}, got {tuple(batch.shape)}.")
            batch_mean, batch_var = np.mean(batch, axis=self._reduce_axis), np.var(batch, axis=self._reduce_axis)
            size = math.prod(batch.shape[d] for d in self._reduce_axis)
            count += size
            new, old = np.float32(float(size) / count), np.float32(1.0 - float(size) / count)
            new_mean = mean * old + batch_mean * new
            var = (var + (mean - new_mean) ** 2) * old + (batch_var + (batch_mean - new_mean) ** 2) * new
            mean = new_mean
        return mean, var

    def _statistic(self, k):
        """The mean (k 0) or variance (1) in the input's broadcast shape and the compute dtype; None unbuilt."""
        if not self.built:
            return None
        if self.input_mean is not None:
            return convert_to_tensor(self._given[k], dtype=self.compute_dtype)
        v = (self.adapt_mean, self.adapt_variance)[k]
        return convert_to_tensor(apply("reshape", v.value, shape=self._broadcast_shape), dtype=self.compute_dtype)

    mean = property(lambda self: self._statistic(0), doc="The mean, as the layer applies it (Keras's attribute).")
    variance = property(lambda self: self._statistic(1), doc="The variance, likewise.")

    def call(self, inputs):
        x = convert_to_tensor(inputs, dtype=self.compute_dtype)
        mean, variance = self.mean, self.variance
        scale = apply("maximum", apply("sqrt", variance), backend.epsilon())
        if self.invert:
            return apply("add", mean, apply("mul", x, scale))
        return apply("div", apply("sub", x, mean), scale)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "invert": self.invert,
                "mean": np.array(self.input_mean).tolist(), "variance": np.array(self.input_variance).tolist()}


def _first(batch):
    """A batch's inputs: x of an (x, y) or (x, y, sample_weight) tuple."""
    return batch[0] if isinstance(batch, tuple) else batch


def _values(t):
    """A tensor's values as a NumPy array (float32 for floats)."""
    return values(t) if t.fmt is not None else storage(t)
