"""Record what PyTorch's lazy modules do, from construction to the first forward: tests/fixtures/pytorch/lazy.json.

    /path/to/torch-env/bin/python tools/record_torch_lazy.py      # PyTorch, not minifp

Each scenario is a snippet over `torch`, `nn` and `note`; note(lambda: ...) records what the expression gives (its
repr) or raises (the exception's type and message). The snippets are stored with what PyTorch gave, and
tests/torch/test_lazy.py runs the same snippets through minifp.torch. Values are not recorded: the modules draw
their initial weights from each library's own generator.
"""
import json
import os

OUT = os.path.join(os.path.dirname(__file__), os.pardir, "tests", "fixtures", "pytorch", "lazy.json")

SCENARIOS = {
    # Dive into Deep Learning's deferred initialisation: two LazyLinear layers, a dry run, then init by type
    "d2l_mlp": """
net = nn.Sequential(nn.LazyLinear(256), nn.ReLU(), nn.LazyLinear(10))
note(lambda: net)
note(lambda: net[0].weight)
note(lambda: net[0].has_uninitialized_params())
note(lambda: type(net[0].weight).__name__)
note(lambda: net[0].weight.requires_grad)
note(lambda: net[0].weight.shape)
note(lambda: net[0].weight.numel())
note(lambda: sum(p.numel() for p in net.parameters()))
note(lambda: list(net.state_dict()))
note(lambda: tuple(net(torch.rand(2, 20)).shape))
note(lambda: net)
note(lambda: [type(m).__name__ for m in net])
note(lambda: [tuple(p.shape) for p in net.parameters()])
note(lambda: type(net[0].weight).__name__)
note(lambda: type(net[0]) == nn.Linear)
note(lambda: net[0].has_uninitialized_params())
note(lambda: len(net[0]._forward_pre_hooks))
""",
    # d2l's LeNet with lazy layers and batch norm
    "d2l_lenet_bn": """
net = nn.Sequential(nn.LazyConv2d(6, kernel_size=5, padding=2), nn.LazyBatchNorm2d(), nn.Sigmoid(),
                    nn.AvgPool2d(kernel_size=2, stride=2), nn.LazyConv2d(16, kernel_size=5), nn.LazyBatchNorm2d(),
                    nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2), nn.Flatten(), nn.LazyLinear(120),
                    nn.LazyBatchNorm1d(), nn.Sigmoid(), nn.LazyLinear(10))
note(lambda: net)
note(lambda: [(n, type(b).__name__) for n, b in net.named_buffers()])
note(lambda: net[1].running_mean)
note(lambda: tuple(net(torch.rand(2, 1, 28, 28)).shape))
note(lambda: net)
note(lambda: [(n, tuple(p.shape)) for n, p in net.named_parameters()])
note(lambda: [(n, tuple(b.shape), type(b).__name__) for n, b in net.named_buffers()])
note(lambda: net[1].num_batches_tracked.item())
note(lambda: (net[1].running_var.dtype, net[1].running_mean.requires_grad, net[1].weight.requires_grad))
""",
    "conv_variants": """
c1 = nn.LazyConv1d(4, 3, stride=2, groups=2)
note(lambda: c1)
note(lambda: tuple(c1(torch.rand(2, 6, 9)).shape))
note(lambda: (c1, tuple(c1.weight.shape)))
c2 = nn.LazyConv2d(4, 3, bias=False)
note(lambda: tuple(c2(torch.rand(3, 8, 8)).shape))
note(lambda: (c2, tuple(c2.weight.shape), c2.bias))
c3 = nn.LazyConv3d(2, 2)
note(lambda: tuple(c3(torch.rand(1, 3, 4, 4, 4)).shape))
note(lambda: (c3, tuple(c3.weight.shape)))
t2 = nn.LazyConvTranspose2d(4, 3, stride=2)
note(lambda: t2)
note(lambda: tuple(t2(torch.rand(2, 5, 4, 4)).shape))
note(lambda: (t2, tuple(t2.weight.shape)))
bad = nn.LazyConv2d(4, 3)
note(lambda: bad(torch.rand(2, 2, 3, 8, 8)))
note(lambda: bad)
grouped = nn.LazyConv2d(4, 3, groups=2)
note(lambda: grouped(torch.rand(1, 3, 8, 8)))
""",
    "linear_and_norm_variants": """
m = nn.LazyLinear(3, bias=False)
note(lambda: (m, m.bias))
note(lambda: tuple(m(torch.rand(5)).shape))
note(lambda: (m, tuple(m.weight.shape)))
b = nn.LazyBatchNorm1d(affine=False, track_running_stats=False)
note(lambda: (b, b.weight, b.running_mean, b.has_uninitialized_params()))
note(lambda: tuple(b(torch.rand(4, 3)).shape))
note(lambda: b)
b2 = nn.LazyBatchNorm2d(momentum=0.3, eps=1e-3)
note(lambda: b2)
note(lambda: b2.num_batches_tracked)
note(lambda: tuple(b2(torch.rand(4, 3, 2, 2)).shape))
note(lambda: (b2, b2.running_mean.shape, b2.weight.tolist(), b2.bias.tolist()))
""",
    "norm_variants": """
b3 = nn.LazyBatchNorm3d()
note(lambda: b3)
note(lambda: tuple(b3(torch.rand(2, 3, 2, 2, 2)).shape))
note(lambda: (b3, b3.num_batches_tracked.item(), tuple(b3.running_var.shape)))
i2 = nn.LazyInstanceNorm2d(affine=True)
note(lambda: (i2, i2.weight, i2.running_mean))
note(lambda: tuple(i2(torch.rand(2, 4, 3, 3)).shape))
note(lambda: (i2, i2.weight.tolist(), i2.bias.tolist()))
i1 = nn.LazyInstanceNorm1d()
note(lambda: (i1, i1.has_uninitialized_params()))
note(lambda: tuple(i1(torch.rand(2, 4, 5)).shape))
note(lambda: i1)
i3 = nn.LazyInstanceNorm3d(track_running_stats=True)
note(lambda: tuple(i3(torch.rand(1, 2, 2, 2, 2)).shape))
note(lambda: (i3, i3.running_mean.shape))
""",
    "load_state_dict": """
m = nn.LazyLinear(5)
note(lambda: m.load_state_dict(nn.Linear(3, 5).state_dict()))
note(lambda: (m, tuple(m.weight.shape), type(m.weight).__name__, m.has_uninitialized_params()))
note(lambda: tuple(m(torch.rand(1, 3)).shape))
note(lambda: m)
""",
    "optimizer_before_dry_run": """
net = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x, y = torch.ones(8, 3), torch.zeros(8, 1)
loss = ((net(x) - y) ** 2).mean()
loss.backward()
note(lambda: [tuple(p.grad.shape) for p in net.parameters()])
opt.step()
note(lambda: [p is q for p, q in zip(net.parameters(), opt.param_groups[0]["params"])])
note(lambda: tuple(net[0].weight.shape))
""",
    "uninitialized_objects": """
p = nn.parameter.UninitializedParameter()
note(lambda: (p, type(p).__name__, isinstance(p, nn.Parameter), p.requires_grad, p.dtype, p.device))
note(lambda: p.materialize((2, 3)))
note(lambda: (type(p).__name__, tuple(p.shape), p.requires_grad))
q = nn.parameter.UninitializedBuffer()
note(lambda: (q, type(q).__name__, isinstance(q, torch.Tensor), q.requires_grad))
q.materialize(4)
note(lambda: (type(q).__name__, tuple(q.shape)))
note(lambda: nn.UninitializedParameter is nn.parameter.UninitializedParameter)
note(lambda: issubclass(nn.LazyLinear, nn.modules.lazy.LazyModuleMixin))
""",
}


def note_into(out):
    """note(fn): append fn()'s repr, or the exception it raises, to out."""
    def note(fn):
        try:
            out.append({"repr": repr(fn())})
        except Exception as e:  # noqa: BLE001 - recording whatever PyTorch raises is the point
            out.append({"error": type(e).__name__, "message": str(e)})
    return note


def run(torch, source):
    """The notes a scenario's snippet makes under `torch` (PyTorch, or minifp.torch)."""
    out = []
    torch.manual_seed(0)
    exec(source, {"torch": torch, "nn": torch.nn, "note": note_into(out)})     # noqa: S102 - the table's own source
    return out


def main():
    import torch
    cases = {name: {"source": source, "notes": run(torch, source)} for name, source in SCENARIOS.items()}
    with open(OUT, "w") as f:
        json.dump({"torch_version": torch.__version__, "cases": cases}, f, indent=1)
        f.write("\n")
    print(f"{OUT}: {len(cases)} scenarios, {sum(len(c['notes']) for c in cases.values())} notes")


if __name__ == "__main__":
    main()
