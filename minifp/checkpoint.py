"""Checkpoints: a model's variables, its optimizer, the loss scale and minifp's random state, in one file.

The file is a zip of .npy arrays, as numpy.savez writes: `__index__` (a JSON document as uint8 bytes) and
`a0`, `a1`, ... (each array's raw bits as unsigned integers). The index records every variable's format and
every array's storage dtype, and holds the rest of the state as plain data, so loading reads no pickle and
runs no code. Saving writes a temporary file beside the target and renames it over the target (atomic);
loading reads and checks everything before it changes anything.
"""
from __future__ import annotations

import contextlib
import json
import os
import uuid
import zipfile

import numpy as np

from . import _checks, _random
from ._formats import _BY_STORAGE, Format
from ._tensor import Tensor

__all__ = ["save", "load", "read", "VERSION"]

VERSION = 1
_STORAGES = {np.dtype(d).name: np.dtype(d) for d in _BY_STORAGE}     # float16, bfloat16, float8_*, float32, ...
_FORMAT_FIELDS = ("exp_bits", "man_bits", "subnormals", "overflow", "infinities")


# -- the public calls ------------------------------------------------------------------------------


def save(path, model, optimizer=None, scaler=None):
    """Write model, optimizer (default: model.optimizer), scaler (a GradScaler) and minifp's random state to path."""
    optimizer = _default_optimizer(model, optimizer)
    _check_scaler(scaler)
    arrays = []
    index = _index(model, arrays)
    if optimizer is not None:
        index["optimizer"] = {"class": type(optimizer).__name__, "params": _param_names(model, optimizer),
                              "state": _encode(optimizer.state_dict(), arrays, "optimizer")}
    if scaler is not None:
        index["scaler"] = {"class": type(scaler).__name__, "state": _encode(scaler.state_dict(), arrays, "scaler")}
    index["random"] = _random.get_state()
    _write(path, index, arrays)


def load(path, model, optimizer=None, scaler=None):
    """Restore what save() wrote into model, optimizer (default: model.optimizer), scaler and minifp's random state.

    Every part is read and checked first; a file that does not hold a part asked for is refused.
    """
    optimizer = _default_optimizer(model, optimizer)
    _check_scaler(scaler)
    ckpt = read(path)
    steps = [_variables_step(model, ckpt["variables"])]
    if optimizer is not None:
        steps.append(_optimizer_step(path, model, optimizer, ckpt["optimizer"]))
    if scaler is not None:
        steps.append(_scaler_step(path, scaler, ckpt["scaler"]))
    if ckpt["random"] is not None:
        _random.set_state(ckpt["random"])      # checks its state whole; first, so that its refusal changes nothing
    for step in steps:
        step()


def read(path):
    """A checkpoint as data: {"variables": {name: Tensor}, "optimizer", "scaler": {"class", "state", ...} or None,
    "random": minifp's random state or None}."""
    try:
        with zipfile.ZipFile(path) as zf:
            index = json.loads(bytes(_member(zf, "__index__")).decode())
            if not isinstance(index, dict) or index.get("minifp_checkpoint") is None:
                raise ValueError("it has no minifp checkpoint index")
            if index["minifp_checkpoint"] != VERSION:
                raise ValueError(f"it is version {index['minifp_checkpoint']!r}; this minifp reads version {VERSION}")
            arrays = [_array(zf, i, name) for i, name in enumerate(index["arrays"])]
        return {"variables": dict(_variable(e, arrays) for e in index["variables"]),
                "optimizer": _decoded(index.get("optimizer"), arrays), "scaler": _decoded(index.get("scaler"), arrays),
                "random": index.get("random")}
    except (zipfile.BadZipFile, KeyError, IndexError, TypeError, ValueError, EOFError) as e:
        raise ValueError(f"cannot read {os.fspath(path)!r} as a minifp checkpoint: {e}") from None


# -- weights only (Model.save_weights / load_weights) --------------------------------------------------------


def save_weights(path, model):
    """Write only the model's variables (what Model.save_weights does)."""
    arrays = []
    _write(path, _index(model, arrays), arrays)


def load_weights(path, model):
    """Restore only the variables, from a file of save_weights() or save()."""
    _variables_step(model, read(path)["variables"])()


# -- checking state before changing anything ------------------------------------------------------------------


def checked_values(variables, state):
    """[(variable, values)] to assign, for every (name, variable): every name, shape and dtype checked first."""
    if not hasattr(state, "keys"):
        raise TypeError(f"state dict must be a dict of arrays by variable name, got {type(state).__name__}")
    own = dict(variables)
    missing, unexpected = sorted(set(own) - set(state)), sorted(set(state) - set(own), key=str)
    if missing or unexpected:
        hint = " (layers such as Dense make their variables on the first call: call the model once first)" \
            if missing else ""
        raise KeyError(f"state dict does not match the model: missing {missing}, unexpected {unexpected}{hint}")
    return [(v, _values(k, state[k], v)) for k, v in own.items()]


def _values(name, a, v):
    """`a` as values for variable v: a tensor, or an array read as numbers (in either byte order)."""
    if isinstance(a, Tensor):
        kind = a.data.dtype.kind if a.fmt is None else "f"
    else:
        a = np.asarray(a)                                  # assign reads it as numbers, in either byte order
        kind = "f" if a.dtype.name in _STORAGES else a.dtype.kind
    if kind not in ("biu" if v.fmt is None else "fiu") or a.shape != v.shape:
        raise ValueError(f"state dict entry {name!r} has shape {a.shape} and dtype {a.dtype}; the model's variable "
                         f"has shape {v.shape} and dtype {v.dtype} (values of another format are rounded into it)")
    return a


# -- pieces of load ----------------------------------------------------------------------------------------------


def _variables_step(model, tensors):
    pairs = checked_values(model.named_variables(), tensors)

    def apply():
        for v, t in pairs:
            v.assign(t.data if t.fmt == v.fmt else t)      # the same format: the same bits
    return apply


def _optimizer_step(path, model, optimizer, entry):
    name = type(optimizer).__name__
    if entry is None:
        raise ValueError(f"{os.fspath(path)!r} holds no optimizer state (saved by save_weights, or without an "
                         f"optimizer); load it with model.load_weights, or pass the parts it holds")
    _checks.keys(f"{os.fspath(path)!r}: the optimizer's entry", entry, ("class", "params", "state"))
    if not isinstance(entry["params"], list) or not all(isinstance(n, str) for n in entry["params"]):
        raise ValueError(f"{os.fspath(path)!r}: the optimizer's parameters must be a list of variable names")
    if entry["class"] != name:
        raise ValueError(f"{os.fspath(path)!r} holds the state of an optimizer of class {entry['class']}; "
                         f"optimizer is of class {name}")
    variables = dict(model.named_variables())
    unknown = [n for n in entry["params"] if n not in variables]
    if unknown:
        raise ValueError(f"{os.fspath(path)!r}: the optimizer's parameters {unknown} are not variables of the model")
    params = [variables[n] for n in entry["params"]]
    if optimizer.params and _param_names(model, optimizer) != entry["params"]:
        raise ValueError(f"optimizer updates {_param_names(model, optimizer)}; the checkpoint's optimizer updated "
                         f"{entry['params']}")
    prepared = optimizer._checked(entry["state"], params)

    def apply():
        if not optimizer.params:
            optimizer.build(params)        # a Keras-style optimizer gets its parameters before its first step
        optimizer._restore(prepared)
    return apply


def _scaler_step(path, scaler, entry):
    if entry is None:
        raise ValueError(f"{os.fspath(path)!r} holds no loss scaler state; pass scaler=None")
    _checks.keys(f"{os.fspath(path)!r}: the scaler's entry", entry, ("class", "state"))
    prepared = scaler._checked(entry["state"])
    return lambda: scaler._restore(prepared)


def _default_optimizer(model, optimizer):
    if not hasattr(model, "named_variables"):
        raise TypeError(f"model must be a minifp.nn.Module, got {type(model).__name__}")
    optimizer = getattr(model, "optimizer", None) if optimizer is None else optimizer
    if optimizer is not None and not all(hasattr(optimizer, a) for a in ("params", "_checked", "build")):
        raise TypeError(f"optimizer must be a minifp.optim.Optimizer or None, got {type(optimizer).__name__}")
    return optimizer


def _check_scaler(scaler):
    from .amp import GradScaler          # amp builds on this module's checks
    if scaler is not None and not isinstance(scaler, GradScaler):
        raise TypeError(f"scaler must be a minifp.amp.GradScaler or None (a LossScaleOptimizer is saved as the "
                        f"optimizer), got {type(scaler).__name__}")


def _param_names(model, optimizer):
    """The model's name of each parameter the optimizer updates, in the optimizer's order."""
    names = {id(v): k for k, v in model.named_variables()}
    unknown = [p.name or f"of shape {p.shape}" for p in optimizer.params if id(p) not in names]
    if unknown:
        raise ValueError(f"optimizer updates tensors that are not variables of the model: {unknown}")
    return [names[id(p)] for p in optimizer.params]


# -- the file ---------------------------------------------------------------------------------------------------


def _index(model, arrays):
    """The index of the model's variables (their arrays appended to `arrays`)."""
    entries = []
    for name, v in model.named_variables():
        arrays.append(v.numpy())
        fmt = None if v.fmt is None else {k: getattr(v.fmt, k) for k in _FORMAT_FIELDS + ("name",)}
        entries.append({"name": name, "format": fmt, "array": len(arrays) - 1})
    return {"minifp_checkpoint": VERSION, "variables": entries}


def _variable(entry, arrays):
    a, fmt = arrays[entry["array"]], entry["format"]
    if fmt is not None:
        fmt = Format(**{k: fmt[k] for k in _FORMAT_FIELDS}, name=fmt.get("name", ""))
    try:
        return str(entry["name"]), Tensor(a, fmt)      # refuses values the recorded format cannot hold
    except (TypeError, ValueError) as e:
        raise ValueError(f"variable {entry['name']!r}: {e}") from None


def _encode(obj, arrays, where):
    """obj as JSON-ready data; each array is appended to `arrays` and replaced by {"__array__": its number}."""
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj):
            raise TypeError(f"cannot save {where}: its keys must be strings, got {list(obj)}")
        return {k: _encode(v, arrays, f"{where}[{k!r}]") for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, np.ndarray):
        arrays.append(obj)
        return {"__array__": len(arrays) - 1}
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"cannot save {where}: a {type(obj).__name__} is not data (dicts, lists, numbers, arrays)")


def _decoded(obj, arrays):
    if isinstance(obj, dict):
        if set(obj) == {"__array__"}:
            return arrays[obj["__array__"]].copy()
        return {k: _decoded(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_decoded(v, arrays) for v in obj]
    return obj


def _target(path):
    """path as a string, once it is known not to be a folder nor to lie in a missing one."""
    try:
        path = os.fsdecode(os.fspath(path))
    except TypeError:
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}") from None
    if os.path.isdir(path):
        raise IsADirectoryError(f"path {path!r} is a folder; give a file name such as "
                                f"{os.path.join(path, 'model.npz')!r}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot save to {path!r}: the folder {folder!r} does not exist")
    return path


def _write(path, index, arrays):
    """Write the index and arrays to a temporary file beside path, then rename it over path."""
    path = _target(path)
    index["arrays"] = [a.dtype.name for a in arrays]
    header = np.frombuffer(json.dumps(index).encode(), np.uint8)
    temporary = os.path.join(os.path.dirname(os.path.abspath(path)), f".{os.path.basename(path)}.{uuid.uuid4().hex}")
    try:
        with open(temporary, "xb") as f:
            with zipfile.ZipFile(f, "w") as zf:
                _write_member(zf, "__index__", header)
                for i, a in enumerate(arrays):
                    _write_member(zf, f"a{i}", _bits(a))
            f.flush()
            os.fsync(f.fileno())           # on disk before it replaces the previous checkpoint
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise


def _write_member(zf, name, a):
    with zf.open(name + ".npy", "w", force_zip64=True) as out:      # as numpy.savez writes each array
        np.lib.format.write_array(out, a, allow_pickle=False)


def _bits(a):
    """a's raw bits as native unsigned integers of its width."""
    if a.dtype.name not in _STORAGES and a.dtype.kind not in "biuf":
        raise TypeError(f"cannot save an array of dtype {a.dtype}")
    return np.array(a, dtype=a.dtype.newbyteorder("="), order="C").view(f"u{a.dtype.itemsize}")


def _member(zf, name):
    with zf.open(name + ".npy") as f:
        return np.lib.format.read_array(f, allow_pickle=False)


def _array(zf, i, dtype_name):
    """Array i in the dtype the index names: its raw bits as unsigned integers, or its numbers, in either byte order."""
    dtype = _STORAGES.get(dtype_name) or np.dtype(dtype_name)
    if dtype.kind not in "biuf" and dtype.name not in _STORAGES:
        raise ValueError(f"array {i} has dtype {dtype_name!r}, which is not numbers")
    raw = _member(zf, f"a{i}")
    native = raw.astype(raw.dtype.newbyteorder("="), copy=False)
    if native.dtype.kind == "u" and native.dtype.itemsize == dtype.itemsize:
        return native.view(dtype)
    if native.dtype == dtype:
        return native
    raise ValueError(f"array {i} is stored as {raw.dtype}, not as the bits of {dtype_name}")
