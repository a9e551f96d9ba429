"""keras.optimizers.RMSprop: Keras's rule (epsilon inside the root, momentum on lr*g/root), not PyTorch's."""
from __future__ import annotations

from ... import engine
from .optimizer import Optimizer

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop as keras.optimizers.RMSprop (rho 0.9, epsilon 1e-7; centered subtracts the squared mean gradient)."""

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, loss_scale_factor=None, gradient_accumulation_steps=None, name=None,
                 **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, use_ema=use_ema,
                         ema_momentum=ema_momentum, ema_overwrite_frequency=ema_overwrite_frequency,
                         loss_scale_factor=loss_scale_factor, gradient_accumulation_steps=gradient_accumulation_steps,
                         **kwargs)
        self.rho, self.momentum, self.epsilon, self.centered = rho, momentum, epsilon, centered

    def _slot_groups(self):
        return ([("velocity",)] + ([("momentum",)] if self.momentum > 0 else [])
                + ([("average_gradient",)] if self.centered else []))

    def _rule(self, learning_rate):
        return engine.keras_rmsprop_update, {"lr": learning_rate, "rho": self.rho, "epsilon": self.epsilon,
                                             "momentum": self.momentum if self.momentum > 0 else 0.0,
                                             "centered": self.centered}

    def get_config(self):
        return dict(super().get_config(), rho=self.rho, momentum=self.momentum, epsilon=self.epsilon,
                    centered=self.centered)
