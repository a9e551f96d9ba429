"""`torchvision.transforms`: Compose, ToTensor, Normalize and the augmentations (Resize, CenterCrop, RandomCrop,
RandomHorizontalFlip, RandomVerticalFlip, RandomResizedCrop, ColorJitter, Pad, Lambda), with torchvision's rules
and error texts.

An image is a PIL image (handled by Pillow, as torchvision does; Pillow is imported only when one is given), a
tensor (..., C, H, W), or a NumPy array (H, W, C) or (H, W), which is what minifp's datasets hold in place of PIL
images: arrays follow torchvision's tensor semantics in their own layout. Random choices draw from the global
stream (`minifp.torch.manual_seed`), as torchvision's draw from PyTorch's; the draws are not PyTorch's.
"""
from __future__ import annotations

import enum
import math
import numbers
import warnings

import numpy as np

from ... import Tensor, apply, float32, round_to
from ...engine import made_like, rng, storage, to_numpy

__all__ = ["CenterCrop", "ColorJitter", "Compose", "InterpolationMode", "Lambda", "Normalize", "Pad", "RandomCrop",
           "RandomHorizontalFlip", "RandomResizedCrop", "RandomVerticalFlip", "Resize", "ToTensor"]


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


# -- images of three kinds --------------------------------------------------------------------------


class InterpolationMode(enum.Enum):
    """torchvision's interpolation modes; tensors and arrays take NEAREST, NEAREST_EXACT and BILINEAR."""
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


_PIL_CODES = {InterpolationMode.NEAREST: 0, InterpolationMode.NEAREST_EXACT: 0, InterpolationMode.LANCZOS: 1,
              InterpolationMode.BILINEAR: 2, InterpolationMode.BICUBIC: 3, InterpolationMode.BOX: 4,
              InterpolationMode.HAMMING: 5}


def _interpolation(mode):
    """An InterpolationMode, from itself or Pillow's integer constant."""
    if isinstance(mode, InterpolationMode):
        return mode
    if isinstance(mode, int) and not isinstance(mode, bool) and mode in _PIL_CODES.values():
        return next(m for m, code in _PIL_CODES.items() if code == mode)
    raise TypeError("Argument interpolation should be a InterpolationMode or a corresponding Pillow integer constant")


def _is_pil(img):
    return type(img).__module__.split(".")[0] == "PIL" and hasattr(img, "getbands")


def _dimensions(img):
    """(channels, height, width), as torchvision's get_dimensions."""
    if _is_pil(img):
        return len(img.getbands()), img.height, img.width
    if isinstance(img, np.ndarray) and img.ndim in (2, 3):
        return (1 if img.ndim == 2 else img.shape[2]), img.shape[0], img.shape[1]
    if isinstance(img, Tensor):
        if img.ndim < 2:
            raise TypeError(f"Tensor is not a torch image (it has {img.ndim} dimensions).")
        return (1 if img.ndim == 2 else img.shape[-3]), img.shape[-2], img.shape[-1]
    raise TypeError(f"img should be PIL Image or Tensor. Got {type(img)}")


def _planes(img):
    """(an array (..., C, H, W) or (H, W) of img's values, a function making an image like img of such an array)."""
    _dimensions(img)
    if isinstance(img, np.ndarray):
        if img.ndim == 2:
            return img, lambda a: np.ascontiguousarray(a, img.dtype)
        return img.transpose(2, 0, 1), lambda a: np.ascontiguousarray(a.transpose(1, 2, 0), img.dtype)
    if img.fmt is None:
        return to_numpy(storage(img)), lambda a: made_like(img, np.ascontiguousarray(a, storage(img).dtype), None)
    return to_numpy(img.float32()), lambda a: made_like(img, round_to(np.ascontiguousarray(a), img.fmt), img.fmt)


def _pil():
    """PIL.Image (with ImageEnhance and ImageOps), imported only when an image is a PIL image."""
    from PIL import Image, ImageEnhance, ImageOps
    return Image, ImageEnhance, ImageOps


def _setup_size(size, error_msg):
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, (tuple, list)) and len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError(error_msg)
    return size


# -- the functions ----------------------------------------------------------------------------------


def _pad(img, ltrb, fill=0, mode="constant"):
    """img with ltrb = (left, top, right, bottom) pixels added: fill, or the edge, reflect, symmetric rules."""
    if mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    left, top, right, bottom = ltrb
    if _is_pil(img) and mode == "constant":
        return _pil()[2].expand(img, border=tuple(ltrb), fill=fill)
    if _is_pil(img):
        arr = np.asarray(img)
        widths = ((top, bottom), (left, right)) + ((0, 0),) * (arr.ndim - 2)
        return _pil()[0].fromarray(np.pad(arr, widths, mode), mode=img.mode)
    a, like = _planes(img)
    widths = ((0, 0),) * (a.ndim - 2) + ((top, bottom), (left, right))
    return like(np.pad(a, widths, mode, constant_values=fill) if mode == "constant" else np.pad(a, widths, mode))


def _padding(padding):
    """torchvision's padding argument (int, or a sequence of 1, 2 or 4) as (left, top, right, bottom)."""
    if isinstance(padding, numbers.Number):
        return (int(padding),) * 4
    if isinstance(padding, (tuple, list)) and len(padding) in (1, 2, 4):
        p = [int(v) for v in padding]
        return tuple(p * 4 if len(p) == 1 else (p * 2 if len(p) == 2 else p))
    raise ValueError("Padding must be an int or a 1, 2, or 4 element tuple, not a "
                     f"{len(padding) if hasattr(padding, '__len__') else type(padding).__name__} element tuple")


def _crop(img, top, left, height, width):
    """The height x width window at (top, left); outside the image is 0, as torchvision's crop."""
    if _is_pil(img):
        return img.crop((left, top, left + width, top + height))
    _, h, w = _dimensions(img)
    right, bottom = left + width, top + height
    if left < 0 or top < 0 or right > w or bottom > h:
        ltrb = (max(-left + min(0, right), 0), max(-top + min(0, bottom), 0), max(right - max(w, left), 0),
                max(bottom - max(h, top), 0))
        a, like = _planes(img)
        inner = like(a[..., max(top, 0):bottom, max(left, 0):right])
        return _pad(inner, ltrb)
    a, like = _planes(img)
    return like(a[..., top:bottom, left:right])


def _hflip(img):
    if _is_pil(img):
        return img.transpose(_pil()[0].Transpose.FLIP_LEFT_RIGHT)
    a, like = _planes(img)
    return like(a[..., ::-1])


def _vflip(img):
    if _is_pil(img):
        return img.transpose(_pil()[0].Transpose.FLIP_TOP_BOTTOM)
    a, like = _planes(img)
    return like(a[..., ::-1, :])


def _output_size(h, w, size, max_size):
    """torchvision's _compute_resized_output_size: [new_h, new_w]."""
    if len(size) == 2:
        return [size[0], size[1]]
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = size[0], int(size[0] * long / short)
    if max_size is not None:
        if max_size <= size[0]:
            raise ValueError(f"max_size = {max_size} must be strictly greater than the requested size for the "
                             f"smaller edge size = {size}")
        if new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
    return [new_long, new_short] if w <= h else [new_short, new_long]


def _resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """torchvision's F.resize: size (h, w), or [s] for the shorter edge; the image itself when nothing changes."""
    interpolation = _interpolation(interpolation)
    size = [size] if isinstance(size, int) else list(size)
    if len(size) not in (1, 2):
        raise ValueError(f"Size must be an int or a 1 or 2 element tuple/list, not a {len(size)} element tuple/list")
    if max_size is not None and len(size) != 1:
        raise ValueError("max_size should only be passed if size specifies the length of the smaller edge, i.e. "
                         "size should be an int or a sequence of length 1 in torchscript mode.")
    _, h, w = _dimensions(img)
    out_h, out_w = _output_size(h, w, size, max_size)
    if [h, w] == [out_h, out_w]:
        return img
    if _is_pil(img):
        if antialias is False:
            warnings.warn("Anti-alias option is always applied for PIL Image input. Argument antialias is ignored.")
        return img.resize((out_w, out_h), _PIL_CODES[interpolation])
    if interpolation not in (InterpolationMode.NEAREST, InterpolationMode.NEAREST_EXACT, InterpolationMode.BILINEAR):
        raise NotImplementedError(f"minifp resizes tensors and arrays with NEAREST, NEAREST_EXACT or BILINEAR, not "
                                  f"{interpolation}; PIL images take every mode")
    a, like = _planes(img)
    out = np.asarray(a, np.float32)       # integer images are resized as float32 and rounded, as torchvision
    for axis, n_out in ((-1, out_w), (-2, out_h)):              # width first, as PyTorch's separable kernel
        if out.shape[axis] != n_out:
            out = _resample(out, axis, n_out, interpolation, bool(antialias))
    if a.dtype.kind in "iub":
        out = np.round(out)
    return like(out)


def _resample(a, axis, n_out, mode, antialias):
    """a resampled to n_out samples along axis: a gather of taps times float32 weights, summed."""
    idx, w = _taps(a.shape[axis], n_out, mode, antialias)
    moved = np.moveaxis(a, axis, -1)
    out = np.einsum("...ok,ok->...o", moved[..., idx], w, dtype=np.float32)
    return np.moveaxis(out, -1, axis)


def _taps(n_in, n_out, mode, antialias):
    """(indices (n_out, k), float32 weights (n_out, k)) of PyTorch's interpolation (align_corners=False)."""
    scale = np.float32(n_in) / np.float32(n_out)
    dst = np.arange(n_out, dtype=np.float32)
    if mode is not InterpolationMode.BILINEAR:
        src = np.floor((dst + np.float32(0.5)) * scale if mode is InterpolationMode.NEAREST_EXACT else dst * scale)
        return np.minimum(src.astype(np.int64), n_in - 1)[:, None], np.ones((n_out, 1), np.float32)
    if not antialias or scale < 1:   # below 1 the antialiased kernel is plain bilinear
        src = np.maximum((dst + np.float32(0.5)) * scale - np.float32(0.5), np.float32(0))
        i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        lam = (src - i0).astype(np.float32)
        return np.stack([i0, np.minimum(i0 + 1, n_in - 1)], 1), np.stack([1 - lam, lam], 1).astype(np.float32)
    # the triangle filter widened by the scale, each output's taps normalised to sum to 1 (PIL's and PyTorch's)
    center = scale * (dst + np.float32(0.5))
    lo = np.maximum((center - scale + np.float32(0.5)).astype(np.int64), 0)
    hi = np.minimum((center + scale + np.float32(0.5)).astype(np.int64), n_in)
    k = int((hi - lo).max())
    j = np.arange(k)
    x = ((j[None, :] + lo[:, None] - center[:, None] + np.float32(0.5)) / scale).astype(np.float32)
    w = np.where(j[None, :] < (hi - lo)[:, None], np.maximum(np.float32(1) - np.abs(x), np.float32(0)), 0)
    w = (w / w.sum(1, keepdims=True)).astype(np.float32)
    return np.minimum(lo[:, None] + j[None, :], n_in - 1), w


# -- colour -----------------------------------------------------------------------------------------


def _grayscale(a):
    """torchvision's rgb_to_grayscale of (..., 3, H, W) (kept in a's dtype: integers truncated)."""
    r, g, b = a[..., 0, :, :], a[..., 1, :, :], a[..., 2, :, :]
    gray = np.float32(0.2989) * r + np.float32(0.587) * g + np.float32(0.114) * b
    return gray.astype(a.dtype)[..., None, :, :]


def _blend(a, b, ratio):
    """ratio * a + (1 - ratio) * b, clamped to the image's range, in a's dtype (integers truncated)."""
    bound = 255 if a.dtype == np.uint8 else (np.iinfo(a.dtype).max if a.dtype.kind in "iu" else 1.0)
    out = np.float32(ratio) * a.astype(np.float32) + np.float32(1.0 - ratio) * np.asarray(b, np.float32)
    return np.clip(out, 0, bound).astype(a.dtype)


def _adjust(img, kind, factor):
    """adjust_brightness, _contrast, _saturation or _hue of img by factor, as torchvision's."""
    if _is_pil(img):
        return _adjust_pil(img, kind, factor)
    a, like = _planes(img)
    if a.ndim == 2:                            # a one-channel (H, W) image
        rebuild = like
        a, like = a[None], lambda out: rebuild(out[0])
    if a.shape[-3] not in (1, 3):
        raise TypeError(f"Input image tensor permitted channel values are [1, 3], but found {a.shape[-3]}")
    channels = a.shape[-3]
    if kind == "brightness":
        return like(_blend(a, 0, factor))
    if kind == "contrast":
        gray = _grayscale(a) if channels == 3 else a
        return like(_blend(a, gray.astype(np.float32).mean(axis=(-3, -2, -1), keepdims=True), factor))
    if channels == 1:                          # saturation and hue leave one channel alone (PIL's behaviour)
        return img
    if kind == "saturation":
        return like(_blend(a, _grayscale(a), factor))
    return like(_hue(a, factor))


def _hue(a, factor):
    """The hue rotated by factor turns: RGB -> HSV -> RGB in float32, integers scaled as convert_image_dtype."""
    x = a.astype(np.float32) / np.float32(255) if a.dtype == np.uint8 else a.astype(np.float32)
    r, g, b = x[..., 0, :, :], x[..., 1, :, :], x[..., 2, :, :]
    maxc, minc = x.max(axis=-3), x.min(axis=-3)
    eqc, cr = maxc == minc, maxc - minc
    s = cr / np.where(eqc, np.float32(1), maxc)
    div = np.where(eqc, np.float32(1), cr)
    rc, gc, bc = (maxc - r) / div, (maxc - g) / div, (maxc - b) / div
    h = ((maxc == r) * (bc - gc) + ((maxc == g) & (maxc != r)) * (2 + rc - bc)
         + ((maxc != g) & (maxc != r)) * (4 + gc - rc)).astype(np.float32)
    h = (np.fmod(h / np.float32(6) + np.float32(1), np.float32(1)) + np.float32(factor)) % np.float32(1)
    i = np.floor(h * 6)
    f = h * 6 - i
    i = i.astype(np.int32) % 6
    p = np.clip(maxc * (1 - s), 0, 1)
    q = np.clip(maxc * (1 - s * f), 0, 1)
    t = np.clip(maxc * (1 - s * (1 - f)), 0, 1)
    v = maxc
    table = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
    out = np.stack([np.select([i == k for k in range(6)], [row[c] for row in table]) for c in range(3)], axis=-3)
    out = out.astype(np.float32)
    if a.dtype == np.uint8:
        return (out * np.float32(255 + 1.0 - 1e-3)).astype(np.uint8)
    return out


def _adjust_pil(img, kind, factor):
    """torchvision's PIL path: ImageEnhance, and the hue shifted in PIL's HSV."""
    Image, ImageEnhance, _ = _pil()
    if kind != "hue":
        enhancer = {"brightness": ImageEnhance.Brightness, "contrast": ImageEnhance.Contrast,
                    "saturation": ImageEnhance.Color}[kind]
        return enhancer(img).enhance(factor)
    if img.mode in {"L", "1", "I", "F"}:
        return img
    h, s, v = img.convert("HSV").split()
    shifted = np.array(h, dtype=np.uint8) + np.uint8(int(factor * 255) % 256)   # wraps, as uint8 addition does
    return Image.merge("HSV", (Image.fromarray(shifted, "L"), s, v)).convert(img.mode)


# -- the transforms -----------------------------------------------------------------------------------


class Resize:
    """Resize to size (h, w), or the shorter edge to size keeping the aspect ratio (at most max_size long)."""

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
        if not isinstance(size, (int, list, tuple)):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if isinstance(size, (list, tuple)) and len(size) not in (1, 2):
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        self.size, self.max_size, self.antialias = size, max_size, antialias
        self.interpolation = _interpolation(interpolation)

    def __call__(self, img):
        return _resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self):
        return (f"{type(self).__name__}(size={self.size}, interpolation={self.interpolation.value}, "
                f"max_size={self.max_size}, antialias={self.antialias})")


class CenterCrop:
    """The central size (h, w) window, padded with 0 where the image is smaller."""

    def __init__(self, size):
        self.size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")

    def __call__(self, img):
        crop_h, crop_w = self.size
        _, h, w = _dimensions(img)
        if crop_w > w or crop_h > h:
            ltrb = [(crop_w - w) // 2 if crop_w > w else 0, (crop_h - h) // 2 if crop_h > h else 0,
                    (crop_w - w + 1) // 2 if crop_w > w else 0, (crop_h - h + 1) // 2 if crop_h > h else 0]
            img = _pad(img, ltrb)
            _, h, w = _dimensions(img)
            if (crop_h, crop_w) == (h, w):
                return img
        return _crop(img, int(round((h - crop_h) / 2.0)), int(round((w - crop_w) / 2.0)), crop_h, crop_w)

    def __repr__(self):
        return f"{type(self).__name__}(size={self.size})"


class RandomCrop:
    """A size (h, w) window at a random place, after padding (and padding up to size when pad_if_needed)."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        self.size = tuple(_setup_size(size, "Please provide only two dimensions (h, w) for size."))
        if padding is not None:
            _padding(padding)
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = padding, pad_if_needed, fill, padding_mode

    @staticmethod
    def get_params(img, output_size):
        """(top, left, h, w) of a random crop of output_size."""
        _, h, w = _dimensions(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        if w == tw and h == th:
            return 0, 0, h, w
        return int(rng().integers(0, h - th + 1)), int(rng().integers(0, w - tw + 1)), th, tw

    def __call__(self, img):
        if self.padding is not None:
            img = _pad(img, _padding(self.padding), self.fill, self.padding_mode)
        _, height, width = _dimensions(img)
        if self.pad_if_needed and width < self.size[1]:
            img = _pad(img, _padding([self.size[1] - width, 0]), self.fill, self.padding_mode)
        if self.pad_if_needed and height < self.size[0]:
            img = _pad(img, _padding([0, self.size[0] - height]), self.fill, self.padding_mode)
        return _crop(img, *self.get_params(img, self.size))

    def __repr__(self):
        return f"{type(self).__name__}(size={self.size}, padding={self.padding})"


class RandomHorizontalFlip:
    """The image mirrored left to right with probability p."""

    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, img):
        return _hflip(img) if rng().random() < self.p else img

    def __repr__(self):
        return f"{type(self).__name__}(p={self.p})"


class RandomVerticalFlip:
    """The image mirrored top to bottom with probability p."""

    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, img):
        return _vflip(img) if rng().random() < self.p else img

    def __repr__(self):
        return f"{type(self).__name__}(p={self.p})"


class Pad:
    """padding pixels around the image (an int, or (left/right, top/bottom), or (left, top, right, bottom))."""

    def __init__(self, padding, fill=0, padding_mode="constant"):
        if not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if not isinstance(fill, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate fill arg")
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        _padding(padding)
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def __call__(self, img):
        return _pad(img, _padding(self.padding), self.fill, self.padding_mode)

    def __repr__(self):
        return f"{type(self).__name__}(padding={self.padding}, fill={self.fill}, padding_mode={self.padding_mode})"


class Lambda:
    """A function of the image as a transform."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self):
        return f"{type(self).__name__}()"


class RandomResizedCrop:
    """A random window (area a random fraction in scale, aspect ratio log-uniform in ratio) resized to size."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        self.size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")
        if not isinstance(scale, (tuple, list)):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, (tuple, list)):
            raise TypeError("Ratio should be a sequence")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)")
        self.scale, self.ratio, self.antialias = scale, ratio, antialias
        self.interpolation = _interpolation(interpolation)

    @staticmethod
    def get_params(img, scale, ratio):
        """(top, left, h, w): ten tries at a window that fits, then the central crop of the ratio that fits."""
        _, height, width = _dimensions(img)
        area = height * width
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        for _ in range(10):
            target_area = area * rng().uniform(scale[0], scale[1])
            aspect_ratio = math.exp(rng().uniform(*log_ratio))
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                return int(rng().integers(0, height - h + 1)), int(rng().integers(0, width - w + 1)), h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(ratio):
            w, h = width, int(round(width / min(ratio)))
        elif in_ratio > max(ratio):
            h, w = height, int(round(height * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def __call__(self, img):
        top, left, h, w = self.get_params(img, self.scale, self.ratio)
        return _resize(_crop(img, top, left, h, w), list(self.size), self.interpolation, antialias=self.antialias)

    def __repr__(self):
        return f"{type(self).__name__}(size={self.size}, scale={self.scale}, ratio={self.ratio})"


class ColorJitter:
    """Brightness, contrast, saturation and hue changed by random factors, in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        self.brightness = self._check_input(brightness, "brightness")
        self.contrast = self._check_input(contrast, "contrast")
        self.saturation = self._check_input(saturation, "saturation")
        self.hue = self._check_input(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def _check_input(value, name, center=1, bound=(0, float("inf")), clip_first_on_zero=True):
        if isinstance(value, numbers.Number):
            if value < 0:
                raise ValueError(f"If {name} is a single number, it must be non negative.")
            value = [center - float(value), center + float(value)]
            if clip_first_on_zero:
                value[0] = max(value[0], 0.0)
        elif isinstance(value, (tuple, list)) and len(value) == 2:
            value = [float(value[0]), float(value[1])]
        else:
            raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError(f"{name} values should be between {bound}, but got {value}.")
        return None if value[0] == value[1] == center else tuple(value)

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        """(the order of the four adjustments, then each one's factor or None)."""
        order = rng().permutation(4).tolist()     # the factors are float32 draws, as torch.empty(1).uniform_'s
        return (order,) + tuple(None if r is None else float(np.float32(rng().uniform(r[0], r[1])))
                                for r in (brightness, contrast, saturation, hue))

    def __call__(self, img):
        order, *factors = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        kinds = ("brightness", "contrast", "saturation", "hue")
        for i in order:
            if factors[i] is not None:
                img = _adjust(img, kinds[i], factors[i])
        return img

    def __repr__(self):
        return (f"{type(self).__name__}(brightness={self.brightness}, contrast={self.contrast}, "
                f"saturation={self.saturation}, hue={self.hue})")
