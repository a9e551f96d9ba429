"""keras.optimizers.Adamax: Adam with the infinity norm of the gradients in place of the second moment."""
from __future__ import annotations

from ... import engine
from .optimizer import Optimizer

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax as keras.optimizers.Adamax: u = max(beta_2 u, |g|); w -= lr m / ((1 - beta_1^t)(u + epsilon))."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False,
                 ema_momentum=0.99, ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, use_ema=use_ema,
                         ema_momentum=ema_momentum, ema_overwrite_frequency=ema_overwrite_frequency,
                         loss_scale_factor=loss_scale_factor, gradient_accumulation_steps=gradient_accumulation_steps,
                         **kwargs)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon

    def _slot_groups(self):
        return [("momentum", "norm")]

    def _rule(self, learning_rate):
        return engine.keras_adamax_update, {"lr": learning_rate, "step": int(self.iterations) + 1,
                                            "beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon}

    def get_config(self):
        return dict(super().get_config(), beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon)
