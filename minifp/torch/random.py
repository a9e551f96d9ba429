"""`torch.random`: the global stream's seed and state, and fork_rng (a block whose draws are forgotten after it)."""
from __future__ import annotations

import contextlib

from ._generator import get_rng_state, initial_seed, manual_seed, seed, set_rng_state

__all__ = ["fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """Within the block draw as usual; after it the global stream (and its initial seed) is where it was before.
    CPU and "cuda" share one stream in minifp, so `devices` and `device_type` change nothing."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
