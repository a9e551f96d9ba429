"""Multi-output training matches real Keras 3.15's: losses, loss_weights and metrics as a dict by output name, a
list per output or one loss for every output; the history's keys (loss, <output>_loss, <output>_<metric>, val_...)
and evaluate's dict and list, recorded by tools/record_keras_multi_output.py on Keras's torch backend in
tests/fixtures/keras/multi_output.json, and Keras's errors for structures that do not match the outputs.

Values agree within RTOL, not bit for bit: torch's CPU kernels for exp, log and tanh (sigmoid, the
crossentropies, the tanh layer) are not correctly rounded and its CPU matmul sums in its own order, while minifp's
float32 ops round once, so the two drift by an ulp or two over two epochs of SGD (at most 2.2e-7 relative when
recorded; RTOL is about 8 float32 ulps)."""
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import minifp.keras as keras

ROOT = Path(__file__).resolve().parents[2]
RECORDED = json.loads((ROOT / "tests/fixtures/keras/multi_output.json").read_text())
RTOL = 1e-6

_spec = importlib.util.spec_from_file_location("record_keras_multi_output",
                                               ROOT / "tools/record_keras_multi_output.py")
recorder = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(recorder)           # the recorder's builders; it imports keras only in main()


@pytest.mark.filterwarnings("ignore:Gradients do not exist")     # an output without a loss, as Keras warns too
@pytest.mark.parametrize("name", sorted(RECORDED["cases"]))
def test_multi_output_case_matches_keras(name):
    want = RECORDED["results"][name]
    got = recorder.run_case(keras, RECORDED["cases"][name], RECORDED["arrays"])
    if "error" in want:
        assert got.get("error") == want["error"], got
        return
    assert "error" not in got, got["error"]
    assert list(got["history"]) == list(want["history"])
    for key, values in want["history"].items():
        assert got["history"][key] == pytest.approx(values, rel=RTOL), key
    assert list(got["evaluate_dict"]) == list(want["evaluate_dict"])
    assert got["evaluate_dict"] == pytest.approx(want["evaluate_dict"], rel=RTOL)
    assert got["evaluate_list"] == pytest.approx(want["evaluate_list"], rel=RTOL)
    assert got["metrics_names"] == want["metrics_names"]


def test_output_names_are_the_output_layers_names():
    model = recorder.build(keras, "heads", RECORDED["arrays"])
    assert model.output_names == ["cls", "reg"]


def test_predict_returns_one_array_per_output():
    model = recorder.build(keras, "heads", RECORDED["arrays"])
    cls, reg = model.predict(np.asarray(RECORDED["arrays"]["x"], np.float32), verbose=0)
    assert cls.shape == (24, 1) and reg.shape == (24, 2)
