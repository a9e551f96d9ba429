"""torch.distributed on a machine without a cluster: available, never initialised; minifp runs in one process."""
from __future__ import annotations

import enum

__all__ = ["is_available", "is_initialized", "init_process_group", "destroy_process_group", "get_rank",
           "get_world_size", "barrier", "all_reduce", "broadcast", "ReduceOp", "is_torchelastic_launched"]

_NOT_INITIALISED = "Default process group has not been initialized, please make sure to call init_process_group."


class ReduceOp(enum.Enum):
    SUM, AVG, PRODUCT, MIN, MAX = range(5)


def is_available():
    return True


def is_initialized():
    return False


def is_torchelastic_launched():
    return False


def init_process_group(backend=None, init_method=None, *args, **kwargs):
    """Refused: minifp trains in one process on one device (no NCCL, Gloo or MPI); run the script without
    torchrun, or with nn.DataParallel, which minifp runs on its one device."""
    raise RuntimeError(f"torch.distributed.init_process_group(backend={backend!r}): minifp runs in one process on "
                       f"one device and has no process groups; run without torchrun / WORLD_SIZE (scripts guard "
                       f"this with torch.distributed.is_initialized())")


def _uninitialised(*args, **kwargs):
    raise ValueError(_NOT_INITIALISED)


get_rank = get_world_size = barrier = all_reduce = broadcast = destroy_process_group = _uninitialised
