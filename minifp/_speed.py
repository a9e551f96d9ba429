"""minifp's speed: faster functions for the plain path's named seams (minifp/_seams.py), with the same bits.

Nothing here changes a value. Each function below replaces one seam of the plain path, serves the cases it was
written for and hands every other case back to the plain function (PLAIN.<name>). The tests compare each kernel
with the plain path bit for bit, and tests/test_bits.py trains every benchmark model with and without this module.
MINIFP_SPEED=0 in the environment leaves it out; without the JIT it is left out too (its kernels are Numba's).

What it holds:
- machine code: the rounding kernels compiled once per number of dimensions and called without Numba's look-up of
  the argument types (on a small model's step that look-up cost as much as the kernels' work);
- float16 through the CPU's own conversions (x86 F16C, 64-bit Arm: one instruction for eight values), and an op's
  float16 or bfloat16 result rounded and widened in one pass: the tensor keeps the float32 values beside its
  storage, as the next op (and the backward) would widen it right back; gradients inside the graph kept as such
  values;
- widening of the other 8- and 16-bit formats through a table of every code;
- Numba twins of some of the ops' NumPy passes (im2col, col2im, depthwise convolutions, a convolution's bias add
  and bias gradient, 2x2 max pooling, ReLU, hardtanh's clip, a masked gradient and a clamp's, SGD's momentum step),
  of the loss scale's unscaling with its inf check, of fp8 quantisation, and float32 lanes for accumulation chains
  into narrow formats.
- float32 batch norm by the batch's statistics (forward, gradients, a layer's running statistics): NumPy's
  row-after-row channel sums reproduced, a pass each, no temporaries;
- GELU (exact and tanh), LayerNorm over the last axis and embedding's gradient, forward and backward, in one pass or
  a row at a time (NumPy's pairwise sums reproduced), with no full-size float64 temporaries;
- the H100's native bfloat16 batch-norm backward: its staged channel sums (the kernel's threads, warp shuffles and
  roundings) and its input gradient, one pass each.
- both cores for the large calls of those kernels whose outputs part into independent ranges (elements, rows or
  batch items; never within a sum): in_parts, on a pool of threads made on first use that sleep between calls.
"""
from __future__ import annotations

import ctypes
import functools
import math
import os
import threading
import typing
import weakref
from concurrent.futures import ThreadPoolExecutor, wait

import numba
import numpy as np
from llvmlite import ir
from numba import prange
from numba.core import cgutils
from numba.extending import intrinsic, overload

from . import _accumulate, _compute, _fp8, _layers, _loss_scale, _ops, _optim, _rounding, _tensor  # noqa: F401
from ._formats import FORMATS, as_format, bfloat16, float16
from ._intrinsics import HARDWARE_HALF, JIT, bits64_of, bits_of, float64_of, float_of, half_of, i32, single_of
from ._seams import PLAIN, SEAMS
from ._state import STATE

__all__ = ["ENABLED"]

ENABLED = JIT and os.environ.get("MINIFP_SPEED", "1") != "0"
_F16, _F32, _F64, _U16 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.uint16)
_CODES = {1: np.dtype(np.uint8), 2: _U16}
# Widening float16 at up to this many elements: NumPy's own cast costs less than a kernel call (a Zen 3 core, NumPy
# 2.4: 0.51 us at 128 elements and 0.91 at 320, against 0.66-0.77 for the machine code and its output array).
SMALL_WIDEN = 256
# float16 <-> float32 through the CPU's conversions (their machine code writes the codes' bits into float16 arrays,
# which the Python functions run without the JIT cannot)
HALF = HARDWARE_HALF and JIT


class _MachineCode(dict):
    """ndim -> the machine code Numba made of a kernel for C-contiguous arrays of `dtypes` with ndim dimensions (a
    Numba type among `dtypes` is a scalar argument's): compiled, or loaded from Numba's cache, on first use, and
    called without the dispatcher's look-up of the arguments' types. Only for callers that pass such arrays: the
    machine code checks nothing and reads their bytes (an output array of the storage dtype, as wide as the codes,
    takes the codes as they are). Without the JIT (the tests call this module's functions then too), the Python
    function."""

    def __init__(self, kernel, *dtypes):
        super().__init__()
        self.kernel, self.dtypes = kernel, dtypes

    def __missing__(self, ndim):
        code = self.kernel.compile(tuple(numba.types.Array(numba.from_dtype(d), ndim, "C") if isinstance(d, np.dtype)
                                         else d for d in self.dtypes)) if JIT else self.kernel
        self[ndim] = code
        return code


def _njit(fn):
    return numba.njit(cache=True, nogil=True)(fn)


# -- both cores: a kernel's disjoint parts on threads that sleep between calls ---------------------------------------

def _allowed_threads():
    """The threads this process may use: the smaller of NUMBA_NUM_THREADS and OMP_NUM_THREADS where set (what
    Numba and OpenBLAS read), else Numba's count (the cores)."""
    given = [os.environ.get(name, "").strip() for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS")]
    given = [int(v) for v in given if v.isdigit() and int(v) > 0]
    return min(given) if given else numba.config.NUMBA_NUM_THREADS


THREADS = _allowed_threads()
# The work from which a call is cut in parts, in elements of a plain pass (the masked gradient's: about 0.5 ns an
# element on one core of a 2-core AMD EPYC VM); a kernel's call counts its elements times its cost per element in
# such passes (measured: depthwise, col2im and GELU 3, its gradient 5, LayerNorm 3 and 6, the 2x2 max pool 1 and 4).
# Handing parts to the pool and taking back those it has not begun costs 12-18 us on a quiet machine, far more
# where the second core is busy; on that VM, shared, calls of 0.1-0.3 ms ran up to 1.8x slower cut, calls from
# about 0.5 ms ran 1.2-1.9x faster.
SPLIT_MIN = 1 << 20
_POOL = []      # the ThreadPoolExecutor, made on first use (and forgotten in a forked child, where its threads are not)
# OpenBLAS's idle threads spin for 2**28 cycles (about 0.1 s) after each threaded GEMM, on the core the pool's thread
# then needs: on 2 cores the pool then made the small CNN's step slower than no pool at all. Told to sleep after
# 2**16 cycles (about 20 us), the CNN's step went from 62-74 to 50-59 ms, the transformer block's from 80-86 to
# 65-73 (benchmarks/README.md, issue 35's sixth session).
BLAS_SPIN = 16


def _openblas():
    """The process's loaded OpenBLAS libraries (NumPy's), as ctypes handles: found in /proc/self/maps (Linux)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.rsplit("/", 1)[-1].lower()}
    except OSError:
        return []
    libs = []
    for path in sorted(paths):
        try:
            libs.append(ctypes.CDLL(path))     # (loaded already: its handle)
        except OSError:
            continue
    return libs


def _calm_blas():
    """Have the process's OpenBLAS (NumPy's) spin BLAS_SPIN before its idle threads sleep, as if
    OPENBLAS_THREAD_TIMEOUT had been set when it loaded: set it, have OpenBLAS read it again and restart its threads
    (they start anew on the next threaded call). Only where nobody set it, and with this the process's only Python
    thread (no GEMM of another thread under way while its threads stop); not where OpenBLAS lacks those calls
    (another BLAS, another system)."""
    if "OPENBLAS_THREAD_TIMEOUT" in os.environ or threading.active_count() > 1:
        return
    for lib in _openblas():
        if hasattr(lib, "openblas_read_env") and hasattr(lib, "blas_thread_shutdown_"):
            os.environ["OPENBLAS_THREAD_TIMEOUT"] = str(BLAS_SPIN)
            lib.openblas_read_env()
            lib.blas_thread_shutdown_()


# OpenBLAS's calls for its threads, by the names its builds give them (NumPy's wheels: scipy_ before, 64_ after).
_BLAS_NAMES = [(f"{a}openblas_set_num_threads{b}", f"{a}openblas_get_num_threads{b}")
               for a in ("", "scipy_") for b in ("", "64_")]


def blas_threads(n=None):
    """Set the process's OpenBLAS to n threads (where n is given), and return the threads it uses, or None where no
    OpenBLAS with those calls is loaded (another BLAS, another system: its threads stay as its environment set)."""
    found = None
    for lib in _openblas():
        for set_name, get_name in _BLAS_NAMES:
            if hasattr(lib, set_name) and hasattr(lib, get_name):
                if n is not None:
                    getattr(lib, set_name)(ctypes.c_int(n))
                found = getattr(lib, get_name)()
                break
    return found


def set_threads(n):
    """Run the speed module's parts on n threads from now on (their bits do not depend on it), Numba's parallel
    loops on as many as it has (at most n), and the process's OpenBLAS on n (a float32 GEMM's low bits follow its
    split, as MKL's do under PyTorch's set_num_threads)."""
    global THREADS
    if n != THREADS and _POOL:
        _POOL.clear()       # made again, of n - 1 threads, on the next call cut in parts; a call under way keeps
        # the old pool, whose threads end when it is dropped
    THREADS = n
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    blas_threads(n)


def in_parts(part, n, work):
    """part(lo, hi) over range(n) cut into contiguous ranges, two per thread allowed (THREADS), when `work`
    (the call's elements times its kernel's cost per element, in plain passes) reaches SPLIT_MIN; else
    part(0, n) here. The pool's threads (which wait on its queue, never spinning) take the ranges from the first,
    this thread from the last, and then those the pool has not begun: a busy machine that is slow to wake a
    thread costs little. Each part must write outputs of its own from inputs no part writes (the same bits however
    the range is cut), and release the GIL (nogil kernels) to run beside the others."""
    pieces = min(2 * THREADS, n)
    if THREADS < 2 or pieces < 2 or work < SPLIT_MIN:
        part(0, n)
        return
    if not _POOL:
        _calm_blas()
        _POOL.append(ThreadPoolExecutor(THREADS - 1, thread_name_prefix="minifp-speed"))
    pool, cuts = _POOL[0], [n * i // pieces for i in range(pieces + 1)]
    futures = [pool.submit(part, cuts[i], cuts[i + 1]) for i in range(pieces - 1)]
    try:
        part(cuts[-2], cuts[-1])
        for i in reversed(range(pieces - 1)):
            if futures[i].cancel():     # not begun on the pool: here
                part(cuts[i], cuts[i + 1])
    finally:        # (the outputs are the caller's only once every part has ended)
        wait([f for f in futures if not f.cancel()])
    for f in futures:
        if not f.cancelled():
            f.result()      # (raises a part's exception here)


os.register_at_fork(after_in_child=_POOL.clear)


# -- float16 through the CPU's conversions (C-contiguous arrays of any shape: flat views inside) ------------------

@_njit
def _round_half(x, out):
    """float32 -> float16 codes by the CPU's own conversion (IEEE nearest-even, as NumPy's cast)."""
    x, out = x.reshape(-1), out.reshape(-1)
    for i in range(x.size):
        out[i] = half_of(x[i])


@_njit
def _widen_half(codes, out):
    """float16 codes -> float32 values by the CPU's own conversion (exact)."""
    codes, out = codes.reshape(-1), out.reshape(-1)
    for i in range(codes.size):
        out[i] = single_of(codes[i])


@_njit
def _quantize_half(x, out):
    """float32 -> the float32 values of their float16 roundings, in one pass."""
    x, out = x.reshape(-1), out.reshape(-1)
    for i in range(x.size):
        out[i] = single_of(np.uint16(half_of(x[i])))


@_njit
def _round_half_pair(x, codes, values):
    """float32 -> float16 codes and their float32 values, in one pass."""
    x, codes, values = x.reshape(-1), codes.reshape(-1), values.reshape(-1)
    for i in range(x.size):
        h = np.uint16(half_of(x[i]))
        codes[i] = h
        values[i] = single_of(h)


@_njit
def _quantize_half_here(x):
    """float32 -> the float32 values of their float16 roundings, in place (an output that may alias the input keeps
    the loop from vectorising: 0.41 against 0.11 ns an element)."""
    x = x.reshape(-1)
    for i in range(x.size):
        x[i] = single_of(np.uint16(half_of(x[i])))


@_njit
def _round_half_pair_here(x, codes):
    """float32 -> float16 codes, and their float32 values in place of x, in one pass."""
    x, codes = x.reshape(-1), codes.reshape(-1)
    for i in range(x.size):
        h = np.uint16(half_of(x[i]))
        codes[i] = h
        x[i] = single_of(h)


@_njit
def _gather(codes, table, out):
    """out[i] = table[codes[i]]: widening through a table of every value of a <= 16-bit format."""
    for i in range(codes.size):
        out[i] = table[codes[i]]


HALF_CODES, HALF_WIDE, HALF_VALUES, HALF_PAIR = (
    _MachineCode(k, *dtypes) for k, dtypes in ((_round_half, (_F32, _U16)), (_widen_half, (_U16, _F32)),
                                               (_quantize_half, (_F32, _F32)), (_round_half_pair, (_F32, _U16, _F32))))
GATHER = {n: _MachineCode(_gather, codes, _F32, _F32)[1] for n, codes in _CODES.items()}   # by the codes' bytes


def _in_memory_order(fn, x, *rest):
    """fn(x, *rest) for a C-contiguous x; for a permuted view (an NCHW view of NHWC data), fn of x in its memory
    order, permuted back (every result of fn the same way); else None."""
    if x.flags.c_contiguous:
        return fn(x, *rest)
    base, back = _rounding._memory_order(x)
    if base is None:
        return None
    out = fn(base, *rest)
    return tuple(o.transpose(back) for o in out) if isinstance(out, tuple) else out.transpose(back)


@numba.njit(cache=True, nogil=True, inline="always")
def _bf16_value(v):
    """v rounded to bfloat16 (nearest-even; a NaN quieted, the top of its payload kept), as a float32: _rounding's
    bfloat16 formula, the code shifted back into place."""
    b = bits_of(v)
    w = i32(b | i32(0x7FC00000)) if v != v else i32(i32(b + i32(np.right_shift(b, 16) & i32(1))) + i32(0x7FFF))
    return float_of(i32(w & i32(-65536)))


@_njit
def _round_bf16(x, out):
    """float32 -> bfloat16 codes (as _rounding's kernel writes them)."""
    x, out = x.reshape(-1), out.reshape(-1)
    for i in range(x.size):
        out[i] = np.uint16(np.right_shift(bits_of(_bf16_value(x[i])), 16) & 0xFFFF)


@_njit
def _quantize_bf16(x, out):
    """float32 -> the float32 values of their bfloat16 roundings, in one pass."""
    x, out = x.reshape(-1), out.reshape(-1)
    for i in range(x.size):
        out[i] = _bf16_value(x[i])


@_njit
def _round_bf16_pair(x, codes, values):
    """float32 -> bfloat16 codes and their float32 values, in one pass."""
    x, codes, values = x.reshape(-1), codes.reshape(-1), values.reshape(-1)
    for i in range(x.size):
        v = _bf16_value(x[i])
        codes[i] = np.uint16(np.right_shift(bits_of(v), 16) & 0xFFFF)
        values[i] = v


@_njit
def _quantize_bf16_here(x):
    """float32 -> the float32 values of their bfloat16 roundings, in place."""
    x = x.reshape(-1)
    for i in range(x.size):
        x[i] = _bf16_value(x[i])


@_njit
def _round_bf16_pair_here(x, codes):
    """float32 -> bfloat16 codes, and their float32 values in place of x, in one pass."""
    x, codes = x.reshape(-1), codes.reshape(-1)
    for i in range(x.size):
        v = _bf16_value(x[i])
        codes[i] = np.uint16(np.right_shift(bits_of(v), 16) & 0xFFFF)
        x[i] = v


_BF16 = np.dtype(bfloat16.storage)


class _Kept(typing.NamedTuple):
    """A format's roundings that may keep float32 values beside the storage: the machine code of each."""
    codes: _MachineCode         # float32 -> codes
    pair: _MachineCode          # float32 -> codes and values
    values: _MachineCode        # float32 -> values
    values_here: _MachineCode   # float32 -> values, in place
    pair_here: _MachineCode     # float32 -> codes, values in place
    storage: np.dtype


# float16 through the CPU's conversions; bfloat16 by the formula of _rounding's kernel (its bits exactly), and only
# with the JIT (codes written into bfloat16 storage).
_HALF_KEPT = _Kept(HALF_CODES, HALF_PAIR, HALF_VALUES, _MachineCode(_quantize_half_here, _F32),
                   _MachineCode(_round_half_pair_here, _F32, _U16), _F16) if HALF else None
_BF16_KEPT = _Kept(*(_MachineCode(k, *d) for k, d in (
    (_round_bf16, (_F32, _U16)), (_round_bf16_pair, (_F32, _U16, _F32)), (_quantize_bf16, (_F32, _F32)),
    (_quantize_bf16_here, (_F32,)), (_round_bf16_pair_here, (_F32, _U16)))), _BF16) if JIT else None


def _kept(fmt):
    """fmt's kernels for roundings that keep values, or None (the plain rounding serves)."""
    return _HALF_KEPT if fmt is float16 else _BF16_KEPT if fmt is bfloat16 else None


def _over(code, *arrays):
    """The machine code `code` (a _MachineCode of an elementwise kernel) over C-contiguous arrays of one shape:
    whole here, or from SPLIT_MIN elements flat, in parts on the pool (a rounding pass runs at the memory's speed,
    which two cores raise: 4M elements rounded to float16 pairs 0.73 -> 0.56 ns an element on the 2-core VM,
    benchmarks/README.md)."""
    n = arrays[0].size
    if n < SPLIT_MIN:
        code[arrays[0].ndim](*arrays)
        return
    flat = [a.reshape(-1) for a in arrays]
    in_parts(lambda lo, hi: code[1](*[a[lo:hi] for a in flat]), n, n)


def _codes_of(x, kept):
    out = np.empty(x.shape, kept.storage)
    _over(kept.codes, x, out)
    return out


def _pair_of(x, kept, inplace=False):
    codes = np.empty(x.shape, kept.storage)
    if inplace:
        _over(kept.pair_here, x, codes)
        return codes, x
    values = np.empty(x.shape, _F32)
    _over(kept.pair, x, codes, values)
    return codes, values


def _values_of(x, kept, inplace=False):
    if inplace:
        _over(kept.values_here, x)
        return x
    out = np.empty(x.shape, _F32)
    _over(kept.values, x, out)
    return out


# -- rounding and widening ------------------------------------------------------------------------------------------

_PLANS = {}     # Format -> (machine code of its nearest kernel, storage dtype), or None where the plain path serves


def _plan(fmt):
    """The machine code that rounds float32 to nearest-even into fmt, writing its storage directly."""
    plan = _PLANS.get(fmt, False)
    if plan is False:
        nearest = _rounding.nearest_plan(fmt)
        if nearest is None or not JIT:      # (without the JIT, codes written into a storage array become numbers)
            plan = None
        elif HALF and fmt.storage == _F16 and fmt.native:
            plan = (HALF_CODES[1], _F16)
        else:       # the kernel's codes written straight into an array of the storage dtype (as wide)
            plan = (_MachineCode(nearest.kernel, _F32, nearest.codes)[1], nearest.storage)
        _PLANS[fmt] = plan
    return plan


def _round_planned(x, plan):
    out = np.empty(x.shape, plan[1])
    plan[0](x.reshape(-1), out.reshape(-1))     # views: the kernels take 1-D arrays
    return out


def rounded(x, fmt, counts=None):
    """The plain path's rounding, for float32 NumPy arrays through the kernels' machine code, and for float64 ones
    into float32 by the CPU's conversion (batch norm's running statistics: the plain kernel's 18 arguments cost
    25 us a call to pass)."""
    if counts is None and type(x) is np.ndarray and x.dtype is _F32:
        plan = _plan(fmt)
        if plan is not None:
            out = _in_memory_order(_round_planned, x, plan)
            if out is not None:
                return out
    elif counts is None and type(x) is np.ndarray and x.dtype is _F64 and fmt.is_float32 and x.flags.c_contiguous:
        out = np.empty(x.shape, _F32)
        if _narrow_normal(x.reshape(-1), out.reshape(-1)):
            return out
    return PLAIN.rounded(x, fmt, counts)


@_njit
def _narrow_normal(x, out):
    """out = x rounded to float32 by the conversion instruction (nearest-even, overflow to inf); False where some x
    is a NaN (its payload) or nonzero below float32's smallest normal (a flush-to-zero mode would change its
    rounding): those are left to the plain path."""
    for i in range(x.size):
        v = x[i]
        if not abs(v) >= 1.1754943508222875e-38 and v != 0.0:     # (float32's smallest normal; NaN)
            return False
        out[i] = np.float32(v)
    return True


def widened(a, fmt=None):
    """float16 through the CPU's conversion, other 8- and 16-bit coded formats through a table of their values."""
    if type(a) is np.ndarray and a.size > SMALL_WIDEN and a.dtype in _TABLED:
        if a.dtype is _F16 and HALF and a.flags.c_contiguous:      # the common call, without a call more
            return _widen_half_codes(a)
        out = _in_memory_order(_widen_half_codes if a.dtype is _F16 and HALF else _widen_table, a)
        if out is not None:
            return out
    return PLAIN.widened(a, fmt)


def _widen_half_codes(a):
    out = np.empty(a.shape, _F32)
    _over(HALF_WIDE, a.view(_U16), out)
    return out


def _widen_table(a):
    out = np.empty(a.shape, _F32)
    GATHER[a.dtype.itemsize](a.reshape(-1).view(_CODES[a.dtype.itemsize]), _table(a.dtype), out.reshape(-1))
    return out


def _table(dtype):
    """The float32 value of every code of a storage dtype (of a sub-byte format: of every byte)."""
    table = _TABLES.get(dtype)
    if table is None:
        table = _TABLES[dtype] = as_format(dtype).decode(np.arange(1 << 8 * dtype.itemsize)).astype(np.float32)
    return table


# The storage dtypes widened here: float16 and the 8-bit formats' (bfloat16 is a 16-bit shift, which ml_dtypes does
# at memory speed).
_TABLED = {np.dtype(f.storage) for f in FORMATS.values() if f.storage.itemsize <= 2} - {np.dtype(bfloat16.storage)}
_TABLES = {}


def values(t):
    """A tensor's float32 values: those kept beside its storage, else widened (and kept, in grad mode: the backward
    widens the op's inputs again)."""
    v = t._float32
    if v is not None:
        return v
    data = t._data
    if data.dtype is _F32:
        return data
    v = widened(data, t.fmt)
    if STATE.grad_enabled:
        t._float32 = v
    return v


def round_result(x, fmt, exact=False, keep=False, inplace=False):
    """float16 (by the CPU's conversion) and bfloat16 results rounded, their values kept (when `keep`) in the same
    pass (written into x: inplace, for a result no one else holds)."""
    kept = _kept(fmt)
    if kept is not None and type(x) is np.ndarray and x.dtype is _F32:
        inplace = inplace and keep and x.flags.writeable
        if x.flags.c_contiguous:        # (without _in_memory_order's call: one call less, on every op)
            if exact or not keep:   # exact: x holds the format's values already, the values to keep
                return _codes_of(x, kept), (x if keep else None)
            return _pair_of(x, kept, inplace)
        pair = _in_memory_order(_codes_of, x, kept) if exact or not keep else \
            _in_memory_order(_pair_of, x, kept, inplace)
        if pair is not None:
            return pair if isinstance(pair, tuple) else (pair, x if keep else None)
    return rounded(x, fmt), None


def round_gradient(x, fmt, exact=False, inplace=False):
    """A float16 or bfloat16 gradient inside the graph kept as its float32 values (the sweep would widen its storage
    back); inplace: into x itself (an intermediate no one else holds)."""
    kept = _kept(fmt)
    if kept is not None and type(x) is np.ndarray and x.dtype is _F32:
        if exact:
            return None, x
        values = _in_memory_order(_values_of, x, kept, inplace and x.flags.writeable)
        if values is not None:
            return None, values
    return rounded(x, fmt), None


# -- the ops' NumPy passes, in one pass each ------------------------------------------------------------------------

def _native(xp, *arrays):
    """Whether the kernels serve: NumPy arrays, every one C-contiguous."""
    return xp is np and all(type(a) is np.ndarray and a.flags.c_contiguous for a in arrays)


def _shared_order(*arrays):
    """(the arrays with their axes permuted into the memory order they share, the permutation back) where each is
    C-contiguous in it (C order itself, or a convolution's channels-last NCHW view), else None."""
    bases, back = [], None
    for a in arrays:
        base, b = (a, tuple(range(a.ndim))) if a.flags.c_contiguous else _rounding._memory_order(a)
        if base is None or back is not None and b != back:
            return None
        bases.append(base)
        back = b
    return bases, back


def _ordered(*arrays):
    """(the NumPy arrays as C-contiguous bases, None) where each is C-contiguous, else _shared_order's (bases, the
    permutation back) where they share another memory order (a PyTorch conv weight's after an update: taps
    first), else None."""
    if all(type(a) is np.ndarray for a in arrays):
        if all(a.flags.c_contiguous for a in arrays):
            return arrays, None
        return _shared_order(*arrays)
    return None


@_njit
def _masked_kernel(keep, g, out):
    """out = g where keep holds, else 0, on flat arrays of g's bits (integer views: inf and NaN pass as they are)."""
    for i in range(g.size):
        out[i] = g[i] if keep[i] else 0
    return out


def masked(xp, keep, g):
    """_ops.masked in one pass without temporaries, from 2**15 elements (below, the call costs more than the and)."""
    if g.size >= 1 << 15 and xp is np and type(keep) is type(g) is np.ndarray and keep.dtype == bool \
            and keep.shape == g.shape:
        shared = _shared_order(keep, g)
        if shared:
            (keep, g), back = shared
            ints = {2: np.int16, 4: np.int32, 8: np.int64}[g.dtype.itemsize]
            out = np.empty(g.shape, ints)
            k, v, o = keep.reshape(-1), g.view(ints).reshape(-1), out.reshape(-1)
            in_parts(lambda lo, hi: _masked_kernel(k[lo:hi], v[lo:hi], o[lo:hi]), o.size, o.size)
            return out.view(g.dtype).transpose(back)
    return PLAIN.masked(xp, keep, g)


@_njit
def _col2im_kernel(gcols, gx, sh, sw, dh, dw, pt, pl):
    """gx[n, i*dh + y*sh - pt, j*dw + z*sw - pl, c] += gcols[n, y, z, i, j, c] for every tap (i, j) in row-major
    order, where that lies in gx (_ops.col2im's sums, element by element in the same order); gcols (N, Ho, Wo, kh,
    kw, C), gx (N, H, W, C)."""
    n, ho, wo, kh, kw, c = gcols.shape
    h, w = gx.shape[1], gx.shape[2]
    for a in range(n):
        for i in range(kh):
            for j in range(kw):
                for y in range(ho):
                    r = i * dh + y * sh - pt
                    if 0 <= r < h:
                        for z in range(wo):
                            s = j * dw + z * sw - pl
                            if 0 <= s < w:
                                for k in range(c):
                                    gx[a, r, s, k] += gcols[a, y, z, i, j, k]
    return gx


def col2im(gcols, gx, sh, sw, dh, dw, pt=0, pl=0):
    """_ops.col2im in one pass over the taps."""
    if _native(np, gcols, gx):
        in_parts(lambda lo, hi: _col2im_kernel(gcols[lo:hi], gx[lo:hi], sh, sw, dh, dw, pt, pl), gx.shape[0],
                 3 * gcols.size)
        return gx
    return PLAIN.col2im(gcols, gx, sh, sw, dh, dw, pt, pl)


@numba.njit(cache=True, nogil=True, inline="always")
def _max(a, b):
    """np.maximum(a, b): a's NaN, else b's, else the larger; b on ties (of +0 and -0 too)."""
    return a if a > b or a != a else b


@_njit
def _max_pool_2x2(x, top):
    """top[n, y, z, c] = the maximum of channel c's 2x2 tile at (2y, 2z) in float32 channels-last x (N, 2*Ho,
    2*Wo, C), folded in row-major order as _ops' taps fold with np.maximum (the same NaNs and signs of zero)."""
    n, ho, wo, c = top.shape
    for a in range(n):
        for y in range(ho):
            for z in range(wo):
                for k in range(c):
                    top[a, y, z, k] = _max(_max(_max(x[a, 2 * y, 2 * z, k], x[a, 2 * y, 2 * z + 1, k]),
                                                x[a, 2 * y + 1, 2 * z, k]), x[a, 2 * y + 1, 2 * z + 1, k])
    return top


@_njit
def _max_pool_2x2_grad(x, top, g, gx):
    """gx = g at the first maximum of each 2x2 tile of x (its first NaN where the tile holds one), +0 elsewhere, on
    g's and gx's bits (int32 views, (N, Ho, Wo, C) and x's shape; g without -0). Two passes whose loops over runs
    of channels vectorise: which tap is each tile's first maximum, then g or 0 into every tap. Branch-free: a
    tile's winner is data, and a mispredicted branch costs more than the ands that replace it."""
    n, ho, wo, c = top.shape
    first = np.empty(top.shape, np.int8)
    for a in range(n):
        for y in range(ho):
            for z in range(wo):
                for k in range(c):
                    t = top[a, y, z, k]
                    nan = np.int8(t != t)
                    p, q, r = x[a, 2 * y, 2 * z, k], x[a, 2 * y, 2 * z + 1, k], x[a, 2 * y + 1, 2 * z, k]
                    hp = np.int8(p == t) | (nan & np.int8(p != p))
                    hq = np.int8(q == t) | (nan & np.int8(q != q))
                    hr = np.int8(r == t) | (nan & np.int8(r != r))
                    first[a, y, z, k] = 3 - (hp | hq | hr) - (hp | hq) - hp
    for a in range(n):
        for y in range(ho):
            for i in range(2):
                for z in range(wo):
                    for j in range(2):
                        for k in range(c):
                            gx[a, 2 * y + i, 2 * z + j, k] = g[a, y, z, k] & -np.int32(first[a, y, z, k] == 2 * i + j)
    return gx


def _two_by_two(xp, x, tiles, layout):
    """Whether the 2x2 kernels serve: float32 x, channels-last in memory, that 2x2 tiles cover exactly."""
    return (tiles.shape[3] == tiles.shape[5] == 2 and x.dtype == xp.float32
            and (2 * tiles.shape[2], 2 * tiles.shape[4]) == _ops._spatial(x, layout)
            and _native(xp, _ops._channels_last(x, layout)))


def tiles_max(xp, x, tiles, layout):
    """2x2 max pooling of channels-last float32 data in one pass, vectorised over channels."""
    if _two_by_two(xp, x, tiles, layout):
        xl = _ops._channels_last(x, layout)
        n, h, w, c = xl.shape
        top = np.empty((n, h // 2, w // 2, c), x.dtype)
        in_parts(lambda lo, hi: _max_pool_2x2(xl[lo:hi], top[lo:hi]), n, xl.size)
        return _ops._nchw(top, layout)
    return PLAIN.tiles_max(xp, x, tiles, layout)


def tiles_max_grad(xp, g, top, x, tiles, layout):
    """Its gradient in two passes."""
    if _two_by_two(xp, x, tiles, layout) and g.dtype == x.dtype and _native(xp, _ops._channels_last(top, layout)):
        xl, gc, tl = (_ops._channels_last(a, layout) for a in (x, g, top))
        gl, gx = np.empty(gc.shape, x.dtype), np.empty(xl.shape, x.dtype)
        gi, gxi = gl.view(np.int32), gx.view(np.int32)

        def part(lo, hi):
            np.add(gc[lo:hi], 0, out=gl[lo:hi])     # -0 lands as +0, as in the plain path's sum
            _max_pool_2x2_grad(xl[lo:hi], tl[lo:hi], gi[lo:hi], gxi[lo:hi])
        in_parts(part, xl.shape[0], 4 * xl.size)
        return _ops._nchw(gx, layout)
    return PLAIN.tiles_max_grad(xp, g, top, x, tiles, layout)


# -- depthwise convolutions: _ops' passes per tap, in their orders, a row at a time ----------------------------------
# (one output channel per input channel: the kernels' loops over runs of channels vectorise; more, m > 1, is rare
# and takes the plain path)

@_njit
def _depthwise_kernel(x, w, out, pt, pl, sh, sw, dh, dw):
    """_ops.depthwise's sums: out (N, Ho, Wo, C) of x (N, H, W, C) padded by pt rows above and pl columns left (and
    zeros below and right) and w (kh, kw, C); a row of outputs at a time, from +0, the taps (i, j) in row-major
    order; a tap in the padding adds 0 * w, as the plain path's padded x does (0 * inf is NaN)."""
    n, ho, wo, c = out.shape
    h, wd, zero = x.shape[1], x.shape[2], np.float32(0)
    for a in range(n):
        for y in range(ho):
            out[a, y] = 0       # (here, in the cache: not a pass of its own over memory)
            for i in range(w.shape[0]):
                r = y * sh + i * dh - pt
                for j in range(w.shape[1]):
                    for z in range(wo):
                        s = z * sw + j * dw - pl
                        if 0 <= r < h and 0 <= s < wd:
                            for k in range(c):
                                out[a, y, z, k] += x[a, r, s, k] * w[i, j, k]
                        else:
                            for k in range(c):
                                out[a, y, z, k] += zero * w[i, j, k]
    return out


@_njit
def _depthwise_grad_x_kernel(g, w, gx, pt, pl, sh, sw, dh, dw):
    """_ops.depthwise_grad_x's sums: gx (N, H, W, C), x's gradient without its padding (pt rows above, pl columns
    left), of g (N, Ho, Wo, C) and w (kh, kw, C); a row of gx at a time, from +0, the taps that reach it in
    row-major order."""
    n, ho, wo, c = g.shape
    h, wd = gx.shape[1], gx.shape[2]
    for a in range(n):
        for r in range(h):
            gx[a, r] = 0
            for i in range(w.shape[0]):
                y = (r + pt - i * dh) // sh
                if y < 0 or y >= ho or y * sh != r + pt - i * dh:
                    continue
                for j in range(w.shape[1]):
                    for z in range(wo):
                        s = z * sw + j * dw - pl
                        if 0 <= s < wd:
                            for k in range(c):
                                gx[a, r, s, k] += g[a, y, z, k] * w[i, j, k]
    return gx


@_njit
def _depthwise_grad_w_kernel(x, g, gw, pt, pl, sh, sw, dh, dw):
    """_ops.depthwise_grad_w's sums: gw (kh, kw, C), zeros in, of x (N, H, W, C) padded as in _depthwise_kernel
    and g (N, Ho, Wo, C), the positions (n, y, z) in row-major order for every tap (in the padding: 0 * g)."""
    n, ho, wo, c = g.shape
    h, wd, zero = x.shape[1], x.shape[2], np.float32(0)
    for a in range(n):
        for y in range(ho):
            for i in range(gw.shape[0]):
                r = y * sh + i * dh - pt
                for j in range(gw.shape[1]):
                    for z in range(wo):
                        s = z * sw + j * dw - pl
                        if 0 <= r < h and 0 <= s < wd:
                            for k in range(c):
                                gw[i, j, k] += x[a, r, s, k] * g[a, y, z, k]
                        else:
                            for k in range(c):
                                gw[i, j, k] += zero * g[a, y, z, k]
    return gw


def _one_each(m, *arrays):
    """Whether the depthwise kernels serve: one output channel per input channel (m == 1), float32 C-contiguous
    NumPy arrays."""
    return m == 1 and all(type(a) is np.ndarray and a.dtype is _F32 and a.flags.c_contiguous for a in arrays)


def depthwise(xp, x, w, pads, ho, wo, sh, sw, dh, dw):
    """_ops.depthwise in one pass over the outputs, x's padding read as zeros (no padded copy)."""
    if _one_each(w.shape[3], x, w):
        out, w0 = np.empty((x.shape[0], ho, wo, x.shape[3]), _F32), w[..., 0]
        in_parts(lambda lo, hi: _depthwise_kernel(x[lo:hi], w0, out[lo:hi], pads[0][0], pads[1][0], sh, sw, dh, dw),
                 x.shape[0], 3 * out.size)
        return out[..., None]
    return PLAIN.depthwise(xp, x, w, pads, ho, wo, sh, sw, dh, dw)


def depthwise_grad_x(xp, g, w, h, wd, pads, sh, sw, dh, dw):
    """_ops.depthwise_grad_x in one pass over the input's gradient, without its padding."""
    if _one_each(w.shape[3], g, w):
        gx, g0, w0 = np.empty((g.shape[0], h, wd, g.shape[3]), _F32), g[..., 0], w[..., 0]
        in_parts(lambda lo, hi: _depthwise_grad_x_kernel(g0[lo:hi], w0, gx[lo:hi], pads[0][0], pads[1][0], sh, sw,
                                                         dh, dw), g.shape[0], 3 * g.size)
        return gx
    return PLAIN.depthwise_grad_x(xp, g, w, h, wd, pads, sh, sw, dh, dw)


def depthwise_grad_w(xp, x, g, kh, kw, pads, sh, sw, dh, dw):
    """_ops.depthwise_grad_w in one pass over the positions, x's padding read as zeros."""
    if _one_each(g.shape[4], x, g):
        gw = np.zeros((kh, kw, x.shape[3]), _F32)
        return _depthwise_grad_w_kernel(x, g[..., 0], gw, pads[0][0], pads[1][0], sh, sw, dh, dw)[..., None]
    return PLAIN.depthwise_grad_w(xp, x, g, kh, kw, pads, sh, sw, dh, dw)


# -- the loss scale's unscaling and inf check in one pass -----------------------------------------------------------

def _scaled_finite(x, factor, divide, out):
    """out = x / factor or x * factor (float32, C-contiguous, any shape; factor rounded to float32 first); whether
    every x was finite."""
    x, out, factor = x.reshape(-1), out.reshape(-1), np.float32(factor)
    finite = True
    for i in range(x.size):
        v = x[i]
        finite &= math.isfinite(v)
        out[i] = v / factor if divide else v * factor
    return finite


def _times_finite(x, factor):
    """x *= factor in place (float32, C-contiguous; factor rounded to float32 first); whether every x was finite
    before. Its own kernel: with out = x, _scaled_finite's loop cannot vectorise (x and out alias)."""
    x, factor = x.reshape(-1), np.float32(factor)
    finite = True
    for i in range(x.size):
        v = x[i]
        finite &= math.isfinite(v)
        x[i] = v * factor
    return finite


# numpy's error model: x / 0 is inf or NaN, as NumPy's, not an exception
SCALED_FINITE, TIMES_FINITE = (numba.njit(cache=True, nogil=True, error_model="numpy")(f)
                               for f in (_scaled_finite, _times_finite))
TIMES = _MachineCode(TIMES_FINITE, _F32, numba.float64)


def unscaled(values, factor, divide=False):
    """The unscaling of a float32 NumPy array and its inf check in one pass."""
    if type(values) is np.ndarray and values.dtype is _F32 and values.flags.c_contiguous:
        out = np.empty(values.shape, _F32)
        return out, bool(SCALED_FINITE(values, float(factor), divide, out))   # a Python float: a quicker call
    return PLAIN.unscaled(values, factor, divide)


def times_in_place(x, factor):
    """x *= factor and the inf check in one pass, for a C-contiguous float32 NumPy array."""
    return TIMES[x.ndim](x, float(factor))


# -- fp8 quantisation in one pass -----------------------------------------------------------------------------------

@_njit
def _quantize_kernel(x, scale, top, drop, tiny, big, out):
    """_fp8.fp8_values(x * scale) into out; branch-free, so that LLVM vectorises it (a quiet NaN keeps its top
    fraction bit through the bit formula, so it stays NaN)."""
    half = np.int32((1 << (drop - 1)) - 1)
    mask = np.int32(-(1 << drop))
    xs, os_ = x.reshape(-1), out.reshape(-1)
    for i in range(xs.size):
        v = min(max(xs[i] * scale, -top), top)
        b = bits_of(v)
        normal = float_of(np.int32((b + half + ((b >> drop) & 1)) & mask))
        a = abs(v)
        small = math.copysign((a + big) - big, v)
        os_[i] = small if a < tiny else normal


def quantized(xp, x, scale, fmt):
    """fp8 quantisation of a float32 NumPy array in one pass."""
    if xp is np and type(x) is np.ndarray:
        q = np.empty(x.shape, np.float32)
        _quantize_kernel(np.ascontiguousarray(x), scale, *_fp8.CONSTANTS[fmt], q)
        return q
    return PLAIN.quantized(xp, x, scale, fmt)


# -- accumulation chains into narrow formats in float32 lanes -------------------------------------------------------

@numba.njit(cache=True)
def _add32(s, p, shift):
    """round(s + p) in float32 lanes, for s a value of the format and p an exact float32 product: TwoSum's error
    makes float32's sum round-to-odd (24 >= p + 2 bits), which then rounds to nearest-even by the CPU's float16
    conversion (shift < 0: float16) or by the bit formula at `shift` (a format with float32's exponents: bfloat16,
    tf32). Twice the lanes of float64."""
    t = s + p
    bp = t - s
    err = (s - (t - bp)) + (p - bp)
    b = bits_of(t)
    fix = (err != 0) & ((b & i32(1)) == 0) & (abs(t) < np.float32(np.inf))
    step = i32(i32(1) | np.right_shift(i32(bits_of(err) ^ b), i32(31)))
    t = float_of(i32(b + step)) if fix else t
    if shift < 0:
        return single_of(np.uint16(half_of(t)))
    b, sh = bits_of(t), i32(shift)
    half = i32(i32(np.left_shift(i32(1), i32(sh - 1))) - 1)
    r = float_of(i32(np.left_shift(np.right_shift(i32(i32(b + half) + i32(np.right_shift(b, sh) & i32(1))), sh), sh)))
    return t if t != t else r                              # a carry past max lands on inf, as it should


@numba.njit(cache=True, parallel=True)
def _chain_matmul32(a, b, out, shift):
    """The plain sequential chain in float32 lanes (_add32) for float32 a, b whose products float32 holds exactly."""
    m, k = a.shape
    for i in prange(m):
        acc = out[i]
        acc[:] = 0.0
        for kk in range(k):
            aik = a[i, kk]
            row = b[kk]
            for j in range(acc.size):
                acc[j] = _add32(acc[j], aik * row[j], shift)


def _lanes32(a, b, fmt, fmt_in):
    """The `shift` of _chain_matmul32 when a chain into fmt can run in float32 lanes, else None: float32 operands
    of at most 12-bit significands whose products float32 holds exactly (by their exponent range, or else by the
    data's), into float16 (on a CPU that converts in one instruction) or into a format with float32's exponents,
    subnormals and overflow to inf of at most 22 bits (bfloat16, tf32)."""
    if fmt_in is None or fmt_in.man_bits > 11 or a.dtype != np.float32 or b.dtype != np.float32:
        return None
    if fmt == float16 and fmt_in.exp_bits <= 6 and HALF:     # products within 2**+-127
        return -1
    if not (fmt.exp_bits == 8 and fmt.subnormals and fmt.infinities and fmt.overflow == "inf"
            and fmt.man_bits <= 21 and a.size and b.size):
        return None
    if fmt_in.exp_bits > 6:         # products of wide-range values: exact only if the data stay in range
        big = float(np.max(np.abs(a))) * float(np.max(np.abs(b)))
        nonzero_a, nonzero_b = np.abs(a[a != 0]), np.abs(b[b != 0])
        small = float(nonzero_a.min()) * float(nonzero_b.min()) if nonzero_a.size and nonzero_b.size else 1.0
        if not big < 2.0**126 or small < 2.0 ** (-149 + 2 * (fmt_in.man_bits + 1)):
            return None
    return 23 - fmt.man_bits


def chain_matmul(a, b, out, fmt, fmt_in):
    """A sequential chain into a narrow format in float32 lanes, where float32 holds its products exactly."""
    shift = _lanes32(a, b, fmt, fmt_in)
    if shift is None:
        return PLAIN.chain_matmul(a, b, out, fmt, fmt_in)
    out32 = np.empty(out.shape, np.float32)
    _chain_matmul32(a, b, out32, shift)
    out[...] = out32
    return out


class _Quiet:
    """np.errstate(all="ignore") for the engine's every op, at half its cost: NumPy's own error-state variable set
    to a state made once (what np.errstate's __enter__ and __exit__ do, without making the state each time)."""

    __slots__ = ("token",)

    def __enter__(self):
        self.token = _ERRSTATE.set(_IGNORE)

    def __exit__(self, *exc):
        _ERRSTATE.reset(self.token)


try:        # NumPy 2's error state (numpy/_core/_ufunc_config.py); another NumPy keeps np.errstate
    from numpy._core._ufunc_config import _extobj_contextvar as _ERRSTATE, _make_extobj
    _IGNORE = _make_extobj(all="ignore")
    quiet = _Quiet          # the engine's block without floating-point warnings: `with quiet():`
except (ImportError, TypeError):
    quiet = PLAIN.quiet


# -- GELU in one pass (the exact form) or with NumPy's own tanh between two (the tanh form) -----------------------

_SQRT_HALF32 = np.float32(math.sqrt(0.5))       # what -x * math.sqrt(0.5) multiplies float32 x by
_SQRT_2PI = math.sqrt(2 * math.pi)
_TANH_C = np.float32(_ops._GELU_TANH)
_TANH_A, _TANH_3A = np.float32(0.044715), np.float32(3 * 0.044715)
# float32 constants: an int or a Python float would make Numba's arithmetic float64
_HALF32, _ONE32, _NAN32 = np.float32(0.5), np.float32(1), np.float32(np.nan)


def _njit_numpy(fn, inline="never"):
    """Numba's NumPy error model: x / 0 is IEEE's, without the branch (that raises) that keeps loops scalar."""
    return numba.njit(cache=True, nogil=True, error_model="numpy", inline=inline)(fn)


@functools.partial(_njit_numpy, inline="always")
def _exp64(a):
    """_ops.exp64 of one float64, operation for operation."""
    a = -746.0 if a < -746.0 else (710.0 if a > 710.0 else a)
    s = a * _ops._INV_LN2 + _ops._SHIFTER
    k = bits64_of(s) - _ops._SHIFTER_BITS
    kf = s - _ops._SHIFTER
    hi = a - kf * _ops._LN2_HI
    lo = kf * _ops._LN2_LO
    r = hi - lo
    t = r * r
    c = r - t * (_ops._EXP_P1 + t * (_ops._EXP_P2 + t * (_ops._EXP_P3 + t * (_ops._EXP_P4 + t * _ops._EXP_P5))))
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    half = k >> 1
    return y * float64_of((half + 1023) << 52) * float64_of((k - half + 1023) << 52)


@functools.partial(_njit_numpy, inline="always")
def _erfc64(z):
    """_ops._erfc of one float64 with exp64, operation for operation."""
    t = 1 / (1 + 0.5 * abs(z))
    poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    r = t * _exp64(-z * z + poly)
    return r if z >= 0 else 2 - r


@_njit_numpy
def _half_kind(x, entries):
    """Which 16-bit format every float32 of x is a value of, given tables of `entries` a format (0: none): 1
    bfloat16 (the low 16 bits 0), 2 float16 (a round trip through it keeps the bits), 0 neither. A float32 array
    stops at its first element mostly."""
    if entries == 0:
        return 0
    bf = True
    for i in range(x.size):
        if bits_of(x[i]) & 0xFFFF:
            bf = False
            break
    if bf:
        return 1
    if not HALF:
        return 0
    for i in range(x.size):
        if bits_of(single_of(np.uint16(half_of(x[i]) & 0xFFFF))) != bits_of(x[i]):
            return 0
    return 2


@functools.partial(_njit_numpy, inline="always")
def _code(v, kind):
    """The bfloat16 (kind 1) or float16 (kind 2) code of float32 v, a value of that format."""
    return (bits_of(v) >> 16) & 0xFFFF if kind == 1 else half_of(v) & 0xFFFF


@_njit_numpy
def _gelu_kernel(x, out, tables):
    """out = _ops.gelu(x) for flat float32 arrays: by table (row kind - 1 of _tables()[0]) where every x is a
    bfloat16 or a float16 value (the engine's half-precision GELU), else value by value."""
    kind = _half_kind(x, tables.shape[1])
    if kind:
        table = tables[kind - 1]
        for i in range(x.size):
            out[i] = table[_code(x[i], kind)]
        return
    for i in range(x.size):
        v = x[i]
        y = np.float32(np.float64(v * _HALF32) * _erfc64(np.float64(-v * _SQRT_HALF32)))
        out[i] = _NAN32 if y != y else y


@_njit_numpy
def _gelu_grad_kernel(g, x, out, tables):
    """out = _ops.gelu_grad(g, x) for flat float32 arrays, the derivative by table (_tables()[1]) likewise."""
    kind = _half_kind(x, tables.shape[1])
    if kind:
        table = tables[kind - 1]
        for i in range(x.size):
            y = np.float32(np.float64(g[i]) * table[_code(x[i], kind)])
            out[i] = _NAN32 if y != y else y
        return
    for i in range(x.size):
        v = x[i]
        w = np.float64(v)
        d = 0.5 * _erfc64(np.float64(-v * _SQRT_HALF32)) + w * _exp64(-0.5 * (w * w)) / _SQRT_2PI
        y = np.float32(np.float64(g[i]) * d)
        out[i] = _NAN32 if y != y else y


_GELU_TABLES = []   # [gelu's table, its derivative's]: (2, 65536) each, rows bfloat16 and float16, made at first use


def _tables():
    """Exact GELU (float32) and its derivative (float64) at every bfloat16 and float16 value, by the plain path's
    NumPy (no kernels to compile); empty without the JIT."""
    if not JIT:
        return np.empty((2, 0), _F32), np.empty((2, 0))
    if not _GELU_TABLES:
        codes = np.arange(1 << 16, dtype=np.uint32)
        values = np.stack([(codes << 16).view(_F32), codes.astype(np.uint16).view(np.float16).astype(_F32)])
        with np.errstate(all="ignore"):
            _GELU_TABLES[:] = PLAIN.gelu(np, values, "none"), _ops._gelu_derivative(np, values)
    return _GELU_TABLES[0], _GELU_TABLES[1]


@_njit_numpy
def _tanh_arg(x, u):
    """u = the tanh form's argument, sqrt(2/pi) * (x + 0.044715 x**3), in float32 as _ops.gelu computes it."""
    for i in range(x.size):
        v = x[i]
        u[i] = _TANH_C * (v + _TANH_A * v * v * v)


@_njit_numpy
def _gelu_tanh_kernel(x, t, out):
    """out = 0.5 x (1 + t) for t = tanh of _tanh_arg."""
    for i in range(x.size):
        y = _HALF32 * x[i] * (_ONE32 + t[i])
        out[i] = _NAN32 if y != y else y


@_njit_numpy
def _gelu_tanh_grad_kernel(g, x, t, out):
    """out = _ops.gelu_grad's tanh form from t = tanh of _tanh_arg."""
    for i in range(x.size):
        v, w = x[i], t[i]
        y = g[i] * (_HALF32 * (_ONE32 + w) + _HALF32 * v * (_ONE32 - w * w) * _TANH_C * (_ONE32 + _TANH_3A * v * v))
        out[i] = _NAN32 if y != y else y


TANH_BLOCK = 1 << 14        # elements of the tanh form's argument at a time: NumPy's tanh in place, in the cache


def _gelu_ready(xp, *arrays):
    """Whether the GELU kernels serve: C-contiguous float32 NumPy arrays of one shape."""
    return _native(xp, *arrays) and all(a.dtype is _F32 and a.shape == arrays[0].shape for a in arrays)


def _tanh_form(kernel, x, *rest):
    """kernel(*rest, x, t, out) block by block, t = NumPy's float32 tanh of _tanh_arg(x) (the plain path's bits)."""
    out = np.empty(x.shape, _F32)
    flat, rest, o = x.reshape(-1), [a.reshape(-1) for a in rest], out.reshape(-1)
    t = np.empty(min(flat.size, TANH_BLOCK), _F32)
    for start in range(0, flat.size, TANH_BLOCK):
        block = slice(start, start + TANH_BLOCK)
        xb = flat[block]
        tb = t[:xb.size]
        _tanh_arg(xb, tb)
        np.tanh(tb, out=tb)
        kernel(*[a[block] for a in rest], xb, tb, o[block])
    return out


def gelu(xp, x, approximate):
    """_ops.gelu in one pass (the exact form) or around NumPy's tanh (the tanh form)."""
    if not _gelu_ready(xp, x):
        return PLAIN.gelu(xp, x, approximate)
    if approximate == "tanh":
        return _tanh_form(_gelu_tanh_kernel, x)
    out = np.empty(x.shape, _F32)
    xf, o, table = x.reshape(-1), out.reshape(-1), _tables()[0]
    in_parts(lambda lo, hi: _gelu_kernel(xf[lo:hi], o[lo:hi], table), o.size, 3 * o.size)
    return out


def gelu_grad(xp, g, x, approximate):
    """_ops.gelu_grad likewise."""
    if not _gelu_ready(xp, g, x):
        return PLAIN.gelu_grad(xp, g, x, approximate)
    if approximate == "tanh":
        return _tanh_form(_gelu_tanh_grad_kernel, x, g)
    out = np.empty(x.shape, _F32)
    gf, xf, o, table = g.reshape(-1), x.reshape(-1), out.reshape(-1), _tables()[1]
    in_parts(lambda lo, hi: _gelu_grad_kernel(gf[lo:hi], xf[lo:hi], o[lo:hi], table), o.size, 5 * o.size)
    return out


# -- LayerNorm over the last axis, a row at a time -----------------------------------------------------------------

def eight_sums(a, end):
    """The tree fold ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)) of eight partial sums of float32 a[:end]
    (end a multiple of 8, at least 8; a's memory contiguous): r_j = a[j] + a[j + 8] + ... in order."""
    r = a[:8].copy()
    for i in range(8, end, 8):
        r += a[i:i + 8]
    return ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))


@intrinsic
def _eight_sums(typingctx, a, end):
    """eight_sums in one vector of eight lanes (LLVM keeps eight scalar sums scalar)."""
    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        lanes, i64 = ir.VectorType(ir.FloatType(), 8), ir.IntType(64)
        acc = cgutils.alloca_once(builder, lanes)

        def load(i):
            return builder.load(builder.bitcast(builder.gep(data, [i]), lanes.as_pointer()), align=4)
        builder.store(load(ir.Constant(i64, 0)), acc)
        with cgutils.for_range_slice(builder, ir.Constant(i64, 8), args[1], ir.Constant(i64, 8), i64) as (i, _):
            builder.store(builder.fadd(builder.load(acc), load(i)), acc)
        v = builder.load(acc)
        r = [builder.extract_element(v, ir.Constant(ir.IntType(32), j)) for j in range(8)]
        add = builder.fadd
        return add(add(add(r[0], r[1]), add(r[2], r[3])), add(add(r[4], r[5]), add(r[6], r[7])))
    if isinstance(a, numba.types.Array) and a.dtype == numba.float32 and a.ndim == 1:
        return numba.float32(a, numba.int64), codegen


@overload(eight_sums)
def _eight_sums_jit(a, end):
    return lambda a, end: _eight_sums(a, end)


@_njit_numpy
def _block(a):
    """numpy's pairwise_sum of contiguous float32 a (at most 128 elements): below 8 one by one; else eight partial
    sums, folded in a tree, then the rest one by one."""
    n = a.size
    if n < 8:
        s = np.float32(0)
        for i in range(n):
            s += a[i]
        return s
    end = n - n % 8
    s = eight_sums(a, end)
    for i in range(end, n):
        s += a[i]
    return s


@functools.partial(_njit_numpy, inline="always")
def _split(n):
    """Where numpy's pairwise_sum splits n (above 128): half of it, down to a multiple of 8."""
    return n // 2 - (n // 2) % 8


@functools.partial(_njit_numpy, inline="always")
def _pairwise1(a, lo, n):
    """_pairwise of a[lo:lo + n] where it splits at most one level deep."""
    if n <= 128:
        return _block(a[lo:lo + n])
    h = _split(n)
    return _block(a[lo:lo + h]) + _block(a[lo + h:lo + n])


@functools.partial(_njit_numpy, inline="always")
def _pairwise2(a, lo, n):
    """_pairwise of a[lo:lo + n] where it splits at most two levels deep."""
    if n <= 128:
        return _block(a[lo:lo + n])
    h = _split(n)
    return _pairwise1(a, lo, h) + _pairwise1(a, lo + h, n - h)


@functools.partial(_njit_numpy, inline="always")
def _pairwise3(a, lo, n):
    """_pairwise of a[lo:lo + n] where it splits at most three levels deep."""
    if n <= 128:
        return _block(a[lo:lo + n])
    h = _split(n)
    return _pairwise2(a, lo, h) + _pairwise2(a, lo + h, n - h)


@_njit_numpy
def _pairwise(a, lo, n, frames, sums):
    """NumPy's pairwise sum of float32 a[lo:lo + n] (numpy's pairwise_sum, as add.reduce runs it over a contiguous
    axis): blocks of at most 128 (_block), above that the sum of the two halves', split at a multiple of 8. Up to
    three levels of splits by the nested _pairwise3 (the right half is never the smaller, so its splits count the
    levels); more by a stack of frames (lo, n, halves done) and one of sums, (64, 3) int64 and 64 float32 arrays
    the caller lends: Numba's cache cannot hold a recursive function."""
    m, levels = n, 0
    while m > 128:
        m, levels = m - _split(m), levels + 1
    if levels <= 3:     # the stack costs a LayerNorm row of 256 about as much as its two blocks' sums do
        return _pairwise3(a, lo, n)
    frames[0, 0], frames[0, 1], frames[0, 2] = lo, n, 0
    depth, held = 1, 0
    while depth:
        f = frames[depth - 1]
        start, size, done = f[0], f[1], f[2]
        half = _split(size)
        if size <= 128:
            sums[held] = _block(a[start:start + size])
            held += 1
            depth -= 1
        elif done < 2:              # the left half, then the right half
            f[2] = done + 1
            frames[depth, 0], frames[depth, 1], frames[depth, 2] = (start, half, 0) if done == 0 else \
                (start + half, size - half, 0)
            depth += 1
        else:
            sums[held - 2] = sums[held - 2] + sums[held - 1]
            held -= 1
            depth -= 1
    return sums[0]


@_njit_numpy
def _stacks():
    """The stacks _pairwise borrows."""
    return np.empty((64, 3), np.int64), np.empty(64, np.float32)


@_njit_numpy
def _mean(a, n, stacks):
    """NumPy's float32 mean of a[:n]: its sum (the reduction starts from +0) divided by n."""
    return (np.float32(0) + _pairwise(a, 0, n, stacks[0], stacks[1])) / np.float32(n)


@_njit_numpy
def _row_stats(row, eps, d, stacks):
    """The mean and 1 / sqrt(var + eps) of a row as _ops._normalized computes them (d: scratch of its length)."""
    n = row.size
    mean = _mean(row, n, stacks)
    for i in range(n):
        t = row[i] - mean
        d[i] = t * t
    var = _mean(d, n, stacks)
    return mean, np.float32(1) / np.sqrt(var + eps)


@_njit_numpy
def _layer_norm_kernel(x, w, b, eps, out):
    """out = _ops.layer_norm of (rows, n) float32 x over its last axis (w: ones, b: -0s where the op has none:
    y * 1 and y + -0 are y, bit for bit; NaNs the positive quiet one)."""
    d, stacks = np.empty(x.shape[1], np.float32), _stacks()
    for r in range(x.shape[0]):
        row, o = x[r], out[r]
        mean, rstd = _row_stats(row, eps, d, stacks)
        for i in range(row.size):
            y = (row[i] - mean) * rstd * w[i] + b[i]
            o[i] = _NAN32 if y != y else y


@_njit_numpy
def _layer_norm_grad_kernel(g, x, w, eps, out, stats):
    """out = _ops.layer_norm_grad for (rows, n) float32 g and x (w: ones where the op has none); each row's mean
    and 1 / sqrt(var + eps) into the (rows, 2) float32 stats."""
    n = x.shape[1]
    d, xhat, gh, stacks = np.empty(n, np.float32), np.empty(n, np.float32), np.empty(n, np.float32), _stacks()
    for r in range(x.shape[0]):
        row, gr, o = x[r], g[r], out[r]
        mean, rstd = _row_stats(row, eps, d, stacks)
        stats[r, 0], stats[r, 1] = mean, rstd
        for i in range(n):
            xhat[i] = (row[i] - mean) * rstd
            gh[i] = gr[i] * w[i]
        m1 = _mean(gh, n, stacks)
        for i in range(n):
            d[i] = gh[i] * xhat[i]
        m2 = _mean(d, n, stacks)
        for i in range(n):
            y = rstd * ((gh[i] - m1) - xhat[i] * m2)
            o[i] = _NAN32 if y != y else y


@_njit_numpy
def _layer_norm_grad_w_kernel(g, x, eps, out, stats, known):
    """out = g * xhat for (rows, n) float32 g and x (known: stats holds the rows' statistics already, as
    _layer_norm_grad_kernel writes them)."""
    d, stacks = np.empty(x.shape[1], np.float32), _stacks()
    for r in range(x.shape[0]):
        row, gr, o = x[r], g[r], out[r]
        mean, rstd = (stats[r, 0], stats[r, 1]) if known else _row_stats(row, eps, d, stacks)
        for i in range(row.size):
            y = gr[i] * ((row[i] - mean) * rstd)
            o[i] = _NAN32 if y != y else y


def _rows(xp, normalized_ndim, x, *rest):
    """Whether the LayerNorm kernels serve: over the last axis, C-contiguous float32 NumPy arrays (the rest: of x's
    shape, of the last axis', or None)."""
    return (normalized_ndim == 1 and x.ndim >= 1 and x.size > 0 and _native(xp, x) and x.dtype is _F32
            and all(a is None or (_native(xp, a) and a.dtype is _F32 and a.shape in (x.shape, x.shape[-1:]))
                    for a in rest))


def _or(a, n, fill):
    return np.full(n, fill, _F32) if a is None else a


def layer_norm(xp, x, w, b, normalized_ndim, eps):
    """_ops.layer_norm a row at a time, in one pass over x."""
    if not _rows(xp, normalized_ndim, x, w, b):
        return PLAIN.layer_norm(xp, x, w, b, normalized_ndim, eps)
    n, out = x.shape[-1], np.empty(x.shape, _F32)
    rows, o, w, b = x.reshape(-1, n), out.reshape(-1, n), _or(w, n, 1), _or(b, n, -0.0)
    in_parts(lambda lo, hi: _layer_norm_kernel(rows[lo:hi], w, b, np.float32(eps), o[lo:hi]), len(o), 3 * out.size)
    return out


# What an input's gradient made that the weight's gradient of the same backward step (next, from the same g and x
# arrays: every step's g is a new one) reads instead of making again: per thread, (kind, g and x as weak references,
# eps, the value), taken once.
_LEFT = threading.local()


def _leave(kind, g, x, eps, value):
    _LEFT.value = (kind, weakref.ref(g), weakref.ref(x), eps, value)


def _take(kind, g, x, eps):
    """The value _leave(kind, g, x, eps, value) left, or None."""
    left, _LEFT.value = getattr(_LEFT, "value", None), None
    if left is not None and left[0] == kind and left[1]() is g and left[2]() is x and left[3] == eps:
        return left[4]
    return None


def layer_norm_grad(xp, g, x, w, normalized_ndim, eps):
    """_ops.layer_norm_grad likewise."""
    if not (_rows(xp, normalized_ndim, x, g, w) and g.shape == x.shape):
        return PLAIN.layer_norm_grad(xp, g, x, w, normalized_ndim, eps)
    n, out = x.shape[-1], np.empty(x.shape, _F32)
    gr, rows, o, w1 = g.reshape(-1, n), x.reshape(-1, n), out.reshape(-1, n), _or(w, n, 1)
    stats = np.empty((len(o), 2), _F32)
    in_parts(lambda lo, hi: _layer_norm_grad_kernel(gr[lo:hi], rows[lo:hi], w1, np.float32(eps), o[lo:hi],
                                                    stats[lo:hi]), len(o), 6 * out.size)
    if w is not None:
        _leave("layer norm", g, x, eps, stats)       # (the rows' statistics)
    return out


def layer_norm_grad_w(xp, g, x, normalized_ndim, eps):
    """_ops.layer_norm_grad_w likewise."""
    if not (_rows(xp, normalized_ndim, x, g) and g.shape == x.shape):
        return PLAIN.layer_norm_grad_w(xp, g, x, normalized_ndim, eps)
    n, out, stats = x.shape[-1], np.empty(x.shape, _F32), _take("layer norm", g, x, eps)
    known = stats is not None
    stats = stats if known else np.empty((0, 2), _F32)
    gr, rows, o = g.reshape(-1, n), x.reshape(-1, n), out.reshape(-1, n)
    in_parts(lambda lo, hi: _layer_norm_grad_w_kernel(gr[lo:hi], rows[lo:hi], np.float32(eps), o[lo:hi],
                                                      stats[lo:hi], known), len(o), 3 * out.size)
    return out


# -- embedding's gradient: rows of g added into their indices' rows in one pass ------------------------------------

@_njit_numpy
def _embedding_grad_kernel(idx, g, gw):
    """gw[idx[p]] += g[p] for p in order (np.add.at's order), for (V, D) gw and (P, D) g; False, with gw
    untouched, where an index is negative or past V (the plain path wraps or raises)."""
    for p in range(idx.size):
        if idx[p] < 0 or idx[p] >= gw.shape[0]:
            return False
    for p in range(idx.size):
        row, src = gw[idx[p]], g[p]
        for j in range(src.size):
            row[j] = src[j] + row[j]        # (np.add.at's operand order: which of two NaNs it keeps)
    return True


def embedding_grad(xp, g, shape, indices, padding_idx):
    """_ops.embedding_grad in one pass over g, for float32 g and integer indices picking rows of a 2-D w."""
    if (len(shape) == 2 and _native(xp, g) and g.dtype is _F32 and type(indices) is np.ndarray
            and indices.dtype.kind in "iu" and g.shape == indices.shape + (shape[1],)):
        gw = np.zeros(shape, _F32)
        if _embedding_grad_kernel(indices.reshape(-1).astype(np.int64, copy=False), g.reshape(-1, shape[1]), gw):
            if padding_idx is not None:
                gw[padding_idx] = 0
            return gw
    return PLAIN.embedding_grad(xp, g, shape, indices, padding_idx)


# -- the H100's native bfloat16 batch-norm backward: its staged channel sums in one pass ------------------------

@numba.njit(cache=True, nogil=True, inline="always")
def _first_nan(a, r):
    """r (a + b, a - b or a * b), but a, quieted, where a is NaN: of two NaNs, NumPy's loops keep the first
    operand's (x86's rule), and LLVM may swap the operands of an addition or a product (the quiet bit set on the
    bits: LLVM keeps no NaN's bits through arithmetic)."""
    return float_of(i32(bits_of(a) | i32(0x400000))) if a != a else r


@_njit
def _bn_sums_bf16(g, x, mu, product, tx, channels_last, out):
    """out[k] = _ops._kernel_channel_sum of channel k of g (or of g * (x - mu), float32 products) staged in
    bfloat16; g and x (N, C, L), or (N, L, C) where channels_last. Thread (y, z) of 512 adds rows y, y + ty, ...
    and within each the elements z, z + width, ... in that order (the grid's padding of +0 after them: adding +0
    commutes with the other additions), then each warp's shuffle-down sum and the first warp's over the 16 warps,
    every value a lane passes staged; all channels at once (innermost, so that the loops vectorise)."""
    n, c, length = (g.shape[0], g.shape[2], g.shape[1]) if channels_last else g.shape
    ty = 512 // tx
    width = tx if length > tx else length
    acc = np.full((ty, width, c), -0.0, np.float32)         # -0: x + -0 is x, as the first block's copy
    if channels_last:
        for r in range(n):
            for ll in range(length):
                a, gr, xr = acc[r % ty, ll % width], g[r, ll], x[r, ll]
                for k in range(c):
                    v = _first_nan(gr[k], gr[k] * _first_nan(xr[k], xr[k] - mu[k])) if product else gr[k]
                    a[k] = _first_nan(a[k], a[k] + _bf16_value(v))
    else:
        sums = np.full((ty, c, width), -0.0, np.float32)
        for r in range(n):
            for k in range(c):
                a, gr, xr, m = sums[r % ty, k], g[r, k], x[r, k], mu[k]
                for base in range(0, length, width):
                    for z in range(min(width, length - base)):
                        v = _first_nan(gr[base + z], gr[base + z] * _first_nan(xr[base + z], xr[base + z] - m)) \
                            if product else gr[base + z]
                        a[z] = _first_nan(a[z], a[z] + _bf16_value(v))
        for y in range(ty):
            for k in range(c):
                for z in range(width):
                    acc[y, z, k] = sums[y, k, z]
    pad_y = n % ty if n % ty else ty                        # rows, columns from here on got the grid's +0 padding
    pad_z = length % width if length > tx and length % width else width
    for y in range(ty):
        for z in range(width):
            if y >= pad_y or z >= pad_z:
                a = acc[y, z]
                for k in range(c):
                    a[k] = _first_nan(a[k], a[k] + np.float32(0.0))
    warps = tx // 32
    per_warp = np.empty((16, c), np.float32)
    for y in range(ty):
        for w in range(warps):                              # (the threads past the row hold +0)
            lanes = acc[y, 32 * w:min(32 * w + 32, width)]
            if lanes.shape[0]:
                _halving(lanes, 16)
                per_warp[y * warps + w] = lanes[0]
            else:
                per_warp[y * warps + w] = np.float32(0.0)
    _halving(per_warp, 8)
    out[:] = per_warp[0]
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _halving(v, half):
    """Lane 0 of a shuffle-down sum over v's rows and, past them up to 2 * half lanes, lanes holding +0 (every
    channel at once; those are not stored: a lane's +0 is added as such), halves from `half` down, each received
    value staged, in place."""
    valid = v.shape[0]
    while half:
        for lane in range(min(half, valid)):
            lo = v[lane]
            if lane + half < valid:
                hi = v[lane + half]
                for k in range(lo.size):
                    lo[k] = _first_nan(lo[k], lo[k] + _bf16_value(hi[k]))
            else:
                for k in range(lo.size):
                    lo[k] = _first_nan(lo[k], lo[k] + np.float32(0.0))
        valid = min(valid, half)
        half //= 2


def _by_channel(*arrays):
    """((N, C, ...) arrays as C-contiguous (N, C, L) ones, or as (N, L, C) ones where the first is channels-last
    in memory (a convolution's NHWC result), or one position each (both at once: the kernels' loops then run over
    the channels, not over runs one element long): views where they can be), and whether channels-last."""
    n, c = arrays[0].shape[:2]
    threes = [a.reshape(n, c, -1) for a in arrays]
    last = threes[0].transpose(0, 2, 1).flags.c_contiguous and (threes[0].shape[2] == 1
                                                                  or not threes[0].flags.c_contiguous)
    return [np.ascontiguousarray(a.transpose(0, 2, 1) if last else a) for a in threes], last


def _per_channel_f32(c, *arrays):
    """Whether each array is a float32 NumPy array of c values (a (1, C, 1, ...) factor)."""
    return all(type(a) is np.ndarray and a.dtype is _F32 and a.size == c for a in arrays)


def kernel_channel_sums(xp, g, x=None, mu=None):
    """The native batch norm's staged channel sums in bfloat16 in one pass, no temporaries (no monitor watching:
    a monitor counts each staged rounding)."""
    if type(xp) is _compute.Staged and xp._fmt == bfloat16 and not STATE.monitors and type(g) is np.ndarray \
            and g.dtype is _F32 and g.ndim >= 2 and g.size and (x is None or (
                type(x) is np.ndarray and x.dtype is _F32 and x.shape == g.shape and _per_channel_f32(g.shape[1], mu))):
        c = g.shape[1]
        (g3, x3), last = _by_channel(g, g if x is None else x)
        m = np.zeros(c, _F32) if x is None else np.ascontiguousarray(mu.reshape(-1))
        tx = next((t for t in (32, 64, 128, 256) if g3.shape[2 - last] <= t), 512)
        return _bn_sums_bf16(g3, x3, m, x is not None, tx, last, np.empty(c, _F32))
    return PLAIN.kernel_channel_sums(xp, g, x, mu)


@numba.njit(cache=True, nogil=True, inline="always")
def _bn_dx(g, x, mu, proj, gmean, gscale):
    """(g - (x - mu) * proj - gmean) * gscale, each operation's NaN NumPy's."""
    t = _first_nan(x, x - mu)
    t = _first_nan(t, t * proj)
    t = _first_nan(g, g - t)
    t = _first_nan(t, t - gmean)
    return _first_nan(t, t * gscale)


@_njit
def _bn_input_grad_kernel(g, x, mu, proj, gmean, gscale, channels_last, out):
    """_ops.kernel_input_grad element by element, g, x and out (N, C, L), or (N, L, C) where channels_last."""
    if channels_last:
        for r in range(g.shape[0]):
            for ll in range(g.shape[1]):
                gr, xr, o = g[r, ll], x[r, ll], out[r, ll]
                for k in range(g.shape[2]):
                    o[k] = _bn_dx(gr[k], xr[k], mu[k], proj[k], gmean[k], gscale[k])
    else:
        for r in range(g.shape[0]):
            for k in range(g.shape[1]):
                gr, xr, o = g[r, k], x[r, k], out[r, k]
                m, p, gm, gs = mu[k], proj[k], gmean[k], gscale[k]
                for ll in range(g.shape[2]):
                    o[ll] = _bn_dx(gr[ll], xr[ll], m, p, gm, gs)
    return out


def kernel_input_grad(g, x, mu, proj_scale, grad_mean, grad_scale):
    """The native batch norm's input gradient in one pass, without its four full-size temporaries; in g's memory
    order (NCHW, or channels-last), as NumPy's arithmetic gives it."""
    if type(g) is type(x) is np.ndarray and g.dtype is x.dtype is _F32 and g.ndim >= 2 and g.shape == x.shape \
            and g.size and _per_channel_f32(g.shape[1], mu, proj_scale, grad_mean, grad_scale):
        (g3, x3), last = _by_channel(g, x)
        factors = [np.ascontiguousarray(a.reshape(-1)) for a in (mu, proj_scale, grad_mean, grad_scale)]
        out = _bn_input_grad_kernel(g3, x3, *factors, last, np.empty(g3.shape, _F32))
        return (out.transpose(0, 2, 1) if last else out).reshape(g.shape)
    return PLAIN.kernel_input_grad(g, x, mu, proj_scale, grad_mean, grad_scale)


# -- im2col in one pass --------------------------------------------------------------------------------------------

@_njit
def _im2col_kernel(x, cols, pt, pl, sh, sw, dh, dw):
    """cols[n, y, z, i, j, c] = x[n, y*sh + i*dh - pt, z*sw + j*dw - pl, c], 0 (+0) in the padding: x (N, H, W, C)
    of any strides, both as integer views (bits copied as they are)."""
    n, h, w, c = x.shape
    ho, wo, kh, kw = cols.shape[1:5]
    for a in range(n):
        for y in range(ho):
            for z in range(wo):
                for i in range(kh):
                    r = y * sh + i * dh - pt
                    for j in range(kw):
                        s = z * sw + j * dw - pl
                        if 0 <= r < h and 0 <= s < w:
                            for k in range(c):
                                cols[a, y, z, i, j, k] = x[a, r, s, k]
                        else:
                            for k in range(c):
                                cols[a, y, z, i, j, k] = 0
    return cols


def im2col(xp, x, last, kh, kw, pads, sh, sw, dh, dw):
    """_ops.im2col in one pass (no padded copy first) from 4-byte elements in runs of at least 8 channels, by batch
    items in parts; fewer channels, or channels apart in memory (each tap's short run costs the kernel more than
    NumPy's copy): the plain path's copy of the padded windows, in parts from SPLIT_MIN elements. A 1x1 kernel's
    unpadded stride-1 windows (the plain path's view of x, no copy) stay the plain path's."""
    xl = x if last else x.transpose(0, 2, 3, 1)
    if type(x) is not np.ndarray or x.dtype.itemsize != 4 or ((kh, kw, sh, sw) == (1, 1, 1, 1)
                                                               and not any(map(any, pads))):
        return PLAIN.im2col(xp, x, last, kh, kw, pads, sh, sw, dh, dw)
    n, h, w, c = xl.shape
    ho, wo = _ops._pool_size(h, kh, sh, pads[0], dh, False), _ops._pool_size(w, kw, sw, pads[1], dw, False)
    size = n * ho * wo * kh * kw * c
    if xl.strides[3] == 4 and c >= 8:
        cols = np.empty((n, ho, wo, kh, kw, c), x.dtype)
        xi, ci = xl.view(np.uint32), cols.view(np.uint32)
        in_parts(lambda lo, hi: _im2col_kernel(xi[lo:hi], ci[lo:hi], pads[0][0], pads[1][0], sh, sw, dh, dw), n,
                 size)
        return cols.reshape(n * ho * wo, -1)
    if THREADS < 2 or size < SPLIT_MIN:
        return PLAIN.im2col(xp, x, last, kh, kw, pads, sh, sw, dh, dw)
    win = _ops._windows(np, np.ascontiguousarray(xl), kh, kw, (sh, sw), pads, (dh, dw), last=True)
    win = win.transpose(0, 1, 2, 4, 5, 3)
    cols = np.empty(win.shape, x.dtype)

    def part(lo, hi):       # (NumPy lets the GIL go for a copy)
        cols[lo:hi] = win[lo:hi]
    in_parts(part, n, size)
    return cols.reshape(n * ho * wo, -1)


# -- a convolution's bias, ReLU: elementwise passes in parts ------------------------------------------------------

@_njit
def _add_bias_kernel(out, b):
    """out[m, o] += b[o] in float32, a NaN as NumPy's loop passes it (out's, quieted, before b's)."""
    for m in range(out.shape[0]):
        for o in range(out.shape[1]):
            out[m, o] = _first_nan(out[m, o], out[m, o] + b[o])


def add_bias(xp, out, b):
    """_ops.add_bias for float32 NumPy arrays (out C-contiguous) from 2**15 elements (NumPy's broadcast add: 0.98
    ms at 65536x32, the kernel 0.23), in parts by rows from SPLIT_MIN; xp may be a staged op's namespace (the cuda
    float16 convolution's: the bias goes into its rounded sums), which this array math does not read."""
    if _native(np, out) and type(b) is np.ndarray and out.dtype is _F32 and b.dtype == _F32 and b.ndim == 1 \
            and out.ndim >= 1 and b.shape[0] == out.shape[-1] and out.size >= 1 << 15:
        rows, bias = out.reshape(-1, b.shape[0]), np.ascontiguousarray(b)
        in_parts(lambda lo, hi: _add_bias_kernel(rows[lo:hi], bias), len(rows), out.size)
        return out
    return PLAIN.add_bias(xp, out, b)


def _each_in_parts(kernel, x, *scalars):
    """kernel(x, *scalars, out) over flat float32 arrays in x's memory order, in parts: out shaped as x, or None
    where x's memory is in no one order."""
    def whole(base):
        out = np.empty(base.shape, _F32)
        xf, of = base.reshape(-1), out.reshape(-1)
        in_parts(lambda lo, hi: kernel(xf[lo:hi], *scalars, of[lo:hi]), of.size, of.size)
        return out
    return _in_memory_order(whole, x)


@_njit
def _relu_kernel(x, out):
    """out = max(x, 0) on flat float32 arrays: x where x > 0 or NaN (its bits as they are), else +0."""
    for i in range(x.size):
        v = x[i]
        out[i] = v if v > 0 or v != v else np.float32(0)


def relu(xp, x):
    """_ops.relu for float32 NumPy arrays in memory order (C or a convolution's NCHW view of channels-last data)
    from 2**15 elements (2M: NumPy's maximum 1.34 ms, the kernel 0.95), in parts from SPLIT_MIN."""
    out = None
    if xp is np and type(x) is np.ndarray and x.dtype is _F32 and x.size >= 1 << 15:
        out = _each_in_parts(_relu_kernel, x)
    return PLAIN.relu(xp, x) if out is None else out


@_njit
def _masked_between_kernel(x, g, lo, hi, upper, out):
    """out = g where lo < x (and x < hi where `upper`), else 0, g and out as integer views (bits kept)."""
    for i in range(x.size):
        v = x[i]
        out[i] = g[i] if v > lo and (not upper or v < hi) else 0


def _bound(v):
    """v as a float32 where it is one exactly (NumPy compares and clamps a float32 array with float32(v)), else
    None."""
    return np.float32(v) if isinstance(v, (int, float)) and float(np.float32(v)) == v else None


def masked_between(xp, g, x, lo, hi=None):
    """_ops.masked_between in one pass (no boolean masks) over float32 x and g in one memory order, from 2**15
    elements, in parts from SPLIT_MIN."""
    lo32, hi32 = _bound(lo), np.float32(0) if hi is None else _bound(hi)
    if xp is np and lo32 is not None and hi32 is not None and type(x) is type(g) is np.ndarray \
            and x.dtype is g.dtype is _F32 and x.shape == g.shape and x.size >= 1 << 15:
        shared = _shared_order(x, g)
        if shared:
            (xb, gb), back = shared
            out = np.empty(xb.shape, np.int32)
            xf, gf, of = xb.reshape(-1), gb.view(np.int32).reshape(-1), out.reshape(-1)
            in_parts(lambda lo_, hi_: _masked_between_kernel(xf[lo_:hi_], gf[lo_:hi_], lo32, hi32, hi is not None,
                                                             of[lo_:hi_]), of.size, of.size)
            return out.view(_F32).transpose(back)
    return PLAIN.masked_between(xp, g, x, lo, hi)


@_njit
def _clip_kernel(x, lo, hi, out):
    """NumPy's clip of float32: max(x, lo) then min(.., hi), each keeping x where equal, a NaN as it is."""
    for i in range(x.size):
        v = x[i]
        if v == v:
            v = v if v >= lo else lo
            v = v if v <= hi else hi
        out[i] = v


def clip(xp, x, lo, hi):
    """_ops.clip in one pass for float32 x in memory order and float32 bounds, from 2**15 elements, in parts from
    SPLIT_MIN."""
    lo32, hi32 = _bound(lo), _bound(hi)
    out = None
    if xp is np and lo32 is not None and hi32 is not None and type(x) is np.ndarray and x.dtype is _F32 \
            and x.size >= 1 << 15:
        out = _each_in_parts(_clip_kernel, x, lo32, hi32)
    return PLAIN.clip(xp, x, lo, hi) if out is None else out


# -- a convolution's kernel copied into another layout, in parts (NumPy lets the GIL go while it copies) ----------

def _copy_in_parts(out, a, axis):
    """out[...] = a[...] (one shape), cut along `axis` in parts."""
    lead = (slice(None),) * axis

    def part(lo, hi):
        out[lead + (slice(lo, hi),)] = a[lead + (slice(lo, hi),)]
    in_parts(part, a.shape[axis], a.size)


def reshaped(a, shape):
    """_ops.reshaped: where NumPy would copy a of SPLIT_MIN elements or more, the copy in parts (along the first
    axis long enough to give each thread two)."""
    if type(a) is np.ndarray and a.size >= SPLIT_MIN and THREADS > 1 and not a.flags.c_contiguous:
        try:
            return a.reshape(shape, copy=False)
        except TypeError:           # (NumPy before 2.1: no copy argument)
            pass
        except ValueError:          # (a copy is needed)
            axis = next((i for i, n in enumerate(a.shape) if n >= 2 * THREADS), None)
            if axis is not None:
                out = np.empty(a.shape, a.dtype)
                _copy_in_parts(out, a, axis)
                return out.reshape(shape)
    return PLAIN.reshaped(a, shape)


# -- a convolution's bias gradient: _ops.column_sums' folds ------------------------------------------------------

@_njit
def _fold_flat(a, b, out):
    """out = a + b over flat float32 arrays, NumPy's NaN (the first operand's)."""
    for i in range(out.size):
        out[i] = _first_nan(a[i], a[i] + b[i])


@_njit
def _fold_down(flat, n, cols):
    """Fold the first n rows of `cols` values of flat in place down to one, as _ops.column_sums does."""
    while n > 1:
        h = n // 2
        m = h * cols
        for i in range(m):
            flat[i] = _first_nan(flat[i], flat[i] + flat[m + i])
        if n % 2:
            for c in range(m - cols, m):
                flat[c] = _first_nan(flat[c], flat[c] + flat[c + cols + m])
        n = h


def _fold_in_parts(src, dst, n, cols):
    """dst[:n // 2 rows] = src's n rows folded once (flat arrays; dst may be src), in parts; the odd row out added."""
    m = n // 2 * cols
    in_parts(lambda lo, hi: _fold_flat(src[lo:hi], src[m + lo:m + hi], dst[lo:hi]), m, m)
    if n % 2:
        dst[m - cols:m] += src[2 * m:2 * m + cols]
    return n // 2


def column_sums(xp, a):
    """_ops.column_sums of a float32 C-contiguous matrix from 2**15 elements: no temporaries, the folds of
    SPLIT_MIN elements and more by rows in parts, the rest in one kernel call."""
    if not (_native(xp, a) and a.dtype is _F32 and a.ndim == 2 and a.shape[0] >= 2 and a.size >= 1 << 15):
        return PLAIN.column_sums(xp, a)
    cols = a.shape[1]
    buf = np.empty(a.shape[0] // 2 * cols, _F32)
    n = _fold_in_parts(a.reshape(-1), buf, a.shape[0], cols)
    while n > 1 and THREADS > 1 and n // 2 * cols >= SPLIT_MIN:
        n = _fold_in_parts(buf, buf, n, cols)
    _fold_down(buf, n, cols)
    return np.sum(buf[:cols].reshape(1, cols), axis=0)


# -- float32 batch norm by the batch's statistics: a pass for each sum and one for the output ----------------------
# NumPy sums a channels-last array over every axis but the channels row after row, each channel's sum from +0 in
# float32 (no pairwise sums: the channels are the inner loop); a mean divides that sum by the count in float64
# (an integer scalar) and rounds it to float32. The kernels below make the same sums in the same order, and every
# elementwise step in float32 with NumPy's NaN (_first_nan), so their bits are the plain path's (but for which of
# two NaNs a product passes: NumPy's loops pass either). All on one thread: cut by channels (the only cut that
# keeps the sums' order), each part's short rows lose the vector loop (a 32768x32 mean and variance: 0.36 ms
# whole, 3.3 ms in four parts on two threads); the output by rows in parts measured slower than whole on the
# shared 2-core VM (32x32x32x32 forward: 0.89 ms whole, 1.21 ms in parts; the input gradient 1.52 and 1.93).

@numba.njit(cache=True, nogil=True, inline="always")
def _mean_of(s, n):
    return np.float32(np.float64(s) / np.float64(n))


# Each pass runs first without _first_nan's care for NaN bits, then, only where a NaN came out, again with it: a NaN
# made anywhere in a pass reaches its sums (or the element's result), and without one both ways give the same bits.
# (The input gradient's sums over 8192x96: 933 -> 580 us, stats included; the careful pass stays for NaNs.)

@numba.njit(cache=True, nogil=True, inline="always")
def _nan(careful, a, r):
    return _first_nan(a, r) if careful else r


@numba.njit(cache=True, nogil=True, inline="always")
def _xhat(careful, x, mean, rstd):
    d = _nan(careful, x, x - mean)
    return _nan(careful, d, d * rstd)


@numba.njit(cache=True, nogil=True, inline="always")
def _gh(careful, g, w, c):
    return _nan(careful, g, g * w[c]) if w.size else g


@numba.njit(cache=True, nogil=True, inline="always")
def _any_nan(a):
    bad = False
    for i in range(a.size):
        bad |= a[i] != a[i]
    return bad


@numba.njit(cache=True, nogil=True, inline="always")
def _moments_pass(careful, x, mean, s):
    rows, cols = x.shape
    s[:] = 0
    for r in range(rows):
        for c in range(cols):
            s[c] = _nan(careful, s[c], s[c] + x[r, c])
    for c in range(cols):
        mean[c] = _mean_of(s[c], rows)
        s[c] = 0
    for r in range(rows):
        for c in range(cols):
            d = _nan(careful, x[r, c], x[r, c] - mean[c])
            s[c] = _nan(careful, s[c], s[c] + _nan(careful, d, d * d))


@_njit
def _column_moments(x, mean):
    """mean[c] of the columns of x (R, C) and the float32 sums of their squared deviations, in NumPy's order."""
    s = np.empty(x.shape[1], np.float32)
    _moments_pass(False, x, mean, s)
    if _any_nan(s):
        _moments_pass(True, x, mean, s)
    return s


@_njit
def _bn_stats_kernel(x, mean, var):
    """mean[c] and var[c] (biased) of the columns of x (R, C): _ops._normalized's."""
    s = _column_moments(x, mean)
    for c in range(x.shape[1]):
        var[c] = _mean_of(s[c], x.shape[0])


@_njit
def _rstd_kernel(var, eps, rstd):
    """rstd[c] = 1 / sqrt(var[c] + eps): _ops._normalized's."""
    for c in range(var.size):
        rstd[c] = np.float32(1) / np.sqrt(var[c] + eps)


@numba.njit(cache=True, nogil=True, inline="always")
def _forward_pass(careful, x, mean, rstd, w, b, out):
    bad = False
    for r in range(x.shape[0]):
        for c in range(x.shape[1]):
            h = _xhat(careful, x[r, c], mean[c], rstd[c])
            if w.size:
                h = _nan(careful, h, h * w[c])
            if b.size:
                h = _nan(careful, h, h + b[c])
            out[r, c] = h
            bad |= h != h
    return bad


@_njit
def _bn_forward_kernel(x, mean, rstd, w, b, out):
    """out = (x - mean) * rstd * w + b over x (R, C), per channel (w, b empty where None)."""
    if _forward_pass(False, x, mean, rstd, w, b, out):
        _forward_pass(True, x, mean, rstd, w, b, out)


@numba.njit(cache=True, nogil=True, inline="always")
def _grad_sums_pass(careful, g, x, w, mean, rstd, s1, s2, gw):
    s1[:] = 0
    s2[:] = 0
    gw[:] = 0
    for r in range(x.shape[0]):
        for c in range(x.shape[1]):
            xh = _xhat(careful, x[r, c], mean[c], rstd[c])
            gh = _gh(careful, g[r, c], w, c)
            s1[c] = _nan(careful, s1[c], s1[c] + gh)
            p = _nan(careful, gh, gh * xh)
            s2[c] = _nan(careful, s2[c], s2[c] + p)
            p = _nan(careful, g[r, c], g[r, c] * xh)
            gw[c] = _nan(careful, gw[c], gw[c] + p)


@_njit
def _bn_grad_sums_kernel(g, x, w, mean, rstd, m1, m2, gw):
    """The means of gh = g * w and of gh * xhat per column of x (R, C), and (the weight's gradient) the sums of
    g * xhat."""
    rows, cols = x.shape
    s1, s2 = np.empty(cols, np.float32), np.empty(cols, np.float32)
    _grad_sums_pass(False, g, x, w, mean, rstd, s1, s2, gw)
    if _any_nan(s1) or _any_nan(s2) or _any_nan(gw):
        _grad_sums_pass(True, g, x, w, mean, rstd, s1, s2, gw)
    for c in range(cols):
        m1[c], m2[c] = _mean_of(s1[c], rows), _mean_of(s2[c], rows)


@numba.njit(cache=True, nogil=True, inline="always")
def _grad_x_pass(careful, g, x, w, mean, rstd, m1, m2, out):
    bad = False
    for r in range(x.shape[0]):
        for c in range(x.shape[1]):
            gh = _gh(careful, g[r, c], w, c)
            xh = _xhat(careful, x[r, c], mean[c], rstd[c])
            t = _nan(careful, gh, gh - m1[c])
            u = _nan(careful, xh, xh * m2[c])
            t = _nan(careful, t, t - u)
            h = _nan(careful, rstd[c], rstd[c] * t)
            out[r, c] = h
            bad |= h != h
    return bad


@_njit
def _bn_grad_x_kernel(g, x, w, mean, rstd, m1, m2, out):
    """out = rstd * (gh - m1 - xhat * m2) over (R, C), _ops._norm_grad's steps."""
    if _grad_x_pass(False, g, x, w, mean, rstd, m1, m2, out):
        _grad_x_pass(True, g, x, w, mean, rstd, m1, m2, out)


@_njit
def _batch_stats_kernel(x, ddof, mean, var):
    """_layers.batch_stats over x (R, C): the mean as _bn_stats_kernel's, the sum of squared deviations divided by
    R - ddof in float32 (NumPy's division by a Python integer)."""
    s = _column_moments(x, mean)
    for c in range(x.shape[1]):
        var[c] = s[c] / np.float32(x.shape[0] - ddof)


@_njit
def _batch_stats64_kernel(x, ddof, mean, var):
    """_layers.batch_stats in float64 over float32 x (R, C): NumPy's sums of the widened rows in order, the mean
    and variance divided in float64; False (nothing decided) where some x is not finite (NaN payloads: the plain
    path's). The sums tell: below 2**24 rows of finite float32 they are finite, and an inf or NaN stays in them
    (so the loops over columns have no test, and vectorise)."""
    rows, cols = x.shape
    s = np.zeros(cols)
    for r in range(rows):
        for c in range(cols):
            s[c] += np.float64(x[r, c])
    for c in range(cols):
        if not np.isfinite(s[c]):
            return False
        mean[c] = s[c] / rows
        s[c] = 0.0
    for r in range(rows):
        for c in range(cols):
            d = np.float64(x[r, c]) - mean[c]
            s[c] += d * d
    for c in range(cols):
        var[c] = s[c] / (rows - ddof)
    return True


@_njit
def _channel_sums_kernel(a, out):
    _sums_pass(False, a, out)
    if _any_nan(out):
        _sums_pass(True, a, out)


@numba.njit(cache=True, nogil=True, inline="always")
def _sums_pass(careful, a, out):
    out[:] = 0
    for r in range(a.shape[0]):
        for c in range(a.shape[1]):
            out[c] = _nan(careful, out[c], out[c] + a[r, c])


def _channel_rows(*arrays):
    """The arrays as (R, C) row-major float32 matrices, channels (axis 1) last in memory, all alike, and the
    permutation back, where the kernels serve them (NumPy, float32, at least 2 channels: NumPy sums a single
    channel pairwise); else None."""
    a = arrays[0]
    if not (type(a) is np.ndarray and a.ndim >= 2 and a.shape[1] >= 2 and a.size >= 64):
        return None
    perm = (0, *range(2, a.ndim), 1)
    rows = []
    for v in arrays:
        if type(v) is not np.ndarray or v.dtype is not _F32 or v.shape != a.shape:
            return None
        base = v.transpose(perm)
        if not base.flags.c_contiguous:
            return None
        rows.append(base.reshape(-1, a.shape[1]))
    return rows, perm


def _vector(v, c):
    """w or b as a float32 (C,) array, empty where None; None where the kernels do not serve it."""
    if v is None:
        return np.empty(0, _F32)
    return v if type(v) is np.ndarray and v.dtype is _F32 and v.shape == (c,) else None


def _back(out, x, perm):
    """out (R, C) as an array of x's shape, in x's memory order."""
    return out.reshape(x.transpose(perm).shape).transpose(np.argsort(perm))


# The batch's float32 statistics of a batch norm's input, from its forward to its backward (PyTorch's saved mean
# and invstd): per thread, by the input array (a weak reference: forgotten with it), taken once. The backward's
# kernels would compute the same bits from the same array (MobileNetV2: 52 passes of two reads each a step).
_MOMENTS = threading.local()


def _remember(x, mean, var):
    memo = _MOMENTS.__dict__.setdefault("memo", {})
    memo[id(x)] = (weakref.ref(x, lambda _, key=id(x): memo.pop(key, None)), mean, var)


def _recall(x):
    """(mean, var) that _remember left for x, or None."""
    left = _MOMENTS.__dict__.get("memo", {}).pop(id(x), None)
    return left[1:] if left is not None and left[0]() is x else None


def _bn_stats(x, rows, eps):
    """(mean, rstd) of x's channels: remembered from its forward, else computed from its rows."""
    c = rows.shape[1]
    moments = _recall(x)
    if moments is None:
        moments = np.empty(c, _F32), np.empty(c, _F32)
        _bn_stats_kernel(rows, *moments)
    rstd = np.empty(c, _F32)
    _rstd_kernel(moments[1], np.float32(eps), rstd)
    return moments[0], rstd


def batch_norm_train(xp, x, w, b, eps):
    """_ops.batch_norm_train in three passes (no temporaries)."""
    served = _channel_rows(x) if xp is np else None
    c = x.shape[1] if served else 0
    wv, bv = (_vector(w, c), _vector(b, c)) if served else (None, None)
    if wv is None or bv is None:
        return PLAIN.batch_norm_train(xp, x, w, b, eps)
    (rows,), perm = served
    mean, var, rstd, out = np.empty(c, _F32), np.empty(c, _F32), np.empty(c, _F32), np.empty(rows.shape, _F32)
    _bn_stats_kernel(rows, mean, var)
    _remember(x, mean, var)
    _rstd_kernel(var, np.float32(eps), rstd)
    _bn_forward_kernel(rows, mean, rstd, wv, bv, out)
    return _back(out, x, perm)


def batch_norm_train_grad_x(xp, g, x, w, eps):
    """_ops.batch_norm_train_grad_x in four passes (no temporaries), g and x in one memory order."""
    served = _channel_rows(x, g) if xp is np else None
    c = x.shape[1] if served else 0
    wv = _vector(w, c) if served else None
    if wv is None:
        return PLAIN.batch_norm_train_grad_x(xp, g, x, w, eps)
    (xr, gr), perm = served
    mean, rstd = _bn_stats(x, xr, eps)
    m1, m2, gw = (np.empty(c, _F32) for _ in range(3))
    _bn_grad_sums_kernel(gr, xr, wv, mean, rstd, m1, m2, gw)
    _leave("batch norm", g, x, eps, gw)     # (the weight's gradient)
    out = np.empty(xr.shape, _F32)
    _bn_grad_x_kernel(gr, xr, wv, mean, rstd, m1, m2, out)
    return _back(out, x, perm)


def batch_norm_train_grad_w(xp, g, x, eps):
    """_ops.batch_norm_train_grad_w: the sums the input's gradient made just before from the same g and x, else
    that gradient's statistics and sums pass alone."""
    made = _take("batch norm", g, x, eps)
    if made is not None:
        return made
    served = _channel_rows(x, g) if xp is np else None
    if not served:
        return PLAIN.batch_norm_train_grad_w(xp, g, x, eps)
    (xr, gr), _ = served
    m1, m2, out = (np.empty(x.shape[1], _F32) for _ in range(3))
    _bn_grad_sums_kernel(gr, xr, np.empty(0, _F32), *_bn_stats(x, xr, eps), m1, m2, out)    # (without w)
    return out


def batch_stats(xp, data, ddof, dtype=np.float32):
    """_layers.batch_stats of channels-last float32 data in two passes: in float32 (a count below 2**24: exact in
    float32), or in float64 (PyTorch's running statistics) where every value is finite, read as float64 (no
    widened copy)."""
    served = _channel_rows(data) if xp is np else None
    if served and 0 < len(served[0][0]) - ddof < 1 << 24:
        c, rows = data.shape[1], served[0][0]
        if np.dtype(dtype) is _F32:
            left = _recall(data) if ddof == 0 else None     # (the forward's var: the same float32 quotient)
            if left is not None:
                return left
            mean, var = np.empty(c, _F32), np.empty(c, _F32)
            _batch_stats_kernel(rows, ddof, mean, var)
            return mean, var
        if np.dtype(dtype) is _F64:
            mean, var = np.empty(c), np.empty(c)
            if _batch_stats64_kernel(rows, ddof, mean, var):
                return mean, var
    return PLAIN.batch_stats(xp, data, ddof, dtype)


def channel_sums(xp, a):
    """_ops.channel_sums of channels-last float32 data in one pass."""
    served = _channel_rows(a) if xp is np else None
    if not served:
        return PLAIN.channel_sums(xp, a)
    out = np.empty(a.shape[1], _F32)
    _channel_sums_kernel(served[0][0], out)
    return out


# -- SGD's momentum step in one pass --------------------------------------------------------------------------------

@numba.njit(cache=True, nogil=True, inline="always")
def _fma32(a, b, c):
    """_ops.fma of three finite float32 numbers, operation for operation (its float64 sum rounded to odd), without
    branches: the loops over it vectorise."""
    p = np.float64(a) * np.float64(b)
    c64 = np.float64(c)
    s = p + c64
    t = s - p
    err = (p - (s - t)) + (c64 - t)
    bits = bits64_of(s)
    even_inexact = np.int64((err > 0.0) | (err < 0.0)) & ~bits & np.int64(1)
    toward = np.int64((err > 0.0) == (s > 0.0)) * 2 - 1
    return np.float32(float64_of(bits + even_inexact * toward))


@numba.njit(cache=True, nogil=True, inline="always")
def _finite(x):
    return abs(x) < np.inf


@_njit
def _fma_kernel(a, b, c, out):
    """out = _ops.fma(a, b, c) for flat float32 arrays of one size; False where an input is not finite (the plain
    path passes NaNs on as NumPy does: out is then to be dropped)."""
    finite = True
    for i in range(out.size):
        finite &= _finite(a[i]) & _finite(b[i]) & _finite(c[i])
        out[i] = _fma32(a[i], b[i], c[i])
    return finite


@_njit
def _fma_scaled_kernel(a, b, c, out):
    """The same with a a float32 number."""
    finite = _finite(a)
    for i in range(out.size):
        finite &= _finite(b[i]) & _finite(c[i])
        out[i] = _fma32(a, b[i], c[i])
    return finite


FMA = _MachineCode(_fma_kernel, _F32, _F32, _F32, _F32)
FMA_SCALED = _MachineCode(_fma_scaled_kernel, numba.float32, _F32, _F32, _F32)


def fma(xp, a, b, c):
    """_ops.fma in one pass, no float64 temporaries, where c is a float32 NumPy array and a and b are float32
    numbers or arrays of c's shape, the arrays laid out in one memory order (the exact product commutes: a number
    goes first). 2**20 elements, one thread: 1.3 ms, against 0.6 for NumPy's unfused c + a * b."""
    if type(b) is _F32.type:
        a, b = b, a
    scaled = type(a) is _F32.type
    arrays = (b, c) if scaled else (a, b, c)
    if xp is np and all(type(v) is np.ndarray and v.dtype is _F32 and v.shape == c.shape for v in arrays):
        shared = _ordered(*arrays)
        if shared is not None:
            bases, back = shared
            out = np.empty(bases[-1].shape, _F32)
            code = FMA_SCALED[1] if scaled else FMA[1]
            operands = ([a] if scaled else []) + [v.reshape(-1) for v in bases] + [out.reshape(-1)]
            finite = []
            in_parts(lambda lo, hi: finite.append(code(*(v if v is a else v[lo:hi] for v in operands))),
                     c.size, 3 * c.size)
            if all(finite):
                return out if back is None else out.transpose(back)
    return PLAIN.fma(xp, a, b, c)


@_njit
def _sgd_momentum_kernel(w, g, buf, lr, momentum, damped, nesterov, w_out, buf_out):
    """_optim.sgd_momentum over C-contiguous float32 arrays of one shape, its multiply-adds fused as there; False
    where an input is not finite (the plain path passes NaNs on as NumPy's loops do: the outputs are dropped)."""
    w, g, buf, w_out, buf_out = w.reshape(-1), g.reshape(-1), buf.reshape(-1), w_out.reshape(-1), buf_out.reshape(-1)
    finite = True
    for i in range(w.size):
        finite &= _finite(w[i]) & _finite(g[i]) & _finite(buf[i])
        b = _fma32(damped, g[i], buf[i] * momentum)
        step = _fma32(momentum, b, g[i]) if nesterov else b
        w_out[i] = _fma32(-lr, step, w[i])
        buf_out[i] = b
    return finite


SGD_MOMENTUM = _MachineCode(_sgd_momentum_kernel, _F32, _F32, _F32, *[numba.float32] * 3, numba.boolean, _F32, _F32)


def sgd_momentum(w, g, buf, lr, momentum, damped, nesterov):
    """_optim.sgd_momentum in one pass (not five over full-size temporaries), for float32 NumPy arrays of one
    shape; a small one through the kernel's machine code (10 elements: 5.0 us a call against NumPy's 6.0)."""
    shared = _ordered(w, g, buf) if w.dtype is g.dtype is buf.dtype is _F32 and w.shape == g.shape == buf.shape \
        else None
    if shared:
        (w_, g_, b_), back = shared
        w_out, buf_out = np.empty(w_.shape, _F32), np.empty(w_.shape, _F32)
        if w.size < SPLIT_MIN:          # (most parameters: no closure to make)
            finite = SGD_MOMENTUM[w.ndim](w_, g_, b_, lr, momentum, damped, nesterov, w_out, buf_out)
        else:
            w_, g_, b_, wo, bo = (a.reshape(-1) for a in (w_, g_, b_, w_out, buf_out))
            parts = []
            in_parts(lambda lo, hi: parts.append(SGD_MOMENTUM[1](w_[lo:hi], g_[lo:hi], b_[lo:hi], lr, momentum,
                                                                 damped, nesterov, wo[lo:hi], bo[lo:hi])),
                     w.size, 2 * w.size)
            finite = all(parts)
        if finite:
            return (w_out, buf_out) if back is None else (w_out.transpose(back), buf_out.transpose(back))
    return PLAIN.sgd_momentum(w, g, buf, lr, momentum, damped, nesterov)


# -- stacks of small products on both cores -------------------------------------------------------------------------

# OpenBLAS runs a GEMM of m * n * k up to 4 * 65536 on the calling thread alone (GEMM_MULTITHREAD_THRESHOLD times
# SMP_THRESHOLD_MIN); above, its threads' split changes the low bits, so that such items stay whole.
ONE_THREAD_GEMM = 1 << 18


def stacked_matmul(xp, x, y):
    """Stacks of small float32 products (attention's, per head) in parts of their first axis on the pool: each
    item BLAS's own call as NumPy makes it whole (the same shapes and strides: the same bits)."""
    if (_native(xp) and type(x) is type(y) is np.ndarray and x.dtype is y.dtype is _F32 and x.ndim >= 3
            and x.shape[:-2] == y.shape[:-2] and x.shape[-1] == y.shape[-2]):
        (m, k), n = x.shape[-2:], y.shape[-1]
        if m * n * k <= ONE_THREAD_GEMM:
            out = np.empty(x.shape[:-1] + (n,), _F32)
            in_parts(lambda lo, hi: np.matmul(x[lo:hi], y[lo:hi], out=out[lo:hi]), x.shape[0],
                     out.size * k // 4)    # (a multiply-add at about a quarter of a plain pass's element)
            return out
    return PLAIN.stacked_matmul(xp, x, y)


SPEED = {"quiet": quiet, **{fn.__name__: fn for fn in (fma, rounded, widened, values, round_result, round_gradient, masked,
                                                       col2im, tiles_max, tiles_max_grad, unscaled, times_in_place,
                                                       quantized, chain_matmul, depthwise, depthwise_grad_x,
                                                       depthwise_grad_w, gelu, gelu_grad, layer_norm, layer_norm_grad,
                                                       layer_norm_grad_w, embedding_grad,
                                                       kernel_channel_sums, kernel_input_grad, im2col, stacked_matmul,
                                                       sgd_momentum)}}
# a convolution's passes, batch norm in float32, the clamps
SPEED.update({fn.__name__: fn for fn in (add_bias, relu, batch_norm_train, batch_norm_train_grad_x,
                                         batch_norm_train_grad_w, channel_sums, batch_stats, masked_between, clip,
                                         column_sums, reshaped)})


def install():
    """Put this module's functions in their seams."""
    for name, fn in SPEED.items():
        if not hasattr(PLAIN, name):
            raise RuntimeError(f"minifp._speed: no seam named {name!r} in the plain path")
        setattr(SEAMS, name, fn)


if ENABLED:
    install()
