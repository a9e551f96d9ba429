"""torch.backends.cuda: the matmul TF32 switch (float32_matmul_precision) and the attention kernel switches."""
from __future__ import annotations

import warnings

from ...engine import bfloat16, set_float32_products, tf32

__all__ = ["matmul", "is_built", "set_float32_matmul_precision", "get_float32_matmul_precision", "enable_flash_sdp",
           "enable_mem_efficient_sdp", "enable_math_sdp", "enable_cudnn_sdp", "flash_sdp_enabled",
           "mem_efficient_sdp_enabled", "math_sdp_enabled", "cudnn_sdp_enabled", "sdp_kernel"]

PRECISIONS = {"highest": None, "high": tf32, "medium": bfloat16}
_matmul = ["highest"]
# Which attention kernels a script allows. minifp computes attention one way (the math path) whichever is on.
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def set_float32_matmul_precision(precision):
    """"highest" (float32 products), "high" (TF32 factors) or "medium" (bfloat16 factors), for the cuda device."""
    if precision not in PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      f"setFloat32MatmulPrecision call has no effect.")
        return
    _matmul[0] = precision
    set_float32_products("cuda", "matmul", PRECISIONS[precision])


def get_float32_matmul_precision():
    return _matmul[0]


class _Matmul:
    """torch.backends.cuda.matmul."""

    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self):
        return _matmul[0] != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value):
        set_float32_matmul_precision("high" if value else "highest")


matmul = _Matmul()


def is_built():
    return True


def _switch(kind):
    def enable(enabled):
        _sdp[kind] = bool(enabled)

    def enabled():
        return _sdp[kind]
    return enable, enabled


enable_flash_sdp, flash_sdp_enabled = _switch("flash")
enable_mem_efficient_sdp, mem_efficient_sdp_enabled = _switch("mem_efficient")
enable_math_sdp, math_sdp_enabled = _switch("math")
enable_cudnn_sdp, cudnn_sdp_enabled = _switch("cudnn")


class sdp_kernel:
    """A block with some attention kernels switched off (deprecated in PyTorch for torch.nn.attention)."""

    def __init__(self, enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
        self.wanted = {"flash": enable_flash, "math": enable_math, "mem_efficient": enable_mem_efficient,
                       "cudnn": enable_cudnn}

    def __enter__(self):
        self.before = dict(_sdp)
        _sdp.update(self.wanted)

    def __exit__(self, *exc):
        _sdp.update(self.before)
        return False
