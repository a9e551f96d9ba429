"""Record real PyTorch behaviour into tests/fixtures/pytorch/*.json, the parity fixtures of minifp.torch.

Run by hand from the repository root, in a virtual environment that has PyTorch:

    python3.11 -m venv /work/torchenv
    /work/torchenv/bin/pip install torch==2.13.0 numpy          # the CPU wheel
    /work/torchenv/bin/pip install --no-deps torchvision==0.28.0 pillow
    /work/torchenv/bin/python tools/record_pytorch.py [gradscaler optimizers ... (default: all)]

The torchvision 0.28.0 wheel on this machine is a CUDA build whose C ops cannot load on CPU torch;
import_torchvision() works around the import error that causes (the models are pure Python). vision.json
keeps the float32 logits of every CPU it was recorded on (AVX512 with torchvision 0.28.0, AVX2 with 0.29.1):
`python tools/record_pytorch.py vision` on another CPU adds its own. The classifier's weights carry a
power-of-two HEAD_SCALE; under a new one, the other CPUs' logits are carried over times the ratio (exact), and
this CPU's fresh logits must equal its old ones times it, bit for bit (AVX512's were carried from 1 to 2**-4).

CI does not run this script (CI has no PyTorch); the tests read only the committed JSON files.
The output is deterministic: one CPU thread, no random numbers. Every input and weight comes from
the formula named in the file's "formulas" entry, with its arguments stored beside the values, so a
test can rebuild it in NumPy. Non-finite floats are written as the strings "inf", "-inf" and "nan".
"""

import importlib.util
import json
import math
import pickle
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "pytorch"

WAVE = ("wave(shape, k, scale, freq, offset, quad) = float32(offset + scale*sin(freq*i + k + quad*((i*i) % 10007))) "
        "with i = arange(n) as int64 (i*i % 10007 exact in integers, then float64), n = prod(shape); the phase and "
        "the sine are computed in float64, rounded once to float32, then reshaped (C order) to shape. quad=0 gives "
        "a plain sine; quad != 0 scrambles the phase so that weight matrices are not rank 2")


def wave(shape, k, scale=0.1, freq=0.37, offset=0.0, quad=0.0):
    """The arguments of one wave() input, as stored in the JSON."""
    return {"shape": list(shape), "k": k, "scale": scale, "freq": freq, "offset": offset, "quad": quad}


def build(spec, requires_grad=False):
    """The float32 tensor that a wave() spec describes."""
    i = np.arange(int(np.prod(spec["shape"], dtype=np.int64)), dtype=np.int64)
    phase = spec["freq"] * i.astype(np.float64) + spec["k"] + spec["quad"] * ((i * i) % 10007).astype(np.float64)
    v = spec["offset"] + spec["scale"] * np.sin(phase)
    return torch.from_numpy(v.astype(np.float32).reshape(spec["shape"])).requires_grad_(requires_grad)


def clean(x):
    """A JSON-ready copy: tensors to nested lists, tuples to lists, dtypes to str, non-finite floats to str."""
    if isinstance(x, torch.Tensor):
        return clean(x.detach().cpu().tolist())
    if isinstance(x, bool) or x is None or isinstance(x, (int, str)):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if isinstance(x, (torch.dtype, torch.device)):
        return str(x)
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    if isinstance(x, dict):
        return {str(k): clean(v) for k, v in x.items()}
    raise TypeError(f"cannot store {type(x).__name__} in JSON")


def tinfo(t, values=True):
    """Shape, dtype and (optionally) values of one tensor."""
    d = {"shape": list(t.shape), "dtype": str(t.dtype)}
    if values:
        d["values"] = clean(t)
    return d


def outcome(fn):
    """Run fn and return {"error": {type, message} or None, "warnings": [...], "result": ...}."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, error = fn(), None
        except Exception as e:  # noqa: BLE001 - recording whatever PyTorch raises is the point
            result, error = None, {"type": type(e).__name__, "message": str(e)}
    d = {"error": error, "warnings": [{"category": w.category.__name__, "message": str(w.message)} for w in caught]}
    if result is not None:
        d["result"] = clean(result)
    return d


def flatten_list(match):
    """One innermost JSON list on one line (only whitespace holding a newline changes; strings hold none)."""
    text = re.sub(r"\[\s*\n\s*", "[", match.group(0))
    text = re.sub(r"\s*\n\s*\]", "]", text)
    return re.sub(r"\s*\n\s*", " ", text)


def dumps(data):
    """Indented JSON with every innermost list kept on one line."""
    return re.sub(r"\[[^\[\]{}]*\]", flatten_list, json.dumps(data, indent=1, allow_nan=False)) + "\n"


def write(name, data):
    """Write one fixture file, with torch_version first and the CPU kernel level (it can change roundings)."""
    data = {"torch_version": torch.__version__, "num_threads": torch.get_num_threads(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), **data}
    path = OUT / name
    path.write_text(dumps(data))
    print(f"{path.relative_to(OUT.parent.parent.parent)}: {path.stat().st_size} bytes")


# --------------------------------------------------------------------------------------------
# gradscaler.json

SCALER_MULT = {"finite": 1.0, "inf": math.inf, "-inf": -math.inf, "nan": math.nan}
PATTERN_A = ["finite"] * 4 + ["inf"] + ["finite"] * 3 + ["inf", "nan"] + ["finite"] * 6 + ["-inf"] + ["finite"] * 3


def record_gradscaler():
    """gradscaler.json: GradScaler('cpu') runs with inf/nan steps, getters, state_dict, misuse errors."""
    def coef(i):
        return torch.tensor(0.5 + 0.25 * math.sin(0.7 * i), dtype=torch.float32)

    def run(kwargs, pattern, unscale_first=False):
        w = torch.tensor([1.0], requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        scaler = torch.amp.GradScaler("cpu", **kwargs)
        rows = []
        for i, kind in enumerate(pattern):
            opt.zero_grad()
            g = coef(i)
            scaled = scaler.scale((w * g).sum() * SCALER_MULT[kind])
            scaled.backward()
            row = {"step": i, "kind": kind, "coef": g.item(), "scaled_loss": clean(scaled.item()),
                   "scaled_grad": clean(w.grad.item())}
            if unscale_first:
                scaler.unscale_(opt)
                row["grad_after_unscale"] = clean(w.grad.item())
            before = w.detach().clone().view(torch.int32)
            scaler.step(opt)
            states = getattr(scaler, "_per_optimizer_states", {})
            found = states[id(opt)]["found_inf_per_device"] if id(opt) in states else {}
            row["found_inf"] = bool(sum(v.item() for v in found.values())) if scaler.is_enabled() else None
            row["param_bits_unchanged"] = bool(torch.equal(before, w.detach().view(torch.int32)))
            row["grad_after_step"] = clean(w.grad.item())
            scaler.update()
            row["scale"] = scaler.get_scale()
            row["growth_tracker"] = scaler._get_growth_tracker()
            row["param"] = clean(w.item())
            rows.append(row)
        return {"kwargs": kwargs, "unscale_before_step": unscale_first, "steps": rows,
                "state_dict": clean(scaler.state_dict()),
                "state_dict_types": {k: type(v).__name__ for k, v in scaler.state_dict().items()}}

    scenarios = {
        "defaults_growth_interval_3": run({"growth_interval": 3}, PATTERN_A),
        "odd_factors": run({"init_scale": 1000.0, "growth_factor": 1.7, "backoff_factor": 0.3, "growth_interval": 2},
                           PATTERN_A),
        "disabled": run({"enabled": False}, ["finite"] * 19 + ["inf"]),
        "unscale_then_step": run({"init_scale": 1024.0, "growth_interval": 3}, PATTERN_A, unscale_first=True),
        "growth_overflow_refused": run({"init_scale": 2.0 ** 127, "growth_interval": 1}, ["finite"] * 3),
        "backoff_underflow": run({"init_scale": 1.0, "backoff_factor": 1e-20}, ["inf"] * 3 + ["finite"] * 2),
    }

    def fresh(**kw):
        w = torch.tensor([1.0], requires_grad=True)
        return w, torch.optim.SGD([w], lr=0.1), torch.amp.GradScaler("cpu", **kw)

    def with_grad(w, scaler):
        scaler.scale((w * 2.0).sum()).backward()

    def step_without_scale():
        w, opt, s = fresh()
        w.grad = torch.ones(1)
        s.step(opt)

    def unscale_without_scale():
        w, opt, s = fresh()
        w.grad = torch.ones(1)
        s.unscale_(opt)

    def update_without_scale():
        fresh()[2].update()

    def update_without_inf_checks():
        w, opt, s = fresh()
        with_grad(w, s)
        s.update()

    def unscale_twice():
        w, opt, s = fresh()
        with_grad(w, s)
        s.unscale_(opt)
        s.unscale_(opt)

    def unscale_after_step():
        w, opt, s = fresh()
        with_grad(w, s)
        s.step(opt)
        s.unscale_(opt)

    def step_twice():
        w, opt, s = fresh()
        with_grad(w, s)
        s.step(opt)
        s.step(opt)

    def step_with_closure():
        w, opt, s = fresh()
        with_grad(w, s)
        s.step(opt, closure=lambda: None)

    def step_with_no_grads():
        w, opt, s = fresh()
        s.scale((w * 2.0).sum())
        s.step(opt)

    def unscale_fp16_grads():
        w = torch.tensor([1.0], dtype=torch.float16, requires_grad=True)
        opt, s = torch.optim.SGD([w], lr=0.1), torch.amp.GradScaler("cpu")
        s.scale((w * 2.0).sum()).backward()
        s.unscale_(opt)

    def pickle_between_step_and_update():
        w, opt, s = fresh()
        with_grad(w, s)
        s.step(opt)
        pickle.dumps(s)

    def update_new_scale(value):
        def f():
            w, opt, s = fresh()
            with_grad(w, s)
            s.step(opt)
            s.update(value)
            return s.get_scale()
        return f

    def load(sd):
        def f():
            s = fresh()[2]
            s.load_state_dict(sd)
            return s.state_dict()
        return f

    misuse = {
        "step_without_scale": outcome(step_without_scale),
        "unscale_without_scale": outcome(unscale_without_scale),
        "update_without_scale": outcome(update_without_scale),
        "update_without_inf_checks": outcome(update_without_inf_checks),
        "unscale_twice_before_update": outcome(unscale_twice),
        "unscale_after_step": outcome(unscale_after_step),
        "step_twice_without_update": outcome(step_twice),
        "step_with_closure_kwarg": outcome(step_with_closure),
        "step_with_no_grads": outcome(step_with_no_grads),
        "unscale_fp16_grads": outcome(unscale_fp16_grads),
        "scale_python_float": outcome(lambda: fresh()[2].scale(3.0)),
        "growth_factor_1": outcome(lambda: torch.amp.GradScaler("cpu", growth_factor=1.0)),
        "backoff_factor_1": outcome(lambda: torch.amp.GradScaler("cpu", backoff_factor=1.0)),
        "load_empty_state_dict": outcome(load({})),
        "load_state_dict_missing_keys": outcome(load({"scale": 8.0})),
        "load_full_state_dict": outcome(load({"scale": 8.0, "growth_factor": 3.0, "backoff_factor": 0.25,
                                              "growth_interval": 7, "_growth_tracker": 2})),
        "pickle_between_step_and_update": outcome(pickle_between_step_and_update),
        "update_new_scale_float_8": outcome(update_new_scale(8.0)),
        "update_new_scale_int_8": outcome(update_new_scale(8)),
        "update_new_scale_tensor_8": outcome(update_new_scale(torch.tensor(8.0))),
        "update_new_scale_tensor_2_elements": outcome(update_new_scale(torch.tensor([8.0, 9.0]))),
        "cuda_scaler_without_cuda": outcome(lambda: torch.amp.GradScaler("cuda").is_enabled()),
    }

    scale_dtypes = {}
    inputs = {
        "float16_0dim_2": torch.tensor(2.0, dtype=torch.float16),
        "float16_1dim_2": torch.tensor([2.0], dtype=torch.float16),
        "bfloat16_0dim_2": torch.tensor(2.0, dtype=torch.bfloat16),
        "bfloat16_1dim_2": torch.tensor([2.0], dtype=torch.bfloat16),
        "float32_0dim_2": torch.tensor(2.0),
        "float32_1dim_2": torch.tensor([2.0]),
        "float64_0dim_2": torch.tensor(2.0, dtype=torch.float64),
    }
    for name, t in inputs.items():
        out = torch.amp.GradScaler("cpu").scale(t)
        scale_dtypes[name] = {"input_dtype": str(t.dtype), "output": tinfo(out)}
    s = torch.amp.GradScaler("cpu")
    containers = {
        "list": type(s.scale([torch.tensor(1.0), torch.tensor(2.0)])).__name__,
        "tuple": type(s.scale((torch.tensor(1.0),))).__name__,
        "generator": type(s.scale(t for t in [torch.tensor(1.0)])).__name__,
    }
    loss = torch.tensor(3.0)
    disabled = torch.amp.GradScaler("cpu", enabled=False)
    getters = {
        "fresh": {"get_scale": torch.amp.GradScaler("cpu").get_scale(),
                  "growth_tracker": torch.amp.GradScaler("cpu")._get_growth_tracker(),
                  "get_growth_factor": s.get_growth_factor(), "get_backoff_factor": s.get_backoff_factor(),
                  "get_growth_interval": s.get_growth_interval(), "is_enabled": s.is_enabled(),
                  "state_dict_before_scale": clean(torch.amp.GradScaler("cpu").state_dict())},
        "disabled": {"get_scale": disabled.get_scale(), "growth_tracker": disabled._get_growth_tracker(),
                     "is_enabled": disabled.is_enabled(), "state_dict": clean(disabled.state_dict()),
                     "scale_returns_same_object": disabled.scale(loss) is loss},
    }
    write("gradscaler.json", {
        "model": ("w = float32 tensor [1.0] (requires_grad), SGD(lr=0.1); each step: zero_grad; "
                  "loss = (w * coef).sum() * mult, coef = float32(0.5 + 0.25*sin(0.7*i)) as a 0-dim float32 tensor, "
                  "mult = 1, inf, -inf or nan by the step's kind; scaler.scale(loss).backward(); "
                  "[scaler.unscale_(opt)]; scaler.step(opt); scaler.update()"),
        "found_inf_means": ("the scaler's found_inf after scaler.step, i.e. optimizer.step was skipped "
                            "(None when disabled)"),
        "scenarios": scenarios, "misuse": misuse, "scale_output": scale_dtypes,
        "scale_container_types": containers, "getters": getters,
    })


# --------------------------------------------------------------------------------------------
# optimizers.json

OPT_CONFIGS = {
    "SGD": {"plain": {}, "momentum": {"momentum": 0.9}, "momentum_dampening": {"momentum": 0.9, "dampening": 0.1},
            "nesterov": {"momentum": 0.9, "nesterov": True}, "weight_decay": {"weight_decay": 0.01},
            "maximize": {"maximize": True},
            "combined": {"momentum": 0.9, "nesterov": True, "weight_decay": 0.01, "maximize": True}},
    "Adam": {"defaults": {}, "amsgrad": {"amsgrad": True}, "weight_decay": {"weight_decay": 0.1},
             "maximize": {"maximize": True},
             "combined": {"amsgrad": True, "weight_decay": 0.1, "maximize": True, "betas": (0.8, 0.99), "eps": 1e-6}},
    "AdamW": {"defaults": {}, "amsgrad": {"amsgrad": True}, "weight_decay": {"weight_decay": 0.1},
              "maximize": {"maximize": True},
              "combined": {"amsgrad": True, "weight_decay": 0.1, "maximize": True, "betas": (0.8, 0.99), "eps": 1e-6}},
    "RMSprop": {"defaults": {}, "centered": {"centered": True}, "momentum": {"momentum": 0.9},
                "weight_decay": {"weight_decay": 0.1},
                "combined": {"centered": True, "momentum": 0.9, "weight_decay": 0.1, "alpha": 0.9, "maximize": True}},
    "Adagrad": {"defaults": {}, "lr_decay": {"lr_decay": 0.01}, "weight_decay": {"weight_decay": 0.1},
                "initial_accumulator_value": {"initial_accumulator_value": 0.1},
                "combined": {"lr_decay": 0.01, "weight_decay": 0.1, "initial_accumulator_value": 0.1,
                             "maximize": True}},
}
# optimizers_more.json: issue 32's optimizers, recorded the same way.
OPT_MORE = {
    "Adadelta": {"defaults": {}, "rho_eps": {"rho": 0.8, "eps": 1e-4}, "weight_decay": {"weight_decay": 0.1},
                 "maximize": {"maximize": True}, "combined": {"rho": 0.95, "weight_decay": 0.1, "maximize": True}},
    "Adamax": {"defaults": {}, "weight_decay": {"weight_decay": 0.1}, "maximize": {"maximize": True},
               "combined": {"weight_decay": 0.1, "maximize": True, "betas": (0.8, 0.99), "eps": 1e-6}},
    "NAdam": {"defaults": {}, "weight_decay": {"weight_decay": 0.1},
              "decoupled": {"weight_decay": 0.1, "decoupled_weight_decay": True},
              "momentum_decay": {"momentum_decay": 0.01}, "maximize": {"maximize": True},
              "combined": {"weight_decay": 0.1, "maximize": True, "betas": (0.8, 0.99), "eps": 1e-6}},
    "RAdam": {"defaults": {}, "weight_decay": {"weight_decay": 0.1},
              "decoupled": {"weight_decay": 0.1, "decoupled_weight_decay": True}, "maximize": {"maximize": True},
              "combined": {"weight_decay": 0.1, "maximize": True, "betas": (0.8, 0.9), "eps": 1e-6}},
}
OPT_LR = 0.01
OPT_PARAMS = [wave((3, 4), 0, scale=0.5), wave((4,), 1, scale=0.5)]
OPT_GRAD_SCALE = [1.0, 0.001]
OPT_RECORD_AT = [1, 2, 5, 10, 50, 100]


def record_optimizers(configs=OPT_CONFIGS, name="optimizers.json"):
    """optimizers.json: 100 steps of each optimizer option set, final state_dict, argument errors."""
    def grad(t, k, shape):
        n = int(np.prod(shape))
        v = OPT_GRAD_SCALE[k] * np.cos(0.5 * t + 0.3 * np.arange(n, dtype=np.float64) + k)
        return torch.from_numpy(v.astype(np.float32).reshape(shape))

    def state_dict_info(opt):
        sd = opt.state_dict()
        state = {str(i): {key: (tinfo(v) if isinstance(v, torch.Tensor) else {"python": clean(v)})
                          for key, v in st.items()} for i, st in sd["state"].items()}
        groups = [{"values": clean(g), "types": {k: type(v).__name__ for k, v in g.items()}}
                  for g in sd["param_groups"]]
        return {"top_keys": list(sd), "state": state, "param_groups": groups}

    runs = {}
    for cls_name, options in configs.items():
        cls = getattr(torch.optim, cls_name)
        runs[cls_name] = {}
        for cfg_name, kwargs in options.items():
            params = [build(s).requires_grad_(True) for s in OPT_PARAMS]
            opt = cls(params, lr=OPT_LR, **kwargs)
            snaps = []
            for t in range(1, max(OPT_RECORD_AT) + 1):
                for k, p in enumerate(params):
                    p.grad = grad(t, k, p.shape)
                opt.step()
                if t in OPT_RECORD_AT:
                    snaps.append({"step": t, "params": [clean(p) for p in params]})
            runs[cls_name][cfg_name] = {"kwargs": clean({"lr": OPT_LR, **kwargs}), "after_steps": snaps,
                                        "state_dict": state_dict_info(opt)}

    def p():
        return torch.zeros(2, requires_grad=True)

    def make(cls, *args, **kw):
        return lambda: cls(*args, **kw) and None

    errors = {}
    for cls_name in configs:
        cls = getattr(torch.optim, cls_name)
        e = {
            "lr_-1": outcome(make(cls, [p()], lr=-1.0)),
            "weight_decay_-1": outcome(make(cls, [p()], lr=0.1, weight_decay=-1.0)),
            "empty_list": outcome(make(cls, [], lr=0.1)),
            "bare_tensor": outcome(make(cls, p(), lr=0.1)),
            "set_of_params_top_level": outcome(make(cls, {p()}, lr=0.1)),
            "set_of_params_in_group": outcome(lambda c=cls, q=p(): c([{"params": {q}}], lr=0.1) and None),
            "python_float_param": outcome(make(cls, [1.0], lr=0.1)),
            "non_leaf_param": outcome(make(cls, [p() * 2], lr=0.1)),
            "param_in_two_groups": outcome(lambda c=cls, q=p(): c([{"params": [q]}, {"params": [q]}], lr=0.1) and None),
            "duplicate_param_in_group": outcome(lambda c=cls, q=p(): c([q, q], lr=0.1) and None),
        }
        if cls_name in ("SGD", "RMSprop"):
            e["momentum_-1"] = outcome(make(cls, [p()], lr=0.1, momentum=-1.0))
        if cls_name in ("Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam"):
            e["eps_-1"] = outcome(make(cls, [p()], lr=0.1, eps=-1.0))
        if cls_name in ("Adam", "AdamW", "Adamax", "NAdam", "RAdam"):
            e["betas_1.0_0.9"] = outcome(make(cls, [p()], lr=0.1, betas=(1.0, 0.9)))
            e["betas_0.9_1.0"] = outcome(make(cls, [p()], lr=0.1, betas=(0.9, 1.0)))
        if cls_name == "SGD":
            e["nesterov_momentum_0"] = outcome(make(cls, [p()], lr=0.1, nesterov=True))
            e["nesterov_dampening_0.1"] = outcome(make(cls, [p()], lr=0.1, momentum=0.9, dampening=0.1,
                                                       nesterov=True))
        if cls_name == "RMSprop":
            e["alpha_-1"] = outcome(make(cls, [p()], lr=0.1, alpha=-1.0))
        if cls_name == "Adagrad":
            e["lr_decay_-1"] = outcome(make(cls, [p()], lr=0.1, lr_decay=-1.0))
            e["initial_accumulator_value_-1"] = outcome(make(cls, [p()], lr=0.1, initial_accumulator_value=-1.0))
        if cls_name == "Adadelta":
            e["rho_1.5"] = outcome(make(cls, [p()], lr=0.1, rho=1.5))
        if cls_name == "NAdam":
            e["momentum_decay_-1"] = outcome(make(cls, [p()], lr=0.1, momentum_decay=-1.0))
        errors[cls_name] = e

    defaults = {n: clean(getattr(torch.optim, n)([p()]).defaults) for n in configs}
    write(name, {
        "formulas": {"wave": WAVE,
                     "grad": ("grad of param k at step t (t = 1..100) = float32(gscale[k] * cos(0.5*t + 0.3*arange(n) "
                              "+ k)), computed in float64, reshaped to the param's shape; set as p.grad before "
                              "each opt.step()")},
        "params": OPT_PARAMS, "gscale": OPT_GRAD_SCALE, "record_at": OPT_RECORD_AT,
        "note": "single-tensor (for-loop) CPU implementation, the default on CPU; state tensors listed with values",
        "runs": runs, "bare_construction_defaults": defaults, "errors": errors,
    })


# --------------------------------------------------------------------------------------------
# schedulers.json

PLATEAU_MIN = [1.0, 0.9, 0.85, 0.86, 0.87, 0.88, 0.8, 0.8, 0.79995, 0.8, 0.7, 0.71, 0.72, 0.73, 0.74,
               0.6, 0.6, 0.61, 0.62, 0.5, 0.55, 0.56, 0.57, 0.58, 0.59, 0.4, 0.41, 0.42, 0.43, 0.44]
PLATEAU_MAX = [0.1, 0.2, 0.22, 0.3, 0.31, 0.32, 0.5, 0.5, 0.5, 0.56, 0.57, 0.58, 0.7, 0.7, 0.71,
               0.72, 0.73, 0.74, 0.9, 0.9, 0.9, 0.9, 0.9, 0.96, 0.97, 0.98, 0.99, 1.0, 1.0, 1.0]


def scheduler_run(make_sched, opt_kind="sgd", metrics=None, steps=30):
    """lr (momentum, betas, get_last_lr) after construction and after each opt.step(); scheduler.step()."""
    S = torch.optim.lr_scheduler
    p = torch.zeros(1, requires_grad=True)
    opt = {"sgd": lambda: torch.optim.SGD([p], lr=0.1),
           "sgd_momentum": lambda: torch.optim.SGD([p], lr=0.1, momentum=0.9),
           "adam": lambda: torch.optim.Adam([p], lr=0.1)}[opt_kind]()
    rec = {"optimizer": opt_kind, "lr": [], "momentum": [], "betas": [], "last_lr": [], "extra": []}

    def snap(sched):
        g = opt.param_groups[0]
        rec["lr"].append(g["lr"])
        if "momentum" in g and opt_kind == "sgd_momentum":
            rec["momentum"].append(g["momentum"])
        if "betas" in g:
            rec["betas"].append(list(g["betas"]))
        rec["last_lr"].append(clean(sched.get_last_lr()[0]) if hasattr(sched, "_last_lr") else None)
        if isinstance(sched, S.ReduceLROnPlateau):
            rec["extra"].append({"best": clean(sched.best), "num_bad_epochs": sched.num_bad_epochs,
                                 "cooldown_counter": sched.cooldown_counter, "last_epoch": sched.last_epoch})

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sched = make_sched(opt)
        snap(sched)
        rec["error"] = None
        for i in range(steps):
            opt.step()
            try:
                sched.step(metrics[i]) if metrics is not None else sched.step()
            except Exception as e:  # noqa: BLE001
                rec["error"] = {"at_step": i + 1, "type": type(e).__name__, "message": str(e)}
                break
            snap(sched)
    rec["warnings"] = [{"category": w.category.__name__, "message": str(w.message)} for w in caught]
    for key in ("momentum", "betas", "extra"):
        if not rec[key]:
            del rec[key]
    return rec


# schedulers_more.json: issue 32's schedulers. Each entry: the call as Python source over S (lr_scheduler) and o
# (the optimizer), the optimizer kind, the number of steps; the tests evaluate the same source.
SCHED_MORE = {
    "CosineAnnealingWarmRestarts(o, T_0=5)": ("sgd", 30),
    "CosineAnnealingWarmRestarts(o, T_0=3, T_mult=3, eta_min=0.01)": ("sgd", 40),
    "SequentialLR(o, [ConstantLR(o, factor=0.5, total_iters=3), ExponentialLR(o, gamma=0.8)], milestones=[4])":
        ("sgd", 20),
    ("SequentialLR(o, [LinearLR(o, start_factor=0.2, total_iters=3), StepLR(o, 2, 0.5), "
     "PolynomialLR(o, total_iters=6)], milestones=[3, 8])"): ("sgd", 20),
    "ChainedScheduler([ConstantLR(o, factor=0.1, total_iters=2), ExponentialLR(o, gamma=0.9)])": ("sgd", 15),
    "ChainedScheduler([LinearLR(o, start_factor=0.5, total_iters=4), CosineAnnealingLR(o, T_max=6)], optimizer=o)":
        ("sgd", 15),
    "PolynomialLR(o, total_iters=8, power=0.5)": ("sgd", 12),
    "CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4)": ("sgd_momentum", 20),
    "CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, step_size_down=5, mode='triangular2')":
        ("sgd_momentum", 30),
    "CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, mode='exp_range', gamma=0.9)": ("adam", 20),
    "CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2, cycle_momentum=False, scale_fn=lambda x: 0.5 ** x)":
        ("sgd", 12),
}
SCHED_MORE_ERRORS = {
    "CosineAnnealingWarmRestarts(o, T_0=0)": "sgd", "CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0)": "sgd",
    "CosineAnnealingWarmRestarts(o, T_0=2, eta_min='x')": "sgd",
    "SequentialLR(o, [], milestones=[])": "sgd",
    "SequentialLR(o, [ExponentialLR(o, 0.9), ExponentialLR(o, 0.8)], milestones=[])": "sgd",
    "SequentialLR(o, [ExponentialLR(o, 0.9), ReduceLROnPlateau(o)], milestones=[2])": "sgd",
    "ChainedScheduler([])": "sgd",
    "CyclicLR(o, 0.01, 0.1, mode='square')": "sgd_momentum",
    "CyclicLR(o, 0.01, 0.1)": "sgd",
    "CyclicLR(o, [0.01, 0.02], 0.1)": "sgd_momentum",
}


def record_schedulers_more():
    """schedulers_more.json: runs, errors and state_dict keys of CosineAnnealingWarmRestarts, SequentialLR,
    ChainedScheduler, PolynomialLR and CyclicLR."""
    S = torch.optim.lr_scheduler
    names = {n: getattr(S, n) for n in S.__all__}

    def maker(source):
        return lambda o: eval(source, {**names}, {"o": o, "S": S})   # noqa: S307 - our own table's source

    runs = {src: scheduler_run(maker(src), kind, steps=steps) for src, (kind, steps) in SCHED_MORE.items()}

    def optimizer(kind):
        p = torch.zeros(1, requires_grad=True)
        return (torch.optim.SGD([p], lr=0.1, momentum=0.9) if kind == "sgd_momentum" else
                torch.optim.SGD([p], lr=0.1))

    errors = {src: outcome(lambda src=src, kind=kind: maker(src)(optimizer(kind)) and None)
              for src, kind in SCHED_MORE_ERRORS.items()}
    keys = {}
    for src in ("SequentialLR(o, [ConstantLR(o, factor=0.5, total_iters=3), ExponentialLR(o, gamma=0.8)], "
                "milestones=[4])", "CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4)",
                "CosineAnnealingWarmRestarts(o, T_0=5)"):
        o = optimizer("sgd_momentum")
        sched = maker(src)(o)
        o.step()
        sched.step()
        sd = sched.state_dict()
        keys[src] = {"keys": sorted(sd), "last_epoch": sd["last_epoch"]}
    write("schedulers_more.json", {
        "setup": "as schedulers.json; each run's key is the call's Python source over o (the optimizer)",
        "runs": runs, "errors": errors, "state_dict_keys": keys,
    })


def record_schedulers():
    """schedulers.json: lr (and momentum) after each of 30 scheduler.step() calls, plus errors and warnings."""
    S = torch.optim.lr_scheduler
    run = scheduler_run

    runs = {
        "StepLR(step_size=5, gamma=0.5)": run(lambda o: S.StepLR(o, step_size=5, gamma=0.5)),
        "MultiStepLR(milestones=[3, 10], gamma=0.1)": run(lambda o: S.MultiStepLR(o, [3, 10], 0.1)),
        "ExponentialLR(gamma=0.9)": run(lambda o: S.ExponentialLR(o, 0.9)),
        "CosineAnnealingLR(T_max=10, eta_min=0.001)": run(lambda o: S.CosineAnnealingLR(o, T_max=10, eta_min=0.001)),
        "LambdaLR(lambda e: 0.95**e)": run(lambda o: S.LambdaLR(o, lambda e: 0.95 ** e)),
        "LinearLR(start_factor=0.25, total_iters=4)": run(lambda o: S.LinearLR(o, start_factor=0.25, total_iters=4)),
        "ConstantLR(factor=0.5, total_iters=4)": run(lambda o: S.ConstantLR(o, factor=0.5, total_iters=4)),
        "PolynomialLR(total_iters=10, power=2.0)": run(lambda o: S.PolynomialLR(o, total_iters=10, power=2.0)),
        "CosineAnnealingWarmRestarts(T_0=7, T_mult=2, eta_min=0.001)":
            run(lambda o: S.CosineAnnealingWarmRestarts(o, T_0=7, T_mult=2, eta_min=0.001)),
        "SequentialLR([LinearLR(start_factor=0.1, total_iters=5), CosineAnnealingLR(T_max=25)], milestones=[5])":
            run(lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, total_iters=5),
                                             S.CosineAnnealingLR(o, T_max=25)], milestones=[5])),
        "OneCycleLR(max_lr=1.0, total_steps=30), SGD momentum=0.9":
            run(lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=30), "sgd_momentum", steps=31),
        "OneCycleLR(max_lr=1.0, total_steps=30), Adam":
            run(lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=30), "adam", steps=31),
        "OneCycleLR(max_lr=1.0, total_steps=30, anneal_strategy='linear', three_phase=True), SGD momentum=0.9":
            run(lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=30, anneal_strategy="linear", three_phase=True),
                "sgd_momentum"),
        "ReduceLROnPlateau(mode='min', factor=0.5, patience=2)":
            run(lambda o: S.ReduceLROnPlateau(o, mode="min", factor=0.5, patience=2), metrics=PLATEAU_MIN),
        ("ReduceLROnPlateau(mode='max', factor=0.3, patience=1, threshold=0.05, threshold_mode='abs', "
         "cooldown=2, min_lr=0.01)"):
            run(lambda o: S.ReduceLROnPlateau(o, mode="max", factor=0.3, patience=1, threshold=0.05,
                                              threshold_mode="abs", cooldown=2, min_lr=0.01), metrics=PLATEAU_MAX),
    }

    def sgd(**kw):
        return torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1, **kw)

    def step_before_optimizer():
        sched = S.StepLR(sgd(), step_size=5)
        sched.step()

    def state_dict_of(make):
        def f():
            o = sgd(momentum=0.9)
            sched = make(o)
            for _ in range(3):
                o.step()
                sched.step()
            return {k: (clean(v) if not callable(v) else "<callable>") for k, v in sched.state_dict().items()
                    if k != "lr_lambdas"}
        return f

    errors = {
        "scheduler_step_before_optimizer_step": outcome(step_before_optimizer),
        "StepLR_not_an_optimizer": outcome(lambda: S.StepLR(object(), step_size=5) and None),
        "LinearLR_start_factor_0": outcome(lambda: S.LinearLR(sgd(), start_factor=0.0) and None),
        "LinearLR_end_factor_2": outcome(lambda: S.LinearLR(sgd(), end_factor=2.0) and None),
        "ConstantLR_factor_2": outcome(lambda: S.ConstantLR(sgd(), factor=2.0) and None),
        "ReduceLROnPlateau_factor_1": outcome(lambda: S.ReduceLROnPlateau(sgd(), factor=1.0) and None),
        "ReduceLROnPlateau_mode_avg": outcome(lambda: S.ReduceLROnPlateau(sgd(), mode="avg") and None),
        "ReduceLROnPlateau_threshold_mode_x": outcome(lambda: S.ReduceLROnPlateau(sgd(), threshold_mode="x") and None),
        "OneCycleLR_no_total_steps": outcome(lambda: S.OneCycleLR(sgd(momentum=0.9), max_lr=1.0) and None),
        "OneCycleLR_total_steps_0": outcome(lambda: S.OneCycleLR(sgd(momentum=0.9), 1.0, total_steps=0) and None),
        "OneCycleLR_pct_start_int_1": outcome(lambda: S.OneCycleLR(sgd(momentum=0.9), 1.0, 30, pct_start=1) and None),
        "OneCycleLR_anneal_exp": outcome(lambda: S.OneCycleLR(sgd(momentum=0.9), 1.0, 30, anneal_strategy="exp")
                                         and None),
        "OneCycleLR_optimizer_without_momentum": outcome(
            lambda: S.OneCycleLR(torch.optim.Adagrad([torch.zeros(1, requires_grad=True)]), 1.0, 30) and None),
        "StepLR_state_dict_after_3_steps": outcome(state_dict_of(lambda o: S.StepLR(o, step_size=2, gamma=0.5))),
        "OneCycleLR_state_dict_after_3_steps": outcome(state_dict_of(lambda o: S.OneCycleLR(o, 1.0, 30))),
    }
    write("schedulers.json", {
        "setup": ("p = zeros(1) param; SGD([p], lr=0.1) (momentum=0.9 where named), or Adam([p], lr=0.1); "
                  "lr[0] is param_groups[0]['lr'] right after construction, lr[i] after the i-th "
                  "opt.step(); scheduler.step() (ReduceLROnPlateau: scheduler.step(metrics[i-1])). "
                  "OneCycleLR runs 31 steps to show the error past total_steps."),
        "metrics": {"min": PLATEAU_MIN, "max": PLATEAU_MAX},
        "runs": runs, "errors": errors,
    })


# --------------------------------------------------------------------------------------------
# vision.json


TORCHVISION_SHIM = []


def import_torchvision():
    """torchvision, or None; its C ops may be missing (only the pure-Python models are needed)."""
    try:
        import torchvision  # noqa: F401
    except RuntimeError as e:
        if "torchvision::nms does not exist" not in str(e):
            raise
        # A CUDA torchvision wheel on CPU torch cannot load its _C ops, and then registering the fake
        # (meta) kernel of nms fails at import. Declaring the two op schemas lets the import finish;
        # the models never call these ops.
        for mod in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[mod]
        lib = torch.library.Library("torchvision", "DEF")
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        TORCHVISION_SHIM.append(lib)  # the definitions live as long as the Library object
    except ImportError:
        return None
    import torchvision
    import torchvision.models  # noqa: F401
    return torchvision


HEAD_SCALE = 2.0 ** -4    # on the classifier's weight and bias, so the logits are of order 1, as a trained model's


def head(key):
    """The factor on a state_dict entry's wave: HEAD_SCALE for the classifier (the last Linear), else 1."""
    return HEAD_SCALE if key.startswith(("fc.", "classifier.")) else 1.0


def record_vision():
    """vision.json: mobilenet_v2/resnet18 state_dict keys, and eval logits with formula weights."""
    tv = import_torchvision()
    if tv is None:
        print("vision.json: torchvision not importable, skipped")
        return
    x_spec = wave((2, 3, 32, 32), 0, scale=1.0, freq=0.05)
    x = build(x_spec)
    models = {}
    before = json.loads((OUT / "vision.json").read_text()) if (OUT / "vision.json").exists() else {}
    for name in ("mobilenet_v2", "resnet18"):
        model = getattr(tv.models, name)(num_classes=10)
        sd = model.state_dict()
        keys, new = [], {}
        for k, (key, v) in enumerate(sd.items()):
            entry = {"key": key, "shape": list(v.shape), "dtype": str(v.dtype), "init": None}
            if v.is_floating_point():
                if key.endswith("running_var") or (key.endswith(".weight") and v.dim() == 1):  # var, BN scale
                    entry["init"] = wave(v.shape, k, scale=0.1, offset=1.0, quad=0.001)
                elif v.dim() > 1:  # conv / linear weight: He-like size, so the logits depend on the input
                    entry["init"] = wave(v.shape, k, scale=head(key) * 2.0 / math.sqrt(math.prod(v.shape[1:])),
                                         quad=0.001)
                else:
                    entry["init"] = wave(v.shape, k, scale=head(key) * 0.05, quad=0.001)
                new[key] = build(entry["init"])
            else:
                new[key] = v
            keys.append(entry)
        model.load_state_dict(new)
        model.eval()
        with torch.no_grad():
            logits = model(x)
            logits64 = model.double()(x.double())
        # PyTorch's float32 logits depend on the CPU's kernels (oneDNN picks them by instruction set): each
        # run adds its CPU's to those recorded before, on other CPUs.
        old = before.get("models", {}).get(name, {})
        by_cpu = old.get("eval_logits_by_cpu", {before.get("cpu_capability"): old.get("eval_logits", {}).get("values")})
        # Logits recorded under another HEAD_SCALE carry over exactly: a power-of-two factor on the head's weight
        # and bias scales every float32 product and sum in it exactly (checked on this CPU's old entry).
        ratio = HEAD_SCALE / old.get("head_scale", 1.0)
        by_cpu = {cpu: (np.array(v, np.float32) * np.float32(ratio)).tolist() for cpu, v in by_cpu.items()
                  if v is not None}
        here = torch.backends.cpu.get_cpu_capability()
        if here in by_cpu and by_cpu[here] != clean(logits):
            sys.exit(f"vision.json: {name}'s {here} logits are not the old ones x {ratio}: not re-recorded")
        by_cpu[here] = clean(logits)
        models[name] = {"constructor": f"torchvision.models.{name}(num_classes=10)", "head_scale": HEAD_SCALE,
                        "state_dict": keys,
                        "eval_logits": tinfo(logits), "eval_logits_by_cpu": by_cpu,
                        "eval_logits_float64": clean(logits64)}
    write("vision.json", {
        "torchvision_version": tv.__version__,
        "torchvision_c_ops_loaded": bool(tv.extension._has_ops()),
        "formulas": {"wave": WAVE},
        "rule": ("every floating state_dict entry is replaced by its 'init' wave (k = its index in state_dict "
                 "order, counting all entries; quad=0.001): running_var and 1-dim '.weight' (batch-norm scale) "
                 "entries offset 1, scale 0.1; weights with 2+ dims scale 2/sqrt(prod(shape[1:])); other entries "
                 "(biases, running_mean) scale 0.05; the classifier's ('fc.' or 'classifier.') weight and bias "
                 "scales times head_scale; num_batches_tracked left at 0; then model.eval() and "
                 "logits = model(x) under no_grad. The exact arguments are stored in each entry's 'init'"),
        "x": x_spec, "models": models,
    })


# --------------------------------------------------------------------------------------------
# losses.json


def record_losses():
    """losses.json: values and input gradients of the common losses on formula inputs."""
    specs = {
        "logits": wave((4, 5), 0, scale=2.0, freq=0.7),
        "log_probs": wave((4, 5), 1, scale=1.0, freq=0.7, offset=-2.0),
        "soft_target_logits": wave((4, 5), 2, scale=1.0, freq=0.9),
        "a": wave((3, 4), 2, scale=1.0, freq=0.6),
        "b": wave((3, 4), 3, scale=0.5, freq=0.6),
        "bce_logits": wave((3, 4), 4, scale=3.0, freq=0.8),
        "bce_target": wave((3, 4), 5, scale=0.5, freq=0.8, offset=0.5),
        "bce_probs": wave((3, 4), 6, scale=0.45, freq=0.8, offset=0.5),
        "bce_weight": wave((4,), 7, scale=0.5, freq=1.0, offset=1.0),
    }
    target = torch.tensor([0, 1, 4, 1])
    class_weight = torch.tensor([0.5, 1.0, 1.5, 2.0, 0.25])
    pos_weight = torch.tensor([1.0, 2.0, 0.5, 3.0])
    soft_target = torch.softmax(build(specs["soft_target_logits"]), dim=1)
    edge_probs = torch.tensor([[0.0, 1.0, 0.5, 1e-30], [1.0, 0.0, 0.25, 0.75]])
    edge_target = torch.tensor([[1.0, 0.0, 1.0, 1.0], [1.0, 0.0, 0.0, 1.0]])

    def case(loss_fn, inputs, others):
        leaves = {n: (edge_probs.clone().requires_grad_(True) if n == "edge_probs" else build(specs[n], True))
                  for n in inputs}
        out = loss_fn(*[leaves[n] for n in inputs], *others)
        out.backward(torch.ones_like(out))
        return {"inputs": list(inputs), "loss": tinfo(out),
                "grads": {n: tinfo(t.grad) for n, t in leaves.items()}}

    cases = {}
    for red in ("none", "sum", "mean"):
        for label, kw in (("plain", {}), ("label_smoothing_0.1", {"label_smoothing": 0.1}),
                          ("ignore_index_1", {"ignore_index": 1}), ("weight", {"weight": class_weight}),
                          ("weight_smoothing_ignore", {"weight": class_weight, "label_smoothing": 0.1,
                                                       "ignore_index": 1})):
            cases[f"CrossEntropyLoss/{label}/{red}"] = case(nn.CrossEntropyLoss(reduction=red, **kw),
                                                            ["logits"], [target])
        cases[f"CrossEntropyLoss/prob_targets/{red}"] = case(nn.CrossEntropyLoss(reduction=red), ["logits"],
                                                             [soft_target])
        cases[f"CrossEntropyLoss/prob_targets_smoothing_0.1/{red}"] = case(
            nn.CrossEntropyLoss(reduction=red, label_smoothing=0.1), ["logits"], [soft_target])
        for label, kw in (("plain", {}), ("ignore_index_1", {"ignore_index": 1}), ("weight", {"weight": class_weight})):
            cases[f"NLLLoss/{label}/{red}"] = case(nn.NLLLoss(reduction=red, **kw), ["log_probs"], [target])
        cases[f"MSELoss/{red}"] = case(nn.MSELoss(reduction=red), ["a", "b"], [])
        cases[f"L1Loss/{red}"] = case(nn.L1Loss(reduction=red), ["a", "b"], [])
        for label, kw in (("plain", {}), ("pos_weight", {"pos_weight": pos_weight}),
                          ("weight", {"weight": build(specs["bce_weight"])}),
                          ("weight_pos_weight", {"weight": build(specs["bce_weight"]), "pos_weight": pos_weight})):
            cases[f"BCEWithLogitsLoss/{label}/{red}"] = case(nn.BCEWithLogitsLoss(reduction=red, **kw),
                                                             ["bce_logits"], [build(specs["bce_target"])])
        cases[f"BCELoss/plain/{red}"] = case(nn.BCELoss(reduction=red), ["bce_probs"], [build(specs["bce_target"])])
        cases[f"BCELoss/weight/{red}"] = case(nn.BCELoss(reduction=red, weight=build(specs["bce_weight"])),
                                              ["bce_probs"], [build(specs["bce_target"])])
        cases[f"BCELoss/edge_probs/{red}"] = case(nn.BCELoss(reduction=red), ["edge_probs"], [edge_target])
    all_ignored = torch.ones(4, dtype=torch.long)
    cases["NLLLoss/all_ignored/mean"] = case(nn.NLLLoss(ignore_index=1), ["log_probs"], [all_ignored])
    cases["CrossEntropyLoss/all_ignored/mean"] = case(nn.CrossEntropyLoss(ignore_index=1), ["logits"], [all_ignored])

    logits = build(specs["logits"])
    errors = {
        "CrossEntropyLoss_label_smoothing_1.5": outcome(lambda: F.cross_entropy(logits, target, label_smoothing=1.5)),
        "CrossEntropyLoss_target_5_out_of_range": outcome(lambda: F.cross_entropy(logits, torch.tensor([0, 1, 5, 1]))),
        "CrossEntropyLoss_target_-1": outcome(lambda: F.cross_entropy(logits, torch.tensor([0, 1, -1, 1]))),
        "NLLLoss_target_5_out_of_range": outcome(lambda: F.nll_loss(logits, torch.tensor([0, 1, 5, 1]))),
        "CrossEntropyLoss_prob_target_ignore_index": outcome(
            lambda: F.cross_entropy(logits, soft_target, ignore_index=1)),
        "CrossEntropyLoss_int_target_wrong_batch": outcome(lambda: F.cross_entropy(logits, torch.tensor([0, 1, 2]))),
        "BCELoss_input_above_1": outcome(lambda: F.binary_cross_entropy(torch.tensor([1.5]), torch.tensor([1.0]))),
        "BCELoss_target_above_1": outcome(lambda: F.binary_cross_entropy(torch.tensor([0.5]), torch.tensor([1.5]))),
        "BCELoss_size_mismatch": outcome(lambda: F.binary_cross_entropy(torch.full((2, 3), 0.5), torch.ones(3))),
        "MSELoss_broadcast_size_mismatch": outcome(lambda: F.mse_loss(torch.ones(2, 3), torch.ones(3))),
        "BCEWithLogits_size_mismatch": outcome(
            lambda: F.binary_cross_entropy_with_logits(torch.ones(2, 3), torch.ones(3))),
    }
    write("losses.json", {
        "formulas": {"wave": WAVE},
        "inputs": {**specs, "target": clean(target), "class_weight": clean(class_weight),
                   "pos_weight": clean(pos_weight), "edge_probs": clean(edge_probs), "edge_target": clean(edge_target),
                   "soft_target": "softmax(wave(soft_target_logits), dim=1), float32 (values stored below)",
                   "soft_target_values": clean(soft_target),
                   "bce_target_use": "BCE losses take bce_target (no grad); BCE weight is bce_weight (shape (4,))"},
        "note": "case keys are Loss/variant/reduction; grads are of the named inputs with upstream gradient ones",
        "cases": cases, "errors": errors,
    })


# --------------------------------------------------------------------------------------------
# modules.json


def record_modules():
    """modules.json: forward outputs of common modules with formula weights and inputs."""
    specs = {}

    def w(name, shape, k, **kw):
        specs[name] = wave(shape, k, **kw)
        return build(specs[name])

    def set_params(module, prefix, start_k):
        """Replace every floating param/buffer of module by a wave (k = start_k + index), recording specs."""
        with torch.no_grad():
            for i, (n, t) in enumerate(module.state_dict().items()):
                if t.is_floating_point():
                    kw = {"scale": 0.1, "offset": 1.0} if n.endswith("running_var") else {"scale": 0.5}
                    kw["quad"] = 0.001
                    t.copy_(w(f"{prefix}.{n}", t.shape, start_k + i, **kw))
        return module

    out = {}
    x_ln = w("x_ln", (2, 3, 8), 0, scale=2.0, freq=0.9)
    ln = set_params(nn.LayerNorm(8), "LayerNorm(8)", 10)
    out["LayerNorm(8)"] = tinfo(ln(x_ln))
    ln2 = set_params(nn.LayerNorm([3, 8], eps=1e-3), "LayerNorm([3, 8], eps=1e-3)", 20)
    out["LayerNorm([3, 8], eps=1e-3)"] = tinfo(ln2(x_ln))
    out["LayerNorm(8, elementwise_affine=False)"] = tinfo(nn.LayerNorm(8, elementwise_affine=False)(x_ln))

    x4 = w("x_4ch", (3, 4, 2, 3), 1, scale=2.0, freq=0.8, offset=0.5)
    gn = set_params(nn.GroupNorm(2, 4), "GroupNorm(2, 4)", 30)
    out["GroupNorm(2, 4)"] = tinfo(gn(x4))

    for label, kw in (("BatchNorm2d(4)", {}), ("BatchNorm2d(4, momentum=None)", {"momentum": None})):
        bn = set_params(nn.BatchNorm2d(4, **kw), label, 40)
        bn.train()
        y = bn(x4)
        out[f"{label}/train"] = {"output": tinfo(y), "running_mean": tinfo(bn.running_mean),
                                 "running_var": tinfo(bn.running_var),
                                 "num_batches_tracked": tinfo(bn.num_batches_tracked)}
        bn.eval()
        out[f"{label}/eval_after_train_call"] = tinfo(bn(x4))
    bn = set_params(nn.BatchNorm2d(4), "BatchNorm2d(4)", 40)
    bn.eval()
    out["BatchNorm2d(4)/eval_fresh"] = tinfo(bn(x4))

    x_conv = w("x_conv", (2, 4, 7, 7), 2, scale=1.0, freq=0.3)
    convs = {
        "Conv2d(4, 6, 3, padding=1, groups=2)": nn.Conv2d(4, 6, 3, padding=1, groups=2),
        "Conv2d(4, 6, 3, dilation=2)": nn.Conv2d(4, 6, 3, dilation=2),
        "Conv2d(4, 6, 4, padding='same')": nn.Conv2d(4, 6, 4, padding="same"),
        "Conv2d(4, 6, 3, padding='same', dilation=2)": nn.Conv2d(4, 6, 3, padding="same", dilation=2),
        "Conv2d(4, 6, 3, stride=2, padding=1)": nn.Conv2d(4, 6, 3, stride=2, padding=1),
        "Conv2d(4, 6, 3, stride=2, bias=False)": nn.Conv2d(4, 6, 3, stride=2, bias=False),
        "Conv2d(4, 4, 3, padding=1, groups=4)": nn.Conv2d(4, 4, 3, padding=1, groups=4),
    }
    for i, (label, conv) in enumerate(convs.items()):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out[label] = tinfo(set_params(conv, label, 50 + 5 * i)(x_conv))
        out[label]["warnings"] = [str(w.message) for w in caught]

    pools = {
        "MaxPool2d(2)": nn.MaxPool2d(2),
        "MaxPool2d(3, stride=2, padding=1)": nn.MaxPool2d(3, stride=2, padding=1),
        "MaxPool2d(2, ceil_mode=True)": nn.MaxPool2d(2, ceil_mode=True),
        "AvgPool2d(2)": nn.AvgPool2d(2),
        "AvgPool2d(3, stride=2, padding=1)": nn.AvgPool2d(3, stride=2, padding=1),
        "AvgPool2d(3, stride=2, padding=1, count_include_pad=False)":
            nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
        "AvgPool2d(2, ceil_mode=True)": nn.AvgPool2d(2, ceil_mode=True),
        "AdaptiveAvgPool2d((3, 2))": nn.AdaptiveAvgPool2d((3, 2)),
        "AdaptiveAvgPool2d(1)": nn.AdaptiveAvgPool2d(1),
    }
    for label, pool in pools.items():
        out[label] = tinfo(pool(x_conv))

    x_act = w("x_act", (40,), 3, scale=7.0, freq=0.5)
    for label, act in (("GELU()", nn.GELU()), ("GELU(approximate='tanh')", nn.GELU(approximate="tanh")),
                       ("ReLU6()", nn.ReLU6()), ("SiLU()", nn.SiLU())):
        out[label] = tinfo(act(x_act))

    idx = torch.tensor([[0, 3, 9], [3, 3, 1]])
    embeddings = (("Embedding(10, 4)", {}), ("Embedding(10, 4, padding_idx=3)", {"padding_idx": 3}))
    for i, (label, kw) in enumerate(embeddings):
        emb = set_params(nn.Embedding(10, 4, **kw), label, 70 + i)
        y = emb(idx)
        y.backward(torch.ones_like(y))
        out[label] = {"output": tinfo(y), "weight_grad_upstream_ones": tinfo(emb.weight.grad)}

    q = w("mha_query", (3, 2, 8), 4, scale=1.0, freq=0.45)
    kv = w("mha_key_value", (4, 2, 8), 5, scale=1.0, freq=0.55)
    for i, bf in enumerate((False, True)):
        label = f"MultiheadAttention(8, 2, batch_first={bf})"
        mha = set_params(nn.MultiheadAttention(8, 2, batch_first=bf), "MultiheadAttention(8, 2)", 80)
        mha.eval()
        args = (q, kv, kv) if not bf else (q.transpose(0, 1), kv.transpose(0, 1), kv.transpose(0, 1))
        y, attn = mha(*args)
        y_heads, attn_heads = mha(*args, average_attn_weights=False)
        causal = torch.ones(3, 3, dtype=torch.bool).triu(1)
        pad = torch.tensor([[False, False, True], [False, False, False]])
        self_in = args[0]
        y_self, attn_self = mha(self_in, self_in, self_in, attn_mask=causal, key_padding_mask=pad)
        out[label] = {"cross_attention": {"output": tinfo(y), "weights_averaged": tinfo(attn),
                                          "weights_per_head": tinfo(attn_heads)},
                      "self_attention_causal_bool_mask_and_key_padding_mask": {
                          "attn_mask": clean(causal), "key_padding_mask": clean(pad),
                          "output": tinfo(y_self), "weights_averaged": tinfo(attn_self)}}
        if bf:
            with torch.no_grad():
                out[label]["self_attention_need_weights_false_no_grad"] = tinfo(
                    mha(self_in, self_in, self_in, need_weights=False)[0])

    sq = w("sdpa_q", (2, 2, 3, 4), 6, scale=1.0, freq=0.35)
    sk = w("sdpa_k", (2, 2, 5, 4), 7, scale=1.0, freq=0.4)
    sv = w("sdpa_v", (2, 2, 5, 4), 8, scale=1.0, freq=0.45)
    bool_mask = torch.tensor([[True, False, True, True, False], [True, True, False, True, True],
                              [False, True, True, True, True]])
    float_mask = w("sdpa_float_mask", (3, 5), 9, scale=1.0, freq=0.8)
    sdpa = F.scaled_dot_product_attention
    out["scaled_dot_product_attention"] = {
        "plain": tinfo(sdpa(sq, sk, sv)),
        "is_causal": tinfo(sdpa(sq, sk, sv, is_causal=True)),
        "bool_mask": tinfo(sdpa(sq, sk, sv, attn_mask=bool_mask)),
        "float_mask": tinfo(sdpa(sq, sk, sv, attn_mask=float_mask)),
        "scale_0.3": tinfo(sdpa(sq, sk, sv, scale=0.3)),
        "bool_mask_values": clean(bool_mask),
        "mask_and_is_causal_error": outcome(lambda: sdpa(sq, sk, sv, attn_mask=bool_mask, is_causal=True)),
    }
    write("modules.json", {
        "formulas": {"wave": WAVE},
        "rule": ("module weights: every floating state_dict entry i (in order) of a module is "
                 "wave(shape, start_k + i, scale=0.5, quad=0.001) (running_var: scale=0.1, offset=1.0); "
                 "its spec is stored "
                 "under 'inputs' as '<module label>.<key>'; MultiheadAttention with batch_first=True gets the same "
                 "query/key/value transposed to (N, L, E)"),
        "inputs": specs, "outputs": out,
    })


# --------------------------------------------------------------------------------------------
# autocast_cpu.json


def record_autocast_cpu():
    """autocast_cpu.json: output dtypes under CPU autocast, promotion outside it, and a few error texts."""
    a = build(wave((4, 8), 0, scale=1.0))
    b = build(wave((8, 3), 1, scale=1.0))
    pos = build(wave((4, 8), 2, scale=0.5, offset=1.0))
    a3, b3 = build(wave((2, 4, 8), 3)), build(wave((2, 8, 3), 4))
    W, bias = build(wave((3, 8), 5)), build(wave((3,), 6))
    img, cw, cb = build(wave((2, 4, 5, 5), 7)), build(wave((6, 4, 3, 3), 8)), build(wave((6,), 9))
    target = torch.tensor([0, 2, 1, 0])
    q, k, v = build(wave((1, 2, 3, 4), 10)), build(wave((1, 2, 5, 4), 11)), build(wave((1, 2, 5, 4), 12))
    idx, emb = torch.tensor([1, 0, 2]), build(wave((3, 4), 13))
    lin, conv = nn.Linear(8, 3), nn.Conv2d(4, 6, 3)

    def ops(lp):
        """The op table; `c` casts an fp32 input to the operand dtype of the column being recorded."""
        return {
            "matmul": lambda c: torch.matmul(c(a), c(b)),
            "mm": lambda c: torch.mm(c(a), c(b)),
            "bmm": lambda c: torch.bmm(c(a3), c(b3)),
            "F.linear_bias": lambda c: F.linear(c(a), c(W), c(bias)),
            "F.linear_no_bias": lambda c: F.linear(c(a), c(W)),
            "nn.Linear(fp32 params)": lambda c: lin(c(a)),
            "nn.Conv2d(fp32 params)": lambda c: conv(c(img)),
            "F.conv2d": lambda c: F.conv2d(c(img), c(cw), c(cb)),
            "add": lambda c: c(a) + c(pos),
            "mul": lambda c: c(a) * c(pos),
            "div": lambda c: c(a) / c(pos),
            "2.0 / x": lambda c: 2.0 / c(pos),
            "x * 2.0": lambda c: c(a) * 2.0,
            "sum": lambda c: c(a).sum(),
            "mean": lambda c: c(a).mean(),
            "softmax": lambda c: F.softmax(c(a), dim=-1),
            "log_softmax": lambda c: F.log_softmax(c(a), dim=-1),
            "exp": lambda c: torch.exp(c(a)),
            "log": lambda c: torch.log(c(pos)),
            "relu": lambda c: F.relu(c(a)),
            "gelu": lambda c: F.gelu(c(a)),
            "layer_norm(fp32 weight, bias)": lambda c: F.layer_norm(c(a), (8,), torch.ones(8), torch.zeros(8)),
            "layer_norm(no affine)": lambda c: F.layer_norm(c(a), (8,)),
            "group_norm(fp32 weight, bias)": lambda c: F.group_norm(c(img), 2, torch.ones(4), torch.zeros(4)),
            "batch_norm(eval, fp32 stats)": lambda c: F.batch_norm(c(img), torch.zeros(4), torch.ones(4),
                                                                   torch.ones(4), torch.zeros(4), training=False),
            "batch_norm(train, fp32 stats)": lambda c: F.batch_norm(c(img), torch.zeros(4), torch.ones(4),
                                                                    torch.ones(4), torch.zeros(4), training=True),
            "cross_entropy": lambda c: F.cross_entropy(c(a)[:, :3], target),
            "mse_loss": lambda c: F.mse_loss(c(a), c(pos)),
            "cat(bfloat16, float32)": lambda c: torch.cat([c(a).bfloat16(), c(pos).float()]),
            "cat(float16, float32)": lambda c: torch.cat([c(a).half(), c(pos).float()]),
            "cat(x, x)": lambda c: torch.cat([c(a), c(pos)]),
            "stack(bfloat16, float32)": lambda c: torch.stack([c(a).bfloat16(), c(pos).float()]),
            "stack(x, x)": lambda c: torch.stack([c(a), c(pos)]),
            "max()": lambda c: c(a).max(),
            "max(dim=1).values": lambda c: c(a).max(dim=1).values,
            "argmax": lambda c: c(a).argmax(),
            "tanh": lambda c: torch.tanh(c(a)),
            "sigmoid": lambda c: torch.sigmoid(c(a)),
            "pow(x, 2.0)": lambda c: torch.pow(c(a), 2.0),
            "x ** 2": lambda c: c(a) ** 2,
            "pow(x, y)": lambda c: torch.pow(c(pos), c(pos)),
            "sqrt": lambda c: torch.sqrt(c(pos)),
            "scaled_dot_product_attention": lambda c: F.scaled_dot_product_attention(c(q), c(k), c(v)),
            "F.embedding": lambda c: F.embedding(idx, c(emb)),
            "matmul(float64)": lambda c: torch.matmul(a.double(), b.double()),
            "matmul(lowp, float32)": lambda c: torch.matmul(a.to(lp), b),
            "addmm": lambda c: torch.addmm(c(bias), c(a), c(W).t()),
        }

    def dtype_of(fn):
        r = outcome(lambda: str(fn().dtype))
        return r["result"] if r["error"] is None and not r["warnings"] else r

    autocast = {}
    for lp in (torch.bfloat16, torch.float16):
        col = {"float32_inputs": {}, "lowp_inputs": {}}
        ctx = outcome(lambda: torch.autocast("cpu", dtype=lp).fast_dtype)
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            with torch.autocast("cpu", dtype=lp):
                col["is_autocast_enabled"] = torch.is_autocast_enabled("cpu")
                col["get_autocast_dtype"] = str(torch.get_autocast_dtype("cpu"))
                for name, fn in ops(lp).items():
                    col["float32_inputs"][name] = dtype_of(lambda: fn(lambda t: t))
                    col["lowp_inputs"][name] = dtype_of(lambda: fn(lambda t: t.to(lp)))
        col["construction"] = ctx
        autocast[str(lp)] = col

    h = torch.ones(3, dtype=torch.float16)
    promotion = {
        "float16 tensor * 2.5": h * 2.5,
        "float16 tensor + float32 0-dim tensor": h + torch.tensor(1.0),
        "float16 tensor + float32 1-dim tensor": h + torch.ones(3),
        "float16 0-dim tensor * float32 0-dim tensor": torch.tensor(2.0, dtype=torch.float16) * torch.tensor(3.0),
        "bfloat16 tensor + float16 tensor": torch.ones(3, dtype=torch.bfloat16) + h,
        "bfloat16 tensor + float32 0-dim tensor": torch.ones(3, dtype=torch.bfloat16) + torch.tensor(1.0),
        "float32 tensor + float64 0-dim tensor": torch.ones(3) + torch.tensor(1.0, dtype=torch.float64),
        "float32 tensor + float64 1-dim tensor": torch.ones(3) + torch.ones(3, dtype=torch.float64),
        "int64 tensor + 1.5": torch.ones(3, dtype=torch.long) + 1.5,
        "int64 tensor / int64 tensor": torch.ones(3, dtype=torch.long) / torch.full((3,), 2, dtype=torch.long),
        "int64 tensor // int64 tensor": torch.ones(3, dtype=torch.long) // torch.full((3,), 2, dtype=torch.long),
        "int32 tensor + 5": torch.ones(3, dtype=torch.int32) + 5,
        "int32 tensor + int64 0-dim tensor": torch.ones(3, dtype=torch.int32) + torch.tensor(5),
        "int32 tensor + float16 0-dim tensor":
            torch.ones(3, dtype=torch.int32) + torch.tensor(1.0, dtype=torch.float16),
        "uint8 tensor + int64 0-dim tensor": torch.ones(3, dtype=torch.uint8) + torch.tensor(1),
        "bool tensor + uint8 tensor": torch.ones(3, dtype=torch.bool) + torch.ones(3, dtype=torch.uint8),
        "bool tensor + 1.5": torch.ones(3, dtype=torch.bool) + 1.5,
        "float16 tensor * True": h * True,
    }
    promotion = {key: str(t.dtype) for key, t in promotion.items()}

    def backward_twice(make):
        def f():
            x = torch.tensor([1.0, 2.0], requires_grad=True)
            y = make(x)
            y.backward()
            y.backward()
        return f

    lin2 = nn.Linear(3, 2)
    good = lin2.state_dict()
    errors = {
        "matmul(float16 2-D, float32 2-D)": outcome(lambda: torch.matmul(h.reshape(1, 3), torch.ones(3, 2))),
        "matmul(float32 2-D, bfloat16 2-D)": outcome(lambda: torch.matmul(torch.ones(1, 3),
                                                                          torch.ones(3, 2, dtype=torch.bfloat16))),
        "matmul(float16 1-D, float32 1-D)": outcome(lambda: torch.matmul(h, torch.ones(3))),
        "matmul(float16 3-D, float32 2-D)": outcome(lambda: torch.matmul(h.reshape(1, 1, 3), torch.ones(3, 2))),
        "mm(float16, float32)": outcome(lambda: torch.mm(h.reshape(1, 3), torch.ones(3, 2))),
        "bmm(float16, float32)": outcome(lambda: torch.bmm(h.reshape(1, 1, 3), torch.ones(1, 3, 2))),
        "F.linear(float16 x, float32 weight, float32 bias)": outcome(
            lambda: F.linear(h.reshape(1, 3), torch.ones(2, 3), torch.ones(2))),
        "F.linear(float16 x, float32 weight)": outcome(lambda: F.linear(h.reshape(1, 3), torch.ones(2, 3))),
        "matmul shape mismatch (2x3 @ 4x5)": outcome(lambda: torch.ones(2, 3) @ torch.ones(4, 5)),
        "F.linear shape mismatch": outcome(lambda: F.linear(torch.ones(2, 3), torch.ones(5, 4), torch.ones(5))),
        "backward twice through (x*x).sum()": outcome(backward_twice(lambda x: (x * x).sum())),
        "backward twice through x.exp().sum()": outcome(backward_twice(lambda x: x.exp().sum())),
        "backward on a tensor without grad_fn": outcome(lambda: torch.ones(2).sum().backward()),
        "backward on a non-scalar without gradient": outcome(
            lambda: (torch.ones(2, requires_grad=True) * 2).backward()),
        "load_state_dict missing key (strict)": outcome(lambda: nn.Linear(3, 2).load_state_dict(
            {"weight": good["weight"]})),
        "load_state_dict unexpected key (strict)": outcome(lambda: nn.Linear(3, 2).load_state_dict(
            {**good, "extra": torch.ones(1)})),
        "load_state_dict missing and unexpected (strict)": outcome(lambda: nn.Linear(3, 2).load_state_dict(
            {"weight": good["weight"], "extra": torch.ones(1), "bias2": torch.ones(2)})),
        "load_state_dict size mismatch": outcome(lambda: nn.Linear(3, 2).load_state_dict(
            {"weight": torch.ones(2, 4), "bias": good["bias"]})),
        "load_state_dict missing and unexpected (strict=False)": outcome(lambda: (lambda r: {
            "missing_keys": r.missing_keys, "unexpected_keys": r.unexpected_keys, "repr": repr(r)})(
            nn.Linear(3, 2).load_state_dict({"weight": good["weight"], "extra": torch.ones(1)}, strict=False))),
        "load_state_dict not a mapping": outcome(lambda: nn.Linear(3, 2).load_state_dict([1, 2])),
        "autocast device_type torch.device": outcome(lambda: torch.autocast(torch.device("cpu")) and None),
        "autocast cpu float32 dtype": outcome(lambda: str(torch.autocast("cpu", dtype=torch.float32).fast_dtype)),
        "autocast cuda without cuda": outcome(lambda: torch.autocast("cuda")._enabled),
    }
    write("autocast_cpu.json", {
        "note": ("values are output dtypes; an entry that raised or warned holds the outcome instead. "
                 "float32_inputs: fp32 tensors (module params fp32); lowp_inputs: the same tensors cast to the "
                 "autocast dtype before the call (ops named with explicit dtypes keep them)"),
        "default_cpu_autocast_dtype": str(torch.get_autocast_dtype("cpu")),
        "autocast": autocast, "promotion_outside_autocast": promotion, "errors": errors,
    })


# --------------------------------------------------------------------------------------------
# casts.json


CAST_INPUTS = [0.0, -0.0, 1.0, -1.5, 2.0 ** -6, 2.0 ** -9, 2.0 ** -10, 1.5 * 2.0 ** -10, 2.0 ** -16, 2.0 ** -17,
               2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -133, 2.0 ** -134, 240.0, 448.0, 464.0, 465.0, 480.0,
               500.0, 1000.0, -1000.0, 57344.0, 61439.0, 61440.0, 65504.0, 65519.0, 65520.0, 1e5, 3.0e38,
               float("inf"), float("-inf"), float("nan")]


def record_casts():
    """casts.json: float32 values cast into each low-precision dtype by .to() and by torch.tensor(dtype=), as
    the dtype's bit patterns (PyTorch 2.12 on saturates float8_e4m3fn)."""
    x = torch.tensor(CAST_INPUTS, dtype=torch.float32)
    casts = {}
    for d in (torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2):
        bits = torch.uint8 if d.itemsize == 1 else torch.int16
        mask = 0xFF if d.itemsize == 1 else 0xFFFF
        casts[str(d)] = {"to": [int(v) & mask for v in x.to(d).view(bits).tolist()],
                         "tensor": [int(v) & mask for v in torch.tensor(CAST_INPUTS, dtype=d).view(bits).tolist()]}
    write("casts.json", {"inputs": [repr(v) for v in CAST_INPUTS], "bits": casts})


def record_gradients():
    """gradients.json: float16/bfloat16 gradients of tests/torch/gradient_programs.py, as bit patterns."""
    path = OUT.parent.parent / "torch" / "gradient_programs.py"
    spec = importlib.util.spec_from_file_location("gradient_programs", path)
    programs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(programs)
    bits = {str(d): {case: [int(v) & 0xFFFF for v in grad.detach().reshape(-1).view(torch.int16).tolist()]
                     for case, grad in programs.gradients(torch, d).items()}
            for d in (torch.float16, torch.bfloat16)}
    write("gradients.json", {"bits": bits})


# --------------------------------------------------------------------------------------------
# activations.json

ACTIVATIONS = {"leaky_relu": {}, "leaky_relu(negative_slope=0.2)": {"negative_slope": 0.2}, "elu": {},
               "elu(alpha=0.5)": {"alpha": 0.5}, "selu": {}, "softplus": {},
               "softplus(beta=2.0, threshold=3.0)": {"beta": 2.0, "threshold": 3.0}, "mish": {}, "hardswish": {},
               "hardsigmoid": {}}


def half_bits(t):
    """A float16/bfloat16 tensor's bit patterns, as a flat list of ints."""
    return [int(v) & 0xFFFF for v in t.detach().reshape(-1).view(torch.int16).tolist()]


def record_activations():
    """activations.json: the elementwise activations' outputs and input gradients in float32 (values) and in
    float16/bfloat16 (bit patterns); PReLU and GLU with their gradients; module reprs."""
    specs = {"x": wave((96,), 0, scale=6.0, freq=0.77, quad=0.01), "g": wave((96,), 1, scale=1.0, freq=0.53)}
    out = {}
    for label, kw in ACTIVATIONS.items():
        fn = getattr(F, label.split("(")[0])
        entry = {}
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            x = build(specs["x"]).to(dtype).requires_grad_(True)
            y = fn(x, **kw)
            y.backward(build(specs["g"]).to(dtype))
            entry[str(dtype)] = ({"output": clean(y), "grad": clean(x.grad)} if dtype == torch.float32 else
                                 {"output": half_bits(y), "grad": half_bits(x.grad)})
        out[label] = entry
    specs["x3"] = wave((2, 3, 4), 2, scale=2.0, freq=0.61)
    specs["g3"] = wave((2, 3, 4), 3, scale=1.0, freq=0.41)
    specs["prelu.weight"] = wave((3,), 4, scale=0.3, offset=0.1)
    prelu = nn.PReLU(3)
    with torch.no_grad():
        prelu.weight.copy_(build(specs["prelu.weight"]))
    x = build(specs["x3"], True)
    y = prelu(x)
    y.backward(build(specs["g3"]))
    out["PReLU(3)"] = {"output": clean(y), "grad": clean(x.grad), "weight_grad": clean(prelu.weight.grad),
                       "state_dict": list(prelu.state_dict())}
    x = build(specs["x3"], True)
    y = nn.PReLU()(x)
    y.backward(build(specs["g3"]))
    out["PReLU()"] = {"output": clean(y), "grad": clean(x.grad)}
    specs["x4"] = wave((2, 4, 3), 5, scale=2.0, freq=0.67)
    specs["g4"] = wave((2, 2, 3), 6, scale=1.0, freq=0.43)
    x = build(specs["x4"], True)
    y = nn.GLU(dim=1)(x)
    y.backward(build(specs["g4"]))
    out["GLU(dim=1)"] = {"output": clean(y), "grad": clean(x.grad)}
    out["glu_odd"] = outcome(lambda: F.glu(build(specs["x3"]), dim=1))
    out["prelu_mismatch"] = outcome(lambda: F.prelu(build(specs["x4"]), torch.ones(3)))
    modules = [nn.LeakyReLU(), nn.LeakyReLU(0.2, inplace=True), nn.ELU(), nn.ELU(alpha=0.5), nn.SELU(),
               nn.Softplus(), nn.Softplus(2.0, 3.0), nn.Mish(), nn.Hardswish(), nn.Hardsigmoid(), nn.PReLU(3),
               nn.GLU(), nn.Unflatten(1, (2, 2))]
    reprs = [repr(m) for m in modules]
    write("activations.json", {"formulas": WAVE, "inputs": specs, "activations": out, "reprs": reprs})


# --------------------------------------------------------------------------------------------
# transformer.json

# Each case: the module's constructor source over nn and F, and its call's source over the module m, the wave
# inputs x, y (named in "inputs") and masks built in make_masks(); eval mode, so dropout is off.
TRANSFORMER_CASES = {
    "encoder_layer_post_norm_padding": (
        "nn.TransformerEncoderLayer(8, 2, dim_feedforward=12)", {"x": (5, 3, 8)},
        "m(x, src_key_padding_mask=pad_3x5)"),
    "encoder_layer_norm_first_gelu_causal": (
        "nn.TransformerEncoderLayer(8, 2, 12, activation='gelu', batch_first=True, norm_first=True)",
        {"x": (3, 5, 8)}, "m(x, src_mask=causal_5, is_causal=True)"),
    "encoder_layer_no_bias_silu_bool_mask": (
        "nn.TransformerEncoderLayer(8, 4, 12, activation=F.silu, layer_norm_eps=1e-3, bias=False, batch_first=True)",
        {"x": (2, 5, 8)}, "m(x, src_mask=band_5)"),
    "encoder_layer_unbatched": ("nn.TransformerEncoderLayer(8, 2, 12)", {"x": (5, 8)}, "m(x)"),
    "encoder_two_layers_norm": (
        "nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 12, batch_first=True), 2, norm=nn.LayerNorm(8), "
        "enable_nested_tensor=False)", {"x": (3, 5, 8)},
        "m(x, mask=causal_5, src_key_padding_mask=pad_3x5)"),
    "decoder_layer_masks": (
        "nn.TransformerDecoderLayer(8, 2, 12, batch_first=True)", {"x": (3, 4, 8), "y": (3, 5, 8)},
        "m(x, y, tgt_mask=causal_4, memory_key_padding_mask=pad_3x5, tgt_is_causal=True)"),
    "decoder_layer_norm_first_gelu": (
        "nn.TransformerDecoderLayer(8, 2, 12, activation='gelu', norm_first=True)",
        {"x": (4, 3, 8), "y": (5, 3, 8)}, "m(x, y, tgt_key_padding_mask=pad_3x4)"),
    "decoder_two_layers_norm": (
        "nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 12), 2, norm=nn.LayerNorm(8))",
        {"x": (4, 3, 8), "y": (5, 3, 8)}, "m(x, y, tgt_mask=causal_4)"),
    "transformer": (
        "nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=12)",
        {"x": (5, 3, 8), "y": (4, 3, 8)},
        "m(x, y, tgt_mask=nn.Transformer.generate_square_subsequent_mask(4), src_key_padding_mask=pad_3x5, "
        "memory_key_padding_mask=pad_3x5)"),
}


def make_masks(torch):
    """The masks the cases' calls name, built the same way by the recorder and the tests (torch: either)."""
    pad5 = [[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]]
    pad4 = [[False] * 4, [False] * 3 + [True], [False] * 2 + [True] * 2]
    band = [[abs(i - j) > 1 for j in range(5)] for i in range(5)]        # True: may not attend
    return {"pad_3x5": torch.tensor(pad5), "pad_3x4": torch.tensor(pad4), "band_5": torch.tensor(band),
            "causal_5": torch.nn.Transformer.generate_square_subsequent_mask(5),
            "causal_4": torch.nn.Transformer.generate_square_subsequent_mask(4)}


def record_transformer():
    """transformer.json: Transformer{Encoder,Decoder}{Layer,}, Transformer outputs and gradients (eval mode)."""
    out, specs = {}, {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for case, (ctor, shapes, call) in TRANSFORMER_CASES.items():
            m = eval(ctor, {"nn": nn, "F": F})      # noqa: S307 - the table's own source
            m.eval()
            names = list(m.state_dict())
            with torch.no_grad():
                for i, (name, t) in enumerate(m.state_dict().items()):
                    specs[f"{case}.{name}"] = wave(t.shape, 100 + i, scale=0.4, quad=0.001,
                                                   offset=1.0 if name.split(".")[-2].startswith("norm") and
                                                   name.endswith("weight") else 0.0)
                    t.copy_(build(specs[f"{case}.{name}"]))
            inputs = {}
            for j, (arg, shape) in enumerate(shapes.items()):
                specs[f"{case}:{arg}"] = wave(shape, 10 + j, scale=1.0, freq=0.53, quad=0.01)
                inputs[arg] = build(specs[f"{case}:{arg}"], True)
            y = eval(call, {"nn": nn}, {"m": m, **inputs, **make_masks(torch)})   # noqa: S307
            specs[f"{case}:g"] = wave(y.shape, 20, scale=1.0, freq=0.71)
            y.backward(build(specs[f"{case}:g"]))
            out[case] = {"constructor": ctor, "call": call, "state_dict": names, "output": tinfo(y),
                         "input_grads": {a: clean(t.grad) for a, t in inputs.items()},
                         "param_grads": {n: clean(p.grad) for n, p in m.named_parameters()}}
        out_warnings = [{"category": w.category.__name__, "message": str(w.message)} for w in caught]
    errors = {
        "activation_tanh": outcome(lambda: nn.TransformerEncoderLayer(8, 2, activation="tanh") and None),
        "batch_mismatch": outcome(lambda: nn.Transformer(8, 2, 1, 1, 12)(torch.zeros(5, 3, 8), torch.zeros(4, 2, 8))),
        "feature_mismatch": outcome(lambda: nn.Transformer(8, 2, 1, 1, 12)(torch.zeros(5, 3, 8), torch.zeros(4, 3, 6))),
        "nested_warning": outcome(lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 1) and None),
    }
    write("transformer.json", {"formulas": WAVE, "inputs": specs, "cases": out, "warnings": out_warnings,
                               "errors": errors,
                               "square_subsequent_mask_3": clean(nn.Transformer.generate_square_subsequent_mask(3))})


# --------------------------------------------------------------------------------------------
# layers_more.json

# Each case: the module's constructor source over nn, the wave inputs' shapes (x, then y), the call over m, x, y.
LAYERS_MORE = {
    "Conv1d(4, 6, 3, stride=2, padding=1, groups=2)": ({"x": (2, 4, 9)}, "m(x)"),
    "Conv1d(4, 6, 4, padding='same', dilation=2, bias=False)": ({"x": (2, 4, 9)}, "m(x)"),
    "Conv1d(4, 6, 3)": ({"x": (4, 9)}, "m(x)"),
    "ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1)": ({"x": (2, 4, 5, 5)}, "m(x)"),
    "ConvTranspose2d(4, 6, (3, 2), stride=(2, 1), padding=(2, 0), groups=2, dilation=(1, 2), bias=False)":
        ({"x": (2, 4, 5, 6)}, "m(x)"),
    "ConvTranspose2d(4, 4, 2, stride=2, padding=2)": ({"x": (1, 4, 4, 4)}, "m(x)"),
    "InstanceNorm2d(4)": ({"x": (2, 4, 5, 5)}, "m(x)"),
    "InstanceNorm2d(4, eps=1e-3, affine=True)": ({"x": (4, 5, 6)}, "m(x)"),
    "RMSNorm(8)": ({"x": (2, 3, 8)}, "m(x)"),
    "RMSNorm([3, 8], eps=1e-4)": ({"x": (2, 3, 8)}, "m(x)"),
    "RMSNorm(8, elementwise_affine=False)": ({"x": (2, 3, 8)}, "m(x)"),
    "PixelShuffle(2)": ({"x": (2, 8, 3, 3)}, "m(x)"),
    "PixelUnshuffle(2)": ({"x": (2, 2, 4, 6)}, "m(x)"),
    "Upsample(scale_factor=2)": ({"x": (1, 3, 4, 5)}, "m(x)"),
    "Upsample(size=(7, 9))": ({"x": (1, 3, 4, 5)}, "m(x)"),
    "Upsample(scale_factor=2, mode='bilinear')": ({"x": (1, 3, 4, 5)}, "m(x)"),
    "Upsample(size=(7, 9), mode='bilinear', align_corners=True)": ({"x": (1, 3, 4, 5)}, "m(x)"),
    "Upsample(scale_factor=1.5, mode='bilinear')": ({"x": (1, 3, 4, 5)}, "m(x)"),
    "Upsample(size=7, mode='linear')": ({"x": (2, 3, 5)}, "m(x)"),
    "LSTM(4, 6)": ({"x": (5, 3, 4)}, "m(x)"),
    "LSTM(4, 5, num_layers=2, batch_first=True, bidirectional=True)": ({"x": (2, 4, 4)}, "m(x)"),
    "LSTM(4, 6, bias=False)": ({"x": (5, 4), "y": (1, 6), "z": (1, 6)}, "m(x, (y, z))"),
    "LSTM(4, 6, num_layers=2, proj_size=3, bidirectional=True)": ({"x": (4, 2, 4)}, "m(x)"),
    "GRU(4, 6, num_layers=2)": ({"x": (4, 2, 4)}, "m(x)"),
    "GRU(4, 5, batch_first=True, bidirectional=True, bias=False)": ({"x": (3, 5, 4), "y": (2, 3, 5)}, "m(x, y)"),
    "RNN(4, 6, nonlinearity='relu', bidirectional=True)": ({"x": (5, 3, 4)}, "m(x)"),
    "UpsamplingNearest2d(scale_factor=2)": ({"x": (1, 3, 4, 5)}, "m(x)"),
    "UpsamplingBilinear2d(size=(7, 9))": ({"x": (1, 3, 4, 5)}, "m(x)"),
    "RNNCell(4, 6)": ({"x": (3, 4), "y": (3, 6)}, "m(x, y)"),
    "RNNCell(4, 6, nonlinearity='relu', bias=False)": ({"x": (4,)}, "m(x)"),
    "LSTMCell(4, 6)": ({"x": (3, 4), "y": (3, 6), "z": (3, 6)}, "m(x, (y, z))"),
    "LSTMCell(4, 5, bias=False)": ({"x": (4,)}, "m(x)"),
    "GRUCell(4, 6)": ({"x": (3, 4), "y": (3, 6)}, "m(x, y)"),
    "GRUCell(4, 5)": ({"x": (2, 4)}, "m(x)"),
    "InstanceNorm1d(4)": ({"x": (2, 4, 9)}, "m(x)"),
    "InstanceNorm1d(4, affine=True)": ({"x": (4, 9)}, "m(x)"),
    "InstanceNorm3d(3, eps=1e-3, affine=True)": ({"x": (2, 3, 3, 4, 5)}, "m(x)"),
    "BatchNorm3d(3)": ({"x": (2, 3, 2, 3, 4)}, "m(x)"),
    "BatchNorm3d(3, affine=False, momentum=0.3)": ({"x": (3, 3, 2, 2, 3)}, "m(x)"),
}


def flat_outputs(y):
    """The tensors of a module's output (a tensor, or RNNs' nested tuples), in order."""
    if isinstance(y, torch.Tensor):
        return [y]
    return [t for item in y for t in flat_outputs(item)]


def record_layers_more():
    """layers_more.json: outputs, input and parameter gradients, state_dict keys and reprs of Conv1d,
    ConvTranspose2d, BatchNorm3d, InstanceNorm1d/2d/3d, RMSNorm, PixelShuffle, PixelUnshuffle, Upsample (and its two fixed-mode
    kin), LSTM, GRU and RNN, and their cells."""
    out, specs = {}, {}
    for ci, (ctor, (shapes, call)) in enumerate(LAYERS_MORE.items()):
        m = eval(ctor, {"nn": nn}, vars(nn))     # noqa: S307 - the table's own source
        with torch.no_grad():
            for i, (name, t) in enumerate(m.state_dict().items()):
                affine = isinstance(m, (nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d, nn.RMSNorm)) and \
                    name == "weight"
                specs[f"{ctor}.{name}"] = wave(t.shape, 100 + i, scale=0.4, quad=0.001, offset=1.0 if affine else 0.0)
                t.copy_(build(specs[f"{ctor}.{name}"]))
        inputs = {}
        for j, (arg, shape) in enumerate(shapes.items()):
            specs[f"{ctor}:{arg}"] = wave(shape, 10 + j + ci, scale=1.0, freq=0.53, quad=0.01)
            inputs[arg] = build(specs[f"{ctor}:{arg}"], True)
        outs = flat_outputs(eval(call, {}, {"m": m, **inputs}))    # noqa: S307
        loss = 0
        for k, o in enumerate(outs):
            specs[f"{ctor}:g{k}"] = wave(o.shape, 20 + k, scale=1.0, freq=0.71)
            loss = loss + (o * build(specs[f"{ctor}:g{k}"])).sum()
        loss.backward()
        out[ctor] = {"call": call, "repr": repr(m), "state_dict": list(m.state_dict()),
                     "outputs": [tinfo(o) for o in outs],
                     "input_grads": {a: clean(t.grad) for a, t in inputs.items()},
                     "param_grads": {n: clean(p.grad) for n, p in m.named_parameters()}}
    errors = {
        "pixel_shuffle_channels": outcome(lambda: F.pixel_shuffle(torch.zeros(1, 3, 2, 2), 2)),
        "lstm_input_size": outcome(lambda: nn.LSTM(4, 6)(torch.zeros(5, 3, 5))),
        "rnn_nonlinearity": outcome(lambda: nn.RNN(4, 6, nonlinearity="gelu") and None),
        "gru_proj_size": outcome(lambda: nn.GRU(4, 6, proj_size=2) and None),
        "lstm_proj_size_6": outcome(lambda: nn.LSTM(4, 6, proj_size=6) and None),
        "interpolate_both": outcome(lambda: F.interpolate(torch.zeros(1, 1, 2, 2), size=3, scale_factor=2)),
        "interpolate_neither": outcome(lambda: F.interpolate(torch.zeros(1, 1, 2, 2))),
        "instance_norm1d_dims": outcome(lambda: nn.InstanceNorm1d(4)(torch.zeros(4))),
        "instance_norm3d_features": outcome(lambda: nn.InstanceNorm3d(3, affine=True)(torch.zeros(1, 4, 2, 2, 2))),
        "batch_norm3d_dims": outcome(lambda: nn.BatchNorm3d(3)(torch.zeros(2, 3, 4, 4))),
        "instance_norm1d_features_warns": outcome(lambda: nn.InstanceNorm1d(4)(torch.zeros(2, 5, 3)).shape and None),
    }
    # InstanceNorm2d's running statistics: two training calls, then eval (the buffers' own initial values).
    m = nn.InstanceNorm2d(3, affine=True, track_running_stats=True, momentum=0.3)
    specs["running:x"] = wave((2, 3, 4, 5), 30, scale=1.5, freq=0.61, quad=0.01, offset=0.2)
    x = build(specs["running:x"])
    m(x)
    m(x * 2)
    running = {"state_dict": list(m.state_dict()), "running_mean": clean(m.running_mean),
               "running_var": clean(m.running_var), "num_batches_tracked": int(m.num_batches_tracked),
               "eval_output": clean(m.eval()(x))}
    write("layers_more.json", {"formulas": WAVE, "inputs": specs, "cases": out, "errors": errors,
                               "instance_norm_running": running})


def main():
    """Write every fixture file."""
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)  # only module constructors draw numbers, and every recorded weight is overwritten
    OUT.mkdir(parents=True, exist_ok=True)
    recorders = {"gradscaler": record_gradscaler, "optimizers": record_optimizers, "schedulers": record_schedulers,
                 "vision": record_vision, "losses": record_losses, "modules": record_modules,
                 "autocast_cpu": record_autocast_cpu, "casts": record_casts,
                 "gradients": record_gradients, "activations": record_activations,
                 "optimizers_more": lambda: record_optimizers(OPT_MORE, "optimizers_more.json"),
                 "schedulers_more": record_schedulers_more, "transformer": record_transformer,
                 "layers_more": record_layers_more}
    wanted = sys.argv[1:] or list(recorders)
    unknown = [w for w in wanted if w not in recorders]
    if unknown:
        sys.exit(f"unknown fixture(s) {', '.join(unknown)}; valid choices: {', '.join(recorders)}")
    for name in wanted:
        recorders[name]()


if __name__ == "__main__":
    main()
