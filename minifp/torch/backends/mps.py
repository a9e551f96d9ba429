"""torch.backends.mps: Apple's GPUs, which minifp does not emulate."""
__all__ = ["is_available", "is_built"]


def is_available():
    return False


def is_built():
    return False
