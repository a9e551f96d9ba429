"""Model.summary() in tf.keras's (tf-keras 2.x's) layout: plain text lines handed one by one to print_fn.

    Model: "model"
    _________________________________________________________________   <- "_" * line_length
     Layer (type)                Output Shape              Param #
    =================================================================
     dense (Dense)               (None, 10)                7850
                                                                         <- " " * line_length after each layer
    =================================================================
    Total params: 7850 (30.66 KB)
    Trainable params: 7850 (30.66 KB)
    Non-trainable params: 0 (0.00 Byte)
    _________________________________________________________________

Columns end at `positions` (65 characters, [.45, .85, 1] of them, for a chain of layers; 98 and [.3, .6, .7, 1]
with a "Connected to" column for other graphs); a cell too long for its column goes on in the next line, cut
after "),", "},", "]," or "'," where it has one. Output shapes are str() of the shapes tf.keras keeps (tuples;
an InputLayer's in a list), counts have no thousands separators, sizes are in powers of 1024 ("Byte", "KB"...).
The rows' data (layers, their calls, parameter counts and sizes) is minifp.keras's.
"""
from __future__ import annotations

import numbers

from ...keras.layers.core import InputLayer
from ...keras.layers.layer import map_structure
from ...keras.models import summary_utils as _keras_summary

__all__ = ["print_summary", "output_shape", "readable_memory_size"]

_BREAKS = ("),", "},", "],", "',")      # a cell's line may end just after one of these


def readable_memory_size(size):
    """220200 -> "215.04 KB" (powers of 1024, two decimals, "Byte" below 1 KB)."""
    for unit in ("Byte", "KB", "MB", "GB", "TB"):
        if size / 1024 < 1:
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} PB"


def _unique(weights):
    return list({id(w): w for w in weights}.values())


def _count(weights):
    return _keras_summary.count_params(_unique(weights))


def _is_graph(model):
    """Whether the model is a graph of layers (tf.keras's `_is_graph_network`): functional, not subclassed."""
    return getattr(model, "_nodes", None) is not None


def _node_shapes(node):
    shapes = map_structure(lambda t: tuple(None if d is None else int(d) for d in t.shape), node.outputs)
    return [shapes] if isinstance(node.operation, InputLayer) else shapes


def output_shape(layer):
    """layer.output_shape as tf.keras shows it: what all its calls on symbolic tensors gave, or "multiple"
    (never called on one, or called with different shapes)."""
    shapes = {str(_node_shapes(node)) for node in layer._inbound_nodes}
    return shapes.pop() if len(shapes) == 1 else "multiple"


def _sequential_like(model):
    """tf.keras's test: a Sequential or subclassed model, or a graph with one node per depth, each of one input,
    and no layer called twice."""
    if not _is_graph(model) or model.__class__.__name__ == "Sequential":
        return True
    nodes = model._nodes                       # each after the nodes it reads
    ids = {id(n) for n in nodes}
    depth = {}
    for node in reversed(nodes):               # depth: the longest way from the node to an output
        d = depth.setdefault(id(node), 0)
        for parent in node.parent_nodes:
            if id(parent) in ids:
                depth[id(parent)] = max(depth.get(id(parent), 0), d + 1)
    if len(set(depth.values())) < len(nodes) or any(len(n.input_tensors) > 1 for n in nodes):
        return False
    return len({id(n.operation) for n in nodes}) == len(nodes)


def _layer_bounds(layers, layer_range):
    """[first, last + 1] of the layers layer_range's two names (regexes) pick, as tf.keras finds them."""
    if layer_range is None:
        return 0, len(layers)
    if len(layer_range) == 2 and not all(isinstance(name, str) for name in layer_range):
        raise ValueError(f"layer_range should contain string type only. Received: {layer_range}")
    lower, upper = _keras_summary.layer_matches(layers, layer_range)     # the same checks and regex matches
    if min(lower) > max(upper):             # tf.keras takes the names in either order
        return min(upper), max(lower) + 1
    return min(lower), max(upper) + 1


def _column_ends(line_length, positions, columns):
    """line_length and the absolute end of each column, checked: at least one character of text in each."""
    if isinstance(line_length, bool) or not isinstance(line_length, numbers.Integral) or line_length <= 0:
        raise ValueError(f"line_length must be a positive integer. Received: line_length={line_length!r}")
    if not isinstance(positions, (list, tuple)) or not all(isinstance(p, numbers.Real) for p in positions):
        raise ValueError(f"positions must be a list of numbers. Received: positions={positions!r}")
    if len(positions) < columns:
        raise ValueError(f"positions needs one entry per column ({columns}: the end of each). Received: "
                         f"positions={positions}")
    line_length = int(line_length)
    scale = line_length if positions[-1] <= 1 else 1       # fractions of line_length, or characters
    positions = [int(scale * p) for p in positions]
    start = 0
    for i, end in enumerate(positions[:columns]):
        room = end - start - (0 if i == len(positions) - 1 else 3)
        if room < 1:
            raise ValueError(f"Insufficient line_length / positions to print the summary: column {i} would hold "
                             f"{max(room, 0)} characters (positions={positions}, line_length={line_length}).")
        start = end
    return line_length, positions


def print_summary(model, line_length=None, positions=None, print_fn=None, expand_nested=False,
                  show_trainable=False, layer_range=None):
    """Print the summary tf.keras prints for this model, calling print_fn (default: print) once per line."""
    if not model.built:
        raise ValueError("This model has not yet been built. Build the model first by calling `build()` or by "
                         "calling the model on a batch of data.")
    if print_fn is None:
        print_fn = print
    elif not callable(print_fn):
        raise TypeError(f"print_fn must be callable (it is called with each line). Received: {print_fn!r}")
    sequential_like = _sequential_like(model)
    header = ["Layer (type)", "Output Shape", "Param #"]
    if sequential_like:
        line_length = 65 if line_length is None else line_length
        positions = positions or [0.45, 0.85, 1.0]
    else:
        line_length = 98 if line_length is None else line_length
        positions = positions or [0.3, 0.6, 0.70, 1.0]
        header.append("Connected to")
        relevant = {id(n) for n in model._nodes}
    line_length, positions = _column_ends(line_length, positions, len(header))
    if show_trainable:
        header.append("Trainable")
        line_length += 11
        positions = positions + [line_length]
    layers = model.layers
    start, stop = _layer_bounds(layers, layer_range)

    def row(fields, level=0):
        """One table row: each cell cut to its column, the rest of it on the following lines."""
        cells, last = [str(f) for f in fields], len(positions) - 1
        while any(cells):
            line = ""
            for col, text in enumerate(cells):
                begin = positions[col - 1] if col else 0
                gap = 0 if col == last else 2
                width = positions[col] - begin - gap - (0 if col == last else 1) - (level if col == 0 else 0)
                if width < 1:
                    raise ValueError(f"Insufficient line_length / positions to print the summary of layers nested "
                                     f"{level} deep (positions={positions}).")
                piece = text[:width]
                cuts = [piece.find(b) + len(b) for b in _BREAKS if b in piece]
                if cuts:
                    width = min(cuts)
                    piece = piece[:width]
                if col == 0:
                    line += "|" * level + " "
                line += piece + " " * gap
                cells[col] = text[width:]
                line += " " * (positions[col] - (level if level and col == last else 0) - len(line))
            print_fn(line + "|" * level)

    def layer_fields(layer):
        fields = [f"{layer.name} ({type(layer).__name__})", output_shape(layer)]
        if sequential_like:
            unused = not layer.built and not _is_graph(layer)
            fields.append("0 (unused)" if unused else _count(layer.weights))
        else:
            fields.append(_count(layer.weights))
            fields.append([f"{t._keras_history[0].name}[{t._keras_history[1]}][{t._keras_history[2]}]"
                           for node in layer._inbound_nodes if id(node) in relevant
                           for t in node.input_tensors])
        if show_trainable:
            fields.append("Y" if layer.trainable else "N")
        return fields

    def print_layer(layer, level=0, last_nested=False):
        row(layer_fields(layer), level)
        inner = getattr(layer, "layers", None) if expand_nested else None
        if inner:
            print_fn("|" * (level + 1) + "¯" * (line_length - 2 * level - 2) + "|" * (level + 1))
            for i, sub in enumerate(inner):
                print_layer(sub, level + 1, i == len(inner) - 1)
            print_fn("|" * level + "¯" * (line_length - 2 * level) + "|" * level)
        if not last_nested:
            print_fn("|" * level + " " * (line_length - 2 * level) + "|" * level)

    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    row(header)
    print_fn("=" * line_length)
    for layer in layers[start:stop]:
        print_layer(layer)
    print_fn("=" * line_length)
    trainable, non_trainable = model.trainable_weights, model.non_trainable_weights
    t_size = _keras_summary.weight_memory_size(trainable)
    n_size = _keras_summary.weight_memory_size(non_trainable)
    t_count, n_count = _count(trainable), _count(non_trainable)
    print_fn(f"Total params: {t_count + n_count} ({readable_memory_size(t_size + n_size)})")
    print_fn(f"Trainable params: {t_count} ({readable_memory_size(t_size)})")
    print_fn(f"Non-trainable params: {n_count} ({readable_memory_size(n_size)})")
    print_fn("_" * line_length)
