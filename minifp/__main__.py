"""`python -m minifp`: the same as the `minifp` command."""
import sys

from minifp.cli import main

sys.exit(main())
