"""keras.models: Model, Sequential, Functional."""
from .functional import graph  # noqa: F401  (the graph helpers, for other modules)
from .model import Functional, Model
from .sequential import Sequential

__all__ = ["Model", "Sequential", "Functional"]

from .._missing import missing as _missing  # noqa: E402

__getattr__ = _missing("minifp.keras.models")
