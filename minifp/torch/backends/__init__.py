"""torch.backends: the TF32 switches. Float32 products on the cuda device round their factors to tf32 (or
bfloat16 under "medium") where PyTorch would let the tensor cores do so; the product stays float32.

Defaults as PyTorch's: matmul TF32 off ("highest"), cuDNN convolutions TF32 on.
"""
from __future__ import annotations

from ...engine import bfloat16, float32_products, set_float32_products, tf32

__all__ = ["cuda", "cudnn", "set_float32_matmul_precision", "get_float32_matmul_precision"]

PRECISIONS = {"highest": None, "high": tf32, "medium": bfloat16}
_matmul = ["highest"]


def set_float32_matmul_precision(precision):
    """"highest" (float32 products), "high" (TF32 factors) or "medium" (bfloat16 factors), for the cuda device."""
    if precision not in PRECISIONS:
        import warnings
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


class _Cuda:
    matmul = _Matmul()


class _Cudnn:
    """torch.backends.cudnn: allow_tf32 (default True) rounds float32 convolutions' factors to tf32 on cuda."""

    enabled = True
    benchmark = False
    deterministic = False

    @property
    def allow_tf32(self):
        return float32_products("cuda", "conv") is not None

    @allow_tf32.setter
    def allow_tf32(self, value):
        set_float32_products("cuda", "conv", tf32 if value else None)

    def is_available(self):
        return True

    def version(self):
        return None


cuda = _Cuda()
cudnn = _Cudnn()
cudnn.allow_tf32 = True                 # PyTorch's default
