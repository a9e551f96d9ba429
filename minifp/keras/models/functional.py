"""The functional graph: the nodes between a model's Input tensors and its outputs, and replaying them."""
from __future__ import annotations

from .._tensor import convert_to_tensor
from ..layers.layer import KerasTensor, _flatten, map_structure

__all__ = ["check_connected", "graph", "run"]


def check_connected(inputs, outputs):
    """Keras's ValueError for an output some of whose Input tensors are not among the model's inputs."""
    input_ids = {id(t) for t in inputs}
    for path, out in _paths(outputs):
        stack, seen = [out], set()
        while stack:        # (a stack, not recursion: models may be hundreds of layers deep)
            t = stack.pop()
            if id(t) in input_ids or id(t) in seen or t._keras_history is None:
                continue
            seen.add(id(t))
            layer, node_index, _ = t._keras_history
            parents = [p for p in layer._inbound_nodes[node_index].input_tensors if isinstance(p, KerasTensor)]
            if not parents:         # an Input the model was not given
                raise ValueError(f"Output with path `{path}` is not connected to `inputs`")
            stack.extend(parents)


def _paths(struct, prefix=""):
    """(path, leaf) of a nested structure as Keras names them: '' alone, '0', 'key', '0.key' inside."""
    if isinstance(struct, dict):
        items = sorted(struct.items())
    elif isinstance(struct, (list, tuple)):
        items = enumerate(struct)
    else:
        return [(prefix, struct)]
    return [p for k, v in items for p in _paths(v, f"{prefix}.{k}" if prefix else str(k))]


def graph(inputs, outputs):
    """(nodes in an order that computes each after its inputs, layers in that order, inputs first)."""
    input_ids = {id(t) for t in inputs}
    order, seen, on_path = [], set(), set()

    def visit(t):
        history = t._keras_history
        if history is None:
            raise ValueError(f"Output tensors of a Functional model must be the output of a Keras layer; "
                             f"{t} was not made by one")
        layer, node_index, _ = history
        node = layer._inbound_nodes[node_index]
        if id(node) in seen:
            return
        if id(node) in on_path:
            raise ValueError("The functional graph has a cycle")
        on_path.add(id(node))
        if id(t) not in input_ids:
            for parent in node.input_tensors:
                visit(parent)
        on_path.discard(id(node))
        seen.add(id(node))
        order.append(node)

    for t in inputs:
        visit(t)
    for t in outputs:
        visit(t)
    made = {id(t) for node in order for t in node.output_tensors}
    for node in order:
        for t in node.input_tensors:
            if id(t) not in made:
                raise ValueError(f"Graph disconnected: cannot find parent for tensor {t} at layer "
                                 f'"{node.operation.name}". The following previous layers were accessed without '
                                 f"issue: {[n.operation.name for n in order if n is not node]}")
    layers = []
    for node in order:
        if all(node.operation is not l for l in layers):
            layers.append(node.operation)
    return order, layers


def _check_input(model, i, kt, x):
    shape = tuple(getattr(x, "shape", ()))
    want = kt.shape
    if len(shape) != len(want) or any(w is not None and w != s for w, s in zip(want, shape)):
        raise ValueError(f"Input {i} with name '{kt.name}' of layer '{model.name}' is incompatible with the "
                         f"layer: expected shape={want}, found shape={shape}")


def _as_input(kt, x):
    """A model input converted to its Input's dtype (as Keras's Functional does)."""
    if isinstance(x, KerasTensor):
        return x
    return convert_to_tensor(x, dtype=kt.dtype)


def run(model, inputs, training=None):
    """The model's graph replayed on actual inputs (or on KerasTensors, which records nested nodes)."""
    struct = model._inputs_struct
    if isinstance(struct, dict) and isinstance(inputs, dict):
        flat = [inputs[k] for k in struct]
    else:
        flat = _flatten(inputs) if isinstance(inputs, (list, tuple, dict)) else [inputs]
    if len(flat) != len(model.inputs):
        raise ValueError(f'Layer "{model.name}" expects {len(model.inputs)} input(s), but it received {len(flat)} '
                         f"input tensors.")
    values = {}
    for i, (kt, x) in enumerate(zip(model.inputs, flat)):
        x = _as_input(kt, x)
        _check_input(model, i, kt, x)
        values[id(kt)] = x
    for node in model._nodes:
        if node.is_input or all(id(t) in values for t in node.output_tensors):
            continue
        get = lambda t: values[id(t)] if isinstance(t, KerasTensor) else t
        args = map_structure(get, node.call_args)
        kwargs = {k: map_structure(get, v) for k, v in node.call_kwargs.items()}
        if training is not None and "training" in node.operation._call_params()[0] \
                and node.call_kwargs.get("training") is None:
            kwargs["training"] = training
        out = node.operation(*args, **kwargs)
        for kt, value in zip(_flatten(node.outputs), _flatten(out)):
            values[id(kt)] = value
    out = map_structure(lambda t: values[id(t)], model._outputs_struct)
    return out[0] if isinstance(out, (list, tuple)) and len(out) == 1 else out     # (Keras's unpack_singleton)
