"""PyTorch's checkpoint format (the zip archive torch.save writes), written and read without running any code.

Writing: `<name>/data.pkl` is emitted opcode by opcode in pickle protocol 2, only the opcodes torch's weights_only
unpickler reads; a tensor is a torch._utils._rebuild_tensor_v2 (_v3 for the float8 types) reduction whose storage
is a persistent id ("storage", torch.FloatStorage, key, location, numel), each storage a stored record
`<name>/data/<key>` aligned to 64 bytes, then the version records torch 2.x writes.

Reading: a pickle.Unpickler whose find_class answers only from an allowlist of stand-ins for PyTorch's
weights_only set (tensor and parameter rebuilds, storage types, dtypes, OrderedDict, torch.Size, torch.device,
_codecs.encode) and imports nothing: a stand-in checks its arguments and returns a recipe, never a tensor, and
refuses BUILD. Tensors are made only after the whole pickle has been read and every storage checked against its
record and every view against its storage.
"""
from __future__ import annotations

import collections
import hashlib
import io
import pickle
import re
import struct
import zipfile
import zlib

import ml_dtypes
import numpy as np

from ..engine import make, storage, Tensor, to_numpy

__all__ = ["dumps", "loads", "ArchiveError"]

# torch dtype name -> NumPy storage dtype; the legacy storage class torch pickles for it (None: _rebuild_tensor_v3
# with an UntypedStorage and the dtype, as torch does for its newer dtypes).
NUMPY = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float64": np.float64,
         "int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8, "uint8": np.uint8, "bool": np.bool_,
         "float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
         "float8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz, "float8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
         "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu}
LEGACY = {"float32": "FloatStorage", "float16": "HalfStorage", "bfloat16": "BFloat16Storage",
          "float64": "DoubleStorage", "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
          "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage"}
_FLOATS = {name for name in NUMPY if name.startswith(("float", "bfloat"))}
ALIGNMENT = 64                        # torch's storage alignment in the archive (.storage_alignment)
_ORDERED_DICT = b"ccollections\nOrderedDict\n)R"     # GLOBAL, EMPTY_TUPLE, REDUCE: OrderedDict()


class ArchiveError(RuntimeError, ValueError):
    """A file that is not a readable torch.save zip archive: PyTorch's RuntimeError, and minifp's earlier ValueError."""


# -- writing ------------------------------------------------------------------------------------------------------


def dumps(obj, name="archive"):
    """The bytes of a torch.save zip archive (records under `name/`) holding obj; TypeError/ValueError on what
    PyTorch's weights_only loader could not read back, before anything is written."""
    pickler = _Pickler()
    pickler.dump(obj)
    records = [("data.pkl", bytes(pickler.out)), (".format_version", b"1"), (".storage_alignment", b"64"),
               ("byteorder", b"little")]
    records += [(f"data/{key}", data) for key, data in enumerate(pickler.storages.data)]
    digest = hashlib.sha1(b"".join(data for _, data in records)).digest()
    serialization_id = str(int.from_bytes(digest[:16], "big")).zfill(40).encode()     # torch's: 40 digits
    records += [("version", b"3\n"), (".data/serialization_id", serialization_id)]
    return _zip(name, records)


def _zip(name, records):
    """A zip archive of stored records, each record's data starting at a multiple of ALIGNMENT (as torch's writer
    pads: an extra field 'FB' of 'Z's), so torch can mmap it."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for record, data in records:
            info = zipfile.ZipInfo(f"{name}/{record}", date_time=(1980, 1, 1, 0, 0, 0))
            start = buf.tell() + 30 + len(info.filename.encode("utf-8"))        # 30: the local header
            pad = -start % ALIGNMENT
            if pad:
                pad += ALIGNMENT if pad < 4 else 0                         # room for the field's own 4 bytes
                info.extra = struct.pack("<2sH", b"FB", pad - 4) + b"Z" * (pad - 4)
            z.writestr(info, data)
    return buf.getvalue()


class _Storages:
    """The storages to write: one per base array, so views of one array (and one tensor saved twice) share one."""

    def __init__(self):
        self.data, self._keys, self._alive = [], {}, []

    def place(self, arr):
        """(key, storage offset, strides) of arr, all in elements."""
        size = arr.dtype.itemsize
        root = arr
        while isinstance(root.base, np.ndarray):
            root = root.base
        delta = arr.__array_interface__["data"][0] - root.__array_interface__["data"][0] if arr.size else -1
        if not (root.dtype == arr.dtype and root.flags.c_contiguous and arr.size and delta % size == 0
                and all(s >= 0 and s % size == 0 for s in arr.strides)):
            arr = root = arr.copy(order="C")                     # not expressible as a torch view: its own storage
            if root.size == 0:
                return self._add(root), 0, _contiguous_strides(root.shape)
            delta = 0
        key = self._keys.get(id(root))
        if key is None:
            key = self._keys[id(root)] = self._add(root)
            self._alive.append(root)                              # keeps id(root) from being reused meanwhile
        return key, delta // size, tuple(s // size for s in arr.strides)

    def _add(self, root):
        self.data.append(root.astype(root.dtype.newbyteorder("<"), copy=False).tobytes())
        return len(self.data) - 1


def _contiguous_strides(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


class _Pickler:
    """Protocol 2 opcodes of the values torch's weights_only unpickler reads (no memo: a container referred to
    twice is written twice; tensors keep sharing their storages)."""

    def __init__(self):
        self.out, self.storages, self._open = bytearray(b"\x80\x02"), _Storages(), set()

    def dump(self, obj):
        self.save(obj, "obj")
        self.out += b"."

    def save(self, obj, where):
        out = self.out
        if obj is None:
            out += b"N"
        elif obj is True or obj is False:
            out += b"\x88" if obj else b"\x89"
        elif type(obj).__module__ == "numpy":
            raise TypeError(f"save(): {where} is a NumPy {type(obj).__name__}; torch.load(weights_only=True) cannot "
                            f"read NumPy objects: save a tensor (torch.from_numpy) or a Python number (.item())")
        elif isinstance(obj, int):
            self._int(obj, where)
        elif isinstance(obj, float):
            out += b"G" + struct.pack(">d", obj)
        elif isinstance(obj, _face_types()):      # (before str: a device is one)
            self._face_value(obj)
        elif isinstance(obj, str):
            self._str(obj)
        elif isinstance(obj, Tensor):
            self._tensor(obj)
        elif isinstance(obj, (dict, list, tuple)):
            if id(obj) in self._open:
                raise ValueError(f"save(): {where} contains itself; torch.save files hold no cycles minifp writes")
            self._open.add(id(obj))
            self._container(obj, where)
            self._open.discard(id(obj))
        else:
            raise TypeError(f"save(): {where} is a {type(obj).__name__}; minifp writes files that "
                            f"torch.load(weights_only=True) reads: tensors, dtypes, devices, dicts, OrderedDicts, "
                            f"lists, tuples, int, float, str, bool and None")

    def _face_value(self, obj):
        """A dtype as torch pickles it (the global torch.<name>), a device as torch.device(type[, index])."""
        if hasattr(obj, "fmt"):
            self.out += f"ctorch\n{obj.name}\n".encode()
            return
        self.out += b"ctorch\ndevice\n"
        self._str(obj.type)
        if obj.index is None:
            self.out += b"\x85R"
        else:
            self._int(obj.index, "index")
            self.out += b"\x86R"

    def _int(self, n, where):
        if 0 <= n < 256:
            self.out += b"K" + bytes([n])
        elif 0 <= n < 65536:
            self.out += b"M" + struct.pack("<H", n)
        elif -2 ** 31 <= n < 2 ** 31:
            self.out += b"J" + struct.pack("<i", n)
        else:
            data = int(n).to_bytes((n.bit_length() + 8) // 8, "little", signed=True)
            if len(data) > 255:
                raise ValueError(f"save(): {where} is an integer of {n.bit_length()} bits; at most 2039 bits")
            self.out += b"\x8a" + bytes([len(data)]) + data                  # LONG1

    def _str(self, s):
        data = s.encode("utf-8", "surrogatepass")
        self.out += b"X" + struct.pack("<I", len(data)) + data

    def _container(self, obj, where):
        out = self.out
        if isinstance(obj, tuple):
            if len(obj) == 0:
                out += b")"
                return
            out += b"(" if len(obj) > 3 else b""
            for i, v in enumerate(obj):
                self.save(v, f"{where}[{i}]")
            out += b"t" if len(obj) > 3 else b"\x85\x86\x87"[len(obj) - 1:len(obj)]
        elif isinstance(obj, list):
            out += b"]"
            if obj:
                out += b"("
                for i, v in enumerate(obj):
                    self.save(v, f"{where}[{i}]")
                out += b"e"                                                 # APPENDS
        else:
            ordered = isinstance(obj, collections.OrderedDict)
            out += _ORDERED_DICT if ordered else b"}"
            if obj:
                out += b"("
                for k, v in obj.items():
                    if not _key(k):
                        raise TypeError(f"save(): {where} has a key {k!r} of type {type(k).__name__}; keys must be "
                                        f"str, int, float, bool, None or tuples of them")
                    self.save(k, f"{where}")
                    self.save(v, f"{where}[{k!r}]")
                out += b"u"                                                 # SETITEMS
            if ordered and vars(obj):                                       # a state_dict's _metadata
                self.save(dict(vars(obj)), f"{where}.__dict__")
                out += b"b"                                                 # BUILD

    def _tensor(self, t):
        from .nn import Parameter
        # A Parameter that requires grad is written as one; others (minifp's Adam keeps its 0-dim step count in
        # a Parameter that does not) as the plain tensors PyTorch would have.
        param = isinstance(t, Parameter) and t.requires_grad
        name, arr = _storage_of(t)
        key, offset, strides = self.storages.place(arr)
        out, legacy = self.out, LEGACY.get(name)
        if param:
            out += b"ctorch._utils\n_rebuild_parameter\n("
        out += b"ctorch._utils\n_rebuild_tensor_v2\n((" if legacy else b"ctorch._utils\n_rebuild_tensor_v3\n(("
        self._str("storage")
        out += f"ctorch\n{legacy}\n".encode() if legacy else b"ctorch.storage\nUntypedStorage\n"
        self._str(str(key))
        self._str("cuda:0" if str(t.device).startswith("cuda") else "cpu")
        self._int(len(self.storages.data[key]) // (arr.dtype.itemsize if legacy else 1), "numel")
        out += b"tQ"                                                        # TUPLE, BINPERSID
        self._int(offset, "offset")
        self.save(tuple(arr.shape), "size")
        self.save(strides, "stride")
        out += b"\x88" if t.requires_grad and not param else b"\x89"
        out += _ORDERED_DICT
        out += b"tR" if legacy else f"ctorch\n{name}\ntR".encode()
        if param:
            out += b"\x88" + _ORDERED_DICT + b"tR"


def _face_types():
    """minifp.torch's dtype and device classes, which torch files hold as torch's globals."""
    from ._device import device
    from ._tensor import dtype
    return dtype, device


def _key(k):
    """Whether k is a dict key minifp writes: a primitive, or a tuple of them."""
    if isinstance(k, tuple):
        return all(_key(v) for v in k)
    return isinstance(k, (str, int, float, type(None))) and type(k).__module__ != "numpy"


def _storage_of(t):
    """(torch dtype name, host storage array) of a tensor; formats torch has no dtype for (tf32, custom) are
    written as their float32 values, which they hold exactly."""
    from ._tensor import as_dtype
    arr = to_numpy(storage(t))
    if t.fmt is None:
        name = arr.dtype.name
        if name not in NUMPY:
            raise TypeError(f"save(): a tensor of NumPy dtype {name}, which torch files written by minifp do not hold")
        return name, arr
    d = as_dtype(t.fmt)
    if getattr(d, "name", None) in NUMPY and arr.dtype == np.dtype(NUMPY[d.name]):
        return d.name, arr
    return "float32", t.float32()


# -- reading ------------------------------------------------------------------------------------------------------


def loads(data, where, locate):
    """The object in torch.save archive `data`, its tensors minifp.torch tensors on locate(saved location), and
    the number of float64 tensors rounded to float32. Refuses, before making any tensor, every file that
    PyTorch's weights_only=True would, and those holding what minifp cannot (complex, quantized, sparse)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        names = set(archive.namelist())
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, struct.error) as e:
        raise ArchiveError(f"PytorchStreamReader failed reading zip archive: failed finding central directory "
                           f"({where}: {e}); the file is truncated or damaged, not a complete torch.save file "
                           f"(nor a safetensors file: in PyTorch, safetensors.torch.save_file(model.state_dict(), "
                           f"path) writes one)") from None
    prefix = _prefix(names, where)
    big = _byteorder(archive, prefix, names, where)
    unpickler = _Unpickler(io.BytesIO(_record(archive, prefix + "data.pkl", where)))
    try:
        tree = unpickler.load()
    except pickle.UnpicklingError as e:
        raise pickle.UnpicklingError(refusal(str(e))) from None
    except (EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, MemoryError,
            UnicodeDecodeError, struct.error, RecursionError) as e:
        raise pickle.UnpicklingError(refusal(f"{type(e).__name__}: {e}")) from None
    raw, devices = {}, {}
    for recipe in unpickler.recipes:              # every record, device and view checked before any tensor is made
        s = recipe.storage
        if s.key not in raw:
            raw[s.key], devices[s.key] = _storage_bytes(archive, prefix, s, where), locate(s.location)
        _check(recipe)
    build = _Builder(raw, devices, big)
    try:
        return _finish(tree, build, {}), build.widened
    except RecursionError:
        raise pickle.UnpicklingError(refusal("the object is nested too deeply")) from None


def refusal(message):
    """torch.load's wording for a refused pickle, with what minifp admits."""
    return ("Weights only load failed. minifp.torch.load reads what PyTorch's weights_only=True reads (tensors, "
            "storages, OrderedDict and containers of ints, floats, strings, bools and None), imports nothing and "
            "calls nothing else, and has no weights_only=False.\n\nWeightsUnpickler error: " + message)


def _prefix(names, where):
    """`name/`, the folder of the archive's records (its data.pkl's)."""
    tops = sorted(n[:-len("data.pkl")] for n in names if n.endswith("/data.pkl") and n.count("/") == 1)
    if not tops:
        raise ArchiveError(f"PytorchStreamReader failed locating file data.pkl: file not found ({where} is a zip "
                           f"archive, not one torch.save wrote)")
    if len(tops) > 1:
        raise ArchiveError(f"{where}: a torch.save archive has one data.pkl, this one has {len(tops)}: {tops}")
    if tops[0] + "constants.pkl" in names:
        raise ArchiveError(f"{where} is a TorchScript archive (torch.jit.save); minifp reads torch.save files only")
    return tops[0]


def _byteorder(archive, prefix, names, where):
    """True when the archive's storages are big-endian (torch writes a 'byteorder' record; none means little)."""
    if prefix + "byteorder" not in names:
        return False
    order = _record(archive, prefix + "byteorder", where)
    if order not in (b"little", b"big"):
        raise ValueError("Unknown endianness type: " + order.decode("utf-8", "replace"))
    return order == b"big"


def _info(archive, name, where):
    """The zip entry of a record, which must be there."""
    try:
        return archive.getinfo(name)
    except KeyError:
        raise ArchiveError(f"PytorchStreamReader failed locating file {name.partition('/')[2]}: file not found "
                           f"({where})") from None


def _record(archive, name, where):
    """A record's bytes (a compressed one only if deflate could give its size: no zip bomb is inflated)."""
    info = _info(archive, name, where)
    if info.compress_type != zipfile.ZIP_STORED and info.file_size > 1100 * info.compress_size + 1024:
        raise ArchiveError(f"{where}: record {name} claims {info.file_size} bytes from {info.compress_size} "
                           f"compressed ones, more than deflate can give")
    try:
        return archive.read(info)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, struct.error, zlib.error) as e:
        raise ArchiveError(f"PytorchStreamReader failed reading record {name}: {e} ({where} is truncated or "
                           f"damaged)") from None


def _storage_bytes(archive, prefix, s, where):
    """A storage's record, checked to be exactly as long as its persistent id says before it is read."""
    itemsize = 1 if s.dtype is None else np.dtype(NUMPY[s.dtype]).itemsize
    nbytes, name = s.numel * itemsize, f"{prefix}data/{s.key}"
    size = _info(archive, name, where).file_size
    if size != nbytes:
        raise RuntimeError(f"record size ({size} bytes) does not match expected size ({nbytes} bytes = {s.numel} "
                           f"elements * {itemsize} bytes/element) for dtype {s.dtype or 'uint8'} (storage "
                           f"{s.key!r} of {where})")
    return _record(archive, name, where)


def _check(r):
    """A view must lie inside its storage (torch's setStorage check), and only floats may require grad."""
    if r.requires_grad and r.dtype not in _FLOATS:
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    itemsize = np.dtype(NUMPY[r.dtype]).itemsize
    available = r.storage.numel * (1 if r.storage.dtype is None else np.dtype(NUMPY[r.storage.dtype]).itemsize)
    needed = 0 if 0 in r.size else r.offset + 1 + sum((n - 1) * s for n, s in zip(r.size, r.stride))
    if needed * itemsize > available:
        raise RuntimeError(f"setStorage: sizes {list(r.size)}, strides {list(r.stride)}, storage offset {r.offset}, "
                           f"and itemsize {itemsize} requiring a storage size of {needed * itemsize} are out of "
                           f"bounds for storage of size {available}")


class _Builder:
    """Makes the tensors of checked recipes: each its own contiguous copy of its view."""

    def __init__(self, raw, devices, big):
        self.raw, self.devices, self.big, self.widened = raw, devices, big, 0

    def __call__(self, r):
        from . import Tensor as TorchTensor, _device
        from .nn import Parameter
        dt = np.dtype(NUMPY[r.dtype])
        raw = self.raw[r.storage.key]
        words = np.dtype(f"{'>' if self.big else '<'}u{dt.itemsize}")         # the raw words, in the file's order
        flat = np.frombuffer(raw, words, len(raw) // dt.itemsize)
        if 0 in r.size:
            arr = np.zeros(r.size, words.newbyteorder("="))
        else:                                    # strided over the raw words (as_strided knows no ml_dtypes)
            arr = np.lib.stride_tricks.as_strided(flat[r.offset:], r.size, [s * dt.itemsize for s in r.stride])
            arr = np.array(arr, words.newbyteorder("="), order="C")        # its own copy, native order, writable
        arr = arr != 0 if dt == np.bool_ else arr.view(dt)                          # a bool is 0 or 1, never 2
        if r.dtype == "float64":
            arr, self.widened = arr.astype(np.float32), self.widened + 1
        from ._tensor import DTYPES
        fmt = DTYPES["float32" if r.dtype == "float64" else r.dtype].fmt
        where = self.devices[r.storage.key]
        t = make(TorchTensor, _device.array_on(arr, where), fmt, r.requires_grad and not r.parameter, where)
        return Parameter(t, r.requires_grad) if r.parameter else t


_PRIMITIVES = (str, int, float, bool, bytes, type(None))


def _finish(obj, build, memo):
    """The unpickled tree (checked by _scan) with each recipe made a tensor; shared objects stay shared."""
    kind = type(obj)
    if kind in _PRIMITIVES:
        return obj
    if id(obj) in memo:
        return memo[id(obj)]
    if kind is _Recipe:
        out = memo[id(obj)] = build(obj)
    elif kind is _Marker:                                         # a torch.device or dtype (checked by _scan)
        from . import device
        from ._tensor import as_dtype
        out = memo[id(obj)] = device(*obj.dtype) if obj.kind == "device" else as_dtype(obj.dtype)
    elif kind is list:
        out = memo[id(obj)] = []
        out.extend(_finish(v, build, memo) for v in obj)
    elif kind is tuple:
        out = memo[id(obj)] = tuple(_finish(v, build, memo) for v in obj)
    else:
        out = memo[id(obj)] = kind()
        for k, v in obj.items():
            out[_finish(k, build, memo)] = _finish(v, build, memo)
        for name, v in (vars(obj).items() if kind is collections.OrderedDict else ()):
            setattr(out, name, _finish(v, build, memo))                   # a state_dict's _metadata
    return out


# -- the stand-ins find_class answers with ------------------------------------------------------------------------


class _StandIn:
    """Base of every object find_class and persistent_load give: no __dict__, and BUILD on it is refused."""

    __slots__ = ()
    what = "stand-in"

    def __setstate__(self, state):
        raise pickle.UnpicklingError(f"Can only build Tensor, Parameter or OrderedDict, but got a {self.what}")


class _Global(_StandIn):
    """An allowed callable global (a rebuild function, torch.Size, ...): calls its checking stand-in."""

    __slots__ = ("name", "fn")

    def __init__(self, name, fn):
        self.name, self.fn = name, fn

    what = property(lambda self: f"function {self.name}")

    def __call__(self, *args):
        return self.fn(self.name, *args)


class _Marker(_StandIn):
    """A storage type (torch.FloatStorage: dtype 'float32'; torch.UntypedStorage: None), a dtype (torch.float16:
    'float16') or a device (torch.device('cuda', 0): its arguments)."""

    __slots__ = ("kind", "dtype")

    def __init__(self, kind, dtype):
        self.kind, self.dtype = kind, dtype

    what = property(lambda self: f"{self.kind} {self.dtype}")


class _Storage(_StandIn):
    """A storage named by a persistent id: its record's key, dtype (None: untyped bytes), location and numel."""

    __slots__ = ("key", "dtype", "location", "numel")
    what = "bare storage"

    def __init__(self, key, dtype, location, numel):
        self.key, self.dtype, self.location, self.numel = key, dtype, location, numel


class _Recipe(_StandIn):
    """A tensor to make once the whole file has been read and checked."""

    __slots__ = ("storage", "offset", "size", "stride", "dtype", "requires_grad", "parameter")
    what = "tensor"

    def __init__(self, storage, offset, size, stride, dtype, requires_grad, parameter=False):
        self.storage, self.offset, self.size, self.stride = storage, offset, size, stride
        self.dtype, self.requires_grad, self.parameter = dtype, requires_grad, parameter


def _fail(name, message):
    raise pickle.UnpicklingError(f"{name}: {message}")


def _ints(name, what, value, length=None):
    """A tuple of non-negative ints (a size or stride), checked."""
    if type(value) is not tuple or not all(type(v) is int and v >= 0 for v in value):
        _fail(name, f"{what} must be a tuple of non-negative ints, got {value!r:.200}")
    if len(value) > 64 or length is not None and len(value) != length:
        _fail(name, f"{what} has {len(value)} dimensions; expected {length if length is not None else 'at most 64'}")
    return value


def _no_hooks(name, hooks):
    if type(hooks) not in (dict, collections.OrderedDict) or hooks:
        _fail(name, f"backward_hooks must be an empty OrderedDict, got {hooks!r:.200}")


def _rebuild_tensor(name, *args):
    """_rebuild_tensor(storage, offset, size, stride), _v2(..., requires_grad, backward_hooks[, metadata]) and
    _v3(..., requires_grad, backward_hooks, dtype[, metadata])."""
    v3, v1 = name.endswith("v3"), not name.endswith(("v2", "v3"))
    lo, hi = (4, 4) if v1 else (7, 8) if v3 else (6, 7)
    if not lo <= len(args) <= hi:
        _fail(name, f"takes {lo}" + (f" to {hi}" if hi > lo else "") + f" arguments, got {len(args)}")
    storage, offset, size, stride = args[:4]
    if type(storage) is not _Storage or (storage.dtype is None) != v3:
        _fail(name, f"storage must be a{'n untyped' if v3 else ' typed'} storage (a persistent id), got "
                    f"{getattr(storage, 'what', type(storage).__name__)}")
    if type(offset) is not int or offset < 0:
        _fail(name, f"storage_offset must be a non-negative int, got {offset!r:.200}")
    size = _ints(name, "size", size)
    stride = _ints(name, "stride", stride, len(size))
    requires_grad = False if v1 else args[4]
    if type(requires_grad) is not bool:
        _fail(name, f"requires_grad must be a bool, got {requires_grad!r:.200}")
    if not v1:
        _no_hooks(name, args[5])
    dtype = storage.dtype
    if v3:
        if type(args[6]) is not _Marker or args[6].kind != "dtype":
            _fail(name, f"dtype must be a torch dtype, got {args[6]!r:.200}")
        dtype = args[6].dtype
    metadata = args[hi - 1] if len(args) == hi and not v1 else None
    if metadata is not None and (type(metadata) is not dict or any(v is not False for v in metadata.values())):
        _fail(name, f"tensor metadata {metadata!r:.200}: minifp holds no conjugate or negative views")
    return _Recipe(storage, offset, size, stride, dtype, requires_grad)


def _rebuild_parameter(name, *args):
    """_rebuild_parameter(data, requires_grad, backward_hooks) and _rebuild_parameter_with_state(..., state)."""
    n = 4 if name.endswith("with_state") else 3
    if len(args) != n:
        _fail(name, f"takes {n} arguments, got {len(args)}")
    data, requires_grad = args[:2]
    if type(data) is not _Recipe or data.parameter:
        _fail(name, f"data must be a tensor, got {getattr(data, 'what', type(data).__name__)}")
    if type(requires_grad) is not bool:
        _fail(name, f"requires_grad must be a bool, got {requires_grad!r:.200}")
    _no_hooks(name, args[2])
    if n == 4 and args[3] not in (None, {}):
        _fail(name, f"minifp's parameters take no Python attributes, got state {args[3]!r:.200}")
    return _Recipe(data.storage, data.offset, data.size, data.stride, data.dtype, requires_grad, parameter=True)


def _size(name, *args):
    """torch.Size(sizes): the tuple of ints."""
    if len(args) > 1:
        _fail(name, f"takes at most 1 argument, got {len(args)}")
    return _ints(name, "sizes", tuple(args[0]) if args and type(args[0]) in (tuple, list) else args[0] if args else ())


def _device(name, *args):
    """torch.device(type[, index]): checked here, made a minifp.torch device once the whole file is read."""
    from . import device
    if not 1 <= len(args) <= 2 or type(args[0]) is not str or len(args) == 2 and type(args[1]) is not int:
        _fail(name, f"takes (str[, int]), got {args!r:.200}")
    try:
        device(*args)
    except RuntimeError as e:
        _fail(name, str(e))
    return _Marker("device", args)


def _encode(name, *args):
    """_codecs.encode(text, 'latin1'): how protocol 2 pickles bytes."""
    if len(args) != 2 or type(args[0]) is not str or args[1] not in ("latin1", "latin-1"):
        _fail(name, f"only encode(str, 'latin1') is allowed, got {args!r:.200}")
    return args[0].encode("latin1")


def _allowed():
    """(module, name) -> stand-in: what the find_class below admits."""
    table = {("collections", "OrderedDict"): collections.OrderedDict,
             ("_codecs", "encode"): _Global("_codecs.encode", _encode),
             ("torch", "Size"): _Global("torch.Size", _size), ("torch", "device"): _Global("torch.device", _device),
             ("torch.storage", "UntypedStorage"): _Marker("storage type", None),
             ("torch", "UntypedStorage"): _Marker("storage type", None)}
    for fn in ("_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_tensor_v3"):
        table["torch._utils", fn] = _Global(f"torch._utils.{fn}", _rebuild_tensor)
    for fn in ("_rebuild_parameter", "_rebuild_parameter_with_state"):
        table["torch._utils", fn] = _Global(f"torch._utils.{fn}", _rebuild_parameter)
    for dtype, legacy in LEGACY.items():
        table["torch", legacy] = _Marker("storage type", dtype)
    for dtype in NUMPY:
        table["torch", dtype] = _Marker("dtype", dtype)
    return table


_ALLOWED = _allowed()
_DTYPE_NAME = re.compile(r"(u?int\d+|complex\d+|float\d\w*|q\w*int\w*|bits\w+|c(half|float|double))$")
_BLOCKED = ("sys", "os", "posix", "nt")             # never allowed, whatever the name (torch's wording for them)


class _Unpickler(pickle.Unpickler):
    """Unpickles with only the stand-ins above: find_class imports nothing; persistent_load takes storages only."""

    def __init__(self, file):
        super().__init__(file)
        self.storages, self.recipes = {}, []

    def find_class(self, module, name):
        found = _ALLOWED.get((module, name))
        if found is not None:
            return found
        module = {"__builtin__": "builtins", "copy_reg": "copyreg"}.get(module, module)
        if module.partition(".")[0] in _BLOCKED:
            raise pickle.UnpicklingError(f"Trying to load unsupported GLOBAL {module}.{name} whose module "
                                         f"{module} is blocked.")
        path = name if module == "builtins" else f"{module}.{name}"
        if module in ("torch", "torch.storage") and (name.endswith("Storage") or _DTYPE_NAME.match(name)):
            raise pickle.UnpicklingError(f"GLOBAL {path}: minifp holds no tensors of this type; its dtypes: "
                                         f"{', '.join(NUMPY)} (float64 read as float32)")
        raise pickle.UnpicklingError(f"Unsupported global: GLOBAL {path} was not an allowed global by default.")

    def persistent_load(self, pid):
        if type(pid) is not tuple or len(pid) != 5 or pid[0] not in ("storage", b"storage"):
            raise pickle.UnpicklingError(f"Only persistent_load of storage is allowed, but got {pid!r:.200}")
        _, kind, key, location, numel = pid
        if type(kind) is not _Marker or kind.kind != "storage type":
            raise pickle.UnpicklingError(f"persistent id: {kind!r:.200} is not a storage type")
        if type(key) is not str or type(location) is not str or type(numel) is not int or numel < 0:
            raise pickle.UnpicklingError(f"persistent id must be ('storage', type, key: str, location: str, "
                                         f"numel: int >= 0), got {pid!r:.200}")
        s = self.storages.setdefault(key, _Storage(key, kind.dtype, location, numel))
        if (s.dtype, s.location, s.numel) != (kind.dtype, location, numel):
            raise pickle.UnpicklingError(f"storage {key!r} is named twice with different types or sizes")
        return s

    def load(self):
        out = super().load()
        self.recipes = _scan(out)
        return out


def _scan(tree):
    """Every recipe in the tree (each shared one once), after checking that the tree holds nothing but containers
    of primitives and tensors; iterative, so a deep tree is no recursion."""
    seen, found, todo = set(), [], [tree]
    while todo:
        obj = todo.pop()
        kind = type(obj)
        if kind in _PRIMITIVES or kind is _Marker and obj.kind in ("device", "dtype") or id(obj) in seen:
            continue
        seen.add(id(obj))
        if kind is _Recipe:
            found.append(obj)
        elif kind in (list, tuple):
            todo.extend(obj)
        elif kind in (dict, collections.OrderedDict):
            attributes = vars(obj) if kind is collections.OrderedDict else {}
            bad = [k for k in obj if type(k) not in _PRIMITIVES and type(k) is not tuple]
            bad += [k for k in attributes if type(k) is not str]
            if bad:
                raise pickle.UnpicklingError(f"a dict key (or attribute name) of type {type(bad[0]).__name__}")
            todo.extend(obj.keys())
            todo.extend(obj.values())
            todo.extend(attributes.values())
        else:
            raise pickle.UnpicklingError(f"the file holds a {getattr(obj, 'what', kind.__name__)}, which is not "
                                         f"a tensor nor a container of primitives")
    return found
