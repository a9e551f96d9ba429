"""keras.initializers: Keras 3's initialisers (names, defaults, fan rules), drawing from minifp's seeded generator."""
from __future__ import annotations

import math

import numpy as np

from ..engine import generator, rng
from . import backend

__all__ = ["Initializer", "Zeros", "Ones", "Constant", "RandomNormal", "RandomUniform", "TruncatedNormal",
           "VarianceScaling", "GlorotUniform", "GlorotNormal", "HeNormal", "HeUniform", "LecunNormal",
           "LecunUniform", "Identity", "Orthogonal", "get", "serialize", "deserialize"]


def _fans(shape):
    """Keras's fan-in and fan-out: dense kernels (in, out); conv kernels (*spatial, in, out)."""
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


def _rng(seed):
    return generator(seed) if seed is not None else rng()


class Initializer:
    """An initialiser: called with (shape, dtype) it gives the initial values (a NumPy float32 array)."""

    def __call__(self, shape, dtype=None):
        raise NotImplementedError

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def clone(self):
        return self.__class__(**self.get_config())


class Constant(Initializer):
    """Every value `value`."""

    def __init__(self, value=0.0):
        self.value = value

    def __call__(self, shape, dtype=None):
        return np.full(shape, self.value, np.float32 if dtype is None or "float" in str(dtype) else str(dtype))

    def get_config(self):
        return {"value": self.value}


class Zeros(Constant):
    """All zeros."""

    def __init__(self):
        super().__init__(0.0)

    def get_config(self):
        return {}


class Ones(Constant):
    """All ones."""

    def __init__(self):
        super().__init__(1.0)

    def get_config(self):
        return {}


class RandomInitializer(Initializer):
    def __init__(self, seed=None):
        self.seed = seed

    def get_config(self):
        return {"seed": self.seed}


class RandomNormal(RandomInitializer):
    """Normal draws of mean and stddev (Keras default stddev 0.05)."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape, dtype=None):
        return (_rng(self.seed).standard_normal(shape) * self.stddev + self.mean).astype(np.float32)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


def _truncated(rng, shape, stddev, mean=0.0):
    """Normal draws redrawn until within two standard deviations (TensorFlow's truncated_normal)."""
    out = rng.standard_normal(shape)
    bad = np.abs(out) > 2
    while bad.any():
        out[bad] = rng.standard_normal(int(bad.sum()))
        bad = np.abs(out) > 2
    return (out * stddev + mean).astype(np.float32)


class TruncatedNormal(RandomNormal):
    """Normal draws cut at two standard deviations."""

    def __call__(self, shape, dtype=None):
        return _truncated(_rng(self.seed), shape, self.stddev, self.mean)


class RandomUniform(RandomInitializer):
    """Uniform draws in [minval, maxval) (Keras default +-0.05)."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__(seed)
        self.minval, self.maxval = minval, maxval

    def __call__(self, shape, dtype=None):
        return _rng(self.seed).uniform(self.minval, self.maxval, shape).astype(np.float32)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class VarianceScaling(RandomInitializer):
    """Draws scaled by the kernel's fans: scale / fan (fan_in, fan_out or their mean)."""

    MODES = ("fan_in", "fan_out", "fan_avg")
    DISTRIBUTIONS = ("truncated_normal", "untruncated_normal", "uniform")

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None):
        if scale <= 0.0:
            raise ValueError(f"Argument `scale` must be positive float. Received: scale={scale}")
        if mode not in self.MODES:
            raise ValueError(f"Invalid `mode` argument: {mode}. Please use one of {self.MODES}")
        distribution = distribution.lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in self.DISTRIBUTIONS:
            raise ValueError(f"Invalid `distribution` argument: {distribution}. Please use one of "
                             f"{self.DISTRIBUTIONS}")
        super().__init__(seed)
        self.scale, self.mode, self.distribution = scale, mode, distribution

    def __call__(self, shape, dtype=None):
        fan_in, fan_out = _fans(shape)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, fan)
        rng = _rng(self.seed)
        if self.distribution == "truncated_normal":
            return _truncated(rng, shape, math.sqrt(scale) / 0.87962566103423978)
        if self.distribution == "untruncated_normal":
            return (rng.standard_normal(shape) * math.sqrt(scale)).astype(np.float32)
        limit = math.sqrt(3.0 * scale)
        return rng.uniform(-limit, limit, shape).astype(np.float32)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution, "seed": self.seed}


def _preset(name, scale, mode, distribution, doc):
    def __init__(self, seed=None):
        VarianceScaling.__init__(self, scale, mode, distribution, seed)

    def get_config(self):
        return {"seed": self.seed}
    return type(name, (VarianceScaling,), {"__init__": __init__, "get_config": get_config, "__doc__": doc})


GlorotUniform = _preset("GlorotUniform", 1.0, "fan_avg", "uniform", "Uniform in +-sqrt(6 / (fan_in + fan_out)).")
GlorotNormal = _preset("GlorotNormal", 1.0, "fan_avg", "truncated_normal",
                       "Truncated normal, stddev sqrt(2 / (fan_in + fan_out)).")
HeNormal = _preset("HeNormal", 2.0, "fan_in", "truncated_normal", "Truncated normal, stddev sqrt(2 / fan_in).")
HeUniform = _preset("HeUniform", 2.0, "fan_in", "uniform", "Uniform in +-sqrt(6 / fan_in).")
LecunNormal = _preset("LecunNormal", 1.0, "fan_in", "truncated_normal", "Truncated normal, stddev sqrt(1 / fan_in).")
LecunUniform = _preset("LecunUniform", 1.0, "fan_in", "uniform", "Uniform in +-sqrt(3 / fan_in).")


class Identity(Initializer):
    """gain times the identity matrix (2-D shapes)."""

    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype=None):
        if len(shape) != 2:
            raise ValueError(f"Identity matrix initializer can only be used for 2D matrices. Received: "
                             f"shape={shape} of rank {len(shape)}.")
        return (np.eye(*shape) * self.gain).astype(np.float32)

    def get_config(self):
        return {"gain": self.gain}


class Orthogonal(RandomInitializer):
    """An orthogonal matrix (QR of normal draws) times gain."""

    def __init__(self, gain=1.0, seed=None):
        super().__init__(seed)
        self.gain = gain

    def __call__(self, shape, dtype=None):
        rows = math.prod(shape[:-1]) if len(shape) > 1 else 1
        cols = shape[-1]
        a = _rng(self.seed).standard_normal((max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))
        q = q.T if rows < cols else q
        return (self.gain * q[:rows, :cols]).reshape(shape).astype(np.float32)

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


ALL_OBJECTS_DICT = {
    "zeros": Zeros, "ones": Ones, "constant": Constant, "random_normal": RandomNormal,
    "random_uniform": RandomUniform, "truncated_normal": TruncatedNormal, "variance_scaling": VarianceScaling,
    "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal, "he_normal": HeNormal,
    "he_uniform": HeUniform, "lecun_normal": LecunNormal, "lecun_uniform": LecunUniform, "identity": Identity,
    "orthogonal": Orthogonal,
}
ALL_OBJECTS_DICT.update({"uniform": RandomUniform, "normal": RandomNormal})
ALL_OBJECTS_DICT.update({cls.__name__: cls for cls in list(ALL_OBJECTS_DICT.values())})


def get(identifier):
    """An initialiser from a name ("glorot_uniform"), a class name, an instance, a class, a config or a callable."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        cls = ALL_OBJECTS_DICT.get(identifier.get("class_name"))
        if cls is not None:
            return cls(**identifier.get("config", {}))
    if isinstance(identifier, str):
        cls = ALL_OBJECTS_DICT.get(identifier)
        if cls is not None:
            return cls()
    elif isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    elif callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier}. Valid names: "
                     f"{', '.join(k for k in ALL_OBJECTS_DICT if k.islower())}")


def serialize(initializer):
    return {"class_name": type(initializer).__name__, "config": initializer.get_config()}


def deserialize(config, custom_objects=None):
    return get(config)


del backend

from ._missing import missing as _missing  # noqa: E402

__getattr__ = _missing("minifp.keras.initializers")
