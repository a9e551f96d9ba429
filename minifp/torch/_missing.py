"""The error for a PyTorch name the face does not have yet: an AttributeError that says so and where the face's
coverage is listed."""
from __future__ import annotations

__all__ = ["COVERAGE", "missing"]

COVERAGE = "docs/torch_coverage.md"


def missing(where):
    """A module-level __getattr__ for module `where` ("minifp.torch", ...)."""
    def __getattr__(name):
        raise _error(f"module {where!r}", name)
    return __getattr__


def _error(what, name):
    if name.startswith("__") and name.endswith("__"):       # Python's own probes (__path__, __wrapped__, ...)
        return AttributeError(f"{what} has no attribute {name!r}")
    return AttributeError(f"{what} has no attribute {name!r}: {name} is not part of minifp's PyTorch face yet "
                          f"(what the face covers: {COVERAGE} in minifp's repository)")
