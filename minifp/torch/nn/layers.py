"""More of torch.nn's layers: Conv1d, ConvTranspose2d, BatchNorm3d, InstanceNorm1d/2d/3d, RMSNorm, PixelShuffle,
PixelUnshuffle and Upsample, with PyTorch's arguments, parameter shapes (state_dict keys), initialisation and reprs."""
from __future__ import annotations

import math
import numbers
import warnings

from .. import _tensor
from . import functional as F, init, modules
from .module import Module, Parameter

__all__ = ["Conv1d", "ConvTranspose2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "RMSNorm",
           "PixelShuffle", "PixelUnshuffle", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


def _empty(shape, device=None, dtype=None):
    return Parameter(_tensor.empty(*shape, dtype=dtype, device=device))


def _tuple(v, n, arg):
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return (int(v),) * n
    if isinstance(v, (tuple, list)) and len(v) == n and all(isinstance(i, numbers.Integral) for i in v):
        return tuple(int(i) for i in v)
    raise TypeError(f"{arg} must be an int or a tuple of {n} ints, got {v!r}")


class _ConvNd(Module):
    """The parameters, checks, initialisation and repr PyTorch's _ConvNd gives every convolution."""

    def __init__(self, n, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                 padding_mode, transposed, output_padding, device, dtype):
        super().__init__()
        if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise NotImplementedError(f"padding_mode='{padding_mode}' is not supported by minifp.torch (zeros only)")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride = _tuple(kernel_size, n, "kernel_size"), _tuple(stride, n, "stride")
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n, "padding")
        self.dilation = _tuple(dilation, n, "dilation")
        self.output_padding = _tuple(output_padding, n, "output_padding")
        self.transposed, self.padding_mode = transposed, padding_mode
        shape = ((in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups))
        self.weight = _empty(shape + self.kernel_size, device, dtype)
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
                init.uniform_(self.bias, -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))

    def extra_repr(self):
        n = len(self.kernel_size)
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"       # a string unquoted, as PyTorch prints it
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L): weight (out_channels, in_channels // groups, kernel_size)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(1, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, False, 0, device, dtype)

    def forward(self, input):
        return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class ConvTranspose2d(_ConvNd):
    """The transposed 2-D convolution: weight (in_channels, out_channels // groups, kH, kW)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(2, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, True, output_padding, device, dtype)

    def forward(self, input, output_size=None):
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)

    def _output_padding(self, input, output_size):
        """output_padding, or the one that gives output_size (which a strided input's size leaves ambiguous)."""
        if output_size is None:
            return self.output_padding
        lead = 2 if input.ndim == 4 else 1
        output_size = list(output_size)
        if len(output_size) == lead + 2:
            output_size = output_size[lead:]
        if len(output_size) != 2:
            raise ValueError(f"ConvTranspose2D: for {input.ndim}D input, output_size must have 2 or {lead + 2} "
                             f"elements (got {len(output_size)})")
        low = [(input.shape[lead + d] - 1) * self.stride[d] - 2 * self.padding[d]
               + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(2)]
        high = [low[d] + self.stride[d] - 1 for d in range(2)]
        if any(not lo <= size <= hi for size, lo, hi in zip(output_size, low, high)):
            raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {low} to "
                             f"{high} (for an input of {_tensor.Size(input.shape[lead:])})")
        return tuple(size - lo for size, lo in zip(output_size, low))


class BatchNorm3d(modules._BatchNorm):
    """Batch normalisation over (N, C, D, H, W)."""

    def _check_input_dim(self, input):
        if input.ndim != 5:
            raise ValueError(f"expected 5D input (got {input.ndim}D input)")


class _InstanceNorm(Module):
    """Each sample's channels normalised over their own positions; affine adds a scale and shift per channel.
    _no_batch_dim: the dims of an input without its batch dim (PyTorch's _get_no_batch_dim)."""
    _no_batch_dim = None

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.register_parameter("weight", Parameter(_tensor.ones(num_features, dtype=dtype, device=device))
                                if affine else None)
        self.register_parameter("bias", Parameter(_tensor.zeros(num_features, dtype=dtype, device=device))
                                if affine and bias else None)
        if track_running_stats:     # PyTorch's buffers; instance norm never counts num_batches_tracked up
            self.register_buffer("running_mean", _tensor.zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", _tensor.ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", _tensor.tensor(0, dtype=_tensor.int64, device=device))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)
        init._initialised(self.weight, self.bias, self.running_mean, self.running_var, self.num_batches_tracked)

    reset_running_stats = modules._BatchNorm.reset_running_stats       # (PyTorch's _NormBase's, for both)
    reset_parameters = modules._BatchNorm.reset_parameters

    def forward(self, input):
        dims = self._no_batch_dim
        if input.ndim not in (dims, dims + 1):
            raise ValueError(f"expected {dims}D or {dims + 1}D input (got {input.ndim}D input)")
        feature_dim = input.ndim - dims
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          f"warning by not passing in num_features, which is not used because affine=False")
        x = input.reshape((1,) + tuple(input.shape)) if input.ndim == dims else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.reshape(tuple(out.shape[1:])) if input.ndim == dims else out

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Instance norm over (L) of (N, C, L) or (C, L) inputs."""
    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance norm over (H, W) of (N, C, H, W) or (C, H, W) inputs."""
    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance norm over (D, H, W) of (N, C, D, H, W) or (C, D, H, W) inputs."""
    _no_batch_dim = 4


class RMSNorm(Module):
    """x / sqrt(mean(x**2) + eps) * weight over the trailing normalized_shape dims (eps None: the dtype's eps)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = shape, eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_tensor.ones(*shape, dtype=dtype, device=device))
            init._initialised(self.weight)
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class PixelShuffle(Module):
    """(*, C * r**2, H, W) -> (*, C, H * r, W * r)."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H * r, W * r) -> (*, C * r**2, H, W)."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class Upsample(Module):
    """F.interpolate as a module: size or scale_factor, mode 'nearest', 'linear' or 'bilinear'."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, numbers.Real) else (
            tuple(float(f) for f in scale_factor) if scale_factor is not None else None)
        self.mode, self.align_corners, self.recompute_scale_factor = mode, align_corners, recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Upsample with mode 'nearest'."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample with mode 'bilinear' and align_corners=True (PyTorch's)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
