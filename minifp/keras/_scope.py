"""Keras 3's name scopes: a variable's path is the names of the scopes open where it is made
("sequential/dense/kernel").

A layer opens its scope around its build and its call (Layer._open_name_scope), and remembers the path it was
first opened under, so that its variables keep one path wherever the layer is used later. The stack is per thread,
as Keras keeps it.
"""
from __future__ import annotations

import threading

__all__ = ["name_scope", "current_path", "joined"]

_LOCAL = threading.local()


def _stack():
    stack = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = _LOCAL.stack = []
    return stack


class name_scope:
    """keras.name_scope(name, caller=None, deduplicate=True, override_parent=None): a sub-namespace for variable
    paths. deduplicate: the same caller opening the same name again adds nothing; override_parent: the path this
    scope sits under instead of the scopes open around it (a layer's first parent path, by default)."""

    def __init__(self, name, caller=None, deduplicate=True, override_parent=None):
        if not isinstance(name, str) or "/" in name:
            raise ValueError(f"Argument `name` must be a string and cannot contain character `/`. "
                             f"Received: name={name}")
        if override_parent is None and deduplicate:
            override_parent = getattr(caller, "_parent_path", None)
        self.name, self.caller, self.deduplicate, self.override_parent = name, caller, deduplicate, override_parent
        self._pop_on_exit = False

    def __enter__(self):
        stack = _stack()
        if self.deduplicate and stack and self.caller is not None and stack[-1].caller is self.caller \
                and stack[-1].name == self.name:
            return self
        stack.append(self)
        self._pop_on_exit = True
        return self

    def __exit__(self, *exc):
        if self._pop_on_exit:
            self._pop_on_exit = False
            stack = _stack()
            if stack:
                stack.pop()


def current_path():
    """The open scopes' names joined by "/" (from the innermost one that overrides its parents)."""
    parts = []
    for entry in _stack():
        if entry.override_parent is not None:
            parts = [p for p in entry.override_parent.split("/") if p]
        parts.append(entry.name)
    return "/".join(parts)


def joined(name):
    """name under the open scopes: a new variable's path."""
    parent = current_path()
    return f"{parent}/{name}" if parent else name
