"""Record how PyTorch prints tensors (repr) for the cases scripts print most: whole floats, decimals, scientific
notation, integers (and the dtype their results keep), bools, half dtypes, summaries of long tensors, empty tensors, grad_fn and requires_grad, into
tests/fixtures/pytorch/reprs.json: {expression: repr}. tests/torch/test_reprs_fixtures.py prints the same
expressions with minifp.torch.

Run by hand with a real PyTorch (not the project's environment): python tools/record_torch_reprs.py
"""
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pytorch" / "reprs.json"

# Every expression sees torch; values are fixed (no random draws: minifp's generator is not PyTorch's).
CASES = [
    "torch.zeros(2, 3)", "torch.tensor([1.5, -2.25, 3.0])", "torch.tensor([1e-5, 1.0, 1e5])", "torch.tensor(3.0)",
    "torch.tensor([[1., 2.], [3., 4.]])", "torch.tensor([float('inf'), float('nan'), -1.0])",
    "torch.arange(6).reshape(2, 3)", "torch.tensor([1, -20, 300])", "torch.tensor(7)",
    "torch.tensor([1, 2], dtype=torch.int32)", "torch.tensor([1, 2], dtype=torch.uint8)",
    "torch.tensor([True, False])", "torch.tensor([[True], [False]])", "torch.tensor([True, True])",
    "torch.tensor(True)", "torch.tensor([0.1, 0.2], dtype=torch.float16)",
    "torch.tensor([0.1, 0.2], dtype=torch.bfloat16)", "torch.zeros(3000)", "torch.arange(3000)",
    "torch.zeros(3000, 2)", "torch.arange(3000.).reshape(3, 1000)", "torch.ones(2, 3000, dtype=torch.float16)",
    "torch.zeros(1001, dtype=torch.bool)", "torch.zeros(0)", "torch.zeros(0, 3)",
    "torch.zeros(2, 0, dtype=torch.int64)", "torch.zeros(0, dtype=torch.float16)", "torch.zeros(0, dtype=torch.bool)",
    "torch.zeros(0, requires_grad=True)", "torch.ones(2, requires_grad=True)", "torch.ones(2, requires_grad=True) * 2",
    "torch.ones(2, requires_grad=True).sum()", "torch.tensor([1.0, 2.0]) > 1",
    # integer tensors keep their dtype through reductions that select, abs, sign, clamp and where
    "torch.tensor([3, -5, 1]).max()", "torch.tensor([3, -5, 1]).min()", "torch.max(torch.tensor([3, -5, 1]))",
    "torch.tensor([[1, 4], [3, 2]]).amax(1)", "torch.tensor([[1, 4], [3, 2]]).amin()",
    "torch.tensor([1, 9], dtype=torch.uint8).max()", "torch.tensor([3, -5]).abs()", "torch.abs(torch.tensor([-2]))",
    "torch.tensor([3, -5, 0]).sign()", "torch.tensor([3, -5, 1]).clamp(0, 2)", "torch.tensor([3, -5]).clamp(min=0)",
    "torch.tensor([3, -5]).clamp(0, 2.5)", "torch.clamp(torch.tensor([3, -5]), max=1)",
    "torch.where(torch.tensor([True, False]), torch.tensor([3, 4]), -100)",
    "torch.where(torch.tensor([True, False]), 1, 0)", "torch.where(torch.tensor([True, False]), torch.tensor([3, 4]), 0.5)",
    "torch.tensor([3, -5, 1]).nansum()", "torch.tensor([1.5, -2.0]).abs()", "torch.tensor([1.5, -2.0]).sign()",
    # widths: zeros, infinities and NaN do not widen the columns
    "torch.tensor([-0.0, 0.0])", "torch.tensor([-0.0, 0.0, 12.0])", "torch.tensor([0.0, float('inf'), -1.5])",
    "torch.tensor([float('nan'), 0.0, 1.0])", "torch.tensor([-1e-5, 0.0, 1.0])", "torch.zeros(2, 2) * -1",
    # parameter containers
    "torch.nn.ParameterList([torch.nn.Parameter(torch.ones(2)), torch.zeros(3, 2)])",
    "torch.nn.ParameterDict({'a': torch.nn.Parameter(torch.ones(2, 3)), 'b': torch.zeros(1)})",
    # modules
    "torch.nn.BatchNorm2d(4)", "torch.nn.BatchNorm1d(3, affine=False)", "torch.nn.LayerNorm(64)",
    "torch.nn.LayerNorm((8,), elementwise_affine=False)", "torch.nn.GroupNorm(2, 4)",
    "torch.nn.Conv2d(1, 4, 3, padding='same', bias=False)",
    "torch.nn.ModuleList([torch.nn.Linear(1, 1), torch.nn.Linear(1, 1), torch.nn.ReLU(), torch.nn.Linear(1, 1)])",
    "torch.nn.ModuleList([])", "torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)",
    # torch.return_types
    "torch.tensor([3., 1.]).max(0)", "torch.tensor([[3., 1.]]).min(1)", "torch.tensor([[3., 1.]]).sort(1)",
    "torch.tensor([3., 1.]).topk(1)", "torch.aminmax(torch.tensor([3., 1.]))", "torch.tensor([3., 1., 2.]).median(0)",
    "type(torch.tensor([3., 1.]).max(0)).__name__",
]


# (torch.set_printoptions arguments, expression): printed under those options, then the default profile again
WITH_OPTIONS = [
    ({"precision": 2}, "torch.tensor([1.23456, 2.5])"), ({"precision": 2}, "torch.tensor([1e-5, 1.])"),
    ({"precision": 6}, "torch.tensor([1 / 3, 2.0])"), ({"sci_mode": False}, "torch.tensor([1e-5, 1.])"),
    ({"sci_mode": False}, "torch.tensor([1e10, 1.])"), ({"sci_mode": True}, "torch.tensor([1.5, 1.])"),
    ({"sci_mode": True}, "torch.tensor([2., 1.])"), ({"precision": 3, "linewidth": 30}, "torch.arange(12.) / 7"),
    ({"profile": "short"}, "torch.arange(2000.) / 3"), ({"threshold": 5, "edgeitems": 1}, "torch.arange(10.)"),
    ({"profile": "full"}, "torch.arange(1200).reshape(2, 600)[:, :4]"), ({"profile": "full"}, "torch.arange(1002)"),
]


def reprs(torch):
    """{expression: repr(eval(expression))} under the given torch module, and {options | expression: repr} for
    WITH_OPTIONS."""
    out = {case: repr(eval(case, {"torch": torch})) for case in CASES}
    for options, case in WITH_OPTIONS:
        torch.set_printoptions(**options)
        try:
            out[f"{options} | {case}"] = repr(eval(case, {"torch": torch}))
        finally:
            torch.set_printoptions(profile="default", sci_mode=None)
    return out


def main():
    import torch
    got = reprs(torch)
    OUT.write_text(json.dumps({"torch": torch.__version__, "reprs": got}, indent=1) + "\n")
    print(f"{OUT}: {len(got)} reprs", file=sys.stderr)


if __name__ == "__main__":
    main()
