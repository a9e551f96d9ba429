"""cumsum as PyTorch 2.11's CUDA kernels add (ScanUtils.cuh, scan_dim): every add rounded into the tensor's format.

The innermost dimension of a tensor of several rows: tensor_kernel_scan_innermost_dim, blocks of 2 * threads_x
values scanned by the Sklansky method (log2(threads_x) + 1 levels of adds), the running total of the blocks before
added to each block's first value. Another dimension: tensor_kernel_scan_outer_dim, one add after the other. (A
tensor of one row goes to CUB's scan, whose order is not modelled: the caller sums it exactly.) Bit for bit on the
H100's recordings of cumsum over (64, 1024), float16, bfloat16 and float32.
"""
from __future__ import annotations

import numpy as np

__all__ = ["cuda_scan", "threads_x"]


def threads_x(rows, row_size):
    """get_log_num_threads_x_inner_scan: about 512 threads a block, shared between rows and columns as their log2
    sizes are (its unsigned arithmetic kept), from 16 to 512 threads along a row."""
    log_x, log_y = max(row_size - 1, 0).bit_length(), max(rows - 1, 0).bit_length()
    log_x = (9 + log_x - log_y) % 2 ** 32 // 2
    return 1 << min(max(4, log_x), 9)


def cuda_scan(x, axis, rnd):
    """Running sums of the float32 array x along axis, every add rounded by rnd (values -> values of the format)."""
    x = np.moveaxis(np.asarray(x, np.float32), axis, -1)
    if axis % x.ndim != x.ndim - 1:
        return np.moveaxis(_sequential(np.moveaxis(x, -1, 0), rnd), 0, axis)
    n = x.shape[-1]
    tx = threads_x(x.size // max(n, 1), n)
    out, total = np.empty_like(x), np.zeros(x.shape[:-1], np.float32)
    t = np.arange(tx)
    for start in range(0, n, 2 * tx):
        buf = np.zeros(x.shape[:-1] + (2 * tx,), np.float32)
        width = min(2 * tx, n - start)
        buf[..., :width] = x[..., start:start + width]
        buf[..., 0] = rnd(buf[..., 0] + total)
        for m in range(tx.bit_length()):       # Sklansky: level m adds each 2**m-block's last value to the next block
            a = ((t >> m) << (m + 1)) | (1 << m)
            ti, si = a + t % (1 << m), a - 1
            buf[..., ti] = rnd(buf[..., ti] + buf[..., si])
        out[..., start:start + width] = buf[..., :width]
        total = buf[..., -1]
    return np.moveaxis(out, -1, axis)


def _sequential(x, rnd):
    acc, out = np.zeros(x.shape[1:], np.float32), np.empty_like(x)
    for i in range(x.shape[0]):
        acc = out[i] = rnd(acc + x[i])
    return out
