"""keras.config: the global settings (float dtype, epsilon, image data format, dtype policy), the same ones
keras.backend and keras.mixed_precision set."""
from .backend import backend, epsilon, floatx, image_data_format, set_epsilon, set_floatx, set_image_data_format
from .mixed_precision import dtype_policy, set_dtype_policy

__all__ = ["backend", "epsilon", "floatx", "image_data_format", "set_epsilon", "set_floatx", "set_image_data_format",
           "dtype_policy", "set_dtype_policy"]
