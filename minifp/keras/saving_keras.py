"""Whole models in Keras 3's `.keras` format: a zip of metadata.json, config.json and model.weights.h5.

config.json is the model serialized as Keras 3's serialization_lib writes it ({"module", "class_name",
"config", "registered_name", "build_config", "compile_config"}); a functional model's layers carry their
`inbound_nodes` with `__keras_tensor__` references (keras_history [layer name, node index, tensor index]), as
keras/src/models/functional.py writes and reads them. model.weights.h5 is the `.weights.h5` layout of
minifp.keras.saving. Only built-in layers, optimizers, losses and metrics (or the classes given in
custom_objects) are rebuilt; loading never runs code from the file (a Python lambda is refused with Keras's
safe_mode error, whatever safe_mode says), and saving writes the whole zip atomically.
"""
from __future__ import annotations

import datetime
import inspect
import io
import json
import os
import zipfile

from ..engine import atomic_file
from . import _h5weights as _weights
from .layers.layer import _INPUT_KWARGS, Layer as _Layer
from ._version import __version__ as _keras_version

MODELS = {}     # "Model", "Functional", "Sequential": the classes to rebuild, registered by keras.models

__all__ = ["save_model", "load_model", "model_from_config", "serialize_layer", "sequential_config",
           "functional_config"]

_CONFIG, _METADATA, _WEIGHTS = "config.json", "metadata.json", "model.weights.h5"
_MAX_MEMBER = 1 << 31       # refuse members that would inflate past 2 GiB (Keras rejects zip bombs too)
_LAMBDA_ERROR = ("Requested the deserialization of a Python lambda. This carries a potential risk of arbitrary "
                 "code execution and thus it is disallowed by default. If you trust the source of the artifact, "
                 "you can override this error by passing `safe_mode=False` to the loading function, or calling "
                 "`keras.config.enable_unsafe_deserialization().")


# -- serializing ---------------------------------------------------------------------------------------------------


def _keras_object(value, module):
    """A minifp {"class_name", "config"} dict in serialization_lib's full form."""
    return {"module": module, "class_name": value["class_name"], "config": value.get("config", {}),
            "registered_name": None}


def _keras_config(config):
    """A layer's get_config() with its nested objects as Keras writes them (dtype policies, initializers ...)."""
    out = {}
    for key, value in config.items():
        if key == "dtype" and isinstance(value, dict) and "class_name" not in value:
            value = {"module": "keras", "class_name": "DTypePolicy", "config": value, "registered_name": None}
        elif isinstance(value, dict) and set(value) == {"class_name", "config"}:
            value = _keras_object(value, _MODULES.get(key.rsplit("_", 1)[-1], "keras"))
        out[key] = list(value) if isinstance(value, tuple) else value
    return out


_MODULES = {"initializer": "keras.initializers", "regularizer": "keras.regularizers",
            "constraint": "keras.constraints"}


def serialize_layer(layer):
    """One layer as serialization_lib.serialize_keras_object writes it."""
    if getattr(layer, "_is_operation", False):
        raise ValueError(f"save_model(): minifp saves models made of layers; {layer.name!r} is a keras.ops "
                         f"operation. Wrap it in a layer")
    Model = MODELS["Model"]
    if isinstance(layer, Model):                # a model inside a model: as Keras writes a model
        return _model_entry(layer)
    entry = {"module": "keras.layers", "class_name": type(layer).__name__,
             "config": _keras_config(layer.get_config()), "registered_name": None}
    if type(layer).__module__.split(".")[:2] != ["minifp", "keras"]:      # a user's class: Keras's package/name
        entry["module"], entry["registered_name"] = type(layer).__module__, f"Custom>{type(layer).__name__}"
    return entry


def sequential_config(model):
    """Keras 3's Sequential.get_config: the layers (InputLayer first) and the input shape."""
    config = {"name": model.name, "trainable": model.trainable,
              "layers": [serialize_layer(layer) for layer in model._layers]}
    if model.built:
        config["build_input_shape"] = list(model._layers[0].batch_shape)
    return config


def functional_config(model):
    """Keras 3's Functional.get_config: each layer with the nodes that call it, then the inputs and outputs."""
    nodes, order = {}, []               # layer id -> its nodes in the model, in order
    for node in model._nodes:
        if id(node.operation) not in nodes:
            nodes[id(node.operation)] = []
            order.append(node.operation)
        if not node.is_input:
            nodes[id(node.operation)].append(node)

    def history(t):
        layer, index, tensor_index = t._keras_history
        saved = nodes[id(layer)]
        node = layer._inbound_nodes[index]
        return [layer.name, next((i for i, n in enumerate(saved) if n is node), 0), tensor_index]

    def tensors(value):
        if hasattr(value, "_keras_history") and value._keras_history is not None:
            return {"class_name": "__keras_tensor__", "config": {"shape": list(value.shape),
                    "dtype": str(value.dtype), "keras_history": history(value)}}
        if isinstance(value, (list, tuple)):
            return [tensors(v) for v in value]
        if isinstance(value, dict):
            return {k: tensors(v) for k, v in value.items()}
        return value

    layers = [{**serialize_layer(layer), "name": layer.name,
               "inbound_nodes": [{"args": tensors(list(n.call_args)), "kwargs": tensors(dict(n.call_kwargs))}
                                 for n in nodes[id(layer)]]} for layer in order]
    ends = lambda struct: _map(lambda t: history(t), struct)        # noqa: E731
    return {"name": model.name, "trainable": model.trainable, "layers": layers,
            "input_layers": ends(model._inputs_struct), "output_layers": ends(model._outputs_struct)}


def _map(fn, struct):
    """fn over the leaves of nested lists, tuples and dicts (tuples become lists, as in JSON)."""
    if isinstance(struct, (list, tuple)):
        return [_map(fn, s) for s in struct]
    if isinstance(struct, dict):
        return {k: _map(fn, v) for k, v in struct.items()}
    return fn(struct)


def _compile_config(model):
    """Keras's compile_config from what compile() kept: the optimizer, loss and metrics (names or configs)."""
    if not getattr(model, "compiled", False) or model.optimizer is None:
        return None
    from . import losses, metrics, optimizers
    loss_weights, plain, weighted = _compiled_args(model)
    metric = lambda m: _serialized(m, metrics, "keras.metrics")        # noqa: E731
    return {"optimizer": optimizers.serialize(model.optimizer),
            "loss": _map(lambda l: _serialized(l, losses, "keras.losses"), model.loss),
            "loss_weights": loss_weights, "metrics": _map(metric, plain), "weighted_metrics": _map(metric, weighted),
            "run_eagerly": bool(model.run_eagerly), "steps_per_execution": model.steps_per_execution,
            "jit_compile": False}


def _compiled_args(model):
    """(loss_weights, metrics, weighted_metrics) as given to compile(), from the objects compile() made."""
    compiled = model._compile_metrics
    if compiled is None:
        plain = weighted = None
    elif hasattr(compiled, "_user"):
        plain, weighted = compiled._user
    else:       # (the single-output trainer kept a flat list of (metric, weighted))
        plain = [m for m, w in compiled._specs if not w] or None
        weighted = [m for m, w in compiled._specs if w] or None
    return getattr(model._compile_loss, "loss_weights", None), plain, weighted


def _serialized(obj, module, module_name):
    """A loss or metric as Keras writes it: a built-in name as it is, an object in full, a user's function by
    name (Keras's {"class_name": "function"} form, which loads only through custom_objects)."""
    if obj is None or isinstance(obj, str):         # a name compile() accepted
        return obj
    value = module.serialize(obj)
    if isinstance(value, dict):
        return _keras_object(value, module_name)
    if value in module.ALL_OBJECTS_DICT and str(getattr(obj, "__module__", "")).startswith("minifp."):
        return value                # a built-in function: its name, which compile() resolves
    return {"module": "builtins", "class_name": "function", "config": value, "registered_name": "function"}


def _model_config(model):
    """The whole config.json of a Sequential or functional model."""
    entry = _model_entry(model)
    compile_config = _compile_config(model)
    if compile_config is not None:
        entry["compile_config"] = compile_config
    return entry


def _model_entry(model):
    """A Sequential or functional model serialized, without its compile config."""
    Functional, Sequential = MODELS["Functional"], MODELS["Sequential"]
    if isinstance(model, Sequential):
        entry = {"module": "keras", "class_name": "Sequential", "config": sequential_config(model),
                 "registered_name": None, "build_config": {"input_shape": list(model._layers[0].batch_shape)}}
    elif type(model) is Functional:
        entry = {"module": "keras.src.models.functional", "class_name": "Functional",
                 "config": functional_config(model), "registered_name": "Functional",
                 "build_config": {"input_shape": None}}
    else:
        raise ValueError(f"save_model(): minifp saves Sequential and functional models; {type(model).__name__} "
                         f"is a subclassed model. Save its weights with model.save_weights(...) instead")
    return entry


def save_model(model, filepath, overwrite=True, zipped=None, **kwargs):
    """Write the model (config, compile config, weights) to a `.keras` zip that Keras 3 loads, atomically."""
    path = _weights._check_filename(filepath, "save_model()")
    if kwargs:
        raise ValueError(f"The following argument(s) are not supported: {list(kwargs)}")
    if zipped is False:
        raise ValueError("save_model(): minifp writes zipped `.keras` files only (zipped=True)")
    if not path.endswith(".keras"):
        raise ValueError(f"Invalid filepath extension for saving. Please add either a `.keras` extension for the "
                         f"native Keras format (recommended) or a `.h5` extension. Use `model.export(filepath)` "
                         f"if you want to export a SavedModel for use with TFLite/TFServing/etc. Received: "
                         f"filepath={path}.")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"save_model(): cannot save to {path!r}: the folder {folder!r} does not exist")
    if os.path.exists(path) and not overwrite and not _weights._ask_to_overwrite(path):
        return
    _weights._check_built(model, "saving")
    config = json.dumps(_model_config(model))
    metadata = json.dumps({"keras_version": _keras_version,
                           "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")})
    weights = io.BytesIO()
    optimizer = _weights.compiled_optimizer(model)
    extra = [("optimizer", optimizer.name, optimizer.variables)] if optimizer is not None else []
    _weights.write_weights(model, weights, extra)
    with atomic_file(path) as f, zipfile.ZipFile(f, "w") as zf:
        zf.writestr(_METADATA, metadata)
        zf.writestr(_CONFIG, config)
        zf.writestr(_WEIGHTS, weights.getvalue())


# -- loading -------------------------------------------------------------------------------------------------------


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """A model from a `.keras` file written by Keras 3 or minifp; built-in layers and custom_objects only."""
    path = _weights._check_filename(filepath, "load_model()")
    if not path.endswith(".keras"):
        raise ValueError(f"File format not supported: filepath={path}. Keras 3 only supports V3 `.keras` files "
                         f"and legacy H5 format files (`.h5` extension). minifp reads `.keras` files only.")
    if not os.path.isfile(path):
        raise ValueError(f"File not found: filepath={path}. Please ensure the file is an accessible `.keras` zip "
                         f"file.")
    config, weights = _read_archive(path)
    _refuse_code(config, safe_mode)
    objects = dict(custom_objects or {})
    model = model_from_config(config, objects)
    if compile and config.get("compile_config"):
        _compile_from_config(model, config["compile_config"], objects)
    _weights.read_weights(model, io.BytesIO(weights))
    if getattr(model, "compiled", False) and model.optimizer is not None:
        _load_optimizer(model.optimizer, model, weights)
    return model


def _load_optimizer(optimizer, model, weights):
    """The optimizer's state (step, moments ...) from the file's `optimizer` group, as Keras restores it: built
    on the model's variables first; a count that differs is skipped with Keras's warning."""
    optimizer.build(model.trainable_variables)
    h5py = _weights._h5py()
    with h5py.File(io.BytesIO(weights), "r") as h5:
        store = _weights.optimizer_store(h5py, h5, optimizer)
    optimizer.load_own_variables(store)


def _read_archive(path):
    """(config dict, weights bytes) of a `.keras` zip, each member checked before it is read."""
    try:
        zf = zipfile.ZipFile(path, "r")
    except zipfile.BadZipFile:
        raise ValueError(f"load_model(): {path!r} is not a `.keras` zip file") from None
    with zf:
        names = zf.namelist()
        for name in (_CONFIG, _WEIGHTS):
            if name not in names:
                raise ValueError(f"Invalid `.keras` file {path!r}: expected a {name} file (it holds "
                                 f"{sorted(names)})")
            if zf.getinfo(name).file_size > _MAX_MEMBER:
                raise ValueError(f"Invalid `.keras` file {path!r}: {name} would inflate to "
                                 f"{zf.getinfo(name).file_size} bytes")
        try:
            config = json.loads(zf.read(_CONFIG).decode("utf-8"))
        except ValueError as e:
            raise ValueError(f"Invalid `.keras` file {path!r}: config.json is not JSON ({e})") from None
        return config, zf.read(_WEIGHTS)


def _refuse_code(config, safe_mode):
    """Keras's safe_mode error for a serialized Python lambda anywhere in the config; minifp never runs it."""
    stack = [config]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("class_name") == "__lambda__":
                if safe_mode:
                    raise ValueError(_LAMBDA_ERROR)
                raise ValueError("load_model(): the file holds a Python lambda (bytecode); minifp never runs code "
                                 "from a file, even with safe_mode=False. Rebuild the model in code and load its "
                                 "weights with model.load_weights(...)")
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _not_found(kind, name, config):
    return TypeError(f"Could not locate {kind} '{name}'. Make sure custom classes and functions are decorated with "
                     f"`@keras.saving.register_keras_serializable()`. If they are already decorated, make sure they "
                     f"are all imported so that the decorator is run before trying to load them. Full object "
                     f"config: {config}")


def _layer_class(entry, objects):
    """The class an entry names: custom_objects first (by class or registered name), then minifp's layers."""
    from . import layers
    name, registered = entry.get("class_name"), entry.get("registered_name")
    for key in (registered, name):
        if key in objects:
            return objects[key]
    cls = getattr(layers, name, None) if isinstance(name, str) and registered in (None, name) else None
    if not (inspect.isclass(cls) and issubclass(cls, layers.Layer)):
        raise _not_found("class", name, entry)
    return cls


def _layer_from(entry, objects):
    """A layer from its serialized entry (config keys minifp's class does not take are dropped when unset)."""
    if entry.get("class_name") in ("Sequential", "Functional") and entry.get("class_name") not in objects:
        return model_from_config(entry, objects)
    cls = _layer_class(entry, objects)
    config = dict(entry.get("config", {}))
    if "dtype" in config and isinstance(config["dtype"], dict):
        config["dtype"] = config["dtype"].get("config", config["dtype"]).get("name")
    for key, value in config.items():
        if key.endswith("_initializer") and isinstance(value, dict) and "class_name" in value:
            config[key] = _initializer(value)
    accepted = _accepted(cls)
    if accepted is not None:
        extra = {k: v for k, v in config.items() if k not in accepted}
        unset = {k for k, v in extra.items() if v in (None, False) or _UNUSED.get(k) == v}
        if set(extra) - unset:
            raise ValueError(f"load_model(): minifp's {cls.__name__} does not support "
                             f"{ {k: extra[k] for k in set(extra) - unset} } (layer {config.get('name')!r})")
        config = {k: v for k, v in config.items() if k not in unset}
    return cls.from_config(config)


def _initializer(entry):
    """An initializer's entry without the unset arguments Keras adds and minifp's class does not take."""
    from . import initializers
    cls = initializers.ALL_OBJECTS_DICT.get(entry["class_name"])
    accepted = _accepted(cls) if inspect.isclass(cls) else None
    config = entry.get("config", {})
    if accepted is not None:
        config = {k: v for k, v in config.items() if k in accepted or v is not None}
    return {"class_name": entry["class_name"], "config": config}


_UNUSED = {"renorm_momentum": 0.99}         # BatchNormalization's renorm setting, unused without renorm


def _accepted(cls):
    """The keyword arguments cls(...) takes, through **kwargs to its bases; None when that cannot be told."""
    names = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        names |= {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        if klass is _Layer:             # its **kwargs take only the input-shape arguments
            return names | set(_INPUT_KWARGS)
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            return names
    return None


def model_from_config(config, custom_objects=None):
    """A Sequential or functional model from its serialized form (config.json's), built-in layers only."""
    objects = dict(custom_objects or {})
    _refuse_code(config, True)
    Sequential = MODELS["Sequential"]
    name, inner = config.get("class_name"), config.get("config", {})
    if name in objects:             # a user's model class: minifp rebuilds Sequential and functional models only
        raise ValueError(f"load_model(): minifp rebuilds Sequential and functional models only; the file holds "
                         f"a {name} (from custom_objects)")
    if name == "Sequential":
        layers = [_layer_from(entry, objects) for entry in inner.get("layers", [])]
        model = Sequential(layers, name=inner.get("name"), trainable=inner.get("trainable", True))
        if not model.built and inner.get("build_input_shape"):
            model.build(tuple(inner["build_input_shape"]))
        return model
    if name in ("Functional", "Model"):
        return _functional_from_config(inner, objects)
    raise _not_found("class", name, config)


def _functional_from_config(config, objects):
    """Keras's functional_from_config: make the layers, replay their nodes (deferring those whose inputs are not
    made yet), then Model(inputs, outputs)."""
    Model = MODELS["Model"]
    made, pending = {}, []          # (layer name, node index) -> that call's outputs, flat; calls to make
    for entry in config["layers"]:
        layer = _layer_from(entry, objects)
        if not entry.get("inbound_nodes"):          # an InputLayer: its own node 0
            made[(layer.name, 0)] = [layer.output] if hasattr(layer, "batch_shape") else []
        pending += [(layer, i, node) for i, node in enumerate(entry.get("inbound_nodes", []))]
    while pending:
        ready = [p for p in pending if _inputs_made(p[2], made)]
        if not ready:
            raise ValueError(f"load_model(): the functional graph cannot be rebuilt: layers "
                             f"{sorted({p[0].name for p in pending})} wait on tensors no layer makes")
        for layer, i, node in ready:
            get = lambda h: made[(h[0], h[1])][h[2]]        # noqa: E731
            args = _tensors(node.get("args", []), get)
            kwargs = _tensors(node.get("kwargs", {}), get)
            out = layer(*args, **kwargs)
            made[(layer.name, i)] = list(out) if isinstance(out, (list, tuple)) else [out]
        pending = [p for p in pending if p not in ready]
    ends = lambda struct: _ends(struct, lambda h: made[(h[0], h[1])][h[2]])     # noqa: E731
    return Model(ends(config["input_layers"]), ends(config["output_layers"]), name=config.get("name"),
                 trainable=config.get("trainable", True))


def _is_history(value):
    return isinstance(value, list) and len(value) == 3 and isinstance(value[0], str)


def _ends(struct, get):
    """input_layers / output_layers: one [name, node, tensor] triple, a list of them, or a dict of them."""
    if _is_history(struct):
        return get(struct)
    if isinstance(struct, dict):
        return {k: _ends(v, get) for k, v in struct.items()}
    return [_ends(s, get) for s in struct]


def _histories(value):
    if isinstance(value, dict):
        if value.get("class_name") == "__keras_tensor__":
            return [value["config"]["keras_history"]]
        return [h for v in value.values() for h in _histories(v)]
    if isinstance(value, list):
        return [h for v in value for h in _histories(v)]
    return []


def _inputs_made(node, made):
    return all((h[0], h[1]) in made and h[2] < len(made[(h[0], h[1])]) for h in _histories(node))


def _tensors(value, get):
    """A node's serialized args/kwargs with each __keras_tensor__ replaced by the tensor it names."""
    if isinstance(value, dict):
        if value.get("class_name") == "__keras_tensor__":
            return get(value["config"]["keras_history"])
        return {k: _tensors(v, get) for k, v in value.items()}
    if isinstance(value, list):
        return [_tensors(v, get) for v in value]
    return value


def _compile_from_config(model, config, objects):
    """compile() with the saved optimizer, loss and metrics (built-in names or classes, or custom_objects)."""
    from . import losses, metrics, optimizers
    optimizer = config.get("optimizer")
    if isinstance(optimizer, dict):
        name = optimizer.get("registered_name") or optimizer.get("class_name")
        if name not in objects and optimizer.get("class_name") not in objects \
                and optimizer.get("class_name", "").lower() not in _built_in_optimizers():
            raise _not_found("class", optimizer.get("class_name"), optimizer)
        optimizer = optimizers.deserialize({"class_name": optimizer["class_name"],
                                            "config": optimizer.get("config", {})}, objects)
    loss = _named(config.get("loss"), losses, objects)
    found = lambda ms: _named(ms, metrics, objects)        # noqa: E731
    model.compile(optimizer=optimizer, loss=loss, loss_weights=config.get("loss_weights"),
                  metrics=found(config.get("metrics")), weighted_metrics=found(config.get("weighted_metrics")),
                  steps_per_execution=config.get("steps_per_execution", 1))


def _built_in_optimizers():
    from . import optimizers
    return {k.lower() for k in optimizers.__all__}


def _named(value, module, objects):
    """A loss or metric from compile_config: names stay names (compile resolves them), configs are rebuilt."""
    if value is None or isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        if value in objects:
            return objects[value]
        if value not in ("accuracy", "acc", "crossentropy", "ce"):
            module.get(value)          # a name minifp does not know: the module's own error
        return value
    if isinstance(value, dict) and value.get("class_name") == "function":       # a function, by name
        if value.get("config") in objects:
            return objects[value["config"]]
        if not str(value.get("module")).startswith("keras") or value.get("config") not in module.ALL_OBJECTS_DICT:
            raise _not_found("function", value.get("config"), value)
        return module.ALL_OBJECTS_DICT[value["config"]]
    if isinstance(value, dict) and "class_name" in value:
        name = value.get("registered_name") or value["class_name"]
        if name in objects or value["class_name"] in objects:
            cls = objects.get(name, objects.get(value["class_name"]))
            return cls.from_config(value.get("config", {})) if inspect.isclass(cls) else cls
        if value["class_name"] not in module.ALL_OBJECTS_DICT:
            raise _not_found("class", value["class_name"], value)
        return module.deserialize({"class_name": value["class_name"], "config": value.get("config", {})})
    if isinstance(value, list):
        return [_named(v, module, objects) for v in value]
    if isinstance(value, dict):
        return {k: _named(v, module, objects) for k, v in value.items()}
    return value
