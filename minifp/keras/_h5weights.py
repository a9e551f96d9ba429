"""Weights files in Keras 3's `.weights.h5` layout (keras.saving's save_weights and load_weights, and the weights
inside a `.keras` file), so weights move between real Keras and minifp both ways.

The layout is the one Keras 3's saving_lib (H5IOStore) writes: one HDF5 group per layer at the path Keras
reaches it by, with a `vars` group holding the layer's own variables as datasets "0", "1", ... (trainable
first, then non-trainable, in creation order) and the layer's name as the `vars` group's attribute `name`:

    vars                          attrs {name: "sequential"}   (the model's own variables: none)
    layers/dense/vars/0, 1        attrs {name: "dense"}        kernel (in, out), bias (out,)
    layers/dense_1/vars/0, 1      attrs {name: "dense_1"}
    layers/batch_normalization/vars/0..3    gamma, beta, moving_mean, moving_variance

A Sequential or functional model's layers sit under `layers/` named by their class in snake case, numbered
by order of appearance (dense, dense_1, ...), whatever the layers' own names; a subclassed model's sub-layers
sit under the attribute names that hold them (`dense1/vars/0`). Files written by Keras 2.13 (`_layer_checkpoint_
dependencies` instead of `layers`) are read too. Values are stored in each variable's own dtype (float32 master
weights under the mixed policies); bfloat16 is stored as Keras stores it (2-byte opaque values, attribute
dtype="bfloat16"), and other formats without an HDF5 type as their exact float32 values (attribute dtype=<name>).

A compiled model's file also holds its optimizer's variables under `optimizer/vars` (Keras's walk reaches
`model.optimizer`), and loading into a compiled model restores them (a count that differs is skipped with Keras's
warning: an optimizer not built yet has only its iteration and learning rate).

Loading reads only datasets (no pickles, no code), refuses links and external data, and checks everything
(groups, variable counts, shapes, dtypes) before any variable changes; values are rounded into each variable's
format as they are assigned. Saving writes a temporary file beside the target, syncs it and renames it over
the target, so a failed save leaves the previous file as it was.
"""
from __future__ import annotations

import os
import re
import warnings

import numpy as np

from ..engine import atomic_file, Tensor as _EngineTensor

__all__ = ["load_weights", "save_weights", "read_weights", "write_weights"]

_SUFFIX = ".weights.h5"
_HDF5_NATIVE = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _h5py():
    """The h5py module, or an ImportError saying how to get it (it is an optional extra)."""
    try:
        import h5py
    except ImportError:
        raise ImportError("Saving and loading `.weights.h5` files requires the h5py package. You can install it "
                          "via `pip install h5py` (or `pip install 'minifp[h5]'`)") from None
    return h5py


# -- the walk: the paths at which Keras 3's saving_lib reaches each layer -----------------------------------------


def _layer_class():
    from .layers import Layer
    return Layer


def _is_layer(obj):
    return isinstance(obj, _layer_class())


def _obj_type(obj):
    """Keras's object type for the walk: "Sequential", "Functional" or "Layer"."""
    own = getattr(obj, "_obj_type", None)
    if callable(own):
        return own()
    names = {c.__name__ for c in type(obj).__mro__}
    if "Sequential" in names:
        return "Sequential"
    if "Functional" in names or getattr(obj, "_is_functional", False):
        return "Functional"
    return "Layer"


_SKIPSETS = {}


def _skipset(obj_type):
    """Attributes Keras does not walk: those every Layer has (it takes them from a bare Layer()), and a few more."""
    if obj_type not in _SKIPSETS:
        probe = _layer_class()(name="_saving_probe")       # named: no automatic name is used up
        skip = set(dir(probe)) | {"_self_unconditional_dependency_names"}
        skip |= {"Functional": {"operations", "_operations"}, "Sequential": {"_functional"}}.get(obj_type, set())
        _SKIPSETS[obj_type] = frozenset(skip)
    return _SKIPSETS[obj_type]


def _name_key(name):
    """Private attributes are visited last (Keras's order)."""
    return f"~{name}" if name.startswith("_") else name


def _snake_case(name):
    """Keras's naming.to_snake_case: "BatchNormalization" -> "batch_normalization"."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def _children(obj):
    """(attribute, value) pairs of a layer that may hold layers, in Keras's order."""
    obj_type = _obj_type(obj)
    if obj_type in ("Sequential", "Functional"):
        yield "layers", list(obj.layers)
    skip = _skipset(obj_type)
    for attr in sorted(dir(obj), key=_name_key):
        if attr.startswith("__") or attr in skip:
            continue
        try:
            value = getattr(obj, attr)
        except Exception:              # as Keras: an attribute that cannot be read holds no layers
            continue
        yield attr, value


def _join(path, name):
    return f"{path}/{name}" if path else name


def _walk(obj, path, seen, out):
    """Append (path, layer) for obj and every layer inside it, each once, at the first path Keras reaches it by."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    out.append((path, obj))
    for attr, value in _children(obj):
        if _is_layer(value):
            _walk(value, _join(path, attr), seen, out)
        elif isinstance(value, (list, tuple, dict)):
            _walk_container(value, _join(path, attr), seen, out, set())


def _walk_container(container, path, seen, out, seen_containers):
    """Layers in a list/tuple/dict are named by class in snake case (dense, dense_1, ...); nested ones "container"."""
    if id(container) in seen_containers:
        return
    seen_containers.add(id(container))
    used = {}
    for item in (container.values() if isinstance(container, dict) else container):
        if _is_layer(item):
            _walk(item, _join(path, _unique(_snake_case(type(item).__name__), used)), seen, out)
        elif isinstance(item, (list, tuple, dict)):
            _walk_container(item, _join(path, _unique("container", used)), seen, out, seen_containers)


def _unique(name, used):
    """name, then name_1, name_2, ... (Keras's _get_unique_name)."""
    if name in used:
        used[name] += 1
        return f"{name}_{used[name]}"
    used[name] = 0
    return name


def _entries(model):
    """[(path, layer)] for the model and every layer in it, in Keras's order."""
    out = []
    _walk(model, "", set(), out)
    return out


def _own_variables(layer):
    """The layer's own variables (not its sub-layers'): trainable first, then non-trainable (Keras's order)."""
    return list(layer._trainable_variables) + list(layer._non_trainable_variables)


def _describe(layer):
    """Keras's repr of a saveable in its loading errors: <Dense name=dense_1, built=True>."""
    return f"<{type(layer).__name__} name={layer.name}, built={getattr(layer, 'built', True)}>"


def _check_built(model, doing):
    if not getattr(model, "built", True):
        raise ValueError(f"You are {doing} a model that has not yet been built. Try building the model first by "
                         f"calling it on some data or by using `build()`.")


# -- values: a variable's dtype <-> an HDF5 dataset ----------------------------------------------------------------


def _stored(variable):
    """(array, dtype attribute or None): the variable's values as they go into the file."""
    values = _EngineTensor.numpy(variable)
    if variable.fmt is None or values.dtype in _HDF5_NATIVE:
        return np.asarray(values, order="C"), None          # (ascontiguousarray makes 0-d arrays 1-d)
    if variable.fmt.name == "bfloat16":          # Keras's way: the 2-byte values as opaque data
        return np.asarray(values, order="C"), "bfloat16"
    return _EngineTensor.float32(variable), variable.fmt.name   # exact: every format fits float32


def _read_values(dataset, where):
    """A dataset's values as a NumPy array ready to be rounded into a variable (float32 or the stored ints)."""
    kind = dataset.dtype.kind
    tag = dataset.attrs.get("dtype")
    if isinstance(tag, bytes):
        tag = tag.decode()
    if tag == "bfloat16":
        if dataset.dtype.itemsize != 2:
            raise ValueError(f"{where}: marked bfloat16 but holds {dataset.dtype.itemsize}-byte values")
        import ml_dtypes
        return np.asarray(dataset[()]).view(ml_dtypes.bfloat16).astype(np.float32)
    if kind not in "fiub":
        raise ValueError(f"{where}: holds {dataset.dtype} values; weights must be numbers (float or int)")
    return np.asarray(dataset[()])


# -- saving --------------------------------------------------------------------------------------------------------


def _check_filename(filepath, where):
    try:
        path = os.fsdecode(os.fspath(filepath))
    except TypeError:
        raise TypeError(f"{where}: filepath must be a str or os.PathLike, got {type(filepath).__name__}") from None
    return path


def save_weights(model, filepath, overwrite=True):
    """Write the model's weights to `filepath` (which must end in `.weights.h5`) in Keras 3's layout, atomically."""
    path = _check_filename(filepath, "save_weights()")
    if not path.endswith(_SUFFIX):
        raise ValueError(f"The filename must end in `.weights.h5`. Received: filepath={path}")
    if os.path.isdir(path):
        raise IsADirectoryError(f"save_weights(): filepath={path!r} is a folder; give a file name such as "
                                f"{os.path.join(path, 'model.weights.h5')!r}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"save_weights(): cannot save to {path!r}: the folder {folder!r} does not exist")
    if os.path.exists(path) and not overwrite and not _ask_to_overwrite(path):
        return
    _check_built(model, "saving")
    optimizer = compiled_optimizer(model)
    extra = [("optimizer", optimizer.name, optimizer.variables)] if optimizer is not None else []
    with atomic_file(path) as f:
        write_weights(model, f, extra)


def compiled_optimizer(model):
    """The optimizer whose variables a model's weights go with (a compiled model's), or None."""
    return model.optimizer if getattr(model, "compiled", False) else None


def write_weights(model, fileobj, extra=()):
    """The model's weights in the `.weights.h5` layout, written to an open binary file (or BytesIO); extra:
    more (group path, name, variables) groups, such as a `.keras` file's optimizer."""
    h5py = _h5py()
    plan = [(path_, layer.name, [_stored(v) for v in _own_variables(layer)]) for path_, layer in _entries(model)]
    plan += [(path_, name, [_stored(v) for v in variables]) for path_, name, variables in extra]
    with h5py.File(fileobj, "w") as h5:
        for group_path, name, arrays in plan:
            _write_group(h5, group_path, name, arrays)


def _write_group(h5, group_path, name, arrays):
    """One layer's `vars` group, as H5IOStore writes it: attribute name, datasets "0", "1", ..."""
    group = h5.create_group(_join(group_path, "vars"))
    group.attrs["name"] = name
    for i, (values, tag) in enumerate(arrays):
        dataset = group.create_dataset(str(i), data=values)
        if tag is not None:
            dataset.attrs["dtype"] = tag


def _ask_to_overwrite(path):
    """Keras's question when overwrite=False and the file exists: True to go on."""
    answer = input(f"[WARNING] {path} already exists - overwrite? [y/n]").strip().lower()
    while answer not in ("y", "n"):
        answer = input('Enter "y" (overwrite) or "n" (cancel).').strip().lower()
    if answer == "n":
        return False
    print("[TIP] Next time specify overwrite=True!")
    return True


# -- loading -------------------------------------------------------------------------------------------------------


def load_weights(model, filepath, skip_mismatch=False):
    """Read weights written by Keras 3 or minifp (`.weights.h5`) into the model; nothing changes unless all fit.

    With skip_mismatch=True the layers that do not fit keep their values (a warning lists them) and the
    others are loaded, as in Keras.
    """
    path = _check_filename(filepath, "load_weights()")
    if not path.endswith(_SUFFIX):
        if path.endswith((".keras", ".weights.json", ".h5", ".hdf5")):
            raise ValueError(f"load_weights(): minifp reads Keras 3's `.weights.h5` files only; filepath={path} is "
                             f"a whole-model `.keras` archive, a sharded `.weights.json` or a legacy `.h5` file")
        raise ValueError(f"File format not supported: filepath={path}. Keras 3 only supports V3 `.keras` and "
                         f"`.weights.h5` files, or legacy V1/V2 `.h5` files.")
    if not isinstance(skip_mismatch, bool):
        raise TypeError(f"load_weights(): skip_mismatch must be True or False, got {skip_mismatch!r}")
    _check_built(model, "loading weights into")
    _h5py()
    if not os.path.isfile(path):
        raise FileNotFoundError(f"load_weights(): no such file: {path!r}")
    read_weights(model, path, skip_mismatch, where=repr(path), optimizer=compiled_optimizer(model))


def read_weights(model, file, skip_mismatch=False, where="the weights", optimizer=None):
    """Weights in the `.weights.h5` layout from a path or an open binary file into the model (and the file's
    `optimizer` group into `optimizer`, where given), all checked first."""
    h5py = _h5py()
    try:
        h5 = h5py.File(file, "r")
    except OSError as e:
        raise ValueError(f"load_weights(): {where} is not an HDF5 file ({e})") from None
    plan, errors = [], {}
    with h5:
        for group_path, layer in _entries(model):
            try:
                plan.append((layer, _layer_values(h5py, h5, group_path, layer)))
            except (KeyError, ValueError) as e:
                errors[id(layer)] = (layer, e)
        store = optimizer_store(h5py, h5, optimizer) if optimizer is not None else None
    if errors:
        _report(errors, warn_only=skip_mismatch)
        plan = [(layer, pairs) for layer, pairs in plan if id(layer) not in errors]
    for _, pairs in plan:                  # everything checked: now assign, rounding into each variable's format
        for variable, values in pairs:
            variable.assign(values)
    if store is not None:
        optimizer.load_own_variables(store)


def optimizer_store(h5py, h5, optimizer):
    """{"0": values, ...} of the file's `optimizer/vars` group (empty without one), shapes checked against the
    optimizer's variables where the counts agree (otherwise Keras skips the optimizer with a warning)."""
    group = _vars_group(h5py, h5, "optimizer")
    keys = list(group.keys()) if group is not None else []
    store = {k: _read_values(_dataset(h5py, group, k, f"optimizer/vars/{k}"), f"optimizer/vars/{k}") for k in keys}
    if len(store) == len(optimizer.variables):
        for i, variable in enumerate(optimizer.variables):
            if tuple(np.shape(store.get(str(i)))) != tuple(variable.shape):
                raise ValueError(f"optimizer/vars/{i} has shape {np.shape(store.get(str(i)))}, the optimizer's "
                                 f"variable {variable.name} {tuple(variable.shape)}")
    return store


def _layer_values(h5py, h5, group_path, layer):
    """[(variable, values)] for one layer, all checked: count, names "0".."n-1", shapes, numeric dtypes."""
    group = _vars_group(h5py, h5, group_path)
    own = _own_variables(layer)
    keys = sorted(group.keys()) if group is not None else []
    if len(keys) != len(own):
        raise ValueError(f"Layer '{layer.name}' expected {len(own)} variables, but received {len(keys)} variables "
                         f"during loading. Expected: {[v.name for v in own]}")
    pairs = []
    for i, variable in enumerate(own):
        where = f"{_join(group_path, 'vars')}/{i}"
        dataset = _dataset(h5py, group, str(i), where)
        if tuple(dataset.shape) != tuple(variable.shape):
            raise ValueError(f"The shape of the target variable and the shape of the target value in "
                             f"`variable.assign(value)` must match. variable.shape={tuple(variable.shape)}, "
                             f"Received: value.shape={tuple(dataset.shape)}. Target variable: "
                             f"{getattr(variable, 'path', variable.name)} (file: {where})")
        pairs.append((variable, _read_values(dataset, where)))
    return pairs


def _vars_group(h5py, h5, group_path):
    """The `vars` group at group_path (or at Keras 2.13's `_layer_checkpoint_dependencies` path), or None."""
    candidates = [group_path]
    if "_layer_checkpoint_dependencies" in h5 and group_path.startswith("layers"):
        candidates.append(group_path.replace("layers", "_layer_checkpoint_dependencies", 1))
    for candidate in candidates:
        group = _group(h5py, h5, candidate) if candidate else h5
        if group is not None and "vars" in group:
            return _group(h5py, group, "vars")
    return None


def _group(h5py, parent, path):
    """The group at path, following no soft or external links; None when absent."""
    current = parent
    for part in path.split("/"):
        if part not in current:
            return None
        link = current.get(part, getclass=True, getlink=True)
        if link in (h5py.SoftLink, h5py.ExternalLink):
            raise ValueError(f"Not allowed: H5 file with {link.__name__} at {path!r}")
        current = current[part]
        if not isinstance(current, h5py.Group):
            raise ValueError(f"Invalid H5 file: {path!r} is a {type(current).__name__}, expected a Group")
    return current


def _dataset(h5py, group, key, where):
    """The plain dataset group[key]: no links, no external or virtual storage."""
    if key not in group:
        raise KeyError(f"{where}: missing from the file (the variables must be named '0', '1', ...)")
    link = group.get(key, getclass=True, getlink=True)
    if link in (h5py.SoftLink, h5py.ExternalLink):
        raise ValueError(f"Not allowed: H5 file with {link.__name__} at {where!r}")
    dataset = group[key]
    if not isinstance(dataset, h5py.Dataset):
        raise ValueError(f"Invalid H5 file: {where!r} is a {type(dataset).__name__}, expected a Dataset")
    if dataset.external or dataset.is_virtual:
        raise ValueError(f"Not allowed: H5 file with external or virtual data at {where!r}")
    return dataset


def _report(errors, warn_only):
    """Keras's summary of the layers that could not be loaded: a ValueError, or a warning with skip_mismatch."""
    layer, error = next(iter(errors.values()))
    message = (f"A total of {len(errors)} objects could not be loaded. Example error message for object "
               f"{_describe(layer)}:\n\n{error.args[0] if error.args else error}\n\n"
               f"List of objects that could not be loaded:\n{[_describe(x) for x, _ in errors.values()]}")
    if warn_only:
        warnings.warn(message, stacklevel=3)
    else:
        raise ValueError(message)

