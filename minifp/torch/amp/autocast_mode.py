"""torch.autocast: PyTorch's per-device op lists (aten/src/ATen/autocast_mode.{h,cpp}) over the engine's ops.

The lists name engine ops (and scaled_dot_product_attention, which nn.functional composes); PyTorch ops
the face does not have are left out. Which device's lists apply
comes from `device_type`, and only tensors on that device are cast (PyTorch's eligibility rule).
"""
from __future__ import annotations

import functools
import warnings

from ...engine import Autocast, autocast_scope, current_autocast
from .. import _device
from .._tensor import as_dtype, format_of, bfloat16, float16

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "LISTS"]

# (lower_precision_fp, fp32) per device. fp32_set_opt_dtype ops (sum, softmax, log_softmax) are in fp32:
# they read lp and write float32, which is what casting first and computing in float32 gives exactly.
# scaled_dot_product_attention is composed of engine ops: nn.functional reads its entry, casts q, k, v once
# and runs the inside without autocast, as PyTorch's kernel does. On CUDA
# cross_entropy is log_softmax and nll_loss; the CPU lists it itself (nn.functional casts its input).
# `2.0 / x` is reciprocal(x) * 2.0 (Tensor.__rtruediv__), so float32 under CUDA autocast, as on the H100.
# binary_cross_entropy is banned on CUDA (nn.functional raises PyTorch's error there).
_CUDA_LOWER = {"matmul", "linear", "conv2d", "scaled_dot_product_attention"}
_CUDA_FP32 = {"exp", "expm1", "log", "log1p", "reciprocal", "rsqrt", "pow", "softplus", "layer_norm", "group_norm", "sum", "softmax", "log_softmax", "nll_loss",
              "mse_loss", "l1_loss", "binary_cross_entropy_with_logits",
              # issue 32's losses and distances (the loss ops and, for those nn.functional composes, the whole
              # function: cast once, the inside without autocast)
              "huber_loss", "smooth_l1_loss", "multi_margin_loss", "multilabel_margin_loss", "kl_div",
              "poisson_nll_loss", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
              "cosine_embedding_loss", "triplet_margin_loss", "cosine_similarity", "dist", "cdist",
              # and the elementwise ops and reductions PyTorch's CUDA list names (autocast_mode.cpp's fp32
              # and fp32_set_opt_dtype entries; not yet checked on the H100)
              "acos", "asin", "cosh", "sinh", "tan", "erfinv", "log2", "log10", "logsumexp", "prod", "cumprod",
              "cumsum", "vector_norm"}
_CPU_LOWER = {"matmul", "linear", "conv2d", "scaled_dot_product_attention"}
_CPU_FP32 = {"nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
             "cross_entropy",
             # issue 32's (checked on CPU PyTorch 2.13: bfloat16 inputs give float32)
             "huber_loss", "smooth_l1_loss", "multi_margin_loss", "multilabel_margin_loss", "kl_div",
             "poisson_nll_loss", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
             "cosine_embedding_loss", "triplet_margin_loss", "cdist", "avg_pool3d", "max_pool3d",
             "adaptive_avg_pool3d", "adaptive_max_pool3d", "grid_sample"}
LISTS = {"cuda": (frozenset(_CUDA_LOWER), frozenset(_CUDA_FP32)),
         "cpu": (frozenset(_CPU_LOWER), frozenset(_CPU_FP32))}
DEFAULT_DTYPES = {"cuda": float16, "cpu": bfloat16}
_CPU_DTYPES = (bfloat16, float16)


class autocast:
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None): a context manager or decorator."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str) or isinstance(device_type, _device.device):    # (a device is a str here)
            kind = "<class 'torch.device'>" if isinstance(device_type, _device.device) else type(device_type)
            raise ValueError(f"Expected `device_type` of type `str`, got: `{kind}`")
        if device_type not in LISTS:
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = as_dtype(dtype, "autocast(): dtype") if dtype is not None else DEFAULT_DTYPES[device_type]
        self._enabled = bool(enabled)
        self._cache = True if cache_enabled is None else bool(cache_enabled)
        if self._enabled and device_type == "cpu" and self.fast_dtype not in _CPU_DTYPES:
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "CPU Autocast only supports dtype of torch.bfloat16, torch.float16 currently.")
            self._enabled = False
        self._scopes = []

    def policy(self):
        """The engine's Autocast value for this region, or None when disabled."""
        if not self._enabled:
            return None
        return _policy(format_of(self.fast_dtype), self.device, self._cache)

    def __enter__(self):
        scope = autocast_scope(self.policy())
        scope.__enter__()
        self._scopes.append(scope)          # a list: the same object may be entered again inside itself
        return None                         # PyTorch's __enter__ returns None

    def __exit__(self, *exc):
        self._scopes.pop().__exit__(*exc)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


@functools.lru_cache(maxsize=None)
def _policy(fmt, device, cache):
    """One Autocast value per (format, device, cache): a training loop enters a region every step."""
    lower, fp32 = LISTS[device]
    return Autocast(fmt, lower, fp32, device, cache)


def is_autocast_enabled(device_type="cuda"):
    """Whether ops on `device_type` are autocast here and now."""
    a = current_autocast()
    return a is not None and a.device == _device.parse(device_type)


def get_autocast_dtype(device_type):
    """The dtype autocast uses on the device: the active region's, else the default."""
    a = current_autocast()
    if a is not None and a.device == device_type:
        return as_dtype(a.fmt)
    return DEFAULT_DTYPES[device_type]
