import os
import subprocess
import sys

import pytest

from minifp import cli


def test_formats_table(capsys):
    assert cli.main(["formats"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:4] == ["format", "bits", "exp", "man"]
    rows = {line.split()[0]: line.split() for line in out[1:]}
    assert rows["float16"][1:5] == ["16", "5", "10", "65504"]
    assert rows["float8_e4m3"][4] == "448" and rows["bfloat16"][4] == "3.38953e+38"


def test_demo_overflow(capsys):
    cli.main(["demo", "overflow"])
    out = capsys.readouterr().out
    assert "float32   y = 65536.0" in out and "float16   y = inf" in out and "bfloat16  y = 65536.0" in out


def test_demo_underflow(capsys):
    cli.main(["demo", "underflow"])
    out = capsys.readouterr().out
    assert "float16   y = 0.0" in out and "bfloat16  y = 1.000444171950221e-10" in out


def test_unknown_demo_lists_the_choices(capsys):
    with pytest.raises(SystemExit):
        cli.main(["demo", "nope"])
    assert "invalid choice: 'nope' (choose from 'overflow', 'underflow', 'swamping'," in capsys.readouterr().err


@pytest.mark.parametrize("command", [["formats"], ["demo", "swamping"]])
def test_a_closed_pipe_ends_the_command_quietly(command):
    read, write = os.pipe()
    os.close(read)                  # the reader has gone before the first line, as `| head` after its lines
    try:
        done = subprocess.run([sys.executable, "-m", "minifp", *command], stdout=write, stderr=subprocess.PIPE,
                              text=True, timeout=300)
    finally:
        os.close(write)
    assert done.stderr == "" and done.returncode == 141          # 128 + SIGPIPE, as a shell reports cat's


def test_console_script_runs():
    out = subprocess.run([sys.executable, "-m", "minifp.cli", "formats"], capture_output=True, text=True, check=True)
    assert "float8_e5m2" in out.stdout


def test_python_dash_m_minifp_runs():
    out = subprocess.run([sys.executable, "-m", "minifp", "formats"], capture_output=True, text=True, check=True)
    assert "float8_e5m2" in out.stdout


BAD_OPTIONS = [
    (["train", "--epochs", "0"], "--epochs", "'0'", "an integer >= 1"),
    (["train", "--epochs", "-1"], "--epochs", "'-1'", "an integer >= 1"),
    (["train", "--batch-size", "0"], "--batch-size", "'0'", "an integer >= 1"),
    (["train", "--batch-size", "-5"], "--batch-size", "'-5'", "an integer >= 1"),
    (["train", "--lr", "nan"], "--lr", "'nan'", "a finite number >= 0"),
    (["train", "--lr", "-1"], "--lr", "'-1'", "a finite number >= 0"),
    (["train", "--lr", "inf"], "--lr", "'inf'", "a finite number >= 0"),
    (["train", "--seed", "-1"], "--seed", "'-1'", "an integer >= 0"),
    (["demo", "overflow", "--plot", "/no/such/folder/figure.png"], "--plot", "'/no/such/folder/figure.png'",
     "does not exist"),
]


@pytest.mark.parametrize("argv, option, value, valid", BAD_OPTIONS, ids=[" ".join(a[1:]) for a in BAD_OPTIONS])
def test_bad_options_are_argparse_errors(argv, option, value, valid, capsys):
    """Each bad value ends in argparse's own error (exit 2) naming the option, the value and the valid range."""
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert f"error: argument {option}: invalid value {value}" in err and valid in err
    assert "Traceback" not in err


def test_plot_into_a_folder_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["demo", "swamping", "--plot", str(tmp_path)])
    assert info.value.code == 2 and "argument --plot" in capsys.readouterr().err


def test_epochs_are_taken_as_given(monkeypatch):
    seen = {}

    class Net:                          # the Keras face's compile/fit/evaluate, as train() calls them
        def compile(self, *args, **kwargs):
            pass

        def fit(self, x, y, batch_size, epochs, verbose):
            seen["epochs"] = epochs
            history = type("H", (), {})()
            history.history = {"loss": [0.5] * epochs}
            history.steps = {"time": [0.001] * 45 * epochs}
            return history

        def evaluate(self, x, y, verbose):
            return [0.5, 1.0]

    monkeypatch.setitem(cli.MODELS, "mlp", lambda policy: Net())
    assert cli.train("float32", "mlp", epochs=1)["loss"] == 0.5 and seen["epochs"] == 1
    cli.train("float32", "mlp")
    assert seen["epochs"] == 20
    with pytest.raises(ValueError, match=r"train\(\): epochs must be an integer >= 1, got 0"):
        cli.train("float32", "mlp", epochs=0)


def test_train_compare_prints_one_row_per_policy(capsys):
    assert cli.main(["train", "--compare", "--epochs", "1", "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Training the mlp on the digits")
    assert lines[1].split()[:3] == ["policy", "test", "accuracy"]
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    assert sorted(rows) == ["float32", "mixed_bfloat16", "mixed_float16"]
    assert rows["mixed_float16"][3:5] == ["0", "32768"] and rows["float32"][3:5] == ["-", "-"]


def test_importing_minifp_loads_no_face():
    code = ("import sys, minifp; faces = [m for m in sys.modules if m.split('.')[:2] in "
            "(['minifp', 'torch'], ['minifp', 'keras'], ['minifp', 'tf'])]; print(faces); "
            "import minifp.torch; print(minifp.keras.Sequential.__name__, minifp.tf.GradientTape.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]" and out[1] == "Sequential GradientTape"
