"""Record Keras 3's other loss classes (KLDivergence, the hinges, Poisson, LogCosh, CosineSimilarity, MAPE, MSLE, Dice,
Tversky and the focal crossentropies): values with and without sample weights under each reduction, configs, their
round trip, the string identifiers keras.losses.get takes, and a model compiled with loss="kld" and fitted, into
tests/fixtures/keras/losses_more.json. tests/keras/test_losses_more.py runs the same cases through minifp.keras.

Run by hand with a real Keras 3 (not the project's environment):
    KERAS_BACKEND=torch python tools/record_keras_losses_more.py
"""
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record_keras_metrics_more import _softmax_rows as softmax_rows, _wave as wave  # noqa: E402  (the inputs' maker)

os.environ.setdefault("KERAS_BACKEND", "torch")
OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "keras" / "losses_more.json"


def inputs():
    """(y_true, y_pred) per kind of loss: probabilities, binary labels, regression targets."""
    probs_true, probs_pred = softmax_rows(wave((4, 5), 0, 2.0)), softmax_rows(wave((4, 5), 1, 2.0))
    labels = (wave((4, 5), 2) > 0).astype(np.float32)
    return {"probs": (probs_true, probs_pred), "binary": (labels, 0.5 + 0.45 * wave((4, 5), 3)),
            "signed": (labels, wave((4, 5), 4, 1.5)),
            "regression": (wave((4, 5), 5, 2.0, 2.5), wave((4, 5), 6, 2.0, 2.5)),
            "masks": ((wave((4, 3, 3), 7) > 0).astype(np.float32), 0.5 + 0.45 * wave((4, 3, 3), 8))}


# class name: (constructor keyword arguments, input kind)
CASES = {
    "KLDivergence": ({}, "probs"),
    "Poisson": ({}, "regression"),
    "LogCosh": ({}, "regression"),
    "MeanAbsolutePercentageError": ({}, "regression"),
    "MeanSquaredLogarithmicError": ({}, "regression"),
    "Hinge": ({}, "signed"),
    "SquaredHinge": ({}, "signed"),
    "CategoricalHinge": ({}, "signed"),
    "CosineSimilarity": ({"axis": -1}, "regression"),
    "BinaryFocalCrossentropy": ({"apply_class_balancing": True, "alpha": 0.3, "gamma": 1.5}, "binary"),
    "BinaryFocalCrossentropy(from_logits)": ({"from_logits": True, "label_smoothing": 0.1}, "signed"),
    "CategoricalFocalCrossentropy": ({"alpha": 0.5, "gamma": 2.0}, "probs"),
    "Dice": ({}, "binary"),
    "Dice(axis)": ({"axis": (1, 2)}, "masks"),
    "Tversky(axis)": ({"alpha": 0.3, "beta": 0.7, "axis": (1, 2)}, "masks"),
}
IDENTIFIERS = ["kld", "KLD", "mape", "MAPE", "msle", "MSLE", "kl_divergence", "hinge", "squared_hinge", "dice",
               "tversky", "categorical_hinge", "poisson", "log_cosh", "cosine_similarity", "binary_focal_crossentropy",
               "categorical_focal_crossentropy", "KLDivergence", "CosineSimilarity"]
WEIGHTS = np.array([0.5, 1.0, 2.0, 0.25], np.float32)


def run(keras):
    """Every case's outcomes under `keras` (Keras 3, or minifp.keras)."""
    data, out = inputs(), {"cases": {}, "identifiers": {}}
    for case, (kwargs, kind) in CASES.items():
        cls = getattr(keras.losses, case.split("(")[0])
        y_true, y_pred = data[kind]
        loss = cls(**kwargs)
        config = loss.get_config()
        record = {"config": config, "round_trip": cls.from_config(config).get_config(),
                  "value": float(loss(y_true, y_pred)),
                  "weighted": float(loss(y_true, y_pred, sample_weight=WEIGHTS))}
        for reduction in ("sum", None, "mean_with_sample_weight"):
            value = cls(reduction=reduction, **kwargs)(y_true, y_pred, sample_weight=WEIGHTS)
            record[f"reduction={reduction}"] = np.asarray(value, np.float32).tolist()
        out["cases"][case] = record
    for name in IDENTIFIERS:
        got = keras.losses.get(name)
        out["identifiers"][name] = getattr(got, "__name__", type(got).__name__)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(5, activation="softmax")])
    model.compile(optimizer="sgd", loss="kld")
    x, y = data["probs"]
    out["fit_loss_name"] = model.loss if isinstance(model.loss, str) else getattr(model.loss, "__name__", None)
    out["fit_history_keys"] = sorted(model.fit(x, y, epochs=2, verbose=0).history)
    return out


def main():
    import keras
    OUT.write_text(json.dumps({"keras": keras.__version__, **run(keras)}, indent=1) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
