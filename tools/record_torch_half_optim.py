"""Record real PyTorch's optimizers on float16 and bfloat16 parameters (CPU, single-tensor) into
tests/fixtures/pytorch/optim_half.json; tests/torch/test_optim_half.py runs the same cases through minifp.torch
and compares the bits.

    ATEN_CPU_CAPABILITY=avx2 /work/torchenv/bin/python tools/record_torch_half_optim.py

PyTorch keeps a parameter's optimizer state (momentum_buffer, exp_avg, exp_avg_sq, ...) in the parameter's dtype,
and every tensor op of the update rounds its result into it. So a float16 model's Adam loses exp_avg_sq to zero
where the gradient's square is below float16's smallest subnormal, eps (1e-8) to zero beside it, and its weights
to inf and NaN: the cases' gradients span 1e-7 to 1 so that this shows. Each case runs STEPS steps on one
parameter of N values (a multiple of every vector width: the kernels' scalar tails round otherwise) and keeps the
parameter's 16-bit codes after every step and the state's at the end, as hex.
"""
import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pytorch" / "optim_half.json"
N, STEPS = 64, 6

# name: (optimizer class, keyword arguments)
CASES = {
    "sgd": ("SGD", {"lr": 0.1}),
    "sgd_momentum": ("SGD", {"lr": 0.01, "momentum": 0.9}),
    "sgd_dampening_wd": ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}),
    "sgd_nesterov_maximize": ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-3,
                                      "maximize": True}),
    "adam": ("Adam", {"lr": 1e-3}),
    "adam_eps": ("Adam", {"lr": 1e-3, "eps": 1e-4}),
    "adam_wd_amsgrad": ("Adam", {"lr": 0.01, "weight_decay": 0.01, "amsgrad": True}),
    "adamw": ("AdamW", {"lr": 0.01, "weight_decay": 0.1}),
    "rmsprop": ("RMSprop", {"lr": 0.01}),
    "rmsprop_centered_momentum": ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True, "weight_decay": 0.01}),
    "adagrad": ("Adagrad", {"lr": 0.1, "weight_decay": 0.01, "lr_decay": 0.01}),
    "adadelta": ("Adadelta", {"lr": 1.0, "weight_decay": 0.01}),
    "adamax": ("Adamax", {"lr": 0.01, "weight_decay": 0.01}),
    "nadam": ("NAdam", {"lr": 0.01, "weight_decay": 0.01}),
    "nadam_decoupled": ("NAdam", {"lr": 0.01, "weight_decay": 0.01, "decoupled_weight_decay": True}),
    "radam": ("RAdam", {"lr": 0.01, "weight_decay": 0.01}),
    "asgd": ("ASGD", {"lr": 0.01, "weight_decay": 0.01, "t0": 2}),
    "rprop": ("Rprop", {"lr": 0.01}),
}
DTYPES = ("float16", "bfloat16")


def values(name, step):
    """N float32 values (the parameter at step 0, the gradient at steps 1..): signed, magnitudes 10**-7 to 10**0
    for gradients and 10**-3 to 10 for the parameter, from a generator seeded by the case and the step."""
    rng = np.random.default_rng([ord(c) for c in name] + [step])
    low, high = (-3, 1) if step == 0 else (-7, 0)
    return (rng.choice([-1.0, 1.0], N) * 10.0 ** rng.uniform(low, high, N)).astype(np.float32)


def codes(torch_module, t):
    """The 16-bit codes of a float16 or bfloat16 tensor, as hex (four digits each)."""
    return t.detach().view(torch_module.int16).numpy().astype("<u2").tobytes().hex()


def run(torch_module, name, dtype):
    """{"params": [codes after each step], "state": {key: [dtype, codes or value]}} of one case in one dtype."""
    cls, kwargs = CASES[name]
    dt = getattr(torch_module, dtype)
    p = torch_module.tensor(values(name, 0), dtype=dt).requires_grad_(True)
    opt = getattr(torch_module.optim, cls)([p], **kwargs)
    after = []
    for step in range(1, STEPS + 1):
        p.grad = torch_module.tensor(values(name, step), dtype=dt)
        opt.step()
        after.append(codes(torch_module, p))
    state = {k: [str(v.dtype).removeprefix("torch."), codes(torch_module, v) if v.dtype == dt else float(v)]
             for k, v in opt.state[p].items()}
    return {"params": after, "state": state}


def main():
    import torch
    out = {"torch": torch.__version__, "n": N, "steps": STEPS, "cases": {
        name: {"optimizer": CASES[name][0], "kwargs": CASES[name][1],
               **{dtype: run(torch, name, dtype) for dtype in DTYPES}} for name in CASES}}
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"{OUT}: {len(CASES)} cases x {len(DTYPES)} dtypes, {OUT.stat().st_size // 1024} KB")


if __name__ == "__main__":
    main()
