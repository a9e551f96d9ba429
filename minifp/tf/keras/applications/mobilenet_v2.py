"""tf.keras.applications.mobilenet_v2: minifp.keras's MobileNetV2, of tf.keras's layers (its BatchNormalization)."""
from ....keras.applications.mobilenet_v2 import builder, preprocess_input
from .. import layers
from ..models import Functional

__all__ = ["MobileNetV2", "preprocess_input"]

MobileNetV2 = builder(layers, Functional)
