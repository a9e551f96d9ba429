"""torch.amp.GradScaler's face over the engine's loss scale (minifp.engine.LossScaler: the scale, its growth tracker
and its hyperparameters, kept once).

What PyTorch does, as PyTorch does it: the scale is a float32 number created at the first scale(); scale()
multiplies by a 0-dim float32 tensor (so a 0-dim float16 loss comes back float32, a float16 batch stays
float16); unscale_ multiplies by float32(1 / double(scale)) and notes inf/NaN per device; step() skips the
optimizer's step when one was found; update() backs off or grows the scale (products in double, rounded
once to float32). Misuse raises PyTorch's errors with PyTorch's words.

Beyond PyTorch: `last_step_skipped`, `first_nonfinite` (which parameter's gradient first held inf or NaN in
the latest unscale_) and `history` (per update(): the scale that was used and whether the step was skipped;
a deque of the latest 1,000 updates, so that a long run's memory stays flat).
"""
from __future__ import annotations

import enum
import math
import numbers
import warnings
from collections import abc, defaultdict, deque

import numpy as np

from ...engine import (array_module, DynamicLossScale, float16, float32, LossScaler, made_like, storage, Tensor,
    unscale_grads)

__all__ = ["GradScaler", "CudaGradScaler", "OptState"]

_DEVICES = ("cuda", "cpu")
# GradScaler.history keeps this many of the latest update()s (about 0.26 MB): a notebook's whole run, a long
# run's recent past. Assign scaler.history = [] to keep every update, or deque(maxlen=n) for another bound.
_HISTORY_LEN = 1000


class OptState(enum.Enum):
    """Where an optimizer is in the current iteration."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


_READY, _UNSCALED, _STEPPED = OptState         # module constants: the step's checks read them without the class


def _fresh_state():
    return {"stage": _READY, "found_inf_per_device": {}}


def _device_type(device):
    """'cuda' or 'cpu' from a string or a torch-style device object."""
    kind = getattr(device, "type", device)
    if isinstance(kind, str) and kind.split(":")[0] in _DEVICES:
        return kind.split(":")[0]
    raise ValueError(f"GradScaler: device must be 'cuda' or 'cpu' (the devices minifp has), got {device!r}")


def _real(name, value):
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return value
    raise TypeError(f"GradScaler: {name} must be a real number, got {value!r} (a {type(value).__name__})")


def _name_in(optimizer, p):
    """A parameter's name, or where it sits in the optimizer's param_groups (and its shape)."""
    if p.name:
        return p.name
    g, i = next((g, i) for g, group in enumerate(optimizer.param_groups) for i, q in enumerate(group["params"])
                if q is p)
    return f"param_groups[{g}]['params'][{i}] of shape {tuple(p.shape)}"


class GradScaler:
    """torch.amp.GradScaler(device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
    growth_interval=2000, enabled=True): dynamic loss scaling for float16 training.

    The scale's arithmetic is the engine's DynamicLossScale (shared with the Keras face's LossScaleOptimizer).
    `enabled=False` makes every method a pass-through: scale() returns its argument, step() calls
    optimizer.step(), get_scale() is 1.0 and state_dict() is {}. minifp's "cuda" is always available (a GPU,
    or CUDA's numerics emulated on the host), so a "cuda" scaler is never disabled for want of one.
    """

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = _device_type(device)
        if not isinstance(enabled, (bool, np.bool_)):
            raise TypeError(f"GradScaler: enabled must be True or False, got {enabled!r}")
        self._enabled = bool(enabled)
        self.last_step_skipped = False
        self.first_nonfinite = None
        self.history = deque(maxlen=_HISTORY_LEN)
        if not self._enabled:
            return
        # PyTorch's checks are asserts with these words; raised explicitly so that python -O keeps them.
        if not _real("growth_factor", growth_factor) > 1.0:
            raise AssertionError("The growth factor must be > 1.0.")
        if not _real("backoff_factor", backoff_factor) < 1.0:
            raise AssertionError("The backoff factor must be < 1.0.")
        init_scale = _real("init_scale", init_scale)
        if not 0 < init_scale < np.inf:                 # PyTorch has no check; a scale <= 0 would zero every step
            raise ValueError(f"GradScaler: init_scale must be a positive finite number, got {init_scale!r}")
        if not isinstance(growth_interval, numbers.Integral) or isinstance(growth_interval, bool):
            raise TypeError(f"GradScaler: growth_interval must be an integer, got {growth_interval!r}")
        if growth_interval < 1:                         # PyTorch has no check; 0 would never count a step
            raise ValueError(f"GradScaler: growth_interval must be a positive integer, got {growth_interval!r}")
        self._init_scale = init_scale       # what a fresh run starts from (PyTorch's; _scaler holds the running scale)
        # The engine's loss scale: the scale, the growth tracker and the three hyperparameters, in one place.
        with np.errstate(over="ignore"):
            self._scaler = LossScaler(DynamicLossScale(np.float32(init_scale), period=growth_interval,
                                                       factor=growth_factor, min_loss_scale=0.0,
                                                       backoff=backoff_factor))
        self._scaling = False               # PyTorch's `_scale is not None`: scale() was called
        self._scale_tensor = None           # ((scale, tensor class, device), the scale as a 0-dim tensor)
        self._per_optimizer_states = defaultdict(_fresh_state)

    # -- the scale ---------------------------------------------------------------------------------------
    def _check_scale_growth_tracker(self, funcname):
        if not self._scaling:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  This may indicate your script did not "
                                 f"use scaler.scale(loss or outputs) earlier in the iteration.")

    def _scale_like(self, t):
        """The scale as a 0-dim float32 tensor of t's class and device (made again only when one of them changes:
        a constant, which no step modifies)."""
        key = (self._scaler.loss_scale, type(t), t.device)
        if self._scale_tensor is None or self._scale_tensor[0] != key:
            value = made_like(t, array_module(storage(t)).asarray(self._scaler.loss_scale, np.float32), fmt=float32)
            self._scale_tensor = (key, value)
        return self._scale_tensor[1]

    def scale(self, outputs):
        """outputs times the scale: a tensor, or tensors in (nested) lists and tuples; other iterables give a map."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            self._scaling = True
            return outputs * self._scale_like(outputs)
        if isinstance(outputs, abc.Iterable) and not isinstance(outputs, (str, bytes)):
            scaled = map(self.scale, outputs)
            return type(outputs)(scaled) if isinstance(outputs, (list, tuple)) else scaled
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    # -- unscale_, step, update --------------------------------------------------------------------------
    def _unscale_grads_(self, optimizer, inv_scale, allow_fp16):
        """Unscale every gradient in place; {device: whether one held inf/NaN}. Checked before any changes."""
        params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        grads = [p.grad for p in params]
        per_device = {}
        for g in grads:
            if not allow_fp16 and g.fmt is not float32 and g.fmt == float16:
                raise ValueError("Attempting to unscale FP16 gradients.")
            per_device[g.device] = False
        if any(g.device == "cuda" and g.fmt is not None and g.fmt.name == "bfloat16" for g in grads):
            # (CUDA's unscaling kernel has no bfloat16 instance, as an H200 recorded: tests/torch/test_optim_cuda.py)
            raise NotImplementedError('"_amp_foreach_non_finite_check_and_unscale_cuda" not implemented for '
                                      "'BFloat16'")
        nonfinite = unscale_grads(grads, inv_scale)
        for i in nonfinite:
            per_device[grads[i].device] = True
        if nonfinite and self.first_nonfinite is None:
            self.first_nonfinite = _name_in(optimizer, params[nonfinite[0]])
        return per_device

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale, in place, noting whether any held inf or NaN."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is not _READY:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update()."
                               if state["stage"] is _UNSCALED else "unscale_() is being called after step().")
        scale = float(self._scaler.loss_scale)
        inv_scale = 1.0 / scale if scale else math.inf  # reciprocal in double; unscaling rounds it to float32
        if all(s["stage"] is _READY for s in self._per_optimizer_states.values()):
            self.first_nonfinite = None     # the first unscale_ of an iteration
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, allow_fp16=False)
        state["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """unscale_ (unless done), then optimizer.step(*args, **kwargs) unless a gradient held inf/NaN.

        Returns what optimizer.step returned, or None when the step was skipped.
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        fused = state["stage"] is _READY and getattr(optimizer, "_step_supports_amp_scaling", False)
        if fused:       # its kernels divide by the scale: the scaler only looks for inf and NaN (float16 too)
            state["found_inf_per_device"] = self._unscale_grads_(optimizer, 1.0, allow_fp16=True)
        elif state["stage"] is _READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        skipped = any(state["found_inf_per_device"].values())
        self.last_step_skipped = skipped
        retval = None
        if not skipped and fused:
            optimizer.grad_scale = float(self._scaler.loss_scale)
            try:
                retval = optimizer.step(*args, **kwargs)
            finally:
                del optimizer.grad_scale
        elif not skipped:
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return retval

    def update(self, new_scale=None):
        """Back off after a skipped step, grow after growth_interval good ones in a row, or set new_scale."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("update")
        if new_scale is not None:
            self._scaler.set(loss_scale=self._new_scale_value(new_scale))
        else:
            skipped, found = False, False
            for state in self._per_optimizer_states.values():
                for inf in state["found_inf_per_device"].values():
                    found, skipped = True, skipped or inf
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            self.history.append({"scale": float(self._scaler.loss_scale), "skipped": skipped})
            self._scaler.adjust(not skipped)
        self._per_optimizer_states = defaultdict(_fresh_state)

    def _new_scale_value(self, new_scale):
        """update(new_scale)'s value: a Python float, or a 1-element tensor on this device without grad."""
        if isinstance(new_scale, float):
            return new_scale
        if not isinstance(new_scale, Tensor):
            # PyTorch reads new_scale.device here, so anything else fails with this AttributeError.
            raise AttributeError(f"'{type(new_scale).__name__}' object has no attribute 'device'")
        reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor with "
                  "requires_grad=False.")
        if new_scale.device != self._device or storage(new_scale).size != 1 or new_scale.requires_grad:
            raise AssertionError(reason)
        return new_scale.item()

    # -- getters, setters, state -------------------------------------------------------------------------
    def get_scale(self):
        """The current scale as a Python float: init_scale before the first scale(), 1.0 when disabled."""
        if not self._enabled:
            return 1.0
        return float(self._scaler.loss_scale) if self._scaling else self._init_scale

    def get_growth_factor(self):
        return self._scaler.state.factor

    def set_growth_factor(self, new_factor):
        self._scaler.set(factor=new_factor)

    def get_backoff_factor(self):
        return self._scaler.state.backoff

    def set_backoff_factor(self, new_factor):
        self._scaler.set(backoff=new_factor)

    def get_growth_interval(self):
        return self._scaler.state.period

    def set_growth_interval(self, new_interval):
        self._scaler.set(period=new_interval)

    def _get_growth_tracker(self):
        return self._scaler.counter if self._enabled else 0

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """{'scale', 'growth_factor', 'backoff_factor', 'growth_interval', '_growth_tracker'}; {} when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self.get_growth_factor(),
                "backoff_factor": self.get_backoff_factor(), "growth_interval": self.get_growth_interval(),
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        """Restore what state_dict() saved; every key is read before anything changes (a missing one: KeyError)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        keys = ("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker")
        values = {k: state_dict[k] for k in keys}
        for k in keys:
            _real(f"state_dict[{k!r}]", values[k])
        if not self._scaling:
            self._init_scale = values["scale"]
        self._scaler.set(loss_scale=values["scale"], counter=int(values["_growth_tracker"]),
                         factor=values["growth_factor"], backoff=values["backoff_factor"],
                         period=values["growth_interval"])

    # -- the engine's training-state protocol (minifp.checkpoint) -------------------------------------------
    def _engine_state(self):
        return self.state_dict()

    def _engine_restore(self, state):
        if self._enabled:
            keys = ("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker")
            missing = sorted(set(keys) - set(state))
            if missing or set(state) - set(keys):
                raise ValueError(f"a GradScaler's state holds {sorted(state)}, not {sorted(keys)}")
            for k, v in state.items():
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
                    raise ValueError(f"its {k!r} must be a finite number, got {v!r}")
        return lambda: self.load_state_dict(dict(state))

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                     "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_scaling"] = False       # PyTorch pickles no _scale: the next scale() starts from the saved one
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        if not self._enabled:
            return f"GradScaler(device={self._device!r}, enabled=False)"
        return (f"GradScaler(device={self._device!r}, scale={self.get_scale()}, growth_factor="
                f"{self.get_growth_factor()}, backoff_factor={self.get_backoff_factor()}, growth_interval="
                f"{self.get_growth_interval()})")


class CudaGradScaler(GradScaler):
    """torch.cuda.amp.GradScaler(init_scale=2.0**16, ...): GradScaler("cuda", ...), with PyTorch's FutureWarning."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
