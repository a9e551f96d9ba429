"""torch.version: the PyTorch release whose behaviour this face follows, and the CUDA its emulated device models.

`torch.__version__` is "2.13.0+minifp.<minifp's version>": a PEP 440 version that compares as PyTorch 2.13 (the
release the face's fixtures were recorded from) and says it is minifp. `cuda` is the CUDA of the H100 recordings
the emulated device is checked against; cuDNN's version is torch.backends.cudnn.version().
"""
import minifp

__all__ = ["__version__", "cuda", "hip", "git_version", "debug"]

__version__ = f"2.13.0+minifp.{minifp.__version__}"
cuda = "13.0"
hip = None
git_version = "minifp"
debug = False
