"""keras.layers: the layers of minifp's Keras face."""
from .core import (Activation, Add, Concatenate, Dense, Dropout, Embedding, Flatten, Input, InputLayer, Lambda,
                   LayerNormalization, ReLU, Reshape)
from .layer import InputSpec, KerasTensor, Layer, Variable
from .attention import MultiHeadAttention
from .convolutional import Conv2D, Convolution2D, DepthwiseConv2D, SeparableConv2D
from .normalization import BatchNormalization, GroupNormalization
from .pooling import (AveragePooling2D, AvgPool2D, GlobalAveragePooling2D, GlobalAvgPool2D, GlobalMaxPool2D,
                      GlobalMaxPooling2D, MaxPool2D, MaxPooling2D)
from .reshaping import ZeroPadding2D
from .preprocessing import (IntegerLookup, Normalization, RandomFlip, RandomRotation, Rescaling, Resizing, StringLookup,
                            TextVectorization)
from .rnn import (GRU, GRUCell, LSTM, LSTMCell, RNN, Bidirectional, SimpleRNN, SimpleRNNCell, StackedRNNCells,
                  TimeDistributed)
from .activations import ELU, LeakyReLU, PReLU, Softmax
from .convolutional_extra import Conv1D, Conv2DTranspose, Convolution1D, Convolution2DTranspose
from .merging import (Average, Maximum, Minimum, Multiply, Subtract, add, average, concatenate, maximum, minimum,
                      multiply, subtract)
from .pooling import GlobalAveragePooling1D, GlobalAvgPool1D, GlobalMaxPool1D, GlobalMaxPooling1D, MaxPool1D, \
    MaxPooling1D
from .reshaping import Cropping2D, UpSampling2D
from .masking import Masking
from .simple import (CategoryEncoding, Cropping1D, GaussianDropout, GaussianNoise, Identity, Permute, RepeatVector,
                     UpSampling1D, ZeroPadding1D)
from .pooling import AveragePooling1D, AvgPool1D
from .attention import AdditiveAttention, Attention
from .merging import Dot, dot
from .convolutional_more import (Conv1DTranspose, Conv3D, Conv3DTranspose, Convolution1DTranspose, Convolution3D,
                                 Convolution3DTranspose)
from .pooling import (AveragePooling3D, AvgPool3D, GlobalAveragePooling3D, GlobalAvgPool3D, GlobalMaxPool3D,
                      GlobalMaxPooling3D, MaxPool3D, MaxPooling3D)
from .reshaping import Cropping3D, UpSampling3D, ZeroPadding3D
from .normalization import UnitNormalization
from .regularization import ActivityRegularization, SpatialDropout1D, SpatialDropout2D, SpatialDropout3D
from .preprocessing_extra import (CenterCrop, Discretization, HashedCrossing, Hashing, RandomBrightness,
                                  RandomContrast, RandomTranslation, RandomZoom)

__all__ = ["Activation", "Add", "Concatenate", "Dense", "Dropout", "Embedding", "Flatten", "Input", "InputLayer",
           "InputSpec", "KerasTensor", "Lambda", "Layer", "LayerNormalization", "ReLU", "Reshape", "Variable",
           "MultiHeadAttention", "Conv2D", "Convolution2D", "DepthwiseConv2D", "SeparableConv2D", "BatchNormalization",
           "AveragePooling2D", "AvgPool2D", "GlobalAveragePooling2D", "GlobalAvgPool2D", "GlobalMaxPool2D",
           "GlobalMaxPooling2D", "MaxPool2D", "MaxPooling2D", "ZeroPadding2D"]
__all__ += ["IntegerLookup", "Normalization", "RandomFlip", "RandomRotation", "Rescaling", "Resizing", "StringLookup",
            "TextVectorization"]
__all__ += ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "Bidirectional", "TimeDistributed"]
__all__ += ["SimpleRNN", "SimpleRNNCell", "StackedRNNCells"]

__all__ += ["ELU", "LeakyReLU", "PReLU", "Softmax", "Conv1D", "Conv2DTranspose", "Convolution1D",
            "Convolution2DTranspose", "Multiply", "GlobalAveragePooling1D", "GlobalAvgPool1D", "GlobalMaxPool1D",
            "GlobalMaxPooling1D", "MaxPool1D", "MaxPooling1D", "Cropping2D", "UpSampling2D"]
__all__ += ["Subtract", "Average", "Maximum", "Minimum", "add", "multiply", "subtract", "average", "maximum", "minimum",
            "concatenate"]

__all__ += ["serialize", "deserialize", "Masking"]
__all__ += ["Identity", "Permute", "RepeatVector", "ZeroPadding1D", "Cropping1D", "UpSampling1D", "GaussianNoise",
            "GaussianDropout", "AveragePooling1D", "AvgPool1D", "GroupNormalization",
            "CategoryEncoding"]
__all__ += ["Attention", "AdditiveAttention", "Dot", "dot", "Conv1DTranspose", "Conv3D", "Conv3DTranspose",
            "Convolution1DTranspose", "Convolution3D", "Convolution3DTranspose", "MaxPooling3D", "AveragePooling3D",
            "GlobalMaxPooling3D", "GlobalAveragePooling3D", "MaxPool3D", "AvgPool3D", "GlobalMaxPool3D",
            "GlobalAvgPool3D", "UpSampling3D", "ZeroPadding3D", "Cropping3D", "UnitNormalization",
            "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "ActivityRegularization"]
__all__ += ["CenterCrop", "Discretization", "HashedCrossing", "Hashing", "RandomBrightness", "RandomContrast",
            "RandomTranslation", "RandomZoom"]

_LAYERS = {name: obj for name, obj in globals().items() if isinstance(obj, type) and issubclass(obj, Layer)}


def serialize(layer):
    """A layer's config as Keras writes it: {"class_name", "config"}."""
    return {"class_name": type(layer).__name__, "config": layer.get_config()}


def deserialize(config, custom_objects=None):
    """The layer a serialize() result describes; an unknown class name gets Keras's error and the valid names."""
    classes = {**_LAYERS, **(custom_objects or {})}
    name = config.get("class_name") if isinstance(config, dict) else config
    if name not in classes:
        raise TypeError(f"Could not locate class {name!r}. Make sure custom classes and functions are decorated "
                        f"with `@keras.saving.register_keras_serializable()`. If they are already decorated, make "
                        f"sure they are all imported so that the decorator is run before trying to load them. Full "
                        f"object config: {config}. Valid names: {', '.join(sorted(_LAYERS))}")
    return classes[name].from_config(config.get("config", {}) if isinstance(config, dict) else {})

from .._missing import missing as _missing  # noqa: E402

__getattr__ = _missing("minifp.keras.layers")

from . import operation  # noqa: E402,F401  (ops on KerasTensors become nodes of the functional graph)
