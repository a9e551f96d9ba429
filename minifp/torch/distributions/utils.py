"""torch.distributions.utils: broadcasting of parameters, logits <-> probs, and lazy_property, as PyTorch has them."""
from __future__ import annotations

import minifp.torch as torch

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property"]

euler_constant = 0.57721566490153286060


def _is_number(v):
    return isinstance(v, (int, float)) and not torch.is_tensor(v)


def broadcast_all(*values):
    """The values broadcast together; numbers become tensors of the first tensor's dtype (the default dtype if none)."""
    if not all(torch.is_tensor(v) or _is_number(v) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or objects implementing "
                         "__torch_function__.")
    if not all(torch.is_tensor(v) for v in values):
        first = next((v for v in values if torch.is_tensor(v)), None)
        options = {"dtype": torch.get_default_dtype()} if first is None else {"dtype": first.dtype,
                                                                              "device": first.device}
        values = [v if torch.is_tensor(v) else torch.tensor(v, **options) for v in values]
    return torch.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    """N(0, 1) draws from minifp's global stream (as PyTorch, through Tensor.normal_)."""
    return torch.empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value, dim):
    """value summed over its `dim` rightmost dims."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """sigmoid(logits) (binary: log-odds), else softmax over the last dim."""
    if is_binary:
        return torch.sigmoid(logits)
    return torch.nn.functional.softmax(logits, dim=-1)


def clamp_probs(probs):
    """probs clamped into [eps, 1 - eps] of their dtype, so that their logs are finite."""
    eps = torch.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """log(p) (binary: the log-odds log(p) - log1p(-p)) of the clamped probabilities."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return torch.log(ps_clamped) - torch.log1p(-ps_clamped)
    return torch.log(ps_clamped)


class lazy_property:
    """A property computed (with gradients on) at its first read, then kept as the instance's attribute."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with torch.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value
