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
    ("SimpleRNN", {"units": 3}, None, (2, 5, 4), {}),
    ("SimpleRNN", {"units": 3, "activation": "relu", "go_backwards": True, "return_sequences": True,
                   "return_state": True}, None, (2, 5, 4), {"mask": MASK}),
    ("SimpleRNN", {"units": 2, "use_bias": False, "return_sequences": True, "dtype": "mixed_float16"}, None,
     (2, 5, 4), {}),
    ("Bidirectional", {"merge_mode": "concat"}, ("SimpleRNN", {"units": 2, "return_sequences": True}), (2, 5, 4),
     {"mask": MASK}),
    ("RNN", {"return_sequences": True, "return_state": True},
     ("cells", [("LSTMCell", {"units": 3}), ("GRUCell", {"units": 2}), ("SimpleRNNCell", {"units": 2})]), (2, 5, 4),
     {"mask": MASK}),
    ("TimeDistributed", {}, ("Dense", {"units": 2, "activation": "tanh"}), (2, 5, 4), {}),
    ("TimeDistributed", {}, ("Dense", {"units": 3}), (2, 3, 2, 4), {}),
    ("LSTM", {"units": 3, "return_sequences": True, "dtype": "mixed_float16"}, None, (2, 5, 4), {}),
    ("LSTM", {"units": 3, "return_sequences": True, "dtype": "mixed_bfloat16"}, None, (2, 5, 4), {}),
    ("GRU", {"units": 3, "return_sequences": True, "return_state": True, "dtype": "mixed_float16"}, None,
     (2, 5, 4), {}),
    ("GRU", {"units": 3, "return_sequences": True, "dtype": "mixed_bfloat16"}, None, (2, 5, 4), {}),
]


def config_of(layer):
    """The layer's config without what minifp does not write as Keras does (initializer objects, build_config),
    which the tests skip anyway: a smaller file."""
    def strip(c):
        if isinstance(c, list):
            return [strip(v) for v in c]
        if not isinstance(c, dict):
            return c
        return {k: strip(v) for k, v in c.items() if k != "build_config" and not k.endswith("initializer")}
    return strip(clean(layer.get_config()))


def make(cls, kwargs, inner):
    if inner is None:
        return getattr(keras.layers, cls)(**kwargs)
    if inner[0] == "cells":              # RNN over stacked cells
        return getattr(keras.layers, cls)([getattr(keras.layers, c)(**k) for c, k in inner[1]], **kwargs)
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
        outs = tf.nest.flatten(out)
        loss = tf.add_n([tf.reduce_sum(tf.cast(o, tf.float32) * wave(tuple(o.shape), 7 + j, 1.0, 0.29))
                         for j, o in enumerate(outs)])
    grads = tape.gradient(loss, [x] + states + list(layer.trainable_weights))
    return {"class": cls, "kwargs": kwargs, "inner": inner, "shape": shape, "call": extra,
            "config": config_of(layer),
            "weights": [{"path": w.path, "shape": list(w.shape)} for w in layer.weights],
            "outputs": [{"dtype": o.dtype.name, "shape": list(o.shape), "values": clean(tf.cast(o, tf.float32))}
                        for o in outs],
            "grad_input": clean(grads[0]), "grad_states": [clean(g) for g in grads[1:1 + len(states)]],
            "grad_weights": [clean(g) for g in grads[1 + len(states):]]}


def record_rnn():
    return [rnn_case(*case) for case in RNN_CASES]


IMAGE_CASES = [
    ("Rescaling", {"scale": 1 / 255.0}, (2, 3, 4, 3), {}),
    ("Rescaling", {"scale": 1 / 127.5, "offset": -1.0}, (2, 3, 4, 3), {}),
    ("Rescaling", {"scale": [0.5, 2.0, -1.0], "offset": 0.25}, (2, 3, 4, 3), {}),
    ("Rescaling", {"scale": 1 / 255.0, "dtype": "mixed_float16"}, (2, 3, 4, 3), {}),
    ("Rescaling", {"scale": 1 / 255.0, "offset": -0.5, "dtype": "mixed_bfloat16"}, (2, 3, 4, 3), {}),
    ("Resizing", {"height": 3, "width": 4}, (2, 5, 7, 2), {}),
    ("Resizing", {"height": 8, "width": 9}, (2, 5, 7, 2), {}),
    ("Resizing", {"height": 3, "width": 4, "interpolation": "nearest"}, (2, 5, 7, 2), {}),
    ("Resizing", {"height": 8, "width": 11, "interpolation": "nearest"}, (2, 5, 7, 2), {}),
    ("Resizing", {"height": 4, "width": 4, "crop_to_aspect_ratio": True}, (2, 5, 7, 2), {}),
    ("Resizing", {"height": 3, "width": 6, "crop_to_aspect_ratio": True}, (2, 5, 7, 2), {}),
    ("Resizing", {"height": 4, "width": 4, "pad_to_aspect_ratio": True, "fill_value": 0.5}, (2, 5, 7, 2), {}),
    ("Resizing", {"height": 3, "width": 7, "pad_to_aspect_ratio": True}, (2, 5, 7, 2), {}),
    ("Resizing", {"height": 6, "width": 3}, (5, 7, 2), {}),
    ("Resizing", {"height": 3, "width": 4, "data_format": "channels_first"}, (2, 2, 5, 7), {}),
    ("Resizing", {"height": 6, "width": 5, "dtype": "mixed_float16"}, (2, 5, 7, 2), {}),
    ("Resizing", {"height": 3, "width": 4}, (2, 5, 7, 2), {"uint8": True}),
    ("Resizing", {"height": 9, "width": 8, "interpolation": "nearest", "dtype": "mixed_float16"}, (2, 5, 7, 2),
     {"uint8": True}),
    ("Rescaling", {"scale": 1 / 255.0}, (2, 3, 4, 3), {"uint8": True}),
] + [("RandomRotation", {"factor": (f, f), "fill_mode": mode, "interpolation": interp, "fill_value": 0.5},
      (1, 5, 6, 1), {"training": True})
     for f in (0.2, 0.1, -0.15) for mode in ("reflect", "wrap", "constant", "nearest")
     for interp in ("bilinear", "nearest") if f == 0.1 or interp == "bilinear"]
# (not 0.25: a quarter turn of a 5 x 6 image reads at half-pixel points, where rounding to the nearest pixel
# turns on the last bit of TensorFlow's float arithmetic)


def image_case(cls, kwargs, shape, call):
    layer = getattr(keras.layers, cls)(**kwargs)
    x = tf.constant(wave(shape, 1, 1.0, 0.53))
    if call.get("uint8"):              # integer images: wave scaled to 0..255 and rounded
        call = {k: v for k, v in call.items() if k != "uint8"}
        x = tf.constant(np.round(wave(shape, 1, 127.5, 0.53, 127.5)).astype(np.uint8))
        out = layer(x, **call)
        return {"class": cls, "kwargs": kwargs, "shape": shape, "call": {"uint8": True, **call},
                "config": config_of(layer),
                "output": {"dtype": out.dtype.name, "shape": list(out.shape), "values": clean(out)},
                "grad_input": None}
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = layer(x, **call)
        loss = tf.reduce_sum(tf.cast(out, tf.float32) * wave(tuple(out.shape), 7, 1.0, 0.29))
    # TensorFlow's gradient of the projective transform (RandomRotation) is the inverse transform applied to the
    # cotangent, not the transform's adjoint: minifp's gathers give the adjoint, so it is not recorded
    grad = tape.gradient(loss, x) if cls != "RandomRotation" else None
    return {"class": cls, "kwargs": kwargs, "shape": shape, "call": call, "config": config_of(layer),
            "output": {"dtype": out.dtype.name, "shape": list(out.shape), "values": clean(tf.cast(out, tf.float32))},
            "grad_input": None if grad is None else clean(grad)}


CORPUS = ["The cat sat on the mat.", "the dog ATE the cat's food!", "A dog, a cat; and a bird?", "bird bird sat",
          "Mat-mat: THE end"]
WORDS = ["cat", "dog", "the", "bird", "fish", "a", "mat", "dog", "zebra", "the", "[UNK]", "", "Cat"]

TEXT_CASES = [
    ("StringLookup", {"vocabulary": ["the", "cat", "dog", "a"]}, None, [WORDS, [WORDS[:4], WORDS[4:8]]]),
    ("StringLookup", {"vocabulary": ["the", "cat", "dog", "a"], "mask_token": ""}, None, [WORDS]),
    ("StringLookup", {"vocabulary": ["", "[UNK]", "the", "cat"], "mask_token": ""}, None, [WORDS]),
    ("StringLookup", {"vocabulary": ["the", "cat", "dog", "a"], "num_oov_indices": 0}, None,
     [["the", "a", "dog", "cat", "the"]]),
    ("StringLookup", {"vocabulary": ["the", "cat", "dog", "a"], "oov_token": "<oov>", "num_oov_indices": 1},
     None, [WORDS]),
    ("StringLookup", {"vocabulary": ["the", "cat", "dog", "a"], "num_oov_indices": 3, "mask_token": ""}, None,
     [WORDS + ["a much longer out-of-vocabulary token than the others, over sixty-four bytes long, hashed", "é"]]),
    ("IntegerLookup", {"vocabulary": [12, 36], "num_oov_indices": 4, "oov_method": "farmhash"}, None,
     [[12, 7, 36, -5, 123456789, 0, 99]]),
    ("StringLookup", {"vocabulary": ["the", "cat", "dog", "a"], "output_mode": "one_hot"}, None,
     [WORDS[:5], [["cat"], ["fish"]]]),
    ("StringLookup", {"vocabulary": ["the", "cat", "dog", "a"], "output_mode": "multi_hot"}, None,
     [WORDS[:5], [WORDS[:4], WORDS[4:8]]]),
    ("StringLookup", {"vocabulary": ["the", "cat", "dog", "a"], "output_mode": "count", "mask_token": ""}, None,
     [[WORDS[:6], WORDS[6:12]]]),
    ("StringLookup", {"vocabulary": ["the", "cat", "dog", "a"], "output_mode": "multi_hot", "max_tokens": 8,
                      "pad_to_max_tokens": True}, None, [[WORDS[:4], WORDS[4:8]]]),
    ("StringLookup", {"vocabulary": ["the", "cat", "dog", "a"], "invert": True}, None, [[0, 1, 2, 3, 4, 5, 7]]),
    ("StringLookup", {"vocabulary": ["the", "cat", "dog", "a"], "invert": True, "mask_token": "[M]"}, None,
     [[[0, 1, 2], [3, 4, 5]]]),
    ("StringLookup", {}, WORDS + WORDS[:5] + ["dog"], [WORDS]),
    ("StringLookup", {"max_tokens": 5, "mask_token": "", "num_oov_indices": 1},
     WORDS + WORDS[:5], [WORDS]),
    ("StringLookup", {"output_mode": "multi_hot"}, WORDS + ["cat", "cat"], [[WORDS[:4], WORDS[4:8]]]),
    ("StringLookup", {"output_mode": "tf_idf"}, [WORDS[:6], WORDS[6:12], WORDS[2:8]], [[WORDS[:4], WORDS[4:8]]]),
    ("StringLookup", {"output_mode": "tf_idf", "max_tokens": 9, "pad_to_max_tokens": True},
     [WORDS[:6], WORDS[6:12]], [WORDS[:7]]),
    ("StringLookup", {"output_mode": "tf_idf", "vocabulary": ["the", "cat", "dog"], "idf_weights": [0.5, 1.25, 2.0]},
     None, [[WORDS[:4], WORDS[4:8]]]),
    ("IntegerLookup", {"vocabulary": [12, 36, 1138, 42]}, None, [[12, 1138, 42, 7, 36, -1, 0]]),
    ("IntegerLookup", {"vocabulary": [12, 36, 1138, 42], "mask_token": 0}, None, [[[12, 0, 42], [7, 36, 0]]]),
    ("IntegerLookup", {"vocabulary": [12, 36, 1138, 42], "num_oov_indices": 2}, None,
     [[12, 1138, 42, 7, 36, 9, -3, 8]]),
    ("IntegerLookup", {"vocabulary": [12, 36, 1138, 42], "invert": True}, None, [[0, 1, 2, 3, 4, 5]]),
    ("IntegerLookup", {"vocabulary": [12, 36, 1138, 42], "output_mode": "count"}, None,
     [[[12, 12, 7], [42, 1138, 36]]]),
    ("IntegerLookup", {"max_tokens": 4}, [3, 5, 5, 7, 7, 9, 1, 1, 1, 9, 9, 9, 2], [[3, 5, 7, 9, 1, 2, 4]]),
    ("TextVectorization", {}, CORPUS, [CORPUS, ["the bird ate a fish", "", "CAT cat Cat."]]),
    ("TextVectorization", {"output_sequence_length": 4}, CORPUS, [CORPUS]),
    ("TextVectorization", {"output_sequence_length": 9, "max_tokens": 7}, CORPUS, [CORPUS]),
    ("TextVectorization", {"output_mode": "multi_hot"}, CORPUS, [CORPUS]),
    ("TextVectorization", {"output_mode": "count", "max_tokens": 6}, CORPUS, [CORPUS]),
    ("TextVectorization", {"standardize": None}, CORPUS, [CORPUS]),
    ("TextVectorization", {"standardize": "lower"}, CORPUS, [CORPUS]),
    ("TextVectorization", {"split": None, "standardize": "lower_and_strip_punctuation"}, ["a", "b", "a", "c"],
     [["a", "c", "d", "A!"]]),
    ("TextVectorization", {"split": "character", "max_tokens": 8}, ["abca", "bad", "cab"], [["abc", "dab e"]]),
    ("TextVectorization", {"output_mode": "tf_idf"}, CORPUS, [CORPUS[:3]]),
    ("TextVectorization", {"ngrams": 2}, CORPUS[:3], [CORPUS[:3], ["the cat sat on a dog"]]),
    ("TextVectorization", {"ngrams": (1, 3), "output_mode": "multi_hot", "max_tokens": 12}, CORPUS, [CORPUS]),
    ("TextVectorization", {"vocabulary": ["the", "cat", "sat"], "output_sequence_length": 5}, None,
     [[["The cat"], ["sat on the cat"]]]),
]


def text_case(cls, kwargs, adapt, inputs):
    layer = getattr(keras.layers, cls)(**kwargs)
    if adapt is not None:
        layer.adapt(adapt)
    outputs = []
    for x in inputs:
        out = layer(np.array(x) if cls != "TextVectorization" else np.array(x))
        values = out.numpy()
        if values.dtype.kind in "OS":
            values = np.vectorize(lambda b: b.decode("utf-8"), otypes=[str])(values)
        outputs.append({"dtype": out.dtype.name, "values": clean(values)})
    return {"class": cls, "kwargs": kwargs, "adapt": adapt, "inputs": inputs, "outputs": outputs,
            "vocabulary": clean(layer.get_vocabulary()), "vocabulary_size": layer.vocabulary_size(),
            "config": config_of(layer)}


def rnn_model():
    """A Sequential of every recurrent layer, its weights from the formulas, saved by Keras (weights/rnn.weights.h5)."""
    model = keras.Sequential([keras.Input((5, 4)), keras.layers.LSTM(3, return_sequences=True),
                              keras.layers.Bidirectional(keras.layers.GRU(2, return_sequences=True)),
                              keras.layers.TimeDistributed(keras.layers.Dense(3)), keras.layers.SimpleRNN(2)])
    model.set_weights([wave(tuple(w.shape), 100 + i, 0.5, 0.71) for i, w in enumerate(model.weights)])
    path = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "keras" / "weights" / "rnn.weights.h5"
    model.save_weights(str(path))
    x = wave((2, 5, 4), 1, 1.0, 0.53)
    return {"file": "weights/rnn.weights.h5", "predictions": clean(model(x)),
            "weights": [{"path": w.path, "shape": list(w.shape)} for w in model.weights]}


def main():
    keras.utils.set_random_seed(0)
    write("layers_b.json", {"formulas": FORMULAS, "rnn": record_rnn(),
                            "images": [image_case(*c) for c in IMAGE_CASES],
                            "text": [text_case(*c) for c in TEXT_CASES], "rnn_model": rnn_model()})


if __name__ == "__main__":
    main()
