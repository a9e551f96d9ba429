"""Record Keras 3 layers' outputs and gradients into tests/fixtures/keras/layers_a.json (issue 33's layer set:
activations, convolutions, pooling, reshaping, merging, Lambda).

Run by hand from the repository root with the TensorFlow venv (see tools/record_keras.py):

    /work/tfenv/bin/python tools/record_keras_layers.py

Each case: a layer built from `config` under `policy`, its weights set to fixed values (in `weights`, Keras's
order), called on fixed float32 `inputs`; stored are the output and the gradients of sum(float32(out) * cotangent)
(the cotangent by its formula) with respect to the inputs and the trainable weights, and get_config(). `errors` holds what Keras raises for
out-of-range axes.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record_keras import OUT, clean, dumps, outcome, versions, wave  # noqa: E402  (sets the TF environment)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
import tf_keras  # noqa: E402

FUNCTIONS = {"times_two_plus_one": lambda x: x * 2.0 + 1.0, "square": lambda x: x * x,
             "first_half": lambda x: x[..., :2]}

X3 = (2, 5, 3)          # (batch, steps, channels)
X4 = (1, 5, 4, 3)       # (batch, rows, cols, channels)

CASES = [
    # family, class, config, input shapes (or ("mask", shape) extras in call_kwargs)
    ("activations", "LeakyReLU", {}, [X3]),
    ("activations", "LeakyReLU", {"negative_slope": 0.1}, [X3]),
    ("activations", "PReLU", {}, [X3]),
    ("activations", "PReLU", {"shared_axes": [1]}, [X4]),
    ("activations", "ELU", {}, [X3]),
    ("activations", "ELU", {"alpha": 0.5}, [X3]),
    ("activations", "ReLU", {}, [X3]),
    ("activations", "ReLU", {"max_value": 1.0, "negative_slope": 0.1, "threshold": 0.2}, [X3]),
    ("activations", "Softmax", {}, [X3]),
    ("activations", "Softmax", {"axis": 1}, [X3]),
    ("activations", "Softmax", {"axis": [1, 2]}, [X3]),
    ("activations", "Softmax", {"__mask__": True}, [X3]),
    ("convolution", "Conv1D", {"filters": 4, "kernel_size": 3}, [X3]),
    ("convolution", "Conv1D", {"filters": 2, "kernel_size": 3, "strides": 2, "padding": "same",
                               "activation": "relu"}, [(2, 6, 3)]),
    ("convolution", "Conv1D", {"filters": 2, "kernel_size": 2, "dilation_rate": 2, "padding": "causal",
                               "use_bias": False}, [X3]),
    ("convolution", "Conv2DTranspose", {"filters": 2, "kernel_size": 3}, [X4]),
    ("convolution", "Conv2DTranspose", {"filters": 2, "kernel_size": 3, "strides": 2, "padding": "same"}, [X4]),
    ("convolution", "Conv2DTranspose", {"filters": 3, "kernel_size": (2, 3), "strides": (2, 1),
                                        "use_bias": False, "activation": "tanh"}, [X4]),
    ("convolution", "Conv2DTranspose", {"filters": 2, "kernel_size": 3, "strides": 2, "padding": "same",
                                        "output_padding": 1}, [X4]),
    ("convolution", "Conv2DTranspose", {"filters": 2, "kernel_size": 2, "strides": 3}, [X4]),
    ("convolution", "Conv1D", {"filters": 6, "kernel_size": 2, "groups": 3, "data_format": "channels_first"},
     [(2, 3, 5)]),
    ("convolution", "SeparableConv2D", {"filters": 4, "kernel_size": 3, "padding": "same",
                                        "depth_multiplier": 2}, [X4]),
    ("convolution", "SeparableConv2D", {"filters": 2, "kernel_size": 2, "strides": 2, "use_bias": False,
                                        "activation": "relu"}, [X4]),
    ("convolution", "DepthwiseConv2D", {"kernel_size": 3, "depth_multiplier": 2, "strides": 2, "padding": "same",
                                        "activation": "relu"}, [X4]),
    ("convolution", "DepthwiseConv2D", {"kernel_size": 2, "dilation_rate": 2, "use_bias": False}, [X4]),
    ("pooling", "GlobalAveragePooling1D", {}, [X3]),
    ("pooling", "GlobalAveragePooling1D", {"keepdims": True}, [X3]),
    ("pooling", "GlobalMaxPooling1D", {}, [X3]),
    ("pooling", "GlobalMaxPooling1D", {"keepdims": True, "data_format": "channels_first"}, [X3]),
    ("pooling", "GlobalMaxPooling2D", {}, [X4]),
    ("pooling", "GlobalMaxPooling2D", {"keepdims": True}, [X4]),
    ("pooling", "MaxPooling1D", {}, [X3]),
    ("pooling", "MaxPooling1D", {"pool_size": 3, "strides": 2, "padding": "same"}, [X3]),
    ("pooling", "AveragePooling2D", {"pool_size": 2}, [X4]),
    ("pooling", "AveragePooling2D", {"pool_size": 3, "strides": 2, "padding": "same"}, [X4]),
    ("reshaping", "UpSampling2D", {}, [X4]),
    ("reshaping", "UpSampling2D", {"size": (2, 3), "interpolation": "bilinear"}, [X4]),
    ("reshaping", "UpSampling2D", {"size": 2, "interpolation": "bilinear", "data_format": "channels_first"},
     [X4]),
    ("reshaping", "ZeroPadding2D", {"padding": ((1, 2), (0, 1))}, [X4]),
    ("reshaping", "Cropping2D", {}, [X4]),
    ("reshaping", "Cropping2D", {"cropping": ((1, 0), (1, 2))}, [X4]),
    ("merging", "Concatenate", {"axis": 1}, [X3, (2, 2, 3)]),
    ("merging", "Concatenate", {}, [X3, (2, 5, 2)]),
    ("merging", "Add", {}, [X3, X3, X3]),
    ("merging", "Multiply", {}, [X3, X3]),
    ("lambda", "Lambda", {"function": "times_two_plus_one"}, [X3]),
    ("lambda", "Lambda", {"function": "first_half", "output_shape": (5, 2)}, [X3]),
]

# Under each mixed policy: the first case of each of these classes ((class, option): the first with that option).
MIXED = ["LeakyReLU", "PReLU", "ELU", "Softmax", "Conv1D", "Conv2DTranspose", "SeparableConv2D",
         "DepthwiseConv2D", "GlobalAveragePooling1D", "AveragePooling2D", "MaxPooling1D", "UpSampling2D",
         "Concatenate", "Add", "Multiply", "Lambda", ("UpSampling2D", "bilinear")]


def build_layer(cls, config):
    kwargs = {k: v for k, v in config.items() if not k.startswith("__")}
    if cls == "Lambda":
        kwargs["function"] = FUNCTIONS[kwargs["function"]]
    return getattr(keras.layers, cls)(**kwargs)


def array(x):
    x = np.asarray(x)
    return {"shape": list(x.shape), "dtype": str(x.dtype), "values": clean(x.astype(np.float32).ravel())}


def record(family, cls, config, shapes, policy):
    keras.backend.clear_session()
    keras.mixed_precision.set_global_policy(policy)
    try:
        layer = build_layer(cls, config)
        xs = [wave(s, k=1 + i, scale=2.0, freq=0.71) for i, s in enumerate(shapes)]
        call_kwargs = {}
        mask = None
        if config.get("__mask__"):
            mask = wave(shapes[0], k=5, freq=1.3) > -0.03
            call_kwargs["mask"] = mask
        layer.build([tuple(s) for s in shapes] if len(shapes) > 1 else tuple(shapes[0]))
        weights = [wave(tuple(w.shape), k=10 + i, scale=0.5, freq=0.53) for i, w in enumerate(layer.weights)]
        if weights:
            layer.set_weights(weights)
        tensors = [tf.constant(x) for x in xs]
        with tf.GradientTape() as tape:
            tape.watch(tensors)
            out = layer(tensors if len(tensors) > 1 else tensors[0], **call_kwargs)
            cot = wave(tuple(out.shape), k=3, scale=1.0, freq=0.29)
            loss = tf.reduce_sum(tf.cast(out, tf.float32) * cot)
        grads = tape.gradient(loss, tensors + list(layer.trainable_weights))
        case = {"family": family, "class": cls, "policy": policy,
                "config": clean({k: v for k, v in config.items() if k != "__mask__"}),
                "inputs": [array(x) for x in xs], "mask": None if mask is None else clean(mask.tolist()),
                "weights": [{"name": w.name, "dtype": str(w.dtype), **array(v)}
                            for w, v in zip(layer.weights, weights)],
                "cotangent_shape": list(cot.shape), "output": array(out.numpy()) | {"dtype": str(out.dtype.name)},
                "grad_inputs": [array(g.numpy()) | {"dtype": g.dtype.name} for g in grads[:len(tensors)]],
                "grad_weights": [array(g.numpy()) | {"dtype": g.dtype.name} for g in grads[len(tensors):]],
                "compute_output_shape": clean(layer.compute_output_shape(
                    [tuple(s) for s in shapes] if len(shapes) > 1 else tuple(shapes[0]))),
                "get_config": clean({k: v for k, v in layer.get_config().items()
                                     if k not in ("name", "dtype", "trainable", "function")})}
        return case
    finally:
        keras.mixed_precision.set_global_policy("float32")


def errors():
    """What Keras raises for out-of-range axes and a few bad arguments."""
    x3 = np.ones((2, 3, 4), np.float32)
    return {
        "concatenate_axis_3": outcome(lambda: keras.layers.Concatenate(axis=3)([x3, x3])),
        "concatenate_axis_-4": outcome(lambda: keras.layers.Concatenate(axis=-4)([x3, x3])),
        "concatenate_mismatch": outcome(lambda: keras.layers.Concatenate(axis=1)([x3, np.ones((2, 3, 5),
                                                                                             np.float32)])),
        "concatenate_not_list": outcome(lambda: keras.layers.Concatenate()(x3)),
        "softmax_axis_3": outcome(lambda: keras.layers.Softmax(axis=3)(x3)),
        "softmax_axis_-4": outcome(lambda: keras.layers.Softmax(axis=-4)(x3)),
        "leaky_relu_negative": outcome(lambda: keras.layers.LeakyReLU(negative_slope=-1.0)),
        "add_shapes": outcome(lambda: keras.layers.Add()([x3, np.ones((2, 3, 5), np.float32)])),
        "upsampling_interpolation": outcome(lambda: keras.layers.UpSampling2D(interpolation="cubic")),
        "tf_keras_leaky_relu": outcome(lambda: tf_keras.layers.LeakyReLU().get_config()["alpha"]),
        "keras3_leaky_relu_alpha": outcome(lambda: keras.layers.LeakyReLU(alpha=0.2).get_config()),
    }


def main():
    cases = [record(*c, "float32") for c in CASES]
    for policy in ("mixed_float16", "mixed_bfloat16"):
        for name in MIXED:
            name, option = name if isinstance(name, tuple) else (name, None)
            family, cls, config, shapes = next(c for c in CASES if c[1] == name and (
                option is None or option in c[2].values()))
            cases.append(record(family, cls, config, shapes, policy))
    data = {"versions": versions(), "functions": {"times_two_plus_one": "x * 2 + 1", "square": "x * x",
                                                   "first_half": "x[..., :2]"},
            "formulas": {"inputs": "wave(shape, k=1+i, scale=2.0, freq=0.71)",
                         "weights": "wave(shape, k=10+i, scale=0.5, freq=0.53)",
                         "cotangent": "wave(shape, k=3, scale=1.0, freq=0.29)"},
            "cases": cases, "errors": errors()}
    (OUT / "layers_a.json").write_text(dumps(data))
    print(len(cases), "cases", (OUT / "layers_a.json").stat().st_size, "bytes")


if __name__ == "__main__":
    main()
