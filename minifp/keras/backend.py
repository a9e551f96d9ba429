"""Keras's backend utilities: the session's automatic names, floatx, epsilon, the image data format."""
from __future__ import annotations

import collections
import re

__all__ = ["clear_session", "floatx", "set_floatx", "epsilon", "set_epsilon", "image_data_format",
           "set_image_data_format", "get_uid", "auto_name", "to_snake_case", "backend"]

_NAME_UIDS = collections.defaultdict(int)      # Keras's object_name_uids: prefix -> how many names given
_UIDS = collections.defaultdict(int)           # Keras's get_uid counters
_CONFIG = {"floatx": "float32", "epsilon": 1e-7, "image_data_format": "channels_last"}
_GLOBAL = {}                                   # Keras's global state that clear_session drops: the dtype policy


def clear_session(free_memory=True):
    """Reset Keras's global state: the names given so far (the next Dense is "dense" again) and the global
    dtype policy (back to floatx), as keras.backend.clear_session() does."""
    _GLOBAL.clear()
    _NAME_UIDS.clear()
    _UIDS.clear()


def to_snake_case(name):
    """Keras's class name -> layer name prefix: Dense -> dense, LayerNormalization -> layer_normalization."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def auto_name(prefix):
    """A unique name for an object of this kind: dense, dense_1, dense_2 ... (Keras's uniquify)."""
    prefix = to_snake_case(prefix)
    n = _NAME_UIDS[prefix]
    _NAME_UIDS[prefix] += 1
    return prefix if n == 0 else f"{prefix}_{n}"


def get_uid(prefix=""):
    """1, 2, 3 ... for successive calls with the same prefix (keras.backend.get_uid)."""
    _UIDS[prefix] += 1
    return _UIDS[prefix]


def floatx():
    """The default float dtype ("float32")."""
    return _CONFIG["floatx"]


def set_floatx(value):
    """Set the default float dtype: float16, bfloat16 or float32."""
    if value not in ("float16", "bfloat16", "float32", "float64"):
        raise ValueError(f"Unknown `floatx` value: {value}. Expected one of {{'float16', 'bfloat16', "
                         f"'float32', 'float64'}}")
    _CONFIG["floatx"] = str(value)


def epsilon():
    """The fuzz factor Keras adds in numeric expressions (1e-7)."""
    return _CONFIG["epsilon"]


def set_epsilon(value):
    """Set the fuzz factor."""
    _CONFIG["epsilon"] = float(value)


def image_data_format():
    """Where images keep their channels: "channels_last" (Keras's default)."""
    return _CONFIG["image_data_format"]


def set_image_data_format(data_format):
    """Set the default image layout: "channels_last" or "channels_first"."""
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(f"The `data_format` argument must be one of {{'channels_first', 'channels_last'}}. "
                         f"Received: data_format={data_format}")
    _CONFIG["image_data_format"] = data_format


def backend():
    """The name of the backend: "minifp"."""
    return "minifp"

from ._missing import missing as _missing  # noqa: E402

__getattr__ = _missing("minifp.keras.backend")
