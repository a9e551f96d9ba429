"""Record Keras 3's calling conventions and misuse errors into tests/fixtures/keras/conventions.json.

Run by hand from the repository root with real Keras 3 / TensorFlow (not by CI; see tools/record_keras.py):

    /work/tfenv/bin/python tools/record_keras_conventions.py

What is recorded: the values a `call` receives as `training` and `mask`, the masks Embedding(mask_zero=True) and
Masking make and how they travel, `add_loss` / `losses` / regularizer losses, and the errors Keras and TensorFlow
raise for misuse (out-of-range axes, mixed-dtype arithmetic, an explicit mask= to a call without one). Inputs
are small and written in the file beside the results; floats as tools/record_keras.py writes them.
"""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"

import json
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

import keras  # noqa: E402
from keras import layers, ops  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record_keras import clean  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "keras" / "conventions.json"


def error_of(fn):
    """{"type", "message"} of what fn raises (None if it returns)."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - recording what Keras raises is the point
        return {"type": type(e).__name__, "message": str(e).strip()}
    return None


class Seen(layers.Layer):
    """Records what its call receives."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.seen = []

    def call(self, x, training=None, mask=None):
        self.seen.append({"training": training, "mask": None if mask is None else mask.numpy()})
        return x


class Plain(keras.Model):
    """A subclassed model whose call takes no training argument."""

    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(2, kernel_initializer="ones")

    def call(self, x):
        return self.dense(x)


class NoMask(layers.Layer):
    def call(self, x):
        return x


def training_cases():
    x = np.ones((1, 3), np.float32)
    out = {"plain_model_training_true": clean(Plain()(x, training=True))}
    seen = Seen()
    seen(x)
    seen(x, training=True)
    seen(x, training=False)
    out["seen_training"] = [s["training"] for s in seen.seen]
    out["explicit_mask_to_call_without_mask"] = error_of(lambda: NoMask()(x, mask=np.ones((1,), bool)))
    return out


def mask_cases():
    ids = np.array([[3, 1, 0, 0], [2, 0, 5, 0]], np.int32)
    emb = layers.Embedding(6, 2, mask_zero=True, embeddings_initializer="ones")
    seen = Seen()
    chain = [emb, layers.Dense(2, kernel_initializer="ones"), layers.Dropout(0.5), layers.Activation("relu"),
             layers.ReLU(), layers.LayerNormalization(), seen]
    x = ids
    for layer in chain:
        x = layer(x)
    out = {"ids": clean(ids), "embedding_compute_mask": clean(emb.compute_mask(ids)),
           "mask_after_chain": clean(seen.seen[-1]["mask"]),
           "supports_masking": {name: getattr(layers, name)(**kw).supports_masking for name, kw in (
               ("Dense", {"units": 2}), ("Dropout", {"rate": 0.5}), ("Activation", {"activation": "relu"}),
               ("ReLU", {}), ("LayerNormalization", {}), ("BatchNormalization", {}), ("Flatten", {}),
               ("Reshape", {"target_shape": (2,)}), ("Embedding", {"input_dim": 3, "output_dim": 2}),
               ("Masking", {}), ("Lambda", {"function": lambda t: t}), ("Add", {}), ("Concatenate", {}),
               ("Conv2D", {"filters": 1, "kernel_size": 1}))}}
    # A layer without masking support drops the mask (Keras warns).
    seen2 = Seen()
    seen2(layers.Flatten()(emb(ids)))
    out["mask_after_flatten"] = clean(seen2.seen[-1]["mask"])
    values = np.array([[[1.0, 2.0], [0.0, 0.0], [0.0, 3.0]], [[0.0, 0.0], [4.0, 0.0], [0.0, 0.0]]], np.float32)
    masking = layers.Masking(mask_value=0.0)
    seen3 = Seen()
    y = masking(values)
    seen3(y)
    out["masking_values"] = clean(values)
    out["masking_output"] = clean(y)
    out["masking_mask"] = clean(seen3.seen[-1]["mask"])
    # An explicit mask beats the one attached to the input.
    seen4 = Seen()
    seen4(emb(ids), mask=np.array([[True, True, True, False], [False, True, True, True]]))
    out["explicit_mask_wins"] = clean(seen4.seen[-1]["mask"])
    return out


class AddsLoss(layers.Layer):
    def call(self, x):
        self.add_loss(ops.sum(x))
        return x * 2.0


class Outer(keras.Model):
    def __init__(self):
        super().__init__()
        self.inner = AddsLoss()
        self.dense = layers.Dense(2, kernel_initializer="ones", kernel_regularizer=keras.regularizers.L2(0.01),
                                  bias_regularizer=keras.regularizers.L1(0.5), bias_initializer="ones")

    def call(self, x):
        self.add_loss(ops.mean(x))
        return self.dense(self.inner(x))


def loss_cases():
    x = np.array([[1.0, 2.0, 3.0]], np.float32)
    layer = AddsLoss()
    layer(x)
    first = [clean(v) for v in layer.losses]
    layer(x * 10)
    second = [clean(v) for v in layer.losses]
    model = Outer()
    model(x)
    out = {"x": clean(x), "layer_losses_first": first, "layer_losses_second": second,
           "model_losses": [clean(v) for v in model.losses], "model_losses_again": None}
    model(x)
    out["model_losses_again"] = [clean(v) for v in model.losses]
    out["add_loss_float"] = error_of(lambda: layers.Layer().add_loss(1.0))
    # fit adds the added losses to the compiled one
    keras.utils.set_random_seed(0)
    m = Outer()
    m.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse")
    y = np.zeros((1, 2), np.float32)
    out["fit_loss"] = clean(m.fit(x, y, epochs=1, batch_size=1, verbose=0).history["loss"][0])
    # add_weight: every argument
    w = layers.Layer()
    v = w.add_weight(shape=(2,), initializer="ones", dtype="float32", trainable=False, autocast=False,
                     regularizer=keras.regularizers.L2(0.5), constraint=keras.constraints.NonNeg(),
                     aggregation="mean", overwrite_with_gradient=False, name="w")
    out["add_weight"] = {"name": v.name, "path": v.path, "trainable": v.trainable, "autocast": v._autocast,
                         "aggregation": v.aggregation, "dtype": v.dtype, "losses": [clean(t) for t in w.losses]}
    v2 = w.add_weight(shape=(2,), initializer="ones", regularizer=keras.regularizers.L2(0.5), name="t")
    out["add_weight_trainable_losses"] = [clean(t) for t in w.losses]
    out["add_weight_bad_aggregation"] = error_of(lambda: w.add_weight(shape=(1,), aggregation="max"))
    del v2
    w0 = np.array([[3.0, -0.5, 0.1], [4.0, 0.25, -0.2]], np.float32)
    out["constraints"] = {"w": clean(w0), **{name: clean(c(tf.constant(w0))) for name, c in (
        ("non_neg", keras.constraints.NonNeg()), ("max_norm", keras.constraints.MaxNorm(2.0)),
        ("unit_norm", keras.constraints.UnitNorm(axis=1)),
        ("min_max_norm", keras.constraints.MinMaxNorm(0.5, 1.0, rate=0.5)))}}
    return out


def axis_cases():
    x2 = np.ones((2, 3), np.float32)
    return {
        "LayerNormalization_axis5": error_of(lambda: layers.LayerNormalization(axis=5)(x2)),
        "LayerNormalization_axis2": error_of(lambda: layers.LayerNormalization(axis=2)(x2)),
        "LayerNormalization_axis-3": error_of(lambda: layers.LayerNormalization(axis=-3)(x2)),
        "LayerNormalization_axis0": error_of(lambda: layers.LayerNormalization(axis=0)(x2)),
        "BatchNormalization_axis5": error_of(lambda: layers.BatchNormalization(axis=5)(x2)),
        "BatchNormalization_axis-3": error_of(lambda: layers.BatchNormalization(axis=-3)(x2)),
        "Concatenate_axis5": error_of(lambda: layers.Concatenate(axis=5)([x2, x2])),
        "Softmax_axis5": error_of(lambda: layers.Softmax(axis=5)(x2)),
    }


def tf_cases():
    h, f = tf.ones(2, dtype=tf.float16), tf.ones(2)
    i = tf.ones((2, 2), dtype=tf.int32)
    m = tf.ones((2, 2))
    return {
        "add_f16_f32": error_of(lambda: tf.add(h, f)),
        "plus_f16_f32": error_of(lambda: h + f),
        "mul_f32_f16": error_of(lambda: tf.multiply(f, h)),
        "sub_op_f32_f16": error_of(lambda: f - h),
        "matmul_i32_f32": error_of(lambda: tf.matmul(i, m)),
        "matmul_f32_i32_op": error_of(lambda: m @ i),
        "add_f32_python_float": error_of(lambda: tf.add(f, 1.5)),
        "add_f16_python_float": clean(tf.add(h, 1.5)),
        "add_i32_python_float": error_of(lambda: tf.add(tf.ones(2, tf.int32), 1.5)),
        "equal_f16_f32": error_of(lambda: tf.equal(h, f)),
        "maximum_f16_f32": error_of(lambda: tf.maximum(h, f)),
        "concat_f16_f32": error_of(lambda: tf.concat([h, f], 0)),
        "subtract_f16_f32": error_of(lambda: tf.subtract(h, f)),
        "divide_f16_f32": error_of(lambda: tf.divide(h, f)),
        "truediv_op_f16_f32": error_of(lambda: h / f),
        "pow_f16_f32": error_of(lambda: tf.pow(h, f)),
        "pow_op_f16_f32": error_of(lambda: h ** f),
        "minimum_f16_f32": error_of(lambda: tf.minimum(h, f)),
        "less_f16_f32": error_of(lambda: tf.less(h, f)),
        "less_op_f16_f32": error_of(lambda: h < f),
        "where_f16_f32": error_of(lambda: tf.where(tf.ones(2, tf.bool), h, f)),
        "stack_f16_f32": error_of(lambda: tf.stack([h, f])),
        "mul_op_i32_python_float": error_of(lambda: tf.ones(2, tf.int32) * 0.5),
        "add_i32_python_int": clean(tf.add(tf.ones(2, tf.int32), 2)),
        "add_f32_python_int": clean(tf.add(f, 2)),
    }


def main():
    data = {"keras": keras.__version__, "tensorflow": tf.__version__, "training": training_cases(),
            "masks": mask_cases(), "losses": loss_cases(), "axis": axis_cases(), "tf": tf_cases()}
    OUT.write_text(json.dumps(clean(data), indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
