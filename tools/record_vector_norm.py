"""Record real PyTorch's vector_norm and clip_grad_norm_ on float16 and bfloat16 tensors (CPU, one thread) into
tests/fixtures/pytorch/vector_norm_cpu.npz, which tests/torch/test_vector_norm.py reads.

    /work/torchenv/bin/python tools/record_vector_norm.py

PyTorch's CPU computes the norm's backward with the same formula (norm_backward) as on CUDA, each step a tensor of
the input's type, so the gradients check minifp's staged formula; its forward sums in float32 in its own order
(the one rounding to the half type hides it). The inputs are stored beside the outputs (raw bits, uint16)."""
from pathlib import Path

import numpy as np
import torch

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "pytorch" / "vector_norm_cpu.npz"
ORDS = (2.0, 1.0, 3.0, 1.5, 0.5, float("inf"), -float("inf"), 0.0, 4.0, -1.0)
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def bits(t):
    return t.detach().contiguous().view(torch.int16).numpy().view(np.uint16)


def record(rng, name, dt, out):
    x = torch.from_numpy(rng.standard_normal((8, 64)).astype(np.float32)).to(dt)
    x[0, :5], x[1] = 0, 0               # zeros: the masked branches of norm_backward
    g = torch.from_numpy(rng.standard_normal(8).astype(np.float32)).to(dt)
    out[f"{name}/x"], out[f"{name}/g"] = bits(x), bits(g)
    for p in ORDS:
        xx = x.clone().requires_grad_()
        y = torch.linalg.vector_norm(xx, p, dim=1)
        y.backward(g)
        out[f"{name}/{p}/y"] = bits(y)
        out[f"{name}/{p}/grad"] = bits(xx.grad if xx.grad is not None else torch.zeros_like(x))
    grads = [torch.from_numpy(rng.standard_normal(s).astype(np.float32) * 30).to(dt) for s in ((300,), (7, 5))]
    params = [torch.nn.Parameter(torch.zeros_like(gr)) for gr in grads]
    for prm, gr in zip(params, grads):
        prm.grad = gr.clone()
    total = torch.nn.utils.clip_grad_norm_(params, 1.0)
    out[f"{name}/clip/total"] = bits(total)
    for i, (prm, gr) in enumerate(zip(params, grads)):
        out[f"{name}/clip/in{i}"], out[f"{name}/clip/out{i}"] = bits(gr), bits(prm.grad)


def main():
    torch.set_num_threads(1)
    rng, out = np.random.default_rng(7), {}
    for name, dt in DTYPES.items():
        record(rng, name, dt, out)
    np.savez_compressed(OUT, **out)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes), torch {torch.__version__}")


if __name__ == "__main__":
    main()
