"""torch.backends: cuda (the matmul TF32 switch), cudnn (its flags, the convolutions' TF32 switch), mps.

Float32 products on the cuda device round their factors to tf32 (or bfloat16 under "medium") where PyTorch would
let the tensor cores do so; the product stays float32. Defaults as PyTorch's: matmul TF32 off ("highest"), cuDNN
convolutions TF32 on.
"""
from . import cuda, cudnn, mps
from .cuda import get_float32_matmul_precision, set_float32_matmul_precision

__all__ = ["cuda", "cudnn", "mps", "set_float32_matmul_precision", "get_float32_matmul_precision"]
