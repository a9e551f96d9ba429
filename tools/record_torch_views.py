"""Record real PyTorch's views under in-place changes into tests/fixtures/pytorch/views.json; tests/torch/test_views.py
runs the same programs with minifp.torch and compares.

    /work/torchenv/bin/python tools/record_torch_views.py

Each case is a small program over `torch` (and `nn`, `np`) that changes a view in place (x[0].fill_(1),
x.t()[0].zero_(), p.data[:, 0].mul_(2), ...), or a tensor whose memory NumPy shares (the Tensors tutorial's bridge:
t.numpy(), torch.from_numpy), and leaves its results in `out`: recorded are their values and dtypes, or the exception's
type and message. Strings in `out` (reprs, node names) are recorded as they are.
"""
import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pytorch" / "views.json"

CASES = {
    "row": "t = torch.zeros(2, 3); t[0].add_(1); out = [t]",
    "element": "t = torch.zeros(2, 3); t[1, 2].fill_(4); t[0][1].fill_(5); out = [t]",
    "view": "t = torch.zeros(2, 3); t.view(3, 2).mul_(0).add_(2); out = [t]",
    "view_step": "t = torch.arange(6.0).reshape(2, 3); t.view(-1)[::2].fill_(-1); out = [t]",
    "t_column": "t = torch.zeros(2, 3); t.t()[0].fill_(9); out = [t]",
    "transpose_permute": "t = torch.zeros(2, 3, 4); t.transpose(0, 2)[1].add_(1); t.permute(2, 0, 1)[3, 1].sub_(5); "
                         "out = [t]",
    "flatten_unsqueeze": "t = torch.zeros(2, 3); t.flatten()[4:].fill_(7); t.unsqueeze(0)[0, 0].fill_(1); "
                         "t.squeeze()[1, 0].fill_(3); out = [t]",
    "narrow_select_diagonal": "t = torch.zeros(3, 3); t.narrow(1, 1, 2).add_(1); t.select(0, 2).mul_(10); "
                              "t.diagonal().fill_(-2); out = [t]",
    "unbind_split_chunk": "t = torch.arange(12.0).reshape(4, 3); a, b = t.split(2); b.zero_(); "
                          "t.chunk(3, dim=1)[0].fill_(-1); t.unbind(0)[1].add_(100); out = [t]",
    "nested": "t = torch.zeros(3, 4); v = t[1:]; w = v[:, 1:3]; w.fill_(6); v[0, 0] = 2; out = [t, v, w]",
    "setitem_on_view": "t = torch.zeros(2, 3); t.reshape(6)[2] = 5; t[1][0:2] = torch.tensor([7.0, 8.0]); out = [t]",
    "copy_into_view": "t = torch.zeros(2, 3); t[0].copy_(torch.tensor([1.0, 2.0, 3.0])); out = [t]",
    "data_row": "t = torch.zeros(2, 3); t.data[0].fill_(1); out = [t]",
    "advanced_index_copies": "t = torch.arange(6.0).reshape(2, 3); t[:, [0, 2]].zero_(); t[t > 2].fill_(0); out = [t]",
    "parameter_no_grad": "w = nn.Parameter(torch.zeros(2, 3))\nwith torch.no_grad():\n    w[0].fill_(1)\n"
                         "    w[:, 2].add_(5)\nout = [w.detach(), torch.tensor(w.requires_grad)]",
    "parameter_data": "m = nn.Linear(3, 2)\nm.weight.data.fill_(0.5)\nm.weight.data[:, 0].mul_(2)\n"
                      "m.bias.data[1:].zero_()\nm.bias.data[0] = 1\nout = [m.weight.detach(), m.bias.detach()]",
    "embedding_padding_row": "e = nn.Embedding(4, 2)\ne.weight.data.fill_(1.0)\ne.weight.data[0].zero_()\n"
                             "out = [e.weight.detach(), e(torch.tensor([0, 1, 0])).detach()]",
    "init_on_slice": "w = nn.Parameter(torch.ones(2, 4))\nnn.init.zeros_(w[:, :2])\nnn.init.constant_(w[1, 2:], 3.0)\n"
                     "out = [w.detach()]",
    "view_of_leaf_refused": "w = nn.Parameter(torch.zeros(2, 3)); w[0].fill_(2); out = [w.detach()]",
    "view_of_leaf_refused_add": "w = torch.zeros(3, requires_grad=True); w[1:].add_(1); out = [w.detach()]",
    "integer": "a = torch.arange(6).reshape(2, 3); a[0].zero_(); a[1, 1:].fill_(2.7); a.t()[2].add_(10); out = [a]",
    "bool": "b = torch.zeros(2, 2, dtype=torch.bool); b[1].fill_(True); out = [b]",
    "half": "h = torch.zeros(2, 3, dtype=torch.float16); h[0].add_(1.00048828125); h.t()[2].fill_(65504.0); "
            "out = [h]",
    "bfloat16": "h = torch.ones(2, 3, dtype=torch.bfloat16); h[1].mul_(1.00390625); h[0, 0].fill_(3.0); out = [h]",
    "values_of_the_view": "t = torch.zeros(2, 3); v = t[0]; v.add_(2); v.mul_(3); out = [t, v]",
    "numpy_bridge": "t = torch.ones(5); n = t.numpy(); t.add_(1); out = [t, torch.tensor(n)]",
    "from_numpy_shares": "n = np.ones(5, np.float32); t = torch.from_numpy(n); np.add(n, 1, out=n); a = t.clone()\n"
                         "t.mul_(3); t[0].fill_(-1)\nout = [a, t, torch.tensor(n)]",
    "as_tensor_shares": "n = np.arange(4, dtype=np.int64); t = torch.as_tensor(n); n[0] = 7; u = torch.ones(2)\n"
                        "w = torch.as_tensor(u); w.add_(1)\nout = [t, u, torch.tensor(w is u)]",
    "view_sees_its_tensor": "t = torch.ones(3); v = t[1:]; w = t.view(3, 1); t.zero_(); t[0] = 4; out = [v, w]",
    "detach_numpy_then_update": "x = torch.ones(3, requires_grad=True); n = x.detach().numpy()\n"
                                "with torch.no_grad():\n    x.mul_(5)\nout = [torch.tensor(n)]",
    "copies_and_selves": "x = torch.ones(3); n = x.numpy(); c = x.clone(); c.add_(1); f = x.float(); f.add_(1)\n"
                         "k = x.to(torch.float32, copy=True); k.add_(10); s = x.to(torch.float32); s.add_(100)\n"
                         "out = [x, c, k, torch.tensor(n)]",
    "setitem_node": "x = torch.ones(3, requires_grad=True); y = x * 2; y[0] = 5; y[1:] = x[:2] * 3\n"
                    "y.sum().backward()\nout = [y.detach(), x.grad, repr(y), y.grad_fn.name(), "
                    "repr(y.grad_fn).split(' ')[0]]",
}


def run(torch, nn, code):
    """{"values", "dtypes"} of the program's `out`, or {"error": [type name, message]}."""
    scope = {"torch": torch, "nn": nn, "np": np}
    try:
        exec(code, scope)
    except Exception as e:      # (recorded: the face must raise the same)
        return {"error": [type(e).__name__, str(e)]}
    out = scope["out"]
    return {"values": [t if isinstance(t, str) else t.float().tolist() if t.is_floating_point() else t.tolist()
                       for t in out],
            "dtypes": ["str" if isinstance(t, str) else str(t.dtype) for t in out]}


def main():
    import torch
    from torch import nn
    OUT.write_text(json.dumps({"torch": torch.__version__, "cases": {
        name: {"code": code, **run(torch, nn, code)} for name, code in CASES.items()}}, indent=1) + "\n")
    print(f"wrote {len(CASES)} cases to {OUT}")


if __name__ == "__main__":
    main()
