"""minifp's engine API: what the faces (minifp.torch, minifp.keras, minifp.tf) build on, and all they may use.

A face adds its framework's names, layouts, defaults and semantics on top of these and never imports a private
module of the engine nor touches an underscore attribute of an engine object (tests/test_engine_api.py reads the
faces' sources and fails on any). Anything two faces need lives here once.

Tensors
    Tensor, tensor, apply             the tensor class, a tensor from values, any registered op by name
    op_function(name), op_method      a registered op as a function (a Tensor method) with the op's signature
    install_names(names, places, make)  every name of a face's table that the face does not write by hand
    make(cls, data, fmt)              a tensor of class cls over storage `data` (checked: fmt's storage dtype and values)
    rewrap(t, cls)                    t as a tensor of class cls: the same storage, format, device and graph
    made_like(t, data, fmt)           a tensor of t's result class and device over new storage
    storage(t), values(t)             the storage array; the float32 values (exact)
    take(t, array), convert(t, fmt)   hand a fresh float32 array to t; re-store t in another format, in place
    detach_(t), made_by(t)            cut t from its graph in place; the name of the op that made t (None: a leaf)
    made_of(t)                        that op's inputs and parameters (None: a leaf)
    become(t, new)                    t takes new's storage and place in the graph, in place (in-place ops); nodes made
                                      before still read t as it was
    note_change(t), inplace_version(t)  count an in-place change made outside the graph; how many t has had
                                      (backward's and gradients' on_stale hear what a graph read before a change)
    memory_held, memory_peak, reset_memory_peak   the bytes tensors' storages hold on a device, and the peak
    Place, place(name), CPU, CUDA     where a tensor's storage lives (t.device): a str "cpu" or "cuda" with torch.device's
                                      type, index and printing
    round_to, widen, MODES            rounding and widening of arrays
Autodiff and state of the thread
    backward, gradients               .grad from a root (of given inputs only: inputs=); gradients of targets without
                                      touching .grad (a tape); create_graph=True: gradients that are tensors of the
                                      graph (each op's VJP run as engine ops), for higher-order gradients
    add_gradient_hook(t, fn)          fn(gradient) run on t's gradient in each sweep (tensor hooks, retain_grad)
    function_node(outputs, inputs, backward, name=None)   outputs computed outside the graph become one node's, whose
                                      gradient is backward(*output gradients) (a face's custom autograd functions)
    grad_mode, no_grad, enable_grad, is_grad_enabled, Autocast, autocast_scope, current_autocast, training_scope,
    current_training (a layer call's training flag, passed down to the layers it calls),
    float32_products, set_float32_products (TF32 switches), layer_scope, watched_call, unwatched, is_layer
Threads
    threads(), set_threads(n)         the threads minifp computes on (its kernels' parts, OpenBLAS's), process-wide
Devices
    Device, IDEAL, H100, CUBLAS, device_numerics(device), set_device_numerics(device, numerics)   a device's numerics as a
    value, and which one a device name ("cpu", "cuda", "ideal") computes as
Training
    the optimizer rules; update(rule, p, grad, slots) (float32 math, one rounding into each weight's format, the
    parameter's optimizer state kept in its slots' tensors: every face's optimizer state lives there); the loss scales
    (NoOpLossScale, StaticLossScale, DynamicLossScale: values) and LossScaler (a run's scale, in one place, that
    every face's scaler shows), unscale_grads, unscaled, all_finite, update_running_stats
Tools
    generator, rng, manual_seed, get_random_state, set_random_state; new_stream(seed), stream_state(stream),
    set_stream_state(stream, data), STREAM_STATE_BYTES (independent seeded streams for a face's generator objects,
    and their state as bytes); atomic_file; checks (argument checks);
    array_module, to_numpy, real; the formats (Format, as_format, format_of, finfo, promote, FORMATS, float32, ...)
"""
from __future__ import annotations

import gc

from . import _autograd, _checks as checks, _memory, _speed
from ._autograd import add_gradient_hook, backward, gradients, note_change, inplace_version
from ._backend import array_module, to_numpy
from ._dispatch import apply, function_node
from ._devices import CUBLAS, DEVICES, H100, IDEAL, Device, numerics as device_numerics
from ._files import atomic_file
from ._formats import (FORMATS, Format, as_format, bfloat16, e8m0, finfo, float4_e2m1, float6_e2m3, float6_e3m2,
                       float8_e4m3, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float16, float32, int8, promote,
                       tf32, _BY_STORAGE)
from ._layers import is_layer, update_running_stats, watched_call
from ._loss_scale import DynamicLossScale, LossScaler, NoOpLossScale, StaticLossScale, all_finite, unscale_grads
from ._optim import (KAHAN, UPDATE_ROUNDINGS, UpdateKernels, state_format, adadelta_update, adagrad_state, adagrad_update, adam_update,
                     adamax_update, apply_rule, asgd_update, nadam_update, radam_update, rprop_update,
                     check_update_rounding, keras_adagrad_update, keras_adam_update, keras_clip_gradients,
                     keras_nadam_u, keras_nadam_update, keras_rmsprop_update,
                     keras_adadelta_update, keras_adafactor_update, keras_adamax_update, keras_ftrl_update,
                     keras_lamb_update, keras_lion_update, keras_muon_update, keras_schedule_free_adamw_update,
                     keras_sgd_update, rmsprop_update, sgd_update, update, update_weight)
from ._ops import OPS
from ._public import enable_grad, is_grad_enabled, no_grad, public
from ._random import (STREAM_STATE_BYTES, generator, get_state as get_random_state, manual_seed, new_stream, rng,
                      set_state as set_random_state, set_stream_state, stream_state)
from ._rounding import MODES, round_to, widen
from ._seams import SEAMS
from ._state import FLOAT32_PRODUCTS, STATE, Autocast, Setting, autocast_scope, grad_mode, layer_scope, training_scope
from ._tensor import CPU, CUDA, Place, Tensor, check_storage, place, real, take, tensor

__all__ = ["Tensor", "tensor", "apply", "function_node", "Place", "place", "CPU", "CUDA", "op_function", "op_method", "install_names", "make", "rewrap", "made_like", "storage", "values", "take", "convert", "detach_",
           "made_by", "made_of", "round_to", "widen", "MODES", "fma", "backward", "gradients", "add_gradient_hook", "note_change", "inplace_version", "grad_mode", "no_grad", "enable_grad",
           "is_grad_enabled", "Autocast", "autocast_scope", "current_autocast", "training_scope", "current_training", "float32_products",
           "set_float32_products", "threads", "set_threads", "Device", "IDEAL", "H100", "CUBLAS", "device_numerics", "set_device_numerics", "set_storage", "become", "memory_held", "memory_peak", "reset_memory_peak", "layer_scope", "watched_call", "unwatched", "is_layer", "update_running_stats",
           "sgd_update", "adam_update", "rmsprop_update", "adagrad_update", "adagrad_state", "adadelta_update",
           "adamax_update", "nadam_update", "radam_update", "rprop_update", "asgd_update", "keras_sgd_update",
           "keras_adam_update", "keras_rmsprop_update", "keras_nadam_update", "keras_nadam_u",
           "keras_adagrad_update", "keras_adamax_update", "keras_adadelta_update", "keras_ftrl_update",
           "keras_lion_update", "keras_lamb_update", "keras_adafactor_update", "keras_schedule_free_adamw_update",
           "keras_muon_update", "keras_clip_gradients", "update", "apply_rule", "update_weight", "check_update_rounding",
           "UPDATE_ROUNDINGS", "KAHAN", "UpdateKernels", "state_format", "NoOpLossScale", "StaticLossScale", "DynamicLossScale", "LossScaler", "unscale_grads",
           "unscaled", "all_finite", "generator", "rng", "manual_seed", "get_random_state", "set_random_state",
           "new_stream", "stream_state", "set_stream_state", "STREAM_STATE_BYTES", "atomic_file", "checks", "array_module", "to_numpy", "real", "Format", "as_format", "format_of", "finfo",
           "promote", "FORMATS", "float32", "tf32", "float16", "bfloat16", "float8_e4m3", "float8_e5m2",
           "float8_e4m3fnuz", "float8_e5m2fnuz", "float6_e2m3", "float6_e3m2", "float4_e2m1", "e8m0", "int8"]


def fma(a, b, c):
    """a * b + c rounded once to float32 (a fused multiply-add), for float32 NumPy or CuPy arrays or scalars."""
    with SEAMS.quiet():         # overflow to inf and inf * 0 are the arithmetic's, not accidents
        return SEAMS.fma(array_module(a, b, c), a, b, c)


def op_function(name):
    """The public function that applies the registered op `name`, with the op's signature and doc."""
    return public(OPS[name])


def op_method(name):
    """The same as a Tensor method (the op's first input is self)."""
    return public(OPS[name], method=True)


def install_names(names, places, make):
    """Give every name of a face's table `names` ({op: ("place.attr", ...)}) that its place does not define (the
    face's hand-written functions and methods come first) make(op, place), the engine's op under that name.
    places: {"place": a module, a namespace or a class}. Returns the names it gave."""
    given = []
    for op, row in names.items():
        for name in row:
            where, _, attr = name.partition(".")
            place = places[where]
            if not hasattr(place, attr):
                setattr(place, attr, make(op, place))
                given.append(name)
    return given


def make(cls, data, fmt, requires_grad=False, device=None):
    """A tensor of class `cls` (Tensor or a face's subclass, whose __init__ is not called) over storage `data`:
    an array of fmt's storage dtype holding only fmt's values (checked), or of integers or bools for fmt None."""
    fmt = None if fmt is None else as_format(fmt)
    check_storage(data, fmt)
    return cls._wrap(data, fmt, bool(requires_grad), None, device and place(device))


def rewrap(t, cls):
    """t as a tensor of class `cls`: the same storage, format, device, requires_grad and place in the graph."""
    out = cls._wrap(t._data, t.fmt, t.requires_grad, t._node, t.device)
    out._float32 = t._float32
    return out


def made_like(t, data, fmt):
    """A new tensor of t's result class and device over storage `data` of format fmt (checked, as make's)."""
    fmt = None if fmt is None else as_format(fmt)
    check_storage(data, fmt)
    return t._like(data, fmt)


def storage(t):
    """t's storage array (the format's storage dtype; integers or bools for integer tensors). Read it; never write
    into it: change values with t.assign(values) or take(t, array)."""
    return t._data


def values(t):
    """t's values as float32 (exact; an integer tensor's cast)."""
    return t.float32()


def convert(t, fmt):
    """Re-store t's values in another format, in place (PyTorch's module.half() and `p.data = p.data.float()`):
    rounded once into fmt; t keeps its identity (a parameter stays the parameter its optimizer holds)."""
    fmt = as_format(fmt)
    t._data, t.fmt, t._float32 = round_to(t.float32(), fmt), fmt, None
    if _memory.WATCHED and t.device in _memory.WATCHED:
        _memory.note(t._data, t.device)
    return t


def set_storage(t, data, fmt, device=None):
    """Replace t's storage by `data` of format fmt (checked, as make's), in place, and its device where given (a
    face's emulated "cuda" keeps host arrays): t keeps its identity."""
    fmt = None if fmt is None else as_format(fmt)
    check_storage(data, fmt)
    t._data, t.fmt, t._float32 = data, fmt, None
    if device is not None:
        t.device = place(device)
    if _memory.WATCHED and t.device in _memory.WATCHED:
        _memory.note(data, t.device)
    return t


def become(t, new, counted=True):
    """t stands for `new` from now on, in place (an in-place op: PyTorch's x.add_(y)): new's storage, format,
    device and place in the graph; t keeps its identity. Compute `new` from rewrap(t, cls), not from t, so that
    its node reads t's values before the change. new's node keeps t as it was: the backward reads that wherever a
    node made before the change reads t (PyTorch's graph edges point at the version they read). counted: whether it
    is a change of t's values that counts (note_change); a face's view made anew from its changed base is not."""
    node = new._node
    if node is not None and node is not t._node and node.replaced is None:
        node.replaced = rewrap(t, type(t))
        type(node).newest_replacing = max(type(node).newest_replacing, node.seq)
    if counted:
        _autograd.note_change(t, new._node)
    t._data, t.fmt, t._node, t.requires_grad, t.device = new._data, new.fmt, new._node, new.requires_grad, new.device
    t._float32 = new._float32
    return t


def detach_(t):
    """Cut t from its graph in place: a leaf that requires no gradient (PyTorch's detach_)."""
    t._node, t.requires_grad = None, False
    return t


def made_by(t):
    """The name of the op whose result t is, or None for a leaf."""
    return None if t._node is None else t._node.op.name


def made_of(t):
    """(the inputs of the op whose result t is, as it took them: tensors, numbers, None; its parameters), or None
    for a leaf: the graph a face shows (PyTorch's grad_fn.next_functions)."""
    return None if t._node is None else (tuple(t._node.inputs), dict(t._node.params))


def memory_held(device):
    """The bytes the storages of the tensors on `device` hold now (each array once); counting starts at the first
    call of memory_held, memory_peak or reset_memory_peak for the device."""
    # (type(), not isinstance: isinstance asks a dead weakref.proxy for its __class__, which raises)
    _memory.watch(device, (o for o in gc.get_objects() if issubclass(type(o), Tensor)))
    return _memory.held(device)


def memory_peak(device):
    """The most bytes they held since counting started or the last reset_memory_peak."""
    memory_held(device)
    return _memory.peak(device)


def reset_memory_peak(device):
    memory_held(device)
    _memory.reset_peak(device)


def current_autocast():
    """The Autocast in effect in this thread, or None."""
    return STATE.autocast


def current_training():
    """Whether the layers being called in this thread train (True, False), or None when no call said."""
    return STATE.training


def unwatched():
    """Within this block no monitor counts (a layer building itself runs ops the run did not ask for)."""
    return Setting("monitors", ())


def float32_products(device, family):
    """The format a device rounds the factors of float32 products of `family` ("matmul" or "conv") to, or None."""
    return FLOAT32_PRODUCTS.get((device, family))


def set_float32_products(device, family, fmt):
    """Make `device` round the factors of its float32 `family` products to fmt (tf32, bfloat16), or not (None):
    process-wide, as PyTorch's torch.backends switches are."""
    if fmt is None:
        FLOAT32_PRODUCTS.pop((device, family), None)
    else:
        FLOAT32_PRODUCTS[(device, family)] = as_format(fmt)


def set_device_numerics(device, numerics):
    """Make the device named `device` ("cuda", "cpu") compute as the Device `numerics` (IDEAL, H100, or one derived
    from them): process-wide, as PyTorch's torch.backends switches are."""
    if not isinstance(numerics, Device):
        raise TypeError(f"set_device_numerics: numerics must be a Device (IDEAL, H100), got {numerics!r}")
    DEVICES[device] = numerics


def threads():
    """The threads minifp computes on: its kernels' parts and (where it can set them) OpenBLAS's."""
    return _speed.THREADS


def set_threads(n):
    """Compute on n threads from now on, process-wide: the kernels' parts (their bits do not depend on it) and the
    process's OpenBLAS where it is found (a float32 GEMM's low bits follow its thread split)."""
    _speed.set_threads(checks.integer("n", n, 1, where="set_threads: "))


def format_of(dtype):
    """The Format whose storage dtype is `dtype` (float64 counts as float32's), or None."""
    return _BY_STORAGE.get(dtype)


def unscaled(values, factor, divide=False):
    """(values * factor, or values / factor, as a new float32 array; whether every value was finite)."""
    return SEAMS.unscaled(values, factor, divide)
