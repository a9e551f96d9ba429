"""Atomic saving (minifp/_files.py), shared by every saver: a save killed outright leaves a temporary that a later
save of the same target removes, and no save ever removes the temporary of a save still running."""
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from minifp._files import _pid_space, atomic_file

ROOT = Path(__file__).resolve().parents[1]

# Each defines save(path), one of minifp's savers.
SAVERS = {
    "torch.save": ("w.safetensors", "import minifp.torch as torch\n"
                                    "save = lambda p: torch.save({'w': torch.ones(2)}, p)"),
    "checkpoint.save": ("c.ckpt", "import minifp.torch as torch\nfrom minifp import checkpoint\n"
                                  "m = torch.nn.Linear(2, 2)\nsave = lambda p: checkpoint.save(p, m)"),
    "checkpoint.save_weights": ("w.ckpt", "import minifp.torch as torch\nfrom minifp import checkpoint\n"
                                          "m = torch.nn.Linear(2, 2)\nsave = lambda p: checkpoint.save_weights(p, m)"),
    "keras save_weights": ("m.weights.h5", "from minifp import keras\n"
                                           "m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2)])\n"
                                           "save = lambda p: m.save_weights(p)"),
}

# Runs a saver in a subprocess that stops before its fsync, its data written, until it is killed.
STUCK = """
import os, sys, time
exec(sys.argv[1])
os.fsync = lambda fd: (print("writing", flush=True), time.sleep(600))
save(sys.argv[2])
"""


def stuck_save(saver, path):
    """A subprocess in the middle of saving to path with `saver`; returns once its temporary is written."""
    p = subprocess.Popen([sys.executable, "-c", STUCK, SAVERS[saver][1], str(path)], cwd=ROOT,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "writing\n"
    return p


def kill(p):
    p.send_signal(signal.SIGKILL)
    p.wait()                    # reaped: a zombie's PID still exists


def temporaries(folder):
    return sorted(f for f in os.listdir(folder) if f.endswith(".tmp"))


def save_here(saver, path):
    ns = {}
    exec(SAVERS[saver][1], ns)
    ns["save"](path)


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL, and a PID's liveness checked, are POSIX's")
@pytest.mark.parametrize("saver", SAVERS)
def test_a_later_save_removes_the_temporary_a_killed_save_left(tmp_path, saver):
    path = tmp_path / SAVERS[saver][0]
    kill(stuck_save(saver, path))
    assert len(temporaries(tmp_path)) == 1 and not path.exists()
    save_here(saver, path)
    assert os.listdir(tmp_path) == [path.name]


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL, and a PID's liveness checked, are POSIX's")
def test_no_save_removes_the_temporary_of_a_save_still_running(tmp_path):
    path = tmp_path / "w.safetensors"
    other = stuck_save("torch.save", path)             # another live process
    try:
        writing, done = threading.Event(), threading.Event()

        def slow_save():                                # another thread of this one
            with atomic_file(path) as f:
                f.write(b"thread's")
                writing.set()
                done.wait(timeout=60)

        thread = threading.Thread(target=slow_save)
        thread.start()
        writing.wait(timeout=60)
        assert len(temporaries(tmp_path)) == 2
        save_here("torch.save", path)
        assert len(temporaries(tmp_path)) == 2
        done.set()
        thread.join()
        assert path.read_bytes() == b"thread's" and len(temporaries(tmp_path)) == 1
    finally:
        kill(other)
    save_here("torch.save", path)
    assert temporaries(tmp_path) == []


@pytest.mark.skipif(os.name != "posix", reason="a PID's liveness is checked on POSIX only")
def test_only_this_targets_temporaries_of_dead_pids_here_are_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    space = _pid_space()
    others = [f".w.safetensors.0badf00d-{dead}.{'a' * 32}.tmp",      # another PID space: its PIDs mean nothing here
              f".v.safetensors.{space}-{dead}.{'b' * 32}.tmp",       # another target's
              f".w.safetensors.{'c' * 32}.tmp"]                      # an older minifp's: no writer named
    for name in others + [f".w.safetensors.{space}-{dead}.{'d' * 32}.tmp"]:
        (tmp_path / name).write_bytes(b"")
    with atomic_file(tmp_path / "w.safetensors") as f:
        f.write(b"new")
    assert temporaries(tmp_path) == sorted(others)
