"""Record real PyTorch's in-place changes to views under autograd into tests/fixtures/pytorch/view_inplace.json;
tests/torch/test_view_inplace.py runs the same programs with minifp.torch and compares.

    /work/torchenv/bin/python tools/record_torch_view_inplace.py

Each case is a small program over `torch` (and `F`, torch.nn.functional) that changes a view in place while autograd
watches (y = x[:, :2]; y.mul_(2) with x a result that requires grad, or x[0].add_(w) with w requiring grad), or
changes the base of a live view, and leaves what it found in the dict `out`: tensors (recorded by dtype and values:
results and gradients), `node(t)` (t.grad_fn's name and the names of its next_functions, one level down), other
values as they are; or the exception's type and message.
"""
import json
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pytorch" / "view_inplace.json"

# x0: a leaf that requires grad; x = x0 * 1: a result that requires grad (its views can be written in place)
BASE = "x0 = torch.arange(6.0).reshape(2, 3).requires_grad_(); x = x0 * 1\n"

CASES = {
    # a view of a result that requires grad, written by each common in-place op
    "slice_mul": BASE + "y = x[:, :2]; y.mul_(2)\n(x * x).sum().backward()\nout = dict(x=x, y=y, g=x0.grad, "
                        "nx=node(x), ny=node(y))",
    "t_add": BASE + "y = x.t(); y.add_(1)\n(x * y.t()).sum().backward()\nout = dict(x=x, g=x0.grad, nx=node(x), "
                    "ny=node(y))",
    "view_sub": BASE + "y = x.view(6); y[1:].sub_(torch.tensor(0.5))\n(x * x).sum().backward()\n"
                       "out = dict(x=x, y=y, g=x0.grad, nx=node(x), ny=node(y))",
    "reshape_div": BASE + "y = x.reshape(3, 2); y.div_(4)\n(x * 3).sum().backward()\nout = dict(x=x, g=x0.grad, "
                          "nx=node(x), ny=node(y))",
    "narrow_clamp": BASE + "y = x.narrow(1, 1, 2); y.clamp_(1.5, 3.5)\n(x * x).sum().backward()\n"
                           "out = dict(x=x, g=x0.grad, nx=node(x), ny=node(y))",
    "select_zero": BASE + "y = x.select(0, 1); y.zero_()\n(x * x).sum().backward()\nout = dict(x=x, g=x0.grad, "
                          "nx=node(x), ny=node(y))",
    "unsqueeze_fill": BASE + "y = x[1].unsqueeze(0); y.fill_(-2)\n(x * x).sum().backward()\n"
                             "out = dict(x=x, g=x0.grad, nx=node(x), ny=node(y))",
    "squeeze_relu": BASE + "z = x0 * 1 - 2; y = z[:1].squeeze(0); y.relu_()\n(z * z).sum().backward()\n"
                           "out = dict(z=z, g=x0.grad, nz=node(z), ny=node(y))",
    "diagonal_copy": BASE + "y = x.diagonal(); y.copy_(torch.tensor([5.0, 6.0]))\n(x * x).sum().backward()\n"
                            "out = dict(x=x, g=x0.grad, nx=node(x), ny=node(y))",
    "transpose_masked_fill": BASE + "y = x.transpose(0, 1); y.masked_fill_(y > 2, 0.5)\n(x * x).sum().backward()\n"
                                    "out = dict(x=x, g=x0.grad, nx=node(x), ny=node(y))",
    "permute_iadd": BASE + "y = x.permute(1, 0); y += torch.ones(3, 2)\n(x * x).sum().backward()\n"
                           "out = dict(x=x, y=y, g=x0.grad, nx=node(x), ny=node(y))",
    "flatten_mul": BASE + "y = x.flatten(); y.mul_(3)\n(x * 1).sum().backward()\nout = dict(x=x, g=x0.grad, "
                          "nx=node(x), ny=node(y))",
    "T_in_place_relu": BASE + "y = (x - 2).T; F.relu(y, inplace=True)\n(y * y).sum().backward()\n"
                              "out = dict(y=y, g=x0.grad, ny=node(y))",
    "setitem_on_view": BASE + "y = x[0]; y[1] = 4; y[2] = x0[1, 2] * 2\n(x * x).sum().backward()\n"
                              "out = dict(x=x, y=y, g=x0.grad, nx=node(x), ny=node(y))",
    "setitem_number_on_view": BASE + "x[0][1] = 4\n(x * x).sum().backward()\nout = dict(x=x, g=x0.grad, nx=node(x))",
    "copy_tensor_that_requires_grad": BASE + "x[0].copy_(x0[1] * 5)\n(x * x).sum().backward()\n"
                                             "out = dict(x=x, g=x0.grad, nx=node(x))",
    # the written value requires grad, the base does not
    "value_requires_grad_add": "x = torch.zeros(2, 3); w = torch.ones(2, requires_grad=True)\ny = x[0, 1:]; "
                               "y.add_(w)\n(x * torch.arange(6.0).reshape(2, 3)).sum().backward()\n"
                               "out = dict(x=x, y=y, g=w.grad, nx=node(x), ny=node(y), rx=x.requires_grad)",
    "value_requires_grad_copy_t": "x = torch.zeros(2, 3); w = torch.ones(2, requires_grad=True)\ny = x.t(); "
                                  "y[1].copy_(w * 3)\n(x * x).sum().backward()\nout = dict(x=x, g=w.grad, "
                                  "nx=node(x), ny=node(y))",
    "value_requires_grad_iadd_view": "x = torch.zeros(2, 3); w = torch.arange(3.0, requires_grad=True)\n"
                                     "v = x.view(6); v[1:4] += w\n(x * x).sum().backward()\n"
                                     "out = dict(x=x, v=v, g=w.grad, nx=node(x), nv=node(v))",
    "value_requires_grad_broadcast_copy": "x = torch.zeros(3, 4); w = torch.ones(1, requires_grad=True)\n"
                                          "x[1:, 2].copy_(w * 2)\n(x * 5).sum().backward()\nout = dict(x=x, "
                                          "g=w.grad, nx=node(x))",
    # chains of views and several writes
    "chained_views": BASE + "v = x[:, 1:]; w = v[1]; w.mul_(5)\n(x * x).sum().backward()\n"
                            "out = dict(x=x, v=v, w=w, g=x0.grad, nx=node(x), nv=node(v), nw=node(w))",
    "writes_in_a_row": BASE + "a = x[0]; b = x[1]; a.mul_(2); b.add_(a); a.sub_(1); b.mul_(3)\n"
                              "(x * torch.tensor([[1.0, 2, 3], [4, 5, 6]])).sum().backward()\n"
                              "out = dict(x=x, a=a, b=b, g=x0.grad, nx=node(x), na=node(a), nb=node(b))",
    "write_then_use_view": BASE + "y = x[:, 0]; z = x[0]; z.mul_(10)\n(y * y).sum().backward()\n"
                                  "out = dict(y=y, z=z, g=x0.grad, ny=node(y))",
    "base_written_view_sees": BASE + "b = x[1]; c = b[1:]; x.mul_(3)\n(c * c).sum().backward()\n"
                                     "out = dict(b=b, c=c, g=x0.grad, nb=node(b), nc=node(c))",
    "base_written_by_setitem": BASE + "r = x[0]; x[0, 1] = 7\n(r * r).sum().backward()\nout = dict(r=r, g=x0.grad, "
                                      "nr=node(r))",
    "several_bases": "a0 = torch.ones(4, requires_grad=True); b0 = torch.full((2,), 3.0, requires_grad=True)\n"
                     "a = a0 * 2; a[1:3].mul_(b0)\na[::3].add_(b0)\n(a * a).sum().backward()\n"
                     "out = dict(a=a, ga=a0.grad, gb=b0.grad, na=node(a))",
    "row_from_row": BASE + "x[1] = x[0] * 2\n(x * x).sum().backward()\nout = dict(x=x, g=x0.grad, nx=node(x))",
    "sibling_views": BASE + "x[1] = x[0]; x[0] = x[1] * 3\n(x * x).sum().backward()\nout = dict(x=x, g=x0.grad, "
                            "nx=node(x))",
    "loop_into_buffer": "w = torch.tensor([0.5, -1.0], requires_grad=True); buf = torch.zeros(4, 2); buf[0] = w\n"
                        "for i in range(1, 4):\n    buf[i] = buf[i - 1] * 2 + 1\n"
                        "(buf * torch.arange(8.0).reshape(4, 2)).sum().backward()\nout = dict(buf=buf, g=w.grad, "
                        "nb=node(buf))",
    "view_used_then_other_rows_written": BASE + "y = x[0]; h = y * 2; x[1].mul_(3)\n"
                                                "(h.sum() + (x * x).sum()).backward()\nout = dict(x=x, h=h, "
                                                "g=x0.grad))",
    # nodes made before an in-place change read the tensor as it was (PyTorch's edges point at that version)
    "view_read_then_base_written": BASE + "h = x[0] * 2; x.mul_(3)\n(h.sum() + x.sum()).backward()\n"
                                          "out = dict(h=h, x=x, g=x0.grad)",
    "base_read_then_written": BASE + "h = x * 2; x.mul_(3)\n(h.sum() + x.sum()).backward()\nout = dict(g=x0.grad)",
    "in_place_op_reads_its_own_tensor": BASE + "x.add_(x * 2)\nx.sum().backward()\nout = dict(x=x, g=x0.grad)",
    "float16": "x0 = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float16, requires_grad=True); x = x0 * 1\n"
               "y = x[0, 1:]; y.mul_(1.0009765625); y.add_(0.0001)\n(x * x).sum().backward()\n"
               "out = dict(x=x, y=y, g=x0.grad, nx=node(x))",
    "bfloat16_value": "x = torch.zeros(2, 2, dtype=torch.bfloat16); w = torch.tensor([1.00390625, 3.0], "
                      "requires_grad=True)\nx[1].copy_(w)\n(x * 3).sum().backward()\nout = dict(x=x, g=w.grad, "
                      "nx=node(x))",
    "old_pinned_case": "x = torch.ones(3, requires_grad=True); y = x * 2; v = y[1:]; v.mul_(3)\n"
                       "(y.sum() + v.sum()).backward()\nout = dict(y=y, v=v, g=x.grad, ny=node(y), nv=node(v))",
    "second_order": BASE + "x[0].mul_(x0[1])\ng, = torch.autograd.grad((x * x).sum(), x0, create_graph=True)\n"
                           "g.sum().backward()\nout = dict(x=x, g=g, gg=x0.grad)",
    # fill_, zero_ and copy_ of a result that requires grad (no view): nodes of their own
    "fill_zero_copy_nodes": "x0 = torch.ones(3, requires_grad=True); w = torch.ones(1, requires_grad=True)\n"
                            "a = x0 * 1; a.fill_(3); b = x0 * 2; b.zero_(); c = x0 * 3; c.copy_(w * 4)\n"
                            "(a + b + c).sum().backward()\nout = dict(a=a, b=b, c=c, g=x0.grad, gw=w.grad, "
                            "na=node(a), nb=node(b), nc=node(c))",
    "copy_into_plain_tensor": "x = torch.zeros(3); w = torch.ones(1, requires_grad=True); x.copy_(w)\n"
                              "(x * 2).sum().backward()\nout = dict(x=x, g=w.grad, nx=node(x))",
    # under no_grad, or detached: values change, the graph stays
    "no_grad_write_keeps_node": BASE + "b = x[1]\nwith torch.no_grad():\n    b.mul_(2)\n(x * x).sum().backward()\n"
                                       "out = dict(x=x, g=x0.grad, nx=node(x))",
    "detached_write": BASE + "d = x.detach(); d[0].mul_(2)\n(x * x).sum().backward()\nout = dict(x=x, g=x0.grad, "
                             "nx=node(x))",
    # refused, as PyTorch refuses them
    "view_of_leaf_refused": "w = torch.ones(2, 3, requires_grad=True); w[0].mul_(2)\nout = {}",
    "split_output_refused": BASE + "a, b = x.split(1); b.mul_(2)\nout = {}",
    "split_sizes_output_refused": BASE + "a, b = x.split([1, 1]); b.mul_(2)\nout = {}",
    "chunk_output_refused": BASE + "a, b = x.chunk(2, 1); b.zero_()\nout = {}",
    "unbind_output_refused": BASE + "a, b = x.unbind(); b.add_(1)\nout = {}",
    "view_of_split_output_refused": BASE + "a, b = x.split(1); b[0].mul_(2)\nout = {}",
    "split_of_plain_tensor_refused": "x = torch.zeros(4, 3); w = torch.ones(3, requires_grad=True)\n"
                                     "a, b = x.split(2); b.add_(w)\nout = {}",
    "split_under_no_grad_refused": BASE + "with torch.no_grad():\n    a, b = x.split(1)\nb.mul_(2)\nout = {}",
    "view_made_under_no_grad_refused": BASE + "with torch.no_grad():\n    b = x[1]\nb.mul_(2)\nout = {}",
    "view_made_under_no_grad_value_refused": "x = torch.zeros(4, 3); w = torch.ones(3, requires_grad=True)\n"
                                             "with torch.no_grad():\n    b = x[1]\nb.add_(w)\nout = {}",
    "tensor_split_output_allowed": BASE + "a, b = x.tensor_split(2, 1); b.mul_(2)\n(x * x).sum().backward()\n"
                                          "out = dict(x=x, g=x0.grad, nx=node(x))",
    "split_under_no_grad_written_there": BASE + "with torch.no_grad():\n    a, b = x.split(1)\n    b.mul_(2)\n"
                                                "(x * x).sum().backward()\nout = dict(x=x, g=x0.grad, nx=node(x))",
}


def node(t):
    """[t.grad_fn's name, [the names of its next_functions (None where PyTorch has none)]], or None for a leaf."""
    fn = t.grad_fn
    return None if fn is None else [fn.name(), [None if n is None else n.name() for n, _ in fn.next_functions]]


def _shown(v):
    if hasattr(v, "grad_fn"):           # a tensor: its dtype and values
        return {"dtype": str(v.dtype), "values": v.detach().float().tolist()}
    return v


def run(torch, F, code):
    """{"out": {name: recorded value}} of the program, or {"error": [type name, message]}."""
    scope = {"torch": torch, "F": F, "node": node}
    try:
        exec(code, scope)
    except Exception as e:      # (recorded: the face must raise the same)
        return {"error": [type(e).__name__, str(e)]}
    return {"out": {k: _shown(v) for k, v in scope["out"].items()}}


def main():
    import torch
    import torch.nn.functional as F
    OUT.write_text(json.dumps({"torch": torch.__version__, "cases": {
        name: {"code": code, **run(torch, F, code)} for name, code in CASES.items()}}, indent=1) + "\n")
    print(f"wrote {len(CASES)} cases to {OUT}")


if __name__ == "__main__":
    main()
