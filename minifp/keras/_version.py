"""The Keras release this face follows: `keras.__version__` and `keras.version()`."""
import minifp

__all__ = ["__version__", "version"]

# A PEP 440 version that compares as Keras 3.15.1 (the release the face's fixtures were recorded from) and says
# it is minifp, as minifp.torch.__version__ does for PyTorch.
__version__ = f"3.15.1+minifp.{minifp.__version__}"


def version():
    """Keras 3's version string of this face: "3.15.1+minifp.<minifp's version>"."""
    return __version__
