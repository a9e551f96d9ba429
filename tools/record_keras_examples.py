"""Run examples/keras's Keras 3 and tf.keras scripts under the real frameworks and record the losses they print into
tests/fixtures/keras/examples.json; tests/keras/test_keras_examples.py runs the same files on minifp and compares.

Run by hand from the repository root in the recorders' environment (see tools/record_keras.py):

    /work/tfenv/bin/python tools/record_keras_examples.py [--torch-python /work/torchenv/bin/python]

The scripts draw their data, noise and weights from NumPy, so both frameworks train the same model on the same
data; the arguments below turn off what draws its own random numbers (dropout, shuffling). Keras 3 scripts run on
its TensorFlow backend, tf.keras scripts on tf-keras 2.x (TF_USE_LEGACY_KERAS=1), one CPU thread, oneDNN off, except
the Transformer text classifier, which runs on Keras 3's PyTorch backend (--torch-python: a Python with torch and
keras 3.15): on the TensorFlow backend an Embedding's gradient is a tf.IndexedSlices, and Keras's Adam squares its
slices before scattering them, so a token seen twice in a batch gets g1**2 + g2**2 in the second moment where the
other backends (and minifp) have (g1 + g2)**2. Measured: the first step's weights agree to 4e-7 except those rows.
"""
import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# name -> (door: the module minifp runs it with, arguments, the regular expression of a loss: its group is the loss)
RUNS = {
    "mnist_convnet": ("minifp.keras", ["--samples=512", "--epochs=1", "--dropout=0", "--no-shuffle"],
                      r"^batch \d+: loss ([0-9.]+)"),
    "text_transformer": ("minifp.keras:torch", ["--samples=256", "--epochs=1", "--dropout=0", "--no-shuffle"],
                         r"^batch \d+: loss ([0-9.]+)"),
    "quickstart_experts": ("minifp.tf", ["--samples=256", "--epochs=1", "--no-shuffle"],
                           r"^step \d+: loss ([0-9.]+)"),
    "dcgan": ("minifp.tf", ["--samples=128", "--epochs=1", "--dropout=0", "--no-shuffle"],
              r"_loss ([0-9.]+)"),
}
POLICIES = ("float32", "mixed_float16")
ENV = {"KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "3", "TF_ENABLE_ONEDNN_OPTS": "0",
       "TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--torch-python", default="/work/torchenv/bin/python",
                        help="a Python with torch and keras 3.15, for the runs on Keras's PyTorch backend")
    options = parser.parse_args()
    import keras
    import tensorflow as tf
    record = {"keras": keras.__version__, "tensorflow": tf.__version__, "runs": {}}
    for name, (door, args, pattern) in RUNS.items():
        door, _, backend = door.partition(":")
        env = {**os.environ, **ENV, **({"TF_USE_LEGACY_KERAS": "1"} if door == "minifp.tf" else {}),
               **({"KERAS_BACKEND": backend} if backend else {})}
        python = options.torch_python if backend == "torch" else sys.executable
        losses = {}
        for policy in POLICIES:
            out = subprocess.run([python, str(ROOT / "examples/keras" / f"{name}.py"), *args,
                                  f"--policy={policy}"], env=env, capture_output=True, text=True, check=True).stdout
            losses[policy] = [float(x) for x in re.findall(pattern, out, re.M)]
            assert losses[policy], f"{name}: no loss lines in\n{out}"
            print(name, policy, losses[policy][:4], "...")
        record["runs"][name] = {"door": door, "backend": backend or "tensorflow", "args": args, "pattern": pattern,
                                "losses": losses}
    path = ROOT / "tests/fixtures/keras/examples.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
