"""Devices as values: how a device computes where one rounding per op is not what its kernels do.

The dispatcher looks a tensor's device up here once per op (`numerics`): "cpu" is the ideal device, "cuda" the
H100 as PyTorch 2.11 drives it. A face names the device and passes on the switches a script sets
(torch.backends.cudnn.enabled) through minifp.engine's set_device_numerics.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ._formats import bfloat16, float16

__all__ = ["Device", "IDEAL", "H100", "DEVICES", "numerics"]


@dataclass(frozen=True)
class Device:
    """A device's numerics. conv_bias: "fused" (the bias joins the float32 sum before the one rounding) or "cudnn"
    (the convolution is rounded to the output's format first, then the bias added as a half op, wherever PyTorch runs
    cuDNN's or its im2col GEMM's kernel; its native depthwise kernel fuses it). batch_norm: "exact" (the weight and
    bias gradients are exact sums, rounded once) or "native" (PyTorch's native CUDA kernel, where it runs, rounds
    each summand and every partial sum a warp shuffle passes into the input's format; see docs/h100_batchnorm.md).
    cudnn: torch.backends.cudnn.enabled."""

    name: str
    conv_bias: str = "fused"
    batch_norm: str = "exact"
    cudnn: bool = True

    def with_cudnn(self, enabled):
        """This device with cuDNN on (True) or off (False)."""
        return replace(self, cudnn=bool(enabled))

    def rounds_before_bias(self, x_shape, w_shape, params, fmt):
        """Whether a half-precision conv2d on this device rounds its convolution before adding the bias."""
        if self.conv_bias == "fused" or params.get("layout", "NCHW") != "NCHW":
            return False
        n, c, h, w = x_shape
        groups = params.get("groups", 1)
        if groups == 1 or groups != c or w_shape[0] % c:
            return True                 # dense or grouped: cuDNN, or with it off the im2col GEMM, then a bias add
        return self.cudnn and _cudnn_depthwise(x_shape, w_shape, params, fmt)   # else the native depthwise kernel

    def native_batch_norm(self, fmt, weight):
        """Whether a half-precision batch norm's backward runs PyTorch's native kernel with rounded partial sums
        here: PyTorch 2.11 gives cuDNN only float16 input with a float32 weight (cudnn on), so always for
        bfloat16, and for float16 with cuDNN off or a float16 (or no) weight."""
        if self.batch_norm != "native":
            return False
        return fmt == bfloat16 or not self.cudnn or weight is None or not weight.fmt.is_float32


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _cudnn_depthwise(x_shape, w_shape, params, fmt):
    """PyTorch 2.11's use_cudnn_depthwise and check_cudnn_depthwise_workload_with_filter for a contiguous NCHW
    depthwise convolution: float16 only, 32+ channels, no dilation, a square stride; a square 1/3/5 filter, width 7+,
    stride 1, or stride 2 with enough channels and width. Fitted to (and agreeing with) the H100 recordings' 14
    shapes; channels_last inputs, which PyTorch always gives cuDNN, are not modelled."""
    n, c, h, w = x_shape
    kh, kw = w_shape[2], w_shape[3]
    (sh, sw), dilation = _pair(params.get("stride", 1)), _pair(params.get("dilation", 1))
    if fmt != float16 or c < 32 or dilation != (1, 1) or sh != sw and h != 1:
        return False
    if kh != kw or kh not in (1, 3, 5) or w < 7:
        return False
    if sw == 1:
        return True
    if sw != 2:
        return False
    if n == 1:
        return kh != 1 or w <= 28
    return kh == 1 and n <= 16 and c >= 128 and w <= 7 or kh != 1 and (c >= 512 or c >= 256 and w >= 28)


IDEAL = Device("ideal")                         # one rounding per op: widen, compute, round once
H100 = Device("H100", conv_bias="cudnn", batch_norm="native")   # PyTorch 2.11 on an H100, cuDNN 9.19 (the
# recordings in ../shared/gpu)

# The device each device name computes as: process-wide, as PyTorch's torch.backends switches are.
DEVICES = {"cpu": IDEAL, "cuda": H100, "ideal": IDEAL}


def numerics(device):
    """The Device a tensor's device name computes as (IDEAL for a name not listed)."""
    return DEVICES.get(device, IDEAL)
