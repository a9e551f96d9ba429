"""Run a TensorFlow (tf.keras) script on minifp, unchanged: `python -m minifp.tf script.py [args...]`.

Inside the script `import tensorflow as tf` (and `from tensorflow.keras import layers`, ...) import minifp.tf; the
script itself is not touched.
"""
from __future__ import annotations

import sys

from .. import aliases

__all__ = ["ALIASES", "main"]

ALIASES = {"tensorflow": "minifp.tf"}


def main(argv=None):
    aliases.run(ALIASES, sys.argv[1:] if argv is None else argv, "minifp.tf")


if __name__ == "__main__":
    main()
