"""tf.keras.applications: minifp.keras's architectures, built of tf.keras's layers into tf.keras's Model."""
from . import mobilenet_v2
from .mobilenet_v2 import MobileNetV2

__all__ = ["MobileNetV2", "mobilenet_v2"]
