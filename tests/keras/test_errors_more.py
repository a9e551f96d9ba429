"""minifp.keras raises what Keras 3 raised for the snippets of tools/record_keras_errors.py (the exception's type
and its message, recorded in tests/fixtures/keras/errors_more.json), and runs those Keras runs."""
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import minifp.keras as keras

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import record_keras_errors  # noqa: E402

RECORDED = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "errors_more.json").read_text())
# Where minifp's words differ, and why: its symbolic call infers shapes by running the layer on a batch of one, so
# the shape it reports has 1 where Keras's has None (the rest of the message is Keras's).
BATCH_OF_ONE = {"layers.MaxPooling2D(pool_size=5)(keras.Input((3, 3, 1)))"}


@pytest.fixture(scope="module")
def got():
    return record_keras_errors.run(keras, keras.layers, np)


@pytest.mark.parametrize("case", list(RECORDED["cases"]))
def test_raises_what_keras_raises(case, got):
    want = RECORDED["cases"][case]
    if case in BATCH_OF_ONE:
        want = [want[0], re.sub(r"\[None ", "[1 ", want[1])]
    assert got[case] == want


def test_every_case_is_recorded():
    assert list(RECORDED["cases"]) == record_keras_errors.CASES
