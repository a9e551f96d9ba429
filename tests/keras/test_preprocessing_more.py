"""Keras 3's further preprocessing layers (CenterCrop, Discretization, Hashing, HashedCrossing, RandomBrightness,
RandomContrast, RandomZoom, RandomTranslation) and keras.ops.image's resize and affine_transform against real Keras
on torch (tests/fixtures/keras/preprocessing_more.json, recorded by tools/record_keras_preprocessing_more.py, whose
case tables these tests import)."""
import json
import pathlib
import re
import sys

import numpy as np
import pytest

from minifp import keras
from minifp.keras import layers, ops, random

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import record_keras_preprocessing_more as rec  # noqa: E402

FIXTURE = json.loads((ROOT / "tests" / "fixtures" / "keras" / "preprocessing_more.json").read_text())


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    yield


def _want(want):
    """A recorded result's values as a float32 array of its shape."""
    return np.asarray(want["values"], np.float32).reshape(want["shape"])


def _same_bits(got, want):
    got, want = np.asarray(got, np.float32), _want(want)
    assert got.shape == want.shape
    assert np.array_equal(got.view(np.int32), want.view(np.int32))


def _resampled(got, want, dtype, interpolation="bilinear"):
    """Within 2 ulps of the largest value for bilinear, 16 for bicubic, in the result's format (uint8: exact).
    torch's interpolate kernels order and fuse the weighted reads of each output their own way (a vectorised
    four-corner sum for the channels-last tensors Keras's permute makes) and bicubic's weights of both signs
    cancel: minifp's tap-by-tap float32 sums land within 1.1 ulps (bilinear) and 7.3 ulps (bicubic) of the largest
    value (measured)."""
    got, want = np.asarray(got, np.float32), _want(want)
    assert got.shape == want.shape
    if dtype == "uint8":
        np.testing.assert_array_equal(got, want)
        return
    ulp = 2.0 ** -10 if dtype == "float16" else 2.0 ** -23
    ulps = 16 if interpolation == "bicubic" else 2
    np.testing.assert_allclose(got, want, rtol=0, atol=ulps * ulp * float(np.abs(want).max()))


def _plain(message):
    """A message without what differs by design or by chance: torch's shape repr (torch.Size([2, 5]) where
    minifp writes (2, 5)) and the order Python happens to print a set of names in."""
    message = re.sub(r"torch\.Size\(\[([^\]]*)\]\)", r"(\1)", message)
    return re.sub(r"\{('[^{}]*')\}", lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", message)


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return [type(info.value).__name__, _plain(str(info.value).splitlines()[0])]


# -- keras.ops.image -------------------------------------------------------------------------------------------------

def _ids(cases):
    return [f"{i}-{c[0]}" for i, c in enumerate(cases)]


@pytest.mark.parametrize("case, want", list(zip(rec.RESIZES, FIXTURE["resize"])), ids=_ids(rec.RESIZES))
def test_resize_does_what_keras_does(case, want):
    shape, kind, size, kwargs = case
    out = ops.image.resize(rec.images(shape, kind), size, **kwargs)
    assert str(out.dtype) == want["dtype"] and list(out.shape) == want["shape"]
    if kwargs.get("interpolation") == "nearest":
        _same_bits(out.numpy(), want)                   # reads only: the bits
    else:
        _resampled(out.numpy(), want, kind, kwargs.get("interpolation", "bilinear"))


@pytest.mark.parametrize("case, want", list(zip(rec.AFFINES, FIXTURE["affine"])), ids=_ids(rec.AFFINES))
def test_affine_transform_does_what_keras_does(case, want):
    shape, kind, transform, kwargs = case
    out = ops.image.affine_transform(rec.images(shape, kind), np.array(transform, np.float32), **kwargs)
    assert str(out.dtype) == want["dtype"] and list(out.shape) == want["shape"]
    _same_bits(out.numpy(), want)       # the same float32 coordinates, corner weights and sum order as Keras's


def test_image_ops_pass_gradients_to_the_images():
    t = ops.convert_to_tensor(rec.images((1, 4, 5, 2)))
    t.requires_grad = True
    ops.sum(ops.image.resize(t, (8, 10))).backward()
    # upsampling by 2 with half-pixel centres: each interior pixel's weights (1/4, 3/4, 3/4, 1/4 per axis) sum to 4
    assert float(t.grad.float32()[0, 1, 2, 0]) == 4.0
    t.grad = None
    shift = np.array([1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0], np.float32)     # each pixel reads its right neighbour
    ops.sum(ops.image.affine_transform(t, shift, fill_mode="constant")).backward()
    grad = np.asarray(t.grad.float32())
    assert grad[0, :, 0].max() == 0 and grad[0, :, 1:].min() == 1.0


@pytest.mark.parametrize("i", range(len(rec.OP_ERRORS)), ids=lambda i: rec.OP_ERRORS[i][0])
def test_bad_image_op_arguments_get_keras_errors(i):
    op, kwargs = rec.OP_ERRORS[i]
    kwargs = dict(kwargs)
    shape = kwargs.pop("shape", (2, 5, 6, 3))
    got = _error(lambda: getattr(ops.image, op)(rec.images(shape), **kwargs))
    assert got == [FIXTURE["op_errors"][i][0], _plain(FIXTURE["op_errors"][i][1])]


def test_resize_on_a_keras_tensor_builds_a_model():
    inputs = keras.Input((5, 7, 2))
    out = ops.image.resize(inputs, (3, 4), interpolation="bicubic")
    assert tuple(out.shape) == (None, 3, 4, 2)
    x = rec.images((2, 5, 7, 2))
    np.testing.assert_array_equal(keras.Model(inputs, out).predict(x, verbose=0),
                                  ops.image.resize(x, (3, 4), interpolation="bicubic").numpy())


def test_one_transform_serves_one_image_only():
    # Keras's torch backend reshapes the transforms to the batch: one transform for two images fails there too
    with pytest.raises(RuntimeError, match=r"shape '\[2, 3, 3\]' is invalid for input of size 9"):
        ops.image.affine_transform(rec.images((2, 5, 6, 3)), rec._T[0])


# -- the image layers ------------------------------------------------------------------------------------------------

def _layer_id(case):
    return f"{case[0]}-{json.dumps(case[1], sort_keys=True)}-{case[4] if isinstance(case[4], str) else 'given'}"


@pytest.mark.parametrize("case, want", list(zip(rec.LAYERS, FIXTURE["layers"])), ids=[_layer_id(c) for c in rec.LAYERS])
def test_image_layer_does_what_keras_does(case, want):
    name, kwargs, shape, kind, how = case
    layer = getattr(layers, name)(**kwargs)
    x = rec.images(shape, kind)
    if how == "call":
        out = layer(x)
    elif how == "infer":
        out = layer(x, training=False)
    else:
        out = layer.transform_images(ops.convert_to_tensor(x), {k: np.array(v, np.float32) for k, v in how.items()})
    assert str(out.dtype) == want["out"]["dtype"] and list(out.shape) == want["out"]["shape"]
    if name == "RandomContrast" and how != "infer" and kind != "whole":
        # torch's CPU mean adds in a vectorised order of its own: within 4 ulps of the largest value (whole-number
        # pixels on a 4 x 4 image have exact means: the bits)
        np.testing.assert_allclose(out.numpy(), _want(want["out"]), rtol=0,
                                   atol=4 * 2.0 ** -23 * float(np.abs(x).max()))
    elif name == "CenterCrop" and (shape[-3] < kwargs["height"] or shape[-2] < kwargs["width"]):
        _resampled(out.numpy(), want["out"], kind)      # smart_resize: a crop, then a bilinear resize
    else:
        _same_bits(out.numpy(), want["out"])
    config = json.loads(json.dumps({k: v for k, v in layer.get_config().items() if k not in ("dtype", "name")}))
    assert config == {k: v for k, v in want["config"].items() if k != "name"}
    again = type(layer).from_config(layer.get_config())
    assert again.get_config() == layer.get_config()


@pytest.mark.parametrize("make, key, draw", [
    (lambda: layers.RandomBrightness(0.3, seed=5), "rgb_delta",
     lambda g: random.uniform((2, 1, 1, 1), -0.3, 0.3, seed=g) * 255),
    (lambda: layers.RandomContrast(0.4, seed=5), "contrast_factor",
     lambda g: random.uniform((2, 1, 1, 1), 1.0, 1.4, seed=g)),
])
def test_seeded_colour_draws_come_from_minifp_random(make, key, draw):
    x = rec.images((2, 4, 5, 3)) * 60
    layer = make()
    out = layer(x)
    expected = make().transform_images(ops.convert_to_tensor(x), {key: draw(random.SeedGenerator(5))})
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    assert out.dtype == "float32" and out.shape == x.shape
    assert 0 <= out.numpy().min() and out.numpy().max() <= 255
    assert not np.array_equal(layer(x).numpy(), out.numpy())        # the generator moved on


def test_seeded_zoom_and_translation_draws_come_from_minifp_random():
    x = rec.images((2, 5, 6, 3))
    zoom = layers.RandomZoom(0.3, (-0.2, 0.1), seed=7)
    g = random.SeedGenerator(7)
    heights = random.uniform((2, 1), 0.7, 1.3, seed=g)
    widths = random.uniform((2, 1), 0.8, 1.1, seed=g)
    want = zoom.transform_images(x, {"height_zoom": heights, "width_zoom": widths})
    np.testing.assert_array_equal(zoom(x).numpy(), want.numpy())
    shift = layers.RandomTranslation(0.2, 0.5, seed=8)
    g = random.SeedGenerator(8)
    dy = random.uniform((2, 1), -0.2, 0.2, seed=g) * 5
    dx = random.uniform((2, 1), -0.5, 0.5, seed=g) * 6
    want = shift.transform_images(x, {"translations": ops.concatenate([dx, dy], axis=1)})
    np.testing.assert_array_equal(shift(x).numpy(), want.numpy())
    t = shift.get_random_transformation(ops.convert_to_tensor(x))
    assert t["translations"].shape == (2, 2) and t["translations"].dtype == "float32"
    assert t["input_shape"] == (2, 5, 6, 3)


@pytest.mark.parametrize("make", [lambda: layers.RandomBrightness(0.5), lambda: layers.RandomContrast(0.5),
                                  lambda: layers.RandomZoom(0.5), lambda: layers.RandomTranslation(0.3, 0.3)])
def test_augmentations_are_identity_at_inference(make):
    x = rec.images((2, 5, 6, 3))
    layer = make()
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    model = keras.Sequential([keras.Input((5, 6, 3)), layer])
    np.testing.assert_array_equal(model.predict(x, verbose=0), x)
    assert not np.array_equal(layer(x).numpy(), x)          # called on its own it trains


def test_center_crop_in_a_functional_model():
    inputs = keras.Input((7, 9, 2))
    out = layers.CenterCrop(4, 5)(inputs)
    assert tuple(out.shape) == (None, 4, 5, 2)
    assert layers.CenterCrop(4, 5, data_format="channels_first").compute_output_shape((3, 7, 9)) == (3, 4, 5)


@pytest.mark.parametrize("i", range(len(rec.ERRORS)), ids=lambda i: rec.ERRORS[i][0])
def test_bad_layer_arguments_get_keras_errors(i):
    name, kwargs, shape = rec.ERRORS[i]
    if name in ("Hashing", "HashedCrossing"):
        # Keras 3.15 refuses these without TensorFlow; minifp hashes without it (see the tests below)
        assert FIXTURE["errors"][i][0] == "ImportError"
        getattr(layers, name)(**kwargs)
        return
    make = lambda: getattr(layers, name)(**kwargs)
    got = _error(make if shape is None else lambda: make()(rec.images(shape)))
    assert got == [FIXTURE["errors"][i][0], _plain(FIXTURE["errors"][i][1])]


# -- Discretization --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case, want", list(zip(rec.DISCRETIZATIONS, FIXTURE["discretization"])),
                         ids=_ids(rec.DISCRETIZATIONS))
def test_discretization_does_what_keras_does(case, want):
    kwargs, values, adapt = case
    layer = layers.Discretization(**kwargs)
    if adapt is not None:
        layer.adapt(rec.adapt_data(adapt))
    out = layer(np.array(values, np.float32))
    assert str(out.dtype) == want["out"]["dtype"] and list(out.shape) == want["out"]["shape"]
    np.testing.assert_array_equal(out.numpy(), _want(want["out"]))
    config = json.loads(json.dumps({k: v for k, v in layer.get_config().items() if k not in ("dtype", "name")}))
    assert config == {k: v for k, v in want["config"].items() if k != "name"}
    again = layers.Discretization.from_config(layer.get_config())
    np.testing.assert_array_equal(again(np.array(values, np.float32)).numpy(), out.numpy())


def test_discretization_compares_in_float32():
    # 0.1 as float32 is above 0.1: the input 0.1 (rounded the same way) lands on the boundary, in bin 1
    assert layers.Discretization([0.1])(np.array([0.1, 0.09999999], np.float32)).numpy().tolist() == [1, 0]
    assert layers.Discretization([0.0, 1.0], output_mode="one_hot").compute_output_shape((4, 1)) == (4, 3)


# -- Hashing and HashedCrossing: Keras's published buckets (its docstrings and hashing tests, recorded on TensorFlow)

@pytest.mark.parametrize("kwargs, inputs, want", [
    ({"num_bins": 3}, [["A"], ["B"], ["C"], ["D"], ["E"]], [[1], [0], [1], [1], [2]]),
    ({"num_bins": 3, "mask_value": ""}, [["A"], ["B"], [""], ["C"], ["D"]], [[1], [1], [0], [2], [2]]),
    ({"num_bins": 3, "salt": [133, 137]}, [["A"], ["B"], ["C"], ["D"], ["E"]], [[1], [2], [1], [0], [2]]),
    ({"num_bins": 3, "salt": 133}, [["A"], ["B"], ["C"], ["D"], ["E"]], [[0], [0], [2], [1], [0]]),
    ({"num_bins": 2, "salt": [211, 137]}, [["omar"], ["stringer"], ["marlo"], ["wire"], ["skywalker"]],
     [[1], [0], [1], [0], [1]]),
    ({"num_bins": 3}, np.array([[0], [1], [2], [3], [4]]), [[1], [0], [1], [0], [2]]),
    ({"num_bins": 3}, [0, 1, 2, 3, 4], [1, 0, 1, 0, 2]),
    ({"num_bins": 2}, ["omar", "stringer", "marlo", "wire", "skywalker"], [0, 0, 1, 0, 0]),
    ({"num_bins": 3, "mask_value": "omar"}, [["omar"], ["stringer"], ["marlo"], ["wire"], ["skywalker"]],
     [[0], [1], [2], [1], [1]]),
    ({"num_bins": 1}, [["A"], ["B"]], [[0], [0]]),
])
def test_hashing_gives_tensorflows_buckets(kwargs, inputs, want):
    out = layers.Hashing(**kwargs)(inputs)
    assert out.dtype == "int64" and out.numpy().tolist() == want


def test_hashing_modes_and_config():
    words = [["A"], ["B"], ["C"], ["D"], ["E"]]            # buckets 1 0 1 1 2
    one_hot = layers.Hashing(3, output_mode="one_hot")(words)
    assert one_hot.dtype == "float32" and one_hot.numpy().tolist() == [[0, 1, 0], [1, 0, 0], [0, 1, 0], [0, 1, 0],
                                                                      [0, 0, 1]]
    pairs = np.array([["A", "B"], ["C", "E"]])
    assert layers.Hashing(3, output_mode="multi_hot")(pairs).numpy().tolist() == [[1, 1, 0], [0, 1, 1]]
    assert layers.Hashing(3, output_mode="count")(pairs).numpy().tolist() == [[1, 1, 0], [0, 1, 1]]
    assert layers.Hashing(3, dtype="int32")(words).dtype == "int32"
    config = layers.Hashing(3, salt=5, mask_value="").get_config()
    assert {k: config[k] for k in ("num_bins", "salt", "mask_value", "output_mode", "sparse")} == {
        "num_bins": 3, "salt": [5, 5], "mask_value": "", "output_mode": "int", "sparse": False}
    with pytest.raises(ValueError, match="can only be a tuple of size 2 integers"):
        layers.Hashing(2, salt=[1])
    with pytest.raises(ValueError, match="cannot be `None` or non-positive"):
        layers.Hashing(0)


def test_hashed_crossing_gives_tensorflows_buckets():
    feat1, feat2 = np.array(["A", "B", "A", "B", "A"]), np.array([101, 101, 101, 102, 102])
    out = layers.HashedCrossing(num_bins=5)((feat1, feat2))
    assert out.dtype == "int64" and out.numpy().tolist() == [1, 4, 1, 1, 3]
    hot = layers.HashedCrossing(num_bins=5, output_mode="one_hot")((feat1, feat2))
    assert hot.dtype == "float32" and hot.numpy().argmax(-1).tolist() == [1, 4, 1, 1, 3]
    column = layers.HashedCrossing(num_bins=5)((feat1[:, None], feat2[:, None]))
    assert column.numpy().tolist() == [[1], [4], [1], [1], [3]]
    with pytest.raises(ValueError, match="should be called on at least two inputs"):
        layers.HashedCrossing(num_bins=5)((feat1,))
    with pytest.raises(ValueError, match="should have equal shape"):
        layers.HashedCrossing(num_bins=5)((feat1, feat2[:3]))
