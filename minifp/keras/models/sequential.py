"""keras.Sequential: a stack of layers, each called on the previous one's output."""
from __future__ import annotations

from ..layers.core import InputLayer
from ..layers.layer import KerasTensor, Layer
from .model import Model

__all__ = ["Sequential"]


class Sequential(Model):
    """Layers in a row. Built at once when it starts with keras.Input / InputLayer or a layer given
    input_shape=; otherwise on its first call or build(input_shape)."""

    def __init__(self, layers=None, trainable=True, name=None):
        super().__init__(trainable=trainable, name=name)
        self._functional = None
        for layer in layers or ():
            self.add(layer, rebuild=False)
        self._maybe_rebuild()

    def add(self, layer, rebuild=True):
        """Append a layer (or a keras.Input tensor) to the stack."""
        if isinstance(layer, KerasTensor) and layer._keras_history is not None \
                and isinstance(layer._keras_history[0], InputLayer):
            layer = layer._keras_history[0]
        if not isinstance(layer, Layer):
            raise ValueError(f"Only instances of `keras.Layer` can be added to a Sequential model. Received: "
                             f"{layer} (of type {type(layer)})")
        if isinstance(layer, InputLayer) and self._layers and isinstance(self._layers[0], InputLayer):
            raise ValueError(f"Sequential model '{self.name}' has already been configured to use input shape "
                             f"{self._layers[0].batch_shape}. You cannot add a different Input layer to it.")
        if isinstance(layer, InputLayer) and self._layers:
            raise ValueError("An InputLayer can only be the first layer of a Sequential model.")
        if any(layer.name == l.name for l in self._layers):
            raise ValueError(f"All layers added to a Sequential model should have unique names. Name "
                             f"'{layer.name}' is already the name of a layer in this model. Update the `name` "
                             f"argument to pass a unique name.")
        self._layers.append(layer)
        self.built = False
        self._functional = None
        if rebuild:
            self._maybe_rebuild()

    def pop(self, rebuild=True):
        """Remove and return the last layer."""
        if not self.layers:
            raise TypeError("There are no layers in the model.")
        layer = self._layers.pop()
        self.built = False
        self._functional = None
        if rebuild:
            self._maybe_rebuild()
        return layer

    def _maybe_rebuild(self):
        if not self._layers:
            return
        first = self._layers[0]
        if isinstance(first, InputLayer) and len(self._layers) > 1:
            self.build(first.batch_shape)
        elif getattr(first, "_input_shape_arg", None) is not None:
            self.build(first._input_shape_arg)
        elif isinstance(first, Model) and getattr(first, "inputs", None) and len(first.inputs) == 1:
            self.build(first.inputs[0].shape)       # a functional model first: its input shape (as Keras 3)

    @property
    def layers(self):
        """The layers, without the InputLayer (as Keras 3 lists them)."""
        return [l for l in self._layers if not isinstance(l, InputLayer)]

    def build(self, input_shape=None):
        """Build every layer by running the stack on a symbolic input of this shape (batch size first)."""
        if input_shape is None:
            raise ValueError("You must provide an `input_shape` argument.")
        if not self._layers:
            raise ValueError(f"Sequential model {self.name} cannot be built because it has no layers. Call "
                             f"`model.add(layer)`.")
        if isinstance(self._layers[0], InputLayer):
            if tuple(self._layers[0].batch_shape) != tuple(input_shape):
                raise ValueError(f"Sequential model '{self.name}' has already been configured to use input shape "
                                 f"{self._layers[0].batch_shape}. You cannot build it with input_shape "
                                 f"{tuple(input_shape)}")
        else:
            dtype = getattr(self._layers[0], "input_dtype", None) if False else None
            self._layers.insert(0, InputLayer(batch_shape=tuple(input_shape), dtype=dtype))
        x = inputs = self._layers[0].output
        for layer in self._layers[1:]:
            x = layer(x)
        self._functional = (inputs, x)
        self.inputs, self.outputs = [inputs], [x]
        self.built = True

    input = property(lambda self: self._functional[0] if self._functional else None)
    output = property(lambda self: self._functional[1] if self._functional else None)
    input_shape = property(lambda self: self._functional[0].shape if self._functional else None)
    output_shape = property(lambda self: self._functional[1].shape if self._functional else None)

    def _maybe_build(self, args):
        if not self.built and args:
            shape = getattr(args[0], "shape", None)
            if shape is not None:
                self.build((None,) + tuple(shape[1:]))

    def _build_before_fit(self, x):
        self._maybe_build((x,) if x is not None and hasattr(x, "shape") else ())

    def call(self, inputs, training=None, mask=None):
        x = inputs
        for layer in self.layers:
            x = layer(x, training=training) if "training" in layer._call_params()[0] else layer(x)
        return x

    def compute_output_shape(self, input_shape):
        return self.output_shape

    def get_config(self):
        """Keras 3's config: each layer serialized in full (InputLayer first) and build_input_shape."""
        from ..saving_keras import sequential_config
        return sequential_config(self)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """The Sequential model a get_config() (or a `.keras` file's config) describes; built-in layers only."""
        from ..saving_keras import model_from_config
        return model_from_config({"class_name": "Sequential", "config": config}, custom_objects)
