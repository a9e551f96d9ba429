"""keras.optimizers.ScheduleFreeAdamW: AdamW without a learning-rate schedule (Defazio et al. 2024)."""
from __future__ import annotations

import numpy as np

from ... import engine
from ...engine import float32 as _FLOAT32, set_storage
from .optimizer import Optimizer

__all__ = ["ScheduleFreeAdamW"]


class ScheduleFreeAdamW(Optimizer):
    """ScheduleFreeAdamW as keras.optimizers.ScheduleFreeAdamW (learning rate 0.0025, epsilon 1e-8, warmup_steps)."""

    def __init__(self, learning_rate=0.0025, beta_1=0.9, beta_2=0.999, epsilon=1e-8, warmup_steps=0,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False,
                 ema_momentum=0.99, ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, use_ema=use_ema,
                         ema_momentum=ema_momentum, ema_overwrite_frequency=ema_overwrite_frequency,
                         loss_scale_factor=loss_scale_factor, gradient_accumulation_steps=gradient_accumulation_steps,
                         **kwargs)
        self.beta_1, self.beta_2, self.epsilon, self.warmup_steps = beta_1, beta_2, epsilon, warmup_steps

    def _slot_groups(self):
        return [("momentum", "velocity")]

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        for variable in self._trainable_variables:      # Keras starts z at the variable's value
            slot = self._slots[id(variable)]["momentum"]
            set_storage(slot, np.array(variable.float32(), np.float32), _FLOAT32)

    def _rule(self, learning_rate):
        return engine.keras_schedule_free_adamw_update, {
            "lr": learning_rate, "step": int(self.iterations) + 1, "beta_1": self.beta_1, "beta_2": self.beta_2,
            "epsilon": self.epsilon, "warmup_steps": self.warmup_steps}

    def get_config(self):
        return dict(super().get_config(), beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon,
                    warmup_steps=self.warmup_steps)
