"""More of Keras 3's preprocessing layers: CenterCrop and the augmentations RandomBrightness, RandomContrast,
RandomZoom and RandomTranslation (images), Discretization (bins of numbers), Hashing and HashedCrossing (hash
buckets of values and of feature crosses).

The image layers compute as Keras 3 does on its torch backend: crops slice, the zoom and translation go through
keras.ops.image.affine_transform (its torch map_coordinates), brightness and contrast are sums and products of
the engine, so gradients reach the images. Like Keras's, each augmentation has get_random_transformation (the
draws, from the layer's SeedGenerator through minifp.keras.random) and transform_images (the transformation
applied), and returns its input unchanged outside training. The draws are minifp's streams, not torch's: a seed
repeats minifp's numbers, not Keras's. The hashes are TensorFlow's (which Keras's hashing layers call):
FarmHash's Fingerprint64, SipHash-2-4 under a salt, and FingerprintCat64 for crosses.
"""
from __future__ import annotations

import numpy as np

from ...engine import storage, Tensor as _EngineTensor
from .. import ops, random
from .._tensor import convert_to_tensor
from ..ops.image import affine_transform, resize
from ._farmhash import fingerprint64, fingerprint_cat64
from ._siphash import siphash24
from .layer import Layer
from .preprocessing import _ImageLayer, _RandomImageLayer
from .simple import encode_categorical

__all__ = ["CenterCrop", "RandomBrightness", "RandomContrast", "RandomZoom", "RandomTranslation", "Discretization",
           "Hashing", "HashedCrossing"]


# -- images ------------------------------------------------------------------------------------------------------


def _hw_axes(data_format):
    return (-3, -2) if data_format == "channels_last" else (-2, -1)


def _check_image_rank(images):
    if images.ndim not in (3, 4):
        raise ValueError(f"Expected image tensor to have rank 3 (single image) or 4 (batch of images). Received: "
                         f"data.shape={tuple(images.shape)}")


class CenterCrop(_ImageLayer):
    """The centred (height, width) crop of each image; an image smaller than that is first cropped to the
    target's aspect ratio and resized up (Keras's smart_resize)."""

    def __init__(self, height, width, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.height, self.width = height, width
        self.built = True

    def call(self, inputs):
        x = ops.cast(inputs, self.compute_dtype)
        _check_image_rank(x)
        h_axis, w_axis = _hw_axes(self.data_format)
        h, w = x.shape[h_axis], x.shape[w_axis]
        if h < self.height or w < self.width:
            return resize(x, (self.height, self.width), crop_to_aspect_ratio=True, data_format=self.data_format)
        top, left = (h - self.height) // 2, (w - self.width) // 2
        index = [slice(None)] * x.ndim
        index[h_axis], index[w_axis] = slice(top, top + self.height), slice(left, left + self.width)
        return x[tuple(index)]

    def compute_output_shape(self, input_shape):
        if len(input_shape) not in (3, 4) or isinstance(input_shape[0], (list, tuple)):
            raise ValueError("`input_shape` must be a non-nested tuple or list of rank-1 with size 3 (unbatched) or "
                             "4 (batched). ")
        shape = list(input_shape)
        h_axis, w_axis = _hw_axes(self.data_format)
        shape[h_axis], shape[w_axis] = self.height, self.width
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width}


class _Augmentation(_RandomImageLayer):
    """An augmentation as Keras splits it: get_random_transformation draws, transform_images applies."""

    _FACTOR_BOUNDS = (-1, 1)

    def __init__(self, seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.generator = random.SeedGenerator(seed)
        self.built = True

    def _set_factor(self, factor):
        """Keras's base factor: a number f gives (max(-f, lower bound), f), a pair is sorted; bounds checked."""
        low, high = self._FACTOR_BOUNDS
        message = (f"The `factor` argument should be a number (or a list of two numbers) in the range "
                   f"[{low}, {high}]. Received: factor={factor}")
        if isinstance(factor, (tuple, list)):
            if len(factor) != 2 or factor[0] > high or factor[1] < low:
                raise ValueError(message)
            self.factor = tuple(sorted(factor))
        elif isinstance(factor, (int, float)):
            if factor < low or factor > high:
                raise ValueError(message)
            self.factor = (max(-abs(factor), low), abs(factor))
        else:
            raise ValueError(message)

    def call(self, inputs, training=True):
        images = ops.convert_to_tensor(inputs)
        transformation = self.get_random_transformation(images, training)
        _check_image_rank(images)
        return self.transform_images(images, transformation, training)

    def _seed(self, seed):
        """The seed a draw takes: the one passed to get_random_transformation, else the layer's generator."""
        return self.generator if seed is None else seed

    def _batch_shape(self, images):
        if images.ndim not in (3, 4):
            raise ValueError(f"Expected the input image to be rank 3 or 4. Received inputs.shape={tuple(images.shape)}")
        return (images.shape[0], 1, 1, 1) if images.ndim == 4 else (1, 1, 1)


class RandomBrightness(_Augmentation):
    """While training, one random delta per image, factor * (value range's width), added to every pixel; the
    result clipped into value_range."""

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self._set_factor(factor)
        if not isinstance(value_range, (tuple, list)) or len(value_range) != 2:
            raise ValueError(f"The `value_range` argument should be a list of two numbers. Received: "
                             f"value_range={value_range}")
        self.value_range = sorted(value_range)

    def get_random_transformation(self, data, training=True, seed=None):
        """{"rgb_delta": one delta per image (zeros outside training)}."""
        shape = self._batch_shape(data)
        if not training:
            return {"rgb_delta": ops.zeros(shape)}
        delta = random.uniform(shape, self.factor[0], self.factor[1], seed=self._seed(seed))
        return {"rgb_delta": delta * (self.value_range[1] - self.value_range[0])}

    def transform_images(self, images, transformation, training=True):
        images = ops.convert_to_tensor(images)
        if not training:
            return images
        images = images + ops.cast(transformation["rgb_delta"], images.dtype)
        return ops.clip(images, self.value_range[0], self.value_range[1])

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "value_range": self.value_range, "seed": self.seed}


class RandomContrast(_Augmentation):
    """While training, each image's pixels moved away from (or toward) the image's per-channel mean by a random
    factor in [1 - lower, 1 + upper]; the result clipped into value_range."""

    _FACTOR_BOUNDS = (0, 1)

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self._set_factor(factor)
        self.value_range = value_range

    def get_random_transformation(self, data, training=True, seed=None):
        """{"contrast_factor": one factor per image (zeros outside training)}."""
        shape = self._batch_shape(data)
        if not training:
            return {"contrast_factor": ops.zeros(shape)}
        factor = random.uniform(shape, 1.0 - self.factor[0], 1.0 + self.factor[1], dtype=self.compute_dtype,
                                seed=self._seed(seed))
        return {"contrast_factor": factor}

    def transform_images(self, images, transformation, training=True):
        images = ops.convert_to_tensor(images)
        if not training:
            return images
        h_axis, w_axis = _hw_axes(self.data_format)
        # the mean over the height, then over the width (Keras's order)
        mean = ops.mean(ops.mean(images, axis=h_axis, keepdims=True), axis=w_axis, keepdims=True)
        out = (images - mean) * transformation["contrast_factor"] + mean
        return ops.clip(out, self.value_range[0], self.value_range[1])

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "value_range": self.value_range, "seed": self.seed}


class _AffineAugmentation(_Augmentation):
    """Zoom and translation: per-image affine transforms through keras.ops.image.affine_transform."""

    _FILL_MODES = ("reflect", "wrap", "constant", "nearest")

    def __init__(self, fill_mode, interpolation, seed, fill_value, data_format, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if fill_mode not in self._FILL_MODES:
            raise NotImplementedError(f"Unknown `fill_mode` {fill_mode}. Expected of one {self._FILL_MODES}.")
        if interpolation not in ("nearest", "bilinear"):
            raise NotImplementedError(f"Unknown `interpolation` {interpolation}. Expected of one "
                                      f"('nearest', 'bilinear').")
        self.fill_mode, self.interpolation, self.fill_value = fill_mode, interpolation, fill_value

    def _factor_range(self, factor, name):
        """(lower, upper) of a height or width factor, Keras's checks on each number."""
        if isinstance(factor, (tuple, list)):
            if len(factor) != 2:
                raise ValueError(self._FACTOR_ERROR + f"Received: {name}={factor}")
            for f in factor:
                self._check_factor(f)
            return tuple(sorted(factor))
        if isinstance(factor, (int, float)):
            self._check_factor(factor)
            return (-abs(factor), abs(factor))
        raise ValueError(self._FACTOR_ERROR + f"Received: {name}={factor}")

    def transform_images(self, images, transformation, training=True):
        images = ops.cast(images, self.compute_dtype)
        if not training or transformation is None:
            return images
        h_axis, w_axis = _hw_axes(self.data_format)
        matrix = self._matrix(transformation, images.shape[h_axis], images.shape[w_axis])
        single = images.ndim == 3
        x = ops.expand_dims(images, 0) if single else images
        out = affine_transform(x, matrix, interpolation=self.interpolation, fill_mode=self.fill_mode,
                               fill_value=self.fill_value, data_format=self.data_format)
        return ops.squeeze(out, 0) if single else out

    def _draw_shape(self, images):
        return (images.shape[0], 1) if images.ndim == 4 else (1, 1)

    def get_config(self):
        return {**super().get_config(), "fill_mode": self.fill_mode, "interpolation": self.interpolation,
                "seed": self.seed, "fill_value": self.fill_value}


def _column(values):
    """A float32 (n, 1) NumPy column of a tensor's or array's values."""
    values = values.float32() if isinstance(values, _EngineTensor) else values
    return np.asarray(values, np.float32).reshape(-1, 1)


class RandomZoom(_AffineAugmentation):
    """While training, each image zoomed about its centre by 1 + a random factor per axis (a positive factor
    zooms out); the width follows the height unless width_factor is given."""

    _FACTOR_ERROR = ("The `height_factor` and `width_factor` arguments should be a number (or a list of two "
                     "numbers) in the range (-1.0, 1.0]. ")

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self.height_lower, self.height_upper = self._factor_range(height_factor, "height_factor")
        if width_factor is not None:
            self.width_lower, self.width_upper = self._factor_range(width_factor, "width_factor")

    def _check_factor(self, number):
        if number > 1.0 or number <= -1.0:
            raise ValueError(self._FACTOR_ERROR + f"Received: input_number={number}")

    def get_random_transformation(self, data, training=True, seed=None):
        """{"height_zoom", "width_zoom": one factor per image, "input_shape"}; None outside training."""
        if not training:
            return None
        shape, seed = self._draw_shape(data), self._seed(seed)
        height = random.uniform(shape, 1.0 + self.height_lower, 1.0 + self.height_upper, seed=seed)
        width = height if self.width_factor is None else random.uniform(
            shape, 1.0 + self.width_lower, 1.0 + self.width_upper, seed=seed)
        return {"height_zoom": height, "width_zoom": width, "input_shape": tuple(data.shape)}

    def _matrix(self, transformation, height, width):
        """[zx, 0, x offset, 0, zy, y offset, 0, 0] per image, the offsets keeping the centre (float32)."""
        zx, zy = _column(transformation["width_zoom"]), _column(transformation["height_zoom"])
        x_offset = (np.float32(width) - np.float32(1)) / np.float32(2) * (np.float32(1) - zx)
        y_offset = (np.float32(height) - np.float32(1)) / np.float32(2) * (np.float32(1) - zy)
        zero = np.zeros_like(zx)
        return np.concatenate([zx, zero, x_offset, zero, zy, y_offset, zero, zero], axis=1)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor, "width_factor": self.width_factor}


class RandomTranslation(_AffineAugmentation):
    """While training, each image shifted by a random fraction of its height and of its width."""

    _FACTOR_ERROR = "The `factor` argument should be a number (or a list of two numbers) in the range [-1.0, 1.0]. "

    def __init__(self, height_factor, width_factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self.height_lower, self.height_upper = self._factor_range(height_factor, "height_factor")
        self.width_lower, self.width_upper = self._factor_range(width_factor, "width_factor")

    def _check_factor(self, number):
        if number > 1.0 or number < -1.0:
            raise ValueError(self._FACTOR_ERROR + f"Received: input_number={number}")

    def get_random_transformation(self, data, training=True, seed=None):
        """{"translations": (width shift, height shift) in pixels per image, float32; "input_shape"}; None
        outside training."""
        if not training:
            return None
        shape, seed = self._draw_shape(data), self._seed(seed)
        h_axis, w_axis = _hw_axes(self.data_format)
        height = random.uniform(shape, self.height_lower, self.height_upper, seed=seed) * data.shape[h_axis]
        width = random.uniform(shape, self.width_lower, self.width_upper, seed=seed) * data.shape[w_axis]
        return {"translations": ops.cast(ops.concatenate([width, height], axis=1), "float32"),
                "input_shape": tuple(data.shape)}

    def _matrix(self, transformation, height, width):
        """[1, 0, -dx, 0, 1, -dy, 0, 0] per image."""
        shifts = np.asarray(_column(transformation["translations"])).reshape(-1, 2)
        one, zero = np.ones((len(shifts), 1), np.float32), np.zeros((len(shifts), 1), np.float32)
        return np.concatenate([one, zero, -shifts[:, :1], zero, one, -shifts[:, 1:], zero, zero], axis=1)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor, "width_factor": self.width_factor}


# -- Discretization ----------------------------------------------------------------------------------------------


def _summary(values, epsilon):
    """Keras's quantile summary of one batch: every step-th sorted value (step = max(n * epsilon, 1)), each
    standing for step values; a 2 x k float32 array (values, weights)."""
    values = np.sort(np.asarray(values, np.float32).reshape(-1))
    step = max(values.size / (1.0 / epsilon), 1)
    kept = values[int(step - 1)::int(step)]
    return np.stack([kept, np.full_like(kept, step)])


def _compress(summary, epsilon):
    """A summary thinned to about 1 / epsilon points by interpolating its cumulative weights (Keras's)."""
    if summary.shape[1] * epsilon < 1:
        return summary
    targets = epsilon + np.arange(0.0, 1.0, epsilon)
    cumulative = summary[1].cumsum()
    fractions = cumulative / cumulative[-1]
    points = np.interp(targets, fractions, summary[0])
    weights = np.diff(np.interp(targets, fractions, cumulative), prepend=0.0)
    return np.stack([points, weights]).astype(np.float32)


def _merge(summary, other, epsilon):
    both = np.concatenate([summary, other], axis=1)
    return _compress(both[:, np.argsort(both[0])], epsilon)


class Discretization(Layer):
    """Numbers to the index of their bin (bin_boundaries given, or num_bins learned by adapt() as Keras's
    approximate quantiles), as int32 indices or one-hot, multi-hot or count vectors."""

    _allow_non_tensor_positional_args = True

    def __init__(self, bin_boundaries=None, num_bins=None, epsilon=0.01, output_mode="int", sparse=False,
                 dtype=None, name=None):
        super().__init__(name=name, dtype=dtype)
        if sparse:
            raise ValueError("`sparse=True` cannot be used with backend torch")
        if output_mode not in ("int", "one_hot", "multi_hot", "count"):
            raise ValueError(f"Unknown value for `output_mode` argument of Discretization. Allowed values are: "
                             f"('int', 'one_hot', 'multi_hot', 'count'). Received: output_mode={output_mode}")
        if num_bins is not None and num_bins < 0:
            raise ValueError(f"`num_bins` must be greater than or equal to 0. Received: `num_bins={num_bins}`")
        if num_bins is not None and bin_boundaries is not None:
            raise ValueError(f"Both `num_bins` and `bin_boundaries` should not be set. Received: "
                             f"`num_bins={num_bins}` and `bin_boundaries={bin_boundaries}`")
        if num_bins is None and bin_boundaries is None:
            raise ValueError("You need to set either `num_bins` or `bin_boundaries`.")
        self.bin_boundaries, self.num_bins, self.epsilon = bin_boundaries, num_bins, epsilon
        self.output_mode, self.sparse = output_mode, sparse
        self.summary = None if bin_boundaries else np.zeros((2, 0), np.float32)
        self.built = True

    def adapt(self, data, steps=None):
        """Learn num_bins - 1 boundaries: approximate quantiles of the data (an array, or an iterable of
        batches)."""
        if self.num_bins is None:
            raise ValueError("Cannot adapt a Discretization layer that has been initialized with `bin_boundaries`, "
                             "use `num_bins` instead.")
        self.reset_state()
        if hasattr(data, "__iter__") and not isinstance(data, (np.ndarray, _EngineTensor)):
            for i, batch in enumerate(data):
                if steps is not None and i >= steps:
                    break
                self.update_state(batch)
        else:
            self.update_state(data)
        self.finalize_state()

    def update_state(self, data):
        data = data.float32() if isinstance(data, _EngineTensor) and data.fmt is not None else data
        data = storage(data) if isinstance(data, _EngineTensor) else data
        self.summary = _merge(_summary(data, self.epsilon), self.summary, self.epsilon)

    def finalize_state(self):
        if self.num_bins is not None:
            self.bin_boundaries = _compress(self.summary, 1.0 / self.num_bins)[0, :-1].tolist()

    def reset_state(self):
        if self.num_bins is not None:
            self.summary = np.zeros((2, 0), np.float32)

    def call(self, inputs):
        if self.bin_boundaries is None:
            raise ValueError("You need to either pass the `bin_boundaries` argument at construction time or call "
                             "`adapt(dataset)` before you can start using the `Discretization` layer.")
        x = convert_to_tensor(inputs, "float32")
        # the float32 inputs against float32 boundaries: bins[i - 1] <= x < bins[i] gives i
        indices = np.digitize(np.asarray(x.float32()), np.asarray(self.bin_boundaries, np.float32))
        depth = len(self.bin_boundaries) + 1
        if self.output_mode == "int":
            return convert_to_tensor(indices.astype(np.int32))
        return encode_categorical(indices.astype(np.int32), self.output_mode, depth, self.compute_dtype)

    def compute_output_shape(self, input_shape):
        if self.output_mode == "int":
            return input_shape
        depth = len(self.bin_boundaries) + 1 if self.bin_boundaries is not None else self.num_bins
        if self.output_mode == "one_hot":
            keep = input_shape[:-1] if input_shape and input_shape[-1] == 1 and len(input_shape) > 1 else input_shape
            return tuple(keep) + (depth,)
        return (input_shape[0],) + tuple(input_shape[2:]) + (depth,) if len(input_shape) >= 2 else (depth,)

    def get_config(self):
        return {"bin_boundaries": self.bin_boundaries, "num_bins": self.num_bins, "epsilon": self.epsilon,
                "output_mode": self.output_mode, "sparse": self.sparse, "name": self.name,
                "dtype": super().get_config()["dtype"]}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        boundaries = config.pop("bin_boundaries", None) if config.get("num_bins") is not None else None
        layer = cls(**config)
        if boundaries is not None:
            layer.bin_boundaries = boundaries
        return layer


# -- hashing -----------------------------------------------------------------------------------------------------


def _values_array(x):
    """Inputs as a NumPy array: strings as str, numbers as they are (float tensors as float32)."""
    if isinstance(x, _EngineTensor):
        return np.asarray(x.float32()) if x.fmt is not None else storage(x)
    x = np.asarray(x)
    return x.astype(str) if x.dtype.kind in "SO" else x


def _as_strings(x):
    """TensorFlow's as_string of each value (floats truncated to int64 first), as UTF-8 bytes."""
    if x.dtype.kind == "U":
        return [s.encode("utf-8") for s in x.reshape(-1)]
    if x.dtype.kind == "f":
        x = x.astype(np.int64)
    return [str(int(v)).encode() for v in x.reshape(-1)]


class Hashing(Layer):
    """Values (strings or integers) to hash buckets in [0, num_bins): FarmHash's Fingerprint64, or SipHash-2-4
    keyed by salt; mask_value, when given, gets bucket 0 and the others shift up by one."""

    _allow_non_tensor_positional_args = True
    _convert_input_args = False         # strings stay strings

    def __init__(self, num_bins, mask_value=None, salt=None, output_mode="int", sparse=False, **kwargs):
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = "int64" if output_mode == "int" else "float32"
        super().__init__(**kwargs)
        if num_bins is None or num_bins <= 0:
            raise ValueError(f"The `num_bins` for `Hashing` cannot be `None` or non-positive values. Received: "
                             f"num_bins={num_bins}.")
        if output_mode == "int" and self.dtype not in ("int32", "int64"):
            raise ValueError(f"When `output_mode=\"int\"`, `dtype` should be an integer type, 'int32' or 'in64'. "
                             f"Received: dtype={kwargs['dtype']}")
        modes = ("int", "one_hot", "multi_hot", "count")
        if output_mode not in modes:
            raise ValueError(f"Invalid value for argument `output_mode`. Expected one of {modes}. Received: "
                             f"output_mode={output_mode}")
        if sparse and output_mode == "int":
            raise ValueError(f"`sparse` may only be true if `output_mode` is `\"one_hot\"`, `\"multi_hot\"`, or "
                             f"`\"count\"`. Received: sparse={sparse} and output_mode={output_mode}")
        if sparse:
            raise NotImplementedError("minifp.keras's Hashing has no sparse tensors")
        if salt is not None and not (isinstance(salt, (tuple, list)) and len(salt) == 2 or isinstance(salt, int)):
            raise ValueError(f"The `salt` argument for `Hashing` can only be a tuple of size 2 integers, or a single "
                             f"integer. Received: salt={salt}.")
        self.num_bins, self.mask_value, self.output_mode, self.sparse = num_bins, mask_value, output_mode, sparse
        self.strong_hash = salt is not None
        self.salt = None if salt is None else list(salt) if isinstance(salt, (tuple, list)) else [salt, salt]
        self.built = True

    def _bins(self, x):
        """The bucket of each value of the array x (int64, x's shape)."""
        bins, mask = self.num_bins, None
        if self.mask_value is not None and bins > 1:
            bins -= 1
            mask = x == self.mask_value
        if self.strong_hash:
            hashes = [siphash24(self.salt[0], self.salt[1], s) % bins for s in _as_strings(x)]
        else:
            hashes = [fingerprint64(s) % bins for s in _as_strings(x)]
        out = np.array(hashes, np.int64).reshape(x.shape)
        return out if mask is None else np.where(mask, 0, out + 1)

    def call(self, inputs):
        x = _values_array(inputs)
        if self.output_mode == "one_hot" and x.ndim and x.shape[-1] == 1:
            x = x.reshape(x.shape[:-1])
        indices = self._bins(x)
        if self.output_mode == "int":
            return convert_to_tensor(indices.astype(self.dtype))
        return encode_categorical(indices, self.output_mode, self.num_bins, self.dtype)

    def compute_output_shape(self, input_shape):
        if self.output_mode == "int":
            return tuple(input_shape)
        return (self.num_bins,) if len(input_shape) == 0 else tuple(input_shape[:-1]) + (self.num_bins,)

    def get_config(self):
        return {**super().get_config(), "num_bins": self.num_bins, "salt": self.salt, "mask_value": self.mask_value,
                "output_mode": self.output_mode, "sparse": self.sparse}


_CROSS_SEED = 0xDECAFCAFFE      # the hash key TensorFlow's cross_hashed starts from


class HashedCrossing(Layer):
    """Two or more categorical features crossed into one hash bucket in [0, num_bins) per sample (TensorFlow's
    cross_hashed: strings by Fingerprint64, integers as they are, chained by FingerprintCat64)."""

    _allow_non_tensor_positional_args = True
    _convert_input_args = False

    def __init__(self, num_bins, output_mode="int", sparse=False, name=None, dtype=None, **kwargs):
        if output_mode == "int" and dtype is None:
            dtype = "int64"
        super().__init__(name=name, dtype=dtype, **kwargs)
        if sparse:
            raise ValueError("`sparse=True` can only be used with the TensorFlow backend.")
        if output_mode not in ("int", "one_hot"):
            raise ValueError(f"Unknown value for `output_mode` argument of HashedCrossing. Allowed values are: "
                             f"('int', 'one_hot'). Received: output_mode={output_mode}")
        self.num_bins, self.output_mode, self.sparse = num_bins, output_mode, sparse
        self.built = True

    def __call__(self, inputs, *args, **kwargs):
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"`HashedCrossing` should be called on a list or tuple of inputs. Received: "
                             f"inputs={inputs}")
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs):
        if len(inputs) < 2:
            raise ValueError(f"`HashedCrossing` should be called on at least two inputs. Received: inputs={inputs}")
        features = [_values_array(x) for x in inputs]
        shape = features[0].shape
        if len(shape) > 2 or (len(shape) == 2 and shape[-1] != 1):
            raise ValueError(f"All `HashedCrossing` inputs should have shape `()`, `(batch_size)` or "
                             f"`(batch_size, 1)`. Received: inputs={inputs}")
        if not all(f.shape == shape for f in features[1:]):
            raise ValueError(f"All `HashedCrossing` inputs should have equal shape. Received: inputs={inputs}")
        columns = [[fingerprint64(s) for s in _as_strings(f)] if f.dtype.kind == "U"
                   else [int(v) & ((1 << 64) - 1) for v in f.astype(np.int64).reshape(-1)] for f in features]
        buckets = []
        for row in zip(*columns):
            h = _CROSS_SEED
            for feature_hash in row:
                h = fingerprint_cat64(h, feature_hash)
            buckets.append(h % self.num_bins)
        out = np.array(buckets, np.int64).reshape(shape)
        if self.output_mode == "int":
            return convert_to_tensor(out.astype(self.dtype))
        return encode_categorical(out, "one_hot", self.num_bins, self.compute_dtype)

    def compute_output_shape(self, input_shape):
        first = tuple(input_shape[0])
        if self.output_mode == "int":
            return first
        return (first + (self.num_bins,)) if first and first[-1] != 1 else first[:-1] + (self.num_bins,)

    def get_config(self):
        return {"num_bins": self.num_bins, "output_mode": self.output_mode, "sparse": self.sparse,
                "name": self.name, "dtype": super().get_config()["dtype"]}
