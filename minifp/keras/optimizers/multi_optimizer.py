"""keras.optimizers.OptimizerMap and MultiOptimizer: a different optimizer for the variables whose path matches."""
from __future__ import annotations

import re
from collections.abc import MutableMapping

from .loss_scale_optimizer import LossScaleOptimizer
from .optimizer import Optimizer, deserialize, serialize

__all__ = ["OptimizerMap", "MultiOptimizer"]


class OptimizerMap(MutableMapping):
    """{variable path or regular expression (full match): optimizer}, and the default optimizer for the rest."""

    def __init__(self, default_optimizer, optimizer_map=None):
        if not isinstance(default_optimizer, Optimizer):
            raise TypeError(f"default_optimizer must be a Keras Optimizer instance. Received: {default_optimizer}")
        if optimizer_map is not None and not isinstance(optimizer_map, dict):
            raise TypeError(f"optimizer_map must be a dictionary. Received: {optimizer_map}")
        self._default_optimizer = default_optimizer
        self._optimizer_map = optimizer_map or {}

    @property
    def default_optimizer(self):
        return self._default_optimizer

    def __getitem__(self, key):
        """The optimizer of this path: its own entry, else the one pattern that matches, else the default."""
        if key in self._optimizer_map:
            return self._optimizer_map[key]
        matching = [pattern for pattern in self._optimizer_map if re.fullmatch(pattern, key)]
        if len(matching) > 1:
            raise ValueError(f"Multiple optimizers assigned to variable {key}.")
        return self._optimizer_map[matching[0]] if matching else self._default_optimizer

    def __setitem__(self, key, optimizer):
        if key in self._optimizer_map:
            raise ValueError(f"'{key}' already exists in the OptimizerMap with value {self._optimizer_map[key]}. "
                             "Please make sure to not use duplicated keys.")
        if not isinstance(key, str):
            raise ValueError(f"key must be a string. Received: {key}")
        if not isinstance(optimizer, Optimizer):
            raise ValueError(f"optimizer must be a Keras Optimizer instance. Received: {optimizer}")
        if isinstance(optimizer, LossScaleOptimizer):
            raise ValueError("optimizer cannot be LossScaleOptimizer.")
        if isinstance(optimizer, MultiOptimizer):
            raise ValueError("optimizer cannot be MultiOptimizer.")
        self._optimizer_map[key] = optimizer

    def __delitem__(self, key):
        del self._optimizer_map[key]

    def __len__(self):
        return len(self._optimizer_map)

    def __iter__(self):
        return iter(self._optimizer_map)

    def __call__(self, variable):
        return self[variable.path]

    def get_config(self):
        return {"default_optimizer": serialize(self._default_optimizer),
                "optimizer_map": {key: serialize(opt) for key, opt in self._optimizer_map.items()}}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(deserialize(config["default_optimizer"], custom_objects),
                   {key: deserialize(c, custom_objects) for key, c in config["optimizer_map"].items()})


class MultiOptimizer(Optimizer):
    """Each variable updated by the optimizer its OptimizerMap (or callable variable -> optimizer) gives it."""

    def __init__(self, optimizer_map, loss_scale_factor=None, name=None):
        super().__init__(learning_rate=0.0, loss_scale_factor=loss_scale_factor, name=name)
        self._optimizer_map = optimizer_map
        self._inner_optimizers = []
        # Keras's order: the map's optimizers, then its default
        listed = list(optimizer_map.values()) if hasattr(optimizer_map, "values") else []
        default = getattr(optimizer_map, "default_optimizer", None)
        for opt in listed + ([default] if default is not None else []):
            if opt not in self._inner_optimizers:
                opt.loss_scale_factor = loss_scale_factor
                self._inner_optimizers.append(opt)

    @property
    def optimizers(self):
        return self._inner_optimizers

    @property
    def variables(self):
        """Its own variables (iteration, learning_rate), then each inner optimizer's."""
        return self._variables[:] + [v for opt in self._inner_optimizers for v in opt.variables]

    @property
    def learning_rate(self):
        raise AttributeError("Learning rate cannot be accessed on a MultiOptimizer. Access the learning rate on the "
                             "individual sub-optimizers instead.")

    @learning_rate.setter
    def learning_rate(self, value):
        raise AttributeError("Learning rate cannot be set on a MultiOptimizer. Set the learning rate on the "
                             "individual sub-optimizers instead.")

    @property
    def loss_scale_factor(self):
        return getattr(self, "_loss_scale_factor", None)

    @loss_scale_factor.setter
    def loss_scale_factor(self, value):
        self._loss_scale_factor = value
        for opt in getattr(self, "_inner_optimizers", ()):
            opt.loss_scale_factor = value

    def build(self, variables):
        """Give each variable its optimizer, and build each optimizer on its variables."""
        if self.built:
            return
        variables = list(variables)
        self._optimizer_of = {}
        for variable in variables:
            opt = self._optimizer_map(variable)
            if not isinstance(opt, Optimizer):
                raise ValueError(f"Optimizer for variable {variable} is not an Optimizer instance.")
            if isinstance(opt, LossScaleOptimizer):
                raise ValueError("LossScaleOptimizer cannot be used inside an MultiOptimizer.")
            if isinstance(opt, MultiOptimizer):
                raise ValueError("MultiOptimizer cannot be used inside an MultiOptimizer.")
            if opt not in self._inner_optimizers:
                opt.loss_scale_factor = self.loss_scale_factor
                self._inner_optimizers.append(opt)
            self._optimizer_of[id(variable)] = opt
        for opt in self._inner_optimizers:
            mine = [v for v in variables if self._optimizer_of[id(v)] is opt]
            if mine:
                opt.build(mine)
        super().build(variables)

    def apply(self, grads, trainable_variables=None):
        """Hand each (gradient, variable) pair to the variable's optimizer; count one step."""
        grads = list(grads)
        if len(grads) == 0:
            return
        if trainable_variables is None:
            if not self.built:
                raise ValueError("When passing `grads` without `variables`, the optimizer must already be built on "
                                 "a list of variables. Call `optimizer.build(trainable_variables)` first.")
            trainable_variables = self._trainable_variables
        trainable_variables = list(trainable_variables)
        if not self.built:
            self.build(trainable_variables)
        if len(grads) != len(self._trainable_variables):
            raise ValueError(f"Gradients must match trainable variables one-to-one. Received {len(grads)} "
                             f"gradients and {len(self._trainable_variables)} variables.")
        for opt in self._inner_optimizers:
            pairs = [(g, v) for g, v in zip(grads, trainable_variables) if self._optimizer_of[id(v)] is opt]
            if pairs:
                opt.apply([g for g, _ in pairs], [v for _, v in pairs])
        self._iterations.assign_add(1)

    def get_config(self):
        optimizer_map = self._optimizer_map
        if isinstance(optimizer_map, OptimizerMap):
            optimizer_map = {"module": "keras.optimizers", "class_name": "OptimizerMap",
                             "config": optimizer_map.get_config(), "registered_name": None}
        return {"optimizer_map": optimizer_map, "loss_scale_factor": self.loss_scale_factor, "name": self.name}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        optimizer_map = config["optimizer_map"]
        if isinstance(optimizer_map, dict) and optimizer_map.get("class_name") == "OptimizerMap":
            config["optimizer_map"] = OptimizerMap.from_config(optimizer_map["config"], custom_objects)
        return cls(**config)
