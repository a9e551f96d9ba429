"""Record which tensors PyTorch's backward keeps (its saved tensors) by changing each one in place after the forward:
tests/fixtures/pytorch/inplace.json.

    /path/to/torch-env/bin/python tools/record_torch_inplace.py      # PyTorch, not minifp

For every op of OPS, the output and then each input is changed in place (`add_(0.25)`, under no_grad and, for a
result of the graph, under autograd), with every combination of the inputs requiring a gradient, and the backward
either runs (its gradients recorded) or raises PyTorch's error (its message recorded). tests/torch/test_inplace.py
runs the same cases through minifp.torch.
"""
import json
import os
import sys

import numpy as np

OUT = os.path.join(os.path.dirname(__file__), os.pardir, "tests", "fixtures", "pytorch", "inplace.json")

# name: (input shapes, the op on the inputs)
OPS = {
    "relu": ([(2, 3)], lambda t, x: t.relu(x)),
    "sigmoid": ([(2, 3)], lambda t, x: t.sigmoid(x)),
    "tanh": ([(2, 3)], lambda t, x: t.tanh(x)),
    "exp": ([(2, 3)], lambda t, x: t.exp(x)),
    "sqrt": ([(2, 3)], lambda t, x: t.sqrt(x)),
    "rsqrt": ([(2, 3)], lambda t, x: t.rsqrt(x)),
    "reciprocal": ([(2, 3)], lambda t, x: t.reciprocal(x)),
    "softmax": ([(2, 3)], lambda t, x: t.softmax(x, -1)),
    "log_softmax": ([(2, 3)], lambda t, x: t.log_softmax(x, -1)),
    "log": ([(2, 3)], lambda t, x: t.log(x)),
    "sin": ([(2, 3)], lambda t, x: t.sin(x)),
    "cos": ([(2, 3)], lambda t, x: t.cos(x)),
    "abs": ([(2, 3)], lambda t, x: t.abs(x)),
    "square": ([(2, 3)], lambda t, x: t.square(x)),
    "pow_number": ([(2, 3)], lambda t, x: x ** 2),
    "gelu": ([(2, 3)], lambda t, x: t.nn.functional.gelu(x)),
    "silu": ([(2, 3)], lambda t, x: t.nn.functional.silu(x)),
    "leaky_relu": ([(2, 3)], lambda t, x: t.nn.functional.leaky_relu(x)),
    "clamp": ([(2, 3)], lambda t, x: x.clamp(0.7, 1.2)),
    "neg": ([(2, 3)], lambda t, x: -x),
    "sum": ([(2, 3)], lambda t, x: x.sum()),
    "mean": ([(2, 3)], lambda t, x: x.mean()),
    "add": ([(2, 3), (2, 3)], lambda t, x, y: x + y),
    "sub": ([(2, 3), (2, 3)], lambda t, x, y: x - y),
    "mul": ([(2, 3), (2, 3)], lambda t, x, y: x * y),
    "div": ([(2, 3), (2, 3)], lambda t, x, y: x / y),
    "maximum": ([(2, 3), (2, 3)], lambda t, x, y: t.maximum(x, y)),
    "matmul": ([(2, 3), (3, 4)], lambda t, x, y: x @ y),
    "linear": ([(2, 3), (4, 3), (4,)], lambda t, x, w, b: t.nn.functional.linear(x, w, b)),
    "conv2d": ([(1, 2, 5, 5), (3, 2, 3, 3), (3,)], lambda t, x, w, b: t.nn.functional.conv2d(x, w, b)),
    "batch_norm": ([(4, 3), (3,), (3,)], lambda t, x, w, b: t.nn.functional.batch_norm(x, None, None, w, b, True)),
    "layer_norm": ([(2, 3), (3,), (3,)], lambda t, x, w, b: t.nn.functional.layer_norm(x, (3,), w, b)),
    "mse_loss": ([(2, 3), (2, 3)], lambda t, x, y: t.nn.functional.mse_loss(x, y)),
    "nll_loss": ([(2, 3)], lambda t, x: t.nn.functional.nll_loss(x, t.tensor([0, 2]))),
    "cross_entropy": ([(2, 3)], lambda t, x: t.nn.functional.cross_entropy(x, t.tensor([0, 2]))),
    "softplus": ([(2, 3)], lambda t, x: t.nn.functional.softplus(x)),
    "elu": ([(2, 3)], lambda t, x: t.nn.functional.elu(x)),
    "hardtanh": ([(2, 3)], lambda t, x: t.nn.functional.hardtanh(x)),
    "gelu_tanh": ([(2, 3)], lambda t, x: t.nn.functional.gelu(x, approximate="tanh")),
    "log1p": ([(2, 3)], lambda t, x: t.log1p(x)),
    "logsumexp": ([(2, 3)], lambda t, x: t.logsumexp(x, 1)),
    "var": ([(2, 3)], lambda t, x: x.var()),
    "bmm": ([(2, 2, 3), (2, 3, 4)], lambda t, x, y: t.bmm(x, y)),
    "max_pool2d": ([(1, 2, 4, 4)], lambda t, x: t.nn.functional.max_pool2d(x, 2)),
    "avg_pool2d": ([(1, 2, 4, 4)], lambda t, x: t.nn.functional.avg_pool2d(x, 2)),
    "adaptive_avg_pool2d": ([(1, 2, 4, 4)], lambda t, x: t.nn.functional.adaptive_avg_pool2d(x, 1)),
    "embedding": ([(5, 3)], lambda t, w: t.nn.functional.embedding(t.tensor([[0, 2], [4, 1]]), w)),
    "group_norm": ([(2, 4, 3), (4,), (4,)], lambda t, x, w, b: t.nn.functional.group_norm(x, 2, w, b)),
    "bce_with_logits": ([(2, 3), (2, 3)],
                        lambda t, x, y: t.nn.functional.binary_cross_entropy_with_logits(x, y - 0.5)),
}


def _combinations(n):
    """Which inputs require a gradient: all, then each alone, then all but each (every case with at least one)."""
    seen = []
    for g in [(True,) * n] + [tuple(i == k for i in range(n)) for k in range(n)] + \
            [tuple(i != k for i in range(n)) for k in range(n)]:
        if any(g) and g not in seen:
            seen.append(g)
    return seen


def cases():
    """(case name, op name, target: "out" or an input's position, the inputs requiring a gradient, mode)."""
    out = []
    for name, (shapes, _) in OPS.items():
        n = len(shapes)
        for grads in _combinations(n):
            tag = "".join("1" if g else "0" for g in grads)
            for target in ["out"] + list(range(n)):
                for mode in ("no_grad", "grad"):
                    if mode == "grad" and (target != "out" and not grads[target]):
                        continue        # a tensor outside the graph: changed under no_grad only
                    out.append((f"{name}/{target}/{tag}/{mode}", name, target, grads, mode))
    return out


def run(torch, name, target, grads, mode):
    """The case through `torch`: ("ok", gradients of the leaves, versions) or ("error", message)."""
    shapes, op = OPS[name]
    rng = np.random.default_rng(len(name))
    leaves = [torch.tensor(rng.random(s, dtype=np.float32) + np.float32(0.5), requires_grad=g)
              for s, g in zip(shapes, grads)]
    xs = [x * 1 if x.requires_grad else x.clone() for x in leaves]   # results of the graph, or plain tensors
    y = op(torch, *xs)
    changed = y if target == "out" else xs[target]
    if mode == "no_grad":
        with torch.no_grad():
            changed.add_(0.25)
    else:
        changed.add_(0.25)
    try:
        (y if y.dim() == 0 else y.sum()).backward()
    except RuntimeError as e:
        return ["error", str(e)]
    return ["ok", [None if x.grad is None else np.round(x.grad.numpy().astype(np.float64), 7).tolist() for x in leaves],
            [x._version for x in xs] + [y._version]]


# Training code as people write it, with in-place ops PyTorch allows and the mistakes it refuses
def _relu_in_place(t):
    t.manual_seed(0)
    first, second = t.nn.Linear(4, 8), t.nn.Linear(8, 2)
    h = first(t.randn(3, 4))
    h.relu_()
    second(h).sum().backward()


def _residual(t):
    t.manual_seed(0)
    conv, bn = t.nn.Conv2d(2, 2, 3, padding=1), t.nn.BatchNorm2d(2)
    x = t.randn(1, 2, 4, 4, requires_grad=True)
    out = bn(conv(x))
    out += x
    t.nn.functional.relu(out).sum().backward()


def _in_place_relu_module(t):
    t.manual_seed(0)
    nn = t.nn
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(inplace=True), nn.Conv2d(4, 2, 3))
    model(t.randn(2, 3, 8, 8)).sum().backward()


def _step_between_two_backwards(t):
    t.manual_seed(0)
    nn = t.nn
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = t.optim.SGD(model.parameters(), lr=0.1)
    loss = model(t.randn(3, 4)).sum()
    loss.backward(retain_graph=True)
    opt.step()
    loss.backward()


def _gan_discriminator_stepped_first(t):
    t.manual_seed(0)
    nn = t.nn
    generator, discriminator = nn.Linear(2, 4), nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
    opt_d = t.optim.SGD(discriminator.parameters(), lr=0.1)
    fake = generator(t.randn(5, 2))
    d_loss, g_loss = discriminator(fake.detach()).mean(), -discriminator(fake).mean()
    d_loss.backward()
    opt_d.step()
    g_loss.backward()


def _dropout_in_place(t):
    t.manual_seed(0)
    h = t.nn.Linear(4, 4)(t.randn(3, 4))
    t.nn.functional.dropout(h, 0.5, training=True, inplace=True).sum().backward()


def _kept_result_changed(t):
    a = t.randn(3, requires_grad=True)
    b = t.sigmoid(a)
    c = b * 2
    b.mul_(3)
    c.sum().backward()


def _copy_changed(t):
    a = t.randn(2, 3, requires_grad=True)
    s = t.softmax(a, -1)
    copy = s.clone()
    copy.add_(1)
    (s * copy).sum().backward()


def _ema_under_no_grad(t):
    t.manual_seed(0)
    model, ema = t.nn.Linear(3, 1), t.nn.Linear(3, 1)
    ema(t.randn(2, 3)).sum()
    with t.no_grad():
        for p, q in zip(ema.parameters(), model.parameters()):
            p.mul_(0.9).add_(q, alpha=0.1)
    model(t.randn(2, 3)).sum().backward()


def _views_share_the_version(t):
    """A base, views of it and of its views, and a detach() alias: one version counter, whichever is changed."""
    a = t.ones(3, 4)
    v, u, d = a[1], a.view(12), a.detach()
    w = v[1:3]
    versions = []
    for change in (lambda: None, lambda: w.mul_(2), lambda: u.add_(1), lambda: a.__setitem__(0, 5), d.zero_):
        change()
        versions.append([x._version for x in (a, v, w, u, d)])
    b = t.ones(2, 3, requires_grad=True)
    h = b * 2
    hv = h[0]
    hv.mul_(3)
    return versions + [[h._version, hv._version], [a.clone()._version]]


SCRIPTS = {f.__name__[1:]: f for f in (_relu_in_place, _residual, _in_place_relu_module, _step_between_two_backwards,
                                       _gan_discriminator_stepped_first, _dropout_in_place, _kept_result_changed,
                                       _copy_changed, _ema_under_no_grad, _views_share_the_version)}


# Modules whose parameters and buffers their construction initialises in place (version 1, or 2 where twice)
MODULES = {
    "Linear": lambda nn: nn.Linear(2, 3), "Conv2d": lambda nn: nn.Conv2d(2, 3, 3),
    "BatchNorm2d": lambda nn: nn.BatchNorm2d(3), "LayerNorm": lambda nn: nn.LayerNorm(3),
    "GroupNorm": lambda nn: nn.GroupNorm(1, 3), "RMSNorm": lambda nn: nn.RMSNorm(3),
    "Embedding": lambda nn: nn.Embedding(4, 2), "LSTM": lambda nn: nn.LSTM(2, 3),
    "MultiheadAttention": lambda nn: nn.MultiheadAttention(4, 2),
}


def module_versions(torch, name):
    """[name, version] of each parameter and buffer of a new module."""
    m = MODULES[name](torch.nn)
    return [[n, t._version] for n, t in list(m.named_parameters()) + list(m.named_buffers())]


def run_script(torch, name):
    """The script through `torch`: ["ok"] (["ok", what it returns] where it returns something) or ["error",
    PyTorch's message]."""
    try:
        result = SCRIPTS[name](torch)
    except RuntimeError as e:
        return ["error", str(e)]
    return ["ok"] if result is None else ["ok", result]


def main():
    import torch
    result = {"versions": {"torch": torch.__version__},
              "cases": {key: run(torch, name, target, grads, mode) for key, name, target, grads, mode in cases()}}
    result["cases"].update({f"script/{name}": run_script(torch, name) for name in SCRIPTS})
    result["cases"].update({f"module/{name}": module_versions(torch, name) for name in MODULES})
    with open(OUT, "w") as f:             # one case a line
        f.write('{"versions": %s, "cases": {\n' % json.dumps(result["versions"]))
        f.write(",\n".join(f"{json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}"
                            for k, v in result["cases"].items()))
        f.write("\n}}\n")
    errors = sum(r[0] == "error" for r in result["cases"].values())
    print(f"wrote {OUT}: {len(result['cases'])} cases, {errors} raising", file=sys.stderr)


if __name__ == "__main__":
    main()
