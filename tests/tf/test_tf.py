"""minifp.tf: the TensorFlow shim the tf.keras guides run on (GradientTape, constant/cast, dtypes, ops, config,
tf.function, tf.data, tf.keras's wiring)."""
import numpy as np
import pytest

import minifp.tf as tf
from minifp import _formats as F
from minifp._state import Autocast, autocast_scope
from minifp._tensor import tensor as engine_tensor
from minifp.keras._tensor import Tensor as KerasTensor
from minifp.tf import _config


def variable(values):
    """A float32 leaf that requires gradients (what a trainable Keras variable is to the engine)."""
    t = tf.constant(values, dtype="float32")
    t.requires_grad = True
    return t


# -- the guide's overflow and underflow lines ----------------------------------------------------------------

def test_guide_float16_overflow_and_underflow():
    x = tf.constant(256, dtype='float16')
    out = (x ** 2).numpy()
    assert out.dtype == np.float16 and np.isinf(out) and out > 0
    x = tf.constant(1e-5, dtype='float16')
    out = (x ** 2).numpy()
    assert out.dtype == np.float16 and out == 0.0
    assert tf.constant(255, dtype='float16').__pow__(2).numpy() == np.float16(65024.0)    # still finite


# -- dtypes, constant, cast ------------------------------------------------------------------------------------

def test_dtypes_print_as_tensorflow_and_equal_keras_strings():
    assert repr(tf.float16) == "tf.float16" and tf.float16.name == "float16"
    assert tf.float16 == "float16" and hash(tf.float16) == hash("float16")
    assert tf.dtypes.float32 is tf.float32 and tf.half is tf.float16
    assert tf.float16.is_floating and not tf.int32.is_floating and tf.int32.is_integer and tf.bool.is_bool
    assert tf.float16.max == 65504.0 and tf.int32.max == 2 ** 31 - 1 and tf.uint8.min == 0
    assert tf.float16.as_numpy_dtype is np.float16
    assert tf.as_dtype("bfloat16") is tf.bfloat16 and tf.as_dtype(np.int64) is tf.int64
    assert tf.float64 is tf.float32      # no float64 format in minifp
    with pytest.raises(TypeError, match="valid dtypes"):
        tf.as_dtype("complex64")


def test_constant_infers_tensorflow_dtypes():
    assert tf.constant(1).dtype == tf.int32 and tf.constant(1).dtype.name == "int32"
    assert tf.constant(1.5).dtype.name == "float32"
    assert tf.constant([True, False]).dtype.name == "bool"
    assert tf.constant(np.arange(3, dtype=np.int64)).dtype.name == "int64"
    assert tf.constant(np.zeros(2, np.uint8)).dtype.name == "uint8"
    assert tf.constant(np.zeros(2, np.float16)).dtype.name == "float16"
    assert tf.constant(np.array([0.1])).dtype.name == "float32"      # float64 data: float32 here
    x = tf.constant([0.1, 1 / 3], dtype=tf.bfloat16)
    assert isinstance(x, KerasTensor) and x.dtype.name == "bfloat16"
    np.testing.assert_array_equal(x.float32(), np.array([0.1, 1 / 3]).astype(F.bfloat16.storage).astype(np.float32))


def test_constant_shape_fills_or_reshapes_and_refuses_a_mismatch():
    np.testing.assert_array_equal(tf.constant(7, shape=(2, 3)).numpy(), np.full((2, 3), 7, np.int32))
    np.testing.assert_array_equal(tf.constant([1, 2, 3, 4], shape=[2, 2]).numpy(), [[1, 2], [3, 4]])
    with pytest.raises(TypeError, match="has 3 elements, but got `shape` \\(2, 2\\) with 4 elements"):
        tf.constant([1, 2, 3], shape=(2, 2))
    with pytest.raises(TypeError, match="Cannot convert 1.5 to EagerTensor of dtype int32"):
        tf.constant(1.5, dtype=tf.int32)


def test_convert_to_tensor_keeps_tensors_and_checks_their_dtype():
    x = tf.constant([1.0, 2.0], dtype="float16")
    assert tf.convert_to_tensor(x) is x and tf.convert_to_tensor(x, dtype="float16") is x
    with pytest.raises(ValueError, match="requested dtype float32 for Tensor with dtype float16"):
        tf.convert_to_tensor(x, dtype=tf.float32)
    assert tf.convert_to_tensor([1, 2], dtype_hint=tf.float32).dtype == "float32"
    assert isinstance(tf.convert_to_tensor(engine_tensor([1.0])), KerasTensor)


def test_cast_rounds_once_and_truncates_to_integers():
    x = tf.constant([1.7, -1.7, 1 / 3])
    assert tf.cast(x, tf.int32).numpy().tolist() == [1, -1, 0]
    h = tf.cast(x, tf.float16)
    assert h.dtype.name == "float16"
    np.testing.assert_array_equal(h.numpy(), np.float32([1.7, -1.7, 1 / 3]).astype(np.float16))
    assert tf.cast(tf.constant([257, 3]), "bfloat16").float32().tolist() == [256.0, 3.0]   # 8 significant bits
    assert tf.cast(tf.constant([0.0, 2.5]), tf.bool).numpy().tolist() == [False, True]
    assert tf.cast(x, "float32") is x


# -- ops -------------------------------------------------------------------------------------------------------

def test_reductions_and_math():
    x = tf.constant([[1.0, 2.0], [3.0, 6.0]])
    assert tf.reduce_mean(x).numpy() == 3.0 and tf.reduce_sum(x).numpy() == 12.0
    assert tf.reduce_max(x).numpy() == 6.0 and tf.reduce_min(x).numpy() == 1.0
    np.testing.assert_array_equal(tf.math.reduce_mean(x, axis=0).numpy(), [2.0, 4.0])
    assert tf.reduce_sum(x, axis=1, keepdims=True).shape == (2, 1)
    m = tf.reduce_mean(tf.constant([1, 2]))
    assert m.dtype.name == "int32" and m.numpy() == 1          # TensorFlow's integer mean truncates
    fin = tf.math.is_finite(tf.constant([1.0, np.inf, np.nan]))
    assert fin.dtype.name == "bool" and fin.numpy().tolist() == [True, False, False]
    np.testing.assert_allclose(tf.math.log(tf.constant([np.e])).numpy(), [1.0], rtol=1e-6)
    s = tf.nn.softmax(tf.constant([[1.0, 2.0, 3.0]]))
    e = np.exp([1.0, 2.0, 3.0])
    np.testing.assert_allclose(s.numpy(), [e / e.sum()], rtol=1e-6)
    np.testing.assert_array_equal(tf.nn.relu(tf.constant([-1.0, 2.0])).numpy(), [0.0, 2.0])
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(tf.matmul(a, a, transpose_b=True).numpy(), [[5.0, 11.0], [11.0, 25.0]])
    np.testing.assert_array_equal(tf.linalg.matmul(a, a).numpy(), [[7.0, 10.0], [15.0, 22.0]])
    assert tf.argmax(a, axis=1).numpy().tolist() == [1, 1] and tf.argmax(a, axis=1).dtype == "int64"
    assert tf.range(3).numpy().tolist() == [0, 1, 2] and tf.range(3).dtype == "int32"
    assert tf.zeros((2, 2), dtype=tf.float16).dtype == "float16" and tf.ones_like(a).numpy().sum() == 4.0


def test_float16_ops_round_into_float16():
    x = tf.constant([60000.0], dtype="float16")
    assert np.isinf(tf.add(x, x).numpy()[0])                        # 120000 > 65504
    assert tf.reduce_sum(tf.constant([1.0, 2.0 ** -11], dtype="float16")).numpy() == 1.0   # ties to even


def test_random_draws_are_rounded_into_the_dtype_and_seeded():
    tf.random.set_seed(3)
    a = tf.random.normal((4,), dtype=tf.float16)
    tf.random.set_seed(3)
    b = tf.random.normal((4,), dtype=tf.float16)
    assert a.dtype == "float16" and a.numpy().tolist() == b.numpy().tolist()
    u = tf.random.uniform((100,), minval=2, maxval=3)
    assert u.dtype == "float32" and 2 <= u.numpy().min() and u.numpy().max() < 3
    with pytest.raises(ValueError, match="Must specify maxval for integer dtype int32"):
        tf.random.uniform((2,), dtype=tf.int32)


# -- GradientTape ----------------------------------------------------------------------------------------------

def test_tape_gradient_of_a_watched_constant():
    x = tf.constant(3.0)
    with tf.GradientTape() as g:
        g.watch(x)
        y = x * x
    dy_dx = g.gradient(y, x)
    assert isinstance(dy_dx, KerasTensor) and dy_dx.dtype == "float32" and dy_dx.numpy() == 6.0
    assert not x.requires_grad                 # the tape let go of what it made watchable


def test_tape_gradients_match_hand_derived_values_and_leave_grad_alone():
    w = variable([1.0, -2.0, 0.5])
    b = variable(0.25)
    sentinel = engine_tensor([9.0, 9.0, 9.0])
    w.grad = sentinel
    x = tf.constant([2.0, 3.0, 4.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(w * w * x) + 3.0 * b * b      # dy/dw = 2 w x, dy/db = 6 b
    gw, gb = tape.gradient(y, [w, b])
    np.testing.assert_array_equal(gw.numpy(), [4.0, -12.0, 4.0])
    assert gb.numpy() == 1.5
    assert w.grad is sentinel and b.grad is None         # .grad untouched


def test_non_persistent_tape_refuses_a_second_gradient():
    w = variable(2.0)
    with tf.GradientTape() as tape:
        z = w * w * w
    assert tape.gradient(z, w).numpy() == 12.0
    with pytest.raises(RuntimeError, match=r"^A non-persistent GradientTape can only be used to compute one set "
                                           r"of gradients \(or jacobians\)$"):
        tape.gradient(z, w)


def test_persistent_tape_gives_several_gradients():
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as g:
        g.watch(x)
        y = x * x
        z = y * y
    assert g.gradient(z, x).numpy() == 108.0         # 4 x^3
    assert g.gradient(y, x).numpy() == 6.0
    assert g.gradient(z, y).numpy() == 18.0          # an intermediate source: 2 y
    del g
    assert not x.requires_grad


def test_source_structures_unconnected_and_int_sources():
    w1, w2, unused = variable(5.0), variable(3.0), variable(1.0)
    with tf.GradientTape(persistent=True) as tape:
        z = 3 * w1 * w1 + 2 * w1 * w2
    assert tape.gradient(z, unused) is None
    assert tape.gradient(z, unused, unconnected_gradients="zero").numpy() == 0.0
    assert tape.gradient(z, unused, unconnected_gradients=tf.UnconnectedGradients.ZERO).numpy() == 0.0
    nested = tape.gradient(z, [[w1], (w2, unused)])
    assert isinstance(nested, list) and isinstance(nested[1], tuple)
    assert nested[0][0].numpy() == 36.0 and nested[1][0].numpy() == 10.0 and nested[1][1] is None
    d = tape.gradient(z, {"b": w2, "a": w1})
    assert list(d) == ["b", "a"] and d["a"].numpy() == 36.0
    assert [g.numpy() for g in tape.gradient(z, iter([w1, w2]))] == [36.0, 10.0]
    assert tape.gradient(z, tf.constant(1)) is None              # integer source: no gradient
    with pytest.raises(ValueError, match="sources must be tensors"):
        tape.gradient(z, [np.float32(1.0)])


def test_list_targets_sum_and_output_gradients_weight():
    w = variable([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        a = w * 3.0
        b = w * w
    np.testing.assert_array_equal(tape.gradient([a, b], w).numpy(), [5.0, 7.0])            # 3 + 2 w
    np.testing.assert_array_equal(tape.gradient(b, w, output_gradients=tf.constant([10.0, 1.0])).numpy(),
                                  [20.0, 4.0])
    np.testing.assert_array_equal(tape.gradient(b, w).numpy(), [2.0, 4.0])                  # non-scalar: sum


def test_watch_accessed_variables_false_watches_only_what_it_is_told():
    w, v = tf.Variable(2.0), tf.Variable(3.0)     # watched_variables() lists variables, never watched constants
    with tf.GradientTape(watch_accessed_variables=False, persistent=True) as tape:
        tape.watch(v)
        y = w * v
    assert tape.gradient(y, w) is None and tape.gradient(y, v).numpy() == 2.0
    assert tape.watched_variables() == (v,)


def test_tape_records_inside_no_grad_and_stop_recording_does_not():
    import minifp
    w = variable(2.0)
    with minifp.no_grad():
        with tf.GradientTape(persistent=True) as tape:
            y = w * w
            with tape.stop_recording():
                c = w * 5.0
    assert tape.gradient(y, w).numpy() == 4.0
    assert tape.gradient(c, w) is None


def test_mixed_float16_variable_gradients_come_out_float32():
    # Keras's rule: the float32 variable is read in float16 (variables-only autocast); its gradient is float32.
    w = variable([[0.1, 0.2], [0.3, 0.4]])
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]], dtype="float16")
    with tf.GradientTape() as tape:
        with autocast_scope(Autocast(F.float16, frozenset(), frozenset(), variables_only=True)):
            y = tf.matmul(x, w)
        loss = tf.reduce_sum(tf.cast(y, "float32"))
    assert y.dtype == "float16"
    g = tape.gradient(loss, w)
    assert g.dtype == "float32"
    np.testing.assert_array_equal(g.numpy(), [[4.0, 4.0], [6.0, 6.0]])     # x^T @ ones, exact
    assert w.grad is None


def test_tape_refuses_bad_watch_and_target():
    with tf.GradientTape() as tape:
        with pytest.raises(ValueError, match="not tf.Tensor or tf.Variable"):
            tape.watch([1.0])
    with pytest.raises(TypeError, match="target must be a tensor"):
        tape.gradient(1.0, [])


# -- tf.function, tf.config -------------------------------------------------------------------------------------

def test_function_runs_the_function_as_it_is():
    calls = []

    @tf.function
    def f(x):
        calls.append(x)
        return x * 2

    @tf.function(jit_compile=True, reduce_retracing=True)
    def g(x):
        return x + 1

    class M:
        @tf.function
        def step(self, x):
            return x - 1

    assert f(3) == 6 and g(3) == 4 and M().step(3) == 2 and calls == [3]
    assert f.__name__ == "f" and f.python_function(1) == 2


def test_set_jit_is_accepted_and_changes_nothing():
    x = tf.constant([1.0, 3.0], dtype="float16")
    before = tf.nn.softmax(x).numpy()
    tf.config.optimizer.set_jit(True)
    try:
        assert tf.config.optimizer.get_jit() is True
        np.testing.assert_array_equal(tf.nn.softmax(x).numpy(), before)
    finally:
        tf.config.optimizer.set_jit(False)
    with pytest.raises(ValueError, match="set_jit"):
        tf.config.optimizer.set_jit("yes")
    with pytest.warns(UserWarning, match="auto_mixed_precision"):
        tf.config.optimizer.set_experimental_options({"auto_mixed_precision": True})
    assert tf.config.optimizer.get_experimental_options()["auto_mixed_precision"] is True


def test_list_physical_devices_is_truthful(monkeypatch):
    gpus = tf.config.list_physical_devices("GPU")
    assert len(gpus) == _config._gpu_count()
    monkeypatch.setattr(_config, "_gpu_count", lambda: 0)
    assert tf.config.list_physical_devices("GPU") == []
    assert not tf.config.list_physical_devices('GPU')          # the guide's test picks the CPU size
    assert [d.device_type for d in tf.config.list_physical_devices()] == ["CPU"]
    with pytest.raises(ValueError, match="Unrecognized device"):
        tf.config.experimental.set_memory_growth(tf.config.list_physical_devices("CPU")[0], True)
    monkeypatch.setattr(_config, "_gpu_count", lambda: 1)
    gpu, = tf.config.list_physical_devices("GPU")
    assert gpu.name == "/physical_device:GPU:0" and gpu.device_type == "GPU"
    tf.config.experimental.set_memory_growth(gpu, True)
    assert tf.config.experimental.get_memory_growth(gpu) is True


# -- tf.data ------------------------------------------------------------------------------------------------------

def test_dataset_shuffle_batch_as_the_guide_uses_it():
    x = np.arange(20 * 3, dtype=np.float32).reshape(20, 3)
    y = np.arange(20, dtype=np.uint8)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(10000).batch(8)
    assert len(ds) == 3
    batches = list(ds)
    assert [b[0].shape for b in batches] == [(8, 3), (8, 3), (4, 3)]
    assert batches[0][0].dtype == "float32" and batches[0][1].dtype == "uint8"
    seen = np.concatenate([b[1].numpy() for b in batches])
    assert sorted(seen.tolist()) == list(range(20)) and seen.tolist() != list(range(20))
    for bx, by in batches:       # pairs stay together
        np.testing.assert_array_equal(bx.numpy(), x[by.numpy()])
    second = np.concatenate([b[1].numpy() for b in ds])
    assert second.tolist() != seen.tolist()                      # reshuffled each iteration
    test = tf.data.Dataset.from_tensor_slices((x, y)).batch(8192)
    (tx, ty), = list(test)
    np.testing.assert_array_equal(tx.numpy(), x)
    with pytest.raises(ValueError, match="same size in the first dimension"):
        tf.data.Dataset.from_tensor_slices((x, y[:3]))


def test_dataset_map_take_repeat():
    ds = tf.data.Dataset.from_tensor_slices(np.arange(5, dtype=np.int64)).map(lambda v: v * 2).take(3).repeat(2)
    assert [int(v.numpy()) for v in ds] == [0, 2, 4, 0, 2, 4] and len(ds) == 6


# -- tf.keras -----------------------------------------------------------------------------------------------------

def test_tf_keras_is_minifp_keras_with_its_own_mixed_precision():
    import minifp.keras as keras
    from minifp.tf.keras import layers, mixed_precision   # noqa: F401  (the guide's import line)
    from minifp.tf.keras.layers import Dense, Activation   # noqa: F401  (the Persian post's)
    assert Dense is keras.layers.Dense and tf.keras.layers.Conv2D is keras.layers.Conv2D
    # tf.keras's own where the two differ: BatchNormalization (fused kernel), callbacks' auto mode, applications
    assert issubclass(tf.keras.layers.BatchNormalization, keras.layers.BatchNormalization)
    assert tf.keras.layers.BatchNormalization is not keras.layers.BatchNormalization
    assert tf.keras.callbacks.History is keras.callbacks.History
    assert type(tf.keras.applications.MobileNetV2((32, 32, 3), include_top=False).layers[2]) is \
        tf.keras.layers.BatchNormalization
    # tf.keras's models are minifp.keras's with tf.keras's rules where the two differ (tests/tf/test_keras_models.py)
    assert issubclass(tf.keras.Model, keras.Model) and issubclass(tf.keras.Sequential, keras.Sequential)
    assert tf.keras.models.Model is tf.keras.Model
    # tf.keras.Input: Keras 3's, its InputLayer named input_1, input_2 ... (tests/tf/test_summary_fixtures.py)
    assert tf.keras.Input is tf.keras.layers.Input and issubclass(tf.keras.layers.InputLayer, keras.layers.InputLayer)
    for name in ("optimizers", "backend", "activations", "initializers"):
        assert getattr(tf.keras, name) is getattr(keras, name)
    assert mixed_precision.__name__ == "minifp.tf.keras.mixed_precision"
    assert repr(mixed_precision.Policy("mixed_float16")) == '<Policy "mixed_float16">'
    assert tf.keras.mixed_precision.experimental.set_policy is not None       # TF 2.1-2.3 code


@pytest.mark.parametrize("name", ["losses", "metrics", "datasets", "optimizers"])
def test_tf_keras_submodules_from_the_sibling_branches(name):
    import importlib
    keras_module = importlib.import_module(f"minifp.keras.{name}")
    assert getattr(tf.keras, name) is keras_module
    assert importlib.import_module(f"minifp.tf.keras.{name}") is keras_module


@pytest.mark.parametrize("name", ["layers", "callbacks", "applications", "applications.mobilenet_v2"])
def test_tf_keras_modules_of_its_own_import_as_tensorflows(name):
    """Where tf.keras's rules differ (BatchNormalization, callbacks' auto mode, applications built of those), the
    modules are the tf door's own; `from minifp.tf.keras.<name> import ...` still works."""
    import importlib
    module = importlib.import_module(f"minifp.tf.keras.{name}")
    assert module.__name__ == f"minifp.tf.keras.{name}" and module.__all__
    assert all(hasattr(module, n) for n in module.__all__)


def test_tf_keras_callbacks_take_auto_mode_from_the_name():
    from minifp.tf.keras import callbacks
    stop = callbacks.EarlyStopping(monitor="val_accuracy")
    reduce = callbacks.ReduceLROnPlateau(monitor="val_acc")
    for c in (stop, reduce, callbacks.ModelCheckpoint("m.weights.h5", monitor="val_accuracy", save_weights_only=True)):
        assert c._auto_monitor_op() is np.greater
    assert callbacks.EarlyStopping(monitor="val_loss")._auto_monitor_op() is np.less
    with pytest.raises(ValueError, match="isn't able to automatically determine"):     # Keras 3 asks the metrics
        from minifp import keras
        keras.callbacks.EarlyStopping(monitor="val_accuracy")._auto_monitor_op()


def _guide_step(policy):
    """The guide's custom training step (get_scaled_loss / get_unscaled_gradients under a GradientTape) on a
    small Dense model with a float32 softmax; the loss is written with tf ops."""
    from minifp.tf import keras
    from minifp.tf.keras import layers, mixed_precision
    mixed_precision.set_global_policy(policy)
    try:
        inputs = keras.Input(shape=(4,), name="digits")
        x = layers.Dense(8, activation="relu", name="dense_1")(inputs)
        x = layers.Dense(3, name="dense_logits")(x)
        outputs = layers.Activation("softmax", dtype="float32", name="predictions")(x)
        model = keras.Model(inputs=inputs, outputs=outputs)
        optimizer = mixed_precision.LossScaleOptimizer(keras.optimizers.RMSprop())
        xb = tf.constant(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4))
        onehot = tf.constant(np.eye(3, dtype=np.float32)[[0, 2]])

        @tf.function
        def train_step(x, y):
            with tf.GradientTape() as tape:
                predictions = model(x)
                loss = -tf.reduce_mean(tf.reduce_sum(y * tf.math.log(predictions), axis=1))
                scaled_loss = optimizer.get_scaled_loss(loss)
            scaled_gradients = tape.gradient(scaled_loss, model.trainable_variables)
            gradients = optimizer.get_unscaled_gradients(scaled_gradients)
            optimizer.apply_gradients(zip(gradients, model.trainable_variables))
            return loss, gradients

        before = [v.numpy().copy() for v in model.trainable_variables]
        loss, grads = train_step(xb, onehot)
        return model, before, loss, grads
    finally:
        mixed_precision.set_global_policy("float32")


def test_guide_custom_training_step_float32():
    model, before, loss, grads = _guide_step("float32")
    assert loss.dtype == "float32" and all(g is not None and g.dtype == "float32" for g in grads)
    assert all(v.grad is None for v in model.trainable_variables)
    assert any((v.numpy() != b).any() for v, b in zip(model.trainable_variables, before))


def test_guide_custom_training_step_mixed_float16():
    model, before, loss, grads = _guide_step("mixed_float16")
    assert loss.dtype == "float32" and all(g is not None and g.dtype == "float32" for g in grads)
    assert any((v.numpy() != b).any() for v, b in zip(model.trainable_variables, before))


def test_variable_is_created_the_tensorflow_way_and_watched():
    w1, w2 = tf.Variable(5.), tf.Variable(3.)
    assert w1.dtype == "float32" and tf.Variable(2).dtype == "int32" and w1.trainable
    assert tf.Variable([1.0], dtype=tf.float16).dtype == "float16"
    with tf.GradientTape() as tape:
        z = 3 * w1 ** 2 + 2 * w1 * w2
    g1, g2 = tape.gradient(z, [w1, w2])
    assert (g1.numpy(), g2.numpy()) == (36.0, 10.0) and w1.grad is None
    assert not tf.Variable(1.0, trainable=False).requires_grad
    w1.assign_sub(0.5 * g1)
    assert w1.numpy() == -13.0
