"""keras.Model: a layer that holds layers. `Model(inputs, outputs)` makes a functional model (class Functional);
a subclass defines `call`. Training comes from the Trainer mixin (minifp/keras/trainer.py)."""
from __future__ import annotations

from ..layers.layer import KerasTensor, Layer, _flatten
from ..trainer import Trainer
from . import summary_utils

__all__ = ["Model", "Functional"]


class Model(Trainer, Layer):
    """A model: layers, weights, summary(), get_layer(); training via compile/fit/evaluate/predict."""

    def __new__(cls, *args, **kwargs):
        if cls is Model and (len(args) >= 2 or "inputs" in kwargs or "outputs" in kwargs):
            return super().__new__(Functional)
        return super().__new__(cls)

    def __init__(self, *args, **kwargs):
        trainable = kwargs.pop("trainable", True)
        graph = args[:2] if len(args) >= 2 else (kwargs.pop("inputs", None), kwargs.pop("outputs", None))
        if not isinstance(self, Functional) and graph[0] is not None:
            # A subclass calling super().__init__(inputs, outputs): a functional model of that class.
            Layer.__init__(self, trainable=trainable, **kwargs)
            Functional._init_graph(self, *graph)
            self._graph_call = True
        else:
            Layer.__init__(self, trainable=trainable, **kwargs)
        self.stop_training = False
        self.compiled = getattr(self, "compiled", False)
        self.optimizer = getattr(self, "optimizer", None)

    def call(self, inputs, training=None, mask=None):
        if getattr(self, "_graph_call", False):
            from . import functional
            return functional.run(self, inputs, training)
        raise NotImplementedError(f"Model {self.__class__.__name__} does not have a `call()` method implemented.")

    @property
    def layers(self):
        """The layers directly inside the model, in order."""
        return list(self._layers)

    def get_layer(self, name=None, index=None):
        """A layer by name or by index."""
        if index is not None and name is not None:
            raise ValueError(f"Provide only a layer name or a layer index. Received: index={index}, name={name}.")
        if index is not None:
            if len(self.layers) <= index:
                raise ValueError(f"Was asked to retrieve layer at index {index} but model only has "
                                 f"{len(self.layers)} layers.")
            return self.layers[index]
        if name is not None:
            for layer in self.layers:
                if layer.name == name:
                    return layer
            raise ValueError(f"No such layer: {name}. Existing layers are: {[l.name for l in self.layers]}.")
        raise ValueError("Provide either a layer name or layer index at `get_layer`.")

    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False, show_trainable=False,
                layer_range=None):
        """Print the model's layers, output shapes and parameter counts in Keras 3's layout."""
        summary_utils.print_summary(self, line_length=line_length, positions=positions, print_fn=print_fn,
                                    expand_nested=expand_nested, show_trainable=show_trainable,
                                    layer_range=layer_range)

    def save_weights(self, filepath, overwrite=True):
        """Write the weights to `filepath` (ending in `.weights.h5`) in Keras 3's layout (minifp.keras.saving)."""
        from .. import saving
        saving.save_weights(self, filepath, overwrite=overwrite)

    def to_json(self, **kwargs):
        """The model's config as JSON, as in a `.keras` file's config.json (json.dumps's keyword arguments)."""
        import json
        from .. import saving_keras
        return json.dumps(saving_keras._model_config(self), **kwargs)

    def save(self, filepath, overwrite=True, zipped=None, **kwargs):
        """Write the whole model to a `.keras` file that Keras 3 loads (minifp.keras.saving.save_model)."""
        from .. import saving
        saving.save_model(self, filepath, overwrite=overwrite, zipped=zipped, **kwargs)

    def load_weights(self, filepath, skip_mismatch=False):
        """Read weights saved by Keras 3 or minifp (`.weights.h5`); nothing changes unless all of them fit."""
        from .. import saving
        saving.load_weights(self, filepath, skip_mismatch=skip_mismatch)

    def build(self, input_shape=None):
        """Build a subclassed model by calling it once on a symbolic input of this shape."""
        if self.built:
            return
        if input_shape is None:
            raise ValueError("You must provide an `input_shape` argument.")
        if isinstance(input_shape, (list, tuple)) and input_shape and isinstance(input_shape[0], (list, tuple)):
            x = [KerasTensor(s) for s in input_shape]
        else:
            x = KerasTensor(input_shape)
        self.built = True           # call() itself builds the inner layers
        try:
            self(x)
        except Exception as e:
            self.built = False
            raise ValueError(f"You cannot build your model by calling `build()` if your layers do not support "
                             f"float type inputs. Calling the model failed with: {e}") from e

    def _maybe_build(self, args):
        # A subclassed model is built by its first call: the layers inside build themselves.
        if not self.built:
            self._build_shapes = None
            self.built = True

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable}


class Functional(Model):
    """A model made from a graph of layers: Model(inputs, outputs)."""

    _convert_input_args = False      # inputs take the dtypes of the model's Input tensors, not the policy's
    _allow_non_tensor_positional_args = True

    def __init__(self, inputs, outputs, name=None, **kwargs):
        Layer.__init__(self, name=name, **kwargs)
        self.stop_training, self.compiled, self.optimizer = False, False, None
        self._init_graph(inputs, outputs)

    def _init_graph(self, inputs, outputs):
        from . import functional
        for t in _flatten(inputs):
            if not isinstance(t, KerasTensor):
                raise ValueError(f"All `inputs` values must be KerasTensors. Received: inputs={inputs} including "
                                 f"invalid value {t} of type {type(t)}")
        for t in _flatten(outputs):
            if not isinstance(t, KerasTensor):
                raise ValueError(f"All `outputs` values must be KerasTensors. Received: outputs={outputs} "
                                 f"including invalid value {t} of type {type(t)}")
        self._inputs_struct, self._outputs_struct = inputs, outputs
        self.inputs, self.outputs = _flatten(inputs), _flatten(outputs)
        self.output_names = [t._keras_history[0].name for t in self.outputs]     # compile()'s per-output names
        functional.check_connected(self.inputs, outputs)
        self._nodes, operations = functional.graph(self.inputs, self.outputs)
        object.__setattr__(self, "_operations", operations)     # ops on KerasTensors too: the summary's rows
        object.__setattr__(self, "_layers", [])
        for layer in operations:
            if not getattr(layer, "_is_operation", False):
                self._layers.append(layer)
        self.built = True

    @property
    def input(self):
        return self._inputs_struct

    @property
    def output(self):
        return self._outputs_struct

    @property
    def input_shape(self):
        shapes = [t.shape for t in self.inputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_shape(self):
        shapes = [t.shape for t in self.outputs]
        return shapes[0] if len(shapes) == 1 else shapes

    def call(self, inputs, training=None, mask=None):
        from . import functional
        return functional.run(self, inputs, training)

    def _maybe_build(self, args):
        pass

    def compute_output_shape(self, input_shape):
        return self.output_shape

    def get_config(self):
        """Keras 3's config: the layers with their inbound nodes, the input and output layers."""
        from ..saving_keras import functional_config
        return functional_config(self)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """The functional model a get_config() describes (built-in layers, or custom_objects)."""
        from ..saving_keras import model_from_config
        return model_from_config({"class_name": "Functional", "config": config}, custom_objects)
