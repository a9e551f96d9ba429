"""Each face's names for the engine's ops are data (minifp/<face>/_names.py): every registered op has a row in
every face's table, every name there is reachable, and adding an op is one registry entry plus one row per face."""
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import minifp
import minifp.keras as keras
import minifp.tf as tf
import minifp.torch as torch
from minifp._ops import OPS
from minifp.keras import _names as keras_names
from minifp.tf import _names as tf_names
from minifp.torch import _names as torch_names

TABLES = {"torch": torch_names.NAMES, "keras": keras_names.NAMES, "tf": tf_names.NAMES}
PLACES = {"torch": {"torch": torch, "Tensor": torch.Tensor, "F": torch.nn.functional},
          "keras": {"ops": keras.ops, "activations": keras.activations, "Tensor": keras.Tensor},
          "tf": {"tf": tf, "math": tf.math, "nn": tf.nn, "linalg": tf.linalg}}


@pytest.mark.parametrize("face", TABLES)
def test_every_registered_op_has_a_row(face):
    missing = sorted(set(OPS) - set(TABLES[face]))
    assert not missing, f"ops without a row in minifp/{face}/_names.py: {missing}"
    assert not set(TABLES[face]) - set(OPS), "rows for ops that are not registered"


@pytest.mark.parametrize("face", TABLES)
def test_every_name_is_reachable(face):
    for op, names in TABLES[face].items():
        for name in names:
            where, _, attr = name.partition(".")
            assert callable(getattr(PLACES[face][where], attr, None)), f"{face}: {name} (the op {op})"


def test_names_a_face_leaves_out_are_the_ops_themselves():
    x = np.array([1.0, 2.0, 3.0], np.float32)
    assert torch.ge(torch.tensor(x), 2.0).tolist() == [False, True, True]
    assert keras.ops.greater_equal(x, 2.0).numpy().tolist() == [False, True, True]
    assert tf.math.less_equal(tf.constant(x), 2.0).numpy().tolist() == [True, True, False]
    assert isinstance(keras.ops.exp(x), keras.Tensor) and "exp" in keras.ops.__all__ and "ge" in torch.__all__


TOY = """
defop("toy_triple", lambda xp, x: x * 3, lambda xp, g, ans, x: g * 3, doc="Elementwise 3 * x (a toy).")
"""
CHECK = """
import numpy as np
import minifp, minifp.torch as torch, minifp.keras as keras, minifp.tf as tf
assert minifp.__file__.startswith(PACKAGE), minifp.__file__      # the copy, not the checkout
x = np.array([1.0, -2.0], np.float32)
t = torch.tensor(x, requires_grad=True)
y = torch.toy_triple(t)
y.sum().backward()
assert y.tolist() == [3.0, -6.0] and t.grad.tolist() == [3.0, 3.0]
assert torch.tensor(x).toy_triple().tolist() == [3.0, -6.0]
assert keras.ops.toy_triple(x).numpy().tolist() == [3.0, -6.0] and "toy_triple" in keras.ops.__all__
assert tf.math.toy_triple(tf.constant(x)).numpy().tolist() == [3.0, -6.0]
assert minifp.toy_triple(minifp.tensor(x)).float32().tolist() == [3.0, -6.0]
print("found")
"""


def test_a_new_op_is_one_entry_and_one_row_per_face(tmp_path):
    """In a copy of the package: register a toy op (one defop line in the registry) and give it one row in each
    face's table; a fresh process finds it as a function and a Tensor method of the PyTorch face, in keras.ops and
    in tf.math, and differentiable."""
    package = tmp_path / "minifp"
    shutil.copytree(Path(minifp.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    with open(package / "_ops.py", "a") as f:
        f.write(TOY)
    rows = {"torch": '("torch.toy_triple", "Tensor.toy_triple")', "keras": '("ops.toy_triple",)',
            "tf": '("math.toy_triple",)'}
    for face, row in rows.items():
        with open(package / face / "_names.py", "a") as f:
            f.write(f'NAMES["toy_triple"] = {row}\n')
    check = f"PACKAGE = {str(package)!r}\n" + textwrap.dedent(CHECK)
    out = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert out.returncode == 0 and out.stdout.strip() == "found", out.stderr[-3000:]
