"""Record real PyTorch's LBFGS, Rprop, ASGD, SparseAdam and torch.optim.swa_utils on a table of cases into
tests/fixtures/pytorch/optim_extra.json; tests/torch/test_optim_extra.py runs the same case functions with
minifp.torch and compares.

    /work/torchenv/bin/python tools/record_torch_optim_extra.py

Every case is a function of the torch module given (real PyTorch here, minifp.torch in the test) that builds its
inputs from fixed float64 formulas rounded once to float32 and returns plain data: losses, parameters, state and
state_dict contents, learning rates, reprs. ERRORS are expressions whose exception type and message are recorded.
"""
import json
import math
import re
import warnings
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pytorch" / "optim_extra.json"


def clean(torch, x):
    """A JSON-ready copy: tensors as {"tensor": values, "dtype"}, tuples as lists, non-finite floats as strings."""
    if isinstance(x, torch.Tensor):
        return {"tensor": clean(torch, x.detach().cpu().tolist()), "dtype": str(x.dtype)}
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if isinstance(x, (list, tuple)):
        return [clean(torch, v) for v in x]
    if isinstance(x, dict):
        return {str(k): clean(torch, v) for k, v in x.items()}
    return x


def wave(torch, shape, k, scale=1.0, offset=0.0):
    """A float32 tensor of offset + scale * sin(0.7 i + k) (float64, rounded once)."""
    n = int(np.prod(shape))
    v = offset + scale * np.sin(0.7 * np.arange(n, dtype=np.float64) + k)
    return torch.tensor(v.astype(np.float32).reshape(shape))


def set_weights(torch, module, k=0, scale=0.5):
    """Give every parameter of module a wave() value (the same in both frameworks)."""
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(wave(torch, tuple(p.shape), k + i, scale))
    return module


# -- LBFGS ----------------------------------------------------------------------------------------------------


def _linreg(torch):
    x = wave(torch, (16, 3), 1.0)
    y = x @ torch.tensor([1.5, -2.0, 0.5]) + 0.3 + wave(torch, (16,), 5.0, 0.05)
    model = set_weights(torch, torch.nn.Linear(3, 1))
    return list(model.parameters()), lambda: ((model(x).squeeze(1) - y) ** 2).mean()


def _rosenbrock(torch):
    xy = torch.tensor([-1.5, 2.0], requires_grad=True)
    return [xy], lambda: (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2


def _mlp(torch):
    x = torch.linspace(-2, 2, 16).unsqueeze(1)
    y = torch.sin(x * 1.5)
    model = set_weights(torch, torch.nn.Sequential(torch.nn.Linear(1, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)))
    return list(model.parameters()), lambda: ((model(x) - y) ** 2).mean()


PROBLEMS = {"linreg": _linreg, "rosenbrock": _rosenbrock, "mlp": _mlp}

LBFGS_CASES = {                 # name: (problem, keyword arguments, steps)
    "linreg": ("linreg", {}, 3),
    "linreg_wolfe": ("linreg", {"line_search_fn": "strong_wolfe"}, 2),
    "rosenbrock_lr": ("rosenbrock", {"lr": 0.01, "max_iter": 5}, 4),
    "rosenbrock_wolfe": ("rosenbrock", {"line_search_fn": "strong_wolfe", "max_iter": 10}, 2),
    "rosenbrock_history": ("rosenbrock", {"line_search_fn": "strong_wolfe", "history_size": 2, "max_iter": 8}, 2),
    "mlp": ("mlp", {"lr": 0.5, "max_iter": 4}, 2),
    "mlp_wolfe": ("mlp", {"line_search_fn": "strong_wolfe", "max_iter": 10}, 1),
    "tolerance_grad": ("linreg", {"tolerance_grad": 1e3}, 2),
    "max_eval": ("rosenbrock", {"line_search_fn": "strong_wolfe", "max_iter": 10, "max_eval": 4}, 2),
}


def lbfgs_run(torch, problem, kwargs, steps):
    """steps LBFGS steps: each step's returned loss and closure calls (and whether grad was on in them), the
    parameters after each step, then the final state and state_dict."""
    params, loss_fn = PROBLEMS[problem](torch)
    opt = torch.optim.LBFGS(params, **kwargs)
    calls = []

    def closure():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        calls.append(torch.is_grad_enabled())
        return loss

    out = {"losses": [], "calls": [], "params": [], "returned_first": []}
    for _ in range(steps):
        calls.clear()
        first = []
        loss = opt.step(lambda: first.append(closure()) or first[-1])
        out["losses"].append(loss.item())
        out["returned_first"].append(loss is first[0])
        out["calls"].append(list(calls))
        out["params"].append([p.detach().reshape(-1).tolist() for p in params])
    out["state"] = {key: _summary(torch, value) for key, value in opt.state[params[0]].items()}
    sd = opt.state_dict()
    out["state_dict_keys"] = list(sd["state"]), list(sd["state"][0]) if sd["state"] else []
    out["param_groups"] = clean(torch, sd["param_groups"])
    out["repr"] = repr(opt)
    return out


def _summary(torch, value):
    """A state value: numbers as they are, tensors with their dtype; a list (LBFGS's history) as its length, the
    number of its Nones and its last two entries."""
    if isinstance(value, list):
        return {"list": len(value), "nones": sum(v is None for v in value),
                "last": [_summary(torch, v) for v in value if v is not None][-2:]}
    if isinstance(value, torch.Tensor):
        return {"tensor": value.detach().reshape(-1).tolist(), "dtype": str(value.dtype), "shape": list(value.shape)}
    return {type(value).__name__: value}


# -- Rprop, ASGD -------------------------------------------------------------------------------------------------

TRAJECTORY_CASES = {
    "Rprop": ("Rprop", {}),
    "Rprop_options": ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2), "maximize": True}),
    "Rprop_groups": ("Rprop", "groups"),
    "ASGD": ("ASGD", {}),
    "ASGD_options": ("ASGD", {"lr": 0.05, "lambd": 1e-2, "alpha": 0.5, "t0": 5, "weight_decay": 0.1}),
    "ASGD_maximize": ("ASGD", {"lr": 0.02, "t0": 0, "maximize": True}),
    "ASGD_groups": ("ASGD", "groups"),
}


SNAPSHOTS = (1, 2, 3, 5, 10, 20, 30)


def trajectory(torch, cls_name, kwargs, steps=30):
    """steps updates of two parameters from gradients cos(0.5 t + 0.3 i + k) * (k + 1), with sign flips so that
    Rprop's step sizes both grow and shrink; the parameters after the SNAPSHOTS steps, the final state_dict."""
    params = [wave(torch, (2, 3), 0.0).requires_grad_(), wave(torch, (4,), 2.0, 0.5).requires_grad_()]
    cls = getattr(torch.optim, cls_name)
    if kwargs == "groups":
        opt = cls([{"params": [params[0]]}, {"params": [params[1]], "lr": 0.003}], lr=0.02)
    else:
        opt = cls(params, **kwargs)
    out = {"params": []}
    for t in range(1, steps + 1):
        for k, p in enumerate(params):
            n = p.numel()
            g = np.cos(0.5 * t + 0.3 * np.arange(n, dtype=np.float64) + k) * (k + 1)
            p.grad = torch.tensor(g.astype(np.float32).reshape(tuple(p.shape)))
        opt.step()
        if t in SNAPSHOTS:
            out["params"].append([p.detach().reshape(-1).tolist() for p in params])
    sd = opt.state_dict()
    out["state"] = {str(i): {key: _summary(torch, v) for key, v in s.items()} for i, s in sd["state"].items()}
    out["param_groups"] = clean(torch, sd["param_groups"])
    out["defaults"] = clean(torch, opt.defaults)
    return out


def sparse_adam(torch):
    """SparseAdam: defaults, a step without gradients, then the dense-gradient error with nothing changed."""
    p = wave(torch, (3,), 0.0).requires_grad_()
    opt = torch.optim.SparseAdam([p])
    out = {"defaults": clean(torch, opt.defaults), "no_grad_step": opt.step(lambda: 1.5)}
    p.grad = torch.ones(3)
    try:
        opt.step()
    except Exception as e:  # noqa: BLE001
        out["error"] = [type(e).__name__, str(e)]
    out["state"] = len(opt.state)
    out["p"] = p.detach().tolist()
    out["state_dict"] = clean(torch, opt.state_dict())
    return out


# -- swa_utils ---------------------------------------------------------------------------------------------------


def _bn_model(torch):
    return set_weights(torch, torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                                                  torch.nn.ReLU(), torch.nn.Linear(4, 2)))


AVERAGED_CASES = {
    "swa": "AveragedModel(model)",
    "ema_multi": "AveragedModel(model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.9))",
    "ema_multi_buffers": "AveragedModel(model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.75), use_buffers=True)",
    "ema_avg_fn": "AveragedModel(model, avg_fn=swa_utils.get_ema_avg_fn(0.9))",
    "swa_multi": "AveragedModel(model, multi_avg_fn=swa_utils.get_swa_multi_avg_fn())",
    "swa_avg_fn_buffers": "AveragedModel(model, avg_fn=swa_utils.get_swa_avg_fn(), use_buffers=True)",
}


def averaged(torch, expression, updates=4):
    """Train-mode forwards move the model's weights and BatchNorm statistics; the averaged model's output after
    each update_parameters, its state_dict after the last."""
    swa_utils = torch.optim.swa_utils
    model = _bn_model(torch)
    avg = eval(expression, {"AveragedModel": swa_utils.AveragedModel, "swa_utils": swa_utils, "model": model})
    x = wave(torch, (5, 3), 3.0)
    out = {"repr": repr(avg), "outputs": []}
    for k in range(updates):
        with torch.no_grad():
            for i, p in enumerate(model.parameters()):
                p.copy_(wave(torch, tuple(p.shape), 10 * k + i, 0.5))
        model.train()
        model(x + k)
        avg.update_parameters(model)
        avg.eval()
        out["outputs"].append(avg(x).detach().reshape(-1).tolist())
    out["state_dict"] = {name: _summary(torch, v) for name, v in avg.state_dict().items()}
    return out


SWALR_CASES = {
    "cos": "SWALR(opt, swa_lr=0.05)",
    "linear": "SWALR(opt, swa_lr=0.05, anneal_epochs=4, anneal_strategy='linear')",
    "zero_epochs": "SWALR(opt, swa_lr=0.01, anneal_epochs=0)",
    "per_group": "SWALR(opt, swa_lr=[0.05, 0.2], anneal_epochs=3)",
}


def swalr(torch, expression, steps=14):
    """The lrs (values and their printed form) for steps epochs, then the scheduler's state_dict."""
    p, q = torch.zeros(2, requires_grad=True), torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.3}], lr=0.5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sched = eval(expression, {"SWALR": torch.optim.swa_utils.SWALR, "opt": opt})
        lrs = [sched.get_last_lr()]
        for _ in range(steps):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr())
    state = sched.state_dict()
    return {"lrs": lrs, "printed": [[str(v) for v in row] for row in lrs], "warnings": [str(w.message)
            for w in caught], "state_dict": sorted(state), "anneal_strategy": state["_anneal_strategy"],
            "swa_lr": [g["swa_lr"] for g in opt.param_groups]}


def update_bn(torch):
    """update_bn over a loader of (input, target) batches and one of bare inputs: BatchNorm statistics, momentum
    and training mode afterwards."""
    swa_utils = torch.optim.swa_utils
    out = {}
    for name, as_tuple in (("tuples", True), ("inputs", False)):
        model = _bn_model(torch)
        model.eval()
        batches = [wave(torch, (6, 3), k, 1.0, 0.2 * k) for k in range(3)]
        loader = [(b, torch.zeros(6)) for b in batches] if as_tuple else batches
        swa_utils.update_bn(loader, model)
        bn = model[1]
        out[name] = {"running_mean": bn.running_mean.tolist(), "running_var": bn.running_var.tolist(),
                     "num_batches_tracked": int(bn.num_batches_tracked), "momentum": bn.momentum,
                     "training": model.training}
    plain = torch.nn.Linear(2, 2)
    out["no_bn"] = swa_utils.update_bn([torch.ones(1, 2)], plain)
    return out


ERRORS = [
    "torch.optim.LBFGS([p], lr=-1)",
    "torch.optim.LBFGS([{'params': [p]}, {'params': [q]}])",
    "torch.optim.LBFGS([p], line_search_fn='armijo').step(closure)",
    "torch.optim.LBFGS([p]).step()",
    "torch.optim.LBFGS([p], max_iter=0).step(lambda: 1.0)",
    "torch.optim.Rprop([p], lr=-0.1)",
    "torch.optim.Rprop([p], etas=(1.5, 1.2))",
    "torch.optim.Rprop([p], etas=(0.5, 0.9))",
    "torch.optim.Rprop([p], etas=(0.5,))",
    "torch.optim.ASGD([p], lr=-1)",
    "torch.optim.ASGD([p], weight_decay=-1)",
    "torch.optim.SparseAdam([p], lr=0)",
    "torch.optim.SparseAdam([p], eps=0)",
    "torch.optim.SparseAdam([p], betas=(1.0, 0.9))",
    "torch.optim.SparseAdam([p], betas=(0.9, -0.1))",
    "torch.optim.SparseAdam([])",
    "torch.optim.swa_utils.get_ema_multi_avg_fn(1.5)",
    "torch.optim.swa_utils.get_ema_avg_fn(-0.1)",
    "torch.optim.swa_utils.AveragedModel(torch.nn.Linear(2, 2), avg_fn=swa_utils.get_swa_avg_fn(), "
    "multi_avg_fn=swa_utils.get_swa_multi_avg_fn())",
    "torch.optim.swa_utils.SWALR(torch.optim.SGD([p], lr=0.1), swa_lr=0.05, anneal_strategy='exp')",
    "torch.optim.swa_utils.SWALR(torch.optim.SGD([p], lr=0.1), swa_lr=0.05, anneal_epochs=-1)",
    "torch.optim.swa_utils.SWALR(torch.optim.SGD([p], lr=0.1), swa_lr=0.05, anneal_epochs=2.0)",
    "torch.optim.swa_utils.SWALR(torch.optim.SGD([p], lr=0.1), swa_lr=[0.05, 0.1])",
]


def error(torch, expression):
    """[exception type name, message] of an expression that raises (else what it gives, if a number)."""
    p, q = torch.ones(2, requires_grad=True), torch.ones(1, requires_grad=True)

    def closure():
        loss = (p * p).sum()
        loss.backward()
        return loss
    try:
        result = eval(expression, {"torch": torch, "p": p, "q": q, "closure": closure,
                                   "swa_utils": torch.optim.swa_utils})
    except Exception as e:          # noqa: BLE001
        return [type(e).__name__, str(e)]
    return result if isinstance(result, float) else None


def dumps(data):
    """Indented JSON with every innermost list kept on one line."""
    def one_line(match):
        return re.sub(r"\s*\n\s*", " ", match.group(0)).replace("[ ", "[").replace(" ]", "]")
    return re.sub(r"\[[^\[\]{}]*\]", one_line, json.dumps(data, indent=1, allow_nan=False)) + "\n"


def main():
    import torch
    torch.manual_seed(0)
    out = {"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
           "lbfgs": {name: lbfgs_run(torch, *case) for name, case in LBFGS_CASES.items()},
           "trajectories": {name: trajectory(torch, *case) for name, case in TRAJECTORY_CASES.items()},
           "sparse_adam": sparse_adam(torch),
           "averaged": {name: averaged(torch, e) for name, e in AVERAGED_CASES.items()},
           "swalr": {name: swalr(torch, e) for name, e in SWALR_CASES.items()},
           "update_bn": update_bn(torch),
           "errors": {e: error(torch, e) for e in ERRORS}}
    OUT.write_text(dumps(clean(torch, out)))
    print(f"{OUT.name}: {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
