"""`minifp.torch.save` and `minifp.torch.load`: PyTorch's own zip format, read without running code, and safetensors.

Which format: `load` decides by the file's content (a zip archive is torch.save's format, anything else is
read as safetensors); `save` by the destination: a file object or a name ending in .pt, .pth, .tar, .ckpt, .bin,
.pkl or .pickle gets PyTorch's zip format (what torch.save writes and torch.load(f, weights_only=True) reads: any
nesting of dicts, OrderedDicts, lists and tuples of tensors, ints, floats, strings, bools and None); every other
name, .safetensors included, gets a safetensors state_dict, as minifp always wrote.

Loading a zip file has PyTorch's weights_only=True semantics and nothing more: only tensors, storages,
OrderedDict and containers of primitives are admitted, nothing is imported or called (minifp/torch/_torchfile.py
says how); weights_only=False reads the same way (minifp never unpickles anything else, so a file that needs more is
refused either way). A tensor comes back as its own contiguous copy: views and storages
shared in the file give equal values, not shared memory. Safetensors files are written and read through the
`safetensors` package, an optional extra (`pip install "minifp[safetensors]"`); a state_dict saved from real
PyTorch with `safetensors.torch.save_file(model.state_dict(), path)` loads here with bit-identical values.
"""
from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import Mapping

import ml_dtypes
import numpy as np

from ..engine import atomic_file, Format, make, round_to, storage, Tensor, to_numpy
from . import _torchfile

__all__ = ["load", "save"]

# safetensors dtype codes -> (NumPy storage dtype, minifp.torch dtype name). Every one of them is read bit for
# bit; F64 has no minifp format and is rounded to float32 on load (with a warning).
_CODES = {"F32": (np.float32, "float32"), "F16": (np.float16, "float16"), "BF16": (ml_dtypes.bfloat16, "bfloat16"),
          "F8_E4M3": (ml_dtypes.float8_e4m3fn, "float8_e4m3fn"), "F8_E5M2": (ml_dtypes.float8_e5m2, "float8_e5m2"),
          "F64": (np.float64, "float64"), "I64": (np.int64, "int64"), "I32": (np.int32, "int32"),
          "I16": (np.int16, "int16"), "I8": (np.int8, "int8"), "U8": (np.uint8, "uint8"), "BOOL": (np.bool_, "bool")}
_SAVABLE = {np.dtype(d) for d, _ in _CODES.values()}
_FORMATS_KEY = "minifp.formats"     # metadata: formats with no safetensors dtype (tf32, custom), stored as float32
_EXTRA = 'the safetensors package (pip install "minifp[safetensors]" or pip install safetensors)'


def _safetensors():
    """The safetensors package, or an ImportError that names the extra providing it."""
    try:
        import safetensors
        import safetensors.numpy
    except ImportError as e:
        raise ImportError(f"minifp.torch.save/load read and write safetensors files and need {_EXTRA}") from e
    return safetensors


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Write obj to `f` (a path or a binary file): PyTorch's zip format, or safetensors for other names (see above).

    Everything is checked before anything is written, and a path is written atomically: into a temporary file
    in the same folder, then renamed over `f`, so a crash never leaves a half-written checkpoint.
    pickle_module must stay None: minifp writes its pickles opcode by opcode (protocol 2, torch.save's).
    """
    if not _is_path(f) and not hasattr(f, "write"):
        raise TypeError(f"save(): f must be a file path (str or os.PathLike) or a binary file object, "
                        f"got {type(f).__name__}")
    if _is_path(f) and not _torch_name(f):
        _no_pickle("save", pickle_module=pickle_module, pickle_protocol=pickle_protocol)
        data = _safetensors_bytes(obj)
    else:
        _no_pickle("save", pickle_module=pickle_module, pickle_protocol=None if pickle_protocol == 2 else
                   pickle_protocol)
        if not _use_new_zipfile_serialization or _disable_byteorder_record:
            raise ValueError("save(): minifp writes only the zip format with its byteorder record (leave "
                             "_use_new_zipfile_serialization and _disable_byteorder_record unset)")
        name = os.path.splitext(os.path.basename(os.fsdecode(f)))[0] if _is_path(f) else "archive"
        data = _torchfile.dumps(obj, name)
    if _is_path(f):
        with atomic_file(os.fspath(f)) as out:
            out.write(data)
    else:
        f.write(data)


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **pickle_load_args):
    """The object in `f` (a path or a binary file): a torch.save zip archive or a safetensors state_dict.

    Tensors come back as minifp.torch tensors of the file's dtype, bit for bit (float32, float16, bfloat16,
    float8, integers, bool); float64 becomes float32 (with a warning), as minifp has no float64. map_location:
    None (the device each tensor was saved from), a device or its name ("cpu", "cuda"), or for zip files a dict
    of saved location -> location. Nothing in the file is ever executed, whatever weights_only says (False reads
    what True reads); mmap is accepted and the file read into memory.
    """
    _no_pickle("load", pickle_module=pickle_module, **pickle_load_args)
    data, where = _read(f)
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):           # a zip archive: torch.save's format since PyTorch 1.6
        out, widened = _torchfile.loads(data, where, _locator(map_location))
        if widened:
            warnings.warn(f"load(): {where}: {widened} float64 tensors were rounded to float32 (minifp has no "
                          f"float64 tensors)", stacklevel=2)
        return out
    device = _device(map_location)
    st = _safetensors()
    try:
        entries = st.deserialize(data)
    except Exception as e:            # SafetensorError and friends: the message says what is wrong
        raise ValueError(f"load(): {where} is not a safetensors file ({e}){_hint(data)}") from None
    formats = _formats(data, where)
    out, widened = {}, []
    for key, entry in sorted(entries):
        if entry["dtype"] not in _CODES:
            raise ValueError(f"load(): {where}: tensor {key!r} has dtype {entry['dtype']}, which minifp cannot hold; "
                             f"valid dtypes: {', '.join(_CODES)}")
        storage, name = _CODES[entry["dtype"]]
        arr = np.frombuffer(entry["data"], np.dtype(storage).newbyteorder("<")).reshape(entry["shape"])
        arr = arr.astype(np.dtype(storage), copy=True)       # native byte order, writable, owned
        if name == "float64":
            widened.append(key)
        out[key] = _tensor(arr, name, formats.get(key), device)
    if widened:
        warnings.warn(f"load(): {where}: float64 tensors {widened} were rounded to float32 (minifp has no "
                      f"float64 tensors)", stacklevel=2)
    return out


# Names whose files get PyTorch's zip format (others get safetensors, as minifp always wrote).
_TORCH_SUFFIXES = (".pt", ".pth", ".tar", ".ckpt", ".bin", ".pkl", ".pickle")


def _torch_name(f):
    """Whether the path names a PyTorch checkpoint by its suffix."""
    return os.fsdecode(f).lower().endswith(_TORCH_SUFFIXES)


def _safetensors_bytes(obj):
    """A state_dict as a safetensors file's bytes (every check first)."""
    arrays, formats = _arrays(obj)
    st = _safetensors()
    metadata = {"format": "pt"}                          # what safetensors.torch writes; other readers expect it
    if formats:
        metadata[_FORMATS_KEY] = json.dumps(formats, sort_keys=True)
    return st.numpy.save(arrays, metadata=metadata)


# -- save -------------------------------------------------------------------------------


_ZIP_HINT = ("; to save a checkpoint of other objects (an optimizer's state, numbers, nesting), name the file "
             ".pt or .pth (PyTorch's zip format)")


def _arrays(obj):
    """The NumPy arrays to write, per key, and the formats that safetensors has no dtype for (tf32, custom)."""
    if not isinstance(obj, Mapping):
        raise TypeError(f"save(): obj must be a state_dict (a dict of str -> tensors; safetensors holds nothing "
                        f"else), got {type(obj).__name__}" + ("; save its .state_dict()" if hasattr(obj, "state_dict")
                                                             else "") + _ZIP_HINT)
    arrays, formats = {}, {}
    for key, value in obj.items():
        if not isinstance(key, str):
            raise TypeError(f"save(): state_dict keys must be str, got {key!r} ({type(key).__name__})" + _ZIP_HINT)
        arr, fmt = _array(key, value)
        arrays[key] = arr if arr.flags.c_contiguous else arr.copy(order="C")     # ascontiguousarray makes 0-d 1-d
        if fmt is not None:
            formats[key] = {"exp_bits": fmt.exp_bits, "man_bits": fmt.man_bits, "subnormals": fmt.subnormals,
                            "overflow": fmt.overflow, "infinities": fmt.infinities, "nan": fmt.nan, "bias": fmt.bias,
                            "signed": fmt.signed}
    return arrays, formats


def _array(key, value):
    """(array, Format or None): the storage of one value, and its format when the storage does not name it."""
    if isinstance(value, Tensor):
        arr = to_numpy(storage(value))
        if value.fmt is not None and not (value.fmt.native or value.fmt.is_float32):
            return arr.astype(np.float32), value.fmt         # tf32 and custom formats: exact in float32
    elif isinstance(value, np.ndarray) or isinstance(value, np.generic):
        arr = np.asarray(value)
    elif type(value).__module__.split(".")[0] == "torch" and hasattr(value, "detach"):
        arr = _from_torch(value)       # a real torch.Tensor, read without importing torch
    else:
        raise TypeError(f"save(): state_dict[{key!r}] is a {type(value).__name__}; safetensors files hold only "
                        f"tensors" + _ZIP_HINT)
    if arr.dtype not in _SAVABLE:
        raise TypeError(f"save(): state_dict[{key!r}] has dtype {arr.dtype}, which safetensors files written by "
                        f"minifp do not hold; valid dtypes: {', '.join(sorted(str(np.dtype(d)) for d in _SAVABLE))}")
    return arr, None


def _from_torch(t):
    """A real PyTorch tensor's values as a NumPy array of the same dtype, bit for bit (bfloat16 and float8 too)."""
    t = t.detach().cpu().contiguous()
    name = str(t.dtype).split(".")[-1]
    storage = {"bfloat16": ml_dtypes.bfloat16, "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
               "float8_e5m2": ml_dtypes.float8_e5m2}.get(name)
    if storage is None:
        return t.numpy()
    torch = sys.modules[type(t).__module__.split(".")[0]]     # already imported by whoever made `t`
    bits = t.reshape(-1).view(torch.uint8).numpy()           # NumPy has no bfloat16: move the raw bytes
    return bits.view(storage).reshape(tuple(t.shape))


# -- load -------------------------------------------------------------------------------


def _read(f):
    """(bytes, description) of a path or a binary file object."""
    if _is_path(f):
        where = repr(os.fspath(f))
        try:
            with open(f, "rb") as fh:
                return fh.read(), where
        except OSError as e:
            raise type(e)(f"load(): cannot open {where}: {e.strerror}") from None
    if hasattr(f, "read"):
        data = f.read()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"load(): f must be opened in binary mode ('rb'); its read() gave {type(data).__name__}")
        return bytes(data), "the file object"
    raise TypeError(f"load(): f must be a file path (str or os.PathLike) or a binary file object, "
                    f"got {type(f).__name__}")


def _hint(data):
    """Why a file is not safetensors, when it is a PyTorch pickle (zip archive or legacy pickle)."""
    if data[:1] == b"\x80":
        return ("; it looks like a pickle written by torch.save in its legacy format (before PyTorch 1.6, or with "
                "_use_new_zipfile_serialization=False) or by pickle itself, which minifp never loads (unpickling "
                "can run code): in PyTorch, save it again with torch.save(obj, path), or with "
                "safetensors.torch.save_file(model.state_dict(), path)")
    return ""


def _formats(data, where):
    """Per-key Formats recorded by minifp's save for tf32 and custom formats (an empty dict for other files)."""
    n = int.from_bytes(data[:8], "little")
    meta = json.loads(data[8:8 + n]).get("__metadata__") or {}   # plain JSON: deserialize has checked it
    try:
        return {k: Format(**v) for k, v in json.loads(meta.get(_FORMATS_KEY, "{}")).items()}
    except (TypeError, ValueError, AttributeError) as e:
        raise ValueError(f"load(): {where}: its {_FORMATS_KEY!r} metadata is not what minifp writes ({e})") from None


def _tensor(arr, name, fmt, device):
    """A face tensor over `arr` in dtype `name` (or Format `fmt`), bit for bit, on `device`."""
    from .. import torch
    from . import _device
    if name == "float64":
        arr = arr.astype(np.float32)                    # one rounding; the warning names these keys
    if fmt is not None:
        data = round_to(arr, fmt)                  # exact for what save wrote; a tampered file still rounds
    else:
        fmt = getattr(torch, "float32" if name == "float64" else name).fmt
        data = arr
    return make(torch.Tensor, _device.array_on(data, device), fmt, False, device)


def _device(map_location):
    """"cpu" or "cuda", as map_location names it (None: the CPU, where the file's bytes are)."""
    if map_location is None:
        return "cpu"
    if isinstance(map_location, dict) or callable(map_location):
        raise ValueError(f"load(): map_location must be None, a device or a device name ('cpu', 'cuda'), got "
                         f"{type(map_location).__name__} (safetensors files record no device to map from)")
    from . import _device
    return _device.parse(map_location)


def _locator(map_location):
    """location saved in a zip file ("cpu", "cuda:0") -> "cpu" or "cuda", as map_location maps it."""
    from . import _device
    if map_location is None or isinstance(map_location, dict):
        table = map_location or {}
        if not all(isinstance(k, str) for k in table):
            raise ValueError(f"load(): map_location's keys must be the saved locations ('cpu', 'cuda:0'), got "
                             f"{list(table)}")
        return lambda location: _device.parse(table.get(location, location))
    if callable(map_location) and not isinstance(map_location, _device.device):
        raise ValueError("load(): map_location must be None, a device, a device name or a dict of them; minifp "
                         "takes no function (it would receive PyTorch storages)")
    where = _device.parse(map_location)
    return lambda location: where


def _is_path(f):
    return isinstance(f, (str, bytes, os.PathLike))


def _no_pickle(fn, **arguments):
    """Refuse pickle options: minifp's pickling is its own, never a pickle module's."""
    given = {k: v for k, v in arguments.items() if v is not None}
    if given:
        raise TypeError(f"{fn}(): {', '.join(f'{k}={v!r}' for k, v in given.items())}: minifp.torch.{fn} will "
                        f"never pickle or unpickle with a pickle module (its zip files' pickles are written opcode "
                        f"by opcode, protocol 2, and read with a restricted unpickler); leave the pickle arguments "
                        f"unset")
