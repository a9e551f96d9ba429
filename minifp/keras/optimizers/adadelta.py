"""keras.optimizers.Adadelta: steps scaled by the ratio of the running RMS of updates to that of gradients."""
from __future__ import annotations

from ... import engine
from .optimizer import Optimizer

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta as keras.optimizers.Adadelta (rho 0.95, epsilon 1e-7, and Keras's learning rate 0.001 on the step)."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False,
                 ema_momentum=0.99, ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, use_ema=use_ema,
                         ema_momentum=ema_momentum, ema_overwrite_frequency=ema_overwrite_frequency,
                         loss_scale_factor=loss_scale_factor, gradient_accumulation_steps=gradient_accumulation_steps,
                         **kwargs)
        self.rho, self.epsilon = rho, epsilon

    def _slot_groups(self):
        return [("accumulated_grad", "accumulated_delta_var")]

    def _rule(self, learning_rate):
        return engine.keras_adadelta_update, {"lr": learning_rate, "rho": self.rho, "epsilon": self.epsilon}

    def get_config(self):
        return dict(super().get_config(), rho=self.rho, epsilon=self.epsilon)
