"""fit, evaluate and predict take a tf.data.Dataset or any iterable/generator of (x, y[, sample_weight]) batches,
as Keras's data adapters do, including endless `.repeat()` datasets with steps_per_epoch."""
import warnings

import numpy as np
import pytest

import minifp
import minifp.tf as tf
from minifp import keras
from minifp.keras import optimizers

(X, Y), _ = minifp.datasets.load_digits()
X, Y = X[:128].astype(np.float32), Y[:128]


def _compiled():
    minifp.manual_seed(0)
    m = keras.Sequential([keras.Input(shape=(8, 8)), keras.layers.Flatten(),
                          keras.layers.Dense(16, activation="relu"), keras.layers.Dense(10)])
    m.compile(optimizers.SGD(0.1), keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
    return m


def _same_weights(a, b):
    for u, v in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(u, v)


def test_fit_on_an_endless_dataset_with_steps_per_epoch_equals_fit_on_the_arrays():
    ref = _compiled()
    ref_history = ref.fit(X, Y, batch_size=32, epochs=3, shuffle=False, verbose=0)
    m = _compiled()
    data = tf.data.Dataset.from_tensor_slices((X, Y)).repeat().batch(32)
    history = m.fit(data, steps_per_epoch=4, epochs=3, verbose=0)
    _same_weights(m, ref)
    assert history.history["loss"] == ref_history.history["loss"]
    assert history.params["steps"] == 4


def test_steps_per_epoch_continues_the_iterator_across_epochs():
    ref = _compiled()
    ref.fit(X, Y, batch_size=32, epochs=1, shuffle=False, verbose=0)
    m = _compiled()
    m.fit(tf.data.Dataset.from_tensor_slices((X, Y)).batch(32).repeat(), steps_per_epoch=2, epochs=2, verbose=0)
    _same_weights(m, ref)                      # 2 + 2 batches: the four batches of one pass, in order


def test_fit_on_a_generator_and_a_finite_dataset_with_validation_data():
    def batches():
        for i in range(0, 128, 32):
            yield X[i:i + 32], Y[i:i + 32]
    ref = _compiled()
    ref_history = ref.fit(X, Y, batch_size=32, epochs=1, shuffle=False, verbose=0, validation_data=(X, Y))
    m = _compiled()
    history = m.fit(batches(), epochs=1, verbose=0, shuffle=False,
                    validation_data=tf.data.Dataset.from_tensor_slices((X, Y)).batch(32))
    _same_weights(m, ref)
    assert history.history == ref_history.history


def test_evaluate_and_predict_take_datasets():
    m = _compiled()
    data = tf.data.Dataset.from_tensor_slices((X, Y)).batch(50)
    # Same batches on both sides: a float32 product's low bits depend on the BLAS kernel the batch's shape picks.
    assert m.evaluate(data, verbose=0, return_dict=True) == m.evaluate(X, Y, batch_size=50, verbose=0,
                                                                       return_dict=True)
    np.testing.assert_array_equal(m.predict(data, verbose=0), m.predict(X, batch_size=50, verbose=0))
    np.testing.assert_array_equal(m.predict(tf.data.Dataset.from_tensor_slices(X).batch(50), verbose=0),
                                  m.predict(X, batch_size=50, verbose=0))
    endless = tf.data.Dataset.from_tensor_slices((X, Y)).batch(32).repeat()
    assert m.evaluate(endless, steps=4, verbose=0) == m.evaluate(X, Y, batch_size=32, verbose=0)


def test_sample_weights_in_the_batches():
    sw = np.linspace(0.5, 1.5, 128).astype(np.float32)
    ref = _compiled()
    ref.fit(X, Y, sample_weight=sw, batch_size=32, shuffle=False, verbose=0)
    m = _compiled()
    m.fit(tf.data.Dataset.from_tensor_slices((X, Y, sw)).batch(32), verbose=0)
    _same_weights(m, ref)


def test_a_dataset_that_runs_out_warns_and_ends_the_epoch():
    m = _compiled()
    with pytest.warns(UserWarning, match="ran out of data"):
        history = m.fit(tf.data.Dataset.from_tensor_slices((X, Y)).batch(32), steps_per_epoch=10, epochs=1,
                        verbose=0)
    assert len(history.history["loss"]) == 1


def test_y_and_validation_split_with_a_dataset_are_refused():
    m = _compiled()
    data = tf.data.Dataset.from_tensor_slices((X, Y)).batch(32)
    with pytest.raises(ValueError, match="When providing `x` as a tf.data.Dataset, `y` should not be passed"):
        m.fit(data, Y, verbose=0)
    with pytest.raises(ValueError, match="validation_split"):
        m.fit(data, validation_split=0.2, verbose=0)
    with pytest.raises(ValueError, match="`class_weight` is not supported for Python generator"):
        m.fit((b for b in [(X, Y)]), class_weight={0: 2.0}, verbose=0)


def test_class_weight_applies_to_dataset_batches():
    ref = _compiled()
    ref.fit(X, Y, class_weight={0: 3.0, 1: 0.5}, batch_size=32, shuffle=False, verbose=0)
    m = _compiled()
    m.fit(tf.data.Dataset.from_tensor_slices((X, Y)).batch(32), class_weight={0: 3.0, 1: 0.5}, verbose=0)
    _same_weights(m, ref)
