"""minifp.keras raises what Keras 3 raised for the snippets of tools/record_keras_errors.py (the exception's type
and its message, recorded in tests/fixtures/keras/errors_more.json), and runs those Keras runs."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import minifp.keras as keras

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import record_keras_errors  # noqa: E402

RECORDED = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "errors_more.json").read_text())


@pytest.fixture(scope="module")
def got():
    return record_keras_errors.run(keras, keras.layers, np)


@pytest.mark.parametrize("case", list(RECORDED["cases"]))
def test_raises_what_keras_raises(case, got):
    assert got[case] == RECORDED["cases"][case]


def test_every_case_is_recorded():
    assert list(RECORDED["cases"]) == record_keras_errors.CASES
