"""minifp.torch.save/load: safetensors files, bit for bit, never pickle."""
import io
import json
import os
import pickle
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import minifp
import minifp.torch as torch

safetensors_numpy = pytest.importorskip("safetensors.numpy")
pytestmark = pytest.mark.filterwarnings("ignore:minifp. no GPU here")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "safetensors"
SPECIAL = [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 1e-40, 3e38, 65504.0, 1e-7, 448.0, -1e-45]
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

# torch dtype name -> NumPy storage dtype
FLOATS = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
          "float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2}
INTS = {"int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8, "uint8": np.uint8,
        "bool": np.bool_}


def bits(arr):
    """Raw bit patterns of an array (so NaN and -0.0 compare exactly)."""
    arr = np.ascontiguousarray(arr)
    return arr.view(UINT[arr.dtype.itemsize]) if arr.dtype != np.bool_ else arr


def float_array(storage, seed=0):
    """Special values and random ones, rounded into `storage` (float8 formats saturate nothing: NaN instead)."""
    with np.errstate(over="ignore"):
        values = np.concatenate([np.array(SPECIAL), np.random.default_rng(seed).standard_normal(11) * 50])
        return values.astype(np.float32).astype(storage).reshape(4, 6)


@pytest.mark.parametrize("name", list(FLOATS))
def test_round_trip_keeps_every_bit_of_float_dtypes(tmp_path, name):
    arr = float_array(FLOATS[name])
    path = tmp_path / "m.safetensors"
    torch.save({"w": torch.from_numpy(arr)}, path)
    back = torch.load(path)["w"]
    assert back.dtype is getattr(torch, name)
    assert back.shape == (4, 6)
    np.testing.assert_array_equal(bits(back.numpy()), bits(arr))


@pytest.mark.parametrize("name", list(INTS))
def test_round_trip_keeps_integer_and_bool_dtypes(tmp_path, name):
    info = np.iinfo(INTS[name]) if name != "bool" else None
    arr = (np.array([[True, False, True]]) if info is None
           else np.array([[info.min, 0, info.max]], dtype=INTS[name]))
    torch.save({"i": torch.from_numpy(arr)}, tmp_path / "i.safetensors")
    back = torch.load(tmp_path / "i.safetensors")["i"]
    assert back.dtype is getattr(torch, name)
    np.testing.assert_array_equal(back.numpy(), arr)
    assert back.numpy().dtype == arr.dtype


def test_round_trip_of_a_mixed_state_dict_and_zero_dim_and_empty(tmp_path):
    sd = {"a.weight": torch.from_numpy(float_array(ml_dtypes.bfloat16)),
          "a.num_batches_tracked": torch.from_numpy(np.array(7, dtype=np.int64)),
          "b.scalar": torch.from_numpy(np.array(-0.0, dtype=np.float16)),
          "b.empty": torch.from_numpy(np.zeros((0, 3), np.float32))}
    torch.save(sd, tmp_path / "sd.safetensors")
    back = torch.load(tmp_path / "sd.safetensors")
    assert sorted(back) == sorted(sd)
    for k, v in sd.items():
        assert back[k].shape == v.shape and back[k].dtype is v.dtype
        np.testing.assert_array_equal(bits(back[k].numpy()), bits(v.numpy()))
    assert isinstance(back["a.weight"], torch.Tensor)


@pytest.mark.parametrize("fmt", [minifp.tf32, minifp.Format(6, 9, overflow="saturate", name="e6m9sat")])
def test_formats_without_a_safetensors_dtype_come_back_through_the_metadata(tmp_path, fmt):
    t = minifp.tensor(np.linspace(-3, 3, 12).reshape(3, 4), fmt)
    torch.save({"t": t}, tmp_path / "f.safetensors")
    back = torch.load(tmp_path / "f.safetensors")["t"]
    assert back.fmt == fmt and back.fmt.overflow == fmt.overflow
    np.testing.assert_array_equal(back.float32(), t.float32())
    # Other readers see exact float32 values.
    np.testing.assert_array_equal(safetensors_numpy.load_file(tmp_path / "f.safetensors")["t"], t.float32())


def test_numpy_arrays_and_engine_tensors_are_saved_too(tmp_path):
    torch.save({"a": np.arange(6, dtype=np.int32).reshape(2, 3), "b": minifp.tensor([1.5, 2.0], minifp.float16)},
               tmp_path / "x.safetensors")
    back = torch.load(tmp_path / "x.safetensors")
    assert back["a"].dtype is torch.int32 and back["b"].dtype is torch.float16
    np.testing.assert_array_equal(back["b"].numpy(), np.array([1.5, 2.0], np.float16))


def test_loads_a_file_written_by_safetensors_numpy(tmp_path):
    arrays = {"f32": np.float32([[1.0, -0.0], [np.nan, 3e-45]]), "f16": np.float16([65504, 6e-8, -np.inf]),
              "i64": np.array([2 ** 62, -1], np.int64), "u8": np.arange(4, dtype=np.uint8),
              "flags": np.array([True, False])}
    safetensors_numpy.save_file(arrays, tmp_path / "np.safetensors")
    back = torch.load(tmp_path / "np.safetensors")
    assert sorted(back) == sorted(arrays)
    for k, arr in arrays.items():
        assert back[k].numpy().dtype == arr.dtype
        np.testing.assert_array_equal(bits(back[k].numpy()), bits(arr))


def test_saved_files_are_read_by_safetensors_numpy_with_pytorchs_metadata(tmp_path):
    torch.save({"w": torch.from_numpy(np.float32([1, 2, 3]))}, tmp_path / "w.safetensors")
    np.testing.assert_array_equal(safetensors_numpy.load_file(tmp_path / "w.safetensors")["w"], [1, 2, 3])
    data = (tmp_path / "w.safetensors").read_bytes()
    header = json.loads(data[8:8 + int.from_bytes(data[:8], "little")])
    assert header["__metadata__"] == {"format": "pt"}
    assert header["w"]["dtype"] == "F32"


def test_state_dict_saved_by_real_pytorch_loads_bit_for_bit():
    record = json.loads((FIXTURES / "torch_state_dict.json").read_text())["tensors"]
    back = torch.load(FIXTURES / "torch_state_dict.safetensors")
    assert sorted(back) == sorted(record)
    for key, want in record.items():
        t = back[key]
        assert repr(t.dtype) == want["dtype"], key
        assert list(t.shape) == want["shape"], key
        got = bits(t.numpy()).reshape(-1)
        expected = np.array(want["bits"], dtype=np.int64)
        if t.numpy().dtype != np.bool_:        # PyTorch recorded signed views; compare as unsigned bits
            expected = expected.astype(got.dtype.newbyteorder("=").str.replace("u", "i")).view(got.dtype)
        np.testing.assert_array_equal(got, expected, err_msg=key)
    assert back["1.num_batches_tracked"].item() == 12345678901


def test_file_objects_work_both_ways():
    buf = io.BytesIO()
    torch.save({"w": torch.from_numpy(np.float16([1, 2]))}, buf)
    buf.seek(0)
    back = torch.load(buf)
    assert back["w"].dtype is torch.float16
    np.testing.assert_array_equal(back["w"].numpy(), np.float16([1, 2]))


def test_save_is_atomic_and_leaves_no_temporary_files(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.safetensors"
    torch.save({"w": torch.from_numpy(np.float32([1, 2]))}, path)
    before = path.read_bytes()
    with pytest.raises(TypeError, match=r"state_dict\['bad'\] is a list"):      # checked before writing
        torch.save({"w": torch.from_numpy(np.float32([5, 6])), "bad": [1, 2]}, path)
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):                              # fails while writing
        torch.save({"w": torch.from_numpy(np.float32([7, 8]))}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]


def test_saved_file_mode_follows_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        torch.save({"w": torch.from_numpy(np.float32([1]))}, tmp_path / "m.safetensors")
    finally:
        os.umask(old)
    if os.name == "posix":
        assert (tmp_path / "m.safetensors").stat().st_mode & 0o777 == 0o644


def test_float64_loads_as_float32_with_a_warning(tmp_path):
    safetensors_numpy.save_file({"d": np.array([0.1, 1.0])}, tmp_path / "d.safetensors")
    with pytest.warns(UserWarning, match=r"float64 tensors \['d'\] were rounded to float32"):
        back = torch.load(tmp_path / "d.safetensors")
    assert back["d"].dtype is torch.float32
    np.testing.assert_array_equal(back["d"].numpy(), np.float32([0.1, 1.0]))


def test_map_location(tmp_path):
    torch.save({"w": torch.from_numpy(np.float32([1]))}, tmp_path / "w.safetensors")
    assert torch.load(tmp_path / "w.safetensors", map_location="cpu")["w"].device == torch.device("cpu")
    on_gpu = torch.load(tmp_path / "w.safetensors", map_location=torch.device("cuda"))["w"]
    assert on_gpu.device == torch.device("cuda") and on_gpu.dtype is torch.float32
    np.testing.assert_array_equal(on_gpu.cpu().numpy(), [1])
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda device type at start of device string: tpu"):
        torch.load(tmp_path / "w.safetensors", map_location="tpu")
    with pytest.raises(ValueError, match="map_location must be None, a device or a device name"):
        torch.load(tmp_path / "w.safetensors", map_location={"cuda:0": "cpu"})


def test_load_never_unpickles(tmp_path):
    ran = []

    class Payload:
        def __reduce__(self):
            return (ran.append, ("code ran",))

    (tmp_path / "evil.pt").write_bytes(pickle.dumps({"w": Payload()}))
    with pytest.raises(ValueError, match="looks like a pickle written by torch.save"):
        torch.load(tmp_path / "evil.pt")
    (tmp_path / "zip.pt").write_bytes(b"PK\x03\x04" + bytes(100))
    with pytest.raises(ValueError, match="safetensors.torch.save_file"):
        torch.load(tmp_path / "zip.pt")
    assert ran == []


def test_bad_input_is_refused_with_the_argument_named(tmp_path):
    w = torch.from_numpy(np.float32([1]))
    with pytest.raises(TypeError, match="obj must be a state_dict"):
        torch.save([w], tmp_path / "x")
    with pytest.raises(TypeError, match="keys must be str, got 3"):
        torch.save({3: w}, tmp_path / "x")
    with pytest.raises(TypeError, match="has dtype complex64"):
        torch.save({"c": np.zeros(2, np.complex64)}, tmp_path / "x")
    with pytest.raises(TypeError, match="never pickle"):
        torch.save({"w": w}, tmp_path / "x", pickle_module=pickle)
    with pytest.raises(TypeError, match="f must be a file path"):
        torch.save({"w": w}, 3)
    with pytest.raises(FileNotFoundError, match="cannot open"):
        torch.load(tmp_path / "missing.safetensors")
    (tmp_path / "junk").write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{bad}")
    with pytest.raises(ValueError, match="is not a safetensors file"):
        torch.load(tmp_path / "junk")
    assert not (tmp_path / "x").exists()


def test_a_missing_safetensors_names_the_extra(tmp_path, monkeypatch):
    torch.save({"w": torch.from_numpy(np.float32([1]))}, tmp_path / "w.safetensors")
    monkeypatch.setitem(sys.modules, "safetensors", None)
    monkeypatch.setitem(sys.modules, "safetensors.numpy", None)
    with pytest.raises(ImportError, match=r'pip install "minifp\[safetensors\]"'):
        torch.save({"w": torch.from_numpy(np.float32([1]))}, tmp_path / "v.safetensors")
    with pytest.raises(ImportError, match="minifp.torch.save/load read and write safetensors files"):
        torch.load(tmp_path / "w.safetensors")
    assert not (tmp_path / "v.safetensors").exists()
