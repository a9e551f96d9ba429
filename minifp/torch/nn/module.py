"""torch.nn.Module and Parameter: PyTorch's registration, traversal, casting and state dicts over engine tensors."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from ...engine import convert, is_grad_enabled, make, set_storage, storage, Tensor as _EngineTensor, watched_call
from .. import _device
from .._methods import check_grad
from .._tensor import Size, Tensor, as_dtype, bfloat16, float16, float32, format_of, parse_to

__all__ = ["Module", "Parameter"]


class Parameter(Tensor):
    """A tensor that a Module registers as a parameter when assigned to one of its attributes."""

    __slots__ = ()
    _result_class = Tensor          # ops on parameters give plain tensors, as in PyTorch

    def __new__(cls, data=None, requires_grad=True):
        if data is None:                    # the engine makes bare instances this way; __init__ fills them
            return super().__new__(cls)
        if not isinstance(data, _EngineTensor):
            raise TypeError(f"Parameter(data): data must be a Tensor, got {type(data).__name__}")
        if requires_grad and data.fmt is None:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        return make(cls, storage(data), data.fmt, requires_grad, data.device)

    def __init__(self, data=None, requires_grad=True):
        if data is None:                    # Parameter(): an empty float32 parameter, as PyTorch's
            _EngineTensor.__init__(self, np.zeros(0, np.float32), float32.fmt, bool(requires_grad))

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


_GRAD = _EngineTensor.grad              # the engine's slot, under the property that checks assignments


def _set_grad(p, g):
    if g is not None and hasattr(p, "device"):      # (copy.deepcopy and pickle fill a parameter's slots in their
        check_grad(p, g)                            # order: grad before device)
    _GRAD.__set__(p, g)


# p.grad = g is checked as PyTorch checks it (a parameter only: plain tensors are made on every op, and the
# optimizer checks every gradient before a step)
Parameter.grad = property(_GRAD.__get__, _set_grad, doc="The gradient the last backward left (None before one).")


class _IncompatibleKeys(NamedTuple):
    missing_keys: list
    unexpected_keys: list

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"

    __str__ = __repr__


def _addindent(s, n):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


def _typename(v):
    return "torch." + type(v).__name__ if isinstance(v, _EngineTensor) else type(v).__name__


def _values(v):
    """A state_dict value as (array of numbers, shape): face or engine tensors, NumPy arrays, or torch tensors
    (read through their own .numpy(), so torch is never imported here)."""
    if isinstance(v, _EngineTensor):
        return (storage(v) if v.fmt is None else v.float32()), tuple(v.shape)
    if type(v).__module__.split(".")[0] == "torch":
        v = v.detach().cpu()
        try:
            arr = v.numpy()
        except TypeError:           # bfloat16 and fp8 have no NumPy dtype in torch: widen first (exact)
            arr = v.float().numpy()
        return arr, tuple(arr.shape)
    arr = np.asarray(v)
    return arr, tuple(arr.shape)


def _recast(t, fmt, device):
    """Change a tensor's format and/or device in place (its identity kept, so optimizers still hold it)."""
    if fmt is not None and t.fmt is not None and fmt != t.fmt:
        convert(t, fmt)
    if device is not None and device != t.device:
        set_storage(t, _device.array_on(storage(t), device), t.fmt, device)
    if t.grad is not None:
        _recast(t.grad, fmt, device)


class _Handle:
    """What a module's register_*_hook returns (PyTorch's RemovableHandle): remove() takes the hook off."""

    _ids = iter(range(1 << 62))

    def __init__(self, hooks, extra=()):
        self.hooks, self.extra, self.id = hooks, extra, next(self._ids)

    @classmethod
    def add(cls, module, hooks, hook, prepend=False, marks=None):
        """hook added to `hooks` (the dict holds the hooks themselves, as PyTorch's does, so that code reading
        module._forward_pre_hooks finds them); marks: the side dict marking the hooks that take kwargs, which
        remove() cleans too."""
        module.__dict__["_hooked"] = True
        handle = cls(hooks, () if marks is None else (marks,))
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def remove(self):
        for hooks in (self.hooks, *self.extra):
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _hooked_call(module, args, kwargs):
    """module(*args, **kwargs) with its hooks: forward pre-hooks, the forward, forward hooks, and the backward hooks
    set up on identity copies of its tensor inputs and outputs (their gradients are the module's own)."""
    for key, hook in list(module._forward_pre_hooks.items()):
        with_kwargs = key in module._forward_pre_hooks_with_kwargs
        out = hook(module, args, kwargs) if with_kwargs else hook(module, args)
        if out is not None:
            if with_kwargs:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError(f"forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                       f"but got {out}.")
                args, kwargs = out
            else:
                args = out if isinstance(out, tuple) else (out,)
    backward = list(module._backward_hooks.values()) if is_grad_enabled() else []
    if backward:
        args = tuple(_copy(a) for a in args)
    result = watched_call(module, module.forward, *args, **kwargs)
    for key, hook in list(module._forward_hooks.items()):
        with_kwargs = key in module._forward_hooks_with_kwargs
        out = hook(module, args, kwargs, result) if with_kwargs else hook(module, args, result)
        if out is not None:
            result = out
    if backward:
        result = _backward_hooked(module, backward, args, result)
    return result


def _copy(a):
    """A tensor that requires a gradient as an identity copy of itself (a node of its own), else a as it is."""
    return a.clone() if isinstance(a, Tensor) and a.requires_grad else a


def _backward_hooked(module, hooks, args, result):
    """result (a tensor or a tuple) with the module's full backward hooks set on its outputs' and inputs' copies."""
    outputs = result if isinstance(result, tuple) else (result,)
    outputs = tuple(_copy(o) for o in outputs)
    inputs = [a for a in args if isinstance(a, Tensor) and a.requires_grad]
    grads = {"out": [None] * len(outputs), "in": [None] * len(inputs), "pending": len(inputs)}
    flowing = [k for k, o in enumerate(outputs) if isinstance(o, Tensor) and o.requires_grad]

    def call(grad_input):
        for hook in hooks:
            out = hook(module, grad_input, tuple(grads["out"]))
            grad_input = tuple(out) if out is not None else grad_input
        return grad_input

    def output_hook(i):
        def keep(g):
            grads["out"][i] = g
            if not inputs and i == flowing[0]:      # (the first output's gradient is the sweep's last)
                call((None,) * sum(isinstance(a, Tensor) for a in args))
        return keep

    def input_hook(i):
        def keep(g):
            grads["in"][i], grads["pending"] = g, grads["pending"] - 1
            if grads["pending"] == 0:       # the last of them: every input's gradient is known
                return call(tuple(grads["in"]))[i]
        return keep
    for i in flowing:
        outputs[i].register_hook(output_hook(i))
    for i, a in enumerate(inputs):
        a.register_hook(input_hook(i))
    return outputs if isinstance(result, tuple) else outputs[0]


class Module:
    """Base class of every layer: PyTorch's nn.Module."""

    _version = 1
    training: bool

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        for name, value in (("training", True), ("_parameters", OrderedDict()), ("_buffers", OrderedDict()),
                            ("_non_persistent_buffers_set", set()), ("_modules", OrderedDict()),
                            ("_forward_pre_hooks", OrderedDict()), ("_forward_hooks", OrderedDict()),
                            ("_forward_pre_hooks_with_kwargs", {}), ("_forward_hooks_with_kwargs", {}),
                            ("_backward_hooks", OrderedDict())):
            object.__setattr__(self, name, value)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        if "_hooked" in self.__dict__:      # (set by the first hook registered: one test on every other call)
            return _hooked_call(self, args, kwargs)
        return watched_call(self, self.forward, *args, **kwargs)

    # -- hooks ------------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) (with_kwargs: hook(module, args, kwargs)) before each forward; what it returns (not
        None) replaces the arguments."""
        return self._add_hook(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs, hook, prepend,
                              with_kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) (with_kwargs: hook(module, args, kwargs, output)) after each forward; what it
        returns (not None) replaces the output."""
        return self._add_hook(self._forward_hooks, self._forward_hooks_with_kwargs, hook, prepend, with_kwargs)

    def _add_hook(self, hooks, marks, hook, prepend, with_kwargs):
        handle = _Handle.add(self, hooks, hook, prepend, marks)
        if with_kwargs:
            marks[handle.id] = True
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) in each backward, once the gradients of the module's tensor inputs
        are known (grad_input all None where no input requires one); a tuple it returns replaces grad_input (of the
        module's first input taking part, where several do)."""
        return _Handle.add(self, self._backward_hooks, hook, prepend)

    def _engine_layers(self):
        return self.named_modules()

    def _engine_variables(self):
        return self.state_dict(keep_vars=True).items()

    # -- registration ---------------------------------------------------------------------------
    def _check_name(self, kind, name):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')

    def register_parameter(self, name, param):
        """Add a parameter (or None) under `name`."""
        self._check_name("parameter", name)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            f"(torch.nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer (a tensor that is state but not a parameter); non-persistent ones stay out of state_dict."""
        self._check_name("buffer", name)
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, _EngineTensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            f"(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        """Add a child module (or None) under `name`."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        self._check_name("module", name)
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        d = self.__dict__
        params, buffers, modules = d.get("_parameters"), d.get("_buffers"), d.get("_modules")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep="_parameters")      # (a parameter replaced keeps its place)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                f"(torch.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                f"(torch.nn.Module or None expected)")
            modules[name] = value
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, _EngineTensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                f"(torch.Tensor or None expected)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name, keep=None):
        """Remove `name` from every place an attribute may live but `keep` (where it is registered anew, in its
        place: PyTorch's order of named_parameters and state_dict)."""
        self.__dict__.pop(name, None)
        for store in ("_parameters", "_buffers", "_modules"):
            if store != keep:
                self.__dict__[store].pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(store, {}):
                del self.__dict__[store][name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    # -- traversal ---------------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(dotted name, module) for this module ("" for itself) and every module inside it, each once."""
        memo = set() if memo is None else memo
        if remove_duplicate and id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self):
        for _, child in self.named_children():
            yield child

    def _named_members(self, store, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mod_prefix, m in mods:
            for name, v in getattr(m, store).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                yield mod_prefix + ("." if mod_prefix else "") + name, v

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target):
        """The module at dotted path `target` ("" is this one)."""
        mod = self
        for item in target.split(".") if target else []:
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target):
        """The parameter at dotted path `target` ("layer.weight")."""
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        if name not in mod._parameters:
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return mod._parameters[name]

    def apply(self, fn):
        """Call fn on every child (recursively), then on this module; returns self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # -- modes ---------------------------------------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for child in self.children():
            child.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Drop every parameter's gradient (set_to_none=False: fill it with zeros instead)."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad = p.grad.detach()
                    p.grad.assign(np.zeros_like(storage(p.grad), np.float32))      # (in its memory order)

    # -- casting and moving (in place: parameters keep their identity) ---------------------------------------
    def _cast(self, fmt=None, device=None):
        for m in self.modules():
            for t in list(m._parameters.values()) + list(m._buffers.values()):
                if t is not None:
                    _recast(t, fmt if t.fmt is not None else None, device)
        return self

    def to(self, *args, **kwargs):
        """to(device), to(dtype), to(device, dtype), to(tensor): floating parameters and buffers cast in place."""
        device, d = parse_to(args, dict(kwargs), None)
        if d is not None and format_of(d) is None:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={d}")
        return self._cast(format_of(d) if d is not None else None, device)

    def float(self):
        return self._cast(float32.fmt)

    def double(self):
        return self._cast(float32.fmt)      # minifp has no float64: double is float32 (as the face's dtypes)

    def half(self):
        return self._cast(float16.fmt)

    def bfloat16(self):
        return self._cast(bfloat16.fmt)

    def type(self, dst_type):
        return self._cast(format_of(as_dtype(dst_type)))

    def cuda(self, device=None):
        return self._cast(device="cuda")

    def cpu(self):
        return self._cast(device="cpu")

    # -- state ----------------------------------------------------------------------------------------
    def _state_items(self, prefix=""):
        """(key, tensor) of this module's own parameters and persistent buffers, in PyTorch's order."""
        for name, p in self._parameters.items():
            if p is not None:
                yield prefix + name, p
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                yield prefix + name, b

    def _state(self, prefix=""):
        yield from self._state_items(prefix)
        for name, child in self._modules.items():
            if child is not None:
                yield from child._state(prefix + name + ".")

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An OrderedDict of dotted names ("0.weight", "bn.running_mean", ...) to detached tensors."""
        if args:                # PyTorch's deprecated positional (destination, prefix, keep_vars)
            destination, prefix, keep_vars = (list(args) + [destination, prefix, keep_vars][len(args):])[:3]
        out = OrderedDict() if destination is None else destination
        for key, t in self._state(prefix):
            out[key] = t if keep_vars else t.detach()
        return out

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs) (with_module:
        hook(module, ...)) before load_state_dict reads the keys under this module's prefix; it may change them."""
        hooks = self.__dict__.setdefault("_load_state_dict_pre_hooks", OrderedDict())
        handle = _Handle(hooks)
        hooks[handle.id] = (lambda *args: hook(self, *args)) if with_module else hook
        return handle

    def _load_defaults(self, prefix, state):
        """Entries an older checkpoint may lack that this module fills itself (BatchNorm's counter)."""
        return {}

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy values in by key; every key and shape is checked before anything changes. Returns
        (missing_keys, unexpected_keys); with strict, any of either raises PyTorch's RuntimeError."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        if not isinstance(strict, bool):
            raise TypeError(f"load_state_dict(): strict must be True or False, got {strict!r}")
        state = dict(state_dict)
        for prefix, m in self.named_modules():
            prefix = prefix + "." if prefix else ""
            for hook in m.__dict__.get("_load_state_dict_pre_hooks", {}).values():
                hook(state, prefix, {}, strict, [], [], [])         # (they may rename keys: weight_norm's)
            for k, v in m._load_defaults(prefix, state).items():
                state.setdefault(k, v)
        own = OrderedDict(self._state())
        missing = [k for k in own if k not in state]
        unexpected = [k for k in state if k not in own]
        errors, pairs = [], []
        for key, t in own.items():
            if key not in state:
                continue
            values, shape = _values(state[key])
            if shape != tuple(t.shape):
                errors.append(f"size mismatch for {key}: copying a param with shape {Size(shape)!r} from "
                              f"checkpoint, the shape in current model is {Size(t.shape)!r}.")
            elif np.asarray(values).dtype.kind not in "biuf" and not hasattr(values, "__cuda_array_interface__"):
                errors.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                              f'{Size(t.shape)!r} and whose dimensions in the checkpoint are {Size(shape)!r}, an '
                              f'exception occurred : (\'values of dtype {np.asarray(values).dtype} are not '
                              f'numbers\',).')
            else:
                pairs.append((t, state[key], values))
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(type(self).__name__,
                                                                                  "\n\t".join(errors)))
        for t, v, values in pairs:
            same = isinstance(v, _EngineTensor) and v.fmt == t.fmt and v.device == t.device
            if t.fmt is None and not same:      # PyTorch's copy_ into an integer buffer casts (floats truncate)
                values = np.asarray(values).astype(storage(t).dtype)
            t.assign(storage(v) if same else values)       # the same format: the same bits
        return _IncompatibleKeys(missing, unexpected)

    # -- printing -------------------------------------------------------------------------------------
    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({k}): " + _addindent(repr(m), 2) for k, m in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if lines:
            body = extra_lines[0] if len(extra_lines) == 1 and not child_lines else \
                "\n  " + "\n  ".join(lines) + "\n"
        return self._get_name() + "(" + body + ")"
