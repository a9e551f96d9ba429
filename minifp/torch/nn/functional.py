"""torch.nn.functional: PyTorch's signatures, checks and error texts; every number computed by one engine op
(named after PyTorch's, so autocast's lists apply to it by name) or by a composition of them."""
from __future__ import annotations

import functools
import inspect
import math
import numbers
import warnings

import numpy as np

from ...engine import (apply, array_module, autocast_scope, current_autocast, device_numerics, made_like, rng,
    storage, Tensor as _EngineTensor, float32 as _FLOAT32, to_numpy, update_running_stats)
from .. import _functions, _tensor
from .._methods import _in_place
from .._reductions import dist

__all__ = ["linear", "conv2d", "relu", "relu_", "gumbel_softmax", "relu6", "hardtanh", "gelu", "silu", "leaky_relu", "elu", "selu", "softplus",
           "mish", "hardswish", "hardsigmoid", "prelu", "glu", "sigmoid", "tanh", "softmax",
           "log_softmax", "dropout", "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "layer_norm", "group_norm", "batch_norm", "max_pool2d", "avg_pool2d",
           "adaptive_avg_pool2d", "embedding", "scaled_dot_product_attention", "pad_for_same", "conv1d",
           "conv_transpose2d", "instance_norm", "rms_norm", "pixel_shuffle", "pixel_unshuffle", "interpolate"]

BCE_UNSAFE = ("torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
              "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
              "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
              "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
              "safe to autocast.")


# -- helpers ----------------------------------------------------------------------------------------


def _autocast_on(x):
    """The Autocast that applies to tensor x now, or None."""
    a = current_autocast()
    return a if a is not None and a.device == x.device else None


def _listed(name, x):
    """Whether autocast names op `name` (in either list) for x's device now."""
    a = _autocast_on(x)
    return a is not None and (name in a.lower or name in a.float32)


def _input_format(name, x):
    """The output format for ops PyTorch runs in the input's dtype (mixed float32 parameters accepted), unless
    autocast lists the op: then None, and the dispatcher applies the list."""
    return None if _listed(name, x) else x.fmt


def _must_be_tensor(x, arg):
    if not isinstance(x, _EngineTensor):
        raise TypeError(f"{arg} (Tensor) must be Tensor, not {type(x).__name__}")
    return x


def _pair(v, arg="kernel_size"):
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return (int(v), int(v))
    if isinstance(v, (tuple, list)) and len(v) in (1, 2) and all(isinstance(i, numbers.Integral) for i in v):
        return (int(v[0]), int(v[-1]))
    raise TypeError(f"{arg} must be an int or a tuple of two ints, got {v!r}")


def _reduction(reduction, size_average=None, reduce=None):
    """PyTorch's reduction from the new argument or the deprecated pair."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        warnings.warn("size_average and reduce args will be deprecated, please use reduction='"
                      + ("none" if not reduce else "mean" if size_average else "sum") + "' instead.")
        return "none" if not reduce else "mean" if size_average else "sum"
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _array_for(x, t):
    """A float tensor (or array) as float32 values on x's device, for a parameter of an op (weights of losses)."""
    if t is None:
        return None
    vals = t.float32() if isinstance(t, _EngineTensor) else np.asarray(t, np.float32)
    return array_module(storage(x)).asarray(vals)


def _type_name(t):
    return _tensor._type_name(t)


def _dim_for_softmax(name, ndim):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as "
                  f"an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


# -- products ------------------------------------------------------------------------------------------


def linear(input, weight, bias=None):
    """input @ weight.T + bias as one op: under autocast the bias joins the float32 sum before the one rounding."""
    _must_be_tensor(input, "linear(): argument 'input'")
    _must_be_tensor(weight, "linear(): argument 'weight'")
    if not input.ndim or not weight.ndim:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are {input.ndim}D and "
                           f"{weight.ndim}D")
    if storage(input).shape[-1] != storage(weight).shape[-1]:      # (storage's shape: a plain tuple)
        rows = int(np.prod(input.shape[:-1])) if input.ndim > 1 else 1
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{input.shape[-1]} and "
                           f"{weight.shape[-1]}x{weight.shape[0]})")
    _tensor.check_same_dtype(input, weight, bias)
    return apply("linear", input, weight, bias)


def pad_for_same(kernel, dilation):
    """'same' padding per spatial dim: the total d*(k-1), the odd one extra on the bottom/right (PyTorch's)."""
    return tuple((d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for k, d in zip(kernel, dilation))


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution as one engine op (bias fused, before the one rounding)."""
    _must_be_tensor(input, "conv2d(): argument 'input'")
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
        if padding == "same" and stride != (1, 1):
            raise ValueError("padding='same' is not supported for strided convolutions")
        padding = pad_for_same(weight.shape[2:], dilation) if padding == "same" else (0, 0)
    elif not (isinstance(padding, tuple) and padding and isinstance(padding[0], tuple)):
        padding = _pair(padding, "padding")
    unbatched = input.ndim == 3
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: "
                           f"{list(input.shape)}")
    x = input.reshape((1,) + tuple(input.shape)) if unbatched else input
    if x.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[1] * groups} channels, but got {x.shape[1]} "
                           f"channels instead")
    if _autocast_on(x) is None and (x.fmt != weight.fmt or bias is not None and bias.fmt != weight.fmt):
        other = weight if x.fmt != weight.fmt else bias
        raise RuntimeError(f"Input type ({_type_name(x)}) and {'weight' if other is weight else 'bias'} type "
                           f"({_type_name(other)}) should be the same")
    out = apply("conv2d", x, weight, bias, stride=stride, padding=padding, dilation=dilation, groups=groups)
    return out.reshape(tuple(out.shape[1:])) if unbatched else out


# -- activations -------------------------------------------------------------------------------------


def _in_place_able(fn):
    """fn(input, ..., inplace=False) whose inplace=True writes the result into input and returns input (PyTorch's
    in-place activations and dropouts; a leaf that requires grad is refused, as every in-place op)."""
    signature = inspect.signature(fn)
    position = list(signature.parameters).index("inplace")

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if not kwargs.get("inplace", len(args) > position and args[position]):
            return fn(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        bound.arguments["inplace"] = False
        return _in_place(bound.args[0], lambda t: fn(t, *bound.args[1:], **bound.kwargs))
    return wrapped


def relu(input, inplace=False):
    if inplace:         # (written out, not _in_place_able: relu is on every step's path)
        return _in_place(input, lambda t: apply("relu", t))
    return apply("relu", input)


def relu_(input):
    return relu(input, inplace=True)


@_in_place_able
def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return apply("hardtanh", input, min_val=float(min_val), max_val=float(max_val))


@_in_place_able
def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0)


def gelu(input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return apply("gelu", input, approximate=approximate)


@_in_place_able
def silu(input, inplace=False):
    return apply("silu", input)


@_in_place_able
def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where x > 0, else negative_slope * x (one op)."""
    return apply("leaky_relu", input, negative_slope=float(negative_slope))


@_in_place_able
def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha * expm1(x) (one op)."""
    return apply("elu", input, alpha=float(alpha))


@_in_place_able
def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalising constants (one op)."""
    return apply("selu", input)


def softplus(input, beta=1.0, threshold=20.0):
    """log1p(exp(beta * x)) / beta, x itself where beta * x > threshold (one op)."""
    return apply("softplus", input, beta=float(beta), threshold=float(threshold))


@_in_place_able
def mish(input, inplace=False):
    """x * tanh(softplus(x)) (one op)."""
    return apply("mish", input)


@_in_place_able
def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6 (one op)."""
    return apply("hardswish", input)


@_in_place_able
def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6 (one op)."""
    return apply("hardsigmoid", input)


def prelu(input, weight):
    """x where x > 0, else weight * x, weight along dim 1 (one value, or one per channel)."""
    _must_be_tensor(input, "prelu(): argument 'input'")
    _must_be_tensor(weight, "prelu(): argument 'weight'")
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    n = int(np.prod(weight.shape))
    channels = input.shape[1] if input.ndim >= 2 else 1
    if n != 1 and n != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {n} "
                           f"and channel size = {channels}.")
    if n != 1 and input.ndim >= 2:      # the per-channel weight lines up with dim 1
        weight = apply("reshape", weight, shape=(n,) + (1,) * (input.ndim - 2))
    elif n == 1:                        # one value: the result keeps input's shape (a 0-d input stays 0-d)
        weight = apply("reshape", weight, shape=())
    # where only selects: the product is the one rounding of each negative element.
    return apply("where", apply("gt", input, 0.0), input, apply("mul", weight, input))


def glu(input, dim=-1):
    """a * sigmoid(b) for the halves a, b of input along dim."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = _tensor._dim(dim, input.ndim)
    size = input.shape[d]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {size}")
    half = [slice(None)] * d
    a = apply("getitem", input, index=tuple(half + [slice(0, size // 2)]))
    b = apply("getitem", input, index=tuple(half + [slice(size // 2, size)]))
    return apply("mul", a, apply("sigmoid", b))


def sigmoid(input):
    return apply("sigmoid", input)


def tanh(input):
    return apply("tanh", input)


def _softmax_in(op, input, dim, dtype):
    """softmax or log_softmax, in `dtype` where one is given: autocast's float32 rule then yields to it (PyTorch's
    fp32_set_opt_dtype), as it does for cross_entropy, which asks for its input's own dtype."""
    dim = _tensor._dim(_dim_for_softmax(op, input.ndim) if dim is None else dim, input.ndim)
    if dtype is None:
        return apply(op, input, axis=dim)
    x = input if dtype == input.dtype else input.to(dtype)
    return apply(op, x, axis=dim, _out=x.fmt)       # the format named: no autocast rule applies


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _softmax_in("softmax", input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _softmax_in("log_softmax", input, dim, dtype)


@_in_place_able
def dropout(input, p=0.5, training=True, inplace=False):
    """Each element kept with probability 1 - p and scaled by 1 / (1 - p) (one op: one rounding)."""
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    xp = array_module(storage(input))
    keep = xp.asarray(rng().random(input.shape) >= p)
    return apply("dropout", input, mask=keep, scale=0.0 if p == 1 else 1 / (1 - p))


# -- normalisation ---------------------------------------------------------------------------------------


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape or input.ndim < len(shape):
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    return apply("layer_norm", input, weight, bias, normalized_ndim=len(shape), eps=float(eps),
                 _out=_input_format("layer_norm", input))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    if input.shape[1] % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    return apply("group_norm", input, weight, bias, num_groups=num_groups, eps=float(eps),
                 _out=_input_format("group_norm", input))


def check_channels(input, running_mean, running_var, weight=None, bias=None):
    """PyTorch's check that every per-channel tensor holds one value per channel of input."""
    channels = input.shape[1] if input.ndim > 1 else 1
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and storage(t).size != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {storage(t).size}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Batch statistics in training (updating the running ones in place, unbiased variance, in float64 as
    PyTorch's CPU kernel accumulates), the running ones otherwise."""
    if storage(input).size == 0:        # PyTorch returns an empty result before any check or update
        return input * 1.0
    check_channels(input, running_mean, running_var, weight, bias)
    axes = (0,) + tuple(range(2, input.ndim))
    if training:
        n = int(np.prod([input.shape[a] for a in axes]))
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{_tensor.Size(input.shape)!r}")
        if running_mean is not None:        # in float64, as PyTorch's CPU kernel accumulates; unbiased variance
            update_running_stats(running_mean, running_var, input, 1 - float(momentum), float(momentum),
                                 np.float64, ddof=1)
        stats = {}
    else:
        stats = {"mean": running_mean.float32(), "var": running_var.float32()}
    return apply("batch_norm", input, weight, bias, eps=float(eps), _out=_input_format("batch_norm", input),
                 **stats)


# -- pooling ----------------------------------------------------------------------------------------------


def _batched(input, name):
    if input.ndim not in (3, 4):
        raise RuntimeError(f"{name}: Expected 3D or 4D (batch mode) tensor for input, but got: "
                           f"{list(input.shape)}")
    return (input.reshape((1,) + tuple(input.shape)), True) if input.ndim == 3 else (input, False)


def _unbatched(out, was):
    return out.reshape(tuple(out.shape[1:])) if was else out


def _check_pooled_size(x, k, s, p, d, ceil_mode):
    """PyTorch's error for a window larger than the (padded) input: no output position."""
    c, h, w = x.shape[1:]
    if 0 in s:
        raise RuntimeError("stride should not be zero")
    if min(s) < 0:
        raise RuntimeError(f"stride should be greater than zero, but got dH: {s[0]} dW: {s[1]}")
    out = []
    for size, ki, si, pi, di in zip((h, w), k, s, p, d):
        span = size + 2 * pi - di * (ki - 1) - 1
        n = (-(-span // si) if ceil_mode else span // si) + 1
        if ceil_mode and (n - 1) * si >= size + pi:     # the last window must start inside the input
            n -= 1
        out.append(n)
    if min(out) < 1:
        raise RuntimeError(f"Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{out[0]}x{out[1]}). "
                           f"Output size is too small")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    if return_indices:
        return _max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    k = _pair(kernel_size)
    s = _pair(stride, "stride") if stride not in (None, ()) else k
    p, d = _pair(padding, "padding"), _pair(dilation, "dilation")
    for i in range(2):
        if p[i] > (d[i] * (k[i] - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p[i]}, "
                               f"kernel_size={k[i]} and dilation={d[i]}")
    x, was = _batched(input, "max_pool2d")
    _check_pooled_size(x, k, s, p, d, ceil_mode)
    return _unbatched(apply("max_pool2d", x, kernel_size=k, stride=s, padding=p, dilation=d,
                            ceil_mode=bool(ceil_mode)), was)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    k = _pair(kernel_size)
    s = _pair(stride, "stride") if stride not in (None, ()) else k
    p = _pair(padding, "padding")
    if p[0] > k[0] // 2 or p[1] > k[1] // 2:
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got padW = {p[1]}, "
                           f"padH = {p[0]}, kW = {k[1]}, kH = {k[0]}")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    x, was = _batched(input, "avg_pool2d")
    _check_pooled_size(x, k, s, p, (1, 1), ceil_mode)
    return _unbatched(apply("avg_pool2d", x, kernel_size=k, stride=s, padding=p, ceil_mode=bool(ceil_mode),
                            count_include_pad=bool(count_include_pad), divisor_override=divisor_override), was)


def adaptive_avg_pool2d(input, output_size):
    size = _adaptive_size(output_size, 2, "adaptive_avg_pool2d()")
    if input.ndim <= 2:
        raise ValueError("Input dimension should be at least 3")
    x, was = _batched(input, "adaptive_avg_pool2d")
    size = tuple(x.shape[2 + i] if s is None else int(s) for i, s in enumerate(size))
    if size == (1, 1):          # the common global average: one reduction, no bins
        return _unbatched(apply("mean", x, axis=(2, 3), keepdims=True, _out=x.fmt), was)
    return _unbatched(apply("adaptive_avg_pool2d", x, output_size=size), was)


# -- embedding -------------------------------------------------------------------------------------------------


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding(): max_norm, scale_grad_by_freq and sparse are not supported by "
                                  "minifp.torch")
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    idx = storage(input) if isinstance(input, _EngineTensor) else np.asarray(input)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {getattr(input, 'dtype', idx.dtype)} instead (while checking "
                           f"arguments for embedding)")
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= weight.shape[0]):
        raise IndexError("index out of range in self")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return apply("embedding", weight, indices=idx, padding_idx=padding_idx)


# -- losses -----------------------------------------------------------------------------------------------------


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    reduction = _reduction(reduction, size_average, reduce)
    t = storage(target) if isinstance(target, _EngineTensor) else np.asarray(target)
    _check_target(input, target, t)
    x = input
    if input.ndim == 1:
        x, t = input.reshape(1, -1), t.reshape(1)
    classes = storage(x).shape[1]
    _check_class_weight(weight, classes)
    in_range = t.size == 0 or 0 <= t.min() and t.max() < classes     # (the common case, in two passes)
    bad = None if in_range else (t != ignore_index) & ((t < 0) | (t >= classes))
    if bad is not None and bad.any():
        raise IndexError(f"Target {int(t[bad].reshape(-1)[0])} is out of bounds.")
    out = apply("nll_loss", x, target=t, weight=_array_for(x, weight), ignore_index=ignore_index,
                reduction=reduction)
    return out.reshape(()) if input.ndim == 1 and reduction == "none" else out


def _check_target(input, target, t):
    """PyTorch's refusals of class-index targets, in its order: the target's rank, the batch size, the dtype (Long
    or Byte; Long only for spatial inputs, whose kernel reads no other), the other sizes."""
    shape = storage(input).shape
    if len(shape) == 2 and t.ndim == 1 and t.shape[0] == shape[0] and t.dtype == np.int64:
        return                                      # (the common case, at once)
    name = _tensor._type_name(target) if isinstance(target, _EngineTensor) else str(t.dtype)

    def dtype(long_only=False):
        if t.dtype not in (np.int64, np.uint8):
            raise RuntimeError(f"expected target dtype to be Long or Byte, but got {name}")
        if long_only and t.dtype != np.int64:
            raise RuntimeError(f"expected scalar type Long but found {name}")
    if len(shape) == 1:
        dtype()
        if t.ndim > 1 or t.size != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {t.size}")
        return
    if len(shape) == 2 and t.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if t.shape[:1] != shape[:1]:
        raise ValueError(f"Expected input batch_size ({shape[0]}) to match target batch_size "
                         f"({t.shape[0] if t.ndim else 0}).")
    if len(shape) == 2:
        return dtype()
    if len(shape) != 4:
        if t.shape != shape[:1] + shape[2:]:
            raise RuntimeError(f"Expected target size {list(shape[:1] + shape[2:])}, got {list(t.shape)}")
        return dtype(long_only=True)
    dtype()         # (the spatial kernel's words for 4-D inputs)
    if t.ndim != 3:
        raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got targets of dimension: "
                           f"{t.ndim}")
    if t.shape != shape[:1] + shape[2:]:
        raise RuntimeError(f"size mismatch (got input: {list(shape)} , target: {list(t.shape)}")
    dtype(long_only=True)


def _check_class_weight(weight, n_classes):
    if weight is not None and int(np.prod(weight.shape)) != n_classes:
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes or no classes but "
                           f"got weight tensor of shape: {list(weight.shape)}")


def _class_dim(x):
    return 0 if x.ndim == 1 else 1


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """log_softmax then nll_loss (PyTorch's decomposition); label smoothing and probability targets as
    LossNLL.cpp computes them."""
    reduction = _reduction(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    x = input
    if _listed("cross_entropy", x) and x.fmt != _tensor.float32.fmt:
        x = x.astype(_tensor.float32.fmt)             # CPU autocast lists cross_entropy_loss in float32
    dim = _class_dim(x)
    n_classes = storage(x).shape[dim]
    if isinstance(target, _EngineTensor) and storage(target).shape != storage(input).shape:
        if target.fmt is not None:      # class indices of a float dtype: nll_loss's refusal, before the softmax
            _check_target(input, target, storage(target))
    elif isinstance(target, _EngineTensor) and target.fmt is None:      # (the input's shape: class probabilities)
        raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                           f"{_tensor._type_name(target)}")
    lp = _softmax_in("log_softmax", x, dim, x.dtype)  # LossNLL.cpp: in the input's dtype, whatever autocast says
    if isinstance(target, _EngineTensor) and target.fmt is not None:
        return _soft_cross_entropy(lp, target, weight, reduction, label_smoothing, ignore_index, dim)
    loss = nll_loss(lp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing <= 0:
        return loss
    t = storage(target) if isinstance(target, _EngineTensor) else np.asarray(target)
    keep = t != ignore_index
    wshape = (-1,) + (1,) * (lp.ndim - dim - 1)
    weighted = lp if weight is None else apply("mul", lp, _array_for(lp, weight).reshape(wshape))
    smooth = apply("neg", apply("sum", weighted, axis=dim))
    smooth = apply("where", made_like(lp, array_module(storage(lp)).asarray(keep), None), smooth, 0.0)
    if reduction == "mean":
        if weight is None:
            denom = float(keep.sum())
        else:
            w = np.asarray(weight.float32() if isinstance(weight, _EngineTensor) else weight, np.float64)
            denom = float((w[np.where(keep, t, 0)] * keep).sum())
        smooth = apply("div", apply("sum", smooth), denom)
    elif reduction == "sum":
        smooth = apply("sum", smooth)
    eps = float(label_smoothing)
    return apply("add", apply("mul", loss, 1 - eps), apply("mul", smooth, eps / n_classes))


def _soft_cross_entropy(lp, target, weight, reduction, label_smoothing, ignore_index, dim):
    """Cross entropy against class probabilities (a float target of the input's shape)."""
    if ignore_index != -100:
        raise RuntimeError("ignore_index is not supported for floating point target")
    if tuple(target.shape) != tuple(lp.shape):
        raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                           f"{target.dtype}" if target.fmt is None else
                           f"Expected target size {list(lp.shape)}, got {list(target.shape)}")
    n_classes = lp.shape[dim]
    _check_class_weight(weight, n_classes)
    if label_smoothing > 0:
        target = apply("add", apply("mul", target, 1 - label_smoothing), label_smoothing / n_classes)
    prod = apply("mul", lp, target)
    if weight is not None:
        prod = apply("mul", prod, _array_for(lp, weight).reshape((-1,) + (1,) * (lp.ndim - dim - 1)))
    loss = apply("neg", apply("sum", prod, axis=dim))
    if reduction == "none":
        return loss
    total = apply("sum", loss)
    return total if reduction == "sum" else apply("div", total, float(storage(lp).size // n_classes))


def _broadcast_shape(a, b):
    """The shape a and b broadcast to, or PyTorch's error naming the first dim (from the right) that clashes."""
    return _tensor.broadcast_shape(tuple(a.shape), tuple(b.shape))


def _same_size(input, target):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({_tensor.Size(target.shape)!r}) that is different to the input size "
                      f"({_tensor.Size(input.shape)!r}). This will likely lead to incorrect results due to broadcasting. "
                      f"Please ensure they have the same size.", stacklevel=3)
        _broadcast_shape(input, target)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _reduction(reduction, size_average, reduce)
    _same_size(input, target)
    return apply("mse_loss", input, target, reduction=reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(reduction, size_average, reduce)
    _same_size(input, target)
    return apply("l1_loss", input, target, reduction=reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({_tensor.Size(target.shape)!r}) must be the same as input size "
                         f"({_tensor.Size(input.shape)!r})")
    return apply("binary_cross_entropy_with_logits", input, target, weight=_array_for(input, weight),
                 pos_weight=_array_for(input, pos_weight), reduction=reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(reduction, size_average, reduce)
    a = _autocast_on(input)
    if a is not None and input.device == "cuda":
        raise RuntimeError(BCE_UNSAFE)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({_tensor.Size(target.shape)!r}) that is different to the input size "
                         f"({_tensor.Size(input.shape)!r}) is deprecated. Please ensure they have the same size.")
    v = input.float32()
    if bool(array_module(v).any((v < 0) | (v > 1))):
        raise RuntimeError("all elements of input should be between 0 and 1")
    tv = target.float32()
    if bool(array_module(tv).any((tv < 0) | (tv > 1))):
        raise RuntimeError("all elements of target should be between 0 and 1")
    return apply("binary_cross_entropy", input, target, weight=_array_for(input, weight), reduction=reduction)


# -- attention ------------------------------------------------------------------------------------------------------


def _float_mask(mask, like, attend_when_true=True):
    """A bool mask (True = attend, or = ignore) as 0 / -inf added to the scores; a float mask as it is."""
    if mask.fmt is not None:
        return mask
    xp = array_module(storage(mask))
    allowed = storage(mask) if attend_when_true else ~storage(mask)
    return made_like(like, xp.where(allowed, 0.0, -xp.inf).astype(np.float32), _tensor.float32.fmt)


def _swap_last(t):
    axes = list(range(t.ndim))
    axes[-1], axes[-2] = axes[-2], axes[-1]
    return apply("transpose", t, axes=tuple(axes))


def _fused_attention(q, k, v, attn_mask, dropout_p, enable_gqa):
    """Whether PyTorch 2.11 would run cuDNN's (or the flash) kernel here and the device has a model of it: half
    inputs of one format, 4-d, a head dimension cuDNN takes (a multiple of 8 up to 128, as recorded), no mask but
    is_causal, no dropout, a backend switch on (torch.backends.cuda; sdpa_kernel). Elsewhere: the math path."""
    from ..backends import cuda as backends
    if device_numerics(q.device).attention == "exact" or attn_mask is not None or dropout_p > 0 or enable_gqa:
        return False
    if not (backends.cudnn_sdp_enabled() or backends.flash_sdp_enabled()):
        return False
    d = q.shape[-1]
    return (q.fmt is k.fmt is v.fmt and q.fmt.name in ("float16", "bfloat16") and q.ndim == k.ndim == v.ndim == 4
            and k.shape[-1] == v.shape[-1] == d and d % 8 == 0 and d <= 128)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q k^T * scale + mask) v, as PyTorch's math path: sqrt(scale) applied to q and to k. Under autocast
    (where the op is listed) q, k and v are cast once and the inside runs in that dtype."""
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                           "is_causal=True")
    a = _autocast_on(query)
    if a is not None and "scaled_dot_product_attention" in a.lower:
        query, key, value = (t.astype(a.fmt) if t.fmt != a.fmt else t for t in (query, key, value))
    if _fused_attention(query, key, value, attn_mask, dropout_p, enable_gqa):
        with autocast_scope(None):
            return apply("attention", query, key, value, causal=bool(is_causal), scale=scale)
    with autocast_scope(None):
        sf = math.sqrt(1 / math.sqrt(query.shape[-1]) if scale is None else scale)
        scores = apply("matmul", apply("mul", query, sf), apply("mul", _swap_last(key), sf))
        L, S = query.shape[-2], key.shape[-2]
        if is_causal:
            attn_mask = _tensor.tensor(np.tril(np.ones((L, S), bool)), device=query.device)
        if attn_mask is not None:
            scores = apply("add", scores, _float_mask(attn_mask, scores), _out=scores.fmt)
        attn = apply("softmax", scores, axis=-1)
        if dropout_p > 0:
            attn = dropout(attn, dropout_p, True)
        return apply("matmul", attn, value)


# -- issue 32's breadth: 1-d and transposed convolution, instance and RMS norm, resizing ------------------------------


def _single(v, arg):
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return (int(v),)
    if isinstance(v, (tuple, list)) and len(v) == 1 and isinstance(v[0], numbers.Integral):
        return (int(v[0]),)
    raise TypeError(f"{arg} must be an int or a tuple of one int, got {v!r}")


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution: the 2-D op over a height of one (one rounding, the bias fused)."""
    _must_be_tensor(input, "conv1d(): argument 'input'")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: "
                           f"{list(input.shape)}")
    (s,), (d,) = _single(stride, "stride"), _single(dilation, "dilation")
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
        if padding == "same" and s != 1:
            raise ValueError("padding='same' is not supported for strided convolutions")
        pad = ((0, 0),) + pad_for_same(weight.shape[2:], (d,)) if padding == "same" else (0, 0)
    else:
        pad = (0, _single(padding, "padding")[0])
    x = apply("reshape", input, shape=tuple(input.shape[:-1]) + (1, input.shape[-1]))
    w = apply("reshape", weight, shape=tuple(weight.shape[:2]) + (1, weight.shape[2]))
    out = conv2d(x, w, bias, (1, s), pad, (1, d), groups)
    return apply("reshape", out, shape=tuple(out.shape[:-2]) + (out.shape[-1],))


def _dilate(x, axis, s):
    """x with s - 1 zeros between neighbours along axis (the input of a strided transposed convolution)."""
    if s == 1:
        return x
    shape = tuple(x.shape)
    n = shape[axis]
    zeros = _tensor.zeros(*(shape[:axis + 1] + (s - 1,) + shape[axis + 1:]), dtype=x.dtype, device=x.device)
    spread = apply("concatenate", apply("reshape", x, shape=shape[:axis + 1] + (1,) + shape[axis + 1:]), zeros,
                   axis=axis + 1)
    flat = apply("reshape", spread, shape=shape[:axis] + (n * s,) + shape[axis + 1:])
    return apply("getitem", flat, index=(slice(None),) * axis + (slice(0, (n - 1) * s + 1),))


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The transpose (gradient) of conv2d: the input spread by stride, then one convolution with the flipped,
    transposed kernel (one rounding, the bias fused)."""
    _must_be_tensor(input, "conv_transpose2d(): argument 'input'")
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of "
                           f"size: {list(input.shape)}")
    unbatched = input.ndim == 3
    x = input.reshape((1,) + tuple(input.shape)) if unbatched else input
    stride, padding, out_pad, dilation = (_pair(stride, "stride"), _pair(padding, "padding"),
                                          _pair(output_padding, "output_padding"), _pair(dilation, "dilation"))
    cin, cout_g, kh, kw = weight.shape
    if x.shape[1] != cin:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input{list(x.shape)} "
                           f"to have {cin} channels, but got {x.shape[1]} channels instead")
    for i in (0, 1):
        x = _dilate(x, 2 + i, stride[i])
    # Each side pads by d*(k-1) - p; a negative amount crops instead.
    pads = []
    for i, k in enumerate((kh, kw)):
        before, after = dilation[i] * (k - 1) - padding[i], dilation[i] * (k - 1) - padding[i] + out_pad[i]
        if before < 0 or after < 0:
            n = x.shape[2 + i]
            index = (slice(None),) * (2 + i) + (slice(max(-before, 0), n - max(-after, 0)),)
            x = apply("getitem", x, index=index)
        pads.append((max(before, 0), max(after, 0)))
    w = apply("reshape", weight, shape=(groups, cin // groups, cout_g, kh, kw))
    w = apply("reshape", apply("transpose", w, axes=(0, 2, 1, 3, 4)), shape=(groups * cout_g, cin // groups, kh, kw))
    w = apply("getitem", w, index=(slice(None), slice(None), slice(None, None, -1), slice(None, None, -1)))
    out = conv2d(x, w, bias, 1, tuple(pads), dilation, groups)
    return out.reshape(tuple(out.shape[1:])) if unbatched else out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Each (sample, channel) normalised over its own positions (use_input_stats), or by the running statistics;
    those, when given, are updated in place with the mean over the batch of the instances' statistics."""
    if use_input_stats and running_mean is None and running_var is None:
        # One group per channel. PyTorch runs it as batch_norm over (1, N*C, ...), which no autocast list names:
        # the input's dtype, never group_norm's float32 entry.
        return apply("group_norm", input, weight, bias, num_groups=input.shape[1], eps=float(eps), _out=input.fmt)
    return _instance_norm_with_stats(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def _instance_norm_with_stats(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps):
    """PyTorch's instance_norm: batch_norm over (1, N*C, ...) with every per-channel tensor repeated N times, then
    each running statistic the mean of its N updated copies."""
    b, c = input.shape[:2]
    x = apply("reshape", input, shape=(1, b * c) + tuple(input.shape[2:]))

    def repeated(t):
        return None if t is None else apply("concatenate", *([t] * b), axis=0)

    def copies(t):
        return None if t is None else _tensor.tensor(np.tile(t.float32(), b), device=t.device)
    means, variances = copies(running_mean), copies(running_var)
    out = batch_norm(x, means, variances, repeated(weight), repeated(bias), use_input_stats, momentum, eps)
    for running, updated in ((running_mean, means), (running_var, variances)):
        if running is not None and use_input_stats:
            running.copy_(updated.float32().reshape(b, c).mean(0, dtype=np.float32))
    return apply("reshape", out, shape=tuple(input.shape))


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x**2) + eps) * weight over the trailing normalized_shape dims, in float32, rounded once into
    the input's dtype (PyTorch's composite computes in float32 and casts back)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape or input.ndim < len(shape):
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = []")
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{list(weight.shape)} and normalized_shape = {list(shape)}")
    eps = _functions.finfo(input.dtype).eps if eps is None else eps
    x = input.float()
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    ms = apply("mean", apply("mul", x, x), axis=axes, keepdims=True)
    out = apply("mul", x, apply("div", 1.0, apply("sqrt", apply("add", ms, float(eps)))))
    if weight is not None:
        out = apply("mul", out, weight.float())
    return out.to(input.dtype)


def pixel_shuffle(input, upscale_factor):
    """(*, C * r**2, H, W) -> (*, C, H * r, W * r)."""
    r = upscale_factor
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    lead, n = tuple(lead), len(lead)
    x = apply("reshape", input, shape=lead + (c // (r * r), r, r, h, w))
    x = apply("transpose", x, axes=tuple(range(n)) + tuple(n + a for a in (0, 3, 1, 4, 2)))
    return apply("reshape", x, shape=lead + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H * r, W * r) -> (*, C * r**2, H, W), pixel_shuffle's inverse."""
    r = downscale_factor
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)="
                           f"{h} is not divisible by {r}" if h % r else
                           f"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)="
                           f"{w} is not divisible by {r}")
    lead, n = tuple(lead), len(lead)
    x = apply("reshape", input, shape=lead + (c, h // r, r, w // r, r))
    x = apply("transpose", x, axes=tuple(range(n)) + tuple(n + a for a in (0, 2, 4, 1, 3)))
    return apply("reshape", x, shape=lead + (c * r * r, h // r, w // r))


def _resize_plan(input, size, scale_factor):
    """(output sizes, scales in -> out per spatial dim) as PyTorch computes them (scale 1/scale_factor when given)."""
    spatial = tuple(input.shape[2:])
    if (size is None) == (scale_factor is None):
        raise ValueError("either size or scale_factor should be defined" if size is None else
                         "only one of size or scale_factor should be defined")
    if size is not None:
        out = (size,) * len(spatial) if isinstance(size, numbers.Integral) else tuple(size)
        return out, tuple(i / o for i, o in zip(spatial, out))
    factors = (scale_factor,) * len(spatial) if isinstance(scale_factor, numbers.Real) else tuple(scale_factor)
    return tuple(int(math.floor(i * f)) for i, f in zip(spatial, factors)), tuple(1.0 / f for f in factors)


def _take(x, axis, idx):
    return apply("getitem", x, index=(slice(None),) * axis + (idx,))


_INTERPOLATE_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "trilinear", "bicubic", "area")


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims: 'nearest', 'nearest-exact' (select values, no arithmetic), 'linear', 'bilinear',
    'trilinear', 'bicubic' (float32 weights, one axis at a time) or 'area' (adaptive average pooling)."""
    if mode not in _INTERPOLATE_MODES:
        raise NotImplementedError(f"interpolate: mode={mode!r} is not supported by minifp.torch "
                                  f"({', '.join(_INTERPOLATE_MODES)})")
    if mode in ("nearest", "nearest-exact", "area") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    out_sizes, scales = _resize_plan(input, size, scale_factor)
    if recompute_scale_factor:
        scales = tuple(i / o for i, o in zip(input.shape[2:], out_sizes))
    if mode == "area":
        pool = {1: adaptive_avg_pool1d, 2: adaptive_avg_pool2d, 3: adaptive_avg_pool3d}[input.ndim - 2]
        return pool(input, out_sizes)
    x = input
    for k, (n_in, n_out, scale) in enumerate(zip(input.shape[2:], out_sizes, scales)):
        axis = 2 + k
        dst = np.arange(n_out).astype(np.float32)      # PyTorch's source positions are float32 arithmetic
        if mode in ("nearest", "nearest-exact"):
            offset = np.float32(0.5 if mode == "nearest-exact" else 0)
            x = _take(x, axis, np.minimum(np.floor((dst + offset) * np.float32(scale)).astype(np.int64), n_in - 1))
            continue
        if align_corners:
            src = dst * (np.float32(n_in - 1) / np.float32(n_out - 1) if n_out > 1 else np.float32(0))
        else:
            src = (dst + np.float32(0.5)) * np.float32(scale) - np.float32(0.5)
            src = src if mode == "bicubic" else np.maximum(src, np.float32(0))
        x = _bicubic_axis(x, axis, src, n_in) if mode == "bicubic" else _linear_axis(x, axis, src, n_in)
    return x


def _weighted_taps(x, axis, taps):
    """sum of weight * x[..., index, ...] along axis over (index, float32 weight) taps, in x's format."""
    shape = (-1,) + (1,) * (x.ndim - axis - 1)
    total = None
    for idx, w in taps:
        term = apply("mul", _take(x, axis, idx), _tensor.tensor(w.reshape(shape), device=x.device), _out=x.fmt)
        total = term if total is None else apply("add", total, term, _out=x.fmt)
    return total


def _linear_axis(x, axis, src, n_in):
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    lam = (src - i0).astype(np.float32)
    return _weighted_taps(x, axis, [(i0, 1 - lam), (np.minimum(i0 + 1, n_in - 1), lam)])


def _bicubic_axis(x, axis, src, n_in, a=np.float32(-0.75)):
    """PyTorch's cubic convolution (A = -0.75) over four neighbours, indices clamped to the edge."""
    i0 = np.floor(src).astype(np.int64)
    t = (src - i0).astype(np.float32)

    def near(v):        # |v| <= 1
        return ((a + 2) * v - (a + 3)) * v * v + 1

    def far(v):         # 1 < |v| < 2
        return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a
    weights = (far(t + 1), near(t), near(1 - t), far(2 - t))
    return _weighted_taps(x, axis, [(np.clip(i0 - 1 + j, 0, n_in - 1), w.astype(np.float32))
                                    for j, w in enumerate(weights)])


# -- issue 32's nn.functional breadth: 1-d pooling, indices and unpooling, distances, more losses and activations ---
# Pure data movement (reshapes, selections, scatters) composes engine ops; so do the ops PyTorch itself composes
# (its CompositeImplicit losses and distances), which then round where PyTorch's steps round.


def _one(v, arg):
    """An int or a one-int tuple as an int (1-d pooling's arguments)."""
    return _single(v, arg)[0]


def _expand_1d(input, name):
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{name}() Expected 2D or 3D input tensor, but got {list(input.shape)}")
    return apply("reshape", input, shape=tuple(input.shape[:-1]) + (1, input.shape[-1]))


def _squeeze_1d(out):
    return apply("reshape", out, shape=tuple(out.shape[:-2]) + (out.shape[-1],))


def _check_pads(p):
    if min(p) < 0:
        raise RuntimeError("pad must be non-negative")


def _max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode):
    out = max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)
    k = _pair(kernel_size)
    s = _pair(stride, "stride") if stride not in (None, ()) else k
    x = input if input.ndim == 4 else apply("reshape", input, shape=(1,) + tuple(input.shape))
    idx = _argmax_windows(x, k, s, _pair(padding, "padding"), _pair(dilation, "dilation"), tuple(out.shape[-2:]))
    idx = made_like(x, array_module(storage(x)).asarray(idx), None)
    return out, (idx if input.ndim == 4 else idx.reshape(tuple(idx.shape[1:])))


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over windows along the last dim: max_pool2d over a height of one."""
    k = _one(kernel_size, "kernel_size")
    s = k if stride in (None, ()) else _one(stride, "stride")
    p, d = _one(padding, "padding"), _one(dilation, "dilation")
    _check_pads((p,))
    x = _expand_1d(input, "max_pool1d")
    if return_indices:
        out, idx = _max_pool2d_with_indices(x, (1, k), (1, s), (0, p), (1, d), ceil_mode)
        return _squeeze_1d(out), _squeeze_1d(idx)
    return _squeeze_1d(max_pool2d(x, (1, k), (1, s), (0, p), (1, d), ceil_mode))


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over windows along the last dim: avg_pool2d over a height of one."""
    k = _one(kernel_size, "kernel_size")
    s = k if stride in (None, ()) else _one(stride, "stride")
    p = _one(padding, "padding")
    _check_pads((p,))
    x = _expand_1d(input, "avg_pool1d")
    return _squeeze_1d(avg_pool2d(x, (1, k), (1, s), (0, p), ceil_mode, count_include_pad))


def _adaptive_size(output_size, n, name):
    size = (output_size,) * n if isinstance(output_size, numbers.Integral) else tuple(output_size)
    if len(size) != n:
        raise RuntimeError(f"{name}: output_size must be {n}")
    if any(v is not None and v < 0 for v in size):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 but received "
                           f"{list(size)}")
    return size


def adaptive_avg_pool1d(input, output_size):
    """Mean over PyTorch's adaptive bins along the last dim."""
    (size,) = _adaptive_size(output_size, 1, "adaptive_avg_pool1d()")
    return _squeeze_1d(adaptive_avg_pool2d(_expand_1d(input, "adaptive_avg_pool1d"), (1, size)))


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max over PyTorch's adaptive bins along the last dim (the first maximum selected: exact)."""
    _adaptive_size(output_size, 1, "adaptive_max_pool1d()")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"adaptive_max_pool1d(): Expected 2D or 3D tensor, but got {list(input.shape)}")
    return _adaptive_max(input, output_size, 1, return_indices, "adaptive_max_pool1d")


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """max_pool2d's values and each window's first maximum as a flat index into its input plane."""
    return _max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)


def _unpool(input, indices, spatial):
    """Scatter input's values to the flat positions `indices` of zero planes of size `spatial` (data movement)."""
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    nd = len(spatial)
    lead = tuple(input.shape[:-nd])
    plane = int(np.prod(spatial))
    idx = np.asarray(to_numpy(storage(indices))).reshape(lead + (-1,))
    if idx.size and (idx.min() < 0 or idx.max() >= plane):
        raise RuntimeError(f"Found an invalid max index: {int(idx.max() if idx.max() >= plane else idx.min())} "
                           f"(output volumes are of size {'x'.join(map(str, spatial))}")
    flat = apply("reshape", input, shape=lead + (-1,))
    grids = np.meshgrid(*[np.arange(n) for n in lead], indexing="ij")
    where = tuple(g[..., None] for g in grids) + (idx,)
    zeros = _tensor.zeros(*(lead + (plane,)), dtype=input.dtype, device=input.device)
    return apply("reshape", apply("setitem", zeros, flat, index=where), shape=lead + tuple(spatial))


def _unpool_size(input, nd, kernel_size, stride, padding, output_size):
    k = _tuple_n(kernel_size, nd, "kernel_size")
    s = k if stride in (None, ()) else _tuple_n(stride, nd, "stride")
    p = _tuple_n(padding, nd, "padding")
    spatial_in = tuple(input.shape[-nd:])
    default = tuple((i - 1) * si - 2 * pi + ki for i, si, pi, ki in zip(spatial_in, s, p, k))
    if output_size is None:
        return default
    size = tuple(output_size)[-nd:] if len(output_size) in (nd, input.ndim) else None
    if size is None:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                         f"length of '{len(output_size)}'")
    for v, dflt, si in zip(size, default, s):
        if not dflt - si < v < dflt + si:
            raise ValueError(f"invalid output_size \"{list(size)}\" (dim {size.index(v)} must be between "
                             f"{dflt - si} and {dflt + si})")
    return size


def _tuple_n(v, n, arg):
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return (int(v),) * n
    if isinstance(v, (tuple, list)) and len(v) in (1, n) and all(isinstance(i, numbers.Integral) for i in v):
        return tuple(int(i) for i in v) * (n if len(v) == 1 else 1)
    raise TypeError(f"{arg} must be an int or a tuple of {n} ints, got {v!r}")


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool1d: each value placed at its index, zeros elsewhere."""
    return _unpool(input, indices, _unpool_size(input, 1, kernel_size, stride, padding, output_size))


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool2d: each value placed at its index, zeros elsewhere."""
    return _unpool(input, indices, _unpool_size(input, 2, kernel_size, stride, padding, output_size))


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool3d: each value placed at its index, zeros elsewhere."""
    return _unpool(input, indices, _unpool_size(input, 3, kernel_size, stride, padding, output_size))


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The transpose of conv1d: conv_transpose2d over a height of one."""
    _must_be_tensor(input, "conv_transpose1d(): argument 'input'")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, but got input of "
                           f"size: {list(input.shape)}")
    w = apply("reshape", weight, shape=tuple(weight.shape[:2]) + (1, weight.shape[2]))
    out = conv_transpose2d(_expand_1d(input, "conv_transpose1d"), w, bias, (1, _one(stride, "stride")),
                           (0, _one(padding, "padding")), (0, _one(output_padding, "output_padding")), groups,
                           (1, _one(dilation, "dilation")))
    return _squeeze_1d(out)


# -- distances and similarity -------------------------------------------------------------------------------------


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-input) (negation is exact)."""
    dim = _dim_for_softmax("softmin", input.ndim) if dim is None else dim
    x = input if dtype is None else input.to(dtype)
    axis = _tensor._dim(dim, x.ndim)
    if storage(x).size == 0:            # nothing to normalise (the engine's softmax needs a maximum)
        return apply("neg", x)
    return apply("softmax", apply("neg", x), axis=axis)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p over dim, eps)."""
    from ..linalg import vector_norm
    return input / vector_norm(input, p, dim, keepdim=True).clamp(min=eps).expand_as(input)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim."""
    from ..linalg import vector_norm
    _broadcast_shape(x1, x2)
    d = x1 - x2 + eps
    return vector_norm(d, p, d.ndim - 1 if d.ndim else None, keepdim=keepdim and d.ndim > 0)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum((x1 / ||x1||) * (x2 / ||x2||)) over dim, each norm at least eps (PyTorch's formula, after broadcasting)."""
    from ..linalg import vector_norm
    shape = _broadcast_shape(x1, x2)
    a, b = x1.expand(*shape), x2.expand(*shape)
    d = _tensor._dim(dim, len(shape)) if shape else None
    na = vector_norm(a, 2, d, keepdim=True).clamp(min=eps)
    nb = vector_norm(b, 2, d, keepdim=True).clamp(min=eps)
    return ((a / na) * (b / nb)).sum(d)


def _p_norm_last(d, p):
    from ..linalg import vector_norm
    return vector_norm(d, p, -1)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between every row of x1 and every row of x2 (batched over leading dims)."""
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    d = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if p == 0:      # the count of nonzero differences: PyTorch's gradient of it is zero, not absent
        return _p_norm_last(d, p) + (d * 0).sum(-1)
    return _p_norm_last(d, p)


# -- losses composed as PyTorch composes them ----------------------------------------------------------------------


def _reduced(loss, reduction):
    return loss if reduction == "none" else loss.sum() if reduction == "sum" else loss.mean()


def _same_shape(a, b):
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError(f"The size of tensor a ({a.shape[-1] if a.ndim else 1}) must match the size of tensor b "
                           f"({b.shape[-1] if b.ndim else 1}) at non-singleton dimension {max(a.ndim, b.ndim) - 1}")


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin), reduced."""
    reduction = _reduction(reduction, size_average, reduce)
    if not (input1.ndim == input2.ndim == target.ndim):
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {_tensor.Size(input1.shape)}, input2: {_tensor.Size(input2.shape)}, "
                           f"target: {_tensor.Size(target.shape)} ")
    return _reduced((-target * (input1 - input2) + margin).clamp(min=0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """input where target is 1, max(0, margin - input) where it is -1 (PyTorch's sum of the two masked parts)."""
    reduction = _reduction(reduction, size_average, reduce)
    zeros = _tensor.zeros_like(input)
    margin_clamp = (margin - input).clamp(min=0)
    out_margin = _functions.where(target != 1, margin_clamp, zeros)
    out_self = _functions.where(target != -1, input, zeros)
    return _reduced(out_margin + out_self, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target * (log(target) - input) (0 where target is 0), or exp(target) * (target - input) for log targets."""
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    reduction = _reduction(reduction, size_average, reduce) if reduction != "batchmean" else reduction
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # PyTorch's xlogy(target, target) - target * input: 0 where target is 0
        loss = _functions.where(target == 0, _tensor.zeros_like(target), target * target.log()) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduced(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(input) - target * input (log_input), else input - target * log(input + eps); Stirling's term if full."""
    reduction = _reduction(reduction, size_average, reduce)
    _same_shape(input, target)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        t = target
        stirling = t * t.log() - t + (2 * math.pi * t).log() * 0.5
        loss = loss + _functions.where(t > 1, stirling, _tensor.zeros_like(stirling))
    return _reduced(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 * (log(max(var, eps)) + (input - target)^2 / max(var, eps)), plus 0.5 log(2 pi) if full."""
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var.clamp(min=eps)
    _broadcast_shape(input, target)
    d = input - target
    loss = 0.5 * (var.log() + d * d / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduced(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where it is -1 (PyTorch's formula)."""
    reduction = _reduction(reduction, size_average, reduce)
    if input1.ndim != input2.ndim or tuple(input1.shape) != tuple(input2.shape):
        raise RuntimeError(f"cosine_embedding_loss: Input1 and Input2 must have same size, but got "
                           f"{_tensor.Size(input1.shape)} and {_tensor.Size(input2.shape)}")
    d = input1.ndim - 1 if input1.ndim else None
    eps = 1e-12
    prod = (input1 * input2).sum(d)
    mag1 = (input1 * input1).sum(d) + eps
    mag2 = (input2 * input2).sum(d) + eps
    cos = prod / (mag1 * mag2).sqrt()
    zeros = _tensor.zeros_like(cos)
    pos = 1 - cos
    neg = (cos - margin).clamp(min=0)
    loss = _functions.where(target == 1, pos, zeros) + _functions.where(target == -1, neg, zeros)
    return _reduced(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with pairwise distances (swap: the smaller of d(a, n), d(p, n))."""
    reduction = _reduction(reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"triplet_margin_loss: expected margin to be greater than 0, got {margin} instead")
    if not (anchor.ndim == positive.ndim == negative.ndim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _tensor.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduced((margin + d_pos - d_neg).clamp(min=0), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(target * logsigmoid(x) + (1 - target) * logsigmoid(-x)), weighted, averaged over classes, reduced."""
    reduction = _reduction(reduction, size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    d = input.ndim - 1 if input.ndim else None
    loss = loss.sum(d) / input.shape[d] if d is not None else loss
    return _reduced(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)), reduced."""
    reduction = _reduction(reduction, size_average, reduce)
    _same_shape(input, target)
    return _reduced((-target * input).exp().log1p(), reduction)


# -- activations ------------------------------------------------------------------------------------------------------


@_in_place_able
def threshold(input, threshold, value, inplace=False):
    """input where input > threshold, else value (selects: exact)."""
    return _functions.where(input > threshold, input, _tensor.full_like(input, value))


def hardshrink(input, lambd=0.5):
    """input where |input| > lambd, else 0 (selects: exact)."""
    return _functions.where((input > lambd) | (input < -lambd), input, _tensor.zeros_like(input))


def softshrink(input, lambd=0.5):
    """input -+ lambd beyond +-lambd, else 0 (each value one subtraction: one rounding)."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    # x * 0 in the dead zone, as PyTorch's kernel: -0.5 gives -0.0
    return _functions.where(input > lambd, input - lambd, _functions.where(input < -lambd, input + lambd, input * 0.0))


def tanhshrink(input):
    """input - tanh(input), as PyTorch composes it."""
    return input - input.tanh()


def softsign(input):
    """input / (1 + |input|), as PyTorch composes it."""
    return input / (input.abs() + 1)


def logsigmoid(input):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))."""
    return apply("log_sigmoid", input)


@_in_place_able
def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * expm1(x / alpha)) (one op)."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return apply("celu", input, alpha=float(alpha))


@_in_place_able
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Evaluation: leaky_relu with the mean slope (lower + upper) / 2; training draws a slope per element."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return leaky_relu(input, (lower + upper) / 2)
    xp = array_module(storage(input))
    slope = _tensor.tensor(xp.asarray(rng().uniform(lower, upper, input.shape), np.float32), device=input.device)
    return _functions.where(input >= 0, input, input * slope.to(input.dtype))


def _dropout_checked(p):
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


@_in_place_able
def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """SELU-preserving dropout; identity when not training."""
    _dropout_checked(p)
    if not training or p == 0:
        return input
    return _alpha_dropout(input, p, tuple(input.shape))


@_in_place_able
def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout that drops whole channels; identity when not training."""
    _dropout_checked(p)
    if not training or p == 0:
        return input
    return _alpha_dropout(input, p, tuple(input.shape[:2]) + (1,) * (input.ndim - 2))


def _alpha_dropout(input, p, mask_shape):
    alpha = -1.7580993408473766
    keep = _tensor.tensor((rng().random(mask_shape) >= p).astype(np.float32), device=input.device).to(input.dtype)
    a = (1 / math.sqrt((alpha * alpha * p + 1) * (1 - p))) if p < 1 else 0.0
    b = -a * alpha * p
    return (input * keep + alpha * (1 - keep)) * a + b


@_in_place_able
def dropout1d(input, p=0.5, training=True, inplace=False):
    """Whole channels of (N, C, L) zeroed with probability p, the rest scaled by 1 / (1 - p)."""
    return _channel_dropout(input, p, training, 3, "dropout1d")


@_in_place_able
def dropout2d(input, p=0.5, training=True, inplace=False):
    """Whole channels of (N, C, H, W) zeroed with probability p, the rest scaled by 1 / (1 - p)."""
    return _channel_dropout(input, p, training, 4, "dropout2d")


@_in_place_able
def dropout3d(input, p=0.5, training=True, inplace=False):
    """Whole channels of (N, C, D, H, W) zeroed with probability p, the rest scaled by 1 / (1 - p)."""
    return _channel_dropout(input, p, training, 5, "dropout3d")


def _channel_dropout(input, p, training, batched_ndim, name):
    _dropout_checked(p)
    if not training or p == 0:
        return input
    lead = tuple(input.shape[:2]) if input.ndim == batched_ndim else tuple(input.shape[:1])
    shape = lead + (1,) * (input.ndim - len(lead))
    xp = array_module(storage(input))
    keep = xp.broadcast_to(xp.asarray(rng().random(shape) >= p), tuple(input.shape))
    return apply("dropout", input, mask=keep, scale=0.0 if p == 1 else 1 / (1 - p))


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """input / (k + alpha * mean of squares over `size` neighbouring channels) ** beta (PyTorch's composition)."""
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    sq, shp = input * input, tuple(input.shape)
    pad = (size // 2, (size - 1) // 2)
    # channels as the height of one plane: PyTorch's avg_pool2d (3-d input) or avg_pool3d over (size, 1, 1)
    sq = _pad_channels(sq.reshape(shp[0], 1, shp[1], -1), pad)
    div = avg_pool2d(sq, (size, 1), stride=1).reshape(shp)
    return input / (div * alpha + k) ** beta


def _pad_channels(x, pad):
    """Zeros before and after dim 2 (the channels of local_response_norm's view)."""
    parts = []
    for n in pad:
        if n:
            parts.append(_tensor.zeros(*(tuple(x.shape[:2]) + (n,) + tuple(x.shape[3:])), dtype=x.dtype,
                                       device=x.device))
    before = parts[:1] if pad[0] else []
    after = parts[-1:] if pad[1] else []
    return apply("concatenate", *before, x, *after, axis=2)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 * d**2 where |d| < delta, else delta * (|d| - delta / 2), d = input - target (one op)."""
    reduction = _reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    x, y = _broadcast_pair(input, target)
    loss = apply("huber_loss", x, y, delta=float(delta), reduction="none" if weight is not None else reduction)
    return _reduced(loss * weight, reduction) if weight is not None else loss


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 * d**2 / beta where |d| < beta, else |d| - beta / 2, d = input - target (one op)."""
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    x, y = _broadcast_pair(input, target)
    return apply("smooth_l1_loss", x, y, beta=float(beta), reduction=reduction)


def _broadcast_pair(input, target):
    """PyTorch's losses broadcast input and target (with a warning when the shapes differ)."""
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(f"Using a target size ({_tensor.Size(target.shape)}) that is different to the input size "
                      f"({_tensor.Size(input.shape)}). This will likely lead to incorrect results due to "
                      f"broadcasting. Please ensure they have the same size.", stacklevel=3)
        shape = _broadcast_shape(input, target)
        return input.expand(*shape), target.expand(*shape)
    return input, target


def adaptive_avg_pool3d(input, output_size):
    """Mean over PyTorch's adaptive bins of the last three dims: the 2-d pool over (H, W), then over D."""
    size = _adaptive_size(output_size, 3, "adaptive_avg_pool3d()")
    if input.ndim <= 3:
        raise ValueError("Input dimension should be at least 4")
    if input.ndim not in (4, 5):
        raise RuntimeError(f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got {list(input.shape)}")
    d, h, w = input.shape[-3:]
    do, ho, wo = (s if s is not None else n for s, n in zip(size, (d, h, w)))
    lead = tuple(input.shape[:-3])
    planes = adaptive_avg_pool2d(input.reshape(-1, d, h, w), (ho, wo))          # (lead, D, Ho, Wo)
    depth = adaptive_avg_pool2d(planes.reshape(-1, 1, d, ho * wo), (do, ho * wo))
    return depth.reshape(lead + (do, ho, wo))


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """interpolate under its old name (deprecated in PyTorch)."""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """interpolate(mode='nearest') under its old name (deprecated in PyTorch)."""
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """interpolate(mode='bilinear', align_corners=True) under its old name (deprecated in PyTorch)."""
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use nn.functional.interpolate instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# -- 3-d convolution and pooling, adaptive max pooling: exact compositions ------------------------------------------


def _zeros_along(x, axis, n):
    shape = tuple(x.shape[:axis]) + (n,) + tuple(x.shape[axis + 1:])
    return _tensor.zeros(*shape, dtype=x.dtype, device=x.device)


def _pad_axis(x, axis, before, after):
    """x with zeros before and after along axis (data movement)."""
    parts = ([_zeros_along(x, axis, before)] if before else []) + [x] + ([_zeros_along(x, axis, after)] if after
                                                                         else [])
    return x if len(parts) == 1 else apply("concatenate", *parts, axis=axis)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution as one conv2d: the depth taps of each output depth become input channels (a gather), so the
    whole kernel is one float32 sum and one rounding, the bias fused."""
    _must_be_tensor(input, "conv3d(): argument 'input'")
    if input.ndim not in (4, 5):
        raise RuntimeError(f"Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: "
                           f"{list(input.shape)}")
    s, d = _tuple_n(stride, 3, "stride"), _tuple_n(dilation, 3, "dilation")
    if min(s) <= 0:
        raise RuntimeError("non-positive stride is not supported")
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
        if padding == "same" and s != (1, 1, 1):
            raise ValueError("padding='same' is not supported for strided convolutions")
        pads = pad_for_same(weight.shape[2:], d) if padding == "same" else ((0, 0),) * 3
    else:
        p = _tuple_n(padding, 3, "padding")
        if min(p) < 0:
            raise RuntimeError("negative padding is not supported")
        pads = tuple((v, v) for v in p)
    x = input.reshape((1,) + tuple(input.shape)) if input.ndim == 4 else input
    if x.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[1] * groups} channels, but got {x.shape[1]} "
                           f"channels instead")
    out = _conv3d(x, weight, bias, s, pads, d, groups)
    return out.reshape(tuple(out.shape[1:])) if input.ndim == 4 else out


def _conv3d(x, weight, bias, s, pads, d, groups):
    """conv3d of batched x with padding pairs ((front, back), (top, bottom), (left, right))."""
    x = _pad_axis(x, 2, *pads[0])
    n, c, depth, h, w = x.shape
    o, cg, kd, kh, kw = weight.shape
    do = (depth - d[0] * (kd - 1) - 1) // s[0] + 1
    if do < 1:
        raise RuntimeError(f"Calculated padded input size per channel: ({depth} x {h} x {w}). Kernel size: "
                           f"({kd} x {kh} x {kw}). Kernel size can't be greater than actual input size")
    taps = [apply("getitem", x, index=(slice(None), slice(None), slice(i * d[0], i * d[0] + s[0] * (do - 1) + 1,
                                                                        s[0]), None)) for i in range(kd)]
    stacked = apply("transpose", apply("concatenate", *taps, axis=3), axes=(0, 2, 1, 3, 4, 5))   # N, Do, C, kd, H, W
    planes = apply("reshape", stacked, shape=(n * do, c * kd, h, w))
    w2 = apply("reshape", weight, shape=(o, cg * kd, kh, kw))
    out = conv2d(planes, w2, bias, s[1:], pads[1:], d[1:], groups)
    return apply("transpose", apply("reshape", out, shape=(n, do) + tuple(out.shape[1:])), axes=(0, 2, 1, 3, 4))


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The transpose of conv3d: the input spread by stride, then one conv3d with the flipped, transposed kernel
    (one rounding, the bias fused)."""
    _must_be_tensor(input, "conv_transpose3d(): argument 'input'")
    if input.ndim not in (4, 5):
        raise RuntimeError(f"Expected 4D (unbatched) or 5D (batched) input to conv_transpose3d, but got input of "
                           f"size: {list(input.shape)}")
    x = input.reshape((1,) + tuple(input.shape)) if input.ndim == 4 else input
    s, p = _tuple_n(stride, 3, "stride"), _tuple_n(padding, 3, "padding")
    op, d = _tuple_n(output_padding, 3, "output_padding"), _tuple_n(dilation, 3, "dilation")
    cin, cout_g = weight.shape[:2]
    if x.shape[1] != cin:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input{list(x.shape)} "
                           f"to have {cin} channels, but got {x.shape[1]} channels instead")
    pads = []
    for i, k in enumerate(weight.shape[2:]):
        x = _dilate(x, 2 + i, s[i])
        before, after = d[i] * (k - 1) - p[i], d[i] * (k - 1) - p[i] + op[i]
        x = _take_range(x, 2 + i, max(-before, 0), x.shape[2 + i] - max(-after, 0))     # negative: a crop
        pads.append((max(before, 0), max(after, 0)))
    kernel = tuple(weight.shape[2:])
    w = apply("reshape", weight, shape=(groups, cin // groups, cout_g) + kernel)
    w = apply("reshape", apply("transpose", w, axes=(0, 2, 1, 3, 4, 5)), shape=(groups * cout_g, cin // groups) + kernel)
    w = apply("getitem", w, index=(slice(None), slice(None)) + (slice(None, None, -1),) * 3)
    out = _conv3d(x, w, bias, (1, 1, 1), tuple(pads), d, groups)
    return out.reshape(tuple(out.shape[1:])) if input.ndim == 4 else out


def _pool_out(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling output size along one dim."""
    span = size + 2 * p - d * (k - 1) - 1
    n = (-(-span // s) if ceil_mode else span // s) + 1
    return n - 1 if ceil_mode and (n - 1) * s >= size + p else n


def _gather_flat(x, idx, nd):
    """x's values at flat positions idx (lead..., Q) of its last nd dims (a selection: exact, gradient to each)."""
    lead = tuple(x.shape[:x.ndim - nd])
    flat = apply("reshape", x, shape=lead + (-1,))
    grids = np.meshgrid(*[np.arange(v) for v in lead], indexing="ij")
    return apply("getitem", flat, index=tuple(g[..., None] for g in grids) + (idx,))


def _argmax_windows(x, k, s, p, d, out):
    """Each window's first maximum (NaN counts as largest) as a flat index into x's last len(k) dims."""
    nd = len(k)
    v = np.asarray(to_numpy(x.float32()))
    lead, spatial = v.shape[:-nd], v.shape[-nd:]
    eff = [di * (ki - 1) + 1 for ki, di in zip(k, d)]
    pads = [(0, 0)] * len(lead) + [(pi, max(pi, (oi - 1) * si + ei - ni - pi))
                                   for ni, oi, si, pi, ei in zip(spatial, out, s, p, eff)]
    axes = tuple(range(len(lead), v.ndim))
    win = np.lib.stride_tricks.sliding_window_view(np.pad(v, pads, constant_values=-np.inf), eff, axis=axes)
    win = win[(Ellipsis,) + tuple(slice(None, None, si) for si in s) + tuple(slice(None, None, di) for di in d)]
    win = win[(slice(None),) * len(lead) + tuple(slice(0, oi) for oi in out)]
    j = np.argmax(win.reshape(win.shape[:len(lead) + nd] + (-1,)), axis=-1)
    offs = np.unravel_index(j, k)
    pos = [np.arange(oi).reshape((-1,) + (1,) * (nd - 1 - a)) * si - pi + off * di
           for a, (oi, si, pi, di, off) in enumerate(zip(out, s, p, d, offs))]
    return np.ravel_multi_index(pos, spatial, mode="clip").astype(np.int64)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over 3-d windows: each window's first maximum selected (values exact; the gradient goes there)."""
    k = _tuple_n(kernel_size, 3, "kernel_size")
    s = k if stride in (None, ()) else _tuple_n(stride, 3, "stride")
    p, d = _tuple_n(padding, 3, "padding"), _tuple_n(dilation, 3, "dilation")
    _check_pads(p)
    if input.ndim not in (4, 5):
        raise RuntimeError(f"non-empty 4D or 5D (batch mode) tensor expected for input, but got: "
                           f"{list(input.shape)}")
    for ki, pi, di in zip(k, p, d):
        if pi > (di * (ki - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pi}, "
                               f"kernel_size={ki} and dilation={di}")
    out = tuple(_pool_out(n, *a, ceil_mode) for n, a in zip(input.shape[-3:], zip(k, s, p, d)))
    if min(out) < 1:
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, input.shape[-4:]))}). Calculated output size: "
                           f"({input.shape[-4]}x{'x'.join(map(str, out))}). Output size is too small")
    idx = _argmax_windows(input, k, s, p, d, out)
    lead = tuple(input.shape[:-3])
    values = apply("reshape", _gather_flat(input, idx.reshape(lead + (-1,)), 3), shape=lead + out)
    return (values, made_like(input, idx, None)) if return_indices else values


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over 3-d windows: avg_pool2d over (H, W), then the sum (or mean) over depth windows."""
    k = _tuple_n(kernel_size, 3, "kernel_size")
    s = k if stride in (None, ()) else _tuple_n(stride, 3, "stride")
    p = _tuple_n(padding, 3, "padding")
    _check_pads(p)
    if input.ndim not in (4, 5):
        raise RuntimeError(f"non-empty 4D or 5D (batch mode) tensor expected for input, but got: "
                           f"{list(input.shape)}")
    if any(pi > ki // 2 for pi, ki in zip(p, k)):
        raise RuntimeError("pad should be smaller than or equal to half of kernel size, but got "
                           f"padT = {p[0]}, padW = {p[2]}, padH = {p[1]}, kT = {k[0]}, kW = {k[2]}, kH = {k[1]}")
    lead, (dd, h, w) = tuple(input.shape[:-3]), tuple(input.shape[-3:])
    planes = avg_pool2d(input.reshape(-1, dd, h, w), k[1:], s[1:], p[1:], ceil_mode, count_include_pad,
                        divisor_override)
    ho, wo = planes.shape[-2:]
    depth = planes.reshape(-1, 1, dd, ho * wo)
    # the plane step divided by the whole override already: the depth step only sums
    depth = avg_pool2d(depth, (k[0], 1), (s[0], 1), (p[0], 0), ceil_mode, count_include_pad,
                       1 if divisor_override else None)
    return depth.reshape(lead + (depth.shape[-2], ho, wo))


def _adaptive_max(input, output_size, nd, return_indices, name):
    size = _adaptive_size(output_size, nd, f"{name}()")
    if input.ndim not in (nd + 1, nd + 2):
        raise ValueError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {list(input.shape)}")
    spatial = tuple(input.shape[-nd:])
    size = tuple(n if o is None else o for o, n in zip(size, spatial))
    v = np.asarray(to_numpy(input.float32()))
    lead = v.shape[:-nd]
    idx = np.zeros(lead + size, np.int64)
    for cell in np.ndindex(*size):
        bounds = [((i * n) // o, -(-((i + 1) * n) // o)) for i, n, o in zip(cell, spatial, size)]
        region = v[(Ellipsis,) + tuple(slice(a, b) for a, b in bounds)]
        j = np.argmax(region.reshape(lead + (-1,)), axis=-1)
        local = np.unravel_index(j, tuple(b - a for a, b in bounds))
        idx[(Ellipsis,) + cell] = np.ravel_multi_index([l + a for l, (a, b) in zip(local, bounds)], spatial)
    values = apply("reshape", _gather_flat(input, idx.reshape(lead + (-1,)), nd), shape=lead + size)
    return (values, made_like(input, idx, None)) if return_indices else values


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over PyTorch's adaptive bins of the last two dims (the first maximum selected: exact)."""
    return _adaptive_max(input, output_size, 2, return_indices, "adaptive_max_pool2d")


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max over PyTorch's adaptive bins of the last three dims (the first maximum selected: exact)."""
    return _adaptive_max(input, output_size, 3, return_indices, "adaptive_max_pool3d")


def _int_target(target):
    t = storage(target) if isinstance(target, _EngineTensor) else np.asarray(target)
    if t.dtype.kind not in "iu":
        raise RuntimeError(f"expected scalar type Long but found {getattr(target, 'dtype', t.dtype)}")
    return t


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """sum over j != y of max(0, margin - x[y] + x[j]) ** p * weight[y] / C per sample (one op)."""
    reduction = _reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if input.ndim > 2 or (input.ndim > 0 and input.shape[-1] == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    t = _int_target(target).reshape(-1)
    if t.shape[0] != x.shape[0]:
        raise RuntimeError(f"inconsistent target size, expected {x.shape[0]} but got {list(target.shape)}")
    if t.size and (t.min() < 0 or t.max() >= x.shape[1]):
        raise RuntimeError("target out of range")
    if weight is not None and storage(weight).size != x.shape[1]:
        raise RuntimeError(f"inconsistent weight size, expected {x.shape[1]} but got {list(weight.shape)}")
    xp = array_module(storage(x))
    loss = apply("multi_margin_loss", x, target=xp.asarray(t), p=int(p), margin=float(margin),
                 weight=_array_for(x, weight), reduction=reduction)
    return loss.reshape(()) if reduction == "none" and input.ndim < 2 else loss


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over listed targets j and unlisted classes i of max(0, 1 - (x[j] - x[i])) / C per sample (one op)."""
    reduction = _reduction(reduction, size_average, reduce)
    if input.ndim > 2 or (input.ndim > 0 and input.shape[-1] == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    t = _int_target(target).reshape(tuple(x.shape))
    xp = array_module(storage(x))
    loss = apply("multilabel_margin_loss", x, target=xp.asarray(t), reduction=reduction)
    return loss.reshape(()) if reduction == "none" and input.ndim < 2 else loss


def bilinear(input1, input2, weight, bias=None):
    """x1^T W[o] x2 + b[o] over the last dims: two products, as PyTorch's _trilinear runs them."""
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {list(input1.shape[:-1])} and "
                           f"{list(input2.shape[:-1])}")
    lead = tuple(input1.shape[:-1])
    o, i, j = weight.shape
    x1, x2 = input1.reshape(-1, i), input2.reshape(-1, 1, j)
    left = x1.matmul(weight.permute(1, 0, 2).reshape(i, o * j)).reshape(-1, o, j)     # sum over i
    out = left.matmul(x2.reshape(-1, j, 1)).reshape(lead + (o,))                     # sum over j
    return out if bias is None else out + bias


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: every (dilated) window of (N, C, H, W) as a column of (N, C * kh * kw, L) (data movement)."""
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)")
    (kh, kw), (dh, dw) = _pair(kernel_size), _pair(dilation, "dilation")
    (ph, pw), (sh, sw) = _pair(padding, "padding"), _pair(stride, "stride")
    x = input.reshape((1,) + tuple(input.shape)) if input.ndim == 3 else input
    x = _pad_axis(_pad_axis(x, 2, ph, ph), 3, pw, pw)
    n, c, h, w = x.shape
    lh, lw = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    if lh < 1 or lw < 1:
        raise RuntimeError(f"Given input with spatial size ({h - 2 * ph}, {w - 2 * pw}), kernel_size=({kh}, {kw}), "
                           f"dilation=({dh}, {dw}), padding=({ph}, {pw}), calculated shape of the array of sliding "
                           f"blocks as ({lh}, {lw}), but its components must be at least one.")
    taps = [apply("getitem", x, index=(slice(None), slice(None), None,
                                       slice(a * dh, a * dh + sh * (lh - 1) + 1, sh),
                                       slice(b * dw, b * dw + sw * (lw - 1) + 1, sw)))
            for a in range(kh) for b in range(kw)]
    cols = apply("reshape", apply("concatenate", *taps, axis=2), shape=(n, c * kh * kw, lh * lw))
    return cols.reshape(tuple(cols.shape[1:])) if input.ndim == 3 else cols


def _check_embedding_bag(input, weight, offsets, mode, scale_grad_by_freq, sparse, per_sample_weights):
    """embedding_bag's checks of its arguments, in PyTorch's order and words."""
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if input.ndim == 2 and offsets is not None:
        kind = "<class 'torch.Tensor'>" if isinstance(offsets, _tensor.Tensor) else str(type(offsets))
        raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed "
                         f"length sequences. However, found offsets of type {kind}")
    if input.ndim == 1 and offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if input.ndim == 1 and offsets.ndim != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    if input.ndim not in (1, 2):
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                  f"on GitHub.")


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Each bag's rows of weight summed (weighted by per_sample_weights), averaged or maxed: a bag matrix times the
    gathered rows, one float32 sum per bag (max: the largest row values, selected)."""
    _check_embedding_bag(input, weight, offsets, mode, scale_grad_by_freq, sparse, per_sample_weights)
    if max_norm is not None:
        raise NotImplementedError("embedding_bag(max_norm=...) is not supported by minifp.torch")
    idx = np.asarray(to_numpy(storage(input)))
    if idx.ndim == 2:
        starts = np.arange(0, idx.size, idx.shape[1]) if idx.shape[1] else np.zeros(idx.shape[0], np.int64)
    else:
        starts = np.asarray(to_numpy(storage(offsets))).astype(np.int64)
        if include_last_offset:
            starts = starts[:-1]
    flat = idx.reshape(-1)
    ends = np.append(starts[1:], flat.size)
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    keep = flat != padding_idx if padding_idx is not None else np.ones(flat.size, bool)
    rows = apply("embedding", weight, indices=array_module(storage(weight)).asarray(flat))      # (L, D)
    bags = len(starts)
    if mode == "max":
        outs = [rows[int(a):int(b)][keep[a:b]].amax(0) if keep[a:b].any() else
                _tensor.zeros(weight.shape[1], dtype=weight.dtype) for a, b in zip(starts, ends)]
        return _functions.stack(outs) if outs else _tensor.zeros(0, weight.shape[1], dtype=weight.dtype)
    member = np.zeros((bags, flat.size), np.float32)
    for bag, (a, b) in enumerate(zip(starts, ends)):
        member[bag, a:b] = keep[a:b]
    m = _tensor.tensor(member, dtype=weight.dtype, device=weight.device)
    if per_sample_weights is not None:
        m = m * per_sample_weights.reshape(1, -1)
    if mode == "sum":
        return m.matmul(rows)
    # mean: each bag's sum divided by its size, as PyTorch divides (an empty bag's zero sum by 1)
    sizes = np.maximum(member.sum(1, keepdims=True), 1)
    return m.matmul(rows) / _tensor.tensor(sizes, dtype=weight.dtype, device=weight.device)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target): PyTorch's reference path (minifp has no
    chunked kernel: `options` changes nothing here)."""
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.ndim}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions (in_features), got "
                           f"{in_features} and {linear_weight.shape[-1]}, respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes,) + out_features:
        raise RuntimeError(f"expected linear_bias shape {(classes,) + out_features}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
                           f"requires batched input, (N, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = batches + (classes,) + out_features
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    rows = int(np.prod((classes,) + out_features))
    w = linear_weight.reshape(rows, in_features)
    b = linear_bias.reshape(rows) if linear_bias is not None else None
    logits = linear(input, w, b).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         label_smoothing=label_smoothing)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with any distance function (pairwise_distance by default)."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater than 0, got {margin} "
                         f"instead")
    if not (anchor.ndim == positive.ndim == negative.ndim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")
    dist_fn = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = dist_fn(anchor, positive), dist_fn(anchor, negative)
    if swap:
        d_neg = _tensor.minimum(d_neg, dist_fn(positive, negative))
    return _reduced((margin + d_pos - d_neg).clamp(min=0), reduction)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) along dim, g Gumbel(0, 1) noise from minifp's generator; hard: the one-hot of its
    argmax in the forward, the soft sample's gradient in the backward (y_hard - y_soft.detach() + y_soft)."""
    gumbels = -_tensor.empty_like(logits).exponential_().log()
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = _tensor.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def one_hot(tensor, num_classes=-1):
    """int64 (..., num_classes) with a 1 at each value's class (num_classes -1: the largest value + 1)."""
    idx = np.asarray(to_numpy(storage(tensor)))
    if idx.dtype.kind not in "iu":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if idx.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(idx.max()) + 1
    if idx.size and (idx.min() < 0 or idx.max() >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes." if idx.size and idx.max() >= num_classes
                           else "Class values must be non-negative.")
    out = (idx[..., None] == np.arange(num_classes)).astype(np.int64)
    return made_like(tensor, array_module(storage(tensor)).asarray(out), None)


def channel_shuffle(input, groups):
    """(N, g * k, ...) -> channels regrouped as (k, g) (PyTorch's ShuffleNet shuffle; data movement)."""
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c = input.shape[:2]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    x = input.reshape((n, groups, c // groups) + rest)
    x = apply("transpose", x, axes=(0, 2, 1) + tuple(range(3, x.ndim)))
    return x.reshape((n, c) + rest)


def _pad_source(n, before, after, mode):
    """For each output position along a dim padded by (before, after): the input position it copies."""
    src = np.arange(-before, n + after)
    if mode == "replicate":
        return np.clip(src, 0, n - 1)
    if mode == "circular":
        return src % n
    period = 2 * (n - 1)            # reflect: mirror about the edges, the edge itself not repeated
    m = np.abs(src) % period if period else np.zeros_like(src)
    return np.where(m < n, m, period - m)


def pad(input, pad, mode="constant", value=None):
    """PyTorch's F.pad: pairs (before, after) from the last dim backwards; 'constant' (value), 'reflect',
    'replicate' or 'circular'; negative amounts crop. Only selects and concatenates: values stay exact."""
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.ndim}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant" and (len(pad) // 2 > 3 or input.ndim not in (len(pad) // 2 + 1, len(pad) // 2 + 2)):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.")
    if mode != "constant" and value not in (None, 0):
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument.")
    x = input
    for k in range(len(pad) // 2):
        axis, (before, after) = input.ndim - 1 - k, (int(pad[2 * k]), int(pad[2 * k + 1]))
        n = x.shape[axis]
        if mode == "constant":
            x = _take_range(x, axis, max(-before, 0), n - max(-after, 0))
            x = _pad_axis_with(x, axis, max(before, 0), max(after, 0), 0.0 if value is None else value)
            continue
        if mode == "reflect" and (before >= n or after >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({before}, {after}) at dimension {axis} of input "
                               f"{list(input.shape)}")
        if mode == "circular":      # PyTorch crops first, then wraps around what is left
            x = _take_range(x, axis, max(-before, 0), n - max(-after, 0))
            n, before, after = x.shape[axis], max(before, 0), max(after, 0)
        x = _take(x, axis, _pad_source(n, before, after, mode))
    return x


def _take_range(x, axis, start, stop):
    if start == 0 and stop == x.shape[axis]:
        return x
    return apply("getitem", x, index=(slice(None),) * axis + (slice(start, stop),))


def _pad_axis_with(x, axis, before, after, value):
    def block(n):
        shape = tuple(x.shape[:axis]) + (n,) + tuple(x.shape[axis + 1:])
        return _tensor.full(shape, value, dtype=x.dtype, device=x.device)
    parts = ([block(before)] if before else []) + [x] + ([block(after)] if after else [])
    return x if len(parts) == 1 else apply("concatenate", *parts, axis=axis)


def constant_pad_nd(input, pad, value=0):
    """torch.constant_pad_nd: F.pad's constant mode."""
    return globals()["pad"](input, pad, "constant", value)


def _fractional_starts(u, n_in, n_out, k):
    """PyTorch's pseudo-random window starts along one dim from a sample u in [0, 1)."""
    if n_out == 1:
        return np.array([n_in - k])
    alpha = np.float32(n_in - k) / np.float32(n_out - 1)
    i = np.arange(n_out - 1, dtype=np.float32)
    starts = (np.floor((i + np.float32(u)) * alpha) - np.floor(np.float32(u) * alpha)).astype(np.int64)
    return np.append(starts, n_in - k)


def _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices, samples, nd, name):
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    k = _tuple_n(kernel_size, nd, "kernel_size")
    spatial = tuple(input.shape[-nd:])
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
        ratio = (output_ratio,) * nd if isinstance(output_ratio, numbers.Real) else tuple(output_ratio)
        output_size = tuple(int(n * r) for n, r in zip(spatial, ratio))
    out = _tuple_n(output_size, nd, "output_size")
    for n, o, ki in zip(spatial, out, k):
        if o + ki - 1 > n:
            raise RuntimeError(f"{name}(): pool size {ki} too large relative to input size {n} and output size {o}")
    lead = tuple(input.shape[:-nd])
    planes = int(np.prod(lead))
    u = (np.asarray(to_numpy(storage(samples)), np.float32).reshape(planes, nd) if samples is not None
         else rng().random((planes, nd)).astype(np.float32))
    v = np.asarray(to_numpy(input.float32())).reshape((planes,) + spatial)
    idx = np.zeros((planes,) + out, np.int64)
    for p in range(planes):
        # samples come per (batch, channel) with the last dim first (PyTorch's order: w, h[, t])
        starts = [_fractional_starts(u[p, nd - 1 - a], n, o, ki)
                  for a, (n, o, ki) in enumerate(zip(spatial, out, k))]
        for cell in np.ndindex(*out):
            lo = [s[c] for s, c in zip(starts, cell)]
            region = v[(p,) + tuple(slice(a, a + ki) for a, ki in zip(lo, k))]
            local = np.unravel_index(np.argmax(region), k)
            idx[(p,) + cell] = np.ravel_multi_index([a + b for a, b in zip(lo, local)], spatial)
    idx = idx.reshape(lead + out)
    values = apply("reshape", _gather_flat(input, idx.reshape(lead + (-1,)), nd), shape=lead + out)
    return (values, made_like(input, array_module(storage(input)).asarray(idx), None)) if return_indices else values


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Max over pseudo-randomly placed windows (Graham's fractional max pooling), the first maximum selected."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 2,
                                "fractional_max_pool2d")


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Max over pseudo-randomly placed 3-d windows, the first maximum selected."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 3,
                                "fractional_max_pool3d")


def _grid_coordinate(coord, size, padding_mode, align_corners):
    """PyTorch's source position along one axis for normalised grid values (a tensor: differentiable in them)."""
    x = (coord + 1) * ((size - 1) / 2) if align_corners else ((coord + 1) * size - 1) / 2
    if padding_mode == "reflection":
        low, high = (0.0, 2.0 * (size - 1)) if align_corners else (-1.0, 2.0 * size - 1)
        if low == high:
            return x * 0.0
        lo, span = low / 2, (high - low) / 2
        v = np.abs(np.asarray(to_numpy(x.detach().float32())) - lo)
        flips = np.floor(v / span)
        # piecewise linear in x: x' = sign * x + offset, the sign and offset read from the values
        s = np.where(np.asarray(to_numpy(x.detach().float32())) >= lo, 1.0, -1.0)
        sign = np.where(flips % 2 == 0, s, -s).astype(np.float32)
        offset = np.where(flips % 2 == 0, -s * lo - flips * span + lo, span + s * lo + flips * span + lo)
        x = (x * _tensor.tensor(sign, dtype=x.dtype, device=x.device)
             + _tensor.tensor(offset.astype(np.float32), dtype=x.dtype, device=x.device))
    if padding_mode in ("border", "reflection"):
        x = x.clamp(0, size - 1)
    return x


def _grid_corner(input, idx, nd):
    """input (N, C, *spatial) at integer positions idx [(N, *out)] per axis, zero outside: (N, C, *out)."""
    spatial = tuple(input.shape[2:])
    inside = np.ones(idx[0].shape, bool)
    for i, n in zip(idx, spatial):
        inside &= (i >= 0) & (i < n)
    safe = [np.clip(i, 0, n - 1) for i, n in zip(idx, spatial)]
    batch = np.broadcast_to(np.arange(input.shape[0]).reshape((-1,) + (1,) * nd), idx[0].shape)
    picked = apply("getitem", input, index=(batch, slice(None)) + tuple(safe))     # (N, *out, C)
    picked = apply("transpose", picked, axes=(0, nd + 1) + tuple(range(1, nd + 1)))
    mask = made_like(input, array_module(storage(input)).asarray(inside[:, None]), None)
    return _functions.where(mask, picked, _tensor.zeros_like(picked))


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """input sampled at the normalised positions of grid (..., x, y[, z]): 'bilinear' (trilinear for 5-d input)
    weights the neighbours in float32, 'nearest' selects; padding 'zeros', 'border' or 'reflection'."""
    if mode not in ("bilinear", "nearest"):
        raise NotImplementedError(f"grid_sample: mode={mode!r} is not supported by minifp.torch (bilinear, nearest)")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    nd = input.ndim - 2
    if nd not in (2, 3) or grid.ndim != input.ndim or grid.shape[-1] != nd or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have matching 4-D or 5-D shapes, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    align = bool(align_corners)
    spatial = tuple(input.shape[2:])
    # grid's last dim holds (x, y[, z]): x indexes the last spatial axis
    pos = [_grid_coordinate(apply("getitem", grid, index=(Ellipsis, nd - 1 - a)), spatial[a], padding_mode, align)
           for a in range(nd)]
    vals = [np.asarray(to_numpy(p.detach().float32())) for p in pos]
    if mode == "nearest":
        out = _grid_corner(input, [np.rint(v).astype(np.int64) for v in vals], nd)
        # the grid gets PyTorch's zero gradient: a selection that keeps every value of out but reads the grid
        keep = made_like(out, array_module(storage(out)).ones(tuple(out.shape), bool), None)
        return _functions.where(keep, out, pos[0].unsqueeze(1).to(out.dtype).expand(*out.shape))
    low = [np.floor(v).astype(np.int64) for v in vals]
    out = None
    for corner in np.ndindex(*(2,) * nd):
        w = None
        for a, c in enumerate(corner):      # (1 - t) for the low neighbour, t for the high one
            t = pos[a] - _tensor.tensor(low[a].astype(np.float32), dtype=pos[a].dtype, device=input.device)
            f = t if c else 1 - t
            w = f if w is None else w * f
        term = _grid_corner(input, [l + c for l, c in zip(low, corner)], nd) * w.unsqueeze(1)
        out = term if out is None else out + term
    return out


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler: grid_sample with PyTorch's integer modes (0 bilinear, 1 nearest; 0 zeros, 1 border,
    2 reflection)."""
    return grid_sample(input, grid, ("bilinear", "nearest")[interpolation_mode],
                       ("zeros", "border", "reflection")[padding_mode], align_corners)


grid_sampler_2d = grid_sampler_3d = grid_sampler


def _lengths(v):
    return np.asarray(to_numpy(storage(v)) if isinstance(v, _EngineTensor) else v, np.int64).reshape(-1)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist temporal classification loss of log_probs (T, N, C) (or (T, C)) against padded (N, S) or
    concatenated targets (one op: the alpha and beta recursions in log space)."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.ndim == 2
    lp = log_probs.reshape(log_probs.shape[0], 1, -1) if unbatched else log_probs
    ins, outs = _lengths(input_lengths), _lengths(target_lengths)
    tg = np.asarray(to_numpy(storage(targets)), np.int64)
    if tg.ndim == 1 and not unbatched:          # concatenated targets: pad them into rows
        rows = np.zeros((len(outs), max(int(outs.max(initial=0)), 1)), np.int64)
        starts = np.concatenate([[0], np.cumsum(outs)[:-1]])
        for b, (s, n) in enumerate(zip(starts, outs)):
            rows[b, :n] = tg[s:s + n]
        tg = rows
    tg = tg.reshape(1, -1) if unbatched else tg
    if tg.shape[1] == 0:
        tg = np.zeros((tg.shape[0], 1), np.int64)
    if len(ins) != lp.shape[1] or len(outs) != lp.shape[1]:
        raise RuntimeError(f"Expected input_lengths and target_lengths to have size {lp.shape[1]}, but got "
                           f"{len(ins)} and {len(outs)}")
    if ins.size and ins.max() > lp.shape[0]:
        raise RuntimeError(f"Expected input_lengths to have value at most {lp.shape[0]}, but got value "
                           f"{int(ins.max())}")
    xp = array_module(storage(lp))
    loss = apply("ctc_loss", lp, targets=xp.asarray(tg), input_lengths=xp.asarray(ins),
                 target_lengths=xp.asarray(outs), blank=int(blank), reduction=reduction,
                 zero_infinity=bool(zero_infinity))
    return loss.reshape(()) if unbatched and reduction == "none" else loss


def _autocast_as(name):
    """PyTorch's autocast for a function composed here from engine ops: where the lists name it, its floating
    tensors are cast once (to float32, or to the autocast dtype) and the inside runs without autocast, as the one
    PyTorch op would; elsewhere its parts meet autocast one by one, as PyTorch's decomposition does."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            first = next((v for v in args if isinstance(v, _EngineTensor)), None)
            a = None if first is None else _autocast_on(first)
            if a is None or (name not in a.float32 and name not in a.lower):
                return fn(*args, **kwargs)
            fmt = _FLOAT32 if name in a.float32 else a.fmt

            def cast(v):
                return v.astype(fmt) if isinstance(v, _EngineTensor) and v.fmt is not None and v.fmt != fmt else v
            with autocast_scope(None):
                return fn(*map(cast, args), **{k: cast(v) for k, v in kwargs.items()})
        return run
    return wrap


_AUTOCAST_COMPOSED = ("kl_div", "poisson_nll_loss", "margin_ranking_loss", "hinge_embedding_loss",
                      "soft_margin_loss", "cosine_embedding_loss", "triplet_margin_loss", "cosine_similarity", "dist",
                      "cdist", "avg_pool3d", "max_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d",
                      "grid_sample")
for _name in _AUTOCAST_COMPOSED:
    globals()[_name] = _autocast_as(_name)(globals()[_name])
del _name
_tensor.Tensor.dist = dist                  # the method as torch.dist: the same op under autocast


# issue 32's additions (torch.cdist, torch.dist, torch.constant_pad_nd and torch.grid_sampler live here too, as
# torch.* names: PyTorch's nn.functional does not have them)
__all__ += ["max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d", "max_pool2d_with_indices",
            "max_unpool1d", "max_unpool2d", "max_unpool3d", "conv_transpose1d", "softmin", "normalize",
            "pairwise_distance", "cosine_similarity", "margin_ranking_loss", "hinge_embedding_loss", "kl_div",
            "poisson_nll_loss", "gaussian_nll_loss", "cosine_embedding_loss", "triplet_margin_loss",
            "multilabel_soft_margin_loss", "soft_margin_loss", "threshold", "hardshrink", "softshrink", "tanhshrink",
            "softsign", "logsigmoid", "celu", "rrelu", "alpha_dropout", "feature_alpha_dropout", "dropout1d",
            "dropout2d", "dropout3d", "local_response_norm", "huber_loss", "smooth_l1_loss", "adaptive_avg_pool3d",
            "upsample", "upsample_nearest", "upsample_bilinear", "conv3d", "conv_transpose3d", "max_pool3d",
            "avg_pool3d", "adaptive_max_pool2d", "adaptive_max_pool3d", "multi_margin_loss", "multilabel_margin_loss",
            "bilinear", "unfold", "embedding_bag", "linear_cross_entropy", "triplet_margin_with_distance_loss",
            "one_hot", "channel_shuffle", "pad", "fractional_max_pool2d", "fractional_max_pool3d", "grid_sample",
            "ctc_loss"]


from .._missing import missing as _missing  # noqa: E402
__getattr__ = _missing("minifp.torch.nn.functional")
