"""keras.utils's image helpers: img_to_array (NumPy only), array_to_img, load_img, save_img (Pillow, the
`vision` extra, imported only when called)."""
from __future__ import annotations

import io
import pathlib

import numpy as np

from .. import backend

__all__ = ["array_to_img", "img_to_array", "load_img", "save_img"]


def _pil_image(what):
    """PIL.Image, or an ImportError that says how to install it."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(f"Could not import PIL.Image. The use of `{what}` requires PIL: "
                          f"pip install 'minifp[vision]' (or pip install pillow).") from None
    return Image


def _data_format(data_format):
    data_format = data_format or backend.image_data_format()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(f"The `data_format` argument must be one of {{'channels_first', 'channels_last'}}. "
                         f"Received: data_format={data_format}")
    return data_format


def img_to_array(img, data_format=None, dtype=None):
    """A PIL image (or anything NumPy reads) as a rank-3 array of `dtype` (floatx), channels as data_format."""
    data_format = _data_format(data_format)
    x = np.asarray(img, dtype=dtype or backend.floatx())
    if x.ndim == 3:
        return x.transpose(2, 0, 1) if data_format == "channels_first" else x
    if x.ndim == 2:
        return x[None] if data_format == "channels_first" else x[..., None]
    raise ValueError(f"Unsupported image shape: {x.shape}")


def array_to_img(x, data_format=None, scale=True, dtype=None):
    """A rank-3 array as a PIL image (RGBA, RGB, L, or I above 255); `scale` maps its range onto [0, 255]."""
    data_format = _data_format(data_format)
    image = _pil_image("array_to_img")
    x = np.asarray(x, dtype=dtype or backend.floatx())
    if x.ndim != 3:
        raise ValueError(f"Expected image array to have rank 3 (single image). Got array with shape: {x.shape}")
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        top = np.max(x)
        if top != 0:
            x /= top
        x *= 255
    channels = x.shape[2]
    if channels in (3, 4):
        return image.fromarray(x.astype("uint8"), "RGB" if channels == 3 else "RGBA")
    if channels == 1:
        if np.max(x) > 255:
            return image.fromarray(x[:, :, 0].astype("int32"), "I")
        return image.fromarray(x[:, :, 0].astype("uint8"), "L")
    raise ValueError(f"Unsupported channel number: {channels}")


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Write an image array to `path` (through array_to_img; JPEG drops an alpha channel, as in Keras)."""
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and (file_format in ("jpg", "jpeg") or str(path).lower().endswith((".jpg", ".jpeg"))):
        img = img.convert("RGB")
    img.save(path, format="jpeg" if file_format == "jpg" else file_format, **kwargs)


_INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")


def load_img(path, color_mode="rgb", target_size=None, interpolation="nearest", keep_aspect_ratio=False):
    """A PIL image from a file path or BytesIO, in color_mode ("grayscale", "rgb", "rgba"), resized to
    target_size (height, width) with `interpolation`, center-cropped first to keep the aspect ratio if asked."""
    image = _pil_image("load_img")
    if isinstance(path, io.BytesIO):
        img = image.open(path)
    elif isinstance(path, (pathlib.Path, bytes, str)):
        with open(str(path.resolve()) if isinstance(path, pathlib.Path) else path, "rb") as f:
            img = image.open(io.BytesIO(f.read()))
    else:
        raise TypeError(f"path should be path-like or io.BytesIO, not {type(path)}")
    modes = {"grayscale": ("L", "I;16", "I"), "rgba": ("RGBA",), "rgb": ("RGB",)}
    if color_mode not in modes:
        raise ValueError('color_mode must be "grayscale", "rgb", or "rgba"')
    if img.mode not in modes[color_mode]:
        img = img.convert(modes[color_mode][0])
    if target_size is None or img.size == (target_size[1], target_size[0]):
        return img
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"Invalid interpolation method {interpolation} specified. Supported methods are "
                         f"{', '.join(_INTERPOLATIONS)}")
    resample = getattr(image.Resampling, interpolation.upper())
    width, height = img.size
    tw, th = target_size[1], target_size[0]
    box = None
    if keep_aspect_ratio:       # the largest centred crop of the target's aspect ratio
        ch, cw = min(height, width * th // tw), min(width, height * tw // th)
        top, left = (height - ch) // 2, (width - cw) // 2
        box = [left, top, left + cw, top + ch]
    return img.resize((tw, th), resample, box=box)
