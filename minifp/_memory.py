"""The bytes tensors' storages hold on a device, counted while a face watches it (torch.cuda's memory statistics).

Counting starts at watch(device, tensors): the storages of the live tensors there are counted once, each array once
(views count with the array they view), and from then on every storage a tensor on that device takes is added when it
appears and taken off when its array is freed (a finalizer on the array), so the peak since reset_peak is exact.
While nothing watches, an engine write of storage costs the test of one empty set.
"""
from __future__ import annotations

import weakref

__all__ = ["WATCHED", "watch", "note", "held", "peak", "reset_peak"]

WATCHED = set()     # the devices being counted
_counted = {}       # id(an array) -> (its device, its bytes), while the array lives
_totals = {}        # device -> [bytes held now, the most held since the last reset]


def _root(a):
    """The array that owns a view's memory."""
    while type(getattr(a, "base", None)) is type(a):
        a = a.base
    return a


def note(data, device):
    """Count `data`, a tensor's new storage on a watched device, until its array is freed."""
    root = _root(data)
    key = id(root)
    if key in _counted:
        return
    size = root.nbytes
    _counted[key] = (device, size)
    total = _totals[device]
    total[0] += size
    total[1] = max(total[1], total[0])
    weakref.finalize(root, _free, key)


def _free(key):
    device, size = _counted.pop(key)
    _totals[device][0] -= size


def watch(device, tensors):
    """Start counting `device`, from the storages of its live `tensors` (every tensor there is, once)."""
    if device not in WATCHED:
        _totals[device] = [0, 0]
        WATCHED.add(device)
        for t in tensors:
            if t.device == device:
                note(t.data, device)


def held(device):
    return _totals[device][0]


def peak(device):
    return _totals[device][1]


def reset_peak(device):
    _totals[device][1] = _totals[device][0]
