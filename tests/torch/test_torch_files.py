"""minifp.torch.save/load in PyTorch's zip format: round trips, real PyTorch's files, and hostile files refused."""
import collections
import io
import json
import os
import pickle
import pickletools
import struct
import zipfile
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import minifp.torch as torch

pytestmark = pytest.mark.filterwarnings("ignore:minifp. no GPU here")

FILES = Path(__file__).resolve().parent.parent / "fixtures" / "pytorch" / "files"
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
SPECIAL = [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 1e-40, 3e38, 65504.0, 1e-7, 448.0, 0.1]
FLOATS = ["float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"]
# The opcodes torch's weights_only unpickler reads (torch/_weights_only_unpickler.py), by pickletools' names.
TORCH_OPCODES = {"PROTO", "EMPTY_DICT", "EMPTY_LIST", "EMPTY_TUPLE", "MARK", "BINUNICODE", "GLOBAL", "BININT",
                 "BININT1", "BININT2", "LONG1", "BINFLOAT", "NONE", "NEWTRUE", "NEWFALSE", "TUPLE", "TUPLE1",
                 "TUPLE2", "TUPLE3", "REDUCE", "BINPERSID", "APPENDS", "SETITEMS", "BUILD", "STOP"}


def encode(obj):
    """obj as the JSON tools/record_pytorch_files.py writes: every type kept, tensors by dtype, shape and bits."""
    if isinstance(obj, torch.Tensor):
        arr = np.ascontiguousarray(obj.detach().cpu().numpy())
        bits = arr.astype(np.uint8) if arr.dtype == np.bool_ else arr.view(UINT[arr.dtype.itemsize])
        return {"__tensor__": {"dtype": repr(obj.dtype).split(".")[1], "shape": list(obj.shape),
                               "bits": bits.reshape(-1).tolist(), "requires_grad": obj.requires_grad,
                               "parameter": isinstance(obj, torch.nn.Parameter)}}
    if isinstance(obj, dict):
        return {"__dict__": [[encode(k), encode(v)] for k, v in obj.items()],
                "ordered": isinstance(obj, collections.OrderedDict)}
    if isinstance(obj, tuple):
        return {"__tuple__": [encode(v) for v in obj]}
    if isinstance(obj, list):
        return [encode(v) for v in obj]
    if isinstance(obj, float) and not np.isfinite(obj):
        return {"__float__": repr(obj)}
    if isinstance(obj, torch.device):       # (minifp's is a str with a device's type, index and printing)
        return {"__device__": str(obj)}
    if isinstance(obj, torch.dtype):
        return {"__dtype__": repr(obj)}
    return obj


def same(got, want, where="obj"):
    """Assert two encodings are equal, naming the first place they differ (types included: 1 is not 1.0)."""
    assert type(got) is type(want), f"{where}: {got!r:.200} != {want!r:.200}"
    if isinstance(got, dict):
        assert sorted(got) == sorted(want), where
        for key in got:
            same(got[key], want[key], f"{where}.{key}")
    elif isinstance(got, list):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            same(g, w, f"{where}[{i}]")
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def roundtrip(obj, tmp_path, name="ckpt.pt"):
    torch.save(obj, tmp_path / name)
    return torch.load(tmp_path / name)


def records(path):
    with zipfile.ZipFile(path) as z:
        return {info.filename: z.read(info) for info in z.infolist()}


def rezip(path, records_):
    with zipfile.ZipFile(path, "w") as z:
        for name, data in records_.items():
            z.writestr(name, data)


# -- round trips ----------------------------------------------------------------------------------------------


def test_a_checkpoint_dict_round_trips_with_every_type_exactly(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    ckpt = {"model": model.state_dict(), "epoch": 3, "best_acc": 0.91, "note": "héllo ✓", "none": None,
            "flags": [True, False], "ints": [0, 255, 256, 65536, -1, -2 ** 31, 2 ** 31, 2 ** 40, -2 ** 70],
            "floats": (0.5, -0.0, 1e300, float("inf")), 7: {"nested": ({"deep": [[]]},)}, (1, "a"): (), 2.5: {},
            "od": collections.OrderedDict([("b", 1), ("a", 2)]), "big_tuple": (1, 2, 3, 4, 5),
            "dtypes": [torch.bfloat16, torch.int64, torch.float8_e4m3fn], "devices": [torch.device("cuda")]}
    back = roundtrip(ckpt, tmp_path)
    same(encode(back), encode(ckpt))
    assert type(back["epoch"]) is int and type(back["best_acc"]) is float and back["none"] is None
    assert type(back["flags"][0]) is bool and type(back["floats"]) is tuple
    assert type(back["od"]) is collections.OrderedDict
    assert list(back["od"]) == ["b", "a"] and type(back["model"]) is collections.OrderedDict
    assert back["dtypes"] == [torch.bfloat16, torch.int64, torch.float8_e4m3fn]
    assert back["devices"] == [torch.device("cuda")] and repr(back["devices"][0]) == "device(type='cuda')"
    assert back["ints"][-1] == -2 ** 70 and str(back["floats"][1]) == "-0.0"
    assert isinstance(back["model"]["0.weight"], torch.Tensor)
    assert back["model"]["1.num_batches_tracked"].dtype is torch.int64


@pytest.mark.parametrize("name", FLOATS)
def test_float_dtypes_round_trip_bit_for_bit(tmp_path, name):
    with np.errstate(over="ignore", invalid="ignore"):
        arr = np.array(SPECIAL, np.float32).astype(getattr(torch, name).numpy).reshape(1, 13)
    t = torch.from_numpy(arr)
    back = roundtrip({"t": t}, tmp_path)["t"]
    assert back.dtype is getattr(torch, name) and back.shape == (1, 13)
    same(encode(back), encode(t))


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_integer_and_bool_dtypes_round_trip(tmp_path, dtype):
    info = np.iinfo(dtype)
    t = torch.tensor(np.array([[info.min, 0, info.max]], dtype=dtype))
    flags = torch.tensor([True, False, True])
    back = roundtrip({"i": t, "b": flags}, tmp_path)
    assert back["i"].dtype is getattr(torch, dtype) and back["b"].dtype is torch.bool
    np.testing.assert_array_equal(back["i"].numpy(), t.numpy())
    np.testing.assert_array_equal(back["b"].numpy(), [True, False, True])


def test_views_and_shared_tensors_are_written_as_pytorch_does(tmp_path):
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    obj = {"base": base, "t": base.t(), "again": base, "slice": base[1:, ::2], "scalar": base[2, 3],
           "empty": torch.zeros(0, 3), "param": torch.nn.Parameter(torch.ones(2))}
    odd = {"flipped": np.arange(6, dtype=np.float32)[::-1], "fortran": np.asfortranarray(np.ones((2, 3), np.float16)),
           "broadcast": np.broadcast_to(np.float32([1, 2]), (3, 2))}          # whatever minifp keeps of these
    obj.update({k: torch.from_numpy(v) for k, v in odd.items()})
    back = roundtrip(obj, tmp_path)
    same(encode(back), encode(obj))
    assert isinstance(back["param"], torch.nn.Parameter) and back["param"].requires_grad
    # One storage per base array: the same tensor twice, and a transposed view, name one storage, as in PyTorch.
    ops = [arg for _, arg, _ in pickletools.genops(records(tmp_path / "ckpt.pt")["ckpt/data.pkl"])]
    keys = [ops[i + 2] for i, arg in enumerate(ops) if arg == "storage"]
    assert keys[:3] == ["0", "0", "0"] and len(keys) == 10


def test_the_archive_is_laid_out_as_torch_save_lays_it_out(tmp_path):
    torch.save({"w": torch.ones(3), "f8": torch.ones(2, dtype=torch.float8_e5m2)}, tmp_path / "model.v2.pth")
    with zipfile.ZipFile(tmp_path / "model.v2.pth") as z:
        infos = z.infolist()
        names = [i.filename for i in infos]
        assert names == ["model.v2/data.pkl", "model.v2/.format_version", "model.v2/.storage_alignment",
                         "model.v2/byteorder", "model.v2/data/0", "model.v2/data/1", "model.v2/version",
                         "model.v2/.data/serialization_id"]
        assert z.read("model.v2/version") == b"3\n" and z.read("model.v2/byteorder") == b"little"
        assert z.read("model.v2/.format_version") == b"1" and z.read("model.v2/.storage_alignment") == b"64"
        assert len(z.read("model.v2/.data/serialization_id")) == 40
        assert all(i.compress_type == zipfile.ZIP_STORED for i in infos)
        pkl = z.read("model.v2/data.pkl")
    raw = (tmp_path / "model.v2.pth").read_bytes()
    for info in infos:                     # every record's bytes start on a 64-byte boundary, as torch pads them
        name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
        assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0, info.filename
    ops = list(pickletools.genops(pkl))
    assert {op.name for op, _, _ in ops} <= TORCH_OPCODES and ops[0][1] == 2           # protocol 2
    globals_ = {arg for op, arg, _ in ops if op.name == "GLOBAL"}
    assert globals_ == {"torch._utils _rebuild_tensor_v2", "torch FloatStorage", "collections OrderedDict",
                        "torch._utils _rebuild_tensor_v3", "torch.storage UntypedStorage", "torch float8_e5m2"}


def test_file_objects_and_the_choice_of_format_by_name(tmp_path):
    ckpt = {"epoch": 1, "w": torch.ones(2, dtype=torch.float16)}
    buf = io.BytesIO()
    torch.save(ckpt, buf)
    assert buf.getvalue()[:4] == b"PK\x03\x04"
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        assert z.namelist()[0] == "archive/data.pkl"                                # torch's name for buffers
    buf.seek(0)
    same(encode(torch.load(buf)), encode(ckpt))
    for name in ("a.pt", "a.pth", "a.pth.tar", "a.ckpt", "a.bin"):
        torch.save(ckpt, tmp_path / name)
        assert (tmp_path / name).read_bytes()[:4] == b"PK\x03\x04", name
    sd = {"w": torch.ones(2)}
    for name in ("m.safetensors", "m"):                                             # as minifp always wrote
        torch.save(sd, tmp_path / name)
        assert (tmp_path / name).read_bytes()[:2] != b"PK"
        same(encode(torch.load(tmp_path / name)), encode(sd))
    with pytest.raises(TypeError, match=r"name the file \.pt or \.pth"):
        torch.save(ckpt, tmp_path / "m.safetensors")


def test_map_location(tmp_path):
    torch.save({"w": torch.ones(2)}, tmp_path / "cpu.pt")
    assert torch.load(tmp_path / "cpu.pt")["w"].device == torch.device("cpu")
    assert torch.load(tmp_path / "cpu.pt", map_location="cuda")["w"].device == torch.device("cuda")
    assert torch.load(tmp_path / "cpu.pt", map_location={"cpu": "cuda:0"})["w"].device == torch.device("cuda")
    torch.save({"w": torch.ones(2).cuda()}, tmp_path / "gpu.pt")
    assert b"cuda:0" in records(tmp_path / "gpu.pt")["gpu/data.pkl"]
    assert torch.load(tmp_path / "gpu.pt")["w"].device == torch.device("cuda")
    on_cpu = torch.load(tmp_path / "gpu.pt", map_location=torch.device("cpu"))["w"]
    assert on_cpu.device == torch.device("cpu")
    np.testing.assert_array_equal(on_cpu.numpy(), [1, 1])
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda device type"):
        torch.load(tmp_path / "cpu.pt", map_location="tpu")
    with pytest.raises(ValueError, match="takes no function"):
        torch.load(tmp_path / "cpu.pt", map_location=lambda storage, location: storage)


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_optimizer_state_round_trips_and_training_resumes_bit_for_bit(tmp_path, kind):
    def setup():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
        opt = (torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if kind == "sgd"
               else torch.optim.Adam(model.parameters(), lr=1e-2))
        return model, opt

    def step(model, opt, seed):
        torch.manual_seed(seed)
        opt.zero_grad()
        (model(torch.randn(5, 4)) ** 2).mean().backward()
        opt.step()

    model, opt = setup()
    for seed in (1, 2):
        step(model, opt, seed)
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 2}, tmp_path / "ckpt.pt")
    resumed, resumed_opt = setup()
    ckpt = torch.load(tmp_path / "ckpt.pt")
    resumed.load_state_dict(ckpt["model"])
    resumed_opt.load_state_dict(ckpt["optimizer"])
    same(encode(ckpt["optimizer"]["param_groups"]), encode(opt.state_dict()["param_groups"]))
    for seed in (3, 4):
        step(model, opt, seed)
        step(resumed, resumed_opt, seed)
    for (name, a), b in zip(model.state_dict().items(), resumed.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


def test_saving_refuses_what_weights_only_loading_could_not_read(tmp_path):
    (tmp_path / "c.pt").write_bytes(b"old")
    for bad, match in [({"x": np.float32(1)}, r"obj\['x'\] is a NumPy float32.*\.item\(\)"),
                       ({"x": {1, 2}}, r"obj\['x'\] is a set"), ([np.zeros(2)], r"obj\[0\] is a NumPy ndarray"),
                       ({"k": {torch.ones(1): 1}}, "has a key"), ({"f": print}, "builtin_function_or_method")]:
        with pytest.raises(TypeError, match=match):
            torch.save(bad, tmp_path / "c.pt")
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="contains itself"):
        torch.save({"loop": loop}, tmp_path / "c.pt")
    with pytest.raises(TypeError, match="never pickle"):
        torch.save({}, tmp_path / "c.pt", pickle_module=pickle)
    torch.save({}, tmp_path / "d.pt", pickle_protocol=2)                         # torch.save's own protocol
    with pytest.raises(ValueError, match="only the zip format"):
        torch.save({}, tmp_path / "c.pt", _use_new_zipfile_serialization=False)
    assert (tmp_path / "c.pt").read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["c.pt", "d.pt"]                      # no temporary left behind


def test_saving_is_atomic(tmp_path, monkeypatch):
    torch.save({"epoch": 1}, tmp_path / "c.pt")
    before = (tmp_path / "c.pt").read_bytes()
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        torch.save({"epoch": 2}, tmp_path / "c.pt")
    assert (tmp_path / "c.pt").read_bytes() == before and os.listdir(tmp_path) == ["c.pt"]


# -- files written by real PyTorch ---------------------------------------------------------------------------


def expected_files():
    return json.loads((FILES / "expected.json").read_text())


def as_minifp(want):
    """The encoding minifp gives for a PyTorch encoding: float64 tensors become float32 (rounded once)."""
    if isinstance(want, list):
        return [as_minifp(v) for v in want]
    if not isinstance(want, dict):
        return want
    if "__tensor__" in want and want["__tensor__"]["dtype"] == "float64":
        t = dict(want["__tensor__"], dtype="float32")
        t["bits"] = np.array(t["bits"], np.uint64).view(np.float64).astype(np.float32).view(np.uint32).tolist()
        return {"__tensor__": t}
    return {k: as_minifp(v) for k, v in want.items()}


@pytest.mark.parametrize("name", ["tiny_model", "checkpoint", "dtypes", "views", "shared", "nested"])
def test_files_written_by_real_pytorch_load_exactly(name):
    want = as_minifp(expected_files()["files"][name])
    with pytest.warns(UserWarning, match="1 float64 tensors were rounded") if name == "dtypes" else _nothing():
        back = torch.load(FILES / f"{name}.pt")
    same(encode(back), want)


def test_the_recorder_checked_minifps_files_in_real_pytorch():
    checked = expected_files()["minifp_files_checked"]
    assert checked["passed"] is True and checked["torch_version"].startswith("2.13")
    assert "minifp_checkpoint" in checked["files"] and "resaved_checkpoint" in checked["files"]


def test_a_real_pytorch_adam_checkpoint_resumes_in_minifp():
    ckpt = torch.load(FILES / "checkpoint.pt")
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    model.load_state_dict(ckpt["model"])
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    opt.load_state_dict(ckpt["optimizer"])
    assert ckpt["epoch"] == 3 and ckpt["best_acc"] == 0.91
    assert opt.state_dict()["state"][0]["step"].item() == 2.0


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# -- hostile files -------------------------------------------------------------------------------------------


def u(s):
    """BINUNICODE of s."""
    data = s.encode()
    return b"X" + struct.pack("<I", len(data)) + data


HOOKS = b"ccollections\nOrderedDict\n)R"
PID = b"(" + u("storage") + b"ctorch\nFloatStorage\n" + u("0") + u("cpu") + b"K\x04tQ"


def rebuild(pid=PID, offset=b"K\x00", size=b"K\x04\x85", stride=b"K\x01\x85", grad=b"\x89", hooks=HOOKS, extra=b""):
    """A protocol 2 pickle of one _rebuild_tensor_v2 call, its arguments given as opcodes."""
    return (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(" + pid + offset + size + stride + grad + hooks + extra
            + b"tR.")


def archive(path, pkl, storage=np.arange(4, dtype=np.float32).tobytes(), **more):
    rezip(path, {"archive/data.pkl": pkl, "archive/byteorder": b"little", "archive/data/0": storage,
                 "archive/version": b"3\n", **more})
    return path


def test_the_hand_made_pickle_is_a_valid_tensor(tmp_path):
    t = torch.load(archive(tmp_path / "ok.pt", rebuild()))
    np.testing.assert_array_equal(t.numpy(), [0, 1, 2, 3])
    view = rebuild(offset=b"K\x01", size=b"K\x02K\x01\x86", stride=b"K\x02K\x01\x86")        # [1:4:2, None]
    t = torch.load(archive(tmp_path / "ok.pt", view))
    np.testing.assert_array_equal(t.numpy(), [[1], [3]])


class Shell:
    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


class Eval:
    def __init__(self, code):
        self.code = code

    def __reduce__(self):
        return (eval, (self.code,))


RAN = []


def touch(path):
    RAN.append(path)
    Path(path).write_text("ran")


class Callback:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (touch, (self.path,))


class Plain:
    pass


@pytest.mark.parametrize("payload, match", [
    (lambda s: Shell(f"touch {s}"), "unsupported GLOBAL posix.system whose module posix is blocked"),
    (lambda s: Eval(f"open({str(s)!r}, 'w')"), "Unsupported global: GLOBAL eval was not an allowed global"),
    (lambda s: Callback(str(s)), "GLOBAL tests.torch.test_torch_files.touch was not an allowed global|"
                                 "GLOBAL test_torch_files.touch was not an allowed global"),
    (lambda s: {"state": [Plain()], "touch": Callback(str(s))}, "Plain was not an allowed global"),
    (lambda s: {"w": torch.ones(2), "later": Shell(f"touch {s}")}, "posix.system whose module posix is blocked"),
])
def test_pickled_callables_are_refused_and_nothing_runs(tmp_path, payload, match):
    sentinel = tmp_path / "sentinel"
    obj = payload(sentinel)
    if isinstance(obj, dict) and "w" in obj:                 # a real checkpoint with a payload spliced in
        torch.save({"w": obj["w"], "later": 0}, tmp_path / "good.pt")
        recs = records(tmp_path / "good.pt")
        assert recs["good/data.pkl"].endswith(b"K\x00u.")
        recs["good/data.pkl"] = recs["good/data.pkl"][:-4] + pickle.dumps(obj["later"], protocol=2)[2:-1] + b"u."
        rezip(tmp_path / "evil.pt", recs)
    else:
        archive(tmp_path / "evil.pt", pickle.dumps(obj, protocol=2))
    for weights_only in (True, False):      # False reads what True reads: nothing more is ever unpickled
        with pytest.raises(pickle.UnpicklingError, match=match) as e:
            torch.load(tmp_path / "evil.pt", weights_only=weights_only)
        assert "Weights only load failed" in str(e.value)
    assert not sentinel.exists() and RAN == []


@pytest.mark.parametrize("pkl, match", [
    (rebuild(pid=u("storage")), "storage must be a typed storage"),
    (rebuild(offset=b"J\xff\xff\xff\xff"), "storage_offset must be a non-negative int"),
    (rebuild(size=b"]K\x04a"), "size must be a tuple of non-negative ints"),
    (rebuild(stride=b"K\x01K\x01\x86"), "stride has 2 dimensions; expected 1"),
    (rebuild(grad=b"K\x01"), "requires_grad must be a bool"),
    (rebuild(hooks=b"}" + u("k") + u("v") + b"s"), "backward_hooks must be an empty OrderedDict"),
    (rebuild(extra=b"}" + u("conj") + b"\x88s"), "no conjugate or negative views"),
    (rebuild(extra=b"NN"), "takes 6 to 7 arguments, got 8"),
    (rebuild(pid=b"(" + u("storage") + b"cbuiltins\nlist\n" + u("0") + u("cpu") + b"K\x04tQ"),
     "GLOBAL list was not an allowed global"),
    (rebuild(pid=b"(" + u("module") + u("os") + b"\x86Q"), "Only persistent_load of storage is allowed"),
    (b"\x80\x02" + u("x") + b"Q.", "Only persistent_load of storage is allowed"),
    (rebuild()[:-1] + b"}" + u("_data") + u("x") + b"sb.", "Can only build Tensor, Parameter or OrderedDict"),
    (b"\x80\x02}" + u("f") + b"ctorch._utils\n_rebuild_tensor_v2\ns.",
     "holds a function torch._utils._rebuild_tensor_v2"),
    (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n}" + u("__defaults__") + b")sb.", "Can only build"),
    (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nN}" + u("__defaults__") + b")s\x86b.", "Can only build"),
    (b"\x80\x02ccollections\nOrderedDict\n}" + u("x") + b"K\x01sb.", "Weights only load failed"),
    (b"\x80\x02ctorch\nFloatStorage\n)R.", "is not callable"),
    (b"\x80\x02ccollections\nOrderedDict\n)R(" + u("a") + b"K\x01u", "Ran out of input|truncated"),
    (b"\x80\x02c__builtin__\ngetattr\n.", "GLOBAL getattr was not an allowed global"),
    (b"\x80\x02cnt\nsystem\n.", "nt.system whose module nt is blocked"),
    (rebuild(pid=b"(" + u("storage") + b"ctorch\nComplexFloatStorage\n" + u("0") + u("cpu") + b"K\x04tQ"),
     "torch.ComplexFloatStorage: minifp holds no tensors of this type"),
    (b"\x80\x02ctorch\nuint16\n.", "torch.uint16: minifp holds no tensors of this type"),
    (b"\x80\x02ctorch\nload\n.", "GLOBAL torch.load was not an allowed global"),
    (b"\x80\x02}" + rebuild()[2:-1] + b"K\x01s.", "a dict key .* of type tensor|of type _Recipe"),
    (b"\x80\x02ccollections\nOrderedDict\n)R}K\x01K\x02sb.", "attribute name.* of type int"),
    (b"\x80\x02ctorch\nSize\n" + u("ab") + b"\x85R.", "sizes must be a tuple of non-negative ints"),
    (b"\x80\x02csubprocess\nPopen\n.", "GLOBAL subprocess.Popen was not an allowed global"),
    (b"\x80\x02cminifp.torch._torchfile\n_Recipe\n.", "GLOBAL minifp.torch._torchfile._Recipe was not an allowed"),
])
def test_hostile_pickles_are_refused(tmp_path, pkl, match):
    with pytest.raises(pickle.UnpicklingError, match=match):
        torch.load(archive(tmp_path / "bad.pt", pkl))


def test_storages_and_sizes_that_disagree_are_refused_before_any_allocation(tmp_path):
    with pytest.raises(RuntimeError, match=r"record size \(8 bytes\) does not match expected size \(16 bytes"):
        torch.load(archive(tmp_path / "short.pt", rebuild(), storage=bytes(8)))
    with pytest.raises(RuntimeError, match="does not match expected size"):
        torch.load(archive(tmp_path / "long.pt", rebuild(), storage=bytes(24)))
    huge = b"\x8a\x08" + (2 ** 62).to_bytes(8, "little")                                 # numel 2**62
    huge_pid = b"(" + u("storage") + b"ctorch\nFloatStorage\n" + u("0") + u("cpu") + huge + b"tQ"
    with pytest.raises(RuntimeError, match="does not match expected size"):
        torch.load(archive(tmp_path / "huge.pt", rebuild(pid=huge_pid)))
    absurd = b"\x8a\x06" + (2 ** 40).to_bytes(6, "little") + b"\x8a\x06" + (2 ** 40).to_bytes(6, "little") + b"\x86"
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 16"):
        torch.load(archive(tmp_path / "absurd.pt", rebuild(size=absurd, stride=b"K\x01K\x01\x86")))
    with pytest.raises(RuntimeError, match="requiring a storage size of 20 are out of bounds"):
        torch.load(archive(tmp_path / "off.pt", rebuild(offset=b"K\x01")))
    with pytest.raises(RuntimeError, match="failed locating file data/0"):
        rezip(tmp_path / "none.pt", {"archive/data.pkl": rebuild()})
        torch.load(tmp_path / "none.pt")


def test_truncated_and_broken_archives_are_refused(tmp_path):
    torch.save({"w": torch.ones(100), "epoch": 1}, tmp_path / "good.pt")
    data = (tmp_path / "good.pt").read_bytes()
    for cut in (len(data) // 2, len(data) - 10, 30):
        (tmp_path / "cut.pt").write_bytes(data[:cut])
        with pytest.raises(RuntimeError, match="failed reading zip archive") as e:
            torch.load(tmp_path / "cut.pt")
        assert isinstance(e.value, ValueError)                  # what minifp's load raised before, too
    recs = records(tmp_path / "good.pt")
    recs["good/data.pkl"] = recs["good/data.pkl"][:-20]
    rezip(tmp_path / "short_pickle.pt", recs)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        torch.load(tmp_path / "short_pickle.pt")
    rezip(tmp_path / "other.zip", {"readme.txt": b"hello"})
    with pytest.raises(RuntimeError, match="failed locating file data.pkl"):
        torch.load(tmp_path / "other.zip")
    rezip(tmp_path / "script.pt", {"m/data.pkl": b"\x80\x02N.", "m/constants.pkl": b"\x80\x02N."})
    with pytest.raises(RuntimeError, match="TorchScript archive"):
        torch.load(tmp_path / "script.pt")
    recs = records(tmp_path / "good.pt")
    recs["good/byteorder"] = b"middle"
    rezip(tmp_path / "order.pt", recs)
    with pytest.raises(ValueError, match="Unknown endianness type: middle"):
        torch.load(tmp_path / "order.pt")


def test_a_legacy_pickle_is_never_unpickled(tmp_path):
    sentinel = tmp_path / "sentinel"
    magic = pickle.dumps(0x1950a86a20f9469cfc6c, protocol=2)           # how torch's legacy format starts
    (tmp_path / "legacy.pt").write_bytes(magic + pickle.dumps(Shell(f"touch {sentinel}"), protocol=2))
    with pytest.raises(ValueError, match="looks like a pickle written by torch.save in its legacy format"):
        torch.load(tmp_path / "legacy.pt")
    (tmp_path / "plain.pkl").write_bytes(pickle.dumps({"w": Callback(str(sentinel))}))
    with pytest.raises(ValueError, match="never loads"):
        torch.load(tmp_path / "plain.pkl")
    assert not sentinel.exists() and RAN == []


def test_big_endian_archives_are_read(tmp_path):
    pkl = rebuild()
    t = torch.load(archive(tmp_path / "be.pt", pkl, storage=np.arange(4, dtype=">f4").tobytes(),
                           **{"archive/byteorder": b"big"}))
    np.testing.assert_array_equal(t.numpy(), [0, 1, 2, 3])


def test_weights_only_false_reads_as_true_and_pickle_arguments_are_refused(tmp_path):
    torch.save({"epoch": 1}, tmp_path / "c.pt")
    assert torch.load(tmp_path / "c.pt", weights_only=False) == {"epoch": 1}
    assert torch.load(tmp_path / "c.pt", weights_only=None) == {"epoch": 1}
    with pytest.raises(TypeError, match="never pickle"):
        torch.load(tmp_path / "c.pt", pickle_module=pickle)
    with pytest.raises(TypeError, match="never pickle"):
        torch.load(tmp_path / "c.pt", encoding="latin1")
    assert torch.load(tmp_path / "c.pt", mmap=True) == {"epoch": 1}


def test_bytes_torch_size_and_device_globals_are_admitted(tmp_path):
    pkl = (b"\x80\x02(" + b"c_codecs\nencode\n" + u("\xff\x00") + u("latin1") + b"\x86R"
           + b"ctorch\nSize\nK\x02K\x03\x86\x85R" + b"ctorch\ndevice\n" + u("cuda") + b"K\x00\x86Rt.")
    raw, size, device = torch.load(archive(tmp_path / "ok.pt", pkl))
    assert raw == b"\xff\x00" and size == (2, 3) and device == torch.device("cuda")
    with pytest.raises(pickle.UnpicklingError, match="Can only build"):
        torch.load(archive(tmp_path / "bad.pt", b"\x80\x02ctorch\ndevice\n" + u("cpu") + b"\x85RN}" + u("type")
                           + u("x") + b"s\x86b."))
    with pytest.raises(pickle.UnpicklingError, match="only encode"):
        torch.load(archive(tmp_path / "bad.pt", b"\x80\x02c_codecs\nencode\n" + u("x") + u("rot13") + b"\x86R."))
