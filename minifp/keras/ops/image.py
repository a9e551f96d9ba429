"""keras.ops.image: resize and affine_transform as Keras 3 computes them on its torch backend.

resize follows torch.nn.functional.interpolate (what Keras's torch backend calls): "nearest" is torch's
nearest-exact, "bilinear" and "bicubic" use half-pixel centres (align_corners=False), bicubic torch's A = -0.75
kernel with clamped reads, and antialias torch's separable filters (a triangle, or the A = -0.5 cubic) widened by
the downscale factor. Each axis is resampled in turn (the width, then the height), every output a float32 sum of
its taps' reads times their weights, composed of the engine's gathers, products and sums (gradients reach the
images). torch's kernels order and fuse those sums their own way (channels-last inputs, which Keras's permute
makes, take a vectorised four-corner path), so bilinear and bicubic results agree with Keras to a few float32 ulps,
not to the bit; nearest agrees to the bit. affine_transform reads every output pixel from the transform's input
point as Keras's torch map_coordinates does (its fill modes, bilinear or nearest, the four corner products summed
in its order), to the bit.
"""
from __future__ import annotations


import numpy as np

from ...engine import apply, storage
from .. import backend
from .._tensor import _as_face, convert_to_tensor
from ._common import _tensor

__all__ = ["resize", "affine_transform"]

# Keras's torch backend names torch's mode for each (its error messages print this table)
RESIZE_INTERPOLATIONS = {"bilinear": "bilinear", "nearest": "nearest-exact", "bicubic": "bicubic"}
AFFINE_TRANSFORM_INTERPOLATIONS = ("nearest", "bilinear")
AFFINE_TRANSFORM_FILL_MODES = ("constant", "nearest", "wrap", "mirror", "reflect")


def _data_format(data_format):
    data_format = data_format or backend.image_data_format()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(f"The `data_format` argument must be one of {{'channels_first', 'channels_last'}}. "
                         f"Received: data_format={data_format}")
    return data_format


def _check_rank(images):
    if images.ndim not in (3, 4):
        raise ValueError(f"Invalid images rank: expected rank 3 (single image) or rank 4 (batch of images). "
                         f"Received input with shape: images.shape={tuple(images.shape)}")


def _nhwc(images, data_format):
    """(images as a float32 batch B, H, W, C; a function putting a float32 result back into the input's form)."""
    x = images if images.fmt is not None and images.dtype == "float32" else convert_to_tensor(images, "float32")
    single = x.ndim == 3
    if single:
        x = apply("reshape", x, shape=(1,) + tuple(x.shape))
    if data_format == "channels_first":
        x = apply("transpose", x, axes=(0, 2, 3, 1))

    def back(y):
        if data_format == "channels_first":
            y = apply("transpose", y, axes=(0, 3, 1, 2))
        if single:
            y = apply("reshape", y, shape=tuple(y.shape[1:]))
        if images.fmt is not None:
            return _as_face(y) if images.dtype == "float32" else convert_to_tensor(y, images.dtype)
        # integer images come back integers: rounded half to even, then cast (wrapping as torch's .to does)
        return convert_to_tensor(np.round(np.asarray(y.float32())).astype(storage(images).dtype))
    return x, back


# -- resize ----------------------------------------------------------------------------------------------------------

def _cubic(x, a):
    """The cubic convolution kernel at |x| (Keys's, with parameter a), in x's precision."""
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1, near, np.where(x < 2, far, 0))


def _plain_taps(in_size, out_size, mode):
    """torch's taps along one axis without antialiasing: indices and float32 weights, each (out, taps)."""
    scale = np.float32(in_size) / np.float32(out_size)
    one = np.float32(1)
    # the source position in double, rounded once to float32 (torch's scale * (i + 0.5) - 0.5)
    src = (np.float64(scale) * (np.arange(out_size) + 0.5) - 0.5).astype(np.float32)
    if mode == "bilinear":
        src = np.maximum(src, np.float32(0))      # (the linear source index is clamped at 0, the cubic one not)
    lower = np.minimum(np.floor(src), in_size - 1).astype(np.int64)
    t = np.clip(src - lower.astype(np.float32), 0, 1).astype(np.float32)
    if mode == "bilinear":
        upper = np.minimum(lower + 1, in_size - 1)
        return np.stack([lower, upper], 1), np.stack([one - t, t], 1)
    # the distances to the four taps as torch forms them: t + 1, t, 1 - t, (1 - t) + 1
    a = np.float32(-0.75)
    weights = [_cubic(d, a) for d in (t + one, t, one - t, (one - t) + one)]
    indices = [np.clip(lower + k, 0, in_size - 1) for k in (-1, 0, 1, 2)]
    return np.stack(indices, 1), np.stack(weights, 1).astype(np.float32)


def _antialias_taps(in_size, out_size, mode):
    """torch's antialiased taps along one axis: the filter (a triangle, or Keys's cubic with a = -0.5) stretched
    by the downscale factor over a window of inputs, normalised to sum 1; float32 as torch keeps them."""
    f32 = np.float32
    scale = f32(in_size) / f32(out_size)
    support = f32((1.0 if mode == "bilinear" else 2.0) * (float(scale) if scale >= 1 else 1.0))
    stretch = f32(1) / scale if scale >= 1 else f32(1)
    rows = []
    for i in range(out_size):
        centre = f32((i + 0.5) * float(scale))
        start = max(int(float(centre) - float(support) + 0.5), 0)
        stop = min(int(float(centre) + float(support) + 0.5), in_size)
        x = f32((np.arange(start, stop) - float(centre) + 0.5) * float(stretch)).astype(np.float32)
        w = np.maximum(f32(1) - np.abs(x), f32(0)) if mode == "bilinear" else _cubic(x.astype(np.float64), -0.5)
        w = np.asarray(w, np.float32)
        total = f32(0)
        for v in w:                                 # summed one by one, in float32
            total = f32(total + v)
        rows.append((np.arange(start, stop), w / total if total != 0 else w))
    taps = max(len(r[0]) for r in rows)
    # every output gets as many taps: the missing ones read the window's first input with weight 0
    indices = np.stack([np.concatenate([r[0], np.full(taps - len(r[0]), r[0][0])]) for r in rows])
    weights = np.stack([np.concatenate([r[1], np.zeros(taps - len(r[1]), np.float32)]) for r in rows])
    return indices, weights.astype(np.float32)


def _along(x, axis, indices, weights):
    """x (B, H, W, C) resampled along axis 1 or 2: per output, sum over taps of x[tap] * weight, in tap order."""
    shape = (1, -1, 1, 1) if axis == 1 else (1, 1, -1, 1)
    result = None
    for j in range(indices.shape[1]):
        index = (slice(None), indices[:, j]) if axis == 1 else (slice(None), slice(None), indices[:, j])
        term = apply("mul", apply("getitem", x, index=index), convert_to_tensor(weights[:, j].reshape(shape)))
        result = term if result is None else apply("add", result, term)
    return result


def _nearest_indices(in_size, out_size):
    """torch's nearest-exact source index along one axis (half-pixel centres)."""
    scale = np.float64(np.float32(in_size) / np.float32(out_size))
    pos = ((np.arange(out_size) + 0.5) * scale).astype(np.float32)
    return np.minimum(np.floor(pos), in_size - 1).astype(np.int64)


def _resize_nhwc(x, size, interpolation, antialias):
    """x (B, H, W, C) float32 resized to size = (height, width): the width first, then the height, as torch's
    kernels do (an antialiased axis whose size stays is left alone, as there)."""
    (h, w), (oh, ow) = x.shape[1:3], size
    if interpolation == "nearest":
        x = apply("getitem", x, index=(slice(None), _nearest_indices(h, oh)))
        return apply("getitem", x, index=(slice(None), slice(None), _nearest_indices(w, ow)))
    taps = _antialias_taps if antialias else _plain_taps
    if ow != w or not antialias:
        x = _along(x, 2, *taps(w, ow, interpolation))
    if oh != h or not antialias:
        x = _along(x, 1, *taps(h, oh, interpolation))
    return x


def _crop_or_pad(x, size, crop, pad, fill_value):
    """x (B, H, W, C) cropped (centred) or padded (fill_value bands on both sides) to the aspect ratio of size."""
    b, h, w, c = x.shape
    th, tw = size
    if crop:
        ch = max(min(h, int(float(w * th) / tw)), 1)
        cw = max(min(w, int(float(h * tw) / th)), 1)
        top, left = int(float(h - ch) / 2), int(float(w - cw) / 2)
        return apply("getitem", x, index=(slice(None), slice(top, top + ch), slice(left, left + cw)))
    ph, pw = max(h, int(float(w * th) / tw)), max(w, int(float(h * tw) / th))
    top, left = int(float(ph - h) / 2), int(float(pw - w) / 2)
    band = lambda shape: convert_to_tensor(np.full(shape, fill_value, np.float32))
    if top > 0:
        x = apply("concatenate", band((b, top, w, c)), x, band((b, top, w, c)), axis=1)
    if left > 0:
        x = apply("concatenate", band((b, x.shape[1], left, c)), x, band((b, x.shape[1], left, c)), axis=2)
    return x


def resize(images, size, interpolation="bilinear", antialias=False, crop_to_aspect_ratio=False,
           pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0, data_format=None):
    """Images resized to size = (height, width) as Keras's torch backend does it (torch's interpolate)."""
    if len(size) != 2:
        raise ValueError(f"Expected `size` to be a tuple of 2 integers. Received: size={size}")
    if size[0] <= 0 or size[1] <= 0:
        raise ValueError(f"`size` must have positive height and width. Received: size={size}")
    images = _tensor(images)
    _check_rank(images)
    data_format = _data_format(data_format)
    if interpolation in ("lanczos3", "lanczos5"):
        raise ValueError(f"Resizing with Lanczos interpolation is not supported by the PyTorch backend. "
                         f"Received: interpolation={interpolation}.")
    if interpolation not in RESIZE_INTERPOLATIONS:
        raise ValueError(f"Invalid value for argument `interpolation`. Expected of one {RESIZE_INTERPOLATIONS}. "
                         f"Received: interpolation={interpolation}")
    if fill_mode != "constant":
        raise ValueError(f"Invalid value for argument `fill_mode`. Only `'constant'` is supported. Received: "
                         f"fill_mode={fill_mode}")
    if pad_to_aspect_ratio and crop_to_aspect_ratio:
        raise ValueError("Only one of `pad_to_aspect_ratio` & `crop_to_aspect_ratio` can be `True`.")
    x, back = _nhwc(images, data_format)
    if crop_to_aspect_ratio or pad_to_aspect_ratio:
        x = _crop_or_pad(x, tuple(size), crop_to_aspect_ratio, pad_to_aspect_ratio, fill_value)
    out = _resize_nhwc(x, tuple(size), interpolation, antialias and interpolation != "nearest")
    if interpolation == "bicubic" and images.fmt is None and storage(images).dtype == np.uint8:
        out = apply("clamp", out, min=0.0, max=255.0)
    return back(out)


# -- affine_transform ------------------------------------------------------------------------------------------------

def _fixed_index(index, size, fill_mode):
    """An integer index outside [0, size) brought back in, as Keras's torch map_coordinates does per fill mode."""
    if fill_mode in ("constant", "nearest"):
        return np.clip(index, 0, size - 1)
    if fill_mode == "wrap":
        return index % size
    mirror = lambda i, n: np.abs((i + n - 1) % (2 * (n - 1)) - (n - 1))
    if fill_mode == "mirror":
        return mirror(index, size)
    return (mirror(2 * index + 1, 2 * size + 1) - 1) // 2                      # reflect


def _nodes(coord, order):
    """The integer sample points of a coordinate and their float32 weights (nearest: one point of weight 1)."""
    if order == 0:
        return [(np.round(coord).astype(np.int64), None)]
    lower = np.floor(coord)
    upper_weight = (coord - lower).astype(np.float32)
    return [(lower.astype(np.int64), np.float32(1) - upper_weight), (lower.astype(np.int64) + 1, upper_weight)]


def _transform_coordinates(transform, shape):
    """Each output pixel's input (row, column) of every image (B, H, W, C), float32, as Keras's torch backend
    computes them (the projective terms multiply the channel index there)."""
    t = transform.astype(np.float32)[:, :, None, None, None]
    rows, cols, chans = (np.arange(n, dtype=np.float32) for n in shape[1:])
    r, c, k = rows[:, None, None], cols[None, :, None], chans[None, None, :]
    row = r * t[:, 4] + c * t[:, 3] + k * t[:, 6] + t[:, 5]
    col = r * t[:, 1] + c * t[:, 0] + k * t[:, 7] + t[:, 2]
    return row.astype(np.float32), col.astype(np.float32)


def _affine_nhwc(x, transform, order, fill_mode, fill_value):
    """x (B, H, W, C) float32 read at the transform's points: the corner terms (row nodes outer) summed in order."""
    b, h, w, c = x.shape
    row, col = _transform_coordinates(transform, x.shape)
    grid = (b, h, w, c)
    batch = np.broadcast_to(np.arange(b)[:, None, None, None], grid)
    chan = np.broadcast_to(np.arange(c), grid)
    fill = convert_to_tensor(np.full(grid, fill_value, np.float32))
    result = None
    for ri, rw in _nodes(row, order):
        for ci, cw in _nodes(col, order):
            value = apply("getitem", x, index=(batch, _fixed_index(ri, h, fill_mode),
                                               _fixed_index(ci, w, fill_mode), chan))
            if fill_mode == "constant":
                inside = (ri >= 0) & (ri < h) & (ci >= 0) & (ci < w)
                if not inside.all():
                    value = apply("where", inside, value, fill)
            if rw is not None:
                value = apply("mul", convert_to_tensor(rw * cw), value)
            result = value if result is None else apply("add", result, value)
    return result


def affine_transform(images, transform, interpolation="bilinear", fill_mode="constant", fill_value=0,
                     data_format=None):
    """Images read through transform [a0, a1, a2, b0, b1, b2, c0, c1] (output pixel (x, y) reads input
    (a0 x + a1 y + a2, b0 x + b1 y + b2)), as Keras's torch backend does it."""
    data_format = _data_format(data_format)
    if interpolation not in AFFINE_TRANSFORM_INTERPOLATIONS:
        raise ValueError(f"Invalid value for argument `interpolation`. Expected of one "
                         f"{set(AFFINE_TRANSFORM_INTERPOLATIONS)}. Received: interpolation={interpolation}")
    if fill_mode not in AFFINE_TRANSFORM_FILL_MODES:
        raise ValueError(f"Invalid value for argument `fill_mode`. Expected of one {set(AFFINE_TRANSFORM_FILL_MODES)}."
                         f" Received: fill_mode={fill_mode}")
    images = _tensor(images)
    t = _tensor(transform)
    t = np.asarray(t.float32()) if t.fmt is not None else storage(t).astype(np.float32)
    _check_rank(images)
    if t.ndim not in (1, 2):
        raise ValueError(f"Invalid transform rank: expected rank 1 (single transform) or rank 2 (batch of "
                         f"transforms). Received input with shape: transform.shape={t.shape}")
    if fill_mode == "mirror" and 1 in images.shape[-3:]:
        # Keras mirrors every axis, the channels too: a side of one makes its period 0 there
        raise RuntimeError("ZeroDivisionError")
    x, back = _nhwc(images, data_format)
    t = t.reshape(-1, 8)
    if len(t) != x.shape[0]:        # (a single transform serves a single image only, there)
        raise RuntimeError(f"shape '[{x.shape[0]}, 3, 3]' is invalid for input of size {9 * len(t)}")
    order = 1 if interpolation == "bilinear" else 0
    return back(_affine_nhwc(x, t, order, fill_mode, float(fill_value)))
