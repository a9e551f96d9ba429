"""Run a Keras 3 script on minifp, unchanged: `python -m minifp.keras script.py [args...]`.

Inside the script `import keras` (and `from keras import layers, ops`, ...) import minifp.keras; the script itself
is not touched.
"""
from __future__ import annotations

import sys

from .. import aliases

__all__ = ["ALIASES", "main"]

ALIASES = {"keras": "minifp.keras"}


def main(argv=None):
    aliases.run(ALIASES, sys.argv[1:] if argv is None else argv, "minifp.keras")


if __name__ == "__main__":
    main()
