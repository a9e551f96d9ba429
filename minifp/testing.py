"""Helpers for other projects' numeric-behaviour tests: overflow/underflow assertions, gradient checks,
and Hypothesis strategies that draw values of a format."""
from __future__ import annotations

import math

import numpy as np

from . import _checks
from ._formats import as_format, finfo
from ._tensor import Tensor, tensor

__all__ = ["assert_no_overflow", "assert_no_underflow", "check_grads", "values"]


def _watched(fn, args, dtype, backward):
    from .numerics import watch
    inputs = [tensor(a, dtype=dtype, requires_grad=backward) if not isinstance(a, Tensor) and dtype is not None
              else a for a in args]
    with watch() as report:
        out = fn(*inputs)
        if backward:
            (out if out.size == 1 else out.sum()).backward()
    return report


def _callable(fn, where):
    if not callable(fn):
        raise TypeError(f"{where}: fn must be a callable (the computation to check), got {type(fn).__name__}")


def _check(kind, fn, args, dtype, backward):
    from .numerics import KINDS
    _callable(fn, f"assert_no_{kind}()")
    _checks.flag("backward", backward, where=f"assert_no_{kind}(): ")
    report = _watched(fn, args, dtype, backward)
    column = 3 + KINDS.index(kind)                    # rows: (layer, op, pass, overflow, underflow, ...)
    where = [f"{r[1]} ({r[2]}, layer {r[0]}): {r[column]}" for r in report.rows() if r[column]]
    if where:
        what = "overflowed" if kind == "overflow" else "underflowed to zero"
        raise AssertionError(f"{report.total(kind)} values {what}: " + "; ".join(where))
    return report


def assert_no_overflow(fn, *args, dtype=None, backward=False):
    """Run fn(*args) (array args made tensors of `dtype`) and fail if any rounding overflowed.

    backward=True also runs backward from the output (summed if not scalar). Returns the report.
    """
    return _check("overflow", fn, args, dtype, backward)


def assert_no_underflow(fn, *args, dtype=None, backward=False):
    """Run fn(*args) and fail if any nonzero value rounded to zero (forward, and backward if asked)."""
    return _check("underflow", fn, args, dtype, backward)


def values(fmt, allow_nan=False, allow_infinity=False, allow_subnormal=True, min_value=None, max_value=None):
    """A Hypothesis strategy drawing exact values (Python floats) of `fmt`, edges and subnormals included."""
    from hypothesis import strategies as st
    fmt = as_format(fmt, "values(): fmt")
    fi = finfo(fmt)
    edges = [0.0, -0.0, fi.max, -fi.max, fi.tiny, -fi.tiny, fi.smallest_subnormal, -fi.smallest_subnormal, 1.0]
    if allow_infinity:
        edges += [math.inf, -math.inf]

    def ok(v):
        if np.isnan(v):
            return allow_nan
        if np.isinf(v):
            return allow_infinity
        if not allow_subnormal and 0 < abs(v) < fi.tiny:
            return False
        return (min_value is None or v >= min_value) and (max_value is None or v <= max_value)

    # Edges are candidates, kept only where the format holds them (e8m0 has no zero and no sign, fnuz no -0, a
    # fixed-point format may not reach 1.0). Codes decode to the format's values or its NaN, but a fnuz format
    # without subnormals decodes its flushed negative codes to -0: checked too.
    codes = st.integers(0, (1 << fmt.bits) - 1).map(lambda c: float(fmt.decode(c)))
    return st.one_of(st.sampled_from([e for e in edges if _holds(fmt, e) and ok(e)]),
                     codes.filter(lambda v: ok(v) and (math.isnan(v) or _holds(fmt, v))))


def _holds(fmt, v):
    """Whether `fmt` has the number v (inf included, the sign of zero too), from its widths alone: positive
    values are multiples of the spacing at v (2**-man_bits of v's binade, at least the subnormals' quantum)
    from the smallest value (the smallest normal without subnormals) to max."""
    if v < 0 or math.copysign(1.0, v) < 0:
        if not fmt.signed or (v == 0 and fmt.nan == "negzero"):
            return False
        v = -v
    if math.isinf(v):
        return fmt.infinities
    if v == 0:
        return fmt.man_bits > 0                # without mantissa bits, exponent field 0 is 2**-bias, not zero
    fi = finfo(fmt)
    spacing = 2.0 ** (max(math.frexp(v)[1] - 1, fmt.emin) - fmt.man_bits)
    return fi.smallest_subnormal <= v <= fi.max and v % spacing == 0


def check_grads(fn, *inputs, params=(), eps=1e-3, rtol=1e-2, atol=1e-2, seed=0):
    """Compare the gradients of sum(r * fn(*inputs)) by autodiff and by central differences.

    inputs: arrays or float32 tensors, all differentiated; params: tensors (a layer's parameters, say)
    read by fn, differentiated too. The engine computes in float32, hence the default tolerances.
    Raises AssertionError naming the first input or parameter whose gradients disagree.
    """
    _callable(fn, "check_grads()")
    _checks.number("eps", eps, 0, lo_open=True, where="check_grads(): ")
    for name, value in (("rtol", rtol), ("atol", atol)):
        _checks.number(name, value, 0, where="check_grads(): ")
    xs = [tensor(x.float32() if isinstance(x, Tensor) else np.asarray(x, np.float32), requires_grad=True)
          for x in inputs]
    out = fn(*xs)
    r = np.random.default_rng(seed).standard_normal(out.shape).astype(np.float32)
    for p in params:
        p.grad = None
    (out * tensor(r)).sum().backward()
    targets = [(f"input {i}", x) for i, x in enumerate(xs)] + [(p.name or f"param {i}", p)
                                                                 for i, p in enumerate(params)]
    for name, t in targets:
        analytic = t.grad.float32() if t.grad is not None else np.zeros(t.shape, np.float32)
        numeric = np.zeros(t.shape)
        base = t.float32().copy()
        for j in np.ndindex(t.shape):
            values = []
            for sign in (1, -1):
                moved = base.copy()
                moved[j] = base[j] + sign * eps
                t.assign(moved)
                values.append(float(np.sum(r.astype(np.float64) * fn(*xs).float32())))
            numeric[j] = (values[0] - values[1]) / (2 * eps)
        t.assign(base)
        if not np.allclose(analytic, numeric, rtol=rtol, atol=atol):
            worst = np.unravel_index(np.argmax(np.abs(analytic - numeric)), t.shape)
            raise AssertionError(f"gradient of {name} disagrees at {worst}: autodiff {analytic[worst]:.6g}, "
                                 f"finite differences {numeric[worst]:.6g}")
