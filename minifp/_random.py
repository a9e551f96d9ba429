"""The one random generator behind initialisers and dropout, seeded by minifp.manual_seed."""
import numpy as np

_generator = [np.random.default_rng(0)]


def manual_seed(seed):
    """Seed minifp's generator (weight initialisation, dropout, shuffling)."""
    _generator[0] = np.random.default_rng(seed)


def rng():
    """minifp's numpy Generator."""
    return _generator[0]
