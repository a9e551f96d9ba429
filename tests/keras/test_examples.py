"""The Keras tutorials in examples/keras run on minifp with only their imports and data source changed.

Each example runs once per module in a subprocess (a fresh global policy and session, as a reader's run),
shrunk by MINIFP_EXAMPLE_FAST=1 where it has such a knob (the TensorFlow guide has none), in a temporary folder with KERAS_HOME pointing there (so the examples make
their data instead of reading a cache); the tests read what it prints.
"""
import os
import pathlib
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.endtoend      # whole scripts: CI's JIT-off pass leaves them out

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
EXAMPLES = ROOT / "examples" / "keras"
NUMBER = r"([0-9]+(?:\.[0-9]+)?(?:e-?[0-9]+)?)"


def run_example(name, tmp_path):
    """Run examples/keras/<name> with the fast setting; (returncode, stdout without the progress bars' redraws)."""
    env = dict(os.environ, MINIFP_EXAMPLE_FAST="1", KERAS_HOME=str(tmp_path / "keras_home"), MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    out = subprocess.run([sys.executable, str(EXAMPLES / name)], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=600)
    # Progress bars redraw with \r and \b and colour with ANSI codes: keep each line's last drawing, plain.
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out.stdout)
    lines = [line.split("\r")[-1].replace("\b", "") for line in plain.split("\n")]
    return out.returncode, "\n".join(lines), out.stderr


@pytest.fixture(scope="module")
def guide(tmp_path_factory):
    return run_example("tf_guide.py", tmp_path_factory.mktemp("guide"))


def test_guide_runs_and_prints_the_guides_dtype_lines(guide):
    rc, out, err = guide
    assert rc == 0, err
    expected = ["Compute dtype: float16", "Variable dtype: float32", '<Policy "mixed_float16">',
                "x.dtype: float16", "dense1.kernel.dtype: float32", "Outputs dtype: float16",
                "Outputs dtype: float32"]
    lines = out.splitlines()
    at = [lines.index(line) for line in expected]
    assert at == sorted(at)                        # in the guide's order: float16 output first, then float32
    assert ("The model will run with 64 units on a CPU" in lines) != \
        ("The model will run with 4096 units on a GPU" in lines)


def test_guide_fit_prints_time_per_step_and_evaluate_the_test_scores(guide):
    rc, out, err = guide
    assert rc == 0, err
    assert all(f"Epoch {e}/5" in out for e in range(1, 6))
    fit_lines = [line for line in out.splitlines() if "val_loss" in line]
    assert len(fit_lines) == 5 and all(re.search(r"\d+m?s/step", line) for line in fit_lines)
    assert re.search(r"^313/313 - .*loss: ", out, re.M)                 # evaluate(verbose=2): 10,000 images / 32
    loss = float(re.search(rf"^Test loss: {NUMBER}$", out, re.M).group(1))
    accuracy = float(re.search(rf"^Test accuracy: {NUMBER}$", out, re.M).group(1))
    # 30 RMSprop steps (batch 8192) on the upsampled digits: the loss falls from chance's 2.30, accuracy rises.
    assert loss < 1.0 and 0.8 < accuracy <= 1


def test_guide_custom_loop_prints_an_epoch_line_per_epoch(guide):
    rc, out, err = guide
    assert rc == 0, err
    assert [int(e) for e in re.findall(r"^Epoch (\d+): loss=", out, re.M)] == [0, 1, 2, 3, 4]


def test_guide_custom_loop_prints_numbers_as_the_guide(guide):
    rc, out, err = guide
    epochs = re.findall(rf"^Epoch (\d+): loss={NUMBER}, test accuracy={NUMBER}$", out, re.M)
    assert [int(e) for e, _, _ in epochs] == [0, 1, 2, 3, 4]
    losses = [float(loss) for _, loss, _ in epochs]
    accuracies = [float(acc) for _, _, acc in epochs]
    # From the initial weights again, under the LossScaleOptimizer: the loss falls and accuracy rises each epoch.
    assert losses == sorted(losses, reverse=True) and accuracies == sorted(accuracies) and accuracies[0] > 0.1


@pytest.mark.slow
def test_persian_post_keras_part_runs_on_cifar_shaped_data(tmp_path):
    rc, out, err = run_example("mobilenet_keras.py", tmp_path)
    assert rc == 0, err
    assert "Compute dtype:  float16" in out and "Variable dtype:  float32" in out
    # train(fp16=True), train(fp16=False): 64 images, batch 64; the custom model: batch 32, 2 steps.
    bar = re.compile(rf"^(\d+)/(\d+) .*\d+m?s/step - loss: {NUMBER}\s*$")
    lines = out.splitlines() + [""]
    finals = [bar.match(line).groups() for line, after in zip(lines, lines[1:])
              if bar.match(line) and not bar.match(after)]                 # each fit's last drawing
    assert [(a, b) for a, b, _ in finals] == [("1", "1"), ("1", "1"), ("2", "2")]
    assert all(0 < float(loss) < 10 for _, _, loss in finals)


@pytest.fixture(scope="module")
def article(tmp_path_factory):
    folder = tmp_path_factory.mktemp("article")
    return run_example("tf_keras_article.py", folder) + (folder,)


def test_article_compares_time_loss_and_accuracy_across_runs(article):
    rc, out, err, folder = article
    assert rc == 0, err
    rows = re.findall(rf"^(without-mp|with-mp|with-mp_loss_scale)\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$", out, re.M)
    assert [name for name, *_ in rows] == ["without-mp", "with-mp", "with-mp_loss_scale"]
    for name, seconds, loss, accuracy in rows:
        # Two epochs on the 5-class digits stand-in: well above chance (0.2) in every run.
        assert float(seconds) > 0 and float(loss) < 1.2 and float(accuracy) > 0.5, name
    assert (folder / "tf_keras_article_runs.png").stat().st_size > 10_000


def test_article_sets_a_per_layer_policy_with_the_experimental_api(article):
    rc, out, err, folder = article
    assert re.search(r'^<Policy "mixed_float16".*> float16 float32$', out, re.M), out + err
