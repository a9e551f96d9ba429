"""minifp.keras.ops against real keras.ops (tests/fixtures/keras/ops_*.json.gz, recorded by tools/record_keras_ops.py).

A ratchet: every case id in tests/fixtures/keras/ops_passing.txt must still give Keras's dtypes and shapes exactly,
its values within Keras's own test tolerance (float32; about an ulp in float16 and bfloat16) and raise where Keras
raised; "<id>/grad" ids their gradients within 1e-5 of TensorFlow's. docs/keras_coverage.md must state the pass
rates measured now. After adding ops, run
`python tools/keras_ops_report.py --update` to raise the ratchet and regenerate the docs.
"""
import importlib.util
import pathlib
import warnings

import pytest

from minifp.engine import gradients
from minifp.keras import ops

from .ops_samples import FIXTURES, ids, load, names, run

ROOT = pathlib.Path(__file__).resolve().parents[2]
CASES = load()
PASSING = (FIXTURES / "ops_passing.txt").read_text().split()


@pytest.mark.parametrize("case_id", PASSING)
def test_passing_case_still_passes(case_id):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert run(case_id, CASES, ops, gradients) == []


def test_passing_ids_are_recorded_cases():
    assert set(PASSING) <= set(ids(CASES)) and len(set(PASSING)) == len(PASSING)


def test_fixtures_name_keras_ops():
    public = set(names()["ops"])
    assert {"matmul", "softmax", "einsum"} <= public and {c["name"] for c in CASES.values()} <= public


def test_docs_state_the_measured_pass_rate():
    spec = importlib.util.spec_from_file_location("keras_ops_report", ROOT / "tools" / "keras_ops_report.py")
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    line = report.rate_line(report.measure(ops))
    docs = (ROOT / "docs" / "keras_coverage.md").read_text()
    assert line in docs, (f"docs/keras_coverage.md is stale: measured {line!r}; run "
                          "`python tools/keras_ops_report.py --update`")
