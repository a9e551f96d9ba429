"""keras.models: Model, Sequential, Functional."""
from .functional import graph  # noqa: F401  (the graph helpers, for other modules)
from .model import Functional, Model
from .sequential import Sequential
from .. import saving_keras
from ..saving_keras import load_model, save_model

saving_keras.MODELS.update(Model=Model, Functional=Functional, Sequential=Sequential)

__all__ = ["Model", "Sequential", "Functional", "load_model", "save_model"]

from .._missing import missing as _missing  # noqa: E402

__getattr__ = _missing("minifp.keras.models")
