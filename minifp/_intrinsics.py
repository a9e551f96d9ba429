"""Bit casts and the CPU's own float16 conversions as Numba intrinsics: one LLVM instruction each, in registers.

Each is a plain NumPy function (what runs without the JIT) with a Numba overload whose body is one LLVM step.
The rounding, accumulation and tensor-core kernels read and write floats through them.
"""
from __future__ import annotations

import platform

import llvmlite.binding
import numba
import numpy as np
from llvmlite import ir
from numba.extending import intrinsic, overload

__all__ = ["JIT", "HARDWARE_HALF", "i32", "float_of", "bits_of", "half_of", "single_of", "float64_of", "bits64_of"]

JIT = not numba.config.DISABLE_JIT
i32 = np.int32

# LLVM compiles a float32 -> float16 conversion to one instruction where the target CPU has one (x86 F16C, 64-bit
# Arm), eight lanes at a time; elsewhere it would call a runtime helper. NUMBA_CPU_FEATURES, when set, is what Numba
# compiles for.
HARDWARE_HALF = platform.machine().lower() in ("aarch64", "arm64") or "+f16c" in (
    numba.config.CPU_FEATURES or llvmlite.binding.get_host_cpu_features().flatten()).split(",")


def float_of(i):
    """The float32 whose bits are the int32 i."""
    return np.int32(i).view(np.float32)


def bits_of(f):
    """The bits of the float32 f, as an int32."""
    return np.float32(f).view(np.int32)


def half_of(f):
    """The float16 bits of the float32 f, rounded to nearest-even (IEEE), as an int16."""
    with np.errstate(over="ignore"):
        return np.float32(f).astype(np.float16).view(np.int16)


def single_of(h):
    """The float32 value of the float16 bits h (a uint16)."""
    return np.uint16(h).view(np.float16).astype(np.float32)


def float64_of(i):
    """The float64 whose bits are the int64 i."""
    return np.int64(i).view(np.float64)


def bits64_of(f):
    """The bits of the float64 f, as an int64."""
    return np.float64(f).view(np.int64)


def _llvm(source, result, step):
    """A Numba overload whose body is one LLVM step, step(builder, value), from type `source` to `result`."""
    @intrinsic
    def op(typingctx, value):
        return result(source), lambda context, builder, sig, args: step(builder, args[0])

    def typer(value):
        if value == source:
            return lambda value: op(value)
    return typer


_f32, _f16, _i16, _i32, _f64, _i64 = ir.FloatType(), ir.HalfType(), ir.IntType(16), ir.IntType(32), ir.DoubleType(), \
    ir.IntType(64)
overload(float_of)(_llvm(numba.int32, numba.float32, lambda b, v: b.bitcast(v, _f32)))
overload(bits_of)(_llvm(numba.float32, numba.int32, lambda b, v: b.bitcast(v, _i32)))
overload(half_of)(_llvm(numba.float32, numba.int16, lambda b, v: b.bitcast(b.fptrunc(v, _f16), _i16)))
overload(single_of)(_llvm(numba.uint16, numba.float32, lambda b, v: b.fpext(b.bitcast(v, _f16), _f32)))
overload(float64_of)(_llvm(numba.int64, numba.float64, lambda b, v: b.bitcast(v, _f64)))
overload(bits64_of)(_llvm(numba.float64, numba.int64, lambda b, v: b.bitcast(v, _i64)))
