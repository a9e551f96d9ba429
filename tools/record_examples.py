"""Run examples/pytorch/*.py under real PyTorch and record the losses they print into
tests/fixtures/pytorch/examples.json; tests/torch/test_examples.py runs the same files on minifp and compares.

Run by hand from the repository root with a PyTorch environment (see tools/record_pytorch.py):

    /work/torchenv/bin/python tools/record_examples.py

The examples draw their weights and data from NumPy, so both frameworks train the same model on the same data; the
settings below keep every run in float32 on the CPU (no autocast, no augmentation, no shuffling). It also writes
the small image folder the ImageNet-style example reads (tests/fixtures/pytorch/imagefolder, PNGs made by NumPy
and Pillow).
"""
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "tests/fixtures/pytorch/imagefolder"
# name -> (arguments, the regular expression of a loss line: its first group is the loss)
RUNS = {
    "gpt_train": (["--device=cpu", "--dtype=float32", "--max_iters=5", "--eval_interval=1000"],
                  r"^iter \d+: loss ([0-9.]+)"),
    "amp_recipe": (["--epochs=1"], r"^default precision epoch \d+ batch \d+: loss ([0-9.]+)"),
    "cifar_resnet": (["--device=cpu", "--no-augment", "--no-shuffle", "--epochs=1", "--lr=0.001"],
                     r"^batch \d+: loss ([0-9.]+)"),
    "imagenet_style": ([str(FOLDER), "--cpu", "--no-augment", "--no-shuffle", "--image-size=64", "-b", "4"],
                       r"^train batch \d+: loss ([0-9.]+)"),
}
# Runs the example with torchvision importable (its CUDA wheel needs record_pytorch's shim on CPU torch)
LAUNCH = ("import runpy, sys; sys.path.insert(0, {tools!r}); from record_pytorch import import_torchvision; "
          "import_torchvision(); sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")


def image_folder():
    """Two classes of 20x20 RGB images (8 to train, 4 to validate), each a class colour plus noise."""
    from PIL import Image
    rng = np.random.default_rng(0)
    for split, count in (("train", 4), ("val", 2)):
        for c, colour in enumerate(((200, 40, 40), (40, 40, 200))):
            folder = FOLDER / split / f"class_{c}"
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(count):
                pixels = np.clip(np.array(colour) + rng.integers(-60, 61, (20, 20, 3)), 0, 255).astype(np.uint8)
                Image.fromarray(pixels).save(folder / f"{i}.png")


def losses(output, pattern):
    return [float(m.group(1)) for m in re.finditer(pattern, output, re.M)]


def main():
    import torch
    image_folder()
    record = {"torch": torch.__version__, "runs": {}}
    for name, (args, pattern) in RUNS.items():
        with tempfile.TemporaryDirectory() as cwd:
            out = subprocess.run([sys.executable, "-c", LAUNCH.format(tools=str(ROOT / "tools")),
                                  str(ROOT / "examples/pytorch" / f"{name}.py"), *args], cwd=cwd, capture_output=True,
                                 text=True, check=True).stdout
        found = losses(out, pattern)
        assert found, f"{name}: no loss lines in\n{out}"
        record["runs"][name] = {"args": args, "pattern": pattern, "losses": found}
        print(name, found)
    record["runs"]["imagenet_style"]["args"][0] = "{imagefolder}"      # the test's own path to the folder
    path = ROOT / "tests/fixtures/pytorch/examples.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
