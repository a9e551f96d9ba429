"""The error for a PyTorch name the face does not have yet: an AttributeError that says so and where the face's
coverage is listed."""
from __future__ import annotations

import sys

__all__ = ["COVERAGE", "missing", "explain_missing_methods"]

COVERAGE = "docs/torch_coverage.md"


def missing(where):
    """A module-level __getattr__ for module `where` ("minifp.torch", ...)."""
    def __getattr__(name):
        raise _error(f"module {where!r}", name)
    return __getattr__


def _error(what, name):
    if _dunder(name):                                       # Python's own probes (__path__, __wrapped__, ...)
        return AttributeError(f"{what} has no attribute {name!r}")
    return AttributeError(f"{what} has no attribute {name!r}: {name} is not part of minifp's PyTorch face yet "
                          f"(what the face covers: {COVERAGE} in minifp's repository)")


def _dunder(name):
    return name.startswith("__") and name.endswith("__")


def explain_missing_methods(cls):
    """Uncaught, a missing method of a `cls` instance gets a note pointing to the coverage table.

    Done where the error is shown, not by a `cls.__getattr__`: a class with one pays for it on every attribute read
    of its instances (5% of the digits MLP's step, benchmarks/torch_face.py --against)."""
    shown = sys.excepthook

    def excepthook(kind, error, traceback):
        name = getattr(error, "name", None)
        if (isinstance(error, AttributeError) and isinstance(getattr(error, "obj", None), cls) and name
                and not _dunder(name) and not getattr(error, "__notes__", None)):
            error.add_note(f"{name} is not part of minifp's PyTorch face yet (what the face covers: {COVERAGE} in "
                           f"minifp's repository)")
        shown(kind, error, traceback)

    sys.excepthook = excepthook
