"""keras.optimizers.schedules: learning rates as functions of the optimizer's step, computed in float32 as Keras's."""
from __future__ import annotations

import math

import numpy as np

__all__ = ["LearningRateSchedule", "ExponentialDecay", "CosineDecay", "PiecewiseConstantDecay", "PolynomialDecay",
           "InverseTimeDecay", "serialize", "deserialize"]

_f32 = np.float32


class LearningRateSchedule:
    """The base of learning rate schedules: __call__(step) -> learning rate; get_config / from_config."""

    def __call__(self, step):
        raise NotImplementedError(f"Learning rate schedule '{self.__class__.__name__}' must override "
                                  "`__call__(self, step)`.")

    def get_config(self):
        raise NotImplementedError(f"Learning rate schedule '{self.__class__.__name__}' must override `get_config()` "
                                  "in order to be serializable.")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _positive_steps(decay_steps):
    if decay_steps <= 0:
        raise ValueError(f"Argument `decay_steps` must be > 0. Received: decay_steps={decay_steps}")


class ExponentialDecay(LearningRateSchedule):
    """initial_learning_rate * decay_rate ** (step / decay_steps), the exponent floored when staircase."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name="ExponentialDecay"):
        super().__init__()
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.decay_rate, self.staircase, self.name = decay_rate, staircase, name
        _positive_steps(decay_steps)

    def __call__(self, step):
        with np.errstate(all="ignore"):
            p = _f32(step) / _f32(self.decay_steps)
            if self.staircase:
                p = np.floor(p)
            return _f32(self.initial_learning_rate) * _f32(self.decay_rate) ** p

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase, "name": self.name}


class PiecewiseConstantDecay(LearningRateSchedule):
    """values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <= boundaries[i], else the
    last value."""

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        super().__init__()
        if len(boundaries) != len(values) - 1:
            raise ValueError("The length of boundaries should be 1 less than the length of values. Received: "
                             f"boundaries={boundaries} of length {len(boundaries)}, and values={values} of length "
                             f"{len(values)}.")
        self.boundaries, self.values, self.name = boundaries, values, name

    def __call__(self, step):
        step = np.asarray(step)
        index = next((i for i, b in enumerate(self.boundaries) if step <= b), len(self.boundaries))
        value = self.values[index]
        return _f32(value) if isinstance(value, float) else np.asarray(value)[()]    # floats become float32

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class CosineDecay(LearningRateSchedule):
    """Optional linear warmup to warmup_target over warmup_steps, then cosine decay to alpha times the start."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay", warmup_target=None,
                 warmup_steps=0):
        super().__init__()
        self.initial_learning_rate, self.decay_steps, self.alpha, self.name = (initial_learning_rate, decay_steps,
                                                                             alpha, name)
        self.warmup_steps, self.warmup_target = warmup_steps, warmup_target
        _positive_steps(decay_steps)

    def _decay(self, step, decay_steps, decay_from_lr):
        completed_fraction = step / decay_steps
        cosine_decayed = _f32(0.5) * (_f32(1.0) + np.cos(_f32(math.pi) * completed_fraction))
        decayed = _f32(1 - self.alpha) * cosine_decayed + _f32(self.alpha)
        return decay_from_lr * decayed

    def __call__(self, step):
        initial = _f32(self.initial_learning_rate)
        decay_steps = _f32(self.decay_steps)
        step = _f32(step)
        if self.warmup_target is None:
            return self._decay(np.minimum(step, decay_steps), decay_steps, initial)
        target, warmup_steps = _f32(self.warmup_target), _f32(self.warmup_steps)
        step = np.minimum(step, decay_steps + warmup_steps)
        if step < warmup_steps:
            return (target - initial) * (step / warmup_steps) + initial
        return self._decay(step - warmup_steps, decay_steps, target)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "alpha": self.alpha, "name": self.name, "warmup_target": self.warmup_target,
                "warmup_steps": self.warmup_steps}


class PolynomialDecay(LearningRateSchedule):
    """From initial_learning_rate to end_learning_rate over decay_steps as (1 - step / decay_steps) ** power (cycle:
    again over each next multiple of decay_steps)."""

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False,
                 name="PolynomialDecay"):
        super().__init__()
        self.initial_learning_rate, self.decay_steps, self.end_learning_rate = (initial_learning_rate, decay_steps,
                                                                                end_learning_rate)
        self.power, self.cycle, self.name = power, cycle, name
        _positive_steps(decay_steps)

    def __call__(self, step):
        initial, end, power = _f32(self.initial_learning_rate), _f32(self.end_learning_rate), _f32(self.power)
        step, decay_steps = _f32(step), _f32(self.decay_steps)
        if self.cycle:      # the first multiple of decay_steps past the step (1 at step 0)
            decay_steps = decay_steps * (_f32(1.0) if step == 0 else np.ceil(step / decay_steps))
        else:
            step = np.minimum(step, decay_steps)
        with np.errstate(all="ignore"):
            return (initial - end) * (_f32(1) - step / decay_steps) ** power + end

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "end_learning_rate": self.end_learning_rate, "power": self.power, "cycle": self.cycle,
                "name": self.name}


class InverseTimeDecay(LearningRateSchedule):
    """initial_learning_rate / (1 + decay_rate * step / decay_steps), the ratio floored when staircase."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name="InverseTimeDecay"):
        super().__init__()
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.decay_rate, self.staircase, self.name = decay_rate, staircase, name
        _positive_steps(decay_steps)

    def __call__(self, step):
        p = _f32(step) / _f32(self.decay_steps)
        if self.staircase:
            p = np.floor(p)
        return _f32(self.initial_learning_rate) / (_f32(1) + _f32(self.decay_rate) * p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase, "name": self.name}


_SCHEDULES = {cls.__name__: cls for cls in (ExponentialDecay, CosineDecay, PiecewiseConstantDecay, PolynomialDecay,
                                            InverseTimeDecay)}


def serialize(learning_rate_schedule):
    """Keras's serialized form: {"module", "class_name", "config", "registered_name"}."""
    return {"module": "keras.optimizers.schedules", "class_name": type(learning_rate_schedule).__name__,
            "config": learning_rate_schedule.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """The schedule a serialized config describes."""
    classes = dict(_SCHEDULES, **(custom_objects or {}))
    name = config.get("class_name")
    if name not in classes:
        raise ValueError(f"Unknown learning rate schedule: {name!r}. Valid names: {', '.join(sorted(_SCHEDULES))}")
    return classes[name].from_config(config.get("config", {}))
