"""tf.GradientTape (nested, persistent, jacobian, batch_jacobian) and tf.norm against real TensorFlow 2.21:
tests/fixtures/tf/tapes.json, recorded by tools/record_tf_tapes.py, whose case functions run here with minifp.tf
(values, shapes, dtypes, None for unconnected sources, and the type and message of each error).

Compared bit for bit (zeros' signs included) where both compute the same correctly rounded float32 operations in the
same order (EXACT: + - * /, sqrt, abs, max, relu, matmuls and sums of at most 6 terms). Everything else within RTOL of
the array's largest magnitude: TensorFlow's CPU sin, cos, tanh, sigmoid and pow are Eigen's vectorised
approximations, not correctly rounded, where minifp's are NumPy's, and a one-ulp difference in tanh(x) feeds the
cancellation 1 - tanh(x)**2 of every derivative after it. The largest difference recorded is 9.0e-7 of the array's
scale (the Hessian of a squared tanh layer).
"""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import minifp.tf as tf

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import record_tf_tapes as rec  # noqa: E402

FIX = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "tf" / "tapes.json").read_text())
RTOL = 2e-6
EXACT = {"cube_variable", "cube_product_vector", "cube_third", "input_gradient_regularisation",
         "batch_jacobian_elementwise", "persistent_reuse", "watch_accessed_false", "watched_variables",
         "stop_recording", "unconnected", "variables_and_constants", "output_gradients", "jacobian_not_watched",
         "norm_zero"} | {n for n in FIX["norms"] if not n.startswith(("norm_3_", "norm_0.5_"))}


def _check(name, recorded, got):
    """One case's outputs (or error) as recorded."""
    if "error" in recorded:
        assert got == {"error": recorded["error"], "message": recorded["message"]}
        return
    assert got.keys() == recorded.keys()
    for key, want in recorded.items():
        have = got[key]
        if want is None or isinstance(want, int):
            assert have == want, key
            continue
        assert (have["shape"], have["dtype"]) == (want["shape"], want["dtype"]), key
        expected, actual = np.asarray(want["value"], np.float32), np.asarray(have["value"], np.float32)
        if name in EXACT:
            np.testing.assert_array_equal(actual, expected, err_msg=key)
            np.testing.assert_array_equal(np.signbit(actual[actual == 0]), np.signbit(expected[expected == 0]))
        else:
            scale = np.nanmax(np.abs(expected)) if expected.size else 0.0
            np.testing.assert_allclose(actual, expected, rtol=0, atol=RTOL * scale, err_msg=key)


def test_fixture_is_tensorflows():
    assert FIX["tensorflow"].startswith("2.21")
    assert len(FIX["tapes"]) == len(rec.TAPES) + 1 and len(FIX["norms"]) == len(rec.NORMS)


# Cases minifp does not match, each with what it gives instead (docs: minifp/tf/_tape.py's differences).
KNOWN_DIFFERENCES = {"watched_variables_accessed": {"n": 0}}     # TensorFlow adds the trainable variables read


@pytest.mark.parametrize("fn", [fn for fn in rec.TAPES + [rec.norm_zero] if fn.__name__ not in KNOWN_DIFFERENCES],
                         ids=lambda fn: fn.__name__)
def test_tape_case(fn):
    _check(fn.__name__, FIX["tapes"][fn.__name__], rec.run(fn, tf))


@pytest.mark.parametrize("name", sorted(KNOWN_DIFFERENCES))
def test_known_difference(name):
    """What TensorFlow recorded differs from what minifp gives, and minifp gives what its docs say."""
    got = rec.run(getattr(rec, name), tf)
    assert got == KNOWN_DIFFERENCES[name] != FIX["tapes"][name]


@pytest.mark.parametrize("case", rec.NORMS, ids=lambda c: rec.norm_name(*c))
def test_norm_case(case):
    name = rec.norm_name(*case)
    _check(name, FIX["norms"][name], rec.run(rec.norm_case, tf, *case))


def test_norm_is_in_linalg_and_leaves_the_input_alone():
    x = tf.constant([[3.0, 4.0]])
    assert tf.linalg.norm is tf.norm
    assert tf.norm(x).numpy() == 5.0 and not x.requires_grad


def test_matrix_two_norm_is_refused_plainly():
    """TensorFlow takes the largest singular value; minifp has no SVD, so it says so rather than guess."""
    with pytest.raises(NotImplementedError, match="spectral norm"):
        tf.norm(tf.constant([[3.0, 4.0]]), ord=2, axis=(0, 1))
