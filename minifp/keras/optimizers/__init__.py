"""keras.optimizers: Keras 3's optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, Nadam, Adamax, Adadelta, Ftrl, Lion,
Lamb, Adafactor, ScheduleFreeAdamW, Muon, MultiOptimizer), schedules and get()."""
from __future__ import annotations

from . import schedules
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .ftrl import Ftrl
from .lamb import Lamb
from .lion import Lion
from .loss_scale_optimizer import LossScaleOptimizer
from .multi_optimizer import MultiOptimizer, OptimizerMap
from .muon import Muon
from .nadam import Nadam
from .optimizer import Optimizer, deserialize, serialize
from .rmsprop import RMSprop
from .schedule_free_adamw import ScheduleFreeAdamW
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Nadam", "Adamax", "Adadelta", "Ftrl",
           "Lion", "Lamb", "Adafactor", "ScheduleFreeAdamW", "Muon",
           "MultiOptimizer", "OptimizerMap", "LossScaleOptimizer", "schedules",
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
