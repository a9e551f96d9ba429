"""Record whole training steps on CUDA, for comparing minifp's emulated "cuda" with a real GPU step by step:

    python3 tools/record_cuda_training.py OUT.json                  # real PyTorch on its GPU
    python3 tools/record_cuda_training.py --face minifp OUT.json    # minifp.torch's "cuda" (emulated without a GPU)
    python3 tools/record_cuda_training.py --compare A.json B.json   # per run: which values have the same bits

Each run builds a small model from NumPy-drawn weights, trains it STEPS steps on NumPy-drawn data, and keeps the
first step's logits and gradients, every step's loss and the last step's parameters, as hex codes
(tests/fixtures/pytorch/cuda_training.json; tests/torch/test_cuda_training.py).
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

STEPS = 5
RUNS = {
    # name: (model, mode, optimizer, keyword arguments)
    "mlp_f32_sgd": ("mlp", "float32", "SGD", {"lr": 0.1, "momentum": 0.9}),
    "mlp_f16_amp_adam": ("mlp", "float16", "Adam", {"lr": 1e-3}),
    "mlp_bf16_amp_adamw": ("mlp", "bfloat16", "AdamW", {"lr": 1e-3, "weight_decay": 0.01}),
    "cnn_f32_sgd": ("cnn", "float32", "SGD", {"lr": 0.05, "momentum": 0.9, "weight_decay": 5e-4}),
    "cnn_f16_amp_sgd": ("cnn", "float16", "SGD", {"lr": 0.05, "momentum": 0.9}),
}


def build(torch, kind):
    """The model, its weights drawn from a NumPy generator (the same on every face)."""
    nn = torch.nn
    if kind == "mlp":
        model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    else:
        model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                              nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(),
                              nn.Linear(16 * 4 * 4, 10))
    rng = np.random.default_rng(11)
    with torch.no_grad():
        for p in model.parameters():
            bound = 1 / np.sqrt(max(1, p[0].numel() if p.dim() > 1 else p.numel()))
            p.copy_(torch.tensor(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))
    return model.cuda()


def data(kind, step):
    rng = np.random.default_rng(100 + step)
    shape = (32, 64) if kind == "mlp" else (8, 3, 8, 8)
    return rng.standard_normal(shape).astype(np.float32), rng.integers(0, 10, shape[0])


def codes(torch, t):
    t = t.detach().float().cpu()
    return t.contiguous().view(torch.int32).numpy().astype("<u4").tobytes().hex()


def run(torch, name):
    kind, mode, opt_name, kwargs = RUNS[name]
    model = build(torch, kind)
    opt = getattr(torch.optim, opt_name)(model.parameters(), **kwargs)
    half = mode != "float32"
    scaler = torch.amp.GradScaler("cuda", enabled=mode == "float16")
    out = {"losses": []}
    for step in range(STEPS):
        x, y = data(kind, step)
        x, y = torch.tensor(x).cuda(), torch.tensor(y).cuda()
        opt.zero_grad()
        with torch.autocast("cuda", dtype=getattr(torch, mode if half else "float16"), enabled=half):
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits, y)
        scaler.scale(loss).backward()
        if step == 0:
            out["logits"] = codes(torch, logits)
            out["grads"] = [codes(torch, p.grad) for p in model.parameters()]
        scaler.step(opt)
        scaler.update()
        out["losses"].append(codes(torch, loss))
    out["params"] = [codes(torch, p) for p in model.parameters()]
    return out


def compare(a, b):
    """Per run: the share of values with the same bits (logits, gradients at step 1; the last parameters)."""
    def same(x, y):
        u, v = (np.frombuffer(bytes.fromhex(h), "<u4") for h in (x, y))
        return (u == v).mean()
    for name in a["runs"]:
        ra, rb = a["runs"][name], b["runs"][name]
        losses = "".join("=" if x == y else "x" for x, y in zip(ra["losses"], rb["losses"]))
        grads = " ".join(f"{same(x, y):.2f}" for x, y in zip(ra["grads"], rb["grads"]))
        params = " ".join(f"{same(x, y):.2f}" for x, y in zip(ra["params"], rb["params"]))
        print(f"{name}: logits {same(ra['logits'], rb['logits']):.2f}  losses {losses}  grads {grads}\n"
              f"   params {params}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--face", default="torch", choices=["torch", "minifp"])
    parser.add_argument("--compare", nargs=2, type=Path)
    parser.add_argument("out", nargs="?", type=Path)
    args = parser.parse_args()
    if args.compare:
        return compare(*(json.loads(p.read_text()) for p in args.compare))
    if args.face == "minifp":
        import minifp.torch as torch
    else:
        import torch
    out = {"torch": torch.__version__, "face": args.face, "runs": {name: run(torch, name) for name in RUNS}}
    args.out.write_text(json.dumps(out) + "\n")
    print(f"{args.out}: {len(RUNS)} runs, {args.out.stat().st_size // 1024} KB")


if __name__ == "__main__":
    sys.exit(main())
