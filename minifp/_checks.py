"""Argument checks for the public entry points: one error naming the argument, the value and the valid range."""
from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["is_integer", "is_number", "problem", "number", "integer", "sizes", "flag", "keys"]

INF = math.inf


def is_integer(x):
    """True for Python and NumPy integers, not bools (True is not a count)."""
    return isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))


def is_number(x):
    """True for real Python and NumPy numbers, not bools."""
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))


def span(lo=-INF, hi=INF, lo_open=False, hi_open=False, integer=False):
    """The valid range in words: 'an integer >= 1', 'a finite number > 0', 'a number in [0, 1)'."""
    kind = "an integer" if integer else "a finite number"
    if math.isinf(lo) and math.isinf(hi):
        return kind
    if math.isinf(hi):
        return f"{kind} {'>' if lo_open else '>='} {lo:g}"
    if math.isinf(lo):
        return f"{kind} {'<' if hi_open else '<='} {hi:g}"
    kind = "an integer" if integer else "a number"
    return f"{kind} in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"


def problem(value, lo=-INF, hi=INF, lo_open=False, hi_open=False, integer=False):
    """None when value is a finite number (an integer if asked) in the range, else (exception class, range in words).

    NaN and inf are never in a range: every hyperparameter and size here must be finite.
    """
    words = span(lo, hi, lo_open, hi_open, integer)
    if not (is_integer(value) if integer else is_number(value)):
        return TypeError, words
    inside = (lo < value if lo_open else lo <= value) and (value < hi if hi_open else value <= hi)
    if not (math.isfinite(value) and inside):
        return ValueError, words
    return None


def _got(value, exc):
    return f"{value!r} (a {type(value).__name__})" if exc is TypeError else repr(value)


def number(name, value, lo=-INF, hi=INF, lo_open=False, hi_open=False, integer=False, where=""):
    """value if it is in range, else a TypeError or ValueError: '{where}{name} must be {range}, got {value}'."""
    bad = problem(value, lo, hi, lo_open, hi_open, integer)
    if bad:
        exc, words = bad
        raise exc(f"{where}{name} must be {words}, got {_got(value, exc)}")
    return value


def integer(name, value, lo=-INF, hi=INF, where=""):
    """value if it is an integer in [lo, hi], else a TypeError or ValueError naming `name`."""
    return number(name, value, lo, hi, integer=True, where=where)


def sizes(where="", **values):
    """Check that each value (a count, a width, a size) is an integer >= 1."""
    for name, value in values.items():
        integer(name, value, lo=1, where=where)


def flag(name, value, where=""):
    """value if it is a bool, else a TypeError naming `name` (a string 'no' would otherwise count as True)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{where}{name} must be True or False, got {_got(value, TypeError)}")
    return bool(value)


def keys(where, mapping, expected, optional=()):
    """Refuse a state dict that is not a dict of exactly the `expected` keys (and any of the `optional` ones)."""
    if not isinstance(mapping, dict):
        raise TypeError(f"{where} must be a dict, got {type(mapping).__name__}")
    missing = sorted(set(expected) - set(mapping))
    unexpected = sorted(set(mapping) - set(expected) - set(optional), key=str)
    if missing or unexpected:
        raise ValueError(f"{where} does not match: missing keys {missing}, unexpected keys {unexpected}; "
                         f"expected {sorted(expected)}")
