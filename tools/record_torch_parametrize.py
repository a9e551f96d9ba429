"""Record real PyTorch's torch.nn.utils.parametrize, parametrizations (weight_norm, spectral_norm), the older
weight_norm / spectral_norm hooks and torch.nn.utils.prune on a table of scenarios into
tests/fixtures/pytorch/parametrize.json; tests/torch/test_parametrize.py runs the same scenario and error functions
with minifp.torch and compares.

    KERAS_BACKEND=torch /work/torchenv/bin/python tools/record_torch_parametrize.py

Each scenario builds a small module from float32 values drawn here once (stored in the fixture), applies the
utility and records: the class name and repr, state_dict keys, named_parameters and named_buffers, the forward
output, the gradients after one backward, the parameters (and buffers) after three SGD steps, and what the removal
functions leave. Spectral normalisation starts its power iteration from random u and v: the recorder keeps the
u, v PyTorch drew (`start`), and the test loads them into minifp's module before the first forward. Random pruning
records counts of zeros only. Error cases: the exception's type and message.
"""
import copy
import importlib
import json
import pickle
import sys
import warnings
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pytorch" / "parametrize.json"


def _f32(a):
    return np.asarray(a, np.float32)


def inputs():
    """{name: float32 array} every scenario draws its weights and inputs from."""
    rng = np.random.default_rng(2026)
    n = rng.standard_normal
    return {"w44": _f32(n((4, 4)) * 0.5), "b4": _f32(n(4) * 0.1), "x34": _f32(n((3, 4))),
            "w35": _f32(n((3, 5)) * 0.5), "b3": _f32(n(3) * 0.1), "x25": _f32(n((2, 5))),
            "w65": _f32(n((6, 5)) * 0.5), "b6": _f32(n(6) * 0.1),
            "wc": _f32(n((3, 2, 2, 2)) * 0.3), "bc": _f32(n(3) * 0.1), "xc": _f32(n((1, 2, 3, 3))),
            "wt": _f32(n((2, 3, 2, 2)) * 0.3), "bt": _f32(n(3) * 0.1)}


def _short(a):
    """float32 values as the shortest decimals that read back as them (a smaller fixture)."""
    return [float(str(v)) for v in np.asarray(a, np.float32).reshape(-1)]


def _array(t):
    t = t.detach()
    return {"dtype": str(t.dtype), "shape": list(t.shape), "values": _short(t.float().numpy())}


def _set(torch, module, **values):
    """module's tensors set from the drawn arrays (before any utility is applied)."""
    with torch.no_grad():
        for name, value in values.items():
            getattr(module, name).copy_(torch.tensor(np.asarray(value).tolist()))


def _linear(torch, data, w="w44", b="b4"):
    m = torch.nn.Linear(data[w].shape[1], data[w].shape[0])
    _set(torch, m, weight=data[w], bias=data[b])
    return m


def _conv(torch, data):
    m = torch.nn.Conv2d(2, 3, 2)
    _set(torch, m, weight=data["wc"], bias=data["bc"])
    return m


def _conv_transpose(torch, data):
    m = torch.nn.ConvTranspose2d(2, 3, 2)
    _set(torch, m, weight=data["wt"], bias=data["bt"])
    return m


def _describe(m):
    return {"class": type(m).__name__, "repr": repr(m), "state_dict": list(m.state_dict()),
            "parameters": [name for name, _ in m.named_parameters()],
            "buffers": [name for name, _ in m.named_buffers()],
            "pre_hooks": [type(h).__name__ for h in m._forward_pre_hooks.values()]}


def _train(torch, m, x, steps=3, lr=0.1):
    """Forward, one backward (the gradients), then `steps` SGD steps; everything as recorded arrays."""
    out = m(x)
    out.square().mean().backward()
    got = {"forward": _array(out), "grads": {k: _array(p.grad) for k, p in m.named_parameters()}}
    opt = torch.optim.SGD(m.parameters(), lr=lr)
    opt.zero_grad()
    for _ in range(steps):
        m(x).square().mean().backward()
        opt.step()
        opt.zero_grad()
    got["trained"] = {k: _array(v) for k, v in m.state_dict().items()}
    return got


# ---- parametrizations of one's own ----------------------------------------------------------------------------


def symmetric(torch):
    """A parametrization making a square matrix symmetric (PyTorch's tutorial's), without right_inverse."""
    class Symmetric(torch.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)
    return Symmetric()


def scaled(torch, factor):
    """X * factor, with right_inverse X / factor (exact for powers of two)."""
    class Scale(torch.nn.Module):
        def forward(self, X):
            return X * factor

        def right_inverse(self, X):
            return X / factor
    return Scale()


def gram(torch):
    """X.T @ X: changes the shape, so it needs unsafe=True."""
    class Gram(torch.nn.Module):
        def forward(self, X):
            return X.t() @ X
    return Gram()


def half(torch):
    """Changes the dtype: refused without unsafe."""
    class Half(torch.nn.Module):
        def forward(self, X):
            return X.half()
    return Half()


def split(torch):
    """Two originals (right_inverse returns the rows' norms and directions), multiplied back together."""
    class Split(torch.nn.Module):
        def forward(self, a, b):
            return a * b

        def right_inverse(self, X):
            norm = X.norm(dim=1, keepdim=True)
            return norm, X / norm
    return Split()


def scenario(torch, name, data, start=None):
    """Everything recorded about one scenario, under the torch module given (start: spectral norm's u, v)."""
    P = torch.nn.utils.parametrize
    x = torch.tensor(data["x34"].tolist())
    got = {}
    if name == "symmetric":
        m = _linear(torch, data)
        weight = m.weight
        P.register_parametrization(m, "weight", symmetric(torch))
        got["describe"] = _describe(m)
        got["is_parametrized"] = [P.is_parametrized(m), P.is_parametrized(m, "weight"), P.is_parametrized(m, "bias")]
        got["original_is_the_parameter"] = m.parametrizations.weight.original is weight
        got.update(_train(torch, m, x))
        got["weight"] = _array(m.weight)
        with P.cached():
            got["cached_same"] = m.weight is m.weight
        got["uncached_same"] = m.weight is m.weight
        got["type_before"] = P.type_before_parametrizations(m).__name__
        other = P.transfer_parametrizations_and_params(m, torch.nn.Linear(4, 4))
        got["transferred"] = _describe(other) | {"same": bool(torch.equal(other.weight, m.weight))}
        replica = copy.deepcopy(m)
        got["deepcopy"] = [type(replica).__name__, bool(torch.equal(replica.weight, m.weight)),
                           replica.parametrizations.weight.original is m.parametrizations.weight.original]
        P.remove_parametrizations(m, "weight")
        got["removed"] = _describe(m) | {"weight": _array(m.weight), "is_parameter": type(m.weight).__name__}
    elif name == "chain_right_inverse":
        m = _linear(torch, data)
        P.register_parametrization(m, "weight", scaled(torch, 2.0))
        P.register_parametrization(m, "weight", symmetric(torch))
        got["describe"] = _describe(m)
        got["original"] = _array(m.parametrizations.weight.original)
        got.update(_train(torch, m, x))
        P.remove_parametrizations(m, "weight", leave_parametrized=False)
        got["removed"] = _describe(m) | {"weight": _array(m.weight)}
    elif name == "assign_right_inverse":
        m = P.register_parametrization(_linear(torch, data), "weight", scaled(torch, 4.0))
        original = m.parametrizations.weight.original
        m.weight = torch.tensor(data["w44"].tolist()) * 2
        got["original"] = _array(m.parametrizations.weight.original)
        got["same_original"] = m.parametrizations.weight.original is original
        got["weight"] = _array(m.weight)
        got.update(_train(torch, m, x))
    elif name == "unsafe_shape":
        m = _linear(torch, data, "w35", "b3")
        P.register_parametrization(m, "weight", gram(torch), unsafe=True)
        got["describe"] = _describe(m)
        got["weight"] = _array(m.weight)
        got["unsafe"] = m.parametrizations.weight.unsafe
    elif name == "several_originals":
        m = P.register_parametrization(_linear(torch, data), "weight", split(torch))
        got["describe"] = _describe(m)
        got["ntensors"] = m.parametrizations.weight.ntensors
        got.update(_train(torch, m, x))
        P.remove_parametrizations(m, "weight")
        got["removed"] = _describe(m) | {"weight": _array(m.weight)}
    elif name == "old_checkpoint":         # a checkpoint of the older weight_norm into the newer one
        old = _linear(torch, data, "w65", "b6")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.nn.utils.weight_norm(old)
        m = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(5, 6))
        got["load"] = repr(m.load_state_dict(old.state_dict()))
        got["describe"] = _describe(m)
        got["forward"] = _array(m(torch.tensor(data["x25"].tolist())))
        got["same_weight"] = bool(torch.equal(m.weight, old.weight))
    elif name == "buffer":
        m = torch.nn.BatchNorm1d(4)
        P.register_parametrization(m, "running_var", scaled(torch, 2.0))
        got["describe"] = _describe(m)
        got["running_var"] = _array(m.running_var)
    else:
        got = norms(torch, name, data, start) if name in NORMS else pruning(torch, name, data)
    return got


# ---- weight and spectral normalisation ------------------------------------------------------------------------

NORMS = ("weight_norm", "weight_norm_dim_none", "weight_norm_conv", "weight_norm_dim1", "weight_norm_half",
         "spectral_norm", "spectral_norm_bfloat16",
         "spectral_norm_conv", "spectral_norm_eval", "spectral_norm_transpose", "old_weight_norm",
         "old_weight_norm_conv", "old_spectral_norm", "old_spectral_norm_conv")


def _load_uv(torch, m, start):
    """Spectral norm's u and v set to the recorded PyTorch ones (minifp draws its own)."""
    with torch.no_grad():
        for key, value in start.items():
            m.state_dict(keep_vars=True)[key].copy_(torch.tensor(value["values"]).reshape(value["shape"]))


def norms(torch, name, data, start=None):
    """weight_norm and spectral_norm, new and old, on a Linear or a Conv2d."""
    utils, PN = torch.nn.utils, torch.nn.utils.parametrizations
    linear = name in ("weight_norm", "weight_norm_dim_none", "weight_norm_dim1", "spectral_norm",
                      "spectral_norm_eval", "old_weight_norm", "old_spectral_norm", "weight_norm_half",
                      "spectral_norm_bfloat16")
    x = torch.tensor((data["x25"] if linear else data["xc"]).tolist())
    m = _linear(torch, data, "w65", "b6") if linear else _conv(torch, data)
    if name.endswith(("_half", "_bfloat16")):         # the whole module and its input in a 16-bit type
        dtype = torch.float16 if name.endswith("_half") else torch.bfloat16
        m, x = m.to(dtype), x.to(dtype)
    if name == "spectral_norm_transpose":
        m = _conv_transpose(torch, data)
    got = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if name.startswith("weight_norm"):
            PN.weight_norm(m, dim={"weight_norm_dim_none": None, "weight_norm_dim1": 1}.get(name, 0))
        elif name.startswith("spectral_norm"):
            PN.spectral_norm(m)
        elif name.startswith("old_weight_norm"):
            utils.weight_norm(m)
        else:
            utils.spectral_norm(m)
    got["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    got["describe"] = _describe(m)
    uv = [k for k in m.state_dict() if k.endswith(("_u", "_v"))]
    if "spectral" in name and start is None:          # recording: PyTorch's draws
        got["start"] = {k: _array(m.state_dict()[k]) for k in uv}
    elif "spectral" in name:                            # replaying: PyTorch's draws loaded
        _load_uv(torch, m, start)
    if name == "spectral_norm_eval":
        m.eval()
    got["weight_before_forward"] = _array(m.weight)
    got.update(_train(torch, m, x))
    if name.startswith(("weight_norm", "spectral_norm")):
        torch.nn.utils.parametrize.remove_parametrizations(m, "weight")
    elif name.startswith("old_weight_norm"):
        utils.remove_weight_norm(m)
    else:
        utils.remove_spectral_norm(m)
    got["removed"] = _describe(m) | {"weight": _array(m.weight), "is_parameter": type(m.weight).__name__}
    return got


# ---- pruning ----------------------------------------------------------------------------------------------------

PRUNING = ("l1_unstructured", "l1_unstructured_count", "l1_twice", "l1_importance", "ln_structured",
           "ln_structured_conv", "ln_structured_then_l1", "l1_then_ln_structured", "global_unstructured",
           "custom_from_mask", "identity", "random_unstructured", "random_structured")


def _prune_module(torch):
    """torch.nn.utils.prune, which `import torch` does not import (scripts say `import torch.nn.utils.prune`)."""
    return importlib.import_module(torch.__name__ + ".nn.utils.prune")


def _pruned(m, name="weight"):
    return {"mask": _array(getattr(m, name + "_mask")), "weight": _array(getattr(m, name)),
            "hooks": [type(h).__name__ for h in m._forward_pre_hooks.values()]}


def pruning(torch, name, data):
    """torch.nn.utils.prune's functions on a Linear or a Conv2d: the masks, the training, what remove leaves."""
    prune = _prune_module(torch)
    x = torch.tensor(data["x25"].tolist())
    m = _linear(torch, data, "w65", "b6")
    got = {}
    if name == "l1_unstructured":
        prune.l1_unstructured(m, "weight", amount=0.3)
    elif name == "l1_unstructured_count":
        prune.l1_unstructured(m, name="bias", amount=2)
    elif name == "l1_twice":
        prune.l1_unstructured(m, "weight", amount=0.5)
        prune.l1_unstructured(m, "weight", amount=0.5)
    elif name == "l1_importance":
        prune.l1_unstructured(m, "weight", amount=10, importance_scores=torch.tensor(data["w65"].tolist()).flip(0))
    elif name == "ln_structured":
        prune.ln_structured(m, "weight", amount=0.5, n=2, dim=0)
    elif name == "ln_structured_conv":
        m, x = _conv(torch, data), torch.tensor(data["xc"].tolist())
        prune.ln_structured(m, "weight", amount=1, n=1, dim=1)
    elif name == "ln_structured_then_l1":
        prune.ln_structured(m, "weight", amount=2, n=float("inf"), dim=0)
        prune.l1_unstructured(m, "weight", amount=0.25)
    elif name == "l1_then_ln_structured":        # a structured method acts on the channels still kept
        prune.ln_structured(m, "weight", amount=2, n=1, dim=0)
        prune.l1_unstructured(m, "weight", amount=3)
        prune.ln_structured(m, "weight", amount=0.25, n=2, dim=0)
    elif name == "global_unstructured":
        other = _linear(torch, data, "w35", "b3")
        prune.global_unstructured([(m, "weight"), (other, "weight")], pruning_method=prune.L1Unstructured,
                                  amount=0.4)
        got["other"] = _pruned(other)
    elif name == "custom_from_mask":
        prune.custom_from_mask(m, "weight", mask=torch.tensor((np.arange(30).reshape(6, 5) % 3 > 0).tolist()))
    elif name == "identity":
        prune.identity(m, "weight")
    elif name.startswith("random_"):
        if name == "random_unstructured":
            prune.random_unstructured(m, "weight", amount=0.4)
        else:
            prune.random_structured(m, "weight", amount=2, dim=1)
            got["zero_columns"] = int((m.weight_mask.sum(0) == 0).sum())
            got["zero_rows"] = int((m.weight_mask.sum(1) == 0).sum())
        got["describe"] = _describe(m)
        got["zeros"] = int((m.weight_mask == 0).sum())
        got["zeros_weight"] = int((m.weight == 0).sum())
        got["is_pruned"] = prune.is_pruned(m)
        got["mask_dtype"] = str(m.weight_mask.dtype)
        return got
    tensor = "bias" if name == "l1_unstructured_count" else "weight"
    got["describe"] = _describe(m)
    got["is_pruned"] = prune.is_pruned(torch.nn.Sequential(m))
    got["pruned"] = _pruned(m, tensor)
    got.update(_train(torch, m, x))
    prune.remove(m, tensor)
    got["removed"] = _describe(m) | {"weight": _array(getattr(m, tensor)), "is_pruned": prune.is_pruned(m),
                                     "is_parameter": type(getattr(m, tensor)).__name__}
    return got


SCENARIOS = ("symmetric", "chain_right_inverse", "assign_right_inverse", "unsafe_shape", "several_originals",
             "old_checkpoint", "buffer") + NORMS + PRUNING

ERRORS = (
    "P.register_parametrization(nn.Linear(3, 3), 'weights', Symmetric())",
    "P.register_parametrization(nn.Linear(3, 4), 'weight', Gram())",
    "P.register_parametrization(nn.Linear(3, 3), 'weight', Half())",
    "P.register_parametrization(P.register_parametrization(nn.Linear(3, 3), 'weight', Symmetric()), 'weight', "
    "Half())",
    "P.register_parametrization(nn.Linear(3, 3), 'weight', Symmetric()).__setattr__('weight', torch.ones(3, 3))",
    "P.remove_parametrizations(nn.Linear(3, 3), 'weight')",
    "P.remove_parametrizations(P.register_parametrization(nn.Linear(3, 3), 'weight', Symmetric()), 'bias')",
    "P.remove_parametrizations(PN.weight_norm(nn.Linear(3, 3)), 'weight', leave_parametrized=False)",
    "P.ParametrizationList([], torch.ones(2))",
    "pickle.dumps(P.register_parametrization(nn.Linear(3, 3), 'weight', Symmetric()))",
    "nn.Linear(3, 3).load_state_dict(utils.weight_norm(nn.Linear(3, 3)).state_dict())",
    "PN.spectral_norm(nn.Linear(3, 3), name='w')",
    "PN.spectral_norm(nn.Linear(3, 3), n_power_iterations=0)",
    "PN.spectral_norm(nn.Linear(3, 3), dim=2)",
    "utils.weight_norm(utils.weight_norm(nn.Linear(3, 3)))",
    "utils.remove_weight_norm(nn.Linear(3, 3))",
    "utils.spectral_norm(utils.spectral_norm(nn.Linear(3, 3)))",
    "utils.spectral_norm(nn.Linear(3, 3), n_power_iterations=0)",
    "utils.spectral_norm(nn.Linear(3, 3, bias=False), name='bias')",
    "utils.remove_spectral_norm(nn.Linear(3, 3))",
    "prune.l1_unstructured(nn.Linear(3, 3), 'weight', amount=1.5)",
    "prune.l1_unstructured(nn.Linear(3, 3), 'weight', amount=-1)",
    "prune.l1_unstructured(nn.Linear(3, 3), 'weight', amount='a')",
    "prune.l1_unstructured(nn.Linear(3, 3), 'weight', amount=10)",
    "prune.ln_structured(nn.Linear(3, 3), 'bias', amount=1, n=2, dim=0)",
    "prune.ln_structured(nn.Linear(3, 3), 'weight', amount=1, n=2, dim=2)",
    "prune.random_structured(nn.Linear(3, 3), 'weight', amount=4, dim=0)",
    "prune.remove(nn.Linear(3, 3), 'weight')",
    "prune.l1_unstructured(nn.Linear(3, 3), 'weight', amount=1, importance_scores=torch.ones(3))",
    "prune.custom_from_mask(nn.Linear(3, 3), 'weight', mask=torch.ones(2, 2))",
    "prune.L1Unstructured(0.5).prune(torch.ones(3), importance_scores=torch.ones(2))",
    "prune.global_unstructured(5, prune.L1Unstructured, amount=1)",
    "prune.global_unstructured([(nn.Linear(3, 3), 'weight')], prune.L1Unstructured, importance_scores=[], amount=1)",
    "prune.global_unstructured([(nn.Linear(3, 3), 'weight')], prune.LnStructured, amount=1, n=2, dim=0)",
)


def error(torch, expression):
    """(type name, message) of the error the expression raises."""
    namespace = {"torch": torch, "nn": torch.nn, "pickle": pickle, "utils": torch.nn.utils,
                 "P": torch.nn.utils.parametrize, "PN": torch.nn.utils.parametrizations, "prune": _prune_module(torch),
                 "Symmetric": lambda: symmetric(torch), "Gram": lambda: gram(torch), "Half": lambda: half(torch)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            eval(expression, namespace)
    except Exception as e:      # noqa: BLE001 (the error is what is recorded)
        return [type(e).__name__, str(e)]
    return None


def main():
    import torch
    torch.manual_seed(0)
    data = inputs()
    fixture = {"torch": torch.__version__, "inputs": {k: {"shape": list(v.shape), "values": _short(v)}
                                                               for k, v in data.items()},
               "scenarios": {}, "errors": {}}
    for name in SCENARIOS:
        fixture["scenarios"][name] = scenario(torch, name, data)
    for expression in ERRORS:
        fixture["errors"][expression] = error(torch, expression)
    OUT.write_text(json.dumps(fixture, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
