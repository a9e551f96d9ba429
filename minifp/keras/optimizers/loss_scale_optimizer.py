"""Keras 3's LossScaleOptimizer: scale_loss, then apply() unscales in float32 and skips non-finite steps.

The scale's state machine is the engine's DynamicLossScale (minifp/_loss_scale.py) with Keras 3's rule: halved on
a non-finite step with no floor (min_loss_scale=0), doubled after dynamic_growth_steps finite steps in a row. A
skipped step leaves the inner optimizer untouched, so `iterations` does not advance. One difference: Keras doubles
even a scale of 2**127 into inf; the engine keeps the scale (unreachable in practice: 2**112 growths).
"""
from __future__ import annotations

import numpy as np

from ...engine import apply, DynamicLossScale, float32, LossScaler, Tensor, unscaled
from .optimizer import Optimizer, OptimizerVariable, _float32_grad, deserialize, serialize

__all__ = ["LossScaleOptimizer"]

_BASE_DEFAULTS = {"weight_decay": None, "clipnorm": None, "global_clipnorm": None, "clipvalue": None,
                  "use_ema": False, "ema_momentum": 0.99, "ema_overwrite_frequency": None,
                  "loss_scale_factor": None, "gradient_accumulation_steps": None}


class LossScaleOptimizer(Optimizer):
    """Wraps an optimizer with dynamic loss scaling (keras.optimizers.LossScaleOptimizer)."""

    def __init__(self, inner_optimizer, initial_scale=2.0**15, dynamic_growth_steps=2000, name=None, **kwargs):
        if not kwargs.pop("dynamic", True):
            raise ValueError("LossScaleOptimizer no longer supports `dynamic=False`. Instead, simply set "
                             "`loss_scale_factor` directly on the `inner_optimizer`.")
        for arg, default in _BASE_DEFAULTS.items():
            if arg in kwargs:
                value = kwargs.pop(arg)
                if (default is None and value is not None) or value != default:
                    raise ValueError(f"LossScaleOptimizer does not support `{arg}`. Instead, set `{arg}` on the "
                                     f"`inner_optimizer`.")
        if kwargs:
            raise ValueError(f"LossScaleOptimizer does not support arguments: `{'`, `'.join(kwargs.keys())}`.")
        if not isinstance(inner_optimizer, Optimizer) or isinstance(inner_optimizer, LossScaleOptimizer):
            raise TypeError(f"LossScaleOptimizer: `inner_optimizer` must be a keras.optimizers.Optimizer (not a "
                            f"LossScaleOptimizer). Received: inner_optimizer={inner_optimizer!r}")
        if isinstance(initial_scale, bool) or not isinstance(initial_scale, (int, float, np.number)) \
                or not np.isfinite(initial_scale) or initial_scale <= 0:
            raise ValueError(f"LossScaleOptimizer: `initial_scale` must be a finite number > 0. Received: "
                             f"initial_scale={initial_scale!r}")
        if isinstance(dynamic_growth_steps, bool) or not isinstance(dynamic_growth_steps, (int, np.integer)) \
                or dynamic_growth_steps < 1:
            raise ValueError(f"LossScaleOptimizer: `dynamic_growth_steps` must be an integer >= 1. Received: "
                             f"dynamic_growth_steps={dynamic_growth_steps!r}")
        super().__init__(learning_rate=0.0, name=name)
        self.inner_optimizer = inner_optimizer
        self.initial_scale = initial_scale
        self.dynamic_growth_steps = dynamic_growth_steps
        self.inner_optimizer.loss_scale_factor = None      # else gradients would be unscaled twice
        self._scaler = LossScaler(DynamicLossScale(initial_scale, period=int(dynamic_growth_steps), min_loss_scale=0.0))

    def build(self, var_list):
        """Make step_counter and dynamic_scale, and build the inner optimizer."""
        if var_list is None:
            raise ValueError("LossScaleOptimizer: give the variables to update (apply(grads, trainable_variables) "
                             "or build(variables)) before the first step")
        # Keras's two variables, as views of the engine's loss scale (where the scale and its counter live)
        self.step_counter = self._track(_ScaleVariable(self._scaler, "counter", "step_counter",
                                                       f"{self.name}/step_counter", "int64"))
        self.dynamic_scale = self._track(_ScaleVariable(self._scaler, "loss_scale", "dynamic_scale",
                                                        f"{self.name}/dynamic_scale", "float32"))
        self.inner_optimizer.build(list(var_list))
        super().build(list(var_list))

    @property
    def variables(self):
        return self._variables + self.inner_optimizer.variables

    def apply(self, grads, trainable_variables=None):
        """Unscale (g / scale in float32) and apply through the inner optimizer if every gradient is finite;
        otherwise skip the step. Then move the scale."""
        grads = list(grads)
        if not self.built:
            self.build(None if trainable_variables is None else list(trainable_variables))
        pairs = [None if g is None else unscaled(_float32_grad(g), self._scaler.loss_scale, divide=True)
                 for g in grads]
        finite = all(p is None or p[1] for p in pairs)     # the check and the division read each gradient once
        if finite:
            self.inner_optimizer.apply([None if p is None else p[0] for p in pairs], trainable_variables)
        self._scaler.adjust(finite)

    def stateless_apply(self, optimizer_variables, grads, trainable_variables):
        raise NotImplementedError("minifp's optimizers are stateful: use apply() or apply_gradients()")

    @property
    def learning_rate(self):
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, learning_rate):
        self.inner_optimizer.learning_rate = learning_rate

    @property
    def iterations(self):
        """The inner optimizer's iterations (skipped steps are not counted)."""
        return self.inner_optimizer.iterations

    def scale_loss(self, loss):
        """loss * the current scale (float32 once built, as Keras's variable promotes; before, the initial scale)."""
        if not self.built:
            return loss * self.initial_scale
        scale = np.float32(self._scaler.loss_scale)
        if isinstance(loss, Tensor):
            if loss.fmt is not None and loss.fmt is not float32 and loss.fmt != float32:
                loss = apply("cast", loss, _out=float32)     # float16 loss * float32 variable -> float32
            return loss * scale
        return np.float32(loss) * scale

    def finalize_variable_values(self, var_list):
        self.inner_optimizer.finalize_variable_values(var_list)

    def get_config(self):
        return {"name": self.name, "inner_optimizer": serialize(self.inner_optimizer),
                "initial_scale": self.initial_scale, "dynamic_growth_steps": self.dynamic_growth_steps}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return from_inner_config(cls, config, custom_objects)


class _ScaleVariable(OptimizerVariable):
    """An optimizer variable that shows one field of the engine's loss scale (the scale, its counter): read from it
    and assigned into it, so that the scale lives in one place."""

    def __init__(self, scaler, field, name, path, dtype):
        self._scaler, self._field, self._dtype = scaler, field, np.dtype(dtype)
        self.name, self.path = name, path

    @property
    def _value(self):
        return np.asarray(getattr(self._scaler, self._field), self._dtype)

    @_value.setter
    def _value(self, value):
        self._scaler.set(**{self._field: self._dtype.type(value)})


def from_inner_config(cls, config, custom_objects=None):
    """cls(inner optimizer, **the rest) from a config holding the inner optimizer serialized (both faces' LSOs)."""
    config = dict(config)
    inner = config.pop("inner_optimizer")
    if isinstance(inner, dict):
        inner = deserialize(inner, custom_objects)
    return cls(inner, **config)
