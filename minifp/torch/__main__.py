"""Run a PyTorch script on minifp, unchanged: `python -m minifp.torch script.py [args...]`.

Inside the script `import torch` (and `torch.nn`, `torchvision`, ...) import minifp.torch (and minifp.torch.nn,
minifp.torch.vision, ...); the script itself is not touched.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import runpy
import sys

__all__ = ["install", "main"]

ALIASES = {"torch": "minifp.torch", "torchvision": "minifp.torch.vision"}


def _target(name):
    head, dot, rest = name.partition(".")
    return ALIASES[head] + dot + rest if head in ALIASES else None


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports of torch.* (torchvision.*) give minifp's modules, under both names."""

    def find_spec(self, fullname, path=None, target=None):
        real = _target(fullname)
        if real is None or importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return importlib.import_module(_target(spec.name))      # the module itself keeps its own name

    def exec_module(self, module):
        """Already executed by its import under minifp's name."""


def install():
    """From now on `import torch` in this process is minifp.torch."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias())


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        sys.exit("usage: python -m minifp.torch script.py [args...]")
    install()
    sys.argv = argv
    runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
