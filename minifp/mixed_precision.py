"""Mixed precision, Keras's face: dtype policies and LossScaleOptimizer."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ._formats import ALIASES, FORMATS, Format, as_format
from .amp import DynamicLossScale, StaticLossScale, all_finite
from . import _checks
from .optim import Optimizer

__all__ = ["Policy", "set_global_policy", "global_policy", "LossScaleOptimizer"]

KERAS_POLICIES = {"float32": ("float32", "float32"), "float16": ("float16", "float16"),
                  "bfloat16": ("bfloat16", "bfloat16"), "mixed_float16": ("float16", "float32"),
                  "mixed_bfloat16": ("bfloat16", "float32")}
_KEYS = {"p": "params", "params": "params", "c": "compute", "compute": "compute", "o": "output", "output": "output"}
_JMP_NAMES = {"f32": "float32", "full": "float32", "f16": "float16", "bf16": "bfloat16", "half": "float16"}


@dataclass(frozen=True)
class Policy:
    """A dtype policy as a value (after jmp): the formats of a layer's variables, its computation and its output.

    Made from a Keras name ("float32", "float16", "bfloat16", "mixed_float16", "mixed_bfloat16") or jmp's
    grammar ("params=float32,compute=float16,output=float32", keys p/c/o). Two policies are equal when their
    formats are; compute_dtype and variable_dtype give the formats' names, as Keras's do.
    """

    name: str = field(compare=False)
    variable_format: Format
    compute_format: Format
    output_format: Format

    def __init__(self, name):
        if isinstance(name, Policy):
            name = name.name
        if not isinstance(name, str):
            raise TypeError(f"Policy name must be a string, got {type(name).__name__}")
        if name in KERAS_POLICIES:
            compute, variable = KERAS_POLICIES[name]
            output = compute
        elif "=" in name:
            parts = dict(self._parse(part) for part in name.split(","))
            variable = parts.get("params", "float32")
            compute = parts.get("compute", variable)
            output = parts.get("output", compute)
        else:
            raise ValueError(f"Cannot convert value {name!r} to a mixed precision Policy. Valid policies "
                             f"are: {', '.join(KERAS_POLICIES)}, or jmp's form "
                             f"'params=float32,compute=float16,output=float32' (keys p, c, o)")
        for key, value in (("name", name), ("variable_format", as_format(variable)),
                           ("compute_format", as_format(compute)), ("output_format", as_format(output))):
            object.__setattr__(self, key, value)

    @staticmethod
    def _parse(part):
        key, _, value = part.strip().partition("=")
        if key.strip() not in _KEYS:
            raise ValueError(f"unknown policy key {key.strip()!r}; valid keys: params, compute, output (or p, c, o)")
        value = _JMP_NAMES.get(value.strip(), value.strip())
        if value not in FORMATS and value not in ALIASES:
            raise ValueError(f"unknown dtype {value!r} in policy; valid: {', '.join(FORMATS)}")
        return _KEYS[key.strip()], value

    compute_dtype = property(lambda self: self.compute_format.name)
    variable_dtype = property(lambda self: self.variable_format.name)
    output_dtype = property(lambda self: self.output_format.name)

    def __repr__(self):
        return f'<Policy "{self.name}">'


_global = [Policy("float32")]


def set_global_policy(policy):
    """Set the policy that layers built from now on take by default (a Policy or a name)."""
    _global[0] = Policy(policy if policy is not None else "float32")


def global_policy():
    """The current global policy (float32 unless set)."""
    return _global[0]


class LossScaleOptimizer(Optimizer):
    """tf.keras's LossScaleOptimizer: scales the loss, unscales gradients, skips non-finite steps.

    Dynamic by default (initial scale 2**15, doubled after 2000 finite steps, halved on a non-finite one
    but never below 1); dynamic=False holds initial_scale fixed.
    """

    def __init__(self, inner_optimizer, dynamic=True, initial_scale=None, dynamic_growth_steps=None):
        if isinstance(inner_optimizer, LossScaleOptimizer):
            raise TypeError(f"LossScaleOptimizer cannot wrap another LossScaleOptimizer, but got: {inner_optimizer}")
        if not isinstance(inner_optimizer, Optimizer):
            raise TypeError(f'"inner_optimizer" must be an instance of Optimizer, but got: {inner_optimizer!r}')
        if not isinstance(dynamic, bool):
            raise TypeError(f'"dynamic" argument to LossScaleOptimizer.__init__ must be a bool, but got: {dynamic!r}')
        if getattr(inner_optimizer, "_wrapped", False):
            raise ValueError('"inner_optimizer" is already wrapped by a LossScaleOptimizer. An optimizer can only '
                             'be wrapped by a single LossScaleOptimizer')
        if initial_scale is not None:
            _checks.number("initial_scale", initial_scale, 0, lo_open=True, where="LossScaleOptimizer: ")
        if dynamic_growth_steps is not None:
            _checks.integer("dynamic_growth_steps", dynamic_growth_steps, 1, where="LossScaleOptimizer: ")
        if dynamic:
            self._loss_scale = DynamicLossScale(2.0**15 if initial_scale is None else initial_scale,
                                                period=2000 if dynamic_growth_steps is None else dynamic_growth_steps)
        else:
            if initial_scale is None:
                raise ValueError('"initial_scale" must be specified if "dynamic" is False')
            if dynamic_growth_steps is not None:
                raise ValueError(f'"dynamic_growth_steps" must be None if "dynamic" is False, but got: '
                                 f'{dynamic_growth_steps}')
            self._loss_scale = StaticLossScale(initial_scale)
        inner_optimizer._wrapped = True
        self._optimizer = inner_optimizer
        self.last_step_skipped = False

    inner_optimizer = property(lambda self: self._optimizer)
    dynamic = property(lambda self: isinstance(self._loss_scale, DynamicLossScale))
    loss_scale = property(lambda self: float(self._loss_scale.loss_scale))
    dynamic_counter = property(lambda self: self._loss_scale.counter if self.dynamic else None)
    dynamic_growth_steps = property(lambda self: self._loss_scale.period if self.dynamic else None)
    params = property(lambda self: self._optimizer.params)
    iterations = property(lambda self: self._optimizer.iterations)
    learning_rate = property(lambda self: self._optimizer.hyper["lr"])

    def get_scaled_loss(self, loss):
        """loss times the current loss scale."""
        return self._loss_scale.scale(loss)

    def get_unscaled_gradients(self, grads):
        """Each gradient divided by the loss scale, in its own format; None stays None."""
        return self._loss_scale.unscale(list(grads))

    def apply_gradients(self, grads_and_vars):
        """Apply (unscaled) gradients unless one is inf/NaN; then move the loss scale."""
        pairs = list(grads_and_vars)
        finite = all_finite(g for g, _ in pairs)
        self._loss_scale = self._loss_scale.adjust(finite)
        self.last_step_skipped = not finite
        if finite:
            self._optimizer.apply_gradients(pairs)
        else:
            self._optimizer.iterations += 1    # a skipped step still counts, as in tf.keras

    def step(self):
        """PyTorch-style: unscale each parameter's .grad (from a scaled loss) and apply it."""
        params = self._optimizer.params
        self.apply_gradients(zip(self.get_unscaled_gradients([p.grad for p in params]), params))

    def zero_grad(self, set_to_none=True):
        """The inner optimizer's zero_grad."""
        self._optimizer.zero_grad(set_to_none)

    def build(self, params):
        """Register the variables to update before the first step (the inner optimizer's build)."""
        self._optimizer.build(params)

    def state_dict(self):
        """The inner optimizer's state, whether the scale is dynamic, the loss scale and the dynamic counter."""
        s = self._loss_scale
        return {"inner": self._optimizer.state_dict(), "dynamic": self.dynamic, "loss_scale": float(s.loss_scale),
                "counter": getattr(s, "counter", 0)}

    def load_state_dict(self, state_dict):
        """Restore what state_dict() saved; the inner optimizer's state and the scale are all checked first."""
        self._restore(self._checked(state_dict, self.params))

    def _checked(self, state_dict, params):
        """(inner optimizer's checked state, new loss scale) from state_dict; changes nothing."""
        where = "LossScaleOptimizer state dict"
        _checks.keys(where, state_dict, ("inner", "dynamic", "loss_scale", "counter"))
        if state_dict["dynamic"] is not self.dynamic:
            kinds = {True: "dynamic", False: "static"}
            raise ValueError(f"{where}: 'dynamic' is {state_dict['dynamic']!r}; this LossScaleOptimizer is "
                             f"{kinds[self.dynamic]} (dynamic={self.dynamic})")
        scale = _checks.number("'loss_scale'", state_dict["loss_scale"], 0, lo_open=True, where=f"{where}: ")
        period = self._loss_scale.period if self.dynamic else 1
        counter = _checks.integer("'counter'", state_dict["counter"], 0, period - 1, where=f"{where}: ")
        inner = self._optimizer._checked(state_dict["inner"], params)
        if self.dynamic:
            return inner, replace(self._loss_scale, loss_scale=np.float32(scale), counter=counter)
        return inner, StaticLossScale(scale)

    def _restore(self, checked):
        self._optimizer._restore(checked[0])
        self._loss_scale = checked[1]

    def __repr__(self):
        return f"LossScaleOptimizer({self._optimizer!r}, loss_scale={self.loss_scale})"
