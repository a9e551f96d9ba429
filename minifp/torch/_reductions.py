"""Reductions and products with PyTorch's names: all/any, sum/mean over dim lists, prod, nansum, nanmean,
logsumexp, var_mean, aminmax, amax/amin, max/min with dim, quantiles, cov, histograms, trapezoids, renorm, norms and
distances; dot, mv, addmm and friends, einsum, tensordot, kron, trace, cross. Attached as Tensor methods at the end.

Products go through the engine's matmul (float32 accumulation, one rounding; addmm's default through its linear op,
the input joining the float32 sum); einsum and tensordot are permutes and reshapes around one matmul. Reductions
that compute new values are engine ops (prod, logsumexp); selections (quantiles' neighbours, max / min with dim)
gather the input's own values; the rest compose engine ops as PyTorch's own decompositions do (nanmean is
nansum / count, as in ATen).
"""
from __future__ import annotations

import builtins
import numbers

import numpy as np

from ..engine import apply, made_like, storage, Tensor as _EngineTensor, to_numpy
from . import linalg as _linalg
from ._tensor import (Tensor, return_type, _dim, _dims, _numpy_result, _type_name, check_same_dtype, format_of,
                      matmul, tensor)

__all__ = ["all", "any", "prod", "nansum", "nanmean", "logsumexp", "var_mean", "std_mean", "aminmax", "amax", "amin",
           "quantile", "nanquantile", "cov", "corrcoef", "histc", "histogram", "histogramdd", "trapezoid", "trapz",
           "cumulative_trapezoid", "renorm", "norm", "dist", "dot", "vdot", "inner", "outer", "ger", "mv",
           "addmm", "addmv", "addbmm", "baddbmm", "addr", "einsum", "tensordot", "kron", "trace", "cross"]

_minmax = return_type("aminmax", ("min", "max"))
_hist = return_type("histogram", ("hist", "bin_edges"))


def _axes(dim, ndim):
    """dim= as the engine's axis=: None (every dim) for None, an empty list or a 0-dim tensor, as PyTorch reads
    them; else the normalised dims (checked against ndim)."""
    if dim is None or isinstance(dim, (tuple, list)) and len(dim) == 0:
        return None
    axes = _dims(dim, ndim)
    return None if ndim == 0 else axes


def _values(x):
    return to_numpy(x.float32() if x.fmt is not None else storage(x))


# -- logical and plain reductions ------------------------------------------------------------------------------


def _logical_reduction(fn):
    def reduce(input, dim=None, keepdim=False):
        out = fn(_values(input) != 0, axis=_axes(dim, input.ndim), keepdims=keepdim and input.ndim > 0)
        return made_like(input, np.asarray(out, np.bool_), None)
    reduce.__name__ = reduce.__qualname__ = fn.__name__
    reduce.__doc__ = f"Whether {fn.__name__} elements are nonzero over dim (all by default), a bool tensor."
    return reduce


all, any = _logical_reduction(np.all), _logical_reduction(np.any)


def _sum(self, dim=None, keepdim=False, dtype=None, *, axis=None):
    """Sum over dim (every dim for None or an empty list; `axis` NumPy's name for it, as PyTorch takes it); integer
    and bool tensors sum into int64."""
    dim = axis if dim is None else dim
    x = self.to(dtype) if dtype is not None else self
    axes = _axes(dim, x.ndim)
    if x.fmt is None:
        return made_like(x, np.asarray(storage(x).sum(axis=axes, keepdims=keepdim), np.int64), None)
    return apply("sum", x, axis=axes, keepdims=keepdim)


def _mean(self, dim=None, keepdim=False, dtype=None, *, axis=None):
    dim = axis if dim is None else dim
    if dtype is not None and format_of(dtype) is None:
        raise RuntimeError(f"mean(): could not infer output dtype. Optional dtype must be either a floating point "
                           f"or complex dtype. Got: {str(dtype)[6:].capitalize()}")
    if self.fmt is None and dtype is None:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {_type_name(self).replace('Tensor', '')}")
    x = self.to(dtype) if dtype is not None else self
    return apply("mean", x, axis=_axes(dim, x.ndim), keepdims=keepdim)


def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product over dim (all by default), in float32 and rounded once; zeros get their exact gradients."""
    x = input.to(dtype) if dtype is not None else input
    axes = None if dim is None else _axes(_dim(dim, x.ndim), x.ndim)
    if x.fmt is None:
        return made_like(x, np.asarray(np.prod(storage(x), axis=axes, keepdims=keepdim), np.int64), None)
    return apply("prod", x, axis=axes, keepdims=keepdim)


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over dim treating NaN as zero."""
    x = input.to(dtype) if dtype is not None else input
    if x.fmt is None:           # (integers hold no NaN)
        return _sum(x, dim, keepdim)
    return _sum(apply("where", x.isnan(), tensor(0.0, dtype=x.dtype), x), dim, keepdim)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over dim of the non-NaN elements: nansum / their count, as ATen computes it."""
    x = input.to(dtype) if dtype is not None else input
    count = _sum(~x.isnan(), dim, keepdim)
    return nansum(x, dim, keepdim) / count.to(x.dtype)


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(input))) over dim, shifted by the max for range, in float32 and rounded once."""
    x = input if input.fmt is not None else input.to(tensor(0.0).dtype)
    return apply("logsumexp", x, axis=_axes(dim, x.ndim), keepdims=keepdim)


def _correction(unbiased, correction):
    return correction if correction is not None else (1 if unbiased is None or unbiased else 0)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(variance, mean) over dim."""
    if isinstance(dim, bool):                   # var_mean(input, unbiased)
        dim, unbiased = None, dim
    axes = _axes(dim, input.ndim)
    return (apply("var", input, axis=axes, correction=_correction(unbiased, correction), keepdims=keepdim),
            apply("mean", input, axis=axes, keepdims=keepdim))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(standard deviation, mean) over dim."""
    v, m = var_mean(input, dim, unbiased, keepdim, correction=correction)
    return v.sqrt(), m


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) over dim (all by default)."""
    if dim is None and input.numel() == 0 or dim is not None and input.ndim and input.shape[_dim(dim, input.ndim)] == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    axes = _axes(dim, input.ndim)
    keep = keepdim and input.ndim > 0
    return _minmax(-apply("max", -input, axis=axes, keepdims=keep), apply("max", input, axis=axes, keepdims=keep))


def _reduced_dims(input, dim, name):
    """dim of amax / amin as engine axes, with PyTorch's checks (no repeats, no empty dim reduced)."""
    dims = [] if dim is None else list(dim) if isinstance(dim, (tuple, list)) else [dim]
    dims = [_dim(d, input.ndim) for d in dims]
    if len(set(dims)) < len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    for d in dims or range(input.ndim):
        if input.ndim and input.shape[d] == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    return None if not dims or input.ndim == 0 else tuple(dims)


def amax(input, dim=(), keepdim=False):
    """The largest values over dim (all dims when empty); ties share the gradient."""
    axis, keep = _reduced_dims(input, dim, "amax"), keepdim and input.ndim > 0
    if input.fmt is None:       # integers and bools keep their dtype
        return _numpy_result(lambda x: np.amax(x, axis=axis, keepdims=keep), input)
    return apply("max", input, axis=axis, keepdims=keep)


def amin(input, dim=(), keepdim=False):
    """The smallest values over dim (all dims when empty); ties share the gradient."""
    axis, keep = _reduced_dims(input, dim, "amin"), keepdim and input.ndim > 0
    if input.fmt is None:
        return _numpy_result(lambda x: np.amin(x, axis=axis, keepdims=keep), input)
    return -apply("max", -input, axis=axis, keepdims=keep)


def _max_or_min(method, arg, name):
    """Tensor.max / min: with dim, (values, indices) whose values are gathered at the indices, so that the
    gradient goes to that one element as in PyTorch (amax and max() share it among ties instead)."""
    def reduce(self, dim=None, keepdim=False):
        if dim is None or isinstance(dim, _EngineTensor):
            return method(self, dim, keepdim)
        from ._methods import gather            # (imported here: _methods is loaded after this module's tables)
        x = self.reshape(1) if self.ndim == 0 else self
        d = _dim(dim, self.ndim)
        if x.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
        indices = arg(x, d, True)
        values = gather(x, d, indices)
        if not keepdim or self.ndim == 0:
            values, indices = values.squeeze(d), indices.squeeze(d)
        return result(values, indices)
    result = return_type(name)
    return reduce


def _arg_reduction(method):
    def reduce(self, dim=None, keepdim=False):
        if dim is not None and self.ndim == 0:
            _dim(dim, 0)
            return method(self.reshape(1), 0, False).reshape(())
        if dim is None and keepdim:
            return method(self, None, False).reshape((1,) * self.ndim)
        return method(self, dim, keepdim)
    return reduce


# -- quantiles ---------------------------------------------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, name):
    """PyTorch's quantile: sort along dim (NaN last), pick ranks q * (n - 1) and interpolate between neighbours."""
    if input.fmt is None:
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                         f"Got {interpolation}")
    qs = _values(q).astype(np.float64) if isinstance(q, _EngineTensor) else np.asarray(q, np.float64)
    if qs.ndim > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if not np.all((qs >= 0) & (qs <= 1)):
        raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {float(qs.reshape(-1)[0]):g}")
    x = input.reshape(-1) if dim is None else input
    d = 0 if x.ndim == 0 else _dim(dim if dim is not None else 0, x.ndim)
    x = x.reshape(1) if x.ndim == 0 else x
    from ._methods import gather, sort         # (imported here: _methods is loaded after this face's tables)
    s = sort(x, d).values
    nan = np.isnan(_values(x)).sum(axis=d, keepdims=True)
    n = x.shape[d]
    valid = n - nan if ignore_nan else np.where(nan > 0, 1, n)
    outs = []
    for qv in qs.reshape(-1):
        rank = qv * (valid - 1)
        rank = {"lower": np.floor, "higher": np.ceil, "nearest": np.round}.get(interpolation, lambda r: r)(rank)
        rank = np.where((valid == 0) | (nan > 0) & (not ignore_nan), n - 1, np.maximum(rank, 0))
        lo, hi = np.floor(rank).astype(np.int64), np.ceil(rank).astype(np.int64)
        below = gather(s, d, made_like(s, lo, None))
        if interpolation in ("linear", "midpoint"):
            w = np.full(rank.shape, 0.5) if interpolation == "midpoint" else rank - lo
            above = gather(s, d, made_like(s, hi, None))
            below = below + (above - below) * tensor(w.astype(np.float32), dtype=s.dtype)
        outs.append(below if keepdim else below.squeeze(d))
    if keepdim and dim is None:
        outs = [o.reshape((1,) * input.ndim) for o in outs]
    elif input.ndim == 0 or not keepdim and dim is None:
        outs = [o.reshape(()) for o in outs]
    if isinstance(q, _EngineTensor) and qs.ndim == 1 or not isinstance(q, _EngineTensor) and np.ndim(q) == 1:
        return apply("concatenate", *(o.unsqueeze(0) for o in outs), axis=0)
    return outs[0]


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-th quantiles along dim (of all values when dim is None); NaN where a slice has a NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """quantile ignoring NaN (NaN only where a slice is all NaN)."""
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")


# -- distances and sums to a size -----------------------------------------------------------------------------------


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast)."""
    return _linalg.vector_norm(input - other, p)


def _sum_to_size(self, *size):
    """The sum of self down to `size`, which self must broadcast from (leading dims and dims of 1 summed)."""
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    lead = self.ndim - len(size)
    if lead < 0 or builtins.any(s != 1 and s != self.shape[lead + i] for i, s in enumerate(size)):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(self.shape)}}}.")
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size) if s == 1 and self.shape[lead + i] != 1)
    return self.sum(axes, keepdim=True).reshape(size) if axes else self



# -- covariance and histograms ------------------------------------------------------------------------------------


def _check_weights(w, name, n):
    if w is None:
        return
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with {w.ndim} "
                           f"dimensions")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the input "
                           f"but got {w.numel()} != {n}")
    if name == "fweights" and w.fmt is not None:
        raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                           f"{_type_name(w).replace('Tensor', '')} dtype")


def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the rows (variables) over the columns (observations), weighted as NumPy's cov."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    n = x.shape[1]
    _check_weights(fweights, "fweights", n)
    _check_weights(aweights, "aweights", n)
    fw = fweights.to(x.dtype) if fweights is not None else None
    w = fw if aweights is None else aweights if fw is None else fw * aweights
    if w is None:
        avg, w_sum = x.mean(1), n
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    if correction == 0:
        factor = w_sum
    elif w is None or aweights is None:
        factor = w_sum - correction
    else:
        factor = w_sum - correction * (w * aweights).sum() / w_sum
    xm = x - avg.unsqueeze(1)
    c = matmul(xm * w if w is not None else xm, xm.transpose(0, 1))
    c = c / (factor.clamp(min=0) if isinstance(factor, _EngineTensor) else builtins.max(factor, 0))
    return c.squeeze()


def corrcoef(input):
    """Pearson correlation coefficients of the rows, clipped to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    idx = np.arange(c.shape[0])
    sd = c[idx, idx].sqrt()
    return (c / sd.unsqueeze(1) / sd.unsqueeze(0)).clamp(-1, 1)


def histc(input, bins=100, min=0, max=0):
    """Counts of input in `bins` equal bins over [min, max] (the data's range when equal); no gradient."""
    v = _values(input).reshape(-1).astype(np.float64)
    lo, hi = float(min), float(max)
    if lo == hi and v.size:
        lo, hi = float(v.min()), float(v.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    keep = v[(v >= lo) & (v <= hi)]
    idx = np.minimum(((keep - lo) * bins / (hi - lo)).astype(np.int64), bins - 1)
    return made_like(input, np.bincount(idx, minlength=bins).astype(storage(input).dtype), input.fmt)


def histogram(input, bins, *, range=None, weight=None, density=False):
    """(hist, bin_edges): bins equal bins over range (the data's, widened by 0.5 when flat) or the given edges."""
    v = _values(input).reshape(-1).astype(np.float64)
    edges = _edges(v, bins, range)
    w = None if weight is None else _values(weight).reshape(-1).astype(np.float64)
    hist, _ = np.histogram(v, edges.astype(np.float64), weights=w)
    hist = hist.astype(np.float64)
    if density:
        hist = hist / (hist.sum() * np.diff(edges.astype(np.float64)))
    return _hist(tensor(hist.astype(np.float32), dtype=input.dtype, device=input.device),
                 tensor(edges, dtype=input.dtype, device=input.device))


def _edges(values, bins, span):
    """float32 bin edges: the given tensor, or `bins` equal bins over span (the data's, widened by 0.5 if flat)."""
    if isinstance(bins, _EngineTensor):
        return _values(bins).astype(np.float32)
    lo, hi = span if span is not None else ((float(values.min()), float(values.max())) if values.size else (0, 0))
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return np.linspace(lo, hi, int(bins) + 1).astype(np.float32)


_histdd = return_type("histogramdd", ("hist", "bin_edges"))


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """(hist, bin_edges) of the rows of input (N, D) as points in D dimensions; no gradient."""
    d = input.shape[-1]
    v = _values(input).reshape(-1, d).astype(np.float64)
    bins = [bins] * d if isinstance(bins, numbers.Integral) else list(bins)
    if len(bins) != d:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    spans = [None] * d if range is None else [range[2 * i:2 * i + 2] for i in builtins.range(d)]
    edges = [_edges(v[:, i], b, sp) for i, (b, sp) in enumerate(zip(bins, spans))]
    w = np.ones(len(v)) if weight is None else _values(weight).reshape(-1).astype(np.float64)
    keep = np.ones(len(v), bool)
    pos = []
    for i, e in enumerate(edges):       # PyTorch's rule: outside [first, last] edge skipped, the last edge closed
        keep &= (v[:, i] >= e[0]) & (v[:, i] <= e[-1])
        pos.append(np.clip(np.searchsorted(e, v[:, i].astype(np.float32), "right") - 1, 0, len(e) - 2))
    shape = tuple(len(e) - 1 for e in edges)
    flat = np.ravel_multi_index(tuple(p[keep] for p in pos), shape) if keep.any() else np.zeros(0, np.int64)
    hist = np.bincount(flat, w[keep], minlength=int(np.prod(shape))).reshape(shape)
    if density:
        widths = np.ix_(*(np.diff(e.astype(np.float64)) for e in edges))
        hist = hist / (hist.sum() * np.prod(np.broadcast_arrays(*widths), axis=0))
    return _histdd(tensor(hist.astype(np.float32), dtype=input.dtype, device=input.device),
                   [tensor(e, dtype=input.dtype, device=input.device) for e in edges])


# -- trapezoids and renorm ---------------------------------------------------------------------------------------


def _slices(y, d):
    n = y.shape[d]
    lead = (slice(None),) * d
    return y[lead + (slice(1, n),)], y[lead + (slice(0, builtins.max(n - 1, 0)),)]


def _trapezoid_terms(y, x, dx, dim):
    d = _dim(dim, y.ndim)
    right, left = _slices(y, d)
    if x is None:
        return (right + left) * (0.5 * (1.0 if dx is None else dx)), d
    if x.ndim == 1:
        x = x.reshape((-1,) + (1,) * (y.ndim - 1 - d))
        xd = x.ndim - 1 - (y.ndim - 1 - d)
    else:
        xd = d - (y.ndim - x.ndim)
    xr, xl = _slices(x, xd)
    return (xr - xl) * (right + left) * 0.5, d


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule's integral of y along dim, at x (or spacing dx, default 1)."""
    if x is not None and not isinstance(x, _EngineTensor):
        x, dx = None, x
    terms, d = _trapezoid_terms(y, x, dx, dim)
    return terms.sum(d)


def trapz(y, x=None, *, dx=None, dim=-1):
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule's running integrals of y along dim (one fewer than y's length)."""
    if x is not None and not isinstance(x, _EngineTensor):
        x, dx = None, x
    terms, d = _trapezoid_terms(y, x, dx, dim)
    return apply("cumsum", terms, axis=d)


def renorm(input, p, dim, maxnorm):
    """input with each slice along dim whose p-norm exceeds maxnorm scaled down to it."""
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = _dim(dim, input.ndim)
    norm = _linalg.vector_norm(input, p, tuple(i for i in range(input.ndim) if i != d), True)
    factor = apply("where", norm > maxnorm, maxnorm / (norm + 1e-7), tensor(1.0, dtype=input.dtype))
    return input * factor


# -- products ------------------------------------------------------------------------------------------------------


def _vectors(input, other, name):
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.dtype != other.dtype:
        raise RuntimeError(f"{name} : expected both vectors to have same dtype, but found "
                           f"{_type_name(input).replace('Tensor', '')} and {_type_name(other).replace('Tensor', '')}")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
                           f"[{other.shape[0]}] to have the same number of elements, but got {input.shape[0]} and "
                           f"{other.shape[0]} elements respectively")


def dot(input, other):
    """The inner product of two 1-D tensors, through the engine's matmul."""
    _vectors(input, other, "dot")
    return matmul(input, other)


def vdot(input, other):
    _vectors(input, other, "vdot")
    return matmul(input, other)


def outer(input, vec2):
    """input[i] * vec2[j] (one rounding each)."""
    return input.reshape(-1, 1) * vec2.reshape(1, -1)


ger = outer


def mv(input, vec):
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {vec.ndim}")
    return matmul(input, vec)


def _scaled_add(input, product, beta, alpha):
    """beta * input + alpha * product, as PyTorch's addmm family (input ignored, NaN and all, when beta is 0)."""
    out = product if alpha == 1 else product * alpha
    if beta == 0:
        return out
    return out + (input if beta == 1 else input * beta)


def _matrix(t, name):
    if t.ndim != 2:
        raise RuntimeError(f"{name} must be a matrix, got {t.ndim}-D tensor")


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2)."""
    _matrix(mat1, "mat1")
    _matrix(mat2, "mat2")
    # the GEMM epilogue: input joins the float32 sum before the one rounding (linear's weight gradient needs k > 0)
    if alpha == 1 and beta == 1 and input.ndim <= 2 and mat1.shape[1] > 0:
        check_same_dtype(mat1, mat2, input)
        return apply("linear", mat1, mat2, input.broadcast_to((mat1.shape[0], mat2.shape[1])), layout="io")
    return _scaled_add(input, matmul(mat1, mat2), beta, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    return _scaled_add(input, mv(mat, vec), beta, alpha)


def _batches(b1, b2):
    if b1.ndim != 3 or b2.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if b1.ndim != 3 else "batch2 must be a 3D tensor")


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * the sum over the batch of batch1 @ batch2."""
    _batches(batch1, batch2)
    return _scaled_add(input, matmul(batch1, batch2).sum(0), beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    _batches(batch1, batch2)
    return _scaled_add(input, matmul(batch1, batch2), beta, alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    return _scaled_add(input, outer(vec1, vec2), beta, alpha)


def tensordot(a, b, dims=2, out=None):
    """Sum of products over dims of a and b: a's free dims, then b's; one matmul."""
    if isinstance(dims, numbers.Integral) or isinstance(dims, _EngineTensor) and dims.ndim == 0:
        k = int(dims)
        if k < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={k}")
        da, db = list(range(a.ndim - k, a.ndim)), list(range(k))
    else:
        da, db = ([d] if isinstance(d, numbers.Integral) else list(d) for d in dims)
        da, db = [_dim(d, a.ndim) for d in da], [_dim(d, b.ndim) for d in db]
    fa = [i for i in range(a.ndim) if i not in da]
    fb = [i for i in range(b.ndim) if i not in db]
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j] and 1 not in (a.shape[i], b.shape[j]):
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[i]} in dim {i} "
                               f"and second has size {b.shape[j]} in dim {j}")
        if a.shape[i] == 1 and b.shape[j] != 1:        # a size-1 dim broadcasts: the other is summed first
            b = b.sum(j, keepdim=True)
        elif b.shape[j] == 1 and a.shape[i] != 1:
            a = a.sum(i, keepdim=True)
    ka = int(np.prod([a.shape[i] for i in da], dtype=np.int64))
    left = a.permute(*(fa + da)).reshape(-1, ka) if a.ndim else a.reshape(1, 1)
    right = b.permute(*(db + fb)).reshape(ka, -1) if b.ndim else b.reshape(1, 1)
    return matmul(left, right).reshape([a.shape[i] for i in fa] + [b.shape[i] for i in fb])


def inner(input, other):
    """Sum of products over the last dims (a product when either is a number)."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    return tensordot(input, other, ([input.ndim - 1], [other.ndim - 1]))


def kron(input, other):
    """The Kronecker product: every input[i] * other, laid out in blocks."""
    n = builtins.max(input.ndim, other.ndim)
    a = input.reshape((1,) * (n - input.ndim) + tuple(input.shape))
    b = other.reshape((1,) * (n - other.ndim) + tuple(other.shape))
    prod_ = a.reshape([s for d in a.shape for s in (d, 1)]) * b.reshape([s for d in b.shape for s in (1, d)])
    return prod_.reshape([x * y for x, y in zip(a.shape, b.shape)])



def trace(input):
    """Sum of the main diagonal of a matrix."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    idx = np.arange(builtins.min(input.shape))
    return input[idx, idx].sum()



def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """torch.norm: the Frobenius or p-norm over dim (all by default); "nuc" (an SVD) is not part of the face."""
    if p == "nuc":
        raise NotImplementedError("torch.norm(p='nuc'): the nuclear norm needs an SVD, which minifp.torch does not "
                                  "have")
    if isinstance(p, str) and p != "fro":
        raise RuntimeError(f"norm(): unsupported norm type {p!r}")
    return _linalg.vector_norm(input, 2 if p in ("fro", None) else p, dim, keepdim, dtype=dtype)


def cross(input, other, dim=None):
    """The cross product of 3-vectors along dim (the first of size 3 when None, as torch.cross)."""
    if dim is None:
        dim = next((i for i, s in enumerate(np.broadcast_shapes(tuple(input.shape), tuple(other.shape))) if s == 3),
                   -1)
    return _linalg.cross(input, other, dim=dim)


# -- einsum ----------------------------------------------------------------------------------------------------------


def _diagonal(x, letters):
    """x and its subscripts with repeated letters taken along their diagonal (x's values, moved)."""
    while len(set(letters)) < len(letters):
        c = next(c for c in letters if letters.count(c) > 1)
        i, j = letters.index(c), letters.index(c, letters.index(c) + 1)
        order = [k for k in range(x.ndim) if k not in (i, j)] + [i, j]
        x = x.permute(*order)
        idx = np.arange(x.shape[-1])
        x = x[(Ellipsis, idx, idx)]
        letters = [letters[k] for k in order[:-2]] + [c]
    return x, letters


def _contract(a, la, b, lb, keep):
    """a (subscripts la) times b (lb) summed over the letters not in keep: one matmul between permutes."""
    batch = [c for c in la if c in lb and c in keep]
    summed = [c for c in la if c in lb and c not in keep]
    fa = [c for c in la if c not in lb]
    fb = [c for c in lb if c not in la]
    sa, sb = dict(zip(la, a.shape)), dict(zip(lb, b.shape))
    size = sa | sb | {c: builtins.max(sa[c], sb[c]) for c in batch}      # batch dims of 1 broadcast
    n = lambda cs: int(np.prod([size[c] for c in cs], dtype=np.int64))
    a = a.permute(*[la.index(c) for c in batch + fa + summed]) if a.ndim else a
    b = b.permute(*[lb.index(c) for c in batch + summed + fb]) if b.ndim else b
    a = a.reshape([sa[c] for c in batch] + [n(fa), n(summed)])
    b = b.reshape([sb[c] for c in batch] + [n(summed), n(fb)])
    out = matmul(a, b).reshape([size[c] for c in batch + fa + fb])
    return out, batch + fa + fb


def _subscripts(term, ndim, i):
    """A term's subscripts as a list, its ellipsis spelled as the trailing dims' own symbols (".0", ".1", ...,
    numbered from the right, so that ellipses of different lengths broadcast)."""
    if "..." not in term:
        if len(term) != ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(term)}) does not match the "
                               f"number of dimensions ({ndim}) for operand {i} and no ellipsis was given")
        return list(term)
    head, tail = term.split("...")
    k = ndim - len(head) - len(tail)
    if k < 0:
        raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(head) + len(tail)}) is more "
                           f"than the number of dimensions ({ndim}) for operand {i}")
    return list(head) + [f".{j}" for j in range(k - 1, -1, -1)] + list(tail)


def einsum(equation, *operands):
    """Einstein summation (with ellipses): operands contracted pairwise, each pair by one matmul."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                           if len(operands) > len(terms) else
                           "einsum(): fewer operands were provided than specified in the equation")
    subs = [_subscripts(t, x.ndim, i) for i, (t, x) in enumerate(zip(terms, operands))]
    dots = sorted({c for l in subs for c in l if c.startswith(".")}, key=lambda c: -int(c[1:]))
    if arrow:
        out = _subscripts(rhs, len(rhs) - 3 + len(dots), "output") if "..." in rhs else list(rhs)
    else:
        every = [c for l in subs for c in l]
        out = dots + sorted(c for c in set(every) if every.count(c) == 1 and not c.startswith("."))
    pairs = [_diagonal(x, l) for x, l in zip(operands, subs)]
    rhs = out
    x, letters = pairs[0]
    for k, (y, ly) in enumerate(pairs[1:], 1):
        later = set(rhs) | {c for _, l in pairs[k + 1:] for c in l}
        alone = [c for c in letters if c not in ly and c not in later]
        if alone:
            x = x.sum([letters.index(c) for c in alone])
            letters = [c for c in letters if c not in alone]
        x, letters = _contract(x, letters, y, ly, later)
    extra = [c for c in letters if c not in rhs]
    if extra:
        x = x.sum([letters.index(c) for c in extra])
        letters = [c for c in letters if c not in extra]
    return x.permute(*[letters.index(c) for c in rhs]) if x.ndim > 1 else x


# -- attached as Tensor methods ----------------------------------------------------------------------------------------

def _with_dtype(method):
    """softmax / log_softmax taking dtype= (the input cast first, as PyTorch does); an empty input gives itself."""
    def normalised(self, dim, dtype=None):
        x = self.to(dtype) if dtype is not None else self
        if x.numel() == 0:
            _dim(dim, x.ndim)
            return x * 1
        return method(x, dim)
    normalised.__name__ = method.__name__
    return normalised


Tensor.softmax = _with_dtype(Tensor.softmax)
Tensor.log_softmax = _with_dtype(Tensor.log_softmax)
Tensor.max = _max_or_min(Tensor.max, Tensor.argmax, "max")
Tensor.min = _max_or_min(Tensor.min, Tensor.argmin, "min")
Tensor.argmax = _arg_reduction(Tensor.argmax)
Tensor.argmin = _arg_reduction(Tensor.argmin)
for _name, _fn in {
        "all": all, "any": any, "amax": amax, "amin": amin, "sum": _sum, "mean": _mean, "prod": prod,
        "nansum": nansum, "nanmean": nanmean, "logsumexp": logsumexp, "aminmax": aminmax, "quantile": quantile,
        "nanquantile": nanquantile, "histc": histc, "histogram": histogram, "renorm": renorm, "dot": dot,
        "vdot": vdot, "inner": inner, "outer": outer, "ger": ger, "mv": mv, "addmm": addmm, "addmv": addmv,
        "addbmm": addbmm, "baddbmm": baddbmm, "addr": addr, "kron": kron, "trace": trace, "cross": cross,
        "norm": norm, "sum_to_size": _sum_to_size, "cov": cov, "corrcoef": corrcoef}.items():
    setattr(Tensor, _name, _fn)
