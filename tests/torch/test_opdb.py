"""minifp.torch against PyTorch's own op database (tests/fixtures/pytorch/opdb/, recorded by tools/record_opdb.py).

A ratchet: every sample id in passing.txt (forward: values, dtypes, shapes, raises; "<id>/grad": gradients) must
still pass, and docs/torch_coverage.md must state the pass rates measured now. After adding ops, run
`python tools/opdb_report.py --update` to raise the ratchet and regenerate the docs.
"""
import importlib.util
import pathlib
import re
import warnings

import pytest

import minifp.torch as torch

from .opdb_samples import FIXTURES, Sample, load, run_forward, run_gradient

ROOT = pathlib.Path(__file__).resolve().parents[2]
META, BUFFERS = load()
SAMPLES = {r["id"]: Sample(r, META["ops"][r["op"]], BUFFERS) for r in META["samples"]}
PASSING = (FIXTURES / "passing.txt").read_text().split()


def check(sample_id):
    """The problems of one forward sample id, or of one "<id>/grad" gradient id."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if sample_id.endswith("/grad"):
            return run_gradient(SAMPLES[sample_id[:-5]], torch)
        return run_forward(SAMPLES[sample_id], torch)


@pytest.mark.parametrize("sample_id", PASSING)
def test_passing_sample_still_passes(sample_id):
    assert check(sample_id) == []


def test_docs_state_the_measured_pass_rates():
    spec = importlib.util.spec_from_file_location("opdb_report", ROOT / "tools" / "opdb_report.py")
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    _, results = report.measure(torch)
    line = report.rate_line(results)
    docs = (ROOT / "docs" / "torch_coverage.md").read_text()
    assert line in docs, (f"docs/torch_coverage.md is stale: measured {line!r}; run "
                          "`python tools/opdb_report.py --update`")


def test_passing_ids_are_recorded_samples():
    unknown = [i for i in PASSING if i.removesuffix("/grad") not in SAMPLES]
    assert not unknown and len(set(PASSING)) == len(PASSING)


def test_fixtures_hold_every_in_scope_op_once():
    names = [op["name"] for op in META["ops"]] + [e["op"] for e in META["excluded"]]
    assert len(names) == len(set(names)) and len(META["samples"]) > 2000
    assert re.fullmatch(r"\d+\.\d+.*", META["torch_version"])
