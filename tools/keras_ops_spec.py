"""The array spec that keras.ops case modules (tools/keras_ops_cases_*.py) write: `A(shape, dtype, kind)`, `A.of(values, dtype)`.

It lives in tests/keras/ops_samples.py (which the tests import without Keras); this module only re-exports it.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from tests.keras.ops_samples import A  # noqa: E402

__all__ = ["A"]
