"""PolynomialDecay and InverseTimeDecay against what Keras 3 recorded for the same calls
(tools/record_keras_schedules.py -> tests/fixtures/keras/schedules_more.json)."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import minifp.keras as keras

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import record_keras_schedules as cases  # noqa: E402

RECORDED = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "schedules_more.json").read_text())
GOT = cases.run(keras)


@pytest.mark.parametrize("i", range(len(cases.CASES)), ids=[f"{n}-{i}" for i, (n, _) in enumerate(cases.CASES)])
def test_schedules_give_kerass_float32_rates(i):
    assert GOT[i] == RECORDED["cases"][i]


def test_an_optimizer_follows_the_schedule():
    schedule = keras.optimizers.schedules.InverseTimeDecay(0.1, decay_steps=5, decay_rate=0.5)
    opt = keras.optimizers.SGD(learning_rate=schedule)
    v = keras.Variable([1.0])
    for _ in range(3):
        opt.apply([keras.ops.ones((1,))], [v])
    # steps 0, 1, 2 at 0.1 / (1 + 0.5 * step / 5), each rate and update in float32
    w = np.float32(1.0)
    for step in range(3):
        w = np.float32(w - schedule(step) * np.float32(1.0))
    assert float(v.numpy()[0]) == float(w)
