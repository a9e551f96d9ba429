"""torch.Generator: a seeded random stream of its own, independent of the global one (torch.manual_seed), taken by
every function with a `generator=` argument. The numbers are minifp's (NumPy's PCG64), not PyTorch's; what
carries over is the semantics: the same seed gives the same stream, and drawing from one generator never moves
another or the global stream."""
from __future__ import annotations

import numbers
import secrets

import numpy as np

from ..engine import (STREAM_STATE_BYTES, manual_seed as _seed_global, new_stream, rng, set_stream_state, storage,
                      stream_state, Tensor as _EngineTensor)
from ._device import device as _device

__all__ = ["Generator", "default_generator", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state",
           "stream"]

DEFAULT_SEED = 67280421310721         # PyTorch's seed of a new CPU generator
_STATE_BYTES = 8 + STREAM_STATE_BYTES  # the initial seed, then the stream's state


def _seed(seed):
    """PyTorch's manual_seed argument: an integer in [-2**63, 2**64), negatives taken modulo 2**64."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    seed = int(seed)
    if not -2 ** 63 <= seed < 2 ** 64:
        raise ValueError("Overflow when unpacking long long")
    return seed % 2 ** 64


# The face's from_numpy, handed over by _tensor.py (which imports this module, so this one cannot import it)
tensor_of = None


class Generator:
    """torch.Generator(device="cpu"): manual_seed (returns self), seed, initial_seed, get_state, set_state."""

    def __init__(self, device="cpu"):
        self.device = _device(device)
        self._initial = DEFAULT_SEED
        self._stream = new_stream(DEFAULT_SEED)

    @property
    def rng(self):
        """The NumPy Generator this generator draws from."""
        return self._stream

    def manual_seed(self, seed):
        """Restart the stream from `seed`; returns the generator."""
        self._initial = _seed(seed)
        self._stream = new_stream(self._initial)
        return self

    def seed(self):
        """Seed from the operating system's entropy; returns the seed."""
        seed = secrets.randbits(63)
        self.manual_seed(seed)
        return seed

    def initial_seed(self):
        """The seed the stream was last started from."""
        return self._initial

    def get_state(self):
        """The whole state as a uint8 tensor (the initial seed, then the stream's state)."""
        head = np.frombuffer(self._initial.to_bytes(8, "little"), dtype=np.uint8)
        return tensor_of(np.concatenate([head, stream_state(self.rng)]))

    def set_state(self, new_state):
        """Restore what get_state() returned; returns the generator."""
        if not isinstance(new_state, _EngineTensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        data = storage(new_state)
        if new_state.fmt is not None or data.dtype != np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if data.size != _STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_BYTES} but found the input RNG "
                               f"state size to be {data.size}")
        data = np.ascontiguousarray(data.reshape(-1))
        try:
            set_stream_state(self.rng, data[8:])
        except ValueError as e:
            raise RuntimeError(f"set_state: not a state get_state() returned ({e})") from None
        self._initial = int.from_bytes(data[:8].tobytes(), "little")
        return self

    def __repr__(self):
        return f"<torch.Generator object at {id(self):#x}>"


class _DefaultGenerator(Generator):
    """torch.default_generator: the global stream (minifp's seeded generator) seen as a Generator."""

    def __init__(self):
        self.device = _device("cpu")
        self._initial = 0                  # minifp seeds its generator with 0 at import

    @property
    def rng(self):
        return rng()

    def manual_seed(self, seed):
        self._initial = _seed(seed)
        _seed_global(self._initial)
        return self


default_generator = _DefaultGenerator()


def manual_seed(seed):
    """Seed the global stream (weight initialisation, dropout, shuffling); returns torch.default_generator."""
    return default_generator.manual_seed(seed)


def seed():
    """Seed the global stream from the operating system's entropy; returns the seed."""
    return default_generator.seed()


def initial_seed():
    """The seed the global stream was last started from."""
    return default_generator.initial_seed()


def get_rng_state():
    """The global stream's state as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restore the global stream from what get_rng_state() returned."""
    default_generator.set_state(new_state)


def stream(generator, where, device=None):
    """The NumPy Generator to draw from: the global stream for None, else the torch.Generator's own (a NumPy
    Generator is taken as it is). A generator of another device than the tensor's is refused, as PyTorch does."""
    if generator is None:
        return rng()
    if isinstance(generator, Generator):
        kind = _device(device if device is not None else "cpu").type
        if generator.device.type != kind:
            raise RuntimeError(f"Expected a '{kind}' device type for generator but found "
                               f"'{generator.device.type}'")
        return generator.rng
    if isinstance(generator, np.random.Generator):
        return generator
    raise TypeError(f"{where}: argument 'generator' must be torch.Generator, not {type(generator).__name__}")
