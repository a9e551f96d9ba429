"""keras.optimizers.Lion: the sign of an interpolated momentum as the step (Chen et al. 2023)."""
from __future__ import annotations

from ... import engine
from .optimizer import Optimizer

__all__ = ["Lion"]


class Lion(Optimizer):
    """Lion as keras.optimizers.Lion: w -= lr * sign(beta_1 m + (1 - beta_1) g); m = beta_2 m + (1 - beta_2) g."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.99,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False,
                 ema_momentum=0.99, ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, use_ema=use_ema,
                         ema_momentum=ema_momentum, ema_overwrite_frequency=ema_overwrite_frequency,
                         loss_scale_factor=loss_scale_factor, gradient_accumulation_steps=gradient_accumulation_steps,
                         **kwargs)
        self.beta_1, self.beta_2 = beta_1, beta_2
        if beta_1 <= 0 or beta_1 > 1:
            raise ValueError("Argument `beta_1` must be in the [0, 1] range. Otherwise, the optimizer degenerates to "
                             f"SignSGD. Received: beta_1={beta_1}.")

    def _slot_groups(self):
        return [("momentum",)]

    def _rule(self, learning_rate):
        return engine.keras_lion_update, {"lr": learning_rate, "beta_1": self.beta_1, "beta_2": self.beta_2}

    def get_config(self):
        return dict(super().get_config(), beta_1=self.beta_1, beta_2=self.beta_2)
