"""The error for a Keras (or TensorFlow) name the faces do not have yet: an AttributeError that names it, says it
is not part of the face yet, and points to the coverage table. A module opts in with one line:

    __getattr__ = missing("minifp.keras.utils")

and `from minifp.keras.utils import Name` then fails with an ImportError carrying the same message."""
from __future__ import annotations

import dis
import sys

__all__ = ["COVERAGE", "missing"]

COVERAGE = "docs/keras_coverage.md"
_IMPORT_FROM = dis.opmap["IMPORT_FROM"]


def missing(where, face="Keras"):
    """A module-level __getattr__ for module `where`; face is "Keras" or "TensorFlow" (what the message names)."""
    def __getattr__(name):
        if name.startswith("__") and name.endswith("__"):      # Python's own probes (__path__, __wrapped__, ...)
            raise AttributeError(f"module {where!r} has no attribute {name!r}")
        message = (f"module {where!r} has no attribute {name!r}: {name} is not part of minifp's {face} face yet "
                   f"(what the face covers: {COVERAGE} in minifp's repository)")
        if _importing(sys._getframe(1)):
            # `from where import name`: Python would replace an AttributeError by a bare "cannot import name";
            # a submodule being imported (a circular import) is found as Python finds it.
            module = sys.modules.get(f"{where}.{name}")
            if module is not None:
                return module
            raise ImportError(message, name=where)
        raise AttributeError(message)
    return __getattr__


def _importing(frame):
    """Whether the code asking for the name (past the __getattr__s that delegate here) runs `from ... import`."""
    while frame is not None and frame.f_code.co_name == "__getattr__":
        frame = frame.f_back
    return frame is not None and frame.f_code.co_code[frame.f_lasti] == _IMPORT_FROM
