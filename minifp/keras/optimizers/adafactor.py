"""keras.optimizers.Adafactor: the second moment of a matrix kept as row and column means (Shazeer & Stern 2018)."""
from __future__ import annotations

from ... import engine
from .optimizer import Optimizer

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor as keras.optimizers.Adafactor: factored second moments, relative steps, update clipping."""

    def __init__(self, learning_rate=0.001, beta_2_decay=-0.8, epsilon_1=1e-30, epsilon_2=1e-3, clip_threshold=1.0,
                 relative_step=True,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False,
                 ema_momentum=0.99, ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, use_ema=use_ema,
                         ema_momentum=ema_momentum, ema_overwrite_frequency=ema_overwrite_frequency,
                         loss_scale_factor=loss_scale_factor, gradient_accumulation_steps=gradient_accumulation_steps,
                         **kwargs)
        self.beta_2_decay, self.epsilon_1, self.epsilon_2 = beta_2_decay, epsilon_1, epsilon_2
        self.clip_threshold, self.relative_step = clip_threshold, relative_step

    def _slot_groups(self):
        # Keras makes r, c and the velocity variable by variable
        return [("r", "c", "velocity")]

    def _slot_shape(self, slot, shape):
        if slot == "velocity":
            return shape
        if len(shape) < 2:                  # unused scalars, as Keras keeps them
            return ()
        return shape[:-1] if slot == "r" else shape[:-2] + shape[-1:]

    def _slot_name(self, base, slot):
        return base if slot in ("r", "c") else super()._slot_name(base, slot)

    def _rule(self, learning_rate):
        return engine.keras_adafactor_update, {
            "lr": learning_rate, "step": int(self.iterations) + 1, "beta_2_decay": self.beta_2_decay,
            "epsilon_1": self.epsilon_1, "epsilon_2": self.epsilon_2, "clip_threshold": self.clip_threshold}

    def get_config(self):
        return dict(super().get_config(), beta_2_decay=self.beta_2_decay, epsilon_1=self.epsilon_1,
                    epsilon_2=self.epsilon_2, clip_threshold=self.clip_threshold, relative_step=self.relative_step)
