"""keras.applications: the model architectures (random initialisation only: minifp downloads no weights)."""
from . import mobilenet_v2
from .mobilenet_v2 import MobileNetV2

__all__ = ["MobileNetV2", "mobilenet_v2"]

from .._missing import missing as _missing  # noqa: E402

__getattr__ = _missing("minifp.keras.applications")
