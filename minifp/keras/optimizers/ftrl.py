"""keras.optimizers.Ftrl: follow-the-regularized-leader (McMahan et al. 2013), with Keras's L2 shrinkage and beta."""
from __future__ import annotations

from ... import engine
from .optimizer import Optimizer

__all__ = ["Ftrl"]


class Ftrl(Optimizer):
    """FTRL-proximal as keras.optimizers.Ftrl: an accumulator of squared gradients and a linear term per weight."""

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 l2_shrinkage_regularization_strength=0.0, beta=0.0,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False,
                 ema_momentum=0.99, ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, use_ema=use_ema,
                         ema_momentum=ema_momentum, ema_overwrite_frequency=ema_overwrite_frequency,
                         loss_scale_factor=loss_scale_factor, gradient_accumulation_steps=gradient_accumulation_steps,
                         **kwargs)
        # Keras's checks, in its order
        _check_nonnegative("initial_accumulator_value", initial_accumulator_value)
        if learning_rate_power > 0.0:
            raise ValueError(f"`learning_rate_power` needs to be negative or zero. Received: "
                             f"learning_rate_power={learning_rate_power}.")
        _check_nonnegative("l1_regularization_strength", l1_regularization_strength)
        _check_nonnegative("l2_regularization_strength", l2_regularization_strength)
        _check_nonnegative("l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength)
        self.learning_rate_power, self.beta = learning_rate_power, beta
        self.initial_accumulator_value = initial_accumulator_value
        self.l1_regularization_strength = l1_regularization_strength
        self.l2_regularization_strength = l2_regularization_strength
        self.l2_shrinkage_regularization_strength = l2_shrinkage_regularization_strength

    def _slot_groups(self):
        return [("accumulator", "linear")]

    def _slot_initial(self, slot):
        return self.initial_accumulator_value if slot == "accumulator" else 0.0

    def _hyper(self):
        return {"learning_rate_power": self.learning_rate_power, "initial_accumulator_value":
                self.initial_accumulator_value, "l1_regularization_strength": self.l1_regularization_strength,
                "l2_regularization_strength": self.l2_regularization_strength,
                "l2_shrinkage_regularization_strength": self.l2_shrinkage_regularization_strength, "beta": self.beta}

    def _rule(self, learning_rate):
        return engine.keras_ftrl_update, {"lr": learning_rate, **self._hyper()}

    def get_config(self):
        return dict(super().get_config(), **self._hyper())


def _check_nonnegative(key, value):
    if value < 0.0:
        raise ValueError(f"`{key}` needs to be positive or zero. Received: {key}={value}.")
