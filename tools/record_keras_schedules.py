"""Record Keras 3's PolynomialDecay and InverseTimeDecay (learning rates at steps 0..39, configs, errors) into
tests/fixtures/keras/schedules_more.json. tests/keras/test_schedules_more.py runs the same CASES through
minifp.keras.

Run by hand with a real Keras 3 (not the project's environment):
    KERAS_BACKEND=torch python tools/record_keras_schedules.py
"""
import json
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "torch")
OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "keras" / "schedules_more.json"

# (class name, constructor kwargs)
CASES = [
    ("PolynomialDecay", {"initial_learning_rate": 0.1, "decay_steps": 10}),
    ("PolynomialDecay", {"initial_learning_rate": 0.1, "decay_steps": 10, "end_learning_rate": 0.01, "power": 0.5}),
    ("PolynomialDecay", {"initial_learning_rate": 0.1, "decay_steps": 7, "end_learning_rate": 0.0, "power": 2.0,
                         "cycle": True}),
    ("PolynomialDecay", {"initial_learning_rate": 1e-3, "decay_steps": 30, "power": 1.0, "cycle": True}),
    ("InverseTimeDecay", {"initial_learning_rate": 0.1, "decay_steps": 5, "decay_rate": 0.5}),
    ("InverseTimeDecay", {"initial_learning_rate": 0.1, "decay_steps": 5, "decay_rate": 0.3, "staircase": True}),
    ("PolynomialDecay", {"initial_learning_rate": 0.1, "decay_steps": 0}),
    ("InverseTimeDecay", {"initial_learning_rate": 0.1, "decay_steps": -1, "decay_rate": 0.5}),
]


def run(keras):
    """[{"rates": float32 learning rates at steps 0..39, "config"} or {"error": [type, message]}] per case."""
    out = []
    for name, kwargs in CASES:
        try:
            schedule = getattr(keras.optimizers.schedules, name)(**kwargs)
            rates = [float(np.float32(np.asarray(schedule(step)))) for step in range(40)]
            out.append({"rates": rates, "config": schedule.get_config()})
        except Exception as e:      # noqa: BLE001 (every exception is what is recorded)
            out.append({"error": [type(e).__name__, str(e).splitlines()[0]]})
    return out


def main():
    import keras
    got = run(keras)
    OUT.write_text(json.dumps({"keras": keras.__version__, "backend": keras.backend.backend(), "cases": got},
                              indent=1) + "\n")
    print(f"{OUT}: {len(got)} cases", file=sys.stderr)


if __name__ == "__main__":
    main()
