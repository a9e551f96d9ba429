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


def test_console_script_runs():
    out = subprocess.run([sys.executable, "-m", "minifp.cli", "formats"], capture_output=True, text=True, check=True)
    assert "float8_e5m2" in out.stdout
