"""Bad input to every public entry point of the tools and the faces gets one clear error naming the argument
(issue 13 point 5): the PyTorch face's optimizers, GradScaler, autocast, layers, losses and data; the Keras face's
layers, policies, optimizers, LossScaleOptimizer, compile/fit/evaluate/predict, weights and datasets; minifp.tf;
the checkpoint, the CLI's train(), the datasets, the monitor, the testing helpers and the engine's core.

Each face's own error texts (PyTorch's and Keras's words) are checked against the frameworks in tests/torch and
tests/keras; this table checks that each refusal is one error of the documented type that names the argument.
"""
import gzip
import math
import re
import struct
import warnings

import numpy as np
import pytest

import minifp as mf
import minifp.tf as tf
import minifp.torch as torch
from minifp import checkpoint, cli, datasets, keras, numerics, testing
from minifp.tf import keras as tf_keras

NAN = math.nan


def w():
    return torch.nn.Parameter(torch.ones((2, 3)))


def compiled():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Activation("softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


X, Y = np.ones((10, 4), np.float32), np.zeros(10, np.int64)


def idx_header(code, shape):
    return struct.pack(">BBBB", 0, 0, code, len(shape)) + struct.pack(f">{len(shape)}I", *shape)


def write(tmp, name, data):
    (tmp / name).write_bytes(data)
    return tmp / name


def case(name, call, exc, pattern, argument):
    return pytest.param(call, exc, pattern, argument, id=name)


def gap(name, call, exc, pattern, argument, reason):
    """A refusal a face does not make yet (reported to its owner); it turns into a failure once it does."""
    return pytest.param(call, exc, pattern, argument, id=name, marks=pytest.mark.xfail(reason=reason, strict=True))


TORCH = [
    case("Adam(bare tensor)", lambda t: torch.optim.Adam(w()), TypeError,
         r"params argument given to the optimizer should be an iterable of Tensors or dicts", "params"),
    case("Adam betas[0]=1", lambda t: torch.optim.Adam([w()], betas=(1.0, 0.999)), ValueError,
         r"Invalid beta parameter at index 0: 1.0", "beta"),
    case("Adam eps<0", lambda t: torch.optim.Adam([w()], eps=-1e-8), ValueError, r"Invalid epsilon value: -1e-08",
         "epsilon"),
    case("Adam lr=nan", lambda t: torch.optim.Adam([w()], lr=NAN), ValueError, r"Invalid learning rate: nan",
         "learning rate"),
    case("Adam lr str", lambda t: torch.optim.Adam([w()], lr="0.1"), TypeError,
         r"lr must be a real number, got '0.1' \(a str\)", "lr"),
    case("Adam weight_decay<0", lambda t: torch.optim.Adam([w()], weight_decay=-1), ValueError,
         r"Invalid weight_decay value: -1", "weight_decay"),
    case("SGD momentum<0", lambda t: torch.optim.SGD([w()], lr=0.1, momentum=-0.9), ValueError,
         r"Invalid momentum value: -0.9", "momentum"),
    case("SGD nesterov without momentum", lambda t: torch.optim.SGD([w()], lr=0.1, nesterov=True), ValueError,
         r"Nesterov momentum requires a momentum and zero dampening", "Nesterov"),
    case("RMSprop alpha<0", lambda t: torch.optim.RMSprop([w()], alpha=-1), ValueError, r"Invalid alpha value: -1",
         "alpha"),
    case("GradScaler growth_factor=1", lambda t: torch.amp.GradScaler("cuda", growth_factor=1.0), AssertionError,
         r"The growth factor must be > 1.0", "growth factor"),
    case("GradScaler backoff_factor=1", lambda t: torch.amp.GradScaler("cuda", backoff_factor=1.0), AssertionError,
         r"The backoff factor must be < 1.0", "backoff factor"),
    case("GradScaler('tpu')", lambda t: torch.amp.GradScaler("tpu"), ValueError,
         r"GradScaler: device must be 'cuda' or 'cpu'", "device"),
    case("GradScaler growth_interval=0", lambda t: torch.amp.GradScaler("cuda", growth_interval=0), ValueError,
         r"GradScaler: growth_interval must be a positive integer, got 0", "growth_interval"),
    case("GradScaler init_scale<0", lambda t: torch.amp.GradScaler("cuda", init_scale=-1.0), ValueError,
         r"GradScaler: init_scale must be a positive finite number, got -1.0", "init_scale"),
    case("autocast('tpu')", lambda t: torch.autocast("tpu"), RuntimeError,
         r"User specified an unsupported autocast device_type 'tpu'", "device_type"),
    case("Linear(-1, 3)", lambda t: torch.nn.Linear(-1, 3), ValueError,
         r"Linear: in_features must be a non-negative integer, got -1", "in_features"),
    case("Conv2d stride=0", lambda t: torch.nn.Conv2d(1, 4, 3, stride=0), ValueError,
         r"Conv2d: stride must be positive integers, got \(0, 0\)", "stride"),
    case("Conv2d padding='full'", lambda t: torch.nn.Conv2d(1, 4, 3, padding="full"), ValueError,
         r"Invalid padding string 'full', should be one of \{'valid', 'same'\}", "padding"),
    case("Dropout(1.5)", lambda t: torch.nn.Dropout(1.5), ValueError,
         r"dropout probability has to be between 0 and 1, but got 1.5", "probability"),
    case("Linear wrong input", lambda t: torch.nn.Linear(4, 3)(torch.ones((2, 5))), RuntimeError,
         r"mat1 and mat2 shapes cannot be multiplied \(2x5 and 4x3\)", "mat1"),
    case("BatchNorm2d wrong channels", lambda t: torch.nn.BatchNorm2d(3)(torch.ones((2, 4, 5, 5))), RuntimeError,
         r"running_mean should contain 4 elements not 3", "running_mean"),
    case("cross_entropy target out of range",
         lambda t: torch.nn.functional.cross_entropy(torch.ones((4, 3)), torch.tensor([0, 1, 2, 3])), IndexError,
         r"Target 3 is out of bounds", "Target"),
    case("CrossEntropyLoss reduction", lambda t: torch.nn.CrossEntropyLoss(reduction="avg"), ValueError,
         r"avg is not a valid value for reduction", "reduction"),
    case("DataLoader batch_size=0", lambda t: torch.utils.data.DataLoader([1, 2, 3], batch_size=0), ValueError,
         r"batch_size should be a positive integer value, but got batch_size=0", "batch_size"),
    case("load_state_dict missing keys", lambda t: torch.nn.Linear(2, 2).load_state_dict({}), RuntimeError,
         r"Missing key\(s\) in state_dict: \"weight\", \"bias\"", "state_dict"),
]

KERAS = [
    case("Dense(0)", lambda t: keras.layers.Dense(0), ValueError,
         r"Received an invalid value for `units`, expected a positive integer. Received: units=0", "units"),
    case("Dense activation unknown", lambda t: keras.layers.Dense(3, activation="swishy"), ValueError,
         r"Could not interpret activation function identifier: swishy. Valid names: elu", "activation"),
    case("Conv2D strides=0", lambda t: keras.layers.Conv2D(4, 3, strides=0), ValueError,
         r"The `strides` argument must be a tuple of 2 integers. Received strides=0", "strides"),
    case("Conv2D padding='full'", lambda t: keras.layers.Conv2D(4, 3, padding="full"), ValueError,
         r"The `padding` argument must be a list/tuple or one of \{'valid', 'same'\}", "padding"),
    case("Dropout(1.5)", lambda t: keras.layers.Dropout(1.5), ValueError,
         r"Invalid value received for argument `rate`.* Received: rate=1.5", "rate"),
    case("BatchNormalization axis=5", lambda t: keras.layers.BatchNormalization(axis=5)(np.ones((2, 3), np.float32)),
         ValueError, r"Axis 5 is out of bounds for input shape \(2, 3\). Received: axis=5", "axis"),
    case("set_global_policy unknown", lambda t: keras.mixed_precision.set_global_policy("mixed_float17"), ValueError,
         r"Cannot convert 'mixed_float17' to a mixed precision DTypePolicy", "DTypePolicy"),
    case("LossScaleOptimizer initial_scale<0",
         lambda t: keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(), initial_scale=-1), ValueError,
         r"`initial_scale` must be a finite number > 0. Received: initial_scale=-1", "initial_scale"),
    case("Adam learning_rate<0", lambda t: keras.optimizers.Adam(learning_rate=-1), ValueError,
         r"Received instead: learning_rate=-1", "learning_rate"),
    case("SGD momentum=2", lambda t: keras.optimizers.SGD(momentum=2), ValueError,
         r"`momentum` must be a float between \[0, 1\]", "momentum"),
    case("optimizers.get unknown", lambda t: keras.optimizers.get("adamax2"), ValueError,
         r"Could not interpret optimizer identifier: 'adamax2'. Valid names \(case-insensitive\): adadelta, adafactor, "
         r"adagrad",
         "optimizer"),
    case("compile optimizer unknown", lambda t: compiled().compile("adamax2", "mse"), ValueError,
         r"Could not interpret optimizer identifier: 'adamax2'", "optimizer"),
    case("compile loss unknown", lambda t: compiled().compile("sgd", "hinge2"), ValueError,
         r"Could not interpret loss identifier: hinge2. Valid names:", "loss"),
    case("compile metric unknown (at fit)", lambda t: compiled_with(["auc2"]).fit(X, Y, verbose=0), ValueError,
         r"Could not interpret metric identifier: auc2. Valid names:", "metric"),
    case("fit batch_size=0", lambda t: compiled().fit(X, Y, batch_size=0, verbose=0), ValueError,
         r"fit\(\): batch_size must be an integer >= 1, got 0", "batch_size"),
    case("fit epochs=-1", lambda t: compiled().fit(X, Y, epochs=-1, verbose=0), ValueError,
         r"fit\(\): epochs must be an integer >= 0, got -1", "epochs"),
    case("fit x and y lengths", lambda t: compiled().fit(X, Y[:9], verbose=0), ValueError,
         r"all arrays must contain the same number of samples .* \[\(10, 4\), \(9,\)\]", "arrays"),
    case("fit verbose=3", lambda t: compiled().fit(X, Y, verbose=3), ValueError,
         r"fit\(\): verbose must be 0, 1, 2 or 'auto', got 3", "verbose"),
    case("fit validation_split=1", lambda t: compiled().fit(X, Y, validation_split=1, verbose=0), ValueError,
         r"validation_split must be a number in \[0, 1\), got 1", "validation_split"),
    case("fit validation_split leaves no training", lambda t: compiled().fit(X, Y, validation_split=0.95, verbose=0),
         ValueError, r"Training data contains 10 samples, which is not sufficient to split it", "validation_split"),
    case("fit validation_data not a pair", lambda t: compiled().fit(X, Y, validation_data=X, verbose=0), TypeError,
         r"`validation_data` must be a tuple \(x_val, y_val\)", "validation_data"),
    case("fit labels out of range", lambda t: compiled().fit(X, Y + 7, verbose=0), ValueError,
         r"Received a label value of 7 which is outside the valid range of \[0, 3\)", "label"),
    case("fit shuffle='yes'", lambda t: compiled().fit(X, Y, shuffle="yes", verbose=0), ValueError,
         r"fit\(\): shuffle must be True, False or 'batch', got 'yes'", "shuffle"),
    case("fit callbacks=[5]", lambda t: compiled().fit(X, Y, callbacks=[5], verbose=0), TypeError,
         r"callbacks must be keras.callbacks.Callback instances, got 5 of type int", "callbacks"),
    case("fit x None", lambda t: compiled().fit(None, Y, verbose=0), ValueError, r"fit\(\): `x` is required", "x"),
    case("evaluate before compile",
         lambda t: keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)]).evaluate(X, Y), ValueError,
         r"You must call `compile\(\)` before using the model", "model"),
    case("predict batch_size=0", lambda t: compiled().predict(X, batch_size=0, verbose=0), ValueError,
         r"predict\(\): batch_size must be an integer >= 1, got 0", "batch_size"),
    case("predict strings", lambda t: compiled().predict(np.array(["a", "b"]), verbose=0), TypeError,
         r"predict\(\): `x` must hold numbers, got an array of dtype <U1", "x"),
    case("predict wrong input shape", lambda t: compiled().predict(np.ones((2, 5)), verbose=0), ValueError,
         r"of layer 'dense.*' is incompatible with the layer: expected axis -1 of input shape to have value 4",
         "layer"),
    case("set_weights wrong count", lambda t: compiled().set_weights([np.ones(3)]), ValueError,
         r"You called `set_weights\(weights\)` on layer .* with a weight list of length 1", "weights"),
    case("save_weights file name", lambda t: compiled().save_weights(str(t / "m.npz")), ValueError,
         r"The filename must end in `.weights.h5`. Received: filepath=", "filepath"),
    case("mnist.load_data(path=5)", lambda t: keras.datasets.mnist.load_data(path=5), TypeError,
         r"mnist.load_data\(\): path must be a file name such as 'mnist.npz', got 5", "path"),
]

TF = [
    case("tf.keras LossScaleOptimizer dynamic='yes'",
         lambda t: tf_keras.mixed_precision.LossScaleOptimizer(tf_keras.optimizers.SGD(), dynamic="yes"), TypeError,
         r'"dynamic" argument to LossScaleOptimizer.__init__ must be a bool', "dynamic"),
    case("tf.keras LossScaleOptimizer initial_scale<0",
         lambda t: tf_keras.mixed_precision.LossScaleOptimizer(tf_keras.optimizers.SGD(), initial_scale=-1),
         ValueError, r'"initial_scale" must be a finite number > 0, but got: -1', "initial_scale"),
    case("tf.keras Policy unknown", lambda t: tf_keras.mixed_precision.Policy("mixed_float17"), ValueError,
         r"Cannot convert 'mixed_float17' to a mixed precision DTypePolicy", "DTypePolicy"),
    case("tf.cast unknown dtype", lambda t: tf.cast(tf.constant([1.0]), "float99"), TypeError,
         r"dtype: cannot convert 'float99' to a dtype; valid dtypes: tf.float16", "dtype"),
    case("tf.constant unknown dtype", lambda t: tf.constant([1.0], dtype="float99"), TypeError,
         r"dtype: cannot convert 'float99' to a dtype", "dtype"),
    case("GradientTape.watch(str)", lambda t: tf.GradientTape().watch("x"), ValueError,
         r"Passed in object 'x' of type 'str', not tf.Tensor or tf.Variable", "tf.Tensor"),
]

TOOLS = [
    case("checkpoint.save model=5", lambda t: checkpoint.save(t / "c", 5), TypeError,
         r"model must be a layer or model of a minifp face \(torch.nn.Module, keras Model\), got int", "model"),
    case("checkpoint.save optimizer=list", lambda t: checkpoint.save(t / "c", torch.nn.Linear(2, 2), optimizer=[1]),
         TypeError, r"optimizer must be a minifp.torch.optim optimizer, a Keras optimizer or None, got list",
         "optimizer"),
    case("checkpoint.save scaler=3", lambda t: checkpoint.save(t / "c", torch.nn.Linear(2, 2), scaler=3), TypeError,
         r"scaler must be a minifp.torch GradScaler or None", "scaler"),
    case("checkpoint.save path=3", lambda t: checkpoint.save(3, torch.nn.Linear(2, 2)), TypeError,
         r"path must be a str or os.PathLike, got int", "path"),
    case("checkpoint.save into a folder", lambda t: checkpoint.save(t, torch.nn.Linear(2, 2)), IsADirectoryError,
         r"path '.*' is a folder; give a file name", "path"),
    case("checkpoint.load missing file", lambda t: checkpoint.load(t / "nofile", torch.nn.Linear(2, 2)),
         FileNotFoundError, r"cannot read the checkpoint: path '.*nofile' is no file", "path"),
    case("train() model", lambda t: cli.train("float32", model="rnn"), ValueError,
         r"train\(\): unknown model 'rnn'; valid models: mlp, cnn", "model"),
    case("train() policy", lambda t: cli.train("float64"), ValueError,
         r"train\(\): unknown policy 'float64'; valid policies: float32, mixed_float16", "policy"),
    case("train() epochs=0", lambda t: cli.train("float32", epochs=0), ValueError,
         r"train\(\): epochs must be an integer >= 1, got 0", "epochs"),
    case("train() batch_size=0", lambda t: cli.train("float32", batch_size=0), ValueError,
         r"train\(\): batch_size must be an integer >= 1, got 0", "batch_size"),
    case("train() lr<0", lambda t: cli.train("float32", lr=-1), ValueError,
         r"train\(\): lr must be a finite number >= 0, got -1", "lr"),
    case("train() lr=nan", lambda t: cli.train("float32", lr=NAN), ValueError,
         r"train\(\): lr must be a finite number >= 0, got nan", "lr"),
]


def compiled_with(metrics):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Activation("softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=metrics)
    return model


DATASETS = [
    case("load_digits test_size too big", lambda t: datasets.load_digits(test_size=2000), ValueError,
         r"test_size must be an integer in \[0, 1796\], got 2000", "test_size"),
    case("load_digits test_size<0", lambda t: datasets.load_digits(test_size=-1), ValueError,
         r"test_size must be an integer in \[0, 1796\], got -1", "test_size"),
    case("load_digits test_size float", lambda t: datasets.load_digits(test_size=0.2), TypeError,
         r"test_size must be an integer in \[0, 1796\], got 0.2 \(a float\)", "test_size"),
    case("load_digits seed<0", lambda t: datasets.load_digits(seed=-1), ValueError,
         r"seed must be an integer >= 0, got -1", "seed"),
    case("make_classification n=0", lambda t: datasets.make_classification(n=0), ValueError,
         r"make_classification\(\): n must be an integer >= 1, got 0", "n"),
    case("make_classification features<0", lambda t: datasets.make_classification(features=-1), ValueError,
         r"features must be an integer >= 1, got -1", "features"),
    case("make_classification classes=0", lambda t: datasets.make_classification(classes=0), ValueError,
         r"classes must be an integer >= 1, got 0", "classes"),
    case("make_classification separation<0", lambda t: datasets.make_classification(separation=-1.0), ValueError,
         r"separation must be a finite number >= 0, got -1.0", "separation"),
    case("make_regression n float", lambda t: datasets.make_regression(n=2.5), TypeError,
         r"make_regression\(\): n must be an integer >= 1, got 2.5", "n"),
    case("make_regression noise<0", lambda t: datasets.make_regression(noise=-0.1), ValueError,
         r"noise must be a finite number >= 0, got -0.1", "noise"),
    case("load_idx(5)", lambda t: datasets.load_idx(5), TypeError,
         r"load_idx\(\): path must be a file path \(str or os.PathLike\), got int", "path"),
    case("load_idx(None)", lambda t: datasets.load_idx(None), TypeError, r"path must be a file path", "path"),
    case("load_idx missing", lambda t: datasets.load_idx(t / "missing.idx"), FileNotFoundError,
         r"load_idx\(path='.*missing.idx'\): cannot open the file: No such file", "path"),
    case("load_idx directory", lambda t: datasets.load_idx(t), IsADirectoryError,
         r"load_idx\(path='.*'\): a directory, not an IDX file", "path"),
    case("load_idx truncated gzip",
         lambda t: datasets.load_idx(write(t, "cut.gz", gzip.compress(idx_header(8, (3, 2)) + bytes(6))[:-5])),
         ValueError, r"load_idx\(path='.*cut.gz'\): the gzip stream is truncated or corrupt", "path"),
    case("load_idx size overflows int64",
         lambda t: datasets.load_idx(write(t, "big.idx", idx_header(8, (2**16,) * 4))), ValueError,
         r"declares shape \(65536, 65536, 65536, 65536\), 18446744073709551616 elements: more than an array can hold",
         "path"),
    case("load_idx extra data",
         lambda t: datasets.load_idx(write(t, "extra.gz", gzip.compress(idx_header(8, (3, 2)) + bytes(7)))),
         ValueError, r"load_idx\(path='.*extra.gz'\): the header promises shape \(3, 2\) .* holds more data \(extra\)",
         "path"),
]

def watched(**options):
    with numerics.watch(**options):
        pass


CORE = [
    case("watch(model=5)", lambda t: watched(model=5), TypeError,
         r"model must be a layer or model of a minifp face .* or None, got int", "model"),
    case("watch(histograms='x')", lambda t: watched(histograms="x"), TypeError,
         r"histograms must be True or False, got 'x'", "histograms"),
    case("Report.total(kind='bad')", lambda t: numerics.Report({}, False).total("bad"), ValueError,
         r"kind must be one of overflow, underflow, subnormal, nan, got 'bad'", "kind"),
    case("Report.layers(direction='up')", lambda t: numerics.Report({}, False).layers("nan", "up"), ValueError,
         r"direction must be 'forward', 'backward' or None, got 'up'", "direction"),
    case("assert_no_overflow(5)", lambda t: testing.assert_no_overflow(5, np.ones(3)), TypeError,
         r"fn must be a callable", "fn"),
    case("assert_no_underflow(backward='y')", lambda t: testing.assert_no_underflow(abs, np.ones(3), backward="y"),
         TypeError, r"backward must be True or False", "backward"),
    case("check_grads(eps=0)", lambda t: testing.check_grads(lambda x: x, np.ones(3), eps=0), ValueError,
         r"eps must be a finite number > 0, got 0", "eps"),
    case("check_grads(rtol=-1)", lambda t: testing.check_grads(lambda x: x, np.ones(3), rtol=-1), ValueError,
         r"rtol must be a finite number >= 0, got -1", "rtol"),
    case("backward(gradient='x')", lambda t: (mf.tensor([1.0], requires_grad=True) * 2).backward("x"), TypeError,
         r"gradient must be a tensor or an array of real numbers, got 'x'", "gradient"),
    case("tensor(dtype='float64')", lambda t: mf.tensor([1.0], dtype="float64"), ValueError,
         r"tensor\(\): dtype: unknown format 'float64'; valid formats: float32, tf32", "dtype"),
    case("astype(None)", lambda t: mf.tensor([1.0]).astype(None), TypeError, r"astype\(\): fmt: None is not a format",
         "fmt"),
    case("manual_seed(-1)", lambda t: mf.manual_seed(-1), ValueError, r"seed must be a non-negative integer", "seed"),
]

TABLE = TORCH + KERAS + TF + TOOLS + DATASETS + CORE


def assert_names(error, argument):
    """The message names the argument as a word (`lr`, `betas[0]`, `batch_size`), not as part of another."""
    message = str(error)
    assert re.search(rf"(?<![\w.]){re.escape(argument)}(?![\w(])", message), \
        f"the message does not name {argument!r}: {message}"


@pytest.mark.parametrize("call, exc, pattern, argument", TABLE)
def test_bad_input_gets_one_clear_error(call, exc, pattern, argument, tmp_path):
    with pytest.raises(exc, match=pattern) as info:
        call(tmp_path)
    assert type(info.value) is exc                 # not a subclass from deeper down (e.g. a bare EOFError)
    assert_names(info.value, argument)




# -- behaviour behind some rows ----------------------------------------------------------------


def test_bad_fit_arguments_train_nothing():
    model = compiled()
    before = model.get_weights()
    with pytest.raises(ValueError, match="verbose"):
        model.fit(X, Y, epochs=2, verbose=5)
    with pytest.raises(ValueError, match="label value of 7"):
        model.fit(X, Y + 7, epochs=2, verbose=0)
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))


def test_gradscaler_refusing_float16_changes_nothing():
    first, second = w(), torch.nn.Parameter(torch.ones((2, 3)).half())
    first.grad, second.grad = torch.full((2, 3), 4.0), torch.ones((2, 3)).half()
    scaler = torch.amp.GradScaler("cuda", init_scale=4.0)
    scaler.scale(torch.ones(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
            scaler.unscale_(torch.optim.SGD([first, second], lr=0.1))
    assert np.array_equal(first.grad.numpy(), np.full((2, 3), 4.0, np.float32))
