"""The norms weight normalisation divides by (PyTorch's torch.norm_except_dim and torch._weight_norm)."""
from __future__ import annotations

__all__ = ["norm_except_dim", "weight_norm"]


def norm_except_dim(v, pow=2, dim=0):
    """The pow-norm of v over every dim but `dim`, shaped to broadcast against v (over all of v for dim -1)."""
    if dim == -1:
        return v.norm(pow)
    if dim == 0:
        return v.reshape(v.shape[0], -1).norm(pow, 1).reshape((v.shape[0],) + (1,) * (v.ndim - 1))
    if dim == v.ndim - 1:
        return v.reshape(-1, v.shape[-1]).norm(pow, 0).reshape((1,) * (v.ndim - 1) + (v.shape[-1],))
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def weight_norm(v, g, dim=0):
    """v * (g / ||v||), the norm over every dim but `dim`. For dim 0 and the last dim PyTorch runs one fused kernel
    that keeps the norm and the factor in float32 and rounds only the product into v's type (what a float16 or
    bfloat16 weight shows); other dims are the composition, each step rounded."""
    if dim in (0, v.ndim - 1):
        w = v.float() * (g.float() / norm_except_dim(v.float(), 2, dim))
        return w.to(v.dtype)
    return v * (g / norm_except_dim(v, 2, dim))
