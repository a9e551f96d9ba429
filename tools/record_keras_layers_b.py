"""Record Keras 3's recurrent and preprocessing layers into tests/fixtures/keras/layers_b.json (issue 33).

Run by hand from the repository root with the TensorFlow environment (see tools/record_keras.py):

    /work/tfenv/bin/python tools/record_keras_layers_b.py

For each recurrent case: the layer's config, its weights' names and shapes, and for fixed weights and inputs (the
wave() formula of tools/record_keras.py, arguments in "formulas") the outputs and the gradients of
sum(output * cotangent) with respect to the inputs and every weight. For the text layers: vocabularies and outputs.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from record_keras import clean, keras, wave, write  # noqa: E402  (its environment settings and helpers)

FORMULAS = {"input": "wave(shape, 1, 1.0, 0.53)", "weight i": "wave(shape, 100 + i, 0.5, 0.71)",
            "cotangent j": "wave(shape, 7 + j, 1.0, 0.29)", "initial_state j": "wave(shape, 50 + j, 0.5, 0.37)"}

MASK = [[True, True, False, True, False], [True, True, True, True, True]]

RNN_CASES = [
    ("LSTM", {"units": 3}, None, (2, 5, 4), {}),
    ("LSTM", {"units": 3, "return_sequences": True, "return_state": True}, None, (2, 5, 4), {}),
    ("LSTM", {"units": 3, "return_sequences": True, "go_backwards": True, "use_bias": False}, None, (2, 5, 4), {}),
    ("LSTM", {"units": 2, "activation": "relu", "recurrent_activation": "hard_sigmoid", "unit_forget_bias": False,
              "return_sequences": True}, None, (2, 5, 4), {}),
    ("LSTM", {"units": 3, "return_sequences": True, "return_state": True}, None, (2, 5, 4), {"mask": MASK}),
    ("LSTM", {"units": 3}, None, (2, 5, 4), {"mask": MASK}),
    ("LSTM", {"units": 3, "return_state": True}, None, (2, 5, 4), {"initial_state": 2}),
    ("GRU", {"units": 3}, None, (2, 5, 4), {}),
    ("GRU", {"units": 3, "return_sequences": True, "return_state": True}, None, (2, 5, 4), {}),
    ("GRU", {"units": 3, "reset_after": False, "go_backwards": True, "return_sequences": True}, None, (2, 5, 4),
     {}),
    ("GRU", {"units": 3, "use_bias": False}, None, (2, 5, 4), {}),
    ("GRU", {"units": 3, "reset_after": False, "return_sequences": True}, None, (2, 5, 4), {"mask": MASK}),
    ("GRU", {"units": 3, "return_sequences": True, "go_backwards": True}, None, (2, 5, 4), {"mask": MASK}),
    ("Bidirectional", {"merge_mode": "concat"}, ("LSTM", {"units": 3, "return_sequences": True}), (2, 5, 4), {}),
    ("Bidirectional", {"merge_mode": "sum"}, ("GRU", {"units": 3, "return_sequences": True}), (2, 5, 4), {}),
    ("Bidirectional", {"merge_mode": "mul"}, ("LSTM", {"units": 3}), (2, 5, 4), {}),
    ("Bidirectional", {"merge_mode": "ave"}, ("GRU", {"units": 3, "reset_after": False}), (2, 5, 4), {}),
    ("Bidirectional", {"merge_mode": None}, ("LSTM", {"units": 2, "return_sequences": True}), (2, 5, 4), {}),
    ("Bidirectional", {"merge_mode": "concat"}, ("GRU", {"units": 3, "return_state": True}), (2, 5, 4), {}),
    ("Bidirectional", {"merge_mode": "concat"}, ("LSTM", {"units": 3, "return_sequences": True}), (2, 5, 4),
     {"mask": MASK}),
    ("TimeDistributed", {}, ("Dense", {"units": 2, "activation": "tanh"}), (2, 5, 4), {}),
    ("TimeDistributed", {}, ("Dense", {"units": 3}), (2, 3, 2, 4), {}),
    ("LSTM", {"units": 3, "return_sequences": True, "dtype": "mixed_float16"}, None, (2, 5, 4), {}),
    ("LSTM", {"units": 3, "return_sequences": True, "dtype": "mixed_bfloat16"}, None, (2, 5, 4), {}),
    ("GRU", {"units": 3, "return_sequences": True, "return_state": True, "dtype": "mixed_float16"}, None,
     (2, 5, 4), {}),
    ("GRU", {"units": 3, "return_sequences": True, "dtype": "mixed_bfloat16"}, None, (2, 5, 4), {}),
]


def make(cls, kwargs, inner):
    if inner is None:
        return getattr(keras.layers, cls)(**kwargs)
    return getattr(keras.layers, cls)(getattr(keras.layers, inner[0])(**inner[1]), **kwargs)


def rnn_case(cls, kwargs, inner, shape, extra):
    layer = make(cls, kwargs, inner)
    x = tf.constant(wave(shape, 1, 1.0, 0.53))
    call = {}
    if "mask" in extra:
        call["mask"] = tf.constant(extra["mask"])
    states = []
    if "initial_state" in extra:
        states = [tf.constant(wave((shape[0], kwargs["units"]), 50 + j, 0.5, 0.37))
                  for j in range(extra["initial_state"])]
        call["initial_state"] = states
    layer(x, **call)          # build
    weights = [wave(tuple(w.shape), 100 + i, 0.5, 0.71) for i, w in enumerate(layer.weights)]
    layer.set_weights(weights)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        for s in states:
            tape.watch(s)
        out = layer(x, **call)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        loss = tf.add_n([tf.reduce_sum(tf.cast(o, tf.float32) * wave(tuple(o.shape), 7 + j, 1.0, 0.29))
                         for j, o in enumerate(outs)])
    grads = tape.gradient(loss, [x] + states + list(layer.trainable_weights))
    return {"class": cls, "kwargs": kwargs, "inner": inner, "shape": shape, "call": extra,
            "config": clean(layer.get_config()),
            "weights": [{"path": w.path, "shape": list(w.shape)} for w in layer.weights],
            "outputs": [{"dtype": o.dtype.name, "shape": list(o.shape), "values": clean(tf.cast(o, tf.float32))}
                        for o in outs],
            "grad_input": clean(grads[0]), "grad_states": [clean(g) for g in grads[1:1 + len(states)]],
            "grad_weights": [clean(g) for g in grads[1 + len(states):]]}


def record_rnn():
    return [rnn_case(*case) for case in RNN_CASES]


def main():
    keras.utils.set_random_seed(0)
    write("layers_b.json", {"formulas": FORMULAS, "rnn": record_rnn()})


if __name__ == "__main__":
    main()
