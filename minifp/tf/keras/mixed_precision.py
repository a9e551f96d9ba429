"""tf.keras.mixed_precision (Keras 2 / tf-keras semantics): Policy, the global policy, LossScaleOptimizer.

Where tf.keras differs from Keras 3: the Policy's repr is <Policy "mixed_float16">; LossScaleOptimizer has
get_scaled_loss / get_unscaled_gradients, and apply_gradients does NOT unscale (it expects unscaled gradients),
skips a step with an inf/NaN gradient while still counting it in `iterations`, and adjusts the scale with a floor
of 1 (halved on overflow, doubled after dynamic_growth_steps finite steps). `experimental` holds TF 2.1-2.3's
names: set_policy, global_policy, Policy(name, loss_scale="auto") and LossScaleOptimizer(optimizer, loss_scale).
The scale's state machine is the engine's (minifp/_loss_scale.py), shared with the other faces.
"""
from __future__ import annotations

import sys
import types
import warnings

import numpy as np

from ...engine import all_finite, apply, DynamicLossScale, LossScaler, StaticLossScale, Tensor, tensor
from ...keras._tensor import convert_to_tensor
from ...keras.mixed_precision import policy as _policy
from ...keras.optimizers.optimizer import Optimizer

__all__ = ["Policy", "set_global_policy", "global_policy", "LossScaleOptimizer", "experimental"]


class Policy(_policy.DTypePolicy):
    """tf.keras's dtype policy: the Keras 3 DTypePolicy with tf.keras's name checks and repr."""

    def __init__(self, name):
        if not isinstance(name, str):
            raise TypeError(f"'name' must be a string, but got: {name}")
        if name.endswith("_float32_vars"):
            raise ValueError("Policies ending in '_float32_vars' have been removed from TensorFlow. Please use the "
                             f"'mixed_float16' or 'mixed_bfloat16' policy instead. Got policy name: '{name}'")
        super().__init__(name)

    def __repr__(self):
        return f'<Policy "{self.name}">'


def _as_policy(policy):
    return policy if isinstance(policy, Policy) else Policy(policy.name if isinstance(policy, _policy.DTypePolicy)
                                                            else policy)


def set_global_policy(policy):
    """Set the policy layers made from now on take (a Policy or a name; None restores float32)."""
    if policy is not None:
        policy = _as_policy(policy)
        if not policy.compute_dtype.startswith(("float", "bfloat")):
            raise ValueError("set_global_policy can only be used to set the global policy to floating-point "
                             f"policies, such as \"float32\" and \"mixed_float16\", but got policy: {policy.name}")
    _policy.set_global_policy(policy)


def global_policy():
    """The global policy as a tf.keras Policy (float32 unless set)."""
    return _as_policy(_policy.global_policy())


def _times(x, factor):
    """x times factor cast to x's dtype first, as tf.keras does (tf.cast(scale, x.dtype) * x)."""
    if isinstance(x, Tensor):
        if x.fmt is None:
            return x * factor
        factor = apply("cast", tensor(np.float32(factor)), _out=x.fmt)
        return x * factor
    return x * np.asarray(factor, getattr(x, "dtype", np.float32))


class LossScaleOptimizer:
    """tf.keras.mixed_precision.LossScaleOptimizer(inner_optimizer, dynamic=True, initial_scale=None,
    dynamic_growth_steps=None); TF 2.1-2.3's LossScaleOptimizer(opt, "dynamic") is accepted too."""

    def __init__(self, inner_optimizer, dynamic=True, initial_scale=None, dynamic_growth_steps=None):
        if dynamic == "dynamic":            # TF 2.1-2.3: LossScaleOptimizer(opt, "dynamic")
            dynamic = True
        if not isinstance(inner_optimizer, Optimizer):
            raise TypeError(f'"inner_optimizer" must be an instance of Optimizer, but got: {inner_optimizer}.')
        if not isinstance(dynamic, bool):
            raise TypeError(f'"dynamic" argument to LossScaleOptimizer.__init__ must be a bool, but got: '
                            f'{dynamic!r}')
        if isinstance(inner_optimizer, LossScaleOptimizer) or getattr(inner_optimizer, "inner_optimizer", None):
            raise TypeError(f"LossScaleOptimizer cannot wrap another LossScaleOptimizer, but got: {inner_optimizer}")
        if getattr(inner_optimizer, "_is_wrapped_by_loss_scale_optimizer", False):
            raise ValueError('"inner_optimizer" is already wrapped by a LossScaleOptimizer. An optimizer can only be '
                             'wrapped by a single LossScaleOptimizer')
        for arg, value in (("initial_scale", initial_scale), ("dynamic_growth_steps", dynamic_growth_steps)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float, np.number))
                                      or not np.isfinite(value) or value <= 0):
                raise ValueError(f'"{arg}" must be a finite number > 0, but got: {value!r}')
        if dynamic:
            self._scaler = LossScaler(DynamicLossScale(2**15 if initial_scale is None else initial_scale,
                                                       period=2000 if dynamic_growth_steps is None
                                                       else int(dynamic_growth_steps), min_loss_scale=1.0))
        else:
            if initial_scale is None:
                raise ValueError('"initial_scale" must be specified if "dynamic" is False')
            if dynamic_growth_steps is not None:
                raise ValueError(f'"dynamic_growth_steps" must be None if "dynamic" is False, but got: '
                                 f'{dynamic_growth_steps}')
            self._scaler = LossScaler(StaticLossScale(initial_scale))
        self._initial_scale = float(2**15 if initial_scale is None else initial_scale)
        self._optimizer = inner_optimizer
        inner_optimizer._is_wrapped_by_loss_scale_optimizer = True
        self._loss_has_been_scaled = False
        self._gradients_have_been_unscaled = False
        self._last_step_skipped = False

    dynamic = property(lambda self: isinstance(self._scaler.state, DynamicLossScale))
    inner_optimizer = property(lambda self: self._optimizer)
    initial_scale = property(lambda self: self._initial_scale)
    dynamic_growth_steps = property(lambda self: self._scaler.state.period if self.dynamic else None)

    @property
    def loss_scale(self):
        """The current loss scale (a float32 scalar tensor)."""
        return convert_to_tensor(np.float32(self._scaler.loss_scale))

    @property
    def dynamic_counter(self):
        """Finite steps since the scale last changed (None for a fixed scale)."""
        return convert_to_tensor(np.int64(self._scaler.counter)) if self.dynamic else None

    def get_scaled_loss(self, loss):
        """loss * the loss scale (cast to the loss's dtype first); a callable loss gives a callable."""
        self._loss_has_been_scaled = True
        scale = np.float32(self._scaler.loss_scale)
        if callable(loss) and not isinstance(loss, Tensor):
            return lambda: _times(loss(), scale)
        return _times(loss, scale)

    def get_unscaled_gradients(self, grads):
        """Each gradient times 1 / loss scale (cast to its dtype first); None stays None."""
        self._gradients_have_been_unscaled = True
        reciprocal = np.float32(1.0) / np.float32(self._scaler.loss_scale)
        return [None if g is None else _times(g, reciprocal) for g in grads]

    def apply_gradients(self, grads_and_vars, skip_gradients_aggregation=False, **kwargs):
        """Apply the (already unscaled) gradients unless one is inf/NaN, then adjust the scale; a skipped step
        still advances `iterations`, as tf.keras does."""
        pairs = list(grads_and_vars)
        _maybe_warn_about_scaling(self._loss_has_been_scaled, self._gradients_have_been_unscaled)
        grads = [g for g, _ in pairs]
        finite = all_finite(grads)
        self._last_step_skipped = not finite           # for fit's per-step record (iterations advance anyway)
        self._scaler.adjust(finite)
        if finite:
            self._optimizer.apply_gradients(pairs)
        else:
            if not self._optimizer.built:
                self._optimizer.build([v for _, v in pairs])
            self._optimizer.iterations.assign_add(1)
        return self._optimizer.iterations

    def minimize(self, loss, var_list, tape=None):
        raise NotImplementedError("minimize(): compute gradients with tf.GradientTape, then call "
                                  "get_unscaled_gradients and apply_gradients")

    def build(self, var_list):
        self._optimizer.build(var_list)

    @property
    def iterations(self):
        return self._optimizer.iterations

    @property
    def learning_rate(self):
        return self._optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        self._optimizer.learning_rate = value

    lr = learning_rate

    @property
    def variables(self):
        return self._optimizer.variables

    def get_config(self):
        from ...keras.optimizers import serialize
        return {"inner_optimizer": serialize(self._optimizer), "dynamic": self.dynamic,
                "initial_scale": self.initial_scale, "dynamic_growth_steps": self.dynamic_growth_steps}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from ...keras.optimizers.loss_scale_optimizer import from_inner_config
        return from_inner_config(cls, config, custom_objects)

    # -- the engine's training-state protocol (minifp.checkpoint): the inner optimizer's, and the loss scale -------
    def _engine_params(self):
        return self._optimizer._engine_params()

    def _engine_state(self):
        return {**self._optimizer._engine_state(),
                "loss_scale": {"loss_scale": float(self._scaler.loss_scale), "counter": int(self._scaler.counter)}}

    def _engine_restore(self, state, params):
        scale = state.get("loss_scale") if isinstance(state, dict) else None
        if not isinstance(scale, dict) or set(scale) != {"loss_scale", "counter"}:
            raise ValueError("a tf.keras LossScaleOptimizer's state must hold its loss_scale and counter")
        inner = self._optimizer._engine_restore({k: v for k, v in state.items() if k != "loss_scale"}, params)
        changes = {"loss_scale": float(scale["loss_scale"])}
        if self.dynamic:
            changes["counter"] = int(scale["counter"])

        def apply():
            inner()
            self._scaler.set(**changes)
        return apply

    def __getattr__(self, name):
        # everything else (name, get_config of the inner, clipnorm ...) is the inner optimizer's, as in tf.keras
        if name.startswith("_") or name == "scale_loss":      # scale_loss is Keras 3's, not tf.keras's
            raise AttributeError(f"'LossScaleOptimizer' object has no attribute '{name}'")
        return getattr(self._optimizer, name)


_EXAMPLE = """
    with tf.GradientTape() as tape:
      loss = loss_fn()
      scaled_loss = opt.get_scaled_loss(loss)
    scaled_grads = tape.gradient(scaled_loss, vars)
    grads = opt.get_unscaled_gradients(scaled_grads)
    opt.apply_gradients([(grads, var)])"""


def _maybe_warn_about_scaling(loss_has_been_scaled, gradients_have_been_unscaled):
    """tf.keras's warning when apply_gradients comes without get_scaled_loss / get_unscaled_gradients."""
    if loss_has_been_scaled and gradients_have_been_unscaled:
        return
    if not loss_has_been_scaled and not gradients_have_been_unscaled:
        what = ("You forgot to call LossScaleOptimizer.get_scaled_loss() and "
                "LossScaleOptimizer.get_unscaled_gradients() before calling LossScaleOptimizer.apply_gradients().")
    elif not loss_has_been_scaled:
        what = ("You forgot to call LossScaleOptimizer.get_scaled_loss() before calling "
                "LossScaleOptimizer.apply_gradients() (you did call get_unscaled_gradients() however).")
    else:
        what = ("You forgot to call LossScaleOptimizer.get_unscaled_gradients() before calling "
                "LossScaleOptimizer.apply_gradients() (you did call get_scaled_loss() however).")
    warnings.warn(f"{what} This will likely result in worse model quality, so please call them in the correct "
                  f"places! For example:{_EXAMPLE}", stacklevel=3)


# -- TF 2.1-2.3: tf.keras.mixed_precision.experimental --------------------------------------------------------

class _ExperimentalPolicy(Policy):
    """TF 2.1-2.3's Policy(name, loss_scale="auto"): "auto" means dynamic loss scaling for mixed_float16."""

    def __init__(self, name, loss_scale="auto"):
        super().__init__(name)
        if loss_scale == "auto":
            loss_scale = "dynamic" if name == "mixed_float16" else None
        self.loss_scale = loss_scale

    def __repr__(self):
        return f'<Policy "{self.name}", loss_scale={self.loss_scale!r}>' if self.loss_scale else super().__repr__()


def _experimental_lso(optimizer, loss_scale="dynamic"):
    """TF 2.1-2.3's LossScaleOptimizer(optimizer, loss_scale): "dynamic" or a fixed number."""
    if loss_scale == "dynamic" or loss_scale is None:
        return LossScaleOptimizer(optimizer)
    if isinstance(loss_scale, (int, float, np.number)) and not isinstance(loss_scale, bool):
        return LossScaleOptimizer(optimizer, dynamic=False, initial_scale=float(loss_scale))
    raise ValueError(f'loss_scale must be "dynamic" or a number, but got: {loss_scale!r}')


experimental = types.ModuleType(f"{__name__}.experimental", "TF 2.1-2.3's tf.keras.mixed_precision.experimental.")
experimental.Policy = _ExperimentalPolicy
experimental.set_policy = set_global_policy
experimental.global_policy = global_policy
experimental.LossScaleOptimizer = _experimental_lso
experimental.__all__ = ["Policy", "set_policy", "global_policy", "LossScaleOptimizer"]
sys.modules[experimental.__name__] = experimental

from ...keras._missing import missing as _missing  # noqa: E402

__getattr__ = _missing(__name__, "TensorFlow")
