"""torch.nn.utils: gradient clipping, parameters as one vector; rnn's padding and packing of sequences."""
from . import rnn
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_value_", "rnn", "parameters_to_vector", "vector_to_parameters"]
