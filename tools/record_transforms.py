"""Record torchvision's deterministic transforms into tests/fixtures/pytorch/transforms.json.

Run by hand from the repository root, with the environment of tools/record_pytorch.py:

    /work/torchenv/bin/python tools/record_transforms.py

Each case applies one transform to a small float32 or uint8 image tensor (3, 13, 17) stored in the file:
Resize (antialiased bilinear, plain bilinear, nearest, nearest-exact, shorter edge, max_size), CenterCrop
(cropping and padding), and ColorJitter with one-point ranges (a fixed factor, so no random draw decides the
result). CI does not run this script; tests/torch/test_data_breadth.py reads the JSON.
"""
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record_pytorch import import_torchvision, write  # noqa: E402

SHAPE = (3, 13, 17)
CASES = [  # (name, transform's class, its arguments as JSON: [args, kwargs])
    ("resize_down", "Resize", [[[7, 9]], {}]),
    ("resize_short_edge", "Resize", [[8], {}]),
    ("resize_up", "Resize", [[[20, 25]], {}]),
    ("resize_mixed", "Resize", [[[26, 5]], {}]),
    ("resize_no_antialias", "Resize", [[[7, 9]], {"antialias": False}]),
    ("resize_nearest", "Resize", [[[7, 30]], {"interpolation": "nearest"}]),
    ("resize_nearest_exact", "Resize", [[[26, 5]], {"interpolation": "nearest-exact"}]),
    ("resize_max_size", "Resize", [[8], {"max_size": 10}]),
    ("center_crop", "CenterCrop", [[5], {}]),
    ("center_crop_hw", "CenterCrop", [[[9, 11]], {}]),
    ("center_crop_pad", "CenterCrop", [[[16, 20]], {}]),
    ("center_crop_mixed", "CenterCrop", [[[15, 4]], {}]),
    ("brightness", "ColorJitter", [[], {"brightness": [1.3, 1.3]}]),
    ("contrast", "ColorJitter", [[], {"contrast": [0.6, 0.6]}]),
    ("saturation", "ColorJitter", [[], {"saturation": [1.7, 1.7]}]),
    ("hue", "ColorJitter", [[], {"hue": [0.2, 0.2]}]),
    ("hue_negative", "ColorJitter", [[], {"hue": [-0.35, -0.35]}]),
]


def images():
    """The two inputs: float32 values in [0, 1) and uint8 values, from NumPy's seed 0."""
    g = np.random.default_rng(0)
    return {"float32": g.random(SHAPE).astype(np.float32), "uint8": g.integers(0, 256, SHAPE).astype(np.uint8)}


def main():
    tv = import_torchvision()
    if tv is None:
        sys.exit("torchvision is not importable")
    from torchvision import transforms as T
    torch.set_num_threads(1)
    inputs = images()
    cases = []
    for name, cls, (args, kwargs) in CASES:
        kw = dict(kwargs)
        if "interpolation" in kw:
            kw["interpolation"] = T.InterpolationMode(kw["interpolation"])
        transform = getattr(T, cls)(*args, **kw)
        for dtype, image in inputs.items():
            out = transform(torch.from_numpy(image.copy()))
            cases.append({"name": name, "transform": cls, "args": args, "kwargs": kwargs, "dtype": dtype,
                          "shape": list(out.shape), "values": out.numpy().reshape(-1).tolist()})
    write("transforms.json", {"torchvision": tv.__version__, "torch": torch.__version__, "shape": list(SHAPE),
                              "inputs": {k: v.reshape(-1).tolist() for k, v in inputs.items()}, "cases": cases})


if __name__ == "__main__":
    main()
