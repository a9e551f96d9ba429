"""`torchvision` for minifp: `models` (mobilenet_v2, resnet18), `datasets` (MNIST, CIFAR10, FakeData,
ImageFolder), `transforms` (ToTensor, Normalize and the augmentations)."""
import importlib

from . import datasets, transforms

__all__ = ["datasets", "models", "transforms"]


def __getattr__(name):
    """`models` is imported on first use: it needs minifp.torch.nn, which imports more than datasets do."""
    if name == "models":
        return importlib.import_module(f"{__name__}.models")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
