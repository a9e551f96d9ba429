"""Record real PyTorch's packed sequences (torch.nn.utils.rnn), RNN/LSTM/GRU on a PackedSequence and nn.EmbeddingBag
on a table of cases into tests/fixtures/pytorch/packed.json; tests/torch/test_packed.py runs the same functions
(utility, recurrent, bag, training, error) with minifp.torch and compares.

    /work/torchenv/bin/python tools/record_torch_packed.py

Inputs and weights are fixed formulas (wave), not random draws, so the fixture holds only results: for the
utilities the PackedSequence's four fields, what pad_packed_sequence and unpack_sequence give back, reprs and the
gradients reaching the padded input; for the recurrent layers the packed output, the final states and the
gradients of a weighted sum of both with respect to the input, the initial states and every weight; for
EmbeddingBag reprs, state_dict keys, outputs and gradients; a torchtext-tutorial classifier's losses and weights
over three SGD steps; and the exception type and message of bad input.
"""
import json
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pytorch" / "packed.json"


def wave(torch, shape, k=0.0, scale=1.0, requires_grad=False):
    """A fixed float32 tensor of the shape: scale * sin(0.7 i + k) over its flat index i."""
    n = int(np.prod(shape, dtype=np.int64))
    v = (scale * np.sin(0.7 * np.arange(n, dtype=np.float64) + k)).astype(np.float32).reshape(shape)
    return torch.tensor(v.tolist(), dtype=torch.float32, requires_grad=requires_grad)


def array(t):
    """A tensor as JSON: dtype, shape and its values flattened (None stays None); float32 values as their shortest
    float32 decimal, which reads back (as float32) to the same value in half the characters."""
    if t is None:
        return None
    values = t.detach().reshape(-1).tolist()
    if str(t.dtype) == "torch.float32":
        values = [float(str(np.float32(v))) for v in values]
    return {"dtype": str(t.dtype), "shape": list(t.shape), "values": values}


def packed(p):
    """A PackedSequence's four fields as JSON."""
    return {"type": type(p).__name__, "data": array(p.data), "batch_sizes": array(p.batch_sizes),
            "sorted_indices": array(p.sorted_indices), "unsorted_indices": array(p.unsorted_indices)}


# ---- torch.nn.utils.rnn: {name: (padded shape, lengths expression, batch_first, enforce_sorted)}
PADDED = {
    "sorted": ((5, 3, 2), "[5, 3, 2]", False, True),
    "sorted_ties": ((4, 4, 3), "[4, 4, 2, 2]", False, True),
    "batch_first_unsorted": ((4, 5, 3), "[2, 5, 1, 3]", True, False),
    "tensor_lengths_unsorted": ((6, 3, 2), "torch.tensor([3, 6, 3])", False, False),
    "int32_lengths": ((3, 2, 2), "torch.tensor([3, 1], dtype=torch.int32)", False, True),
    "shorter_than_padding": ((7, 2, 1), "[4, 2]", False, True),
    "one_feature_axis_more": ((3, 2, 2, 2), "[3, 2]", False, True),
    "single": ((3, 1, 2), "[3]", False, True),
}


def utility(torch, name):
    """pack_padded_sequence of one PADDED case, its unpacking four ways and the gradient reaching the input."""
    shape, lengths, batch_first, enforce_sorted = PADDED[name]
    rnn = torch.nn.utils.rnn
    x = wave(torch, shape, requires_grad=True)
    p = rnn.pack_padded_sequence(x, eval(lengths, {"torch": torch}), batch_first=batch_first,
                                 enforce_sorted=enforce_sorted)
    out = {"packed": packed(p), "fields": list(p._fields), "is_cuda": p.is_cuda, "len": len(p)}
    padded, lens = rnn.pad_packed_sequence(p, batch_first=batch_first)
    out["padded"], out["lengths"] = array(padded), array(lens)
    padded, lens = rnn.pad_packed_sequence(p, batch_first=not batch_first, padding_value=-1.5,
                                           total_length=shape[1 if batch_first else 0] + 1)
    out["padded_other_layout"], out["lengths_other_layout"] = array(padded), array(lens)
    out["unpacked"] = [array(s) for s in rnn.unpack_sequence(p)]
    (p.data * wave(torch, tuple(p.data.shape), k=1.0)).sum().backward()
    out["grad"] = array(x.grad)
    return out


SEQUENCES = {           # {name: (the sequences' shapes, enforce_sorted)}
    "sorted": ([(4, 2), (3, 2), (1, 2)], True),
    "unsorted": ([(2, 3), (5, 3), (1, 3), (5, 3)], False),
    "one_dimensional": ([(3,), (4,), (2,)], False),
}


def sequence(torch, name):
    """pack_sequence of one SEQUENCES case, its repr and unpack_sequence again."""
    shapes, enforce_sorted = SEQUENCES[name]
    seqs = [wave(torch, s, k=i) for i, s in enumerate(shapes)]
    p = torch.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=enforce_sorted)
    return {"packed": packed(p), "repr": repr(p), "unpacked": [array(s) for s in torch.nn.utils.rnn.unpack_sequence(p)]}


# PackedSequence's conversions: {expression of p: what is recorded}
CONVERSIONS = ["p.double()", "p.half()", "p.float()", "p.long()", "p.int()", "p.to(torch.float16)",
               "p.to(dtype=torch.bfloat16)", "p.to('cpu')", "p.cpu()", "p.short()", "p.byte()", "p.char()"]


def conversion(torch, expression):
    """A conversion of an unsorted PackedSequence: the result's fields and whether it is the same object."""
    p = torch.nn.utils.rnn.pack_sequence([wave(torch, (2, 2), scale=3.0), wave(torch, (3, 2), k=1.0, scale=3.0)],
                                         enforce_sorted=False)
    q = eval(expression, {"torch": torch, "p": p})
    return {"packed": packed(q), "same": q is p}


# ---- RNN, LSTM, GRU on packed input: {constructor: (padded shape, lengths, enforce_sorted, initial states)}
RECURRENT = {
    "RNN(3, 4)": ((5, 3, 3), [5, 3, 2], True, False),
    "RNN(3, 4, nonlinearity='relu', num_layers=2, bidirectional=True)": ((4, 3, 3), [2, 4, 1], False, True),
    "LSTM(3, 4)": ((5, 3, 3), [5, 3, 2], True, False),
    "LSTM(3, 4, batch_first=True)": ((3, 5, 3), [2, 5, 4], False, True),
    "LSTM(3, 4, num_layers=2, bidirectional=True)": ((4, 4, 3), [3, 4, 1, 4], False, False),
    "LSTM(3, 4, bidirectional=True, batch_first=True)": ((3, 4, 3), [4, 2, 3], False, True),
    "LSTM(3, 5, proj_size=2, bidirectional=True)": ((4, 2, 3), [4, 2], True, True),
    "GRU(3, 4)": ((5, 2, 3), [3, 5], False, False),
    "GRU(3, 4, num_layers=2, batch_first=True, bidirectional=True)": ((3, 4, 3), [1, 4, 2], False, True),
    "GRU(3, 4, bias=False, bidirectional=True)": ((4, 3, 3), [4, 4, 4], True, True),
}


def states_of(m, batch):
    """The shapes of a module's initial states for a batch."""
    directions = 2 if m.bidirectional else 1
    h = (m.num_layers * directions, batch, m.proj_size or m.hidden_size)
    return [h, (m.num_layers * directions, batch, m.hidden_size)] if type(m).__name__ == "LSTM" else [h]


def recurrent(torch, ctor):
    """One RECURRENT case: the packed output, the final states and the gradients of a weighted sum of both."""
    shape, lengths, enforce_sorted, with_states = RECURRENT[ctor]
    m = eval(ctor, {}, vars(torch.nn))
    m.load_state_dict({k: wave(torch, tuple(v.shape), k=i, scale=0.5) for i, (k, v) in
                       enumerate(m.state_dict().items())})
    x = wave(torch, shape, k=-1.0, requires_grad=True)
    p = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=m.batch_first, enforce_sorted=enforce_sorted)
    states = [wave(torch, s, k=3.0 + i, scale=0.5, requires_grad=True)
              for i, s in enumerate(states_of(m, len(lengths)))]
    hx = None if not with_states else states[0] if len(states) == 1 else tuple(states)
    out, h = m(p, hx)
    finals = [h] if isinstance(h, torch.Tensor) else list(h)
    loss = (out.data * wave(torch, tuple(out.data.shape), k=2.0)).sum()
    for i, f in enumerate(finals):
        loss = loss + (f * wave(torch, tuple(f.shape), k=5.0 + i)).sum()
    loss.backward()
    result = {"repr": repr(m), "output": packed(out), "finals": [array(f) for f in finals],
              "grad_input": array(x.grad),
              "grad_weights": {k: array(v.grad) for k, v in m.named_parameters() if "_l0" in k}}
    if with_states:
        result["grad_states"] = [array(s.grad) for s in states]
    return result


# ---- nn.EmbeddingBag
BAG_MODULES = [
    "nn.EmbeddingBag(10, 3)", "nn.EmbeddingBag(10, 3, mode='sum')", "nn.EmbeddingBag(10, 3, mode='max')",
    "nn.EmbeddingBag(10, 3, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, padding_idx=-2)",
    "nn.EmbeddingBag(6, 2, padding_idx=0, include_last_offset=True, sparse=True)",
    "nn.EmbeddingBag.from_pretrained(torch.ones(4, 2))",
    "nn.EmbeddingBag.from_pretrained(torch.ones(4, 2), freeze=False, mode='sum', padding_idx=1)",
]


def bag_module(torch, expression):
    """Repr, state_dict keys, the weight's shape and requires_grad, and whether the padding row is zero."""
    m = eval(expression, {"torch": torch, "nn": torch.nn})
    w = m.weight
    pad = None if m.padding_idx is None else w[m.padding_idx].detach().abs().sum().item()
    return {"repr": repr(m), "state_dict": list(m.state_dict()), "shape": list(w.shape),
            "requires_grad": w.requires_grad, "padding_row": pad, "attributes": [
                m.num_embeddings, m.embedding_dim, m.max_norm, m.norm_type, m.scale_grad_by_freq, m.mode, m.sparse,
                m.include_last_offset, m.padding_idx]}


# {name: (constructor keywords, input, offsets, per_sample_weights: a wave shape or None)}
BAGS = {
    "mean_offsets": ({}, [1, 2, 4, 5, 4, 3, 2, 9], [0, 3, 5], None),
    "sum_offsets": ({"mode": "sum"}, [1, 2, 4, 5, 4, 3, 2, 9], [0, 3, 5], None),
    "max_offsets": ({"mode": "max"}, [1, 2, 4, 5, 4, 3, 2, 9], [0, 4, 5], None),
    "mean_2d": ({}, [[1, 2, 4], [4, 3, 9]], None, None),
    "sum_2d_weights": ({"mode": "sum"}, [[1, 2, 4], [4, 3, 9]], None, (2, 3)),
    "sum_weights": ({"mode": "sum"}, [0, 2, 2, 7, 1], [0, 2], (5,)),
    "empty_bags": ({}, [3, 1, 4], [0, 0, 2, 3], None),
    "empty_bags_sum": ({"mode": "sum"}, [3, 1, 4], [0, 2, 2], None),
    "include_last_offset": ({"include_last_offset": True}, [1, 2, 3, 4, 5], [0, 2, 5], None),
    "padding_idx_mean": ({"padding_idx": 2}, [2, 1, 2, 3, 2, 2], [0, 3, 4], None),
    "padding_idx_sum": ({"mode": "sum", "padding_idx": 2}, [2, 1, 2, 3, 5], [0, 3], None),
    "padding_idx_max": ({"mode": "max", "padding_idx": 2}, [2, 1, 2, 3, 2], [0, 3, 4], None),
    "repeated_index": ({"mode": "sum"}, [4, 4, 4, 1], [0], None),
    "int32_indices": ({}, "torch.tensor([1, 2, 3, 4], dtype=torch.int32)", "torch.tensor([0, 1], dtype=torch.int32)",
                      None),
}


def bag(torch, name):
    """One BAGS case on EmbeddingBag(10, 3) with wave weights: output and gradients of a weighted sum."""
    kwargs, indices, offsets, weights = BAGS[name]
    m = torch.nn.EmbeddingBag(10, 3, **kwargs)
    m.load_state_dict({"weight": wave(torch, (10, 3), k=0.5, scale=2.0)})

    def tensor(v):
        return eval(v, {"torch": torch}) if isinstance(v, str) else None if v is None else torch.tensor(v)
    psw = None if weights is None else wave(torch, weights, k=1.5, requires_grad=True)
    y = m(tensor(indices), tensor(offsets), per_sample_weights=psw)
    (y * wave(torch, tuple(y.shape), k=2.5)).sum().backward()
    return {"output": array(y), "grad": array(m.weight.grad), "grad_per_sample_weights": array(
        None if psw is None else psw.grad)}


def training(torch):
    """The torchtext tutorial's TextClassificationModel (EmbeddingBag + Linear) trained three SGD steps with
    offsets, gradient clipping and StepLR as the tutorial does: losses, accuracies and the final weights."""
    nn = torch.nn

    class TextClassificationModel(nn.Module):
        def __init__(self, vocab_size, embed_dim, num_class):
            super().__init__()
            self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
            self.fc = nn.Linear(embed_dim, num_class)

        def forward(self, text, offsets):
            return self.fc(self.embedding(text, offsets))

    model = TextClassificationModel(20, 8, 4)
    model.load_state_dict({k: wave(torch, tuple(v.shape), k=i, scale=0.5) for i, (k, v) in
                           enumerate(model.state_dict().items())})
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=5)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
    batches = [([1, 5, 7, 3, 9, 2, 2, 11, 19, 4, 0], [0, 4, 6, 9], [0, 3, 1, 2]),
               ([4, 4, 8, 12, 13, 6, 1], [0, 1, 5], [1, 1, 3]),
               ([15, 16, 17, 18, 3, 2, 10, 14], [0, 2, 3, 7], [2, 0, 3, 1])]
    losses, correct = [], []
    model.train()
    for text, offsets, label in batches:
        text, offsets, label = torch.tensor(text), torch.tensor(offsets), torch.tensor(label)
        optimizer.zero_grad()
        predicted = model(text, offsets)
        loss = criterion(predicted, label)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        losses.append(loss.item())
        correct.append((predicted.argmax(1) == label).sum().item())
    scheduler.step()
    return {"losses": losses, "correct": correct, "lr": optimizer.param_groups[0]["lr"],
            "weights": {k: array(v) for k, v in model.state_dict().items()}}


# Expressions that raise: the utilities', the packed recurrent layers' and EmbeddingBag's checks.
ERRORS = [
    "rnn.pack_padded_sequence(torch.zeros(4, 3, 2), [2, 4, 1])",
    "rnn.pack_padded_sequence(torch.zeros(4, 3, 2), [4, 3, 0])",
    "rnn.pack_padded_sequence(torch.zeros(4, 3, 2), [4, 0, 3], enforce_sorted=False)",
    "rnn.pack_padded_sequence(torch.zeros(4, 3, 2), [4, 3])",
    "rnn.pack_padded_sequence(torch.zeros(4, 3, 2), torch.tensor([[4, 3, 2]]))",
    "rnn.pack_padded_sequence(torch.zeros(0, 3, 2), [0, 0, 0])",
    "rnn.pack_padded_sequence(torch.zeros(4, 3, 2), [-1, 3, 2], enforce_sorted=False)",
    "rnn.pad_packed_sequence(rnn.pack_sequence([torch.ones(3), torch.ones(2)]), total_length=2)",
    "rnn.pack_sequence([torch.ones(2), torch.ones(3)])",
    "rnn.pack_sequence([])",
    "rnn.PackedSequence(torch.ones(3))",
    "nn.LSTM(2, 3)(rnn.pack_sequence([torch.ones(3, 2), torch.ones(2, 2)]), (torch.zeros(1, 3, 3),) * 2)",
    "nn.GRU(2, 3)(rnn.pack_sequence([torch.ones(3, 2), torch.ones(2, 2)]), torch.zeros(2, 2, 3))",
    "nn.RNN(2, 3)(rnn.pack_sequence([torch.ones(3, 4), torch.ones(2, 4)]))",
    "nn.RNN(2, 3)(rnn.pack_sequence([torch.ones(3, 2, 1), torch.ones(2, 2, 1)]))",
    "nn.EmbeddingBag(10, 3, padding_idx=10)", "nn.EmbeddingBag(10, 3, padding_idx=-11)",
    "nn.EmbeddingBag(10, 3, _weight=torch.ones(3, 10))", "nn.EmbeddingBag.from_pretrained(torch.ones(4))",
    "nn.EmbeddingBag(10, 3, mode='median')(torch.tensor([1, 2]), torch.tensor([0]))",
    "nn.EmbeddingBag(10, 3)(torch.tensor([1, 2]))",
    "nn.EmbeddingBag(10, 3)(torch.tensor([1, 2]), torch.tensor([[0]]))",
    "nn.EmbeddingBag(10, 3)(torch.tensor([[1, 2]]), torch.tensor([0]))",
    "nn.EmbeddingBag(10, 3)(torch.tensor([[[1, 2]]]))",
    "nn.EmbeddingBag(10, 3)(torch.tensor([1, 2]), torch.tensor([0]), per_sample_weights=torch.ones(2))",
    "nn.EmbeddingBag(10, 3, mode='sum')(torch.tensor([1, 2]), torch.tensor([0]), per_sample_weights=torch.ones(3))",
    "nn.EmbeddingBag(10, 3, mode='max', scale_grad_by_freq=True)(torch.tensor([1, 2]), torch.tensor([0]))",
    "nn.EmbeddingBag(10, 3, mode='max', sparse=True)(torch.tensor([1, 2]), torch.tensor([0]))",
]


def error(torch, expression):
    """[exception type name, message] of an expression that raises (None if it does not)."""
    try:
        eval(expression, {"torch": torch, "nn": torch.nn, "rnn": torch.nn.utils.rnn})
    except Exception as e:          # noqa: BLE001
        return [type(e).__name__, str(e)]
    return None


def main():
    import torch
    torch.manual_seed(0)
    out = {"torch": torch.__version__,
           "utilities": {name: utility(torch, name) for name in PADDED},
           "sequences": {name: sequence(torch, name) for name in SEQUENCES},
           "conversions": {e: conversion(torch, e) for e in CONVERSIONS},
           "recurrent": {ctor: recurrent(torch, ctor) for ctor in RECURRENT},
           "bag_modules": {e: bag_module(torch, e) for e in BAG_MODULES},
           "bags": {name: bag(torch, name) for name in BAGS},
           "training": training(torch),
           "errors": {e: error(torch, e) for e in ERRORS}}
    OUT.write_text(json.dumps(out, indent=None, separators=(",", ":")) + "\n")
    print(f"{OUT}: {len(out['utilities'])} utility, {len(out['recurrent'])} recurrent, {len(out['bags'])} bag cases, "
          f"{len(out['errors'])} errors ({OUT.stat().st_size} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
