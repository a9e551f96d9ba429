"""Record real PyTorch's optimizers on float16 and bfloat16 parameters (CPU, single-tensor) into
tests/fixtures/pytorch/optim_half.json; tests/torch/test_optim_half.py runs the same cases through minifp.torch
and compares the bits.

    ATEN_CPU_CAPABILITY=avx2 /work/torchenv/bin/python tools/record_torch_half_optim.py
    python3 tools/record_torch_half_optim.py --device cuda OUT.json     # on a GPU machine (tools "device")
    python3 tools/record_torch_half_optim.py --device cuda --face minifp OUT.json   # minifp.torch's "cuda"
    ATEN_CPU_CAPABILITY=avx2 /work/torchenv/bin/python tools/record_torch_half_optim.py --cpu-foreach

--cpu-foreach writes tests/fixtures/pytorch/optim_cpu_foreach.json: every case in float32 with foreach=True on the
CPU, PyTorch's float32 sqrt made correctly rounded as tools/record_torch_fma.py makes it.

On CUDA it records each case three ways (PyTorch's default there, foreach; foreach=False, the single-tensor code;
fused=True where the optimizer has a fused kernel) and in float32 too, for tests/torch/test_optim_cuda.py.

PyTorch keeps a parameter's optimizer state (momentum_buffer, exp_avg, exp_avg_sq, ...) in the parameter's dtype,
and every tensor op of the update rounds its result into it. So a float16 model's Adam loses exp_avg_sq to zero
where the gradient's square is below float16's smallest subnormal, eps (1e-8) to zero beside it, and its weights
to inf and NaN: the cases' gradients span 1e-7 to 1 so that this shows. Each case runs STEPS steps on two
parameters, of SIZES values: 64 (a multiple of every vector width) and 37 (whose last 37 mod 32 = 5 values the CPU
kernels' scalar tails take under AVX2, rounding a product into the dtype where the vector code fuses it), and keeps
the parameters' 16-bit codes after every step and the state's at the end, as hex.
"""
import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pytorch" / "optim_half.json"
SIZES, STEPS = (64, 37), 6

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
# Cases recorded on CUDA only: fused Adam's L2 term and its powf bias corrections (0.95**6 is an ulp off the
# correctly rounded power), and steps through a GradScaler (SCALED: its init_scale, not a power of two, so that
# unscaling by a division and by the reciprocal's product differ)
CUDA_CASES = {
    "adam_l2_beta95": ("Adam", {"lr": 1e-3, "weight_decay": 0.01, "betas": (0.9, 0.95)}),
    "adam_l2_scaled": ("Adam", {"lr": 1e-3, "weight_decay": 0.01}),
    "adamw_scaled": ("AdamW", {"lr": 1e-2, "weight_decay": 0.1}),
    "sgd_momentum_scaled": ("SGD", {"lr": 0.01, "momentum": 0.9, "weight_decay": 1e-3}),
}
SCALED = {"adam_l2_scaled": 3072.0, "adamw_scaled": 3072.0, "sgd_momentum_scaled": 3072.0}
DTYPES = ("float16", "bfloat16")


def values(name, step, n=SIZES[0]):
    """n float32 values (a parameter at step 0, its gradient at steps 1..): signed, magnitudes 10**-7 to 10**0
    for gradients and 10**-3 to 10 for the parameter, from a generator seeded by the case, the step and n."""
    rng = np.random.default_rng([ord(c) for c in name] + [step] + ([n] if n != SIZES[0] else []))
    low, high = (-3, 1) if step == 0 else (-7, 0)
    return (rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(low, high, n)).astype(np.float32)


IMPLEMENTATIONS = {"foreach": {}, "single": {"foreach": False}, "fused": {"fused": True}}
FUSED = ("SGD", "Adam", "AdamW", "Adagrad")       # the optimizers with a fused CUDA kernel


def codes(torch_module, t):
    """The codes of a float16, bfloat16 (four hex digits each) or float32 tensor (eight), little-endian."""
    t = t.detach().cpu()
    wide = t.dtype == torch_module.float32
    return t.view(torch_module.int32 if wide else torch_module.int16).numpy().astype("<u4" if wide else "<u2") \
        .tobytes().hex()


def run(torch_module, name, dtype, device="cpu", **extra):
    """{"params": [[each parameter's codes] after each step], "state": [{key: [dtype, codes or value]} of each
    parameter]} of one case in one dtype on one device (extra: more keyword arguments of the optimizer)."""
    cls, kwargs = {**CASES, **CUDA_CASES}[name]
    dt = getattr(torch_module, dtype)
    ps = [torch_module.tensor(values(name, 0, n), dtype=dt, device=device).requires_grad_(True) for n in SIZES]
    opt = getattr(torch_module.optim, cls)(ps, **kwargs, **extra)
    scale = SCALED.get(name)
    if scale:
        scaler = torch_module.amp.GradScaler(device, init_scale=scale)
        scaler.scale(torch_module.zeros((), device=device))     # (makes its scale tensor)
    after = []
    for step in range(1, STEPS + 1):
        for p, n in zip(ps, SIZES):
            p.grad = torch_module.tensor(values(name, step, n) * (scale or 1), dtype=dt, device=device)
        if scale:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        after.append([codes(torch_module, p) for p in ps])
    state = [{k: [str(v.dtype).removeprefix("torch."), codes(torch_module, v) if v.dtype == dt else float(v)]
              for k, v in opt.state[p].items()} for p in ps]
    return {"params": after, "state": state}


def record_cuda(torch_module, device="cuda"):
    """Every case on CUDA: {implementation: {dtype: run, or {"error": message}}} (fused only where the optimizer
    has a fused kernel)."""
    def attempt(name, dtype, extra):
        try:
            return run(torch_module, name, dtype, device, **extra)
        except Exception as e:      # noqa: BLE001 - an implementation PyTorch refuses is recorded as refused
            return {"error": f"{type(e).__name__}: {e}"}
    cases = {**CASES, **CUDA_CASES}
    return {name: {"optimizer": cases[name][0], "kwargs": cases[name][1], "scale": SCALED.get(name), **{
        impl: {dtype: attempt(name, dtype, extra) for dtype in (*DTYPES, "float32")}
        for impl, extra in IMPLEMENTATIONS.items() if impl != "fused" or cases[name][0] in FUSED}} for name in cases}


def main():
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--face", default="torch", choices=["torch", "minifp"])
    parser.add_argument("--cpu-foreach", action="store_true")
    parser.add_argument("out", nargs="?", type=Path, default=OUT)
    args = parser.parse_args()
    if args.face == "minifp":
        import minifp.torch as torch
    else:
        import torch
    out = {"torch": torch.__version__, "sizes": SIZES, "steps": STEPS}
    if args.cpu_foreach:
        from record_torch_fma import correctly_rounded_sqrt
        correctly_rounded_sqrt(torch)
        args.out = args.out if args.out != OUT else OUT.with_name("optim_cpu_foreach.json")
        out["cases"] = {name: run(torch, name, "float32", foreach=True) for name in CASES}
    elif args.device == "cuda":
        out |= {"gpu": torch.cuda.get_device_name(), "cases": record_cuda(torch)}
    else:
        out["cases"] = {name: {"optimizer": CASES[name][0], "kwargs": CASES[name][1],
                               **{dtype: run(torch, name, dtype) for dtype in DTYPES}} for name in CASES}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"{args.out}: {len(out['cases'])} cases, {args.out.stat().st_size // 1024} KB")


if __name__ == "__main__":
    main()
