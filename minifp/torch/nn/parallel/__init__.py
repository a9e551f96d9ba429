"""torch.nn.parallel: DataParallel and DistributedDataParallel as wrappers on minifp's one device.

Both keep the wrapped model as `.module` (so state_dict keys start with "module.", as PyTorch's) and call it on
the whole batch: with one device there is nothing to scatter, gather or all-reduce, and the numbers are those of
the model alone.
"""
from __future__ import annotations

import contextlib

from ..module import Module

__all__ = ["DataParallel", "DistributedDataParallel"]


class DataParallel(Module):
    """The module run on the one device (device_ids, output_device and dim are accepted)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module, self.device_ids, self.output_device, self.dim = module, device_ids or [0], output_device, dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(DataParallel):
    """The module itself in a world of one process (no process group is needed or made)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **kwargs):
        super().__init__(module, device_ids, output_device, dim)

    @contextlib.contextmanager
    def no_sync(self):
        """Gradients accumulate locally inside (they always do here)."""
        yield
