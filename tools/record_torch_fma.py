"""Record real PyTorch's fused multiply-adds into tests/fixtures/pytorch/fma.json; tests/torch/test_fma.py runs the
same cases through minifp.torch and compares the bits.

    /work/torchenv/bin/python tools/record_torch_fma.py

PyTorch's CPU kernels compute add(x, y, alpha=a) as one FMA, a * y + x rounded once (alpha in float32; for a
float16 or bfloat16 result alpha is first rounded into that format), and so
sub(alpha=), lerp (either branch) and addcmul (value * t1 first, then an FMA); addcdiv rounds three times. So do
the single-tensor optimizers built from them. Each case here runs on float32 inputs drawn from a seeded generator
(the test draws the same ones) and keeps the SHA-1 of its result's bits, a few values, and how many results two
roundings would get wrong (so that a case shows it tells the two apart). The optimizers run with a correctly
rounded sqrt (see correctly_rounded_sqrt).
"""
import hashlib
import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pytorch" / "fma.json"
N = 4099        # not a multiple of the vector width: the kernels' scalar tails run too


def inputs(name, count):
    """count float32 arrays of N standard normals from a generator seeded by the case's name."""
    rng = np.random.default_rng([ord(c) for c in name])
    return [rng.standard_normal(N).astype(np.float32) for _ in range(count)]


# name: (number of inputs, function of (torch, *tensors) -> tensor)
OPS = {
    "add_alpha": (2, lambda torch, x, y: torch.add(x, y, alpha=0.3)),
    "add_alpha_negative": (2, lambda torch, x, y: torch.add(x, y, alpha=-0.01)),
    "add_alpha_scalar": (1, lambda torch, x: torch.add(x, 2.5, alpha=0.3)),
    "sub_alpha": (2, lambda torch, x, y: torch.sub(x, y, alpha=0.7)),
    "rsub_alpha": (2, lambda torch, x, y: torch.rsub(x, y, alpha=0.3)),
    "rsub_alpha_scalar": (1, lambda torch, x: torch.rsub(x, 1.5, alpha=0.3)),
    "method_add_alpha": (2, lambda torch, x, y: x.add(y, alpha=1.7)),
    "method_add_alpha_inplace": (2, lambda torch, x, y: x.clone().add_(y, alpha=-0.1)),
    "method_sub_alpha_inplace": (2, lambda torch, x, y: x.clone().sub_(y, alpha=0.1)),
    "lerp_small": (2, lambda torch, x, y: torch.lerp(x, y, 0.1)),
    "lerp_large": (2, lambda torch, x, y: torch.lerp(x, y, 0.7)),
    "lerp_tensor_weight": (3, lambda torch, x, y, w: torch.lerp(x, y, w * 0.25)),
    "lerp_inplace": (2, lambda torch, x, y: x.clone().lerp_(y, 0.25)),
    "addcmul": (3, lambda torch, x, a, b: torch.addcmul(x, a, b, value=-0.3)),
    "addcmul_inplace": (3, lambda torch, x, a, b: x.clone().addcmul_(a, b, value=0.001)),
    "addcdiv": (3, lambda torch, x, a, b: torch.addcdiv(x, a, b.abs() + 0.1, value=-0.3)),
    # half-precision results on the CPU: alpha rounded into the result's format first, then one FMA in float32;
    # 4096 elements, a multiple of every vector width, as the kernels' scalar tails round the product and the sum
    # into the half format one after the other (not emulated)
    "add_alpha_half": (2, lambda torch, x, y: torch.add(x[:4096].half(), y[:4096].half(), alpha=0.3).float()),
    "sub_alpha_bfloat16": (2, lambda torch, x, y: torch.sub(x[:4096].bfloat16(), y[:4096].bfloat16(), alpha=0.7)
                           .float()),
    "add_alpha_inplace_half": (2, lambda torch, x, y: x[:4096].half().add_(y[:4096].half(), alpha=-0.1).float()),
    "sub_alpha_inplace_bfloat16": (2, lambda torch, x, y: x[:4096].bfloat16().sub_(y[:4096].bfloat16(), alpha=1 / 3)
                                   .float()),
    "add_alpha_scalar_half": (1, lambda torch, x: torch.add(x[:4096].half(), 2.5, alpha=0.3).float()),
    "add_alpha_half_and_float": (2, lambda torch, x, y: torch.add(x.half(), y, alpha=0.3)),
}

# name: (optimizer class, keyword arguments); five steps on one parameter, a fresh gradient each step
OPTIMIZERS = {
    "sgd": ("SGD", {"lr": 0.1}),
    "sgd_momentum": ("SGD", {"lr": 0.1, "momentum": 0.9}),
    "sgd_dampening_wd": ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}),
    "sgd_nesterov": ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-3}),
    "adam": ("Adam", {"lr": 0.01}),
    "adam_wd_amsgrad": ("Adam", {"lr": 0.01, "weight_decay": 0.01, "amsgrad": True}),
    "adamw": ("AdamW", {"lr": 0.01, "weight_decay": 0.1}),
    "rmsprop": ("RMSprop", {"lr": 0.01}),
    "rmsprop_centered_momentum": ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True, "weight_decay": 0.01}),
    "adagrad": ("Adagrad", {"lr": 0.1, "weight_decay": 0.01}),
    "adadelta": ("Adadelta", {"lr": 1.0, "weight_decay": 0.01}),
    "adamax": ("Adamax", {"lr": 0.01, "weight_decay": 0.01}),
    "nadam": ("NAdam", {"lr": 0.01, "weight_decay": 0.01}),
    "radam": ("RAdam", {"lr": 0.01, "weight_decay": 0.01}),
    "asgd": ("ASGD", {"lr": 0.01, "weight_decay": 0.01}),
    "rprop": ("Rprop", {"lr": 0.01}),
}
STEPS = 6       # RAdam's rectified branch starts after step 5


def digest(a):
    return hashlib.sha1(np.ascontiguousarray(a, np.float32).view(np.uint32).tobytes()).hexdigest()


def run_op(torch, name):
    count, fn = OPS[name]
    return fn(torch, *[torch.tensor(a) for a in inputs(name, count)]).detach().numpy()


def run_optimizer(torch, name):
    """The parameter after STEPS steps, and the optimizer's float state tensors after them (sorted by key)."""
    cls, kwargs = OPTIMIZERS[name]
    w, *grads = inputs(name, STEPS + 1)
    p = torch.nn.Parameter(torch.tensor(w))
    opt = getattr(torch.optim, cls)([p], **kwargs)
    for g in grads:
        p.grad = torch.tensor(g)
        opt.step()
    state = opt.state[p]
    tensors = {k: v.detach().numpy() for k, v in sorted(state.items())
               if hasattr(v, "shape") and tuple(v.shape) == (N,) and v.dtype == torch.float32}
    return p.detach().numpy(), tensors


def _two_roundings(name):
    """How many results of the op would differ if its multiply and add rounded separately."""
    count, _ = OPS[name]
    xs = inputs(name, count)
    import torch
    got = run_op(torch, name)
    fused = {"add_alpha": lambda x, y: x + np.float32(0.3) * y,
             "add_alpha_negative": lambda x, y: x + np.float32(-0.01) * y,
             "sub_alpha": lambda x, y: x - np.float32(0.7) * y,
             "lerp_small": lambda x, y: x + np.float32(0.1) * (y - x),
             "addcmul": lambda x, a, b: x + np.float32(-0.3) * a * b}
    if name not in fused:
        return None
    return int(np.sum(fused[name](*xs).view(np.uint32) != got.view(np.uint32)))


def correctly_rounded_sqrt(torch):
    """Tensor.sqrt and sqrt_ (and the foreach sqrt) as IEEE square roots (NumPy's). PyTorch's CPU sqrt on float32 tensors of more than 8
    elements is 1 ulp off in about 17% of results (measured on 2.13 with AVX2); CUDA's sqrtf, like minifp's, is
    correctly rounded. The optimizer cases then test the rest of each rule."""
    torch.Tensor.sqrt = lambda self: torch.from_numpy(np.sqrt(self.detach().numpy()))
    torch.Tensor.sqrt_ = lambda self: self.copy_(torch.from_numpy(np.sqrt(self.detach().numpy())))
    torch._foreach_sqrt = lambda tensors: [t.sqrt() for t in tensors]          # (the foreach code's)

    def foreach_sqrt_(tensors):
        for t in tensors:
            t.sqrt_()
    torch._foreach_sqrt_ = foreach_sqrt_


def main():
    import torch
    torch.set_num_threads(1)
    correctly_rounded_sqrt(torch)
    record = {"torch": torch.__version__, "n": N, "steps": STEPS, "ops": {}, "optimizers": {}}
    for name in OPS:
        y = run_op(torch, name)
        record["ops"][name] = {"sha1": digest(y), "size": int(y.size), "head": y[:4].tolist(),
                               "two_roundings_differ": _two_roundings(name)}
    for name in OPTIMIZERS:
        w, state = run_optimizer(torch, name)
        record["optimizers"][name] = {"sha1": digest(w), "head": w[:4].tolist(),
                                      "state": {k: digest(v) for k, v in state.items()}}
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
