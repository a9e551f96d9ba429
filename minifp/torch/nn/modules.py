"""PyTorch's layers, containers and losses: names, defaults, parameter shapes and state_dict keys as torch.nn's."""
from __future__ import annotations

import math
import numbers
from collections import OrderedDict

import numpy as np

from ...engine import apply, storage
from .. import _tensor
from . import functional as F, init
from .module import Module, Parameter, _addindent

__all__ = ["ParameterList", "ParameterDict", "Identity", "Linear", "Conv2d", "BatchNorm1d", "BatchNorm2d", "LayerNorm", "GroupNorm", "Embedding",
           "EmbeddingBag",
           "Dropout", "ReLU", "ReLU6", "Hardtanh", "GELU", "SiLU", "LeakyReLU", "ELU", "SELU", "Softplus", "Mish",
           "Hardswish", "Hardsigmoid", "PReLU", "GLU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax",
           "Flatten", "Unflatten", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "Sequential", "ModuleList",
           "ModuleDict", "MultiheadAttention", "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss",
           "BCEWithLogitsLoss", "BCELoss"]


def _empty(shape, device=None, dtype=None):
    return Parameter(_tensor.empty(*shape, dtype=dtype, device=device))


def _affine(module, shape, weight, bias, device, dtype):
    """A norm's scale (ones) and shift (zeros) parameters, or None where it has none."""
    module.register_parameter("weight", Parameter(_tensor.ones(*shape, dtype=dtype, device=device)) if weight else None)
    module.register_parameter("bias", Parameter(_tensor.zeros(*shape, dtype=dtype, device=device))
                              if weight and bias else None)
    init._initialised(module.weight, module.bias)


def _positive(name, value, where):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{where}: {name} must be a positive integer, got {value!r}")


class Identity(Module):
    """Returns its input (any constructor arguments are ignored, as PyTorch's)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x @ weight.T + bias; weight (out_features, in_features), PyTorch's initialisation."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        for name, v in (("in_features", in_features), ("out_features", out_features)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
                raise ValueError(f"Linear: {name} must be a non-negative integer, got {v!r}")
        self.in_features, self.out_features = in_features, out_features
        self.weight = _empty((out_features, in_features), device, dtype)
        if bias:
            self.bias = _empty((out_features,), device, dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Conv2d(Module):
    """2-D convolution, one engine op with the bias fused (PyTorch's arguments, checks and initialisation)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        kernel_size, stride, dilation = F._pair(kernel_size), F._pair(stride, "stride"), F._pair(dilation, "dilation")
        for name, v in (("kernel_size", kernel_size), ("stride", stride), ("dilation", dilation)):
            if min(v) < 1:          # PyTorch refuses these only at the first forward ("non-positive stride ...")
                raise ValueError(f"Conv2d: {name} must be positive integers, got {v}")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = F._pair(padding, "padding")
        modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in modes:
            raise ValueError(f"padding_mode must be one of {modes}, but got padding_mode='{padding_mode}'")
        if padding_mode != "zeros":
            raise NotImplementedError(f"padding_mode='{padding_mode}' is not supported by minifp.torch (zeros only)")
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, kernel_size
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.padding_mode = padding_mode
        self.weight = _empty((out_channels, in_channels // groups) + kernel_size, device, dtype)
        if bias:
            self.bias = _empty((out_channels,), device, dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0, 0):
            s += f", padding={self.padding}"       # a string unquoted, as PyTorch prints it
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _BatchNorm(Module):
    _version = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        _affine(self, (num_features,), affine, True, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", _tensor.zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", _tensor.ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", _tensor.tensor(0, dtype=_tensor.int64, device=device))
            init._initialised(self.running_mean, self.running_var, self.num_batches_tracked)
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def reset_running_stats(self):
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            self.num_batches_tracked.assign(np.zeros((), np.int64))

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def _load_defaults(self, prefix, state):
        # An old checkpoint (version < 2) has no counter: PyTorch fills it with 0.
        return {prefix + "num_batches_tracked": _tensor.tensor(0, dtype=_tensor.int64)} if self.track_running_stats else {}

    def forward(self, input):
        self._check_input_dim(input)
        F.check_channels(input, self.running_mean, self.running_var, self.weight, self.bias)   # before counting
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.assign(storage(self.num_batches_tracked) + 1)
            factor = 1.0 / float(self.num_batches_tracked.item()) if self.momentum is None else self.momentum
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None,
                            self.running_var if use_stats else None, self.weight, self.bias, bn_training, factor,
                            self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L)."""

    def _check_input_dim(self, input):
        if input.ndim not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W)."""

    def _check_input_dim(self, input):
        if input.ndim != 4:
            raise ValueError(f"expected 4D input (got {input.ndim}D input)")


class LayerNorm(Module):
    """Normalisation over the trailing normalized_shape dims, one op (float32 under CUDA autocast)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = shape, eps, elementwise_affine
        _affine(self, shape, elementwise_affine, bias, device, dtype)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalisation over groups of channels."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        _affine(self, (num_channels,), affine, True, device, dtype)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, bias={self.affine}"


class Embedding(Module):
    """A lookup table: weight (num_embeddings, embedding_dim) from N(0, 1), the padding row zero."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None):
        super().__init__()
        if padding_idx is not None:
            if padding_idx > 0:
                assert padding_idx < num_embeddings, "Padding_idx must be within num_embeddings"
            elif padding_idx < 0:
                assert padding_idx >= -num_embeddings, "Padding_idx must be within num_embeddings"
                padding_idx = num_embeddings + padding_idx
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse = max_norm, norm_type, \
            scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = _empty((num_embeddings, embedding_dim), device, dtype)
            self.reset_parameters()
        else:
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, sparse=False):
        """An Embedding over the given (num_embeddings, embedding_dim) weights, frozen unless freeze=False."""
        assert embeddings.dim() == 2, "Embeddings parameter is expected to be 2-dimensional"
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, _weight=embeddings,
                   _freeze=freeze)

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            rows = self.weight.float32().copy()
            rows[self.padding_idx] = 0
            self.weight.assign(rows)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")


class EmbeddingBag(Module):
    """Bags of rows of weight (num_embeddings, embedding_dim), N(0, 1), summed, averaged or maxed (F.embedding_bag)
    without the (indices, embedding_dim) tensor in between."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 mode="mean", sparse=False, _weight=None, include_last_offset=False, padding_idx=None, device=None,
                 dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim, self.max_norm = num_embeddings, embedding_dim, max_norm
        self.norm_type, self.scale_grad_by_freq = norm_type, scale_grad_by_freq
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise AssertionError("padding_idx must be within num_embeddings")
        self.padding_idx = num_embeddings + padding_idx if padding_idx is not None and padding_idx < 0 else \
            padding_idx
        if _weight is None:
            self.weight = _empty((num_embeddings, embedding_dim), device, dtype)
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight)
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                        mode="mean", sparse=False, include_last_offset=False, padding_idx=None):
        """An EmbeddingBag over the given (num_embeddings, embedding_dim) weights, frozen unless freeze=False."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings,
                  include_last_offset, padding_idx)
        bag.weight.requires_grad = not freeze
        return bag

    def reset_parameters(self):
        Embedding.reset_parameters(self)        # N(0, 1), the padding row zero

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset,
                               self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings!r}, {self.embedding_dim!r}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm!r}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type!r}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq!r}"
        s += f", mode={self.mode!r}"
        return s + (f", padding_idx={self.padding_idx!r}" if self.padding_idx is not None else "")


class Dropout(Module):
    """Zero elements with probability p in training, scale the rest by 1 / (1 - p)."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class _Activation(Module):
    fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self).fn(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class ReLU(_Activation):
    fn = staticmethod(F.relu)


class ReLU6(_Activation):
    fn = staticmethod(F.relu6)


class SiLU(_Activation):
    fn = staticmethod(F.silu)


class Mish(_Activation):
    """x * tanh(softplus(x))."""

    fn = staticmethod(F.mish)


class Hardswish(_Activation):
    """x * relu6(x + 3) / 6."""

    fn = staticmethod(F.hardswish)


class Hardsigmoid(_Activation):
    """relu6(x + 3) / 6."""

    fn = staticmethod(F.hardsigmoid)


class SELU(_Activation):
    """scale * elu(x, alpha), the self-normalising constants."""

    fn = staticmethod(F.selu)


class LeakyReLU(Module):
    """x where x > 0, else negative_slope * x."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """x where x > 0, else alpha * (exp(x) - 1)."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear above threshold."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class PReLU(Module):
    """leaky_relu with a learned slope: one (num_parameters=1) or one per channel, initialised to `init`."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = _empty((num_parameters,), device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class GLU(Module):
    """a * sigmoid(b) for the two halves of the input along dim."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"


class Sigmoid(Module):
    def forward(self, input):
        return F.sigmoid(input)


class Tanh(Module):
    def forward(self, input):
        return F.tanh(input)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    def forward(self, input):
        return F.log_softmax(input, self.dim)


class Flatten(Module):
    """Flattens dims start_dim..end_dim into one."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        shape = tuple(input.shape)
        if not shape:
            return apply("reshape", input, shape=(1,))
        s, e = _tensor._dim(self.start_dim, len(shape)), _tensor._dim(self.end_dim, len(shape))
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        return apply("reshape", input, shape=shape[:s] + (int(np.prod(shape[s:e + 1])),) + shape[e + 1:])

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        shape = tuple(input.shape)
        d = _tensor._dim(self.dim, len(shape))
        return apply("reshape", input, shape=shape[:d] + self.unflattened_size + shape[d + 1:])

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class MaxPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation, self.return_indices, self.ceil_mode = padding, dilation, return_indices, ceil_mode

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


# -- containers ----------------------------------------------------------------------------------------------


class Sequential(Module):
    """Modules applied in order: Sequential(a, b) or Sequential(OrderedDict(name=module))."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _index(self, idx):
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return list(self._modules)[idx % n]

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[self._index(idx)]

    def __setitem__(self, idx, module):
        setattr(self, self._index(idx), module)

    def __delitem__(self, idx):
        keys = list(self._modules)[idx] if isinstance(idx, slice) else [self._index(idx)]
        for k in keys:
            delattr(self, k)
        items = list(self._modules.items())             # PyTorch renumbers to keep indices contiguous
        self._modules.clear()
        self._modules.update((str(i), m) for i, (_, m) in enumerate(items))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, sequential):
        for m in sequential:
            self.append(m)
        return self

    def insert(self, index, module):
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        self._modules.update((str(i), m) for i, m in enumerate(items))
        return self

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered so that their parameters are the list's."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[Sequential._index(self, idx)]

    def __setitem__(self, idx, module):
        setattr(self, Sequential._index(self, idx), module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        return Sequential.insert(self, index, module)

    def __repr__(self):
        """As PyTorch prints it: a run of equal modules on one line, "(0-1): 2 x Linear(...)"."""
        runs = []           # [first index, last index, repr]
        for i, m in enumerate(self):
            if runs and repr(m) == runs[-1][2]:
                runs[-1][1] = i
            else:
                runs.append([i, i, repr(m)])
        if not runs:
            return f"{type(self).__name__}()"
        lines = [_addindent(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}", 2) for a, b, r in runs]
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"



class ModuleDict(Module):
    """A dict of modules, registered under their keys."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def clear(self):
        self._modules.clear()

    def update(self, modules):
        for key, module in (modules.items() if hasattr(modules, "items") else modules):
            self[key] = module


def _as_parameter(value):
    """A tensor put in a ParameterList or ParameterDict becomes a Parameter (other values stay as they are)."""
    return Parameter(value) if isinstance(value, _tensor.Tensor) and not isinstance(value, Parameter) else value


def _parameter_lines(items, type_name):
    """PyTorch's repr lines of a parameter container: "  (key): Parameter containing: [torch.float32 of size 2x3]"
    (its type's name where type_name: ParameterDict's)."""
    lines = []
    for key, p in items:
        if isinstance(p, _tensor.Tensor):
            kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
            where = " (GPU 0)" if p.device == "cuda" else ""
            lines.append(f"  ({key}): {kind} containing: [{p.type() if type_name else p.dtype} of size "
                         f"{'x'.join(map(str, p.shape))}{where}]")
        else:
            lines.append(f"  ({key}): Object of type: {type(p).__name__}")
    return "\n".join(lines)


class ParameterList(Module):
    """A list of parameters, registered under "0", "1", ... (tensors put in become Parameters)."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def _name_at(self, idx):
        if not -self._size <= idx < self._size:
            raise IndexError(f"index {idx} is out of range")
        return str(idx % self._size)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self)[idx])
        return getattr(self, self._name_at(idx))

    def __setitem__(self, idx, value):
        setattr(self, self._name_at(idx), _as_parameter(value))

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[i] for i in range(self._size))

    def __iadd__(self, values):
        return self.extend(values)

    def append(self, value):
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        return _parameter_lines(enumerate(self), False)


class ParameterDict(Module):
    """A dict of parameters, registered under their keys (tensors put in become Parameters)."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return getattr(self, key)

    def __setitem__(self, key, value):
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def keys(self):
        return self._keys.keys()

    def values(self):
        return [self[k] for k in self._keys]

    def items(self):
        return [(k, self[k]) for k in self._keys]

    def get(self, key, default=None):
        return self[key] if key in self else default

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        for k in list(self._keys):
            del self[k]

    def update(self, parameters):
        for key, value in (parameters.items() if hasattr(parameters, "items") else parameters):
            self[key] = value

    def extra_repr(self):
        return _parameter_lines(self.items(), True)


# -- attention --------------------------------------------------------------------------------------------------


class NonDynamicallyQuantizableLinear(Linear):
    """MultiheadAttention's out_proj (a Linear, named as PyTorch names it)."""


class MultiheadAttention(Module):
    """PyTorch's MultiheadAttention: in_proj_weight (3E, E), in_proj_bias, out_proj; need_weights returns the
    attention weights averaged over heads."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are not supported by "
                                      "minifp.torch")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        assert self.head_dim * num_heads == embed_dim, "embed_dim must be divisible by num_heads"
        if self._qkv_same_embed_dim:
            self.in_proj_weight = _empty((3 * embed_dim, embed_dim), device, dtype)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = _empty((embed_dim, embed_dim), device, dtype)
            self.k_proj_weight = _empty((embed_dim, self.kdim), device, dtype)
            self.v_proj_weight = _empty((embed_dim, self.vdim), device, dtype)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = _empty((3 * embed_dim,), device, dtype)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        self.bias_k = self.bias_v = None
        self.add_zero_attn = False
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)

    def _weights(self):
        E = self.embed_dim
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            ws = [apply("getitem", w, index=slice(i * E, (i + 1) * E)) for i in range(3)]
        else:
            ws = [self.q_proj_weight, self.k_proj_weight, self.v_proj_weight]
        b = self.in_proj_bias
        bs = [None] * 3 if b is None else [apply("getitem", b, index=slice(i * E, (i + 1) * E)) for i in range(3)]
        return ws, bs

    def _check_inputs(self, query, key, value):
        """PyTorch's AssertionErrors for inputs of the wrong rank or width (shapes in its (L, N, E) order)."""
        ranks = (query.ndim, key.ndim, value.ndim)
        if ranks[0] not in (2, 3):
            raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {ranks[0]}-D query "
                                 f"tensor")
        if ranks[1:] != (ranks[0],) * 2:
            kind = "unbatched (2-D)" if ranks[0] == 2 else "batched (3-D)"
            raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be {ranks[0]}-D but found "
                                 f"{ranks[1]}-D and {ranks[2]}-D tensors respectively")
        if query.shape[-1] != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but got {query.shape[-1]}")
        k, v = key.shape, value.shape
        if self.batch_first and ranks[0] == 3:
            k, v = (type(k)((s[1], s[0], s[2])) for s in (k, v))
        if self._qkv_same_embed_dim:
            if k != v:
                raise AssertionError(f"key shape {k} does not match value shape {v}")
            return
        if k[:-1] != v[:-1]:
            raise AssertionError(f"key's sequence and batch dims {type(k)(k[:-1])} do not match value's "
                                 f"{type(v)(v[:-1])}")
        for name, width, weight in (("key", k[-1], self.k_proj_weight), ("value", v[-1], self.v_proj_weight)):
            if width != weight.shape[1]:
                raise AssertionError(f"expecting {name} weights shape of ({self.embed_dim}, {width}), but got "
                                     f"{weight.shape}")

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        if is_causal and attn_mask is None:         # is_causal is only a hint about attn_mask (PyTorch's check)
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                               "method `generate_square_subsequent_mask` to create this mask.")
        self._check_inputs(query, key, value)
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = (apply("reshape", t, shape=(1,) + tuple(t.shape)) for t in (query, key, value))
            key_padding_mask = None if key_padding_mask is None else apply(
                "reshape", key_padding_mask, shape=(1,) + tuple(key_padding_mask.shape))
        elif not self.batch_first:      # (L, N, E) -> (N, L, E)
            query, key, value = (apply("transpose", t, axes=(1, 0, 2)) for t in (query, key, value))
        (wq, wk, wv), (bq, bk, bv) = self._weights()
        n, L, E = query.shape
        S, H, hd = key.shape[1], self.num_heads, self.head_dim

        def heads(t, length):
            return apply("transpose", apply("reshape", t, shape=(n, length, H, hd)), axes=(0, 2, 1, 3))
        q = heads(F.linear(query, wq, bq), L)
        k = heads(F.linear(key, wk, bk), S)
        v = heads(F.linear(value, wv, bv), S)
        mask = self._mask(attn_mask, key_padding_mask, is_causal, n, L, S, query)
        # PyTorch's path with weights: q scaled by 1/sqrt(head_dim), scores (+ mask), softmax, dropout, @ v.
        scores = apply("matmul", apply("mul", q, 1 / math.sqrt(hd)), F._swap_last(k))
        if mask is not None:
            scores = apply("add", scores, mask, _out=scores.fmt)
        attn = apply("softmax", scores, axis=-1)
        if self.dropout > 0 and self.training:
            attn = F.dropout(attn, self.dropout, True)
        out = apply("matmul", attn, v)
        out = apply("reshape", apply("transpose", out, axes=(0, 2, 1, 3)), shape=(n, L, E))
        out = F.linear(out, self.out_proj.weight, self.out_proj.bias)
        if unbatched:
            out = apply("reshape", out, shape=(L, E))
        elif not self.batch_first:
            out = apply("transpose", out, axes=(1, 0, 2))
        if not need_weights:
            return out, None
        weights = apply("mean", attn, axis=1) if average_attn_weights else attn
        return out, (apply("reshape", weights, shape=tuple(weights.shape[1:])) if unbatched else weights)

    def _mask(self, attn_mask, key_padding_mask, is_causal, n, L, S, like):
        """One float mask (n, 1 or H, L, S) of 0 / -inf from MHA's masks (True = do NOT attend here)."""
        xp_mask = None
        if attn_mask is not None:
            m = F._float_mask(attn_mask, like, attend_when_true=False)
            if m.ndim == 3:             # (n * H, L, S)
                m = apply("reshape", m, shape=(n, self.num_heads, L, S))
            xp_mask = m
        if key_padding_mask is not None:
            kp = F._float_mask(key_padding_mask, like, attend_when_true=False)
            kp = apply("reshape", kp, shape=(n, 1, 1, S))
            xp_mask = kp if xp_mask is None else apply("add", xp_mask, kp)
        return xp_mask

    def extra_repr(self):
        return ""


# -- losses -------------------------------------------------------------------------------------------------------


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self.reduction = F._reduction(reduction, size_average, reduce)


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class CrossEntropyLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class MSELoss(_Loss):
    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class BCELoss(_WeightedLoss):
    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)
