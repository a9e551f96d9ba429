"""`torch.utils.data.dataloader`: the DataLoader, its collate functions and get_worker_info."""
from . import DataLoader, default_collate, default_convert, get_worker_info

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]
