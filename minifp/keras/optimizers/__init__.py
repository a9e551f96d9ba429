"""keras.optimizers: Keras 3's optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, Nadam), schedules and get()."""
from __future__ import annotations

from . import schedules
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .loss_scale_optimizer import LossScaleOptimizer
from .nadam import Nadam
from .optimizer import Optimizer, deserialize, serialize
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Nadam", "LossScaleOptimizer", "schedules",
           "get", "serialize", "deserialize"]

def get(identifier):
    """An optimizer from a name ("adam", "sgd" ...), a serialized config, or an optimizer (returned as is)."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        obj = deserialize(identifier)
    elif isinstance(identifier, str):
        obj = deserialize({"class_name": identifier, "config": {}})
    else:
        obj = identifier
    if isinstance(obj, Optimizer):
        return obj
    raise ValueError(f"Could not interpret optimizer identifier: {identifier}")

from .._missing import missing as _missing  # noqa: E402

__getattr__ = _missing("minifp.keras.optimizers")
