"""The numerics monitor: which op, in which layer, overflowed or underflowed, forward and backward.

    with minifp.numerics.watch(model) as report:
        loss = loss_fn(y, model(x)); loss.backward()
    print(report.summary()); report.first_overflow

Every value passes through one rounding step, so counting there sees everything:
overflow (finite in float32, inf/NaN/saturated after rounding), underflow (nonzero in
float32, zero after rounding), subnormal results, and NaN. The counts come from the
rounding kernel itself (a counting variant of it runs only while a monitor is on).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np

from . import _checks
from ._backend import to_numpy
from ._layers import is_layer
from ._state import watching
from ._rounding import count_rounding  # noqa: F401  (part of the monitor's API)

__all__ = ["watch", "Report", "Histogram", "Event", "Fp8Stat", "KINDS"]

KINDS = ("overflow", "underflow", "subnormal", "nan")
HISTOGRAM_KINDS = ("activation", "activation_grad", "weight_grad")
_OFFSET = 160            # bin index of exponent 0: float32 exponents run from -149 to 127


@dataclass(frozen=True)
class Event:
    """Where something happened: the layer (dotted name, or None outside layers), the op, the direction."""

    layer: str | None
    op: str
    direction: str
    count: int

    def __str__(self):
        return f"{self.op} in layer {self.layer or '(no layer)'}, {self.direction}: {self.count} values"


@dataclass
class Fp8Stat:
    """One fp8 tensor role (input, weight, grad_output) of a layer's GEMMs under fp8_autocast: its last amax
    history entry and scale, and how many of its values became zero (underflow) or saturated (overflow) when
    quantised, of `total`."""

    fmt: object
    amax: float = 0.0
    scale: float = 1.0
    underflow: int = 0
    overflow: int = 0
    nonzero: int = 0
    total: int = 0

    @property
    def share_underflow(self):
        """Of the values quantised, the share that were nonzero and became zero."""
        return self.underflow / max(self.total, 1)


class Histogram:
    """Counts of floor(log2|v|) over nonzero finite values, plus zeros and non-finite (Micikevicius et al. Fig. 3)."""

    def __init__(self):
        self.counts = np.zeros(2 * _OFFSET, np.int64)
        self.powers = np.zeros(2 * _OFFSET, np.int64)     # of counts, the exact powers of two (ties below)
        self.zeros = 0
        self.nonfinite = 0

    def add(self, values):
        v = to_numpy(values).astype(np.float32, copy=False).ravel()       # a GPU's values too
        finite = np.isfinite(v)
        self.nonfinite += int(v.size - finite.sum())
        v = v[finite]
        nonzero = v[v != 0]
        self.zeros += int(v.size - nonzero.size)
        f, e = np.frexp(nonzero)                       # |v| = f * 2**e, f in [0.5, 1): floor(log2|v|) = e - 1
        self.counts += np.bincount(e - 1 + _OFFSET, minlength=2 * _OFFSET)
        self.powers += np.bincount(e[np.abs(f) == 0.5] - 1 + _OFFSET, minlength=2 * _OFFSET)

    @property
    def total(self):
        return int(self.counts.sum()) + self.zeros + self.nonfinite

    @property
    def exponents(self):
        """The exponent of each bin: bin i holds values with floor(log2|v|) == exponents[i]."""
        return np.arange(2 * _OFFSET) - _OFFSET

    def share_flushed(self, fmt, scale=1.0):
        """Share of all values, nonzero here, that `fmt` rounds to zero (nearest-even) after multiplying by `scale`.

        As rounding does: below the smallest nonzero magnitude s of the format (its smallest subnormal, or
        without subnormals its smallest normal) the neighbours are 0 and s, so v flushes when
        |v * scale| <= s / 2, the tie going to 0. Bins below log2(s) - 1 flush whole; of bin log2(s) - 1,
        only its ties, the exact powers of two. Exact for power-of-two scales.
        """
        from ._formats import finfo
        half_exp = int(np.log2(finfo(fmt).smallest_subnormal)) - 1       # s / 2 == 2**half_exp
        shifted = self.exponents + int(np.floor(np.log2(scale)))
        flushed = self.counts[shifted < half_exp].sum() + self.powers[shifted == half_exp].sum()
        return float(flushed) / max(self.total, 1)

    def share_overflow(self, fmt, scale=1.0):
        """Share of values at or above 2**(floor(log2 max) + 1) after scaling (bin resolution)."""
        from ._formats import finfo
        top = int(np.floor(np.log2(finfo(fmt).max))) + 1
        shifted = self.exponents + int(np.floor(np.log2(scale)))
        return float(self.counts[shifted >= top].sum()) / max(self.total, 1)


class Report:
    """What a watch() saw: counts per (layer, op, direction), the first overflow, histograms per layer."""

    def __init__(self, names, histograms):
        self._names = names                    # id(module or parameter) -> dotted name
        self.keep_histograms = histograms
        self.counts: dict[tuple, np.ndarray] = {}
        self.first_overflow: Event | None = None
        self.histograms: dict[tuple, Histogram] = {}
        self._outputs = {}                     # id(layer output) -> (layer name, tensor): whose gradient is whose
        self.fp8: dict[tuple, Fp8Stat] = {}    # (layer, role) -> its fp8 scaling and what quantising did

    def layer_name(self, module):
        if module is None:
            return None
        return self._names.get(id(module)) or type(module).__name__

    # -- recording (called by the dispatcher and by layers) -----------------------------------------
    def record(self, module, op, direction, tally, total):
        layer = self.layer_name(module)
        key = (layer, op, direction)
        row = self.counts.setdefault(key, np.zeros(5, np.int64))
        row[:4] += tally
        row[4] += total
        if self.first_overflow is None and tally[0]:
            self.first_overflow = Event(layer, op, direction, int(tally[0]))

    def fp8_record(self, module, role, fmt, scaling, tally, total):
        """Called by fp8_autocast's GEMMs at each quantisation: the scale used, the amax seen, the counts."""
        stat = self.fp8.setdefault((self.layer_name(module), role), Fp8Stat(fmt))
        stat.amax, stat.scale = float(scaling.history[0]), float(scaling.scale)
        stat.overflow += int(tally[0])
        stat.underflow += int(tally[1])
        stat.total += int(total)

    def fp8_summary(self):
        """One line per (layer, fp8 role): format, scale, amax, share of values flushed to zero and saturated."""
        w = max([5] + [len(layer or "-") for layer, _ in self.fp8])
        lines = [f"{'layer':{w}s} {'role':11s} {'format':23s} {'scale':>10s} {'amax':>10s} {'to zero':>8s} "
                 f"{'saturated':>9s}"]
        for (layer, role), st in self.fp8.items():
            lines.append(f"{(layer or '-'):{w}s} {role:11s} {st.fmt.name:23s} {st.scale:10.4g} {st.amax:10.4g} "
                         f"{st.share_underflow:8.2%} {st.overflow / max(st.total, 1):9.2%}")
        return "\n".join(lines)

    def histogram(self, layer, kind):
        """The histogram of `kind` (activation, activation_grad, weight_grad) for a layer name."""
        return self.histograms.setdefault((layer, kind), Histogram())

    def layer_output(self, module, out):
        if self.keep_histograms:
            name = self.layer_name(module)
            self.histogram(name, "activation").add(out.float32())
            self._outputs[id(out)] = (name, out)

    def gradient(self, t, g):
        """Called by backward with each tensor's gradient: keeps those of layer outputs."""
        hit = self._outputs.get(id(t))
        if hit is not None and hit[1] is t:
            self.histogram(hit[0], "activation_grad").add(g)

    def weight_gradients(self, params):
        if self.keep_histograms:
            for p in params:
                if p.grad is not None and id(p) in self._names:
                    layer = self._names[id(p)].rpartition(".")[0] or self._names[id(p)]
                    self.histogram(layer, "weight_grad").add(p.grad.float32())

    # -- reading -----------------------------------------------------------------------------------
    def total(self, kind, direction=None, layer=None):
        """How many values of `kind` (overflow, underflow, subnormal, nan) in a direction and/or layer."""
        i = _kind(kind, direction)
        return int(sum(row[i] for (lay, _, d), row in self.counts.items()
                       if (direction is None or d == direction) and (layer is None or lay == layer)))

    def layers(self, kind, direction=None):
        """Names of the layers where `kind` happened, worst first."""
        i = _kind(kind, direction)
        per = {}
        for (lay, _, d), row in self.counts.items():
            if (direction is None or d == direction) and row[i] and lay is not None:
                per[lay] = per.get(lay, 0) + int(row[i])
        return sorted(per, key=per.get, reverse=True)

    def rows(self):
        """(layer, op, direction, overflow, underflow, subnormal, nan, total), worst first."""
        rows = [(k[0] or "-", k[1], k[2], *map(int, v)) for k, v in self.counts.items()]
        return sorted(rows, key=lambda r: (r[3] + r[6], r[4], r[5]), reverse=True)

    def summary(self, top=20):
        """The table of counts, worst first (overflow and NaN, then underflow, then subnormal)."""
        head = ("layer", "op", "pass", "overflow", "underflow", "subnormal", "nan", "of")
        body = [tuple(map(str, r)) for r in self.rows()[:top]]
        widths = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]
        lines = ["  ".join(c.rjust(w) if i > 2 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
                 for r in [head] + body]
        if self.first_overflow:
            lines.append(f"first overflow: {self.first_overflow}")
        return "\n".join(lines)

    def __repr__(self):
        return f"Report({len(self.counts)} (layer, op, pass) entries, first_overflow={self.first_overflow})"


def _kind(kind, direction):
    """The column of `kind`, once kind and direction are checked."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if direction not in (None, "forward", "backward"):
        raise ValueError(f"direction must be 'forward', 'backward' or None, got {direction!r}")
    return KINDS.index(kind)


@contextlib.contextmanager
def watch(model=None, histograms=False):
    """Count overflow, underflow, subnormals and NaN at every rounding inside the block.

    With `model`, layers and parameters are named by their dotted paths in it; with
    histograms=True the report also keeps log2-magnitude histograms of each layer's activations,
    activation gradients and weight gradients.
    """
    if model is not None and not is_layer(model):
        raise TypeError(f"watch(): model must be a layer or model of a minifp face (torch.nn.Module, keras Model) "
                        f"or None, got {type(model).__name__}")
    _checks.flag("histograms", histograms, where="watch(): ")
    names = {}
    if model is not None:
        for name, module in model._engine_layers():
            names[id(module)] = name or type(module).__name__
        for name, v in model._engine_variables():
            names[id(v)] = name
    report = Report(names, histograms)
    with watching(report):
        yield report
