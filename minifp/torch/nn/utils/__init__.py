"""torch.nn.utils: gradient clipping, parameters as one vector; rnn's padding and packing of sequences;
parametrizations, weight and spectral normalisation, pruning."""
from . import parametrizations, parametrize, rnn        # (prune only when imported, as in PyTorch)
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_", "rnn", "parameters_to_vector", "vector_to_parameters",
           "parametrize", "parametrizations", "weight_norm", "remove_weight_norm", "spectral_norm",
           "remove_spectral_norm"]
