"""keras.optimizers.Adagrad: Keras's rule (accumulator from 0.1, epsilon inside the root), not PyTorch's."""
from __future__ import annotations

from ... import engine
from .optimizer import Optimizer

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad as keras.optimizers.Adagrad: w -= lr * g / sqrt(accumulator + epsilon)."""

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, loss_scale_factor=None, gradient_accumulation_steps=None, name=None,
                 **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, use_ema=use_ema,
                         ema_momentum=ema_momentum, ema_overwrite_frequency=ema_overwrite_frequency,
                         loss_scale_factor=loss_scale_factor, gradient_accumulation_steps=gradient_accumulation_steps,
                         **kwargs)
        self.initial_accumulator_value, self.epsilon = initial_accumulator_value, epsilon

    def _slot_groups(self):
        return [("accumulator",)]

    def _slot_initial(self, slot):
        return self.initial_accumulator_value

    def _rule(self, learning_rate):
        return engine.keras_adagrad_update, {"lr": learning_rate, "epsilon": self.epsilon,
                                             "initial_accumulator_value": self.initial_accumulator_value}

    def get_config(self):
        return dict(super().get_config(), initial_accumulator_value=self.initial_accumulator_value,
                    epsilon=self.epsilon)
