"""Model.summary() in Keras 3's layout: the rich table Keras prints (heavy head, a rule between rows, the
widths rich gives the columns), then total, trainable and non-trainable parameter counts and sizes."""
from __future__ import annotations

import math
import shutil
import sys
from ...engine import storage


__all__ = ["print_summary", "count_params", "weight_memory_size", "readable_memory_size"]


def count_params(weights):
    return int(sum(math.prod(v.shape) for v in weights))


def weight_memory_size(weights):
    """Bytes the weights take in their dtypes."""
    unique = {id(w): w for w in weights}.values()
    return sum(math.prod(w.shape) * (w.fmt.bits if w.fmt is not None else storage(w).dtype.itemsize * 8)
               for w in unique) / 8


def readable_memory_size(size):
    """1234567 -> "1.18 MB" (powers of 1024, two decimals)."""
    units = ["B", "KB", "MB", "GB", "TB", "PB"]
    for unit in units:
        if size / 1024 < 1:
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} {units[-1]}"


def _format_shape(shape):
    return f"({', '.join(str(d) for d in shape)})"


def format_layer_shape(layer):
    """The layer's output shape as Keras prints it, "?" when not known."""
    if layer._inbound_nodes:
        outs = layer._inbound_nodes[-1].outputs
        flat = [t for t in (outs if isinstance(outs, (list, tuple)) else [outs])]
        if len(flat) == 1:
            return _format_shape(flat[0].shape)
        return str([_format_shape(t.shape) for t in flat]).replace("'", "")
    seen = getattr(layer, "_seen_output_shape", None)
    if seen is None:
        return "?"
    if seen and isinstance(seen[0], (list, tuple)):
        return str([_format_shape(s) for s in seen]).replace("'", "")
    return _format_shape(seen)


def _ratio_reduce(total, ratios, maximums, values):
    """rich's ratio_reduce: take `total` away from values in proportion to ratios."""
    ratios = [r if m else 0 for r, m in zip(ratios, maximums)]
    total_ratio = sum(ratios)
    if not total_ratio:
        return values[:]
    remaining, out = total, []
    for ratio, maximum, value in zip(ratios, maximums, values):
        if ratio and total_ratio > 0:
            distributed = min(maximum, round(ratio * remaining / total_ratio))
            out.append(value - distributed)
            remaining -= distributed
            total_ratio -= ratio
        else:
            out.append(value)
    return out


def _wrap_text(text, width):
    """Text broken into lines of at most width characters at spaces, as rich does: a word longer than the line
    is cut to width - 1 characters and an ellipsis (a rich Column's default overflow)."""
    lines, line = [], ""
    for word in text.split(" "):
        if len(word) > width:
            word = word[:width - 1] + "…"
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= width:
            line += " " + word
        else:
            lines.append(line)
            line = word
    lines.append(line)
    return lines


def _table(header, rows, widths, justify):
    """A rich Table (box HEAVY_HEAD, show_lines=True) rendered as plain text; widths include padding."""
    inner = [w - 2 for w in widths]

    def rule(left, fill, mid, right):
        return left + mid.join(fill * w for w in widths) + right

    def render(cells, bar):
        wrapped = [_wrap_text(str(c), w) for c, w in zip(cells, inner)]
        height = max(len(w) for w in wrapped)
        out = []
        for i in range(height):
            parts = []
            for lines, w, j in zip(wrapped, inner, justify):
                text = lines[i] if i < len(lines) else ""
                parts.append(" " + (text.rjust(w) if j == "right" else text.center(w) if j == "center"
                                    else text.ljust(w)) + " ")
            out.append(bar + bar.join(parts) + bar)
        return out

    lines = [rule("┏", "━", "┳", "┓")] + render(header, "┃") + [rule("┡", "━", "╇", "┩")]
    for i, row in enumerate(rows):
        if i:
            lines.append(rule("├", "─", "┼", "┤"))
        lines += render(row, "│")
    lines.append(rule("└", "─", "┴", "┘"))
    return lines


def _functional(model):
    """Whether model is a functional model (a graph of nodes), without importing its class (which imports this)."""
    return getattr(model, "_nodes", None) is not None


def _sequential_like(model, layers):
    if not _functional(model):
        return True
    for node in model._nodes:
        if len(node.input_tensors) > 1:
            return False
    # More than one node at the same depth (a branch) also breaks the chain.
    consumers = {}
    for node in model._nodes:
        for t in node.input_tensors:
            consumers[id(t)] = consumers.get(id(t), 0) + 1
    return all(n <= 1 for n in consumers.values()) and len(model.inputs) == 1 and len(model.outputs) == 1


def _connections(model, layer):
    nodes = [n for n in layer._inbound_nodes if any(n is m for m in model._nodes)]
    parts = []
    for node in nodes:
        for t in node.input_tensors:
            inbound, node_index, tensor_index = t._keras_history
            parts.append(f"{inbound.name}[{node_index}][{tensor_index}]")
    return ", ".join(parts) or "-"


def print_summary(model, line_length=None, positions=None, print_fn=None, expand_nested=False,
                  show_trainable=False, layer_range=None):
    """Print (or pass to print_fn as one string) the summary Keras 3 prints for this model."""
    layers = model._operations if _functional(model) else model.layers
    sequential_like = _sequential_like(model, layers)
    if sequential_like:
        default_length, positions = 88, positions or [0.45, 0.80, 1.0]
        header, justify = ["Layer (type)", "Output Shape", "Param #"], ["left", "left", "right"]
    else:
        default_length, positions = 108, positions or [0.3, 0.56, 0.74, 1.0]
        header = ["Layer (type)", "Output Shape", "Param #", "Connected to"]
        justify = ["left", "left", "right", "left"]
    if show_trainable:
        default_length += 12
        positions = [p * 0.90 for p in positions] + [1.0]
        header.append("Trainable")
        justify.append("center")
    default_length = min(default_length, shutil.get_terminal_size().columns - 4)
    line_length = line_length or default_length
    if positions[-1] <= 1:
        positions = [int(p * line_length) for p in positions]
    widths, current = [], 0
    for pos in positions:
        width = pos - current
        if width < 4:
            raise ValueError("Insufficient console width to print summary.")
        widths.append(width)
        current += width
    # rich: each column's width plus its padding (2), shrunk evenly to fit the table's width less its borders.
    widths = [w + 2 for w in widths]
    available = line_length - (len(widths) + 1)
    if sum(widths) > available:
        widths = _ratio_reduce(sum(widths) - available, [1] * len(widths), widths, widths)

    def fields(layer, prefix=""):
        name = f"{prefix}{layer.name} ({type(layer).__name__})"
        if not layer.built:
            params = "0 (unbuilt)"
        else:
            params = f"{int(sum(math.prod(v.shape) for v in layer.weights)):,}"
        row = [name, format_layer_shape(layer), params]
        if not sequential_like:
            row.append(_connections(model, layer))
        if show_trainable:
            row.append(("Y" if layer.trainable else "N") if layer.weights else "-")
        return row

    def rows_of(layer, level=0):
        rows = [fields(layer, "   " * level + "└ " if level else "")]
        if expand_nested and getattr(layer, "layers", None):
            for inner in layer.layers:
                rows += rows_of(inner, level + 1)
        return rows

    start, stop = _layer_range(layers, layer_range)
    rows = [row for layer in layers[start:stop] for row in rows_of(layer)]
    trainable, non_trainable = model.trainable_weights, model.non_trainable_weights
    t_count, n_count = count_params(trainable), count_params(non_trainable)
    t_size, n_size = weight_memory_size(trainable), weight_memory_size(non_trainable)
    o_count = o_size = 0
    optimizer = getattr(model, "optimizer", None)
    o_built = bool(getattr(model, "compiled", False) and optimizer is not None and getattr(optimizer, "built",
                                                                                            False))
    if o_built:
        o_vars = list(getattr(optimizer, "variables", []))
        o_count, o_size = count_params(o_vars), weight_memory_size(o_vars)
    lines = [f'Model: "{model.name}"'] + _table(header, rows, widths, justify)
    lines.append(f" Total params: {t_count + n_count + o_count:,} ({readable_memory_size(t_size + n_size + o_size)})")
    lines.append(f" Trainable params: {t_count:,} ({readable_memory_size(t_size)})")
    lines.append(f" Non-trainable params: {n_count:,} ({readable_memory_size(n_size)})")
    if o_built:
        lines.append(f" Optimizer params: {o_count:,} ({readable_memory_size(o_size)})")
    text = "\n".join(lines) + "\n"
    if print_fn is not None:
        print_fn(text)
    else:
        sys.stdout.write(text)


def _layer_range(layers, layer_range):
    if layer_range is None:
        return 0, len(layers)
    starts, ends = layer_matches(layers, layer_range)
    return starts[0], ends[-1] + 1


def layer_matches(layers, layer_range):
    """The positions of the layers whose names match layer_range's first and second regex, each non-empty."""
    import re
    if len(layer_range) != 2:
        raise ValueError(f"layer_range must be a list or tuple of length 2. Received: layer_range = {layer_range} "
                         f"of length {len(layer_range)}")
    names = [l.name for l in layers]
    starts = [i for i, n in enumerate(names) if re.match(layer_range[0], n)]
    ends = [i for i, n in enumerate(names) if re.match(layer_range[1], n)]
    if not starts or not ends:
        raise ValueError(f"Passed layer_names do not match the layer names in the model. Received: {layer_range}")
    return starts, ends
