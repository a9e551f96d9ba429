"""fp8 training with per-tensor delayed scaling: Transformer Engine's DelayedScaling recipe, emulated.

    with minifp.fp8_autocast(recipe=minifp.DelayedScaling()):
        loss = loss_fn(model(x), y)
    loss.backward()

Inside the block every GEMM (the registry's ops with a `product`: matmul, linear, conv2d) quantises its two
factors to fp8 with per-tensor scales, computes in float32 with the fp8 values, multiplies by the two inverse
scales (cuBLASLt's alpha) and adds the bias (the epilogue); the dispatcher then rounds once into the output
format it would have used anyway (the inputs' format, or the autocast dtype). The backward quantises the
output gradient with its own scale and reuses the forward's fp8 factors, as TE saves them.

The recipe (Transformer Engine, transformer_engine/common/recipe/__init__.py and delayed_scaling.cu):
- quantise: q = fp8(x * scale), computed in float32 and rounded nearest-even with saturation (CUDA's
  __NV_SATFINITE conversion); the GEMM sees q and multiplies its float32 sum by 1/scale of each factor.
- record: amax_history[0] = max(amax_history[0], max|x|) every time a tensor is quantised (in grad mode).
- update, once per step and role: amax = max(history) ("max") or history[0] ("most_recent"); the history rolls
  (roll by -1, then history[0] = 0); scale = (fp8_max * 2**-margin) / amax in float32, kept when amax is 0 or
  not finite, float32's max when the division overflows.
- when: the forward roles (input, weight) update when the outermost fp8_autocast block exits in grad mode (TE's
  autocast_exit), the output gradient's at the end of each backward pass through the GEMM. A forward role still
  pending at the end of a backward is updated there too, so one block around a whole Keras fit() updates once
  per step as well.

The scaling state lives with the GEMM's weight: the parameter that is its second factor (through an autocast
cast), as TE keeps it in the module that owns the weight. A GEMM whose second factor is no parameter keys on
its layer (or, outside layers, on the op). Two GEMMs sharing a weight share its state (tied weights).
"""
from __future__ import annotations

import numbers
import weakref
from dataclasses import dataclass

import numpy as np

from ._formats import Format
from ._backend import to_numpy
from ._rounding import round_to, widen
from ._seams import SEAMS, seam
from ._state import STATE

__all__ = ["Fp8Format", "DelayedScaling", "fp8_autocast", "scaling_state", "get_scaling", "set_scaling",
           "update_scaling", "E4M3", "E5M2"]

# The fp8 types as TE's casts produce them: nearest-even, out-of-range values saturate to +-max.
E4M3 = Format(4, 3, infinities=False, overflow="saturate", name="float8_e4m3 (satfinite)")
E5M2 = Format(5, 2, overflow="saturate", name="float8_e5m2 (satfinite)")
ROLES = ("input", "weight", "grad_output")
_F32_MAX = np.float32(np.finfo(np.float32).max)


@dataclass(frozen=True)
class Fp8Format:
    """Which fp8 type the forward pass (inputs, weights) and the backward pass (output gradients) use."""

    name: str
    forward: Format
    backward: Format

    @property
    def max_fwd(self):
        return float(E4M3_MAX if self.forward == E4M3 else E5M2_MAX)

    @property
    def max_bwd(self):
        return float(E4M3_MAX if self.backward == E4M3 else E5M2_MAX)

    def __repr__(self):
        return f"Fp8Format.{self.name}"


E4M3_MAX, E5M2_MAX = 448.0, 57344.0
Fp8Format.E4M3 = Fp8Format("E4M3", E4M3, E4M3)         # TE's Format.E4M3: e4m3 both ways
Fp8Format.HYBRID = Fp8Format("HYBRID", E4M3, E5M2)     # TE's Format.HYBRID: e4m3 forward, e5m2 gradients
Fp8Format.E5M2 = Fp8Format("E5M2", E5M2, E5M2)         # TE's Format.E5M2: named, but DelayedScaling refuses it
_ALGOS = ("max", "most_recent")


@dataclass(frozen=True)
class DelayedScaling:
    """Transformer Engine's delayed-scaling recipe: scales from an amax history, with a margin.

    Defaults and names are TE's. reduce_amax is accepted and changes nothing (one process: nothing to reduce).
    amax_compute_algo may be a function history -> amax, scaling_factor_compute_algo a function
    (amax, scale, fp8_max, recipe) -> scale, as in TE (returning `scale` itself keeps scale 1: no scaling)."""

    margin: int = 0
    fp8_format: Fp8Format = Fp8Format.HYBRID
    amax_history_len: int = 1024
    amax_compute_algo: object = "max"
    scaling_factor_compute_algo: object = None
    reduce_amax: bool = True

    def __post_init__(self):
        where = "DelayedScaling(): "
        if not isinstance(self.margin, numbers.Integral) or isinstance(self.margin, bool):
            raise TypeError(f"{where}margin must be an integer, got {self.margin!r}")
        if self.margin < 0:
            raise ValueError(f"{where}margin must be an integer >= 0 (scales are divided by 2**margin, so a "
                             f"negative margin would push amax past the fp8 max), got {self.margin!r}")
        if not isinstance(self.fp8_format, Fp8Format) or self.fp8_format.name == "E5M2":
            raise ValueError(f"{where}fp8_format must be Fp8Format.HYBRID or Fp8Format.E4M3, got "
                             f"{self.fp8_format!r} (pure E5M2 training is not supported, as in Transformer Engine)")
        n = self.amax_history_len
        if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 1:
            raise ValueError(f"{where}amax_history_len must be an integer >= 1, got {n!r}")
        if not callable(self.amax_compute_algo) and self.amax_compute_algo not in _ALGOS:
            raise ValueError(f"{where}amax_compute_algo must be 'max', 'most_recent' or a function of the amax "
                             f"history, got {self.amax_compute_algo!r}")
        if self.scaling_factor_compute_algo is not None and not callable(self.scaling_factor_compute_algo):
            raise TypeError(f"{where}scaling_factor_compute_algo must be None or a function (amax, scale, "
                            f"fp8_max, recipe) -> scale, got {self.scaling_factor_compute_algo!r}")
        if not isinstance(self.reduce_amax, bool):
            raise TypeError(f"{where}reduce_amax must be True or False, got {self.reduce_amax!r}")


def update_scaling(history, scale, fp8_max, recipe):
    """One update of a tensor's scaling state: (amax history, scale) -> (rolled history, new scale), TE's rule.

    The amax is taken from the history before it rolls (so it includes the step just recorded in history[0])."""
    history = np.asarray(history, np.float32)
    algo = recipe.amax_compute_algo
    if callable(algo):
        amax = np.float32(algo(history.copy()))
    elif algo == "max":
        amax = history.max()
        if amax != amax:                    # fmaxf, as the CUDA kernel: a NaN entry is skipped
            amax = np.float32(np.fmax.reduce(history))
    else:
        amax = history[0]
    rolled = np.empty_like(history)         # np.roll(history, -1), then rolled[0] = 0
    rolled[1:-1] = history[2:]
    rolled[-1] = history[0]
    rolled[0] = 0
    scale = np.float32(scale)
    if recipe.scaling_factor_compute_algo is not None:
        return rolled, np.float32(recipe.scaling_factor_compute_algo(amax, scale, fp8_max, recipe))
    if not (amax > 0 and np.isfinite(amax)):
        return rolled, scale
    # float32's (fp8_max * 2**-margin) / amax: the float64 quotient rounded to float32 is the float32 quotient
    # (53 >= 2 * 24 + 2 bits: the double rounding is harmless); one that overflows becomes float32's max, as TE's.
    new = float(np.float32(fp8_max * 2.0 ** -recipe.margin)) / float(amax)
    return rolled, (_F32_MAX if new >= float(_F32_MAX) else np.float32(new))


class _Scaling:
    """One tensor role's state: its amax history (history[0]: the step in progress) and its scale."""

    __slots__ = ("history", "scale", "pending")

    def __init__(self, length):
        self.history, self.scale, self.pending = np.zeros(length, np.float32), np.float32(1.0), False

    def update(self, fp8_max, recipe):
        self.history, self.scale = update_scaling(self.history, self.scale, fp8_max, recipe)
        self.pending = False


class _Meta:
    """A GEMM's scaling states (input, weight, grad_output) under one recipe."""

    __slots__ = ("recipe", "roles")

    def __init__(self, recipe):
        self.recipe = recipe
        self.roles = {r: _Scaling(recipe.amax_history_len) for r in ROLES}

    def update(self, forward):
        fmt = self.recipe.fp8_format
        for role in (("input", "weight") if forward else ("grad_output",)):
            if self.roles[role].pending:
                self.roles[role].update(fmt.max_fwd if forward else fmt.max_bwd, self.recipe)


_METAS = {}     # id(weight parameter or layer) -> (weak reference to it, _Meta): dropped with its owner


def _owner(w):
    """What a GEMM's scaling state belongs to: the parameter behind its second factor, else the layer, else the op."""
    if w._node is None:
        return w if w.requires_grad else None
    node = w._node
    if node.op.name == "cast" and node.inputs[0]._node is None and node.inputs[0].requires_grad:
        return node.inputs[0]
    return None


def _meta(op, w, recipe):
    owner = _owner(w)
    owner = STATE.layer if owner is None else owner
    if owner is None:
        meta = STATE.fp8_by_op.get(op.name)      # a GEMM outside layers, with no parameter: the thread's, by op
        if meta is None or meta.recipe is not recipe and meta.recipe != recipe:
            meta = STATE.fp8_by_op[op.name] = _Meta(recipe)
        return meta
    entry = _METAS.get(id(owner))
    if entry is None or entry[0]() is not owner or entry[1].recipe is not recipe and entry[1].recipe != recipe:
        return _keep(owner, _Meta(recipe))
    return entry[1]


def _keep(owner, meta):
    """meta as owner's: keyed by identity (tensors compare elementwise), forgotten when the owner goes."""
    key = id(owner)
    _METAS[key] = (weakref.ref(owner, lambda _, key=key: _METAS.pop(key, None)), meta)
    return meta


def _find(owner):
    entry = _METAS.get(id(owner))
    return entry[1] if entry is not None and entry[0]() is owner else None


def scaling_state(owner):
    """{role: (amax history, scale)} of the GEMM whose weight (or layer) is `owner`, None if it has none yet."""
    meta = _find(owner)
    return None if meta is None else {r: (s.history.copy(), float(s.scale)) for r, s in meta.roles.items()}


def get_scaling(owner):
    """(recipe, {role: (amax history, float32 scale)}) of the GEMM whose weight (or layer) is `owner`, None if it
    has none yet: what a checkpoint saves."""
    meta = _find(owner)
    return None if meta is None else (meta.recipe, {r: (s.history.copy(), s.scale) for r, s in meta.roles.items()})


def set_scaling(owner, recipe=None, roles=None):
    """Give the GEMM whose weight (or layer) is `owner` this recipe and these {role: (amax history, scale)}, as
    get_scaling returns them (a checkpoint restores them); recipe None forgets its state (fresh on next use)."""
    if recipe is None:
        if _find(owner) is not None:
            del _METAS[id(owner)]
        return
    if set(roles) != set(ROLES):
        raise ValueError(f"set_scaling(): roles must be {list(ROLES)}, got {sorted(roles)}")
    meta = _Meta(recipe)
    for role, (history, scale) in roles.items():
        history = np.array(history, np.float32)
        if history.shape != (recipe.amax_history_len,):
            raise ValueError(f"set_scaling(): the {role} amax history must have shape "
                             f"({recipe.amax_history_len},), as the recipe's amax_history_len, got {history.shape}")
        meta.roles[role].history, meta.roles[role].scale = history, np.float32(scale)
    _keep(owner, meta)


def _quantize(xp, x, scaling, fmt, role, layer, direction, op):
    """x -> (its fp8 values of x * scale, as float32; 1/scale), recording max|x| in grad mode (TE's cast)."""
    scale, monitors = scaling.scale, STATE.monitors
    if x.dtype != np.float32:       # values of a format of at most float32's width, in a float64 body: exact
        x = x.astype(np.float32)
    _record(scaling, _amax(xp, x), x.size)
    if not monitors:
        return SEAMS.quantized(xp, x, scale, fmt), np.float32(1) / scale
    tally = np.zeros(4, np.int64)       # the monitor's counts, from the counting rounding (on the host)
    q = widen(round_to(to_numpy(x * scale), fmt, counts=tally), fmt)
    for m in monitors:
        m.record(layer, f"{op}:fp8 {role}", direction, tally, x.size)
        if hasattr(m, "fp8_record"):
            m.fp8_record(layer, role, fmt, scaling, tally, x.size)
    return (q if xp is np else xp.asarray(q)), np.float32(1) / scale


def _amax(xp, x):
    """max|x| as float32, NaN skipped (fmaxf), 0 for an empty or all-NaN x."""
    if not x.size or not STATE.grad_enabled:       # only recorded in grad mode
        return np.float32(0)
    amax = np.float32(xp.max(xp.abs(x)))
    if amax != amax:
        amax = np.float32(xp.max(xp.where(x != x, 0, xp.abs(x))))
    return amax


def _record(scaling, amax, size):
    """amax_history[0] = max(amax_history[0], amax) in grad mode: the step's amax, updated after the step."""
    if STATE.grad_enabled and size:
        h = scaling.history
        h[0] = max(h[0], amax)
        scaling.pending = True


@seam
def quantized(xp, x, scale, fmt):
    """x * scale rounded (nearest-even, saturating) to fp8 `fmt`, as float32 values."""
    return _fp8_values(x * scale, fmt, xp)


def _fp8_values(v, fmt, xp=np):
    """The float32 array v rounded (nearest-even, saturating) to fp8 `fmt`, as float32 values (v is reused).

    The same values as widen(round_to(v, fmt)) (the tests compare them on every float32 exponent), in array math
    that also runs on CuPy (which holds no fp8 storage): clip to +-max (inf saturates, NaN stays); normal results
    round in the bits (add half an ulp less one plus the kept last bit, drop the rest); below the smallest
    normal 2**emin, adding 2**(emin - man_bits + 23) leaves a sum whose ulp is the smallest subnormal, so
    float32's own nearest-even addition rounds (the kernels' trick)."""
    top, drop, tiny, big = CONSTANTS[fmt]
    xp.clip(v, -top, top, out=v)
    bits = v.view(np.uint32)
    normal = ((bits + np.uint32((1 << (drop - 1)) - 1) + ((bits >> np.uint32(drop)) & np.uint32(1)))
              & np.uint32(~((1 << drop) - 1) & 0xFFFFFFFF)).view(np.float32)
    a = xp.abs(v)
    out = xp.where(a < tiny, xp.copysign((a + big) - big, v), normal)
    return xp.where(v != v, v, out)


CONSTANTS = {f: (np.float32(m), 23 - f.man_bits, np.float32(2.0 ** (2 - 2 ** (f.exp_bits - 1))),
              np.float32(2.0 ** (2 - 2 ** (f.exp_bits - 1) - f.man_bits + 23)))
          for f, m in ((E4M3, E4M3_MAX), (E5M2, E5M2_MAX))}


def _bias(op, ans, b, params):
    """ans + b as the GEMM epilogue adds it: on the channels of a conv (axis 1 in NCHW), else the last axis."""
    if op.name == "conv2d" and params.get("layout", "NCHW") == "NCHW":
        b = b.reshape(-1, 1, 1)
    ans += b
    return ans


def forward(op, xp, wide, recipe, tensors, params):
    """The GEMM under `recipe`: (float32 result before rounding, what the backward needs)."""
    meta = _meta(op, tensors[1], recipe)
    fmt, layer = recipe.fp8_format.forward, STATE.layer
    qx, inv_x = _quantize(xp, wide[0], meta.roles["input"], fmt, "input", layer, "forward", op.name)
    qw, inv_w = _quantize(xp, wide[1], meta.roles["weight"], fmt, "weight", layer, "forward", op.name)
    ans = op.forward(xp, qx, qw, **params)
    ans *= inv_x * inv_w
    if len(wide) > 2 and wide[2] is not None:
        ans = _bias(op, ans, wide[2], params)
    if STATE.grad_enabled and STATE.fp8_pending is not None:
        STATE.fp8_pending[id(meta)] = meta
    return ans, (meta, qx, qw, inv_x, inv_w)


def backward(node, xp, g, ans, wide, wanted):
    """Gradients of the GEMM's inputs (None where not wanted): the output gradient quantised with its own scale,
    multiplied with the forward's fp8 factors; the bias gradient from the unquantised gradient (as TE)."""
    op, params = node.op, node.params
    meta, qx, qw, inv_x, inv_w = node.saved
    fmt = meta.recipe.fp8_format.backward
    qg, inv_g = _quantize(xp, g, meta.roles["grad_output"], fmt, "grad_output", node.layer, "backward", op.name)
    STATE.fp8_touched[id(meta)] = meta
    out = []
    for i, w in enumerate(wanted):
        if not w:
            out.append(None)
        elif i == 0:
            out.append(op.grads[0](xp, qg, ans, qx, qw, **params) * (inv_g * inv_w))
        elif i == 1:
            out.append(op.grads[1](xp, qg, ans, qx, qw, **params) * (inv_g * inv_x))
        else:
            out.append(op.grads[i](xp, g, ans, *wide, **params))
    return out


def finish_backward():
    """After a backward pass: update the output-gradient scales of the GEMMs it went through (and forward
    scales still pending)."""
    touched = STATE.fp8_touched
    if not touched:
        return
    STATE.fp8_touched = {}
    for meta in touched.values():
        meta.update(forward=False)
        meta.update(forward=True)


class fp8_autocast:
    """GEMMs inside the block run in fp8 with the recipe's per-tensor delayed scaling (this thread only).

    fp8_autocast(enabled=True, fp8_recipe=None): Transformer Engine's signature; `recipe=` is accepted too.
    None means DelayedScaling() (TE's default recipe). enabled=False turns fp8 off inside the block."""

    __slots__ = ("enabled", "recipe", "previous", "outer")

    def __init__(self, enabled=True, fp8_recipe=None, *, recipe=None):
        if not isinstance(enabled, bool):
            raise TypeError(f"fp8_autocast(): enabled must be True or False, got {enabled!r}")
        if fp8_recipe is not None and recipe is not None:
            raise TypeError("fp8_autocast(): pass the recipe once, as fp8_recipe= or as recipe=, not both")
        recipe = fp8_recipe if fp8_recipe is not None else recipe
        if recipe is None:
            recipe = DelayedScaling()
        if not isinstance(recipe, DelayedScaling):
            raise TypeError(f"fp8_autocast(): the recipe must be a minifp.DelayedScaling, got "
                            f"{type(recipe).__name__} ({recipe!r})")
        self.enabled, self.recipe, self.previous, self.outer = enabled, recipe, None, None

    def __enter__(self):
        self.previous = STATE.fp8
        STATE.fp8 = self.recipe if self.enabled else None
        self.outer = STATE.fp8_pending is None
        if self.outer:
            STATE.fp8_pending = {}
        return self

    def __exit__(self, *exc):
        STATE.fp8 = self.previous
        if self.outer:
            pending, STATE.fp8_pending = STATE.fp8_pending, None
            if STATE.grad_enabled:              # TE: only a training region updates the forward scales
                for meta in pending.values():
                    meta.update(forward=True)
