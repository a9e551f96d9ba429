"""Record real PyTorch's higher-order gradients (create_graph=True) on a table of programs into
tests/fixtures/pytorch/higher_order.json; tests/torch/test_higher_order.py runs the same functions with minifp.torch
and compares.

    /work/torchenv/bin/python tools/record_torch_higher_order.py

Per op case (an expression over named float32 leaves): its value, the gradients of sum(w * value) with respect to
every leaf (create_graph=True), and the gradients of sum(v_i * gradient_i) with respect to every leaf (a
Hessian-vector product: grad of grad). Per program: a WGAN-GP gradient penalty of a small MLP critic
backpropagated into its weights (and of a critic with LayerNorm), a tanh PINN's u, u_x, u_xx and its loss
backpropagated into the weights (third order), a Hessian-vector product with grad_outputs,
backward(create_graph=True) then .grad.sum().backward(), a MAML inner step (and one through BatchNorm in training
mode with a logistic loss), and a gradient penalty on embedding rows. Error cases: the exception's type and message.
"""
import json
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pytorch" / "higher_order.json"


def _f32(a):
    return np.asarray(a, np.float32)


def _away(rng, shape, low=0.2, high=2.0):
    """Values of both signs away from 0 (and from the kinks there)."""
    return _f32(rng.choice([-1, 1], shape) * rng.uniform(low, high, shape))


def cases():
    """{name: (expression, {leaf: float32 array})}: the leaves require gradients; w is the output's weights."""
    rng = np.random.default_rng(7)
    n, u = rng.standard_normal, rng.uniform
    x, pos = _away(rng, 12), _f32(u(0.3, 3.0, 12))
    ties = _f32([1.0, -2.0, 0.5, 3.0, 0.0, -1.0])
    unary = {"exp": "torch.exp(x)", "tanh": "torch.tanh(x)", "sigmoid": "torch.sigmoid(x)", "sin": "torch.sin(x)",
             "cos": "torch.cos(x)", "relu": "F.relu(x) * x", "leaky_relu": "F.leaky_relu(x, 0.2) * x",
             "elu": "F.elu(x, alpha=0.7)", "softplus": "F.softplus(x, beta=2.0, threshold=3.0)",
             "silu": "F.silu(x)", "gelu": "F.gelu(x)", "gelu_tanh": "F.gelu(x, approximate='tanh')",
             "abs": "torch.abs(x) * x", "neg_square": "-(x * x)", "pow_number": "x ** 3",
             "number_pow": "2.0 ** x", "cube_div": "x * x * x / 3.0", "clamp": "torch.clamp(x, -1.0, 1.0) * x",
             "selu": "F.selu(x)", "hardtanh": "F.hardtanh(x, -1.0, 1.5) * x", "expm1": "torch.expm1(x)"}
    positive = {"log": "torch.log(x)", "sqrt": "torch.sqrt(x)", "rsqrt": "torch.rsqrt(x)",
                "reciprocal": "torch.reciprocal(x)", "pow_fraction": "x ** 2.5", "log_div": "torch.log(x) / x",
                "log1p": "torch.log1p(x)"}
    table = {name: (e, {"x": x}) for name, e in unary.items()}
    table.update({name: (e, {"x": pos}) for name, e in positive.items()})
    a, b = _away(rng, (3, 4)), _f32(u(0.5, 2.0, (3, 4)))
    table.update({
        "mul_div": ("x * y / (y + 1.0) - x", {"x": a, "y": b}),
        "pow_tensor": ("y ** x", {"x": a, "y": b}),
        "maximum": ("torch.maximum(x, y) * x * y", {"x": ties, "y": _f32([1.0, 1.0, -0.5, 2.0, 0.0, -3.0])}),
        "minimum": ("torch.minimum(x, y) * x * y", {"x": ties, "y": _f32([1.0, 1.0, -0.5, 2.0, 0.0, -3.0])}),
        "where": ("torch.where(x > 0, x * y, y * y)", {"x": a, "y": b}),
        "broadcast": ("(x * y * y).sum(0)", {"x": _f32(n((1, 4))), "y": _f32(n((3, 4)))}),
        "sum_mean": ("(x * x).sum(1, keepdim=True) * x.mean(0)", {"x": _f32(n((3, 4)))}),
        "layout": ("(x.reshape(4, 3).t() * x)[1:, ::2] ** 2", {"x": _f32(n((3, 4)))}),
        "index": ("x[[0, 2, 2, 1]] ** 3", {"x": _f32(n(4))}),
        "cat": ("torch.cat([x * x, x.exp(), y], 0) * 2.0", {"x": _f32(n((2, 3))), "y": _f32(n((1, 3)))}),
        "softmax": ("torch.softmax(x, 1)", {"x": _f32(n((3, 5)))}),
        "log_softmax": ("F.log_softmax(x, dim=-1)", {"x": _f32(n((3, 5)))}),
        "vector_norm": ("torch.linalg.vector_norm(x, dim=1)", {"x": _f32(n((3, 4)))}),
        "mse_loss": ("F.mse_loss(x * x, y)", {"x": _f32(n((3, 4))), "y": _f32(n((3, 4)))}),
        "matmul": ("torch.tanh(x @ y)", {"x": _f32(n((3, 4))), "y": _f32(n((4, 2)))}),
        "matmul_batched": ("(x @ y) ** 2", {"x": _f32(n((2, 3, 4))), "y": _f32(n((4, 2)))}),
        "linear": ("torch.tanh(F.linear(x, w, b))", {"x": _f32(n((5, 3))), "w": _f32(n((4, 3))),
                                                      "b": _f32(n(4))}),
        "conv2d": ("torch.tanh(F.conv2d(x, w, b, padding=1))", {"x": _f32(n((2, 2, 5, 5))),
                                                                 "w": _f32(n((3, 2, 3, 3)) * 0.5), "b": _f32(n(3))}),
        "cross_entropy": ("F.cross_entropy(x * x, torch.tensor([0, 2, 1]))", {"x": _f32(n((3, 4)))}),
        "avg_pool2d": ("F.avg_pool2d(x * x, 2, padding=1)", {"x": _f32(n((1, 2, 5, 5)))}),
        "cumsum": ("torch.cumsum(x * x, 1)", {"x": _f32(n((3, 4)))}),
        "dtype": ("(x.to(torch.bfloat16) * x.to(torch.bfloat16)).float() * x", {"x": _f32(n(6))}),
    })
    c, d = _f32(n((3, 4))), _f32(n((3, 4)))
    table.update({
        "layer_norm": ("F.layer_norm(x, (4,), w, b) ** 2", {"x": c, "w": _f32(u(0.5, 2.0, 4)), "b": _f32(n(4))}),
        "layer_norm_plain": ("F.layer_norm(x * x, (2, 3))", {"x": _f32(n((2, 2, 3)))}),
        "batch_norm_train": ("F.batch_norm(x, None, None, w, b, training=True) ** 2",
                             {"x": _f32(n((4, 3, 2))), "w": _f32(u(0.5, 2.0, 3)), "b": _f32(n(3))}),
        "batch_norm_eval": ("F.batch_norm(x * x, torch.tensor([0.5, -1.0, 2.0]), torch.tensor([1.5, 0.25, 4.0]), "
                            "w, b, training=False) ** 2",
                            {"x": _f32(n((4, 3))), "w": _f32(u(0.5, 2.0, 3)), "b": _f32(n(3))}),
        "embedding": ("F.embedding(torch.tensor([[0, 2, 2], [3, 0, 1]]), w) ** 3", {"w": _f32(n((4, 3)))}),
        "embedding_padding": ("F.embedding(torch.tensor([1, 3, 1, 0]), w, padding_idx=1) ** 3",
                              {"w": _f32(n((4, 2)))}),
        "log_sigmoid": ("F.logsigmoid(x)", {"x": x}),
        "bce_logits": ("F.binary_cross_entropy_with_logits(x * x, y) * x", {"x": c, "y": _f32(u(0, 1, (3, 4)))}),
        "bce_logits_weighted": ("F.binary_cross_entropy_with_logits(x, y, weight=torch.tensor([0.5, 1.0, 2.0, 1.5]), "
                                "pos_weight=torch.tensor([2.0, 0.5, 1.0, 3.0]), reduction='sum') * x * y",
                                {"x": c, "y": _f32(u(0, 1, (3, 4)))}),
        "l1_loss": ("F.l1_loss(x * x, y) * x", {"x": c, "y": d}),
        "smooth_l1_loss": ("F.smooth_l1_loss(x * x, y, beta=0.5) * x", {"x": c, "y": d}),
        "huber_loss": ("F.huber_loss(x * x, y, delta=0.5, reduction='sum') * y", {"x": c, "y": d}),
        "var": ("torch.var(x * x, dim=1)", {"x": c}),
        "var_all": ("x.var(correction=0) * x", {"x": c}),
        "max": ("(x * x).max() * x", {"x": c}),
        "max_ties": ("torch.amax(x * x, dim=1, keepdim=True) * x", {"x": _f32([[1, -1, 0.5], [2, -3, 3]])}),
        "logsumexp": ("torch.logsumexp(x * x, 1, keepdim=True) * x", {"x": c}),
        "hardswish": ("F.hardswish(x * 2.0)", {"x": x}),
        "max_pool2d": ("F.max_pool2d(x, 3, stride=2, padding=1) ** 2", {"x": _f32(n((1, 2, 5, 6)))}),
        "max_pool2d_tiles": ("F.max_pool2d(x * x, 2)", {"x": _f32(np.round(n((2, 1, 4, 5))))}),
    })
    return table


def _array(t):
    """dtype, shape, requires_grad and the values, flat, each as the shortest decimal that reads back as its
    float32 (every dtype here widens exactly to float32)."""
    values = [float(str(v)) for v in t.detach().float().numpy().ravel()]
    return {"dtype": str(t.dtype), "shape": list(t.shape), "values": values, "requires_grad": bool(t.requires_grad)}


def _leaves(torch, params):
    return {k: torch.tensor(np.asarray(v, np.float32).tolist(), requires_grad=True) for k, v in params.items()}


def _weights(shape, seed):
    """Fixed output weights (small integers over 4: exact in float32), so that gradients are not all alike."""
    rng = np.random.default_rng(seed)
    return _f32(rng.integers(-4, 5, shape) / 4)


def second(torch, expression, params):
    """The value, the create_graph gradients of sum(w * value), and the gradients of sum(v_i * gradient_i)."""
    F = torch.nn.functional
    leaves = _leaves(torch, params)
    y = eval(expression, {"torch": torch, "F": F, **leaves})
    w = torch.tensor(_weights(tuple(y.shape), 1).tolist())
    names = list(leaves)
    grads = torch.autograd.grad((y * w).sum(), [leaves[k] for k in names], create_graph=True)
    s = sum((g * torch.tensor(_weights(tuple(g.shape), 2 + i).tolist())).sum() for i, g in enumerate(grads))
    again = torch.autograd.grad(s, [leaves[k] for k in names], allow_unused=True)
    return {"value": _array(y), "grad": {k: _array(g) for k, g in zip(names, grads)},
            "grad2": {k: None if g is None else _array(g) for k, g in zip(names, again)}}


def _mlp(torch, weights, x, act):
    F = torch.nn.functional
    for i in range(0, len(weights) - 2, 2):
        x = act(F.linear(x, weights[i], weights[i + 1]))
    return F.linear(x, weights[-2], weights[-1])


def _params(torch, sizes, seed):
    rng = np.random.default_rng(seed)
    out = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        out.append(torch.tensor(_f32(rng.standard_normal((fan_out, fan_in)) / np.sqrt(fan_in)).tolist(),
                                requires_grad=True))
        out.append(torch.tensor(_f32(rng.standard_normal(fan_out) * 0.1).tolist(), requires_grad=True))
    return out


def gradient_penalty(torch):
    """WGAN-GP: (||d critic / d x||_2 - 1)**2 over a batch of interpolates, backpropagated into the critic."""
    F = torch.nn.functional
    weights = _params(torch, (4, 8, 8, 1), 11)
    rng = np.random.default_rng(12)
    real, fake = _f32(rng.standard_normal((6, 4))), _f32(rng.standard_normal((6, 4)))
    alpha = _f32(rng.uniform(0, 1, (6, 1)))
    x = (torch.tensor(alpha.tolist()) * torch.tensor(real.tolist())
         + (1 - torch.tensor(alpha.tolist())) * torch.tensor(fake.tolist())).requires_grad_(True)
    out = _mlp(torch, weights, x, lambda h: F.leaky_relu(h, 0.2))
    g, = torch.autograd.grad(out, x, grad_outputs=torch.ones_like(out), create_graph=True)
    penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
    loss = out.mean() + 10 * penalty
    loss.backward()
    return {"grad_x": _array(g), "penalty": _array(penalty), "weights": [_array(w.grad) for w in weights]}


def pinn(torch):
    """A tanh PINN for u'' + u = f: u, u_x, u_xx by autograd.grad(create_graph=True), the residual loss
    backpropagated into the weights (third derivatives through tanh)."""
    weights = _params(torch, (1, 8, 8, 1), 21)
    x = torch.tensor(np.linspace(-1, 1, 9, dtype=np.float32).reshape(9, 1).tolist(), requires_grad=True)
    u = _mlp(torch, weights, x, torch.tanh)
    u_x, = torch.autograd.grad(u.sum(), x, create_graph=True)
    u_xx, = torch.autograd.grad(u_x.sum(), x, create_graph=True)
    loss = ((u_xx + u - torch.sin(x)) ** 2).mean() + (u_x[0] ** 2).sum()
    loss.backward()
    return {"u": _array(u), "u_x": _array(u_x), "u_xx": _array(u_xx), "loss": _array(loss),
            "weights": [_array(w.grad) for w in weights], "x_grad": _array(x.grad)}


def hessian_vector(torch):
    """grad of grad . v with grad_outputs, for a small tanh regression's loss."""
    rng = np.random.default_rng(31)
    w = torch.tensor(_f32(rng.standard_normal(5)).tolist(), requires_grad=True)
    a = torch.tensor(_f32(rng.standard_normal((7, 5))).tolist())
    t = torch.tensor(_f32(rng.standard_normal(7)).tolist())
    loss = ((torch.tanh(a @ w) - t) ** 2).mean()
    g, = torch.autograd.grad(loss, w, create_graph=True)
    v = torch.tensor(_f32(rng.standard_normal(5)).tolist())
    hv, = torch.autograd.grad(g, w, grad_outputs=v)
    return {"loss": _array(loss), "grad": _array(g), "hv": _array(hv)}


def backward_twice(torch):
    """backward(create_graph=True) sets .grad to a graph tensor; .grad.sum().backward() adds into it."""
    x = torch.tensor([0.5, -1.25, 2.0, 3.0], requires_grad=True)
    y = (x ** 3 * torch.sin(x)).sum()
    y.backward(create_graph=True)
    first = _array(x.grad)
    x.grad.sum().backward()
    return {"first": first, "after": _array(x.grad)}


def maml(torch):
    """One MAML inner step on a linear model: the outer loss differentiated through the inner update."""
    F = torch.nn.functional
    rng = np.random.default_rng(41)
    w = torch.tensor(_f32(rng.standard_normal((1, 3)) * 0.5).tolist(), requires_grad=True)
    b = torch.tensor([0.1], requires_grad=True)
    xs = [torch.tensor(_f32(rng.standard_normal((6, 3))).tolist()) for _ in range(2)]
    ys = [torch.tensor(_f32(rng.standard_normal((6, 1))).tolist()) for _ in range(2)]
    inner = F.mse_loss(torch.tanh(F.linear(xs[0], w, b)), ys[0])
    gw, gb = torch.autograd.grad(inner, (w, b), create_graph=True)
    w2, b2 = w - 0.1 * gw, b - 0.1 * gb
    outer = F.mse_loss(torch.tanh(F.linear(xs[1], w2, b2)), ys[1])
    outer.backward()
    return {"inner": _array(inner), "outer": _array(outer), "w": _array(w.grad), "b": _array(b.grad)}


def gradient_penalty_layer_norm(torch):
    """WGAN-GP with a LayerNorm critic (as the WGAN-GP paper advises in place of batch norm)."""
    nn = torch.nn
    torch.manual_seed(0)
    critic = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
    rng = np.random.default_rng(13)
    with torch.no_grad():
        for p in critic.parameters():
            p.copy_(torch.tensor(_f32(rng.standard_normal(tuple(p.shape)) * 0.5).tolist()))
    x = torch.tensor(_f32(rng.standard_normal((6, 4))).tolist(), requires_grad=True)
    out = critic(x)
    g, = torch.autograd.grad(out, x, grad_outputs=torch.ones_like(out), create_graph=True)
    penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
    (out.mean() + 10 * penalty).backward()
    return {"grad_x": _array(g), "penalty": _array(penalty),
            "weights": {k: _array(p.grad) for k, p in critic.named_parameters()}}


def maml_batch_norm(torch):
    """A MAML inner step through BatchNorm1d in training mode (the batch's statistics), outer loss with a
    logistic loss, the meta-gradient into the shared parameters."""
    F = torch.nn.functional
    rng = np.random.default_rng(43)
    w = torch.tensor(_f32(rng.standard_normal((4, 3)) * 0.5).tolist(), requires_grad=True)
    gamma = torch.tensor(_f32(rng.uniform(0.5, 1.5, 4)).tolist(), requires_grad=True)
    beta = torch.tensor(_f32(rng.standard_normal(4) * 0.1).tolist(), requires_grad=True)
    v = torch.tensor(_f32(rng.standard_normal((1, 4))).tolist(), requires_grad=True)
    xs = [torch.tensor(_f32(rng.standard_normal((8, 3))).tolist()) for _ in range(2)]
    ys = [torch.tensor(_f32(rng.integers(0, 2, (8, 1))).tolist()) for _ in range(2)]

    def model(x, w, gamma, beta, v):
        h = F.batch_norm(F.linear(x, w), None, None, gamma, beta, training=True)
        return F.linear(F.logsigmoid(h), v)

    inner = F.binary_cross_entropy_with_logits(model(xs[0], w, gamma, beta, v), ys[0])
    grads = torch.autograd.grad(inner, (w, gamma, beta, v), create_graph=True)
    fast = [p - 0.1 * g for p, g in zip((w, gamma, beta, v), grads)]
    outer = F.binary_cross_entropy_with_logits(model(xs[1], *fast), ys[1])
    outer.backward()
    return {"inner": _array(inner), "outer": _array(outer),
            "grads": [_array(p.grad) for p in (w, gamma, beta, v)]}


def embedding_penalty(torch):
    """A gradient-norm penalty on embedding rows (grad of grad through embedding, smooth L1 and var)."""
    F = torch.nn.functional
    rng = np.random.default_rng(47)
    table = torch.tensor(_f32(rng.standard_normal((5, 3))).tolist(), requires_grad=True)
    rows = F.embedding(torch.tensor([[0, 4, 4], [2, 0, 1]]), table, padding_idx=2)
    loss = F.smooth_l1_loss(torch.tanh(rows).sum(-1), torch.tensor([[0.5, -1.0, 0.0], [1.0, 2.0, -0.5]]))
    g, = torch.autograd.grad(loss, table, create_graph=True)
    penalty = g.var() + (g * g).sum()
    penalty.backward()
    return {"loss": _array(loss), "grad": _array(g), "penalty": _array(penalty), "table": _array(table.grad)}


PROGRAMS = {"gradient_penalty": gradient_penalty, "gradient_penalty_layer_norm": gradient_penalty_layer_norm,
            "maml_batch_norm": maml_batch_norm, "embedding_penalty": embedding_penalty, "pinn": pinn,
            "hessian_vector": hessian_vector,
            "backward_twice": backward_twice, "maml": maml}

# Each snippet runs with torch and a leaf x = tensor([1., 2., 3.], requires_grad=True)
ERRORS = [
    "g, = torch.autograd.grad((x * x).sum(), x); torch.autograd.grad(g.sum(), x)",
    "y = (x * x).sum(); y.backward(create_graph=True); y.backward()",
    "torch.autograd.grad((x * x).sum(), x, create_graph=True, grad_outputs=torch.ones(2))",
]


def error(torch, snippet):
    """[exception type name, message] of a snippet that raises (None if it does not)."""
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    try:
        exec(snippet, {"torch": torch, "x": x})
    except Exception as e:          # noqa: BLE001
        return [type(e).__name__, str(e)]
    return None


def _short(a):
    """A float32 array as nested lists of the shortest decimals that read back as its values."""
    return float(str(a)) if a.ndim == 0 else [_short(row) for row in a]


def main():
    import torch
    out = {"torch": torch.__version__, "cases": {}, "programs": {}, "errors": {}}
    for name, (expression, params) in cases().items():
        out["cases"][name] = {"expression": expression, "params": {k: _short(v) for k, v in params.items()},
                              "expected": second(torch, expression, params)}
    for name, program in PROGRAMS.items():
        out["programs"][name] = program(torch)
    for snippet in ERRORS:
        out["errors"][snippet] = error(torch, snippet)
    OUT.write_text(json.dumps(out, indent=None, separators=(",", ":")) + "\n")
    print(f"{OUT}: {len(out['cases'])} cases, {len(out['programs'])} programs, {len(out['errors'])} errors "
          f"({OUT.stat().st_size} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
