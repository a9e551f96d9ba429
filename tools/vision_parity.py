"""Where minifp.torch's float32 eval logits part from PyTorch's: per-layer differences (not run by CI).

Two halves, run from the repository root, one after the other:

    python tools/vision_parity.py --torch OUT                 # in a venv with PyTorch + torchvision: OUT/*.npz
    PYTHONPATH=$PWD python tools/vision_parity.py OUT         # in minifp's venv: reads them, prints the table

The PyTorch half rebuilds tests/fixtures/pytorch/vision.json's models (the formula weights and input) and
records every leaf module's input and output, each leaf's float64 output on that same float32 input, and the
float64 model's logits. The minifp half prints its logits' distance from PyTorch's and from float64, then,
per kind of layer, the largest difference on PyTorch's own input (isolated: the layer's own rounding, not
the error it inherits), relative to the layer's largest float64 output, and the share of elements whose
float32 bits differ from PyTorch's (-v: every layer).
"""
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "pytorch" / "vision.json"
NAMES = ("mobilenet_v2", "resnet18")


def wave(spec):
    """The float32 values of a fixture's wave() spec (tools/record_pytorch.py's formula)."""
    i = np.arange(math.prod(spec["shape"]), dtype=np.int64)
    phase = spec["freq"] * i.astype(np.float64) + spec["k"] + spec["quad"] * ((i * i) % 10007).astype(np.float64)
    return (spec["offset"] + spec["scale"] * np.sin(phase)).astype(np.float32).reshape(spec["shape"])


def torch_half(out):
    import copy

    import torch
    sys.path.insert(0, str(ROOT / "tools"))
    from record_pytorch import import_torchvision
    torch.set_num_threads(1)            # as the fixture was recorded
    tv, fx = import_torchvision(), json.loads(FIXTURE.read_text())
    x = torch.from_numpy(wave(fx["x"]))
    for name in NAMES:
        model = getattr(tv.models, name)(num_classes=10)
        sd = model.state_dict()
        model.load_state_dict({e["key"]: torch.from_numpy(wave(e["init"])) if e["init"] else sd[e["key"]]
                               for e in fx["models"][name]["state_dict"]})
        model.eval()
        m64 = copy.deepcopy(model).double()
        seen = {}

        def keep(mname):
            def hook(mod, inputs, output):
                seen[mname] = (inputs[0].clone(), output.clone())   # in-place ReLUs overwrite them later
            return hook
        for mname, mod in model.named_modules():
            if not list(mod.children()):
                mod.register_forward_hook(keep(mname))
        with torch.no_grad():
            logits, logits64 = model(x), m64(x.double())
            layers = dict(m64.named_modules())
            arrays = {"logits": logits.numpy(), "logits64": logits64.numpy(), "order": np.array(list(seen))}
            for mname, (i, o) in seen.items():
                arrays["in:" + mname], arrays["out:" + mname] = i.numpy(), o.numpy()
                arrays["out64:" + mname] = layers[mname](i.double()).numpy()
        np.savez(Path(out) / f"{name}.npz", **arrays)
        gap = np.abs(logits64.numpy() - logits.numpy()).max()
        print(f"{name}: {len(seen)} layers, |float32 - float64| = {gap:.3e}")


def minifp_half(out, verbose):
    import minifp.torch as torch
    from minifp.torch.vision import models
    fx = json.loads(FIXTURE.read_text())
    for name in NAMES:
        z = np.load(Path(out) / f"{name}.npz")
        model = getattr(models, name)(num_classes=10)
        sd = model.state_dict()
        model.load_state_dict({e["key"]: torch.from_numpy(wave(e["init"])) if e["init"] else sd[e["key"]]
                               for e in fx["models"][name]["state_dict"]})
        model.eval()
        layers = dict(model.named_modules())
        with torch.no_grad():
            logits = model(torch.from_numpy(wave(fx["x"]))).numpy()
        print(f"{name}: |minifp - pytorch| {np.abs(logits - z['logits']).max():.3e}, |minifp - float64| "
              f"{np.abs(logits - z['logits64']).max():.3e}, |pytorch - float64| "
              f"{np.abs(z['logits'] - z['logits64']).max():.3e}")
        kinds = {}
        for mname in map(str, z["order"]):
            with torch.no_grad():
                mine = layers[mname](torch.from_numpy(z["in:" + mname])).numpy().astype(np.float64)
            theirs, exact = z["out:" + mname].astype(np.float64), z["out64:" + mname]
            scale = np.abs(exact).max() or 1.0
            row = (np.abs(mine - theirs).max() / scale, np.abs(mine - exact).max() / scale,
                   np.abs(theirs - exact).max() / scale, np.mean(mine != theirs))
            kind = type(layers[mname]).__name__
            if verbose:
                print(f"  {mname:26s} {kind:17s} minifp-pytorch {row[0]:.2e}  minifp-f64 {row[1]:.2e}  "
                      f"pytorch-f64 {row[2]:.2e}  bits differ {row[3]:.3f}")
            kinds.setdefault(kind, []).append(row)
        for kind, rows in kinds.items():
            r = np.array(rows)
            print(f"  {kind:17s} x{len(rows):<3d} largest relative difference: minifp-pytorch {r[:, 0].max():.2e}  "
                  f"minifp-f64 {r[:, 1].max():.2e}  pytorch-f64 {r[:, 2].max():.2e};  bits differ {r[:, 3].mean():.3f}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a not in ("--torch", "-v")]
    if len(args) != 1:
        sys.exit(__doc__)
    if "--torch" in sys.argv:
        Path(args[0]).mkdir(parents=True, exist_ok=True)
        torch_half(args[0])
    else:
        minifp_half(args[0], "-v" in sys.argv)
