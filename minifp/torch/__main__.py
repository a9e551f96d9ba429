"""Run a PyTorch script on minifp, unchanged: `python -m minifp.torch script.py [args...]`.

Inside the script `import torch` (and `torch.nn`, `torchvision`, ...) import minifp.torch (and minifp.torch.nn,
minifp.torch.vision, ...); the script itself is not touched.
"""
from __future__ import annotations

import sys

from .. import aliases

__all__ = ["ALIASES", "install", "main"]

ALIASES = {"torch": "minifp.torch", "torchvision": "minifp.torch.vision"}


def install():
    """From now on `import torch` in this process is minifp.torch."""
    aliases.install(ALIASES)


def main(argv=None):
    aliases.run(ALIASES, sys.argv[1:] if argv is None else argv, "minifp.torch")


if __name__ == "__main__":
    main()
