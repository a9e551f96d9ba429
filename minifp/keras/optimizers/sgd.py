"""keras.optimizers.SGD: Keras 3's rule (velocity m = momentum*m - lr*g; w += m), not PyTorch's."""
from __future__ import annotations

from ... import engine
from .optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    """Gradient descent with optional momentum and Nesterov momentum, as keras.optimizers.SGD."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, use_ema=False, ema_momentum=0.99, ema_overwrite_frequency=None,
                 loss_scale_factor=None, gradient_accumulation_steps=None, name=None, **kwargs):
        if not isinstance(momentum, float) or momentum < 0 or momentum > 1:
            raise ValueError("`momentum` must be a float between [0, 1].")
        super().__init__(learning_rate=learning_rate, name=name, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, use_ema=use_ema,
                         ema_momentum=ema_momentum, ema_overwrite_frequency=ema_overwrite_frequency,
                         loss_scale_factor=loss_scale_factor, gradient_accumulation_steps=gradient_accumulation_steps,
                         **kwargs)
        self.momentum, self.nesterov = momentum, nesterov

    def _slot_groups(self):
        return [("momentum",)] if self.momentum != 0 else []

    def _rule(self, learning_rate):
        return engine.keras_sgd_update, {"lr": learning_rate, "momentum": self.momentum, "nesterov": self.nesterov}

    def get_config(self):
        return dict(super().get_config(), momentum=self.momentum, nesterov=self.nesterov)
