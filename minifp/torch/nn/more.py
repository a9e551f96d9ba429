"""torch.nn layers that are one nn.functional call with the settings they were built with (issue 32's breadth):
pooling, unpooling and padding layers, more activations, dropouts and losses, distances; plus Conv3d,
ConvTranspose1d/3d and Bilinear with PyTorch's parameter shapes and initialisation."""
from __future__ import annotations

import inspect
import math

from .. import _tensor
from . import functional as F, init
from .layers import _ConvNd
from .module import Module, Parameter

__all__ = []


class _Call(Module):
    """A layer whose forward calls one nn.functional function with the settings it was built with, kept as the
    attributes PyTorch's layer has (and shown by its repr)."""

    fn = None
    takes_training = False      # dropouts: the layer's training flag is passed on

    def __init__(self, **settings):
        super().__init__()
        for name, value in settings.items():
            setattr(self, name, value)
        self._settings = tuple(settings)

    def forward(self, *inputs):
        extra = {"training": self.training} if self.takes_training else {}
        return type(self).fn(*inputs, **{k: getattr(self, k) for k in self._settings}, **extra)

    def extra_repr(self):
        return ", ".join(f"{k}={getattr(self, k)!r}" for k in self._settings)


def _layer(name, fn, signature, doc, takes_training=False, check=None):
    """A _Call layer class `name` calling fn, built from the arguments of `signature` (a function whose parameters
    are the layer's, named as fn's keywords); check(**arguments), where given, refuses bad ones first."""
    sig = inspect.signature(signature)

    def __init__(self, *args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        if check is not None:
            check(**bound.arguments)
        _Call.__init__(self, **bound.arguments)

    __init__.__signature__ = sig.replace(parameters=[inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
                                         + list(sig.parameters.values()))
    cls = type(name, (_Call,), {"__init__": __init__, "__doc__": doc, "fn": staticmethod(fn),
                                "takes_training": takes_training, "__module__": __name__})
    globals()[name] = cls
    __all__.append(name)
    return cls


# -- pooling and unpooling --------------------------------------------------------------------------------------------
for _n, _f in (("MaxPool1d", F.max_pool1d), ("MaxPool3d", F.max_pool3d)):
    _layer(_n, _f, lambda kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False:
           None, f"F.{_f.__name__} as a layer.")
_layer("AvgPool1d", F.avg_pool1d, lambda kernel_size, stride=None, padding=0, ceil_mode=False,
       count_include_pad=True: None, "F.avg_pool1d as a layer.")
_layer("AvgPool3d", F.avg_pool3d, lambda kernel_size, stride=None, padding=0, ceil_mode=False,
       count_include_pad=True, divisor_override=None: None, "F.avg_pool3d as a layer.")
for _n, _f in (("AdaptiveMaxPool1d", F.adaptive_max_pool1d), ("AdaptiveMaxPool2d", F.adaptive_max_pool2d),
               ("AdaptiveMaxPool3d", F.adaptive_max_pool3d)):
    _layer(_n, _f, lambda output_size, return_indices=False: None, f"F.{_f.__name__} as a layer.")
for _n, _f in (("AdaptiveAvgPool1d", F.adaptive_avg_pool1d), ("AdaptiveAvgPool3d", F.adaptive_avg_pool3d)):
    _layer(_n, _f, lambda output_size: None, f"F.{_f.__name__} as a layer.")
for _n, _f in (("FractionalMaxPool2d", F.fractional_max_pool2d), ("FractionalMaxPool3d", F.fractional_max_pool3d)):
    _layer(_n, _f, lambda kernel_size, output_size=None, output_ratio=None, return_indices=False,
           _random_samples=None: None, f"F.{_f.__name__} as a layer.")


class _MaxUnpool(Module):
    fn = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride if stride is not None else kernel_size, padding

    def forward(self, input, indices, output_size=None):
        return type(self).fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool):
    """F.max_unpool1d as a layer (forward(input, indices, output_size=None))."""
    fn = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpool):
    """F.max_unpool2d as a layer (forward(input, indices, output_size=None))."""
    fn = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpool):
    """F.max_unpool3d as a layer (forward(input, indices, output_size=None))."""
    fn = staticmethod(F.max_unpool3d)


__all__ += ["MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]

# -- padding: PyTorch's pad layers take one int or the (before, after) pairs from the last dim backwards -----------


def _pad_layer(name, mode, dims):
    def pad(input, padding, value=0.0):
        amounts = (padding,) * (2 * dims) if isinstance(padding, int) else tuple(padding)
        return F.pad(input, amounts, mode, value if mode == "constant" else None)
    args = (lambda padding, value: None) if name.startswith("Constant") else (lambda padding: None)
    _layer(name, pad, args, f"F.pad(mode={mode!r}) of the last {dims} dim(s) as a layer.")


for _d in (1, 2, 3):
    _pad_layer(f"ConstantPad{_d}d", "constant", _d)
    _pad_layer(f"ReflectionPad{_d}d", "reflect", _d)
    _pad_layer(f"ReplicationPad{_d}d", "replicate", _d)
    _pad_layer(f"CircularPad{_d}d", "circular", _d)
    _layer(f"ZeroPad{_d}d", (lambda d: lambda input, padding: F.pad(
        input, (padding,) * (2 * d) if isinstance(padding, int) else tuple(padding)))(_d),
        lambda padding: None, f"Zeros around the last {_d} dim(s).")

# -- activations, dropouts, normalisation, distances ------------------------------------------------------------------
_layer("Softmin", F.softmin, lambda dim=None: None, "softmax(-x) along dim.")
_layer("Softshrink", F.softshrink, lambda lambd=0.5: None, "x -+ lambd beyond +-lambd, else 0.")
_layer("Hardshrink", F.hardshrink, lambda lambd=0.5: None, "x beyond +-lambd, else 0.")
_layer("Tanhshrink", F.tanhshrink, lambda: None, "x - tanh(x).")
_layer("Softsign", F.softsign, lambda: None, "x / (1 + |x|).")
_layer("LogSigmoid", F.logsigmoid, lambda: None, "log(sigmoid(x)).")
_layer("CELU", F.celu, lambda alpha=1.0, inplace=False: None, "max(0, x) + min(0, alpha * expm1(x / alpha)).")
_layer("Threshold", F.threshold, lambda threshold, value, inplace=False: None, "x above threshold, else value.")
_layer("RReLU", F.rrelu, lambda lower=1.0 / 8, upper=1.0 / 3, inplace=False: None,
       "Leaky ReLU with a random slope in training, the mean slope in evaluation.", takes_training=True)
for _n, _f in (("AlphaDropout", F.alpha_dropout), ("FeatureAlphaDropout", F.feature_alpha_dropout),
               ("Dropout1d", F.dropout1d), ("Dropout2d", F.dropout2d), ("Dropout3d", F.dropout3d)):
    _layer(_n, _f, lambda p=0.5, inplace=False: None, f"F.{_f.__name__} in training, the identity in evaluation.",
           takes_training=True, check=lambda p, inplace: F._dropout_checked(p))
_layer("LocalResponseNorm", F.local_response_norm, lambda size, alpha=1e-4, beta=0.75, k=1.0: None,
       "Each value over the mean square of its neighbouring channels.")
_layer("Unfold", F.unfold, lambda kernel_size, dilation=1, padding=0, stride=1: None, "im2col: sliding blocks.")
_layer("ChannelShuffle", F.channel_shuffle, lambda groups: None, "ShuffleNet's channel shuffle.")
_layer("CosineSimilarity", F.cosine_similarity, lambda dim=1, eps=1e-8: None, "Cosine of x1 and x2 along dim.")
_layer("PairwiseDistance", F.pairwise_distance, lambda p=2.0, eps=1e-6, keepdim=False: None,
       "||x1 - x2 + eps||_p over the last dim.")

# -- losses -------------------------------------------------------------------------------------------------------
_layer("HuberLoss", F.huber_loss, lambda reduction="mean", delta=1.0: None, "F.huber_loss as a layer.")
_layer("SmoothL1Loss", F.smooth_l1_loss, lambda size_average=None, reduce=None, reduction="mean", beta=1.0: None,
       "F.smooth_l1_loss as a layer.")
_layer("KLDivLoss", F.kl_div, lambda size_average=None, reduce=None, reduction="mean", log_target=False: None,
       "F.kl_div as a layer.")
_layer("PoissonNLLLoss", F.poisson_nll_loss, lambda log_input=True, full=False, size_average=None, eps=1e-8,
       reduce=None, reduction="mean": None, "F.poisson_nll_loss as a layer.")
_layer("GaussianNLLLoss", F.gaussian_nll_loss, lambda *, full=False, eps=1e-6, reduction="mean": None,
       "F.gaussian_nll_loss as a layer (forward(input, target, var)).")
for _n, _f in (("MarginRankingLoss", F.margin_ranking_loss), ("CosineEmbeddingLoss", F.cosine_embedding_loss)):
    _layer(_n, _f, lambda margin=0.0, size_average=None, reduce=None, reduction="mean": None,
           f"F.{_f.__name__} as a layer.")
_layer("HingeEmbeddingLoss", F.hinge_embedding_loss, lambda margin=1.0, size_average=None, reduce=None,
       reduction="mean": None, "F.hinge_embedding_loss as a layer.")
for _n, _f in (("SoftMarginLoss", F.soft_margin_loss), ("MultiLabelMarginLoss", F.multilabel_margin_loss)):
    _layer(_n, _f, lambda size_average=None, reduce=None, reduction="mean": None, f"F.{_f.__name__} as a layer.")
_layer("MultiLabelSoftMarginLoss", F.multilabel_soft_margin_loss, lambda weight=None, size_average=None,
       reduce=None, reduction="mean": None, "F.multilabel_soft_margin_loss as a layer.")
_layer("MultiMarginLoss", F.multi_margin_loss, lambda p=1, margin=1.0, weight=None, size_average=None, reduce=None,
       reduction="mean": None, "F.multi_margin_loss as a layer.")
_layer("TripletMarginLoss", F.triplet_margin_loss, lambda margin=1.0, p=2.0, eps=1e-6, swap=False,
       size_average=None, reduce=None, reduction="mean": None, "F.triplet_margin_loss as a layer.")
_layer("TripletMarginWithDistanceLoss", F.triplet_margin_with_distance_loss, lambda *, distance_function=None,
       margin=1.0, swap=False, reduction="mean": None, "F.triplet_margin_with_distance_loss as a layer.")

_layer("CTCLoss", F.ctc_loss, lambda blank=0, reduction="mean", zero_infinity=False: None,
       "F.ctc_loss as a layer (forward(log_probs, targets, input_lengths, target_lengths)).")


# -- layers with parameters -----------------------------------------------------------------------------------------
class Conv3d(_ConvNd):
    """3-D convolution over (N, C, D, H, W): weight (out_channels, in_channels // groups, kD, kH, kW)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(3, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, False, 0, device, dtype)

    def forward(self, input):
        return F.conv3d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class ConvTranspose1d(_ConvNd):
    """The transposed 1-D convolution: weight (in_channels, out_channels // groups, kL)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(1, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, True, output_padding, device, dtype)

    def forward(self, input):
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                  self.groups, self.dilation)


class ConvTranspose3d(_ConvNd):
    """The transposed 3-D convolution: weight (in_channels, out_channels // groups, kD, kH, kW)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(3, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, True, output_padding, device, dtype)

    def forward(self, input):
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                  self.groups, self.dilation)


class Bilinear(Module):
    """x1^T W x2 + b: weight (out_features, in1_features, in2_features), both uniform in +-1/sqrt(in1_features)."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(_tensor.empty(out_features, in1_features, in2_features, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(_tensor.empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


__all__ += ["Conv3d", "ConvTranspose1d", "ConvTranspose3d", "Bilinear"]
