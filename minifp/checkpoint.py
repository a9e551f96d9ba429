"""Checkpoints: a model's variables, its optimizer, the loss scale and minifp's random state, in one file.

Every face: a model is any face's layer, an optimizer any face's optimizer (a LossScaleOptimizer with its loss
scale), a scaler PyTorch's GradScaler; each speaks the engine's protocols of minifp/_layers.py, so that this module
reads and restores them without knowing their face. The fp8 delayed-scaling state of the model's GEMMs
(minifp.fp8_autocast) goes with the model in save() and load().

Variables (and fp8 states) are matched by name, never by position: a torch model's state_dict names, a Keras
model's paths of layer names with the names Keras made up counted in the model, not in the process (_named).

The file is a zip of .npy arrays, as numpy.savez writes: `__index__` (a JSON document as uint8 bytes) and
`a0`, `a1`, ... (each array's raw bits as unsigned integers). The index records every variable's format and
every array's storage dtype, and holds the rest of the state as plain data, so loading reads no pickle and
runs no code. Saving writes a temporary file beside the target and renames it over the target (atomic);
loading reads and checks everything before it changes anything.
"""
from __future__ import annotations

import json
import os
import zipfile

import numpy as np

from . import _checks, _random
from ._files import atomic_file
from ._formats import _BY_STORAGE, Format
from ._fp8 import DelayedScaling, Fp8Format, get_scaling, set_scaling
from ._layers import holds_training_state, is_layer
from ._tensor import Tensor

__all__ = ["save", "load", "read", "VERSION"]

VERSION = 1
_STORAGES = {np.dtype(d).name: np.dtype(d) for d in _BY_STORAGE}     # float16, bfloat16, float8_*, float32, ...
_FORMAT_FIELDS = ("exp_bits", "man_bits", "subnormals", "overflow", "infinities", "nan", "bias", "signed")


# -- the public calls ------------------------------------------------------------------------------


def save(path, model, optimizer=None, scaler=None):
    """Write model, optimizer (default: model.optimizer, as Keras's compile sets it), scaler (a torch-face
    GradScaler) and minifp's random state to path."""
    optimizer = _default_optimizer(model, optimizer)
    _check_scaler(scaler)
    arrays = []
    index = _index(model, arrays)
    index["fp8"] = _fp8_entries(model, arrays)
    if optimizer is not None:
        index["optimizer"] = _optimizer_entry(model, optimizer, arrays)
    if scaler is not None:
        index["scaler"] = {"class": type(scaler).__name__, "state": _encode(scaler._engine_state(), arrays, "scaler")}
    index["random"] = _random.get_state()
    _write(path, index, arrays)


def load(path, model, optimizer=None, scaler=None):
    """Restore what save() wrote into model, optimizer (default: model.optimizer), scaler and minifp's random state.

    Every part is read and checked first; a file that does not hold a part asked for is refused. The model's
    GEMMs get the file's fp8 scaling states; those it holds none for start afresh, as in the saved run.
    """
    optimizer = _default_optimizer(model, optimizer)
    _check_scaler(scaler)
    ckpt = read(path)
    steps = [_variables_step(path, model, ckpt["variables"]), _fp8_step(path, model, ckpt["fp8"])]
    if optimizer is not None:
        steps.append(_optimizer_step(path, model, optimizer, ckpt["optimizer"]))
    if scaler is not None:
        steps.append(_scaler_step(path, scaler, ckpt["scaler"]))
    if ckpt["random"] is not None:
        _random.set_state(ckpt["random"])      # checks its state whole; first, so that its refusal changes nothing
    for step in steps:
        step()


def read(path):
    """A checkpoint as data: {"variables": {name: Tensor} (in the model's order), "fp8": [{"owner", "name",
    "recipe", "roles"}] (None in files of minifp before fp8 states were saved), "optimizer", "scaler":
    {"class", "state", ...} or None, "random": minifp's random state or None}."""
    if not os.path.isfile(_target(path)):
        raise FileNotFoundError(f"cannot read the checkpoint: path {os.fspath(path)!r} is no file")
    try:
        with zipfile.ZipFile(path) as zf:
            index = json.loads(bytes(_member(zf, "__index__")).decode())
            if not isinstance(index, dict) or index.get("minifp_checkpoint") is None:
                raise ValueError("it has no minifp checkpoint index")
            if index["minifp_checkpoint"] != VERSION:
                raise ValueError(f"it is version {index['minifp_checkpoint']!r}; this minifp reads version {VERSION}")
            arrays = [_array(zf, i, name) for i, name in enumerate(index["arrays"])]
        return {"variables": dict(_variable(e, arrays) for e in index["variables"]),
                "fp8": _decoded(index.get("fp8"), arrays),
                "optimizer": _decoded(index.get("optimizer"), arrays), "scaler": _decoded(index.get("scaler"), arrays),
                "random": index.get("random")}
    except (zipfile.BadZipFile, KeyError, IndexError, TypeError, ValueError, EOFError) as e:
        raise ValueError(f"cannot read {os.fspath(path)!r} as a minifp checkpoint: {e}") from None


# -- weights only --------------------------------------------------------------------------------------------


def save_weights(path, model):
    """Write only the model's variables."""
    arrays = []
    _write(path, _index(model, arrays), arrays)


def load_weights(path, model):
    """Restore only the variables, from a file of save_weights() or save()."""
    _variables_step(path, model, read(path)["variables"])()


# -- checking state before changing anything ------------------------------------------------------------------


def checked_values(variables, state, where="state dict"):
    """[(variable, values)] to assign, for every (name, variable): every name, shape and dtype checked first."""
    if not hasattr(state, "keys"):
        raise TypeError(f"{where} must be a dict of arrays by variable name, got {type(state).__name__}")
    own = dict(variables)
    mismatch = _first_mismatch(list(own), list(state))
    if mismatch:
        hint = " (a layer without an input shape makes its variables on the first call: call the model once " \
               "first)" if len(own) < len(state) else ""
        raise ValueError(f"{where} does not match the model by name: {mismatch} (the model has {len(own)} "
                         f"variables; {len(state)} are saved){hint}")
    return [(v, _values(f"{where} entry {k!r}", state[k], v)) for k, v in own.items()]


def _first_mismatch(own, saved):
    """The first name that the model and the saved state do not share, in words; None when they share all."""
    own_set, saved_set = set(own), set(saved)
    for i, name in enumerate(own):
        if name not in saved_set:
            there = f", which holds {saved[i]!r} in its place" if i < len(saved) else ""
            return f"the model's variable {name!r} is not in it{there}"
    extra = [name for name in saved if name not in own_set]
    return f"it holds {extra[0]!r}, which is no variable of the model" if extra else None


def _values(where, a, v):
    """`a` as values for variable v: a tensor, or an array read as numbers (in either byte order)."""
    if isinstance(a, Tensor):
        kind = a.data.dtype.kind if a.fmt is None else "f"
    else:
        a = np.asarray(a)                                  # assign reads it as numbers, in either byte order
        kind = "f" if a.dtype.name in _STORAGES else a.dtype.kind
    if kind not in ("biu" if v.fmt is None else "fiu") or tuple(a.shape) != tuple(v.shape):
        raise ValueError(f"{where} has shape {a.shape} and dtype {a.dtype}; the model's variable "
                         f"has shape {v.shape} and dtype {v.dtype} (values of another format are rounded into it)")
    return a


# -- the model's variables -------------------------------------------------------------------------------------


def _named(model):
    """([(name, variable)], [(name, layer)]) of the model, named as checkpoints key them.

    A torch-face model: its state_dict's and named_modules' names. A Keras model: the path of layer names to
    each variable ("dense_1/kernel"), every name Keras made up numbered among its siblings rather than in the
    process (_engine_checkpoint_names, minifp/keras/layers/layer.py). Why: Keras's own variable paths number
    made-up names by what the process built before (a second identical model holds dense_3/kernel), so they
    cannot key a file that a fresh process or a second model loads; and matching by position instead loads
    any model with as many variables (another face's, untransposed). A made-up name's place in its model is
    stable and still a name; the names a user gave stay as they are, so a renamed layer does not match."""
    named = getattr(model, "_engine_checkpoint_names", None)
    if named is None:
        return list(model._engine_variables()), list(model._engine_layers())
    variables, layers, seen = [], [("", model)], set()
    for name, obj in named():
        if id(obj) not in seen:           # a layer shared by two parents: keyed at its first place, as Keras lists
            seen.add(id(obj))             # its weights once
            (variables if isinstance(obj, Tensor) else layers).append((name, obj))
    return variables, layers


def _named_variables(model):
    return _named(model)[0]


def _variables_step(path, model, tensors):
    pairs = checked_values(_named_variables(model), tensors, f"checkpoint {os.fspath(path)!r}")

    def apply():
        for v, t in pairs:
            v.assign(t.data if t.fmt == v.fmt else t)      # the same format: the same bits
    return apply


# -- optimizers and scalers: what they hold, through the training-state protocol (minifp/_layers.py) ----------------


def _updated(model, optimizer):
    """The model's name of each variable the optimizer updates, in the optimizer's order."""
    names = {id(v): k for k, v in _named_variables(model)}
    params = optimizer._engine_params()
    unknown = [getattr(p, "name", None) or f"of shape {p.shape}" for p in params if id(p) not in names]
    if unknown:
        raise ValueError(f"optimizer updates tensors that are not variables of the model: {unknown}")
    return [names[id(p)] for p in params]


def _optimizer_entry(model, optimizer, arrays):
    return {"class": type(optimizer).__name__, "params": _updated(model, optimizer),
            "state": _encode(optimizer._engine_state(), arrays, "optimizer")}


def _optimizer_step(path, model, optimizer, entry):
    name, where = type(optimizer).__name__, repr(os.fspath(path))
    if entry is None:
        raise ValueError(f"{where} holds no optimizer state (saved by save_weights, or without an optimizer); "
                         f"load it with load_weights, or pass the parts it holds")
    _checks.keys(f"{where}: the optimizer's entry", entry, ("class", "params", "state"), optional=("kind",))
    if not isinstance(entry["params"], list) or not all(isinstance(n, str) for n in entry["params"]):
        raise ValueError(f"{where}: the optimizer's parameters must be a list of variable names")
    if entry["class"] != name:
        raise ValueError(f"{where} holds the state of an optimizer of class {entry['class']}; "
                         f"optimizer is of class {name}")
    keyed = _named_variables(model)              # the names the variables step has matched with the file's
    variables = dict(keyed)
    unknown = [n for n in entry["params"] if n not in variables]
    if unknown:
        raise ValueError(f"{where}: the optimizer's parameters {unknown} are not variables of the model")
    by_id = {id(v): k for k, v in keyed}
    current = [by_id.get(id(p)) for p in optimizer._engine_params()]
    if current and current != entry["params"]:
        raise ValueError(f"optimizer updates {current}; the checkpoint's optimizer updated {entry['params']}")
    try:
        return optimizer._engine_restore(entry["state"], [variables[n] for n in entry["params"]])
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{where}: the optimizer's state does not fit optimizer {name}: {e}") from None


def _scaler_step(path, scaler, entry):
    where = repr(os.fspath(path))
    if entry is None:
        raise ValueError(f"{where} holds no loss scaler state; pass scaler=None")
    _checks.keys(f"{where}: the scaler's entry", entry, ("class", "state"))
    try:
        return scaler._engine_restore(entry["state"])
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{where}: the scaler's state does not fit scaler {type(scaler).__name__}: {e}") from None


def _default_optimizer(model, optimizer):
    if not is_layer(model):
        raise TypeError(f"model must be a layer or model of a minifp face (torch.nn.Module, keras Model), "
                        f"got {type(model).__name__}")
    optimizer = getattr(model, "optimizer", None) if optimizer is None else optimizer
    if optimizer is not None and not holds_training_state(optimizer):
        raise TypeError(f"optimizer must be a minifp.torch.optim optimizer, a Keras optimizer or None, "
                        f"got {type(optimizer).__name__}")
    return optimizer


def _check_scaler(scaler):
    if scaler is not None and (not holds_training_state(scaler) or hasattr(scaler, "_engine_params")):
        raise TypeError(f"scaler must be a minifp.torch GradScaler or None (a LossScaleOptimizer is saved as the "
                        f"optimizer), got {type(scaler).__name__}")


# -- fp8: each GEMM's delayed scaling, keyed by the name of its weight (or layer) in the model ------------------

_RECIPE_FIELDS = ("margin", "fp8_format", "amax_history_len", "amax_compute_algo", "reduce_amax")


def _fp8_entries(model, arrays):
    """The scaling state of each of the model's GEMMs that has one: [{"owner": "variable" or "layer", "name",
    "recipe", "roles": {role: {"history", "scale"}}}], its arrays appended to `arrays`."""
    variables, layers = _named(model)
    entries, seen = [], set()
    for kind, named in (("variable", variables), ("layer", layers)):
        for name, owner in named:
            scaling = None if id(owner) in seen else get_scaling(owner)     # tied weights: saved once
            if scaling is None:
                continue
            seen.add(id(owner))
            recipe, roles = scaling
            roles = {r: {"history": h, "scale": np.array(scale, np.float32)} for r, (h, scale) in roles.items()}
            entries.append({"owner": kind, "name": name, "recipe": _recipe_data(name, recipe),
                            "roles": _encode(roles, arrays, f"the fp8 state of {name!r}")})
    return entries


def _recipe_data(name, recipe):
    for field in ("amax_compute_algo", "scaling_factor_compute_algo"):
        if callable(getattr(recipe, field)):
            raise TypeError(f"cannot save the fp8 scaling state of {name!r}: its recipe's {field} is a function "
                            f"({getattr(recipe, field)!r}); a checkpoint holds data only (loading runs no code), so "
                            f"only recipes of named algorithms can be saved")
    data = {k: getattr(recipe, k) for k in _RECIPE_FIELDS}
    return {**data, "fp8_format": recipe.fp8_format.name}


def _fp8_step(path, model, entries):
    """Restore the file's fp8 scaling states into the model's GEMMs; the others start afresh, as in the saved run
    (a file of minifp before fp8 states were saved holds none)."""
    where = f"{os.fspath(path)!r}"
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        raise ValueError(f"{where}: the fp8 states must be a list, got {type(entries).__name__}")
    variables, layers = _named(model)
    owners = {"variable": dict(variables), "layer": dict(layers)}
    plan = {}
    for e in entries:
        _checks.keys(f"{where}: an fp8 state", e, ("owner", "name", "recipe", "roles"))
        kind, name = e["owner"], e["name"]
        owner = owners[kind].get(name) if kind in owners and isinstance(name, str) else None
        if owner is None:
            raise ValueError(f"{where} holds the fp8 scaling state of {kind} {name!r}, which the model does not "
                             f"have (its GEMMs' owners are its variables and layers by name)")
        recipe = _recipe(f"{where}: the fp8 recipe of {name!r}", e["recipe"])
        plan[id(owner)] = (owner, recipe, _roles(f"{where}: the fp8 state of {name!r}", e["roles"], recipe))

    def apply():
        for _, owner in variables + layers:
            if id(owner) not in plan:
                set_scaling(owner)                  # forgotten: the saved run had no state for it
        for owner, recipe, roles in plan.values():
            set_scaling(owner, recipe, roles)
    return apply


def _recipe(where, data):
    _checks.keys(where, data, _RECIPE_FIELDS)
    formats = {"HYBRID": Fp8Format.HYBRID, "E4M3": Fp8Format.E4M3}
    if data["fp8_format"] not in formats:
        raise ValueError(f"{where}: fp8_format must be one of {list(formats)}, got {data['fp8_format']!r}")
    try:
        return DelayedScaling(**{**data, "fp8_format": formats[data["fp8_format"]]})     # checks every field
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: {e}") from None


def _roles(where, roles, recipe):
    """{role: (amax history, scale)} from the file, each a float32 array of the recipe's history length and a
    float32 number."""
    _checks.keys(where, roles, ("input", "weight", "grad_output"))
    out = {}
    for role, state in roles.items():
        _checks.keys(f"{where}: {role}", state, ("history", "scale"))
        history, scale = state["history"], state["scale"]
        if not (isinstance(history, np.ndarray) and history.dtype == np.float32
                and history.shape == (recipe.amax_history_len,)):
            raise ValueError(f"{where}: the {role} amax history must be float32 of shape "
                             f"({recipe.amax_history_len},) (the recipe's amax_history_len), got "
                             f"{getattr(history, 'dtype', type(history).__name__)} of shape {np.shape(history)}")
        if not (isinstance(scale, np.ndarray) and scale.dtype == np.float32 and scale.shape == ()):
            raise ValueError(f"{where}: the {role} scale must be a float32 number, got {scale!r}")
        out[role] = (history, scale[()])
    return out


# -- the file ---------------------------------------------------------------------------------------------------


def _index(model, arrays):
    """The index of the model's variables (their arrays appended to `arrays`)."""
    entries = []
    for name, v in _named_variables(model):
        arrays.append(Tensor.numpy(v))                  # the engine's view: a torch tensor's numpy() refuses
        fmt = None if v.fmt is None else {k: getattr(v.fmt, k) for k in _FORMAT_FIELDS + ("name",)}
        entries.append({"name": name, "format": fmt, "array": len(arrays) - 1})
    return {"minifp_checkpoint": VERSION, "variables": entries}


def _variable(entry, arrays):
    a, fmt = arrays[entry["array"]], entry["format"]
    if fmt is not None:
        fmt = Format(**{k: fmt[k] for k in _FORMAT_FIELDS if k in fmt}, name=fmt.get("name", ""))  # older: 5 fields
    try:
        return str(entry["name"]), Tensor(a, fmt)      # refuses values the recorded format cannot hold
    except (TypeError, ValueError) as e:
        raise ValueError(f"variable {entry['name']!r}: {e}") from None


def _encode(obj, arrays, where):
    """obj as JSON-ready data; each array is appended to `arrays` and replaced by {"__array__": its number}."""
    if isinstance(obj, dict):
        if not all(isinstance(k, str) or (isinstance(k, int) and not isinstance(k, bool)) for k in obj):
            raise TypeError(f"cannot save {where}: its keys must be strings or integers, got {list(obj)}")
        return {str(k): _encode(v, arrays, f"{where}[{k!r}]") for k, v in obj.items()}   # torch's state by index
    if isinstance(obj, Tensor):
        obj = Tensor.numpy(obj)
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
    with atomic_file(path) as f, zipfile.ZipFile(f, "w") as zf:
        _write_member(zf, "__index__", header)
        for i, a in enumerate(arrays):
            _write_member(zf, f"a{i}", _bits(a))


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
