"""Fixtures the test modules share."""
import contextlib

import pytest

from minifp._seams import PLAIN, SEAMS


@contextlib.contextmanager
def _plain_path():
    saved = dict(vars(SEAMS))
    vars(SEAMS).update(vars(PLAIN))
    try:
        yield
    finally:
        vars(SEAMS).update(saved)


@pytest.fixture
def plain_path():
    """A context manager: every seam on the plain path inside its block (what MINIFP_SPEED=0 gives a fresh
    process)."""
    return _plain_path
