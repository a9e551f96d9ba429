"""`torch.utils.data.dataset`: the dataset classes and random_split."""
from . import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split

__all__ = ["ConcatDataset", "Dataset", "IterableDataset", "Subset", "TensorDataset", "random_split"]
