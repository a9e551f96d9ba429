"""keras.applications.MobileNetV2 with Keras's exact architecture, layer names and parameter counts.

weights=None only: minifp ships and downloads no network weights ("imagenet" is refused with a clear error; a
path to a weights file is loaded with model.load_weights).
"""
from __future__ import annotations

import os
import warnings

from .. import backend, layers
from ..models import Functional

__all__ = ["MobileNetV2", "preprocess_input"]


def _make_divisible(v, divisor, min_value=None):
    """v rounded to the nearest multiple of divisor, never below min_value nor more than 10% down (Keras's)."""
    min_value = divisor if min_value is None else min_value
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def _correct_pad(x, kernel_size):
    """The zero padding before a strided 3x3 conv (imagenet_utils.correct_pad): one less at the start
    for an even size."""
    first = 2 if backend.image_data_format() == "channels_first" else 1
    size = x.shape[first:first + 2]
    adjust = (1, 1) if size[0] is None else (1 - size[0] % 2, 1 - size[1] % 2)
    correct = (kernel_size // 2, kernel_size // 2)
    return (correct[0] - adjust[0], correct[0]), (correct[1] - adjust[1], correct[1])


def _input_shape(input_shape, include_top):
    """obtain_input_shape for weights=None (default size 224, min size 32)."""
    last = backend.image_data_format() == "channels_last"
    if input_shape:
        if len(input_shape) != 3:
            raise ValueError("`input_shape` must be a tuple of three integers.")
        rows, cols = (input_shape[0], input_shape[1]) if last else (input_shape[1], input_shape[2])
        channels = input_shape[-1] if last else input_shape[0]
        if channels not in (1, 3):
            warnings.warn(f"This model usually expects 1 or 3 input channels. However, it was passed an "
                          f"input_shape with {channels} input channels.", stacklevel=3)
        if (rows is not None and rows < 32) or (cols is not None and cols < 32):
            raise ValueError(f"Input size must be at least 32x32; Received: input_shape={tuple(input_shape)}")
        shape = tuple(input_shape)
    elif include_top:
        shape = (224, 224, 3) if last else (3, 224, 224)
    else:
        shape = (None, None, 3) if last else (3, None, None)
    if include_top and None in shape:
        raise ValueError(f"If `include_top` is True, you should specify a static `input_shape`. Received: "
                         f"input_shape={shape}")
    return shape


def builder(layers, functional):
    """MobileNetV2 of a door: built of that door's `layers` module into its `functional` model class (tf.keras's
    BatchNormalization and Model are not Keras 3's)."""

    def MobileNetV2(input_shape=None, alpha=1.0, include_top=True, weights=None, input_tensor=None, pooling=None,
                    classes=1000, classifier_activation="softmax", name=None):
        """MobileNetV2 (Sandler et al., 2018) as keras.applications builds it: a functional Model."""
        return _mobilenet_v2(layers, functional, input_shape, alpha, include_top, weights, input_tensor, pooling,
                             classes, classifier_activation, name)
    MobileNetV2.__qualname__ = "MobileNetV2"
    return MobileNetV2


def _mobilenet_v2(layers, functional, input_shape, alpha, include_top, weights, input_tensor, pooling, classes,
                  classifier_activation, name):
    if weights == "imagenet":
        raise ValueError("weights='imagenet' is not available in minifp.keras: minifp downloads no network "
                         "weights. Use weights=None (random initialization) or the path of a weights file "
                         "saved by Keras (model.save_weights).")
    if not (weights is None or isinstance(weights, (str, os.PathLike)) and os.path.exists(weights)):
        raise ValueError("The `weights` argument should be either `None` (random initialization), `imagenet` "
                         "(pre-training on ImageNet), or the path to the weights file to be loaded.  "
                         f"Received `weights={weights}`")
    if pooling not in (None, "avg", "max"):
        raise ValueError(f"Unknown value for `pooling`: {pooling!r}. Valid values: None, 'avg', 'max'.")
    last = backend.image_data_format() == "channels_last"
    if input_shape is None and input_tensor is not None:
        input_shape = tuple(input_tensor.shape[1:])
    input_shape = _input_shape(input_shape, include_top)
    rows = input_shape[0] if last else input_shape[1]
    img_input = layers.Input(shape=input_shape) if input_tensor is None else input_tensor
    channel_axis = -1 if last else 1

    x = layers.Conv2D(_make_divisible(32 * alpha, 8), kernel_size=3, strides=(2, 2), padding="same",
                      use_bias=False, name="Conv1")(img_input)
    x = layers.BatchNormalization(axis=channel_axis, epsilon=1e-3, momentum=0.999, name="bn_Conv1")(x)
    x = layers.ReLU(6.0, name="Conv1_relu")(x)
    blocks = [(16, 1, 1), (24, 2, 6), (24, 1, 6), (32, 2, 6), (32, 1, 6), (32, 1, 6), (64, 2, 6), (64, 1, 6),
              (64, 1, 6), (64, 1, 6), (96, 1, 6), (96, 1, 6), (96, 1, 6), (160, 2, 6), (160, 1, 6), (160, 1, 6),
              (320, 1, 6)]
    for block_id, (filters, stride, expansion) in enumerate(blocks):
        x = _inverted_res_block(layers, x, filters=filters, alpha=alpha, stride=stride, expansion=expansion,
                                block_id=block_id)
    # No alpha on the last conv (the paper's rule), except to widen it when alpha > 1.
    last_filters = _make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = layers.Conv2D(last_filters, kernel_size=1, use_bias=False, name="Conv_1")(x)
    x = layers.BatchNormalization(axis=channel_axis, epsilon=1e-3, momentum=0.999, name="Conv_1_bn")(x)
    x = layers.ReLU(6.0, name="out_relu")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D()(x)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    elif pooling == "avg":
        x = layers.GlobalAveragePooling2D()(x)
    elif pooling == "max":
        x = layers.GlobalMaxPooling2D()(x)
    model = functional(img_input, x, name=name or f"mobilenetv2_{alpha:0.2f}_{rows}")
    if weights is not None:
        model.load_weights(weights)
    return model


def _inverted_res_block(layers, inputs, expansion, stride, alpha, filters, block_id):
    """Expand (1x1), depthwise 3x3, project (1x1), with the residual Add where shapes allow."""
    channel_axis = -1 if backend.image_data_format() == "channels_last" else 1
    in_channels = inputs.shape[channel_axis]
    pointwise_filters = _make_divisible(int(filters * alpha), 8)
    x, prefix = inputs, f"block_{block_id}_"
    if block_id:
        x = layers.Conv2D(expansion * in_channels, kernel_size=1, padding="same", use_bias=False, activation=None,
                          name=f"{prefix}expand")(x)
        x = layers.BatchNormalization(axis=channel_axis, epsilon=1e-3, momentum=0.999, name=f"{prefix}expand_BN")(x)
        x = layers.ReLU(6.0, name=f"{prefix}expand_relu")(x)
    else:
        prefix = "expanded_conv_"
    if stride == 2:
        x = layers.ZeroPadding2D(padding=_correct_pad(x, 3), name=f"{prefix}pad")(x)
    x = layers.DepthwiseConv2D(kernel_size=3, strides=stride, activation=None, use_bias=False,
                               padding="same" if stride == 1 else "valid", name=f"{prefix}depthwise")(x)
    x = layers.BatchNormalization(axis=channel_axis, epsilon=1e-3, momentum=0.999, name=f"{prefix}depthwise_BN")(x)
    x = layers.ReLU(6.0, name=f"{prefix}depthwise_relu")(x)
    x = layers.Conv2D(pointwise_filters, kernel_size=1, padding="same", use_bias=False, activation=None,
                      name=f"{prefix}project")(x)
    x = layers.BatchNormalization(axis=channel_axis, epsilon=1e-3, momentum=0.999, name=f"{prefix}project_BN")(x)
    if in_channels == pointwise_filters and stride == 1:
        return layers.Add(name=f"{prefix}add")([inputs, x])
    return x


MobileNetV2 = builder(layers, Functional)


def preprocess_input(x, data_format=None):
    """Pixels in [0, 255] scaled to [-1, 1] (mode "tf")."""
    return x / 127.5 - 1.0
