"""`torchvision.transforms`: Compose, ToTensor and Normalize, with torchvision's rules and error texts."""
from __future__ import annotations

import numpy as np

from ... import Tensor, apply, float32, round_to
from ...engine import made_like, storage

__all__ = ["Compose", "Normalize", "ToTensor"]


class Compose:
    """Transforms applied one after another."""

    def __init__(self, transforms):
        self.transforms = list(transforms)
        for i, t in enumerate(self.transforms):
            if not callable(t):
                raise TypeError(f"Compose(): transforms[{i}] is not callable: {t!r}")

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{type(self).__name__}({body}\n)"


class ToTensor:
    """An HWC image (NumPy array or PIL image; a 2-D array gets one channel) as a CHW tensor; uint8 pixels are
    divided by 255 into float32 values in [0, 1], other dtypes keep their values (as torchvision does)."""

    def __call__(self, pic):
        from ... import torch
        arr = _pixels(pic)
        chw = torch.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))
        if arr.dtype != np.uint8:
            return chw
        return apply("div", chw, 255, _out=float32)    # one float32 division, as img.float().div(255)

    def __repr__(self):
        return f"{type(self).__name__}()"


def _pixels(pic):
    """The HWC array of a NumPy image or a PIL image (mode '1' scaled to 0/255 as torchvision does)."""
    if isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        return pic[:, :, None] if pic.ndim == 2 else pic
    if type(pic).__module__.split(".")[0] == "PIL" and hasattr(pic, "mode"):
        arr = np.array(pic, dtype=np.uint8 if pic.mode == "1" else None, copy=True)
        arr = arr * np.uint8(255) if pic.mode == "1" else arr
        return arr[:, :, None] if arr.ndim == 2 else arr
    raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")


class Normalize:
    """(x - mean) / std per channel of a float (..., C, H, W) tensor; mean and std rounded to its dtype first."""

    def __init__(self, mean, std, inplace=False):
        self.mean, self.std, self.inplace = mean, std, inplace

    def __call__(self, tensor):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"Input tensor should be a torch tensor. Got {type(tensor)}.")
        if tensor.fmt is None:
            raise TypeError(f"Input tensor should be a float tensor. Got {_dtype_name(tensor)}.")
        if tensor.ndim < 3:
            raise ValueError(f"Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                             f"{_size(tensor.shape)}")
        mean, std = (self._constant(v, tensor) for v in (self.mean, self.std))
        if not np.all(std.float32()):
            raise ValueError(f"std evaluated to zero after conversion to {_dtype_name(tensor)}, leading to division "
                             f"by zero.")
        out = apply("div", apply("sub", tensor, mean), std)
        return tensor.assign(out.float32()) if self.inplace else out

    @staticmethod
    def _constant(values, like):
        """Per-channel values as a tensor of like's format, shaped (C, 1, 1) to broadcast over H and W."""
        arr = np.asarray(values.float32() if isinstance(values, Tensor) else values, dtype=np.float64)
        arr = arr.reshape(-1, 1, 1) if arr.ndim == 1 else arr
        return made_like(like, round_to(arr, like.fmt), like.fmt)

    def __repr__(self):
        return f"{type(self).__name__}(mean={self.mean}, std={self.std})"


def _dtype_name(t):
    """How PyTorch prints t's dtype (torch.int64, torch.float16, ...)."""
    if t.fmt is None:
        return f"torch.{storage(t).dtype.name}"
    from .._tensor import as_dtype
    return repr(as_dtype(t.fmt))


def _size(shape):
    return f"torch.Size({list(shape)})"
