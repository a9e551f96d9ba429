"""keras.saving: weights files (`.weights.h5`, _h5weights.py) and whole models (`.keras`, saving_keras.py)."""
from ._h5weights import load_weights, save_weights
from .saving_keras import load_model, save_model

__all__ = ["load_weights", "save_weights", "save_model", "load_model"]

from ._missing import missing as _missing  # noqa: E402

__getattr__ = _missing("minifp.keras.saving")
