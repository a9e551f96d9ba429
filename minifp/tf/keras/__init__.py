"""tf.keras: minifp.keras's layers, training, losses, metrics, callbacks, datasets and applications (the same
module objects), with tf.keras's (Keras 2's) mixed_precision: `LossScaleOptimizer.get_scaled_loss` /
`get_unscaled_gradients`, `apply_gradients` that does not unscale, `<Policy "mixed_float16">`, and
`mixed_precision.experimental` of TF 2.1-2.3; and its own `models` (Model, Sequential: minifp.keras's with
tf.keras's rules where the two differ, summary() in tf.keras's layout, see models.py), `layers` (tf.keras's
BatchNormalization; Input named input_1 ...), `callbacks` (mode="auto" from the monitor's name) and
`applications` (built of these layers into these models).

`tf.keras.layers` and `from minifp.tf.keras.layers import Dense` work as with TensorFlow: each submodule name
here is minifp.keras's module of that name, imported when first used (an alias finder serves the
`from minifp.tf.keras.<name> import ...` form).
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

from ...keras._missing import missing as _missing
from . import applications, callbacks, layers, mixed_precision, models
from .layers import Input
from .models import Model, Sequential

SUBMODULES = ("activations", "backend", "datasets", "initializers", "losses", "metrics", "optimizers", "utils")

__all__ = ["Input", "Model", "Sequential", "applications", "callbacks", "layers", "mixed_precision", "models",
           *SUBMODULES]


def _keras_module(name):
    """minifp.keras.<name>, also registered as minifp.tf.keras.<name>."""
    module = importlib.import_module(f"...keras.{name}", __package__)
    sys.modules.setdefault(f"{__name__}.{name}", module)
    return module


def __getattr__(name):
    if name in SUBMODULES:
        module = _keras_module(name)
        globals()[name] = module
        return module
    return _missing(__name__, "TensorFlow")(name)


def __dir__():
    return sorted(set(globals()) | set(SUBMODULES))


class _AliasLoader(importlib.abc.Loader):
    """Loads minifp.tf.keras.<name> as the module minifp.keras.<name> itself (one module, two names)."""

    def create_module(self, spec):
        return importlib.import_module(f"...keras.{spec.name.rpartition('.')[2]}", __package__)

    def exec_module(self, module):
        pass                    # already executed under its own name


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds minifp.tf.keras.<name> for each name in SUBMODULES."""

    def find_spec(self, fullname, path=None, target=None):
        prefix, _, name = fullname.rpartition(".")
        if prefix == __name__ and name in SUBMODULES:
            return importlib.util.spec_from_loader(fullname, _AliasLoader())
        return None


if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _AliasFinder())
