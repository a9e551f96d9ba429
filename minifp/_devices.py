"""Devices as values: how a device computes where one rounding per op is not what its kernels do.

The dispatcher looks a tensor's device up here once per op (`numerics`): "cpu" is the ideal device, "cuda" the
H100 as PyTorch 2.11 drives it. A face names the device and passes on the switches a script sets
(torch.backends.cudnn.enabled) through minifp.engine's set_device_numerics.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ._formats import bfloat16, float16
from ._state import Accumulator

__all__ = ["Device", "IDEAL", "H100", "CUBLAS", "DEVICES", "STAGES", "INPUT_FORMAT", "TF32_MIN_CHANNELS", "numerics"]


@dataclass(frozen=True)
class Device:
    """A device's numerics. conv_bias: "fused" (the bias joins the float32 sum before the one rounding) or "cudnn"
    (the convolution is rounded to the output's format first, then the bias added as a half op, wherever PyTorch runs
    cuDNN's or its im2col GEMM's kernel; its native depthwise kernel fuses it). batch_norm: "exact" (the weight and
    bias gradients are exact sums, rounded once) or "native" (PyTorch's native CUDA kernel, where it runs, rounds
    each summand and every partial sum a warp shuffle passes into the input's format; see docs/h100_batchnorm.md).
    gemm: how half-precision matrix products (matmul, linear: cuBLAS's; convolutions are cuDNN's) accumulate where
    no minifp.accumulate block says: None (float32 BLAS, one rounding) or an Accumulator (CUBLAS: the H100's tensor
    cores with cuBLAS's split-K, bit for bit on the recorded GEMMs and an H200's float16 MLP training steps, but some
    50x slower: opt in with H100.with_gemm(CUBLAS)).
    attention: "exact" (a fused attention op rounds once) or "cudnn" (cuDNN's flash attention as fit to the H100,
    minifp._flash). cudnn: torch.backends.cudnn.enabled. tf32_conv: where TF32 is allowed for convolutions, "always" (every float32
    conv2d's products) or "cudnn" (where cuDNN picks a TF32 kernel: TF32_MIN_CHANNELS).
    The half-precision kernels and gradient formulas, each "exact" (one rounding) or "cuda" (PyTorch 2.11's CUDA path,
    which stores intermediates in the input's format; docs/h100_halfops.md): scan (cumsum: a Sklansky scan whose every
    add rounds), softmax_backward (grad * output rounded first), group_norm (mean and rstd stored in the input's
    format), layer_norm (the weight gradient summed by the kernel, not per element first), embedding_backward (chunks
    of 32 indices, each chunk's sum added in the weight's format), var_backward, bce_backward and norm_backward
    (PyTorch's formulas for var, binary_cross_entropy_with_logits and vector_norm, step by step, in the input's
    format). number_divisor: "exact" (x / b rounds the quotient once) or "reciprocal" (x times b's reciprocal, as CUDA
    divides by a host scalar, forward and in DivBackward0: a 0-d CPU tensor b's computed in x's opmath type, a
    Python number's in double, then rounded to it; recorded on an H200, tests/fixtures/pytorch/cuda_division.json)."""

    name: str
    conv_bias: str = "fused"
    batch_norm: str = "exact"
    attention: str = "exact"
    gemm: object = None
    cudnn: bool = True
    tf32_conv: str = "always"
    scan: str = "exact"
    softmax_backward: str = "exact"
    group_norm: str = "exact"
    layer_norm: str = "exact"
    embedding_backward: str = "exact"
    var_backward: str = "exact"
    bce_backward: str = "exact"
    norm_backward: str = "exact"
    number_divisor: str = "exact"

    def with_gemm(self, accumulator):
        """This device with its half-precision GEMMs accumulating as `accumulator` says (None: float32 BLAS)."""
        return replace(self, gemm=accumulator)

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

    def uses_tf32(self, pass_, x_shape, w_shape, params):
        """Whether pass_ ("fprop", "dgrad" or "wgrad") of a float32 conv2d multiplies in TF32 where TF32 is allowed;
        for "cudnn", TF32_MIN_CHANNELS: fit to recordings, not a known rule."""
        if self.tf32_conv == "always":
            return True
        if not self.cudnn:      # PyTorch's native kernels: cuBLAS GEMMs, under the matmul switch (highest: float32)
            return False
        if params.get("layout", "NCHW") == "NHWC":      # TensorFlow's shapes -> PyTorch's
            x_shape, w_shape = (x_shape[0], x_shape[3], *x_shape[1:3]), (w_shape[3], w_shape[2], *w_shape[:2])
        c, groups = x_shape[1], params.get("groups", 1)
        if groups > 1 and groups == c:      # depthwise: PyTorch's native kernel (float32 never goes to cuDNN)
            return False
        k, s = max(w_shape[2:]), max(_pair(params.get("stride", 1)))     # the nearest recorded filter
        rule = TF32_MIN_CHANNELS[min(TF32_MIN_CHANNELS, key=lambda ks: (abs(ks[0] - k), ks[1] != s))]
        out = w_shape[0]
        least = rule[pass_][x_shape[2] * x_shape[3] > 256][(out > 32) + (out > 128)]
        return least is not None and c // groups >= least

    def stages(self, op_name):
        """Whether this device's kernel (or PyTorch's gradient formula) for the half-precision op op_name rounds its
        intermediates into the op's format (STAGES: the field that says so)."""
        field = STAGES.get(op_name)
        return field is not None and getattr(self, field) == "cuda"

    def native_batch_norm(self, fmt, weight, bias, ndim):
        """Whether a half-precision batch norm's backward runs PyTorch's native kernel with rounded partial sums
        here: PyTorch 2.11 gives cuDNN only float16 input of 3 or more dimensions with a float32 weight and a bias
        (cudnn on), so always for bfloat16, and for float16 with cuDNN off, a float16 (or no) weight, no bias, or
        BatchNorm1d's (N, C) input."""
        if self.batch_norm != "native":
            return False
        return (fmt == bfloat16 or not self.cudnn or weight is None or not weight.fmt.is_float32 or bias is None
                or ndim < 3)


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


# cuDNN 9.19's TF32 kernels for a float32 conv2d with allow_tf32: PyTorch 2.11's heuristic choice, not a documented
# rule. The fewest input channels (per group) from which each pass takes a TF32 kernel, by (kernel size, stride),
# for inputs of up to 16x16 positions / larger, each for up to 32 / up to 128 / more output channels; None: never.
# Fit by tools/fit_tf32conv.py to 240 shapes (batch 8, 8x8 and 32x32 inputs, 3..256 channels; kernel names on an
# H200, the forward checked on the H100): it agrees with 239 (fprop), 233 (dgrad), 221 (wgrad) of them.
TF32_MIN_CHANNELS = {
    (1, 1): {"fprop": ((32, 32, 32), (128, 16, 8)), "dgrad": ((8, 8, 3), (16, 8, 3)),
             "wgrad": ((8, 8, 8), (128, 3, 3))},
    (3, 1): {"fprop": ((64, 64, 64), (64, 64, 16)), "dgrad": ((None, None, 128), (128, 8, 16)),
             "wgrad": ((None, None, None), (None, 3, 3))},
    (3, 2): {"fprop": ((64, 128, 64), (64, 64, 16)), "dgrad": ((None, None, None), (256, 256, 64)),
             "wgrad": ((None, None, None), (32, 3, 3))},
    (5, 1): {"fprop": ((16, 8, 8), (64, 8, 8)), "dgrad": ((None, None, 128), (16, 16, 16)),
             "wgrad": ((None, None, 128), (3, None, 3))},
    (7, 2): {"fprop": ((16, 3, 3), (16, 3, 3)), "dgrad": ((None, None, 3), (128, 128, 64)),
             "wgrad": ((None, 32, None), (32, 3, 3))},
}

# The ops whose half-precision intermediates a Device field decides (the op bodies mark them with _stage)
STAGES = {"softmax": "softmax_backward", "group_norm": "group_norm", "layer_norm": "layer_norm",
          "embedding": "embedding_backward", "var": "var_backward",
          "binary_cross_entropy_with_logits": "bce_backward", "vector_norm": "norm_backward"}
# Ops whose intermediates are in their first input's format, whatever the output's (a float32 target promotes the
# loss): under autocast PyTorch casts that input to float32 first, so the dispatcher does too
INPUT_FORMAT = frozenset({"binary_cross_entropy_with_logits"})
_CUDA_HALF = dict.fromkeys(("scan", *STAGES.values()), "cuda")

# cuBLAS's GEMMs on an H100: the tensor cores' chained sums (minifp._tensorcore), k split as fit (minifp._cublas)
CUBLAS = Accumulator(tensor_core="H100", split_k=True)
IDEAL = Device("ideal")                         # one rounding per op: widen, compute, round once
H100 = Device("H100", conv_bias="cudnn", batch_norm="native", attention="cudnn", tf32_conv="cudnn",
              number_divisor="reciprocal", **_CUDA_HALF)     # PyTorch 2.11 on an H100, cuDNN 9.19 (the recordings in ../shared/gpu)

# The device each device name computes as: process-wide, as PyTorch's torch.backends switches are.
DEVICES = {"cpu": IDEAL, "cuda": H100, "ideal": IDEAL}


def numerics(device):
    """The Device a tensor's device name computes as (IDEAL for a name not listed)."""
    return DEVICES.get(device, IDEAL)
