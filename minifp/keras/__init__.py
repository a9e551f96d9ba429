"""minifp.keras: Keras 3's face of minifp. `from minifp import keras` and write Keras code as usual.

`keras.__version__` (and `keras.version()`) is "3.15.1+minifp.<minifp's version>": it compares as Keras 3.15.1,
the release the face's fixtures were recorded from, and says it is minifp.
"""
from ..engine import install_names as _install_names
from . import (_names, activations, applications, backend, callbacks, config, constraints, datasets, initializers,
               layers, losses, metrics, mixed_precision, models, ops, optimizers, random, regularizers, saving, utils)
from ._scope import name_scope
from ._version import __version__, version
from ._tensor import DType, Tensor, convert_to_tensor
from .layers import Input, InputSpec, KerasTensor, Layer, Variable
from .mixed_precision import DTypePolicy
from .models import Model, Sequential

# Keras 3's top-level names of the base classes (keras.Loss is keras.losses.Loss, and so on)
Initializer, Loss, Metric = initializers.Initializer, losses.Loss, metrics.Metric
Optimizer, Regularizer = optimizers.Optimizer, regularizers.Regularizer

__all__ = ["activations", "applications", "ops", "backend", "callbacks", "config", "constraints", "datasets", "initializers",
           "layers", "losses", "metrics", "mixed_precision", "models", "optimizers", "random", "regularizers", "saving", "utils",
           "DType", "DTypePolicy", "Initializer", "Input", "InputSpec", "KerasTensor", "Layer", "Loss", "Metric", "Model",
           "Optimizer", "Regularizer", "Sequential", "Tensor", "Variable", "convert_to_tensor", "name_scope",
           "__version__", "version"]

# Every name of the engine's ops that Keras has and this face does not write by hand: the op itself.
ops.__all__ += [name[4:] for name in _install_names(_names.NAMES, {"ops": ops, "activations": activations, "Tensor": Tensor},
                                                    ops.generated) if name.startswith("ops.")]

from ._missing import missing as _missing  # noqa: E402

__getattr__ = _missing("minifp.keras")
