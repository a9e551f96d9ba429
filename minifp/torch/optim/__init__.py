"""torch.optim's face: SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, Rprop, ASGD, SparseAdam
and LBFGS (lbfgs.py) with PyTorch's names, defaults, checks and state_dict; swa_utils for weight averaging.

The update rules themselves are the engine's (minifp.engine: sgd_update, adam_update, ...), computed in float32
(a float16 or bfloat16 parameter's state in its own format, each op rounded into it, as PyTorch keeps it); this
module adds PyTorch's param_groups, state keyed by parameter, argument checks and error texts. foreach and fused
choose the kernels the rules follow as PyTorch chooses its implementation (on "cuda": foreach by default, the
single-tensor code with foreach=False, the fused kernels with fused=True; on the CPU: the single-tensor code, or
with foreach=True the foreach code's order of ops, recorded in float32, not fitted in half precision);
capturable and differentiable are accepted and kept in the groups as PyTorch keeps them, and change nothing.
minifp adds one keyword to every optimizer: update_rounding="nearest" | "stochastic" | "kahan", for
low-precision (bfloat16, float16) weights without a float32 master copy (see Optimizer).
"""
from __future__ import annotations

import copy
import functools
import numbers
import warnings
from collections import defaultdict

import numpy as np

from .._device import array_on
from .._methods import check_grad
from ..nn.module import Parameter
from ... import engine
from ...engine import (enable_grad, float32 as _float32, made_like, make, no_grad, real, round_to, storage, Tensor,
    to_numpy)
from . import lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
           "Rprop", "ASGD", "SparseAdam", "LBFGS", "lr_scheduler", "swa_utils", "required"]


class _RequiredParameter:
    """The default of a hyperparameter that every param group must give."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()

_TENSOR_TYPES = {"float32": "FloatTensor", "float16": "HalfTensor", "bfloat16": "BFloat16Tensor",
                 "float64": "DoubleTensor", "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
                 "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor"}


def _typename(obj):
    """torch.typename(obj): 'torch.FloatTensor' for a float32 tensor, 'float' for 1.0, 'module.Class' otherwise."""
    if isinstance(obj, Tensor):
        name = obj.fmt.name if obj.fmt is not None else str(storage(obj).dtype)
        prefix = "torch.cuda." if obj.device == "cuda" else "torch."
        return prefix + _TENSOR_TYPES.get(name, "Tensor")
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    else:
        module, qualname = type(obj).__module__ or "", type(obj).__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def _number(name, value):
    """value if it is a real number; a TypeError naming the argument otherwise (PyTorch would fail comparing it)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return value
    raise TypeError(f"{name} must be a real number, got {value!r} (a {type(value).__name__})")


def _check_fused(defaults):
    """PyTorch's checks on fused; whether the optimizer is fused (then a GradScaler leaves the unscaling to its
    kernels: _step_supports_amp_scaling)."""
    if defaults.get("fused"):
        if defaults.get("differentiable"):
            raise RuntimeError("`fused` does not support `differentiable`")
        if defaults.get("foreach"):
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    return bool(defaults.get("fused"))


class Optimizer:
    """torch.optim.Optimizer: param_groups (dicts holding 'params' and every hyperparameter), state per parameter.

    Subclasses name their engine rule in `_rule` and the group keys it reads in `_rule_args`; step() reads them
    from each group at every step, so a scheduler that changes group['lr'] takes effect at the next step.

    State is kept as PyTorch keeps it: in each parameter's dtype (the step counts float32), every op of the update
    computing in float32 and rounding its result into that dtype. So a float16 model (`model.half()`) has
    float16 moments whose small values flush to zero, and its Adam turns weights into inf and NaN where
    exp_avg_sq and eps (1e-8) both flush (tests/torch/test_optim_half.py: PyTorch's CPU bits, recorded, with the
    CPU kernels' quirks: see minifp.engine.UpdateKernels).

    The update follows PyTorch's kernels for the parameter's device and the implementation PyTorch picks: on the
    CPU its single-tensor code; on "cuda" its foreach code unless foreach=False (the single-tensor code) or
    fused=True (the fused kernels), as an H200 computes them (tests/torch/test_optim_cuda.py, recorded).

    update_rounding (minifp's, not PyTorch's): how the new value of a low-precision weight is rounded into its
    format: "nearest" (PyTorch's), "stochastic" or "kahan" (a compensation buffer per weight, in the weight's
    format: state 'kahan_comp', saved with state_dict); see minifp.engine.update_weight. It changes nothing for
    float32 weights. With "stochastic" or "kahan" the rest of the state is float32 (a master copy's bookkeeping)
    and only the new weight is rounded. It is the optimizer's, not a param group's, so defaults and param_groups
    stay PyTorch's.
    """

    _rule = None
    _rule_args: tuple = ()
    update_rounding = "nearest"

    def __init__(self, params, defaults, *, update_rounding="nearest"):
        self.update_rounding = engine.check_update_rounding(update_rounding)
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got " + _typename(params))
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        self._opt_called = False
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # -- parameter groups ----------------------------------------------------------------------------------
    def add_param_group(self, param_group):
        """Add a group of parameters (a dict with 'params'); hyperparameters it leaves out take the defaults."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            params = list(params)
        named = [p for p in params if isinstance(p, tuple)]     # named_parameters(): (name, tensor) pairs
        if named and len(named) != len(params):
            raise ValueError("all optimizer params should be with/without names. Some param names are missing")
        names = [name for name, _ in named]
        params = [p for _, p in named] if named else params
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(p))
            if not self.defaults.get("differentiable") and not (p.is_leaf or getattr(p, "retains_grad", False)):
                raise ValueError("can't optimize a non-leaf Tensor")
        group = {**param_group, "params": params, **({"param_names": names} if names else {})}
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError("parameter group didn't specify a value of required optimization parameter "
                                 + name)
            group.setdefault(name, default)
        if len({id(p) for p in params}) != len(params):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        for g in self.param_groups:
            if ("param_names" in g) != bool(names):
                raise ValueError("all optimizer param groups should be with/without names. cannot add param group "
                                 f"{'with' if names else 'without'} names to the optimizer")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    # -- stepping --------------------------------------------------------------------------------------------
    def zero_grad(self, set_to_none=True):
        """Set every gradient to None (the default) or, with set_to_none=False, to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.assign(np.zeros_like(storage(p.grad), np.float32))      # (in its memory order)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns closure()'s loss when a closure is given."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self._opt_called = True
        self._check_state()
        with no_grad():
            for group in self.param_groups:
                args = {name: group[name] for name in self._rule_args}
                args.update(self._extra_args(group))
                if getattr(self, "grad_scale", None) is not None:     # set by a GradScaler for a fused step
                    args["grad_scale"] = self.grad_scale
                for p in group["params"]:
                    if p.grad is not None:
                        self._update(p, args, group)
        return loss

    def _extra_args(self, group):
        return {}

    def _state_keys(self, group):
        """The entries a parameter's state must have once it has any (PyTorch reads them without a default)."""
        return ()

    def _check_state(self):
        """A gradient of the wrong shape, dtype or device, or a state that lost an entry (a bad load_state_dict),
        stops the step before anything changes, with PyTorch's error (its KeyError for the state, instead of
        restarting that moment at zero)."""
        for group in self.param_groups:
            for p in group["params"]:
                if type(p) is not Parameter:       # (a Parameter's gradient was checked when it was assigned)
                    check_grad(p, p.grad)
            keys = self._state_keys(group)
            for p in group["params"] if keys else ():
                state = self.state.get(p)
                missing = [k for k in keys if k not in state] if state and p.grad is not None else ()
                if missing:
                    raise KeyError(missing[0])

    def _update(self, p, args, group):
        """The engine's update of p by the rule, p's state (its tensors) updated in place."""
        state = self.state.get(p, {})
        engine.update(self._rule, p, p.grad, state, self.update_rounding,
                      lambda name, array, fmt: _state_tensor(p, array, fmt), _kernels(p, group), **args)
        if "grad_scale" in args:       # a fused kernel writes the gradient back unscaled
            p.grad.assign(engine.values(p.grad) / np.float32(args["grad_scale"]))
        engine.note_change(p)          # PyTorch's in-place update: a graph made before may no longer read p
        if state and p not in self.state:       # a rule without state (SGD without momentum) adds no entry
            self.state[p] = state

    # -- checkpoints -----------------------------------------------------------------------------------------
    def state_dict(self):
        """{'state': {index: {name: tensor}}, 'param_groups': [{hyperparameters..., 'params': [indices]}]}."""
        index = {}
        groups = []
        for group in self.param_groups:
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore what state_dict() gave (or PyTorch's); everything is checked before anything changes."""
        state, groups = self._checked(state_dict)
        self.state = state
        self.param_groups = groups

    def _checked(self, state_dict):
        """(new state, new param_groups) from state_dict; changes nothing."""
        if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
            got = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict).__name__
            raise ValueError(f"optimizer state dict must be a dict with keys 'state' and 'param_groups', got {got}")
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(self.param_groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(self.param_groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        by_index = {}
        for group, saved in zip(self.param_groups, saved_groups):
            by_index.update(zip(saved["params"], group["params"]))
        state = defaultdict(dict)
        for key, values in state_dict["state"].items():
            if key not in by_index:
                state[key] = copy.deepcopy(values)
                continue
            p = by_index[key]
            if not isinstance(values, dict):
                raise TypeError(f"optimizer state dict: state {key!r} must be a dict, got {type(values).__name__}")
            state[p] = {name: self._load_value(p, name, v, key) for name, v in values.items()}
        # A saved group without names keeps the optimizer's (PyTorch's update_group)
        groups = [{**saved, "params": group["params"], **({"param_names": group["param_names"]}
                   if "param_names" in group and "param_names" not in saved else {})}
                  for group, saved in zip(self.param_groups, saved_groups)]
        return state, groups

    def _load_value(self, p, name, value, key):
        """One loaded state value for parameter p (a copy in the state's format, checked against p's shape)."""
        return _loaded(p, name, value, key, self._state_format(p))

    def _state_format(self, p):
        """The format of p's state arrays (the engine's state_format)."""
        return engine.state_format(_kernels(p, self.defaults), self.update_rounding)

    # -- the engine's training-state protocol (minifp.checkpoint) -------------------------------------------
    def _engine_params(self):
        return [p for group in self.param_groups for p in group["params"]]

    def _engine_state(self):
        return self.state_dict()

    def _engine_restore(self, state, params):
        state = _from_data(state)
        self._checked(state)                # raises on a state that does not fit; changes nothing
        return lambda: self.load_state_dict(state)

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {key}: {group[key]}" for key in sorted(group) if key != "params"]
        return "\n".join(lines) + "\n)"


def _from_data(state):
    """A state dict as a checkpoint holds it (plain data) as state_dict() gives it: the state's keys back to
    parameter indices (JSON keeps only strings), betas back to tuples."""
    state = copy.deepcopy(state)
    state["state"] = {int(k) if isinstance(k, str) and k.isdigit() else k: v for k, v in state["state"].items()}
    for group in state["param_groups"]:
        if isinstance(group.get("betas"), list):
            group["betas"] = tuple(group["betas"])
    return state


def _kernels(p, group):
    """The engine's UpdateKernels for p in group (None: the CPU's single-tensor float32 ones): its device's, in the
    implementation PyTorch picks (fused where asked; foreach where asked, and by default on CUDA unless
    differentiable), with a float16 or bfloat16 parameter's state in its dtype (each op rounding into it)."""
    half = p.fmt is not None and p.fmt.name in ("float16", "bfloat16")
    foreach = group.get("foreach")
    if p.device == "cpu" and not half and not foreach:
        return None             # the CPU's single-tensor float32 kernels: the engine's default, and hot path
    device = "cpu" if p.device == "cpu" else "cuda"
    default = foreach is None and device == "cuda" and not group.get("differentiable")
    impl = "fused" if group.get("fused") else "foreach" if foreach or default else "single"
    return _update_kernels(p.fmt if half else _float32, device, impl)


@functools.lru_cache(maxsize=None)
def _update_kernels(fmt, device, impl):
    """One UpdateKernels value per choice (made once: a step asks for one per parameter)."""
    return engine.UpdateKernels(fmt, device, impl)


def _state_tensor(p, array, fmt=_float32):
    """A state tensor of p's class (float32, or the Kahan buffer in p's format): on p's device, or on the host
    for the 0-dim step count (as PyTorch)."""
    if array.ndim == 0:
        return make(type(p), np.asarray(array, np.float32), _float32, device="cpu")
    return made_like(p, array_on(array, p.device), fmt=fmt)


def _loaded(p, name, value, key, fmt=_float32):
    """One loaded state value: tensors and arrays as tensors of fmt (0-dim ones float32; a copy), checked against
    p's shape."""
    if isinstance(value, Tensor):
        value = value.float32() if value.fmt is not None else storage(value)
    elif type(value).__module__.startswith("torch"):        # a state dict saved by real PyTorch
        value = value.detach().cpu().float().numpy()
    if isinstance(value, numbers.Real) or hasattr(value, "__array__") or type(value).__module__.startswith("cupy"):
        array = np.asarray(to_numpy(value))
        if not real(array.dtype):                     # a format's storage (a Kahan buffer) counts as real
            raise TypeError(f"optimizer state dict: state {key!r}[{name!r}] holds {array.dtype} values; "
                            f"it must hold real numbers")
        if array.ndim and array.shape != p.shape:
            raise ValueError(f"optimizer state dict: state {key!r}[{name!r}] has shape {array.shape}; its "
                             f"parameter has shape {p.shape}")
        # the Kahan buffer lives in p's format; other floating state in fmt (PyTorch casts it to p's dtype)
        fmt = p.fmt if name == engine.KAHAN and p.fmt is not None else fmt if array.ndim else _float32
        if not fmt.is_float32:
            return _state_tensor(p, round_to(np.array(array, np.float32), fmt), fmt)
        return _state_tensor(p, np.array(array, np.float32))
    return copy.deepcopy(value)


# -- the optimizers --------------------------------------------------------------------------------------------


class SGD(Optimizer):
    """torch.optim.SGD: momentum, dampening, Nesterov, L2 weight_decay, maximize (state: 'momentum_buffer')."""

    _rule = staticmethod(engine.sgd_update)
    _rule_args = ("lr", "momentum", "dampening", "nesterov", "weight_decay", "maximize")

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None, update_rounding="nearest"):
        if _number("lr", lr) < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if _number("momentum", momentum) < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if _number("weight_decay", weight_decay) < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _number("dampening", dampening)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        self._step_supports_amp_scaling = _check_fused(defaults)
        super().__init__(params, defaults, update_rounding=update_rounding)


def _check_adam(lr, eps, betas, weight_decay):
    """Adam's and AdamW's checks, in PyTorch's order and words."""
    if not 0.0 <= _number("lr", lr):
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= _number("eps", eps):
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise TypeError(f"betas must be a pair (beta1, beta2) of numbers in [0, 1), got {betas!r}")
    for i, beta in enumerate(betas):
        if not 0.0 <= _number(f"betas[{i}]", beta) < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
    if not 0.0 <= _number("weight_decay", weight_decay):
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Adam(Optimizer):
    """torch.optim.Adam: amsgrad, maximize, L2 weight_decay or decoupled_weight_decay (state: step, exp_avg, ...)."""

    _rule = staticmethod(engine.adam_update)
    _rule_args = ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize")

    def _state_keys(self, group):
        return ("step", "exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False, update_rounding="nearest"):
        _check_adam(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        self._step_supports_amp_scaling = _check_fused(defaults)
        super().__init__(params, defaults, update_rounding=update_rounding)

    def _extra_args(self, group):
        return {"decoupled": bool(group["decoupled_weight_decay"])}


class AdamW(Adam):
    """torch.optim.AdamW: Adam with decoupled weight decay (default 1e-2): the weight shrinks by 1 - lr*wd."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None,
                 update_rounding="nearest"):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True, update_rounding=update_rounding)


class RMSprop(Optimizer):
    """torch.optim.RMSprop: alpha, eps after the root, centered, momentum, weight_decay (state: step, square_avg)."""

    _rule = staticmethod(engine.rmsprop_update)
    _rule_args = ("lr", "alpha", "eps", "weight_decay", "momentum", "centered", "maximize")

    def _state_keys(self, group):
        return ("step", "square_avg") + (("momentum_buffer",) if group["momentum"] > 0 else ()) + \
            (("grad_avg",) if group["centered"] else ())

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False, *, update_rounding="nearest"):
        if not 0.0 <= _number("lr", lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= _number("eps", eps):
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= _number("momentum", momentum):
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= _number("weight_decay", weight_decay):
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= _number("alpha", alpha):
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults, update_rounding=update_rounding)


class Adagrad(Optimizer):
    """torch.optim.Adagrad: lr_decay, weight_decay, initial_accumulator_value; state made when the optimizer is."""

    _rule = staticmethod(engine.adagrad_update)
    _rule_args = ("lr", "lr_decay", "weight_decay", "eps", "initial_accumulator_value", "maximize")

    def _state_keys(self, group):
        return ("step", "sum")

    def _check_state(self):
        """Also PyTorch's refusal of fused Adagrad off the CPU (it has no CUDA kernel), at the first step."""
        super()._check_state()
        for group in self.param_groups:
            for p in group["params"]:
                if group["fused"] and p.grad is not None and p.device != "cpu":
                    raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of "
                                       "supported devices: ['mps', 'xpu', 'hpu', 'cpu', 'mtia', 'privateuseone'] "
                                       f"but {p.dtype} and {p.device}")

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None, update_rounding="nearest"):
        if not 0.0 <= _number("lr", lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= _number("lr_decay", lr_decay):
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= _number("weight_decay", weight_decay):
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= _number("initial_accumulator_value", initial_accumulator_value):
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= _number("eps", eps):
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        self._step_supports_amp_scaling = _check_fused(defaults)
        super().__init__(params, defaults, update_rounding=update_rounding)
        for group in self.param_groups:
            for p in group["params"]:
                arrays = engine.adagrad_state(p.float32(), group["initial_accumulator_value"])
                self.state[p] = {k: _loaded(p, k, a, k, self._state_format(p)) for k, a in arrays.items()}


def _check_betas(lr, eps, betas, weight_decay):
    """Adamax's, NAdam's and RAdam's checks, in PyTorch's order and words."""
    if not 0.0 <= _number("lr", lr):
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= _number("eps", eps):
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise TypeError(f"betas must be a pair (beta1, beta2) of numbers in [0, 1), got {betas!r}")
    for i, beta in enumerate(betas):
        if not 0.0 <= _number(f"betas[{i}]", beta) < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
    if not 0.0 <= _number("weight_decay", weight_decay):
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Adadelta(Optimizer):
    """torch.optim.Adadelta: rho, eps, weight_decay, maximize (state: step, square_avg, acc_delta)."""

    _rule = staticmethod(engine.adadelta_update)
    _rule_args = ("lr", "rho", "eps", "weight_decay", "maximize")

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False, update_rounding="nearest"):
        if not 0.0 <= _number("lr", lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= _number("rho", rho) <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= _number("eps", eps):
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= _number("weight_decay", weight_decay):
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults, update_rounding=update_rounding)


class Adamax(Optimizer):
    """torch.optim.Adamax: Adam over an infinity norm (state: step, exp_avg, exp_inf)."""

    _rule = staticmethod(engine.adamax_update)
    _rule_args = ("lr", "betas", "eps", "weight_decay", "maximize")

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False, update_rounding="nearest"):
        _check_betas(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults, update_rounding=update_rounding)


class NAdam(Optimizer):
    """torch.optim.NAdam: momentum_decay, decoupled_weight_decay (state: step, mu_product, exp_avg, exp_avg_sq)."""

    _rule = staticmethod(engine.nadam_update)
    _rule_args = ("lr", "betas", "eps", "weight_decay", "momentum_decay", "decoupled_weight_decay", "maximize")

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, update_rounding="nearest"):
        _check_betas(lr, eps, betas, weight_decay)
        if not 0.0 <= _number("momentum_decay", momentum_decay):
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults, update_rounding=update_rounding)


class RAdam(Optimizer):
    """torch.optim.RAdam: rectified Adam, decoupled_weight_decay (state: step, exp_avg, exp_avg_sq)."""

    _rule = staticmethod(engine.radam_update)
    _rule_args = ("lr", "betas", "eps", "weight_decay", "decoupled_weight_decay", "maximize")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False,
                 update_rounding="nearest"):
        _check_betas(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults, update_rounding=update_rounding)


class Rprop(Optimizer):
    """torch.optim.Rprop: per-weight step sizes grown by etas[1] and shrunk by etas[0] within step_sizes
    (state: step, prev, step_size)."""

    _rule = staticmethod(engine.rprop_update)
    _rule_args = ("lr", "etas", "step_sizes", "maximize")

    def _state_keys(self, group):
        return ("step", "prev", "step_size")

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False, update_rounding="nearest"):
        if not 0.0 <= _number("lr", lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < _number("etas[0]", etas[0]) < 1.0 < _number("etas[1]", etas[1]):
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults, update_rounding=update_rounding)


class ASGD(Optimizer):
    """torch.optim.ASGD: averaged SGD with a decaying step (state: step, eta, mu, ax: the averaged weights)."""

    _rule = staticmethod(engine.asgd_update)
    _rule_args = ("lr", "lambd", "alpha", "t0", "weight_decay", "maximize")

    def _state_keys(self, group):
        return ("step", "eta", "mu", "ax")

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False, *, update_rounding="nearest"):
        if not 0.0 <= _number("lr", lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= _number("weight_decay", weight_decay):
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults, update_rounding=update_rounding)


class SparseAdam(Optimizer):
    """torch.optim.SparseAdam: Adam on sparse gradients only. minifp has no sparse tensors (nn.Embedding's
    sparse=True is refused), so a step with a gradient raises PyTorch's error for dense gradients."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if not 0.0 < _number("lr", lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < _number("eps", eps):
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i in (0, 1):
            if not 0.0 <= _number(f"betas[{i}]", betas[i]) < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))

    def step(self, closure=None):
        """Evaluate the closure; any parameter with a (dense) gradient then stops the step, as in PyTorch."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self._opt_called = True
        if any(p.grad is not None for group in self.param_groups for p in group["params"]):
            raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        return loss


from .lbfgs import LBFGS  # noqa: E402
from . import swa_utils  # noqa: E402
from .._missing import missing as _missing  # noqa: E402
__getattr__ = _missing("minifp.torch.optim")
