"""keras.optimizers.Muon: orthogonalised momentum for matrices, Keras's AdamW step for every other variable."""
from __future__ import annotations

import re

import numpy as np

from ... import engine
from .optimizer import Optimizer

__all__ = ["Muon"]


class Muon(Optimizer):
    """Muon as keras.optimizers.Muon: 2-d variables (but embeddings and exclude_layers) take Newton-Schulz
    orthogonalised momentum steps; the others Adam steps at learning_rate * adam_lr_ratio, decayed by
    adam_weight_decay."""

    def __init__(self, learning_rate=0.001, adam_beta_1=0.9, adam_beta_2=0.999, adam_weight_decay=0.004, epsilon=1e-7,
                 weight_decay=0.004, clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False,
                 ema_momentum=0.99, ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, exclude_layers=None, exclude_embeddings=True,
                 muon_a=3.4445, muon_b=-4.7750, muon_c=2.0315, adam_lr_ratio=1, momentum=0.95, ns_steps=5,
                 nesterov=True, rms_rate=0.2, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, use_ema=use_ema,
                         ema_momentum=ema_momentum, ema_overwrite_frequency=ema_overwrite_frequency,
                         loss_scale_factor=loss_scale_factor, gradient_accumulation_steps=gradient_accumulation_steps,
                         **kwargs)
        self.adam_beta_1, self.adam_beta_2, self.epsilon = adam_beta_1, adam_beta_2, epsilon
        self.muon_a, self.muon_b, self.muon_c = muon_a, muon_b, muon_c
        self.adam_lr_ratio, self.momentum, self.ns_steps, self.nesterov = adam_lr_ratio, momentum, ns_steps, nesterov
        self.exclude_embeddings, self.exclude_layers = exclude_embeddings, exclude_layers or []
        self.adam_weight_decay, self.rms_rate = adam_weight_decay, rms_rate

    def _uses_adamw(self, variable):
        """Keras's _should_use_adamw: not a matrix, an embedding, or a path matching exclude_layers."""
        path = str(getattr(variable, "path", None) or getattr(variable, "name", ""))
        return (len(variable.shape) != 2 or (self.exclude_embeddings and "embedding" in path.lower())
                or any(re.search(keyword, path) for keyword in self.exclude_layers))

    def _slot_groups(self):
        return [("momentum", "velocity")]

    def _has_slot(self, variable, slot):
        return slot == "momentum" or self._uses_adamw(variable)

    def _weight_decay_of(self, variable):
        return self.adam_weight_decay if self._uses_adamw(variable) else self.weight_decay

    def _update(self, g, variable, learning_rate):
        if self._uses_adamw(variable):
            rule, hyper = engine.keras_adam_update, {
                "lr": np.float32(learning_rate * self.adam_lr_ratio), "step": int(self.iterations) + 1,
                "beta_1": self.adam_beta_1, "beta_2": self.adam_beta_2, "epsilon": self.epsilon}
        else:
            rule, hyper = engine.keras_muon_update, {
                "lr": learning_rate, "momentum": self.momentum, "nesterov": self.nesterov, "ns_steps": self.ns_steps,
                "muon_a": self.muon_a, "muon_b": self.muon_b, "muon_c": self.muon_c, "rms_rate": self.rms_rate}
        engine.update(rule, variable, g, self._slots[id(variable)], self.update_rounding, **hyper)

    def get_config(self):
        return dict(super().get_config(), adam_beta_1=self.adam_beta_1, adam_beta_2=self.adam_beta_2,
                    epsilon=self.epsilon, exclude_layers=self.exclude_layers, muon_a=self.muon_a,
                    muon_b=self.muon_b, muon_c=self.muon_c, adam_lr_ratio=self.adam_lr_ratio, momentum=self.momentum,
                    ns_steps=self.ns_steps, nesterov=self.nesterov, exclude_embeddings=self.exclude_embeddings,
                    adam_weight_decay=self.adam_weight_decay, rms_rate=self.rms_rate)
