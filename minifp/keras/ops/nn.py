"""keras.ops' nn part (Keras 3's keras.ops.nn): activations, pooling, convolutions, one-hot codes, cross-entropies
and normalizations, with Keras's argument conventions (channels_last, "valid"/"same" padding, kernels laid out
(k..., in, out)), composed of the engine's ops so that every result is differentiable."""
from __future__ import annotations

import math

import numpy as np

from ...engine import apply, storage
from .. import _loss_functions as _losses
from .._tensor import _as_face, as_dtype, convert_to_tensor, format_of
from ._common import _float, _floating, _int_array, _tensor
from .math import norm
from ..layers.convolutional import (_conv, _depthwise, same_padding, spatial_padding, standardize_data_format,
                                    standardize_padding, standardize_tuple)

__all__ = ["relu", "relu6", "sigmoid", "softplus", "softsign", "silu", "swish", "log_sigmoid", "leaky_relu",
           "hard_sigmoid", "hard_silu", "hard_swish", "elu", "selu", "gelu", "celu", "glu", "softmax",
           "log_softmax", "max_pool", "average_pool", "conv", "depthwise_conv", "separable_conv", "conv_transpose",
           "one_hot", "multi_hot", "categorical_crossentropy", "sparse_categorical_crossentropy",
           "binary_crossentropy", "moments", "batch_normalization", "normalize", "dot_product_attention",
           "layer_normalization", "rms_normalization", "hard_tanh", "soft_shrink", "hard_shrink", "tanh_shrink",
           "adaptive_average_pool", "adaptive_max_pool", "threshold", "squareplus", "sparse_plus", "sparse_sigmoid", "psnr", "depth_to_space", "space_to_depth"]

EPSILON = 1e-7      # keras.config.epsilon()


def _op(name, x, **params):
    return _as_face(apply(name, _floating(x, name), **params))


def _kept(name, x, fn, **params):
    """An op that keeps integer inputs integers (relu, relu6: TensorFlow's kernels take them)."""
    x = _tensor(x)
    if x.fmt is None:
        return convert_to_tensor(fn(storage(x)))
    return _op(name, x, **params)


# -- activations -----------------------------------------------------------------------------------------------

def relu(x):
    """max(x, 0)."""
    return _kept("relu", x, lambda a: np.maximum(a, 0).astype(a.dtype))


def relu6(x):
    """min(max(x, 0), 6)."""
    return _kept("hardtanh", x, lambda a: np.clip(a, 0, 6).astype(a.dtype), min_val=0.0, max_val=6.0)


def sigmoid(x):
    """1 / (1 + exp(-x))."""
    out = _op("sigmoid", x)
    out._keras_logits = _tensor(x)      # losses then use the logits, as Keras's TensorFlow backend does
    return out


def softplus(x):
    """log(1 + exp(x))."""
    return _op("softplus", x)


def softsign(x):
    """x / (|x| + 1)."""
    x = _floating(x, "softsign")
    return _as_face(apply("div", x, apply("add", apply("abs", x), 1.0)))


def silu(x):
    """x * sigmoid(x)."""
    return _op("silu", x)


swish = silu


def log_sigmoid(x):
    """log(sigmoid(x)) = -softplus(-x)."""
    return _op("log_sigmoid", x)


def leaky_relu(x, negative_slope=0.2):
    """x where x > 0, else negative_slope * x (integers become float32, as TensorFlow's kernel takes them)."""
    return _as_face(apply("leaky_relu", _float(x), negative_slope=float(negative_slope)))


def hard_sigmoid(x):
    """relu6(x + 3) / 6."""
    return _op("hardsigmoid", x)


def hard_silu(x):
    """x * hard_sigmoid(x), one rounding (keras.activations.hard_silu's values; at -3 and 3 the gradient is the
    engine op's, not TensorFlow's 0 and 1)."""
    return _op("hardswish", x)


hard_swish = hard_silu


def elu(x, alpha=1.0):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    return _op("elu", x, alpha=float(alpha))


SELU_SCALE = 1.0507009873554805


def selu(x):
    """scale * elu(x, alpha) with the self-normalising constants; at 0 the gradient is scale (TensorFlow's)."""
    x = _floating(x, "selu")
    return _as_face(apply("where", apply("lt", x, 0.0), apply("selu", x), apply("mul", x, SELU_SCALE)))


def gelu(x, approximate=True):
    """x * Phi(x); approximate=True (Keras's default): the tanh form."""
    return _op("gelu", x, approximate="tanh" if approximate else "none")


def celu(x, alpha=1.0):
    """max(x, 0) + alpha * expm1(min(x, 0) / alpha), Keras's steps (at 0 both branches pass the gradient, as
    TensorFlow's maximum and minimum do)."""
    x = _floating(x, "celu")
    pos = apply("where", apply("ge", x, 0.0), x, 0.0)
    neg = apply("where", apply("le", x, 0.0), x, 0.0)
    return _as_face(apply("add", pos, apply("mul", apply("expm1", apply("div", neg, float(alpha))), float(alpha))))


def glu(x, axis=-1):
    """a * sigmoid(b), a and b the two halves of x along axis."""
    x = _floating(x, "glu")
    n = x.shape[axis]
    if n % 2:
        raise ValueError(f"axis size must be divisible by 2. Received: x.shape={x.shape} with axis={axis}")
    ax = axis % x.ndim
    first = tuple(slice(None) if i != ax else slice(0, n // 2) for i in range(x.ndim))
    second = tuple(slice(None) if i != ax else slice(n // 2, n) for i in range(x.ndim))
    return _as_face(apply("mul", x[first], apply("sigmoid", x[second])))


def _const(v, x):
    """The number v as a tensor of x's dtype (TensorFlow converts a Python number to its operand's dtype)."""
    return convert_to_tensor(np.float32(v), x.dtype)


def hard_tanh(x):
    """x clipped to [-1, 1] (tf.clip_by_value: the gradient passes at the ends too)."""
    return _as_face(_losses._clip(_floating(x, "hard_tanh"), -1.0, 1.0))


def soft_shrink(x, threshold=0.5):
    """x - threshold above threshold, x + threshold below -threshold, 0 between."""
    x = _floating(x, "soft_shrink")
    t = _const(threshold, x)
    return _as_face(apply("where", apply("gt", x, t), apply("sub", x, t),
                          apply("where", apply("lt", x, apply("neg", t)), apply("add", x, t), 0.0)))


def hard_shrink(x, threshold=0.5):
    """x where |x| > threshold, else 0."""
    x = _floating(x, "hard_shrink")
    return _as_face(apply("where", apply("gt", apply("abs", x), _const(threshold, x)), x, 0.0))


def tanh_shrink(x):
    """x - tanh(x)."""
    x = _floating(x, "tanh_shrink")
    return _as_face(apply("sub", x, apply("tanh", x)))


def threshold(x, threshold, default_value):
    """x where x > threshold, else default_value."""
    x = _floating(x, "threshold")
    return _as_face(apply("where", apply("gt", x, _const(threshold, x)), x, _const(default_value, x)))


def squareplus(x, b=4):
    """(x + sqrt(x**2 + b)) / 2, in Keras's steps."""
    x = _floating(x, "squareplus")
    root = apply("sqrt", apply("add", apply("mul", x, x), _const(b, x)))
    return _as_face(apply("div", apply("add", x, root), 2.0))


def sparse_plus(x):
    """0 for x <= -1, (x + 1)**2 / 4 below 1, x above."""
    x = _floating(x, "sparse_plus")
    y = apply("add", x, 1.0)
    mid = apply("mul", apply("mul", y, y), 0.25)
    return _as_face(apply("where", apply("le", x, -1.0), 0.0, apply("where", apply("lt", x, 1.0), mid, x)))


def sparse_sigmoid(x):
    """0 for x <= -1, 1 for x >= 1, (x + 1) / 2 between."""
    x = _floating(x, "sparse_sigmoid")
    mid = apply("mul", apply("add", x, 1.0), 0.5)
    return _as_face(apply("where", apply("le", x, -1.0), 0.0, apply("where", apply("ge", x, 1.0), 1.0, mid)))


def _over_axes(name, x, axis):
    """softmax / log_softmax over one axis, or over several (moved last and flattened, as Keras does)."""
    x = _floating(x, name)
    if isinstance(axis, int):
        return _as_face(apply(name, x, axis=axis))
    axes = sorted(a % x.ndim for a in axis)
    rest = [i for i in range(x.ndim) if i not in axes]
    moved = apply("transpose", x, axes=tuple(rest + axes))
    flat = apply("reshape", moved, shape=moved.shape[:len(rest)] + (-1,))
    out = apply("reshape", apply(name, flat, axis=-1), shape=moved.shape)
    return _as_face(apply("transpose", out, axes=tuple(np.argsort(rest + axes))))


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along axis (an int or a tuple of axes)."""
    out = _over_axes("softmax", x, axis)
    out._keras_logits = _tensor(x)
    return out


def log_softmax(x, axis=-1):
    """log(softmax(x)) along axis (an int or a tuple of axes)."""
    return _over_axes("log_softmax", x, axis)


# -- pooling and convolutions ----------------------------------------------------------------------------------

def _spatial_rank(x, name):
    if x.ndim == 3:
        return 1
    if x.ndim == 4:
        return 2
    raise NotImplementedError(f"minifp's keras.ops.{name} supports 1-D and 2-D inputs (rank 3 or 4); "
                              f"received rank {x.ndim}")


def _as_2d(x, data_format):
    """A rank-3 (1-D) input as a 2-D one with a height of 1."""
    return apply("reshape", x, shape=(x.shape[0], 1) + x.shape[1:] if data_format == "channels_last"
                 else x.shape[:2] + (1, x.shape[2]))


def _from_2d(y, data_format):
    return _as_face(apply("reshape", y, shape=(y.shape[0],) + y.shape[2:] if data_format == "channels_last"
                          else y.shape[:2] + (y.shape[3],)))


def _pool(mode, inputs, pool_size, strides, padding, data_format):
    data_format = standardize_data_format(data_format)
    padding = standardize_padding(padding)
    x = _tensor(inputs)
    n = _spatial_rank(x, mode)
    pool = standardize_tuple(pool_size, n, "pool_size")
    stride = pool if strides is None else standardize_tuple(strides, n, "strides")
    if n == 1:
        x, pool, stride = _as_2d(x, data_format), (1,) + pool, (1,) + stride
    last = data_format == "channels_last"
    spatial = x.shape[1:3] if last else x.shape[2:4]
    pads = spatial_padding(padding, spatial, pool, stride)
    layout = "NHWC" if last else "NCHW"
    if mode == "max_pool":
        y = apply("max_pool2d", x, kernel_size=pool, stride=stride, padding=pads, layout=layout)
    else:       # TensorFlow's average over "same" windows counts only the input's own values
        y = apply("avg_pool2d", x, kernel_size=pool, stride=stride, padding=pads, count_include_pad=False,
                  layout=layout)
    return _from_2d(y, data_format) if n == 1 else _as_face(y)


def max_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """The max over pool_size windows (strides default to pool_size)."""
    return _pool("max_pool", inputs, pool_size, strides, padding, data_format)


def average_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """The mean over pool_size windows ("same" windows average only the values inside the input)."""
    return _pool("average_pool", inputs, pool_size, strides, padding, data_format)


def _adaptive(reduce, inputs, output_size, data_format, name):
    """Each spatial axis in turn (height first) reduced over PyTorch's bins [floor(i n / o), ceil((i + 1) n / o)),
    the bins TensorFlow's adaptive pools gather."""
    data_format = standardize_data_format(data_format)
    x = _floating(inputs, name)
    n = _spatial_rank(x, name)
    sizes = standardize_tuple(output_size, n, "output_size")
    first = 1 if data_format == "channels_last" else 2
    for ax, out in zip(range(first, first + n), sizes):
        size = x.shape[ax]
        lead = (slice(None),) * ax
        parts = [apply(reduce, x[lead + (slice(i * size // out, -(-(i + 1) * size // out)),)], axis=ax,
                       keepdims=True) for i in range(out)]
        x = apply("concatenate", *parts, axis=ax)
    return _as_face(x)


def adaptive_average_pool(inputs, output_size, data_format=None):
    """The mean over output_size adaptive bins per spatial axis (1-D, 2-D)."""
    return _adaptive("mean", inputs, output_size, data_format, "adaptive_average_pool")


def adaptive_max_pool(inputs, output_size, data_format=None):
    """The max over output_size adaptive bins per spatial axis (1-D, 2-D)."""
    return _adaptive("max", inputs, output_size, data_format, "adaptive_max_pool")


def _conv_args(x, kernel, strides, padding, data_format, dilation_rate, name):
    data_format = standardize_data_format(data_format)
    padding = standardize_padding(padding)
    n = _spatial_rank(x, name)
    if kernel.ndim != x.ndim:
        raise ValueError(f"Kernel shape must have the same length as input, but received kernel of shape "
                         f"{kernel.shape} and input of shape {x.shape}.")
    strides = standardize_tuple(strides, n, "strides")
    dilation = standardize_tuple(dilation_rate, n, "dilation_rate")
    return data_format, padding, n, strides, dilation


def _lift(x, kernel, strides, dilation, data_format):
    """1-D arguments as 2-D ones (a unit height)."""
    k = apply("reshape", kernel, shape=(1,) + kernel.shape)
    return _as_2d(x, data_format), k, (1,) + strides, (1,) + dilation


def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """N-D convolution (1-D, 2-D) of inputs with a (k..., in / groups, out) kernel; groups from the channels."""
    x, kernel = _float(inputs), _float(kernel)
    data_format, padding, n, strides, dilation = _conv_args(x, kernel, strides, padding, data_format,
                                                            dilation_rate, "conv")
    channels = x.shape[-1] if data_format == "channels_last" else x.shape[1]
    if channels % kernel.shape[-2]:
        raise ValueError(f"The number of input channels must be evenly divisible by kernel's in_channels. "
                         f"Received input channels {channels} and kernel in_channels {kernel.shape[-2]}. ")
    groups = channels // kernel.shape[-2]
    if n == 1:
        x, kernel, strides, dilation = _lift(x, kernel, strides, dilation, data_format)
    y = _conv(x, kernel, None, strides, padding, dilation, groups, data_format)
    return _from_2d(y, data_format) if n == 1 else _as_face(y)


def depthwise_conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """Each input channel convolved with its own filters: kernel (k..., in, depth_multiplier)."""
    x, kernel = _float(inputs), _float(kernel)
    data_format, padding, n, strides, dilation = _conv_args(x, kernel, strides, padding, data_format,
                                                            dilation_rate, "depthwise_conv")
    if n == 1:
        x, kernel, strides, dilation = _lift(x, kernel, strides, dilation, data_format)
    y = _depthwise(x, kernel, strides, padding, dilation, data_format)
    return _from_2d(y, data_format) if n == 1 else _as_face(y)


def separable_conv(inputs, depthwise_kernel, pointwise_kernel, strides=1, padding="valid", data_format=None,
                   dilation_rate=1):
    """depthwise_conv, then a 1x1 conv with pointwise_kernel."""
    y = depthwise_conv(inputs, depthwise_kernel, strides, padding, data_format, dilation_rate)
    return conv(y, pointwise_kernel, 1, "valid", data_format, 1)


def _transpose_length(size, k, stride, padding, output_padding, dilation):
    """Keras's output length of a transposed convolution along one axis."""
    k = (k - 1) * dilation + 1
    if padding == "valid":
        return (size - 1) * stride + k + (max(k, stride) - k if output_padding is None else output_padding)
    return size * stride if output_padding is None else (size - 1) * stride + k % 2 + output_padding


def conv_transpose(inputs, kernel, strides=1, padding="valid", output_padding=None, data_format=None,
                   dilation_rate=1):
    """The transpose (gradient) of conv: kernel (k..., out, in); TensorFlow's conv_transpose placement."""
    x, kernel = _float(inputs), _float(kernel)
    data_format, padding, n, strides, dilation = _conv_args(x, kernel, strides, padding, data_format,
                                                            dilation_rate, "conv_transpose")
    last = data_format == "channels_last"
    channels = x.shape[-1] if last else x.shape[1]
    if channels != kernel.shape[-1]:
        raise ValueError(f"The number of input channels must be equal to kernel's in_channels. Received input "
                         f"channels {channels} and kernel in_channels {kernel.shape[-1]}.")
    if output_padding is not None:
        output_padding = standardize_tuple(output_padding, n, "output_padding", allow_zero=True)
    if any(d != 1 for d in dilation):       # TensorFlow's CPU kernel has no dilated transposed convolution
        raise ValueError(f"conv_transpose with dilation_rate={dilation_rate}: TensorFlow's CPU kernel supports "
                         f"only dilation_rate=1")
    one_d = n == 1
    if one_d:
        x, kernel, strides, dilation = _lift(x, kernel, strides, dilation, data_format)
        output_padding = None if output_padding is None else (0,) + output_padding
    if not last:
        x = apply("transpose", x, axes=(0, 2, 3, 1))
    size = x.shape[1:3]
    lengths = [_transpose_length(size[i], kernel.shape[i], strides[i], padding,
                                 None if output_padding is None else output_padding[i], dilation[i])
               for i in range(2)]
    # zeros between the inputs (stride - 1 of them), then a stride-1 convolution with the flipped kernel
    dil = tuple((s - 1) * st + 1 for s, st in zip(size, strides))
    zeros = convert_to_tensor(np.zeros((x.shape[0],) + dil + (x.shape[3],), np.float32), x.dtype)
    spread = apply("setitem", zeros, x, index=(slice(None), slice(None, None, strides[0]),
                                               slice(None, None, strides[1]), slice(None)))
    w = apply("transpose", kernel[::-1, ::-1], axes=(0, 1, 3, 2))
    pads = []
    for i in range(2):
        k = (kernel.shape[i] - 1) * dilation[i] + 1
        before = 0 if padding == "valid" else same_padding(lengths[i], k, strides[i])[0]
        lo = k - 1 - before
        pads.append((lo, lengths[i] - dil[i] - lo + k - 1))
    y = apply("conv2d", spread, w, None, stride=1, padding=tuple(pads), dilation=dilation, layout="NHWC")
    if not last:
        y = apply("transpose", y, axes=(0, 3, 1, 2))
    return _from_2d(y, data_format) if one_d else _as_face(y)


# -- one-hot codes and cross-entropies -------------------------------------------------------------------------

def _coded(hot, dtype):
    dtype = as_dtype("float32" if dtype is None else dtype)
    fmt = format_of(dtype)
    return convert_to_tensor(hot.astype(np.float32), dtype) if fmt is not None else \
        convert_to_tensor(hot.astype(str(dtype)))


def one_hot(x, num_classes, axis=-1, dtype=None, sparse=False):
    """1 at each index along a new axis of num_classes entries (0 everywhere for indices outside it); float32."""
    if sparse:
        raise NotImplementedError("minifp's keras.ops.one_hot has no sparse tensors")
    idx = _int_array(x)
    hot = idx[..., None] == np.arange(num_classes)
    return _coded(np.moveaxis(hot, -1, axis), dtype)


def multi_hot(inputs, num_classes=None, axis=-1, dtype=None, sparse=False, **kwargs):
    """1 at every index of each sample (the one-hot codes of a sample's indices, max-reduced)."""
    if num_classes is None:
        num_classes = kwargs.pop("num_tokens", None)
        if num_classes is None:
            raise ValueError("Argument `num_classes` must be specified.")
    if sparse:
        raise NotImplementedError("minifp's keras.ops.multi_hot has no sparse tensors")
    idx = _int_array(inputs)
    hot = np.moveaxis(idx[..., None] == np.arange(num_classes), -1, axis)
    return _coded(hot.any(axis=1 if idx.ndim > 1 else 0), dtype)


def binary_crossentropy(target, output, from_logits=False):
    """-(t * log(p) + (1 - t) * log(1 - p)) elementwise, p clipped to [1e-7, 1 - 1e-7] (or from logits)."""
    output = _float(output)
    return _as_face(_losses._binary_crossentropy(_float(target), output, from_logits))


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """-sum(target * log(p), axis), p = output over its sum, clipped (or log_softmax of logits)."""
    target, output = _float(target), _float(output)
    if target.ndim < 1:
        raise ValueError(f"Arguments `target` and `output` must be at least rank 1. Received: "
                         f"target.shape={target.shape}, output.shape={output.shape}")
    return _as_face(_losses.categorical_crossentropy(target, output, from_logits, 0.0, axis))


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """-log(p[target]) per sample, p the probabilities (or softmax of logits) along the last axis."""
    return _as_face(_losses.sparse_categorical_crossentropy(target, _float(output), from_logits, None, axis))


# -- statistics and normalizations -----------------------------------------------------------------------------

def _axes(axes, ndim):
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    return tuple(sorted(a % ndim for a in axes))


def moments(x, axes, keepdims=False, synchronized=False):
    """(mean, variance) over axes; float16 and bfloat16 computed in float32, clipped and rounded back; integers
    stay integers (TensorFlow's integer means truncate)."""
    x = _tensor(x)
    if x.fmt is None:
        a, axes = storage(x), _axes(axes, x.ndim)
        count = int(np.prod([a.shape[i] for i in axes]))
        mean = np.trunc(a.sum(axis=axes, keepdims=True, dtype=np.int64) / count).astype(a.dtype)
        var = np.trunc(((a - mean) ** 2).sum(axis=axes, keepdims=keepdims, dtype=np.int64) / count).astype(a.dtype)
        return convert_to_tensor(mean if keepdims else mean.reshape(var.shape)), convert_to_tensor(var)
    fmt = x.fmt
    half = str(x.dtype) in ("float16", "bfloat16")
    xf = apply("cast", x, _out=format_of("float32")) if half else x
    axes = _axes(axes, x.ndim)
    mean = apply("mean", xf, axis=axes, keepdims=True)
    d = apply("sub", xf, mean.detach())
    var = apply("mean", apply("mul", d, d), axis=axes, keepdims=keepdims)
    if not keepdims:
        mean = apply("reshape", mean, shape=var.shape)
    if half:
        big = float(65504.0 if str(x.dtype) == "float16" else 3.3895313892515355e38)
        mean, var = (apply("cast", apply("hardtanh", v, min_val=-big, max_val=big), _out=fmt) for v in (mean, var))
    return _as_face(mean), _as_face(var)


def batch_normalization(x, mean, variance, axis, offset=None, scale=None, epsilon=1e-3):
    """(x - mean) * rsqrt(variance + epsilon) * scale + offset, the statistics laid along `axis`."""
    x = _float(x)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]

    def laid(v):
        v = _tensor(v)
        return v if axis in (-1, x.ndim - 1) else apply("reshape", v, shape=tuple(shape))
    mean, variance = laid(mean), laid(variance)
    inv = apply("rsqrt", apply("add", variance, convert_to_tensor(np.float32(epsilon), variance.dtype)))
    if scale is not None:
        inv = apply("mul", inv, laid(scale))
    shift = apply("neg", apply("mul", mean, inv))
    if offset is not None:
        shift = apply("add", laid(offset), shift)
    return _as_face(apply("add", apply("mul", x, inv), shift))


def normalize(x, axis=-1, order=2, epsilon=None):
    """x over its `order`-norm along axis (order 2: x * min(rsqrt(sum(x**2)), 1 / epsilon))."""
    if not isinstance(order, int) or not order >= 1:
        raise ValueError(f"Argument `order` must be an int >= 1. Received: order={order}")
    x = _float(x)
    if x.ndim == 0:
        x = apply("reshape", x, shape=(1,))
    epsilon = EPSILON if epsilon is None else epsilon
    if order == 2:      # min(rsqrt(s), 1 / eps) as rsqrt(max(s, eps**2)): a zero row's gradient stays finite
        sq = apply("sum", apply("mul", x, x), axis=axis, keepdims=True)
        return _as_face(apply("mul", x, apply("rsqrt", apply("maximum", sq, float(epsilon) ** 2))))
    return _as_face(apply("div", x, apply("maximum", norm(x, ord=order, axis=axis, keepdims=True), epsilon)))


def psnr(x1, x2, max_val):
    """20 log10(max_val) - 10 log10(mean((x1 - x2)**2)), the peak signal-to-noise ratio in dB."""
    x1, x2 = _float(x1), _float(x2)
    if x1.shape != x2.shape:
        raise ValueError(f"Input shapes {x1.shape} and {x2.shape} must match for PSNR calculation. ")
    d = apply("sub", x1, x2)
    mse = apply("mean", apply("mul", d, d))
    peak = apply("mul", apply("log10", _const(max_val, x2)), 20.0)
    return _as_face(apply("sub", peak, apply("mul", apply("log10", mse), 10.0)))


def _blocks(x, block_size, data_format, name):
    data_format = standardize_data_format(data_format)
    x = _tensor(x)
    if x.ndim != 4:
        raise ValueError(f"{name} expects a 4-D input. Received: x.shape={x.shape}")
    if data_format == "channels_first":
        x = apply("transpose", x, axes=(0, 2, 3, 1))
    return x, int(block_size), data_format


def _unblocks(y, data_format):
    return _as_face(y if data_format == "channels_last" else apply("transpose", y, axes=(0, 3, 1, 2)))


def depth_to_space(x, block_size, data_format="channels_last"):
    """Channels moved into block_size x block_size spatial blocks (TensorFlow's order)."""
    x, b, data_format = _blocks(x, block_size, data_format, "depth_to_space")
    n, h, w, c = x.shape
    if c % (b * b):
        raise ValueError(f"Dimension size must be evenly divisible by {b * b} but is {c}")
    y = apply("reshape", x, shape=(n, h, w, b, b, c // (b * b)))
    y = apply("transpose", y, axes=(0, 1, 3, 2, 4, 5))
    return _unblocks(apply("reshape", y, shape=(n, h * b, w * b, c // (b * b))), data_format)


def space_to_depth(x, block_size, data_format="channels_last"):
    """block_size x block_size spatial blocks moved into the channels (TensorFlow's order)."""
    x, b, data_format = _blocks(x, block_size, data_format, "space_to_depth")
    n, h, w, c = x.shape
    if h % b or w % b:
        raise ValueError(f"Image width {w} and height {h} should be divisible by block_size: {b}")
    y = apply("reshape", x, shape=(n, h // b, b, w // b, b, c))
    y = apply("transpose", y, axes=(0, 1, 3, 2, 4, 5))
    return _unblocks(apply("reshape", y, shape=(n, h // b, w // b, b * b * c)), data_format)


def _in_float32(x):
    """x and whether it was rounded up from a half format (Keras computes normalizations in float32 at least)."""
    x = _float(x)
    if str(x.dtype) == "float32":
        return x, None
    return apply("cast", x, _out=format_of("float32")), x.fmt


def _back(y, fmt):
    return _as_face(y if fmt is None else apply("cast", y, _out=fmt))


def rms_normalization(x, scale=None, axis=-1, epsilon=None):
    """x * rsqrt(mean(x**2, axis) + epsilon) * scale, in float32, rounded back to x's dtype."""
    x, fmt = _in_float32(x)
    epsilon = EPSILON if epsilon is None else epsilon
    if x.ndim == 0:
        x = apply("reshape", x, shape=(1,))
    axis = tuple(sorted(axis)) if isinstance(axis, (tuple, list)) else axis
    rrms = apply("rsqrt", apply("add", apply("mean", apply("mul", x, x), axis=axis, keepdims=True), epsilon))
    out = apply("mul", x, rrms)
    if scale is not None:
        out = apply("mul", out, convert_to_tensor(scale, "float32"))
    return _back(out, fmt)


def layer_normalization(x, gamma=None, beta=None, axis=-1, epsilon=None, rms_scaling=False):
    """(x - mean) * rsqrt(var + epsilon) * gamma + beta over axis, in float32, rounded back to x's dtype."""
    x, fmt = _in_float32(x)
    epsilon = EPSILON if epsilon is None else epsilon
    axes = _axes(axis, x.ndim)
    shape = [1] * x.ndim
    for a in axes:
        shape[a] = x.shape[a]

    def laid(v):
        v = convert_to_tensor(v, "float32")
        return v if v.ndim == x.ndim or axes == (x.ndim - 1,) else apply("reshape", v, shape=tuple(shape))
    if rms_scaling:
        mean = apply("mean", x, axis=axes, keepdims=True)
        d = apply("sub", x, mean)
        out = apply("mul", x, apply("rsqrt", apply("add", apply("mean", apply("mul", d, d), axis=axes,
                                                                         keepdims=True), epsilon)))
        return _back(out if gamma is None else apply("mul", out, laid(gamma)), fmt)
    mean, var = moments(x, axes, keepdims=True)
    inv = apply("rsqrt", apply("add", var, epsilon))
    if gamma is not None:
        inv = apply("mul", inv, laid(gamma))
    res = apply("mul", apply("neg", mean), inv)
    if beta is not None:
        res = apply("add", res, laid(beta))
    return _back(apply("add", apply("mul", x, inv), res), fmt)


def dot_product_attention(query, key, value, bias=None, mask=None, scale=None, is_causal=False,
                          flash_attention=None, attn_logits_soft_cap=None):
    """softmax(q k^T * scale + bias, masked) v over (batch, seq, heads, head_dim) tensors; the softmax in
    float32 at least; grouped key/value heads repeated."""
    if flash_attention:
        raise ValueError("Flash attention is not supported in tensorflow backend.")
    q, k, v = _float(query), _float(key), _float(value)
    if q.ndim != 4:
        raise ValueError(f"`dot_product_attention` only supports 4D inputs. Received: query.shape={q.shape}, "
                         f"key.shape={k.shape}, value.shape={v.shape}.")
    heads, kv_heads = q.shape[2], k.shape[2]
    if heads > kv_heads > 1:
        idx = np.repeat(np.arange(kv_heads), heads // kv_heads)
        k, v = k[:, :, idx], v[:, :, idx]
    scale = 1.0 / math.sqrt(k.shape[-1]) if scale is None else float(scale)
    qt = apply("transpose", q, axes=(0, 2, 1, 3))                  # B N T H
    kt = apply("transpose", k, axes=(0, 2, 3, 1))                  # B N H S
    logits = apply("matmul", qt, kt)
    f32 = format_of("float32")
    logits = apply("mul", apply("cast", logits, _out=f32) if logits.fmt != f32 else logits, scale)
    if bias is not None:
        logits = apply("add", logits, _float(bias))
    if mask is not None or is_causal:
        keep = np.ones(logits.shape, bool)
        if mask is not None:
            keep = keep & _int_array(mask).astype(bool)
        if is_causal:
            keep = keep & np.tril(np.ones(logits.shape[-2:], bool))
        logits = apply("where", convert_to_tensor(keep), logits, 3.38953e38 * -0.7)
    probs = apply("softmax", logits, axis=-1)
    probs = apply("cast", probs, _out=k.fmt) if k.fmt != f32 else probs
    out = apply("matmul", probs, apply("transpose", v, axes=(0, 2, 1, 3)))    # B N T H
    return _as_face(apply("transpose", out, axes=(0, 2, 1, 3)))
