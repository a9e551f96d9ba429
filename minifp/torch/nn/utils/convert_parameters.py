"""torch.nn.utils.parameters_to_vector and vector_to_parameters."""
from __future__ import annotations

from ... import _functions

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """Every parameter flattened, one after the other, as one vector."""
    return _functions.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """The parameters' values set, in turn, from the slices of vec (parameters_to_vector's inverse)."""
    from ... import _tensor
    if not isinstance(vec, _tensor.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    start = 0
    for p in parameters:
        n = p.numel()
        p.data = vec[start:start + n].reshape(p.shape).detach().clone()
        start += n
