"""Record real PyTorch's torch.func on a table of programs into tests/fixtures/pytorch/func.json;
tests/torch/test_func.py runs the same programs with minifp.torch and compares.

    /work/torchenv/bin/python tools/record_torch_func.py

Programs in the style of PyTorch's torch.func tutorials: per-sample gradients of a small MLP and a small CNN
(vmap of grad of a functional_call), an ensemble of 3 MLPs (stack_module_state, vmap over functional_call),
jacrev, jacfwd and hessian of small functions and of a module's output with respect to its parameters (an
empirical neural tangent kernel), vjp and jvp, a Hessian-vector product (jvp of grad), grad with has_aux and
argnums tuples, and vmap's semantics (in_dims None and nested, out_dims, kwargs, nested vmap, randomness).
Recorded per program: every tensor's dtype, shape, requires_grad and values, and any other value as it is. Error
cases: the exception's type and message.
"""
import json
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pytorch" / "func.json"


def _f32(a):
    return np.asarray(a, np.float32)


def _t(torch, a, **kw):
    return torch.tensor(_f32(a).tolist(), **kw)


def _set_weights(torch, model, seed, scale=0.5):
    """Fixed weights drawn here (the two frameworks' initialisers draw different numbers)."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(_t(torch, rng.standard_normal(tuple(p.shape)) * scale))
    return model


def _mlp(torch, seed):
    nn = torch.nn
    return _set_weights(torch, nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3)), seed)


def _record(x):
    """Tensors as {dtype, shape, requires_grad, values}; containers element by element; anything else as it is."""
    if hasattr(x, "detach") and hasattr(x, "dtype"):
        values = [float(str(v)) for v in x.detach().float().numpy().ravel()]
        return {"dtype": str(x.dtype), "shape": list(x.shape), "values": values,
                "requires_grad": bool(x.requires_grad)}
    if isinstance(x, dict):
        return {"dict": {k: _record(v) for k, v in x.items()}}
    if isinstance(x, (tuple, list)):
        return {type(x).__name__: [_record(v) for v in x]}
    return x


def per_sample_mlp(torch):
    """The per-sample-gradients tutorial on an MLP: vmap(grad(loss of functional_call)), in_dims (None, None, 0, 0)."""
    F, func = torch.nn.functional, torch.func
    model = _mlp(torch, 1)
    rng = np.random.default_rng(2)
    data, targets = _t(torch, rng.standard_normal((6, 5))), torch.tensor(rng.integers(0, 3, 6).tolist())
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        predictions = func.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return F.cross_entropy(predictions, target.unsqueeze(0))

    grads = func.vmap(func.grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data, targets)
    loss = F.cross_entropy(model(data[:1]), targets[:1])
    loss.backward()                     # the first sample's gradient the plain way, for comparison
    return {"grads": grads, "first": {k: p.grad for k, p in model.named_parameters()}}


def per_sample_cnn(torch):
    """Per-sample gradients of a small CNN (conv, relu, max_pool2d, linear, log_softmax, nll_loss)."""
    nn, F, func = torch.nn, torch.nn.functional, torch.func

    class SimpleCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 3, 3, 1)
            self.conv2 = nn.Conv2d(3, 4, 3, 1)
            self.fc1 = nn.Linear(16, 6)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            return F.log_softmax(self.fc1(torch.flatten(x, 1)), dim=1)

    model = _set_weights(torch, SimpleCNN(), 3)
    rng = np.random.default_rng(4)
    data, targets = _t(torch, rng.standard_normal((4, 1, 8, 8))), torch.tensor(rng.integers(0, 6, 4).tolist())
    params = {k: v.detach() for k, v in model.named_parameters()}

    def compute_loss(params, sample, target):
        out = func.functional_call(model, params, (sample.unsqueeze(0),))
        return F.nll_loss(out, target.unsqueeze(0))

    return {"grads": func.vmap(func.grad(compute_loss), in_dims=(None, 0, 0))(params, data, targets)}


def ensemble(torch):
    """The model-ensembling tutorial: stack_module_state, vmap over functional_call, the same minibatch for every
    model (in_dims (0, 0, None)) and one per model (0, 0, 0); the loss backpropagated into the stacked leaves."""
    func = torch.func
    models = [_mlp(torch, 10 + i) for i in range(3)]
    rng = np.random.default_rng(5)
    minibatches = _t(torch, rng.standard_normal((3, 4, 5)))
    params, buffers = func.stack_module_state(models)

    def fmodel(params, buffers, x):
        return func.functional_call(models[0], (params, buffers), (x,))

    same = func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatches[0])
    each = func.vmap(fmodel)(params, buffers, minibatches)
    (each ** 2).sum().backward()
    return {"params": params, "buffers": buffers, "same": same, "each": each,
            "expected_first": models[0](minibatches[0]), "stacked_grads": {k: v.grad for k, v in params.items()},
            "keys": list(params)}


def jacobians(torch):
    """The Jacobians tutorial: jacrev and jacfwd of a tanh linear layer with respect to x (argnums=2), vmapped over
    a batch, with respect to (weight, bias), the Hessian and jacfwd(jacrev), jacrev(jacrev)."""
    F, func = torch.nn.functional, torch.func
    rng = np.random.default_rng(6)
    weight, bias = _t(torch, rng.standard_normal((4, 4)) * 0.5), _t(torch, rng.standard_normal(4) * 0.1)
    x, xs = _t(torch, rng.standard_normal(4)), _t(torch, rng.standard_normal((3, 4)))

    def predict(weight, bias, x):
        return torch.tanh(F.linear(x, weight, bias))

    def energy(x):
        return (torch.sin(x) * x.exp()).sum()

    return {"jacrev": func.jacrev(predict, argnums=2)(weight, bias, x),
            "jacfwd": func.jacfwd(predict, argnums=2)(weight, bias, x),
            "batched": func.vmap(func.jacrev(predict, argnums=2), in_dims=(None, None, 0))(weight, bias, xs),
            "batched_fwd": func.jacfwd(predict, argnums=2)(weight, bias, xs),
            "argnums": func.jacrev(predict, argnums=(0, 1))(weight, bias, x),
            "hessian": func.hessian(energy)(x),
            "hessian_predict": func.hessian(predict, argnums=2)(weight, bias, x),
            "revrev": func.jacrev(func.jacrev(energy))(x),
            "dict_output": func.jacrev(lambda x: {"s": x.sin(), "c": (x.cos(), x.sum())})(x),
            "aux": func.jacrev(lambda x: (x.exp(), x.sum()), has_aux=True)(x)}


def ntk(torch):
    """The neural-tangent-kernel tutorial: vmap(jacrev(fnet_single), (None, 0)) over two batches, the kernel by
    einsum over the flattened per-parameter Jacobians."""
    func = torch.func
    model = _mlp(torch, 20)
    params = {k: v.detach() for k, v in model.named_parameters()}
    rng = np.random.default_rng(7)
    x1, x2 = _t(torch, rng.standard_normal((3, 5))), _t(torch, rng.standard_normal((2, 5)))

    def fnet_single(params, x):
        return func.functional_call(model, params, (x.unsqueeze(0),)).squeeze(0)

    jac1 = func.vmap(func.jacrev(fnet_single), (None, 0))(params, x1)
    jac2 = func.vmap(func.jacrev(fnet_single), (None, 0))(params, x2)
    jac1 = [j.flatten(2) for j in jac1.values()]
    jac2 = [j.flatten(2) for j in jac2.values()]
    result = torch.stack([torch.einsum("Naf,Mbf->NMab", j1, j2) for j1, j2 in zip(jac1, jac2)]).sum(0)

    def get_ntk(x1, x2):
        """The tutorial's NTK-vector products: vjp, then jvp of the vjp, for each basis vector."""
        def func_x1(params):
            return fnet_single(params, x1)

        def func_x2(params):
            return fnet_single(params, x2)

        output, vjp_fn = func.vjp(func_x1, params)

        def get_ntk_slice(vec):
            vjps = vjp_fn(vec)
            _, jvps = func.jvp(func_x2, (params,), vjps)
            return jvps
        basis = torch.eye(output.numel(), dtype=output.dtype, device=output.device).view(output.numel(), -1)
        return func.vmap(get_ntk_slice)(basis)

    products = func.vmap(func.vmap(get_ntk, (None, 0)), (0, None))(x1, x2)
    return {"jac1": jac1, "ntk": result, "ntk_vps": products}


def products(torch):
    """vjp (tuple and dict outputs, called twice), jvp, linearize, a Hessian-vector product as jvp of grad, grad
    with has_aux and argnums, grad_and_value."""
    func = torch.func
    rng = np.random.default_rng(8)
    x, y = _t(torch, rng.standard_normal(4)), _t(torch, rng.standard_normal(4))
    v, w = _t(torch, rng.standard_normal(4)), _t(torch, rng.standard_normal(4))

    def f(x, y):
        return torch.tanh(x * y), (x.exp() * y).sum()

    out, vjp_fn = func.vjp(f, x, y)
    first = vjp_fn((v, torch.tensor(2.0)))
    again = vjp_fn((w, torch.tensor(0.5)))
    out_d, vjp_d = func.vjp(lambda x: {"a": x.sin(), "b": x * x}, x)
    primal, tangent = func.jvp(lambda x, y: torch.tanh(x * y) * x, (x, y), (v, w))
    lin_out, jvp_fn = func.linearize(lambda x: torch.tanh(x) * x, x)

    def loss(x):
        return (torch.sin(x) * x).sum()

    hvp = func.jvp(func.grad(loss), (x,), (v,))[1]
    with_aux = func.grad(lambda x, y: ((x * y).sum(), x * 2), argnums=(0, 1), has_aux=True)(x, y)
    gv = func.grad_and_value(lambda x: (x ** 3).sum())(x)
    grad_of_grad = func.grad(func.grad(lambda s: torch.sin(s) * s))(torch.tensor(0.7))
    return {"out": out, "first": first, "again": again, "vjp_dict": vjp_d({"a": v, "b": w}), "out_dict": out_d,
            "jvp": (primal, tangent), "linearize": (lin_out, jvp_fn(v)), "hvp": hvp, "with_aux": with_aux,
            "grad_and_value": gv, "grad_of_grad": grad_of_grad,
            "jvp_aux": func.jvp(lambda x: (x.exp(), x.sum()), (x,), (v,), has_aux=True)}


def polynomials(torch):
    """The transforms on functions of + and * only (each value one correctly rounded float32 operation in both
    frameworks): jacrev and jacfwd with argnums tuples, hessian, jvp, vjp, vmap of grad; grad of a function of a
    tensor that requires grad keeps the graph (its sum backpropagated: a second derivative)."""
    func = torch.func
    x, y = torch.tensor([0.5, -1.25, 2.0, 3.0]), torch.tensor([1.5, 0.25, -2.0, 0.75])

    def f(x, y):
        return x * x * y + x

    def cube(x):
        return (x * x * x).sum() * 0.5

    w = torch.tensor([0.5, -1.5, 2.0], requires_grad=True)
    g = func.grad(cube)(w)
    g.sum().backward()
    vjp_fn = func.vjp(f, x, y)[1]          # made outside the grad that differentiates through it
    return {"jacrev": func.jacrev(f, argnums=(0, 1))(x, y), "jacfwd": func.jacfwd(f, argnums=(0, 1))(x, y),
            "hessian": func.hessian(cube)(x), "jvp": func.jvp(f, (x, y), (y, x)), "vjp": func.vjp(f, x, y)[1](y),
            "per_row": func.vmap(func.grad(cube))(torch.stack([x, y, x * y])), "graph": g, "w_grad": w.grad,
            "detached": func.grad(cube)(w.detach()),
            "nested_closure": func.grad(lambda x: func.grad(lambda y: (x * y).sum())(x).sum())(x),
            "through_vjp": func.grad(lambda v: (vjp_fn(v)[1] * v).sum())(x)}


def edges(torch):
    """Pytrees and corner cases on exact arithmetic: dict arguments with argnums tuples and aux, dict outputs and
    out_dims, nested tuples in in_dims, a Python number returned with out_dims None, kwargs, unused arguments (zero
    gradients), 0-dim tensors, outputs that do not depend on the input, an empty mapped dimension."""
    func = torch.func
    a, c = torch.tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 0.25]]), torch.tensor([2.0, -3.0])
    p = {"w": torch.tensor([1.0, -2.0]), "b": torch.tensor(0.5)}
    out, vjp_fn, aux = func.vjp(lambda x: (x * 3, x.sum()), c, has_aux=True)
    return {"jacrev_dict_aux": func.jacrev(lambda p, x: ((p["w"] * x).sum() + p["b"], x * 2), argnums=(0, 1),
                                           has_aux=True)(p, c),
            "jacfwd_aux": func.jacfwd(lambda x: (x * x, {"s": x.sum()}), has_aux=True)(c),
            "nested_in_dims": func.vmap(lambda t: t[0] * t[1], in_dims=((0, None),))((a, c)),
            "dict_out_dims": func.vmap(lambda x: {"a": x * 2, "b": x.sum()}, out_dims={"a": 1, "b": 0})(a),
            "number_out": func.vmap(lambda x: (x * 2, 3.0), out_dims=(0, None))(a),
            "list_arg": func.vmap(lambda l: l[0] + l[1])([a, a]),
            "negative_out_dims": func.vmap(lambda x: x * 2, out_dims=-1)(a),
            "empty": func.vmap(lambda x: (x * 2, x.sum()))(torch.ones(0, 2)),
            "grad_kwargs": func.grad(lambda x, scale=1.0: (x * scale).sum())(c, scale=c),
            "grad_unused": func.grad(lambda x, y: (x * x).sum(), argnums=(0, 1))(c, c),
            "grad_dict": func.grad(lambda p: (p["w"] * p["b"]).sum())(p),
            "grad_constant": func.grad(lambda x: torch.tensor(1.0))(c),
            "grad_aux_dict": func.grad(lambda x: (x.sum(), {"y": x * 2}), has_aux=True)(c),
            "jacrev_0d": func.jacrev(lambda x: x * x)(torch.tensor(3.0)),
            "hessian_argnums": func.hessian(lambda x, y: (x * x * y).sum(), argnums=(0, 1))(c, c),
            "vjp_aux": (out, vjp_fn(torch.ones(2)), aux),
            "jvp_tuple": func.jvp(lambda x: (x * x, x.sum()), (c,), (torch.ones(2),)),
            "jvp_constant": func.jvp(lambda x: torch.ones(2), (c,), (c,))}


def vmap_semantics(torch):
    """vmap's in_dims and out_dims: None, negative, nested tuples and dicts, tuple outputs, out_dims=1 and None,
    kwargs (not mapped), vmap of vmap, chunk_size, a function of no mapped tensor's values, randomness='same'."""
    func = torch.func
    rng = np.random.default_rng(9)
    a, b = _t(torch, rng.standard_normal((3, 4))), _t(torch, rng.standard_normal((4, 3)))
    c = _t(torch, rng.standard_normal(4))
    torch.manual_seed(0)
    same = func.vmap(lambda x: x + torch.rand(2), randomness="same")(torch.zeros(3, 2))
    return {"dot": func.vmap(torch.dot)(a, b.t()), "in_dims": func.vmap(torch.dot, in_dims=(1, 0))(b, a),
            "negative": func.vmap(lambda x: x * 2, in_dims=-1)(a),
            "none": func.vmap(torch.mul, in_dims=(0, None))(a, c),
            "nested": func.vmap(lambda d, s: d["x"] * s[0] + s[1], in_dims=({"x": 0}, (None, 1)))(
                {"x": a}, (c, b)),
            "tuple_out": func.vmap(lambda x: (x.sum(), x * 3))(a),
            "out_dims": func.vmap(lambda x: x.exp(), out_dims=1)(a),
            "out_dims_tuple": func.vmap(lambda x: (x.sum(), c * 2), out_dims=(0, None))(a),
            "kwargs": func.vmap(lambda x, scale=1.0: x * scale)(a, scale=c),
            "nested_vmap": func.vmap(func.vmap(torch.mul, in_dims=(0, None)), in_dims=(None, 0))(c, a),
            "chunk": func.vmap(lambda x: x.cumsum(0), chunk_size=2)(a),
            "constant": func.vmap(lambda x: c.sin())(a),
            "same_equal": bool((same[0] == same[1]).all() and (same[1] == same[2]).all()),
            "torch_vmap": torch.vmap(torch.sum)(a)}


def modules(torch):
    """functional_call's dict sequences, kwargs, tied weights, strict; the module keeps its own tensors;
    replace_all_batch_norm_modules_."""
    nn, func = torch.nn, torch.func

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False)
            self.b = nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x, scale=1.0):
            return self.b(self.a(x)) * scale

    model = _set_weights(torch, Tied(), 30)
    x = torch.tensor([[1.0, -2.0]])
    w = torch.tensor([[0.5, 1.0], [-1.0, 2.0]])
    norm = _set_weights(torch, nn.BatchNorm1d(2), 31)
    given = {"running_mean": torch.tensor([0.5, -1.0]), "running_var": torch.tensor([2.0, 0.5]),
             "num_batches_tracked": torch.tensor(3)}
    normed = func.functional_call(norm, given, torch.tensor([[1.0, 2.0], [3.0, -4.0], [0.5, 0.0]]))
    bn = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    func.replace_all_batch_norm_modules_(bn)
    return {"tied": func.functional_call(model, {"a.weight": w}, (x,)),
            "untied": func.functional_call(model, {"a.weight": w}, x, tie_weights=False),
            "kwargs": func.functional_call(model, ({"a.weight": w}, {}), (x,), {"scale": 3.0}),
            "kept": model.a.weight, "normed": normed, "given": given, "own": dict(norm.named_buffers()),
            "bn": [bn[1].running_mean is None, bn[1].track_running_stats, sorted(bn.state_dict())]}


PROGRAMS = {"per_sample_mlp": per_sample_mlp, "per_sample_cnn": per_sample_cnn, "ensemble": ensemble,
            "jacobians": jacobians, "ntk": ntk, "products": products, "polynomials": polynomials,
            "edges": edges, "vmap_semantics": vmap_semantics, "modules": modules}

# Each snippet runs with torch, func = torch.func, x = tensor([1., 2., 3.]), m = nn.Linear(3, 2)
ERRORS = [
    "func.grad(lambda x: x * 2)(x)",
    "func.grad(lambda x: 1.0)(x)",
    "func.grad(lambda x: x.sum(), has_aux=True)(x)",
    "func.grad(lambda x: x.sum(), argnums=1)(x)",
    "func.grad(lambda x, y: x.sum(), argnums=(0, 0))(x, x)",
    "func.grad(lambda x, y: x.sum(), argnums=())(x, x)",
    "func.grad(lambda x: x.sum(), argnums=[0])(x)",
    "func.grad(lambda x: x.sum(), argnums=0.5)(x)",
    "func.grad(lambda x: x, argnums=0)(2.0)",
    "func.vjp(lambda x: 3.0, x)",
    "func.vjp(lambda x: x.sum(), x, has_aux=True)",
    "func.vjp(lambda x: (x, x), x)[1](x)",
    "func.vjp(lambda x: x * 2, x)[1](torch.ones(2))",
    "func.vjp(lambda x: (x > 0), x)",
    "func.jvp(lambda x: x, x, (x,))",
    "func.jvp(lambda x: x, (x,), (torch.ones(2),))",
    "func.jvp(lambda x: x, (x,), (x, x))",
    "func.jvp(lambda x: x, (x,), (1.0,))",
    "func.jacrev(lambda x: x, chunk_size=0)",
    "func.jacrev(lambda x: 2.0)(x)",
    "func.vmap(torch.sin, randomness='sometimes')",
    "func.vmap(torch.sin, chunk_size=0)",
    "func.vmap(torch.sin, in_dims=[0])(x)",
    "func.vmap(torch.sin, in_dims=(0, 0))(x)",
    "func.vmap(torch.sin, in_dims=1)(x)",
    "func.vmap(torch.sin, in_dims=(None,))(x)",
    "func.vmap(torch.mul)(x, torch.ones(2))",
    "func.vmap(torch.mul, in_dims=(0, 0))(x, 2.0)",
    "func.vmap(torch.mul, in_dims=(0, 'a'))(x, x)",
    "func.vmap(torch.sin)()",
    "func.vmap(lambda x: 1.0)(x)",
    "func.vmap(torch.sin, out_dims=(0, 0))(x)",
    "func.vmap(torch.sin, out_dims='a')(x)",
    "func.vmap(torch.sin, out_dims=None)(x)",
    "func.vmap(torch.sin, out_dims=1)(x)",
    "func.vmap(lambda x: x.sum(), out_dims=-3)(torch.ones(3, 2))",
    "func.vmap(lambda x: x + torch.rand(()))(x)",
    "func.vmap(lambda d: d['a'], in_dims=({'b': 0},))({'a': x})",
    "func.functional_call(m, ({'weight': x}, {'weight': x}), x)",
    "func.functional_call(m, [1], x)",
    "func.functional_call(m, 3, x)",
    "func.functional_call(m, {'weight': torch.ones(2, 3)}, x, strict=True)",
    "func.functional_call(m, {'weight': torch.ones(2, 3), 'bias': torch.ones(2), 'c': x}, x, strict=True)",
    "func.functional_call(m, {'lin.weight': x}, x)",
    "func.functional_call(m, {'in_features.x': x}, x)",
    "func.stack_module_state([])",
    "func.stack_module_state([m, torch.nn.Linear(3, 2).eval()])",
    "func.stack_module_state([m, torch.nn.Conv1d(3, 2, 1)])",
]


def error(torch, snippet):
    """[exception type name, message] of a snippet that raises (None if it does not)."""
    x = torch.tensor([1.0, 2.0, 3.0])
    m = torch.nn.Linear(3, 2)
    try:
        exec(snippet, {"torch": torch, "func": torch.func, "x": x, "m": m})
    except Exception as e:          # noqa: BLE001
        return [type(e).__name__, str(e)]
    return None


def main():
    import torch
    out = {"torch": torch.__version__, "programs": {}, "errors": {}}
    for name, program in PROGRAMS.items():
        out["programs"][name] = _record(program(torch))
    for snippet in ERRORS:
        out["errors"][snippet] = error(torch, snippet)
    OUT.write_text(json.dumps(out, indent=None, separators=(",", ":")) + "\n")
    print(f"{OUT}: {len(out['programs'])} programs, {len(out['errors'])} errors ({OUT.stat().st_size} bytes)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
