"""Record the autograd nodes PyTorch makes for common expressions (what tutorials print: y.grad_fn and
y.grad_fn.next_functions), into tests/fixtures/pytorch/grad_fns.json: {expression: [grad_fn's name(), [each next
function's name(), or None]] (None: a leaf). tests/torch/test_grad_fns_fixtures.py evaluates the same expressions with minifp.torch.

Run by hand with a real PyTorch (not the project's environment): python tools/record_torch_grad_fns.py
"""
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pytorch" / "grad_fns.json"

# Every expression sees torch, nn, F, x = ones(2, 3) and w = ones(3, requires_grad=True) (leaves that require
# gradients), c = ones(2, 3) (a constant), W = ones(4, 3) and b = ones(4) (a linear layer's, requiring gradients).
CASES = [
    "x * 2", "x * w", "x + w", "x - c", "x / 2", "-x", "x ** 2", "x.pow(3)", "x.exp()", "x.log()", "x.sqrt()",
    "x.abs()", "x.sigmoid()", "x.tanh()", "x.relu()", "F.relu(x)", "torch.sigmoid(x)", "x.sum()", "x.mean()",
    "x.sum(1)", "x.mean(dim=0)", "x.max()", "x.view(-1)", "x.reshape(3, 2)", "x.t()", "x.transpose(0, 1)",
    "x.permute(1, 0)", "x[0]", "x[:, 1:]", "x.unsqueeze(0)", "x.flatten()", "torch.cat([x, x])", "torch.stack([x, x])",
    "x @ W.t()", "torch.matmul(x, W.t())", "F.linear(x, W, b)", "F.linear(x, W)", "F.softmax(x, dim=1)",
    "F.log_softmax(x, dim=1)", "F.cross_entropy(x, torch.tensor([0, 2]))", "F.nll_loss(x, torch.tensor([0, 2]))",
    "F.mse_loss(x, c)", "F.gelu(x)", "x.clamp(0, 1)", "torch.where(c > 0, x, c)", "x.float()", "x.half()",
    "F.binary_cross_entropy_with_logits(x, c)", "F.layer_norm(x, (3,))", "F.dropout(x, 0.0)",
    "F.embedding(torch.tensor([0, 1]), W)", "(x * 2).sum()", "(x * w + 1).mean()",
]


def grad_fns(torch):
    """{expression: [name, [next names]]} under the given torch module."""
    out = {}
    for case in CASES:
        env = {"torch": torch, "nn": torch.nn, "F": torch.nn.functional, "x": torch.ones(2, 3, requires_grad=True),
               "w": torch.ones(3, requires_grad=True), "c": torch.ones(2, 3),
               "W": torch.ones(4, 3, requires_grad=True), "b": torch.ones(4, requires_grad=True)}
        fn = eval(case, env).grad_fn
        out[case] = None if fn is None else [fn.name(), [None if f is None else f.name() for f, _ in fn.next_functions]]
    return out


def main():
    import torch
    got = grad_fns(torch)
    OUT.write_text(json.dumps({"torch": torch.__version__, "grad_fns": got}, indent=1) + "\n")
    print(f"{OUT}: {len(got)} expressions", file=sys.stderr)


if __name__ == "__main__":
    main()
