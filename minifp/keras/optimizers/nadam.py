"""keras.optimizers.Nadam: Keras's rule, with the momentum schedule's running product kept by the optimizer."""
from __future__ import annotations

import numpy as np

from ... import engine
from .optimizer import Optimizer, OptimizerVariable

__all__ = ["Nadam"]


class Nadam(Optimizer):
    """Nesterov Adam as keras.optimizers.Nadam (mu_t = beta_1 * (1 - 0.5 * 0.96^t))."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, use_ema=False, ema_momentum=0.99, ema_overwrite_frequency=None,
                 loss_scale_factor=None, gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, use_ema=use_ema,
                         ema_momentum=ema_momentum, ema_overwrite_frequency=ema_overwrite_frequency,
                         loss_scale_factor=loss_scale_factor, gradient_accumulation_steps=gradient_accumulation_steps,
                         **kwargs)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon

    def _slot_groups(self):
        return [("momentum", "velocity")]

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._u_product = self._track(OptimizerVariable(1.0, "variable", f"{self.name}/variable"))

    def _update_all(self, grads, variables, learning_rate):
        # Keras moves the shared product once per step, before the variables' updates read it
        step = int(self.iterations) + 1
        self._u_product.assign(engine.keras_nadam_u(self._u_product.numpy(), step, self.beta_1))
        super()._update_all(grads, variables, learning_rate)

    def _rule(self, learning_rate):
        return engine.keras_nadam_update, {"lr": learning_rate, "step": int(self.iterations) + 1,
                                           "u_product": np.float32(self._u_product.numpy()), "beta_1": self.beta_1,
                                           "beta_2": self.beta_2, "epsilon": self.epsilon}

    def get_config(self):
        return dict(super().get_config(), beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon)
