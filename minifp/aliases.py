"""Run a framework's script unchanged on one of minifp's faces: `import torch` (or `keras`, `tensorflow`) in it
imports minifp.torch (minifp.keras, minifp.tf) instead. Each face's `python -m minifp.<face> script.py` uses this."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import runpy
import sys

__all__ = ["install", "run"]


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports of `name.*` for each name of `table` give the module the table maps it to, under both names."""

    def __init__(self, table):
        self.table = table

    def target(self, name):
        head, dot, rest = name.partition(".")
        return self.table[head] + dot + rest if head in self.table else None

    def find_spec(self, fullname, path=None, target=None):
        real = self.target(fullname)
        if real is None or importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return importlib.import_module(self.target(spec.name))      # the module itself keeps its own name

    def exec_module(self, module):
        """Already executed by its import under minifp's name."""


def install(table):
    """From now on in this process `import X` is `import table[X]` (e.g. {"torch": "minifp.torch"})."""
    for finder in sys.meta_path:
        if isinstance(finder, _Alias):
            finder.table.update(table)
            return
    sys.meta_path.insert(0, _Alias(dict(table)))


def run(table, argv, face):
    """Run the script argv[0] with arguments argv[1:] as __main__, the imports of `table` aliased."""
    if not argv:
        sys.exit(f"usage: python -m {face} script.py [args...]")
    install(table)
    sys.argv = list(argv)
    runpy.run_path(argv[0], run_name="__main__")
