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
    """Shown uncaught (script or IPython), a missing method of a `cls` instance has a note pointing to the coverage.

    Done where the error is shown, not by a `cls.__getattr__`: a class with one pays for it on every attribute read
    of its instances (5% of the digits MLP's step, benchmarks/torch_face.py --against)."""
    def note(error):
        name = getattr(error, "name", None)
        if (isinstance(error, AttributeError) and isinstance(getattr(error, "obj", None), cls) and name
                and not _dunder(name) and not getattr(error, "__notes__", None)):
            error.add_note(f"{name} is not part of minifp's PyTorch face yet (what the face covers: {COVERAGE} in "
                           f"minifp's repository)")

    shown = sys.excepthook
    sys.excepthook = lambda kind, error, traceback: (note(error), shown(kind, error, traceback))[1]
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython else None
    if shell is not None and not shell.custom_exceptions:       # a notebook shows errors itself; leave others' own
        shell.set_custom_exc((AttributeError,), lambda shell, kind, error, traceback, tb_offset=None: (
            note(error), shell.showtraceback((kind, error, traceback), tb_offset=tb_offset))[1])
