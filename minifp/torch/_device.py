"""Devices: "cpu", and "cuda", which is a real GPU through CuPy where there is one and otherwise the host
with CUDA's numerics (its autocast lists, TF32 rules), announced once."""
from __future__ import annotations

import functools
import os
import warnings

import numpy as np

from ..engine import Place, apply, make, set_storage, storage, to_numpy

__all__ = ["device", "is_emulated"]

TYPES = ("cpu", "cuda")


class _DeviceType(type):
    """torch.device's type: calling it gives the engine's Place, which every tensor's .device is."""

    def __call__(cls, type, index=None):
        kind = parse(type if index is None or ":" in str(type) else f"{type}:{index}")
        given = type.index if isinstance(type, Place) else index if index is not None else \
            (str(type).partition(":")[2] or None)
        return Place(kind, None if given is None else int(given))

    def __instancecheck__(cls, obj):
        return isinstance(obj, Place)


class device(metaclass=_DeviceType):
    """torch.device("cuda"), torch.device("cuda:0"), torch.device("cpu"): a str "cpu" or "cuda" with .type and
    .index, as tensors' .device is."""


def parse(d):
    """A device argument ("cuda", "cuda:0", torch.device, 0) as "cpu" or "cuda"."""
    if isinstance(d, Place):
        return d.type
    if isinstance(d, int) and not isinstance(d, bool):
        d = f"cuda:{d}"
    if isinstance(d, str):
        kind, _, index = d.partition(":")
        if kind in TYPES and (not index or index == "0"):
            return kind
        if kind == "cuda" and index.isdigit():
            raise RuntimeError(f"CUDA error: invalid device ordinal (minifp has one device, cuda:0; got {d!r})")
    raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {d}"
                       if isinstance(d, str) else f"device: expected a str, int or torch.device, got {d!r}")


@functools.lru_cache(maxsize=None)
def is_emulated():
    """True when "cuda" tensors stay on the host (no CuPy or no GPU, or MINIFP_EMULATE_CUDA=1)."""
    if os.environ.get("MINIFP_EMULATE_CUDA") == "1":
        return True
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() == 0
    except Exception:            # no CuPy, no driver, no GPU: all mean the same here
        return True


_announced = []


def array_on(data, where):
    """The array on the host, or on the GPU for "cuda" when there is a real one."""
    if where == "cuda" and not is_emulated():
        import cupy
        return cupy.asarray(data)
    if where == "cuda" and not _announced:
        _announced.append(True)
        warnings.warn("minifp: no GPU here, so 'cuda' tensors stay in host memory and CUDA's numerics (its "
                      "autocast lists, TF32) are emulated; minifp.torch.cuda.is_emulated() is True", stacklevel=3)
    return to_numpy(data) if where == "cpu" and not isinstance(data, np.ndarray) else data


def moved(t, where):
    """t on device `where`, differentiable: the gradient flows back to t."""
    if t.requires_grad:
        out = apply("cast", t, _out=t.fmt)
        return set_storage(out, array_on(storage(out), where), out.fmt, where)
    return make(type(t), array_on(storage(t), where), t.fmt, False, where)
