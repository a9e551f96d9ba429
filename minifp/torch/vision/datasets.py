"""`torchvision.datasets`: MNIST and CIFAR10 from their standard files under `root` (downloaded on request).

Differences from torchvision, on purpose:
- items are `(image, target)` with the image a NumPy uint8 array (MNIST (28, 28), CIFAR-10 (32, 32, 3) HWC),
  not a PIL image: `transforms.ToTensor()` takes either, and minifp does not need Pillow;
- CIFAR-10 is read from its **binary** version (`cifar-10-binary.tar.gz`, folder `cifar-10-batches-bin`):
  the Python version's batches are pickles, and loading a pickle can run code.
"""
from __future__ import annotations

import gzip
import os
import shutil

import numpy as np

from ... import datasets as _files

__all__ = ["CIFAR10", "MNIST", "VisionDataset"]


class VisionDataset:
    """What MNIST and CIFAR10 share: root, transforms, len and indexing."""

    def __init__(self, root, transform=None, target_transform=None):
        if not isinstance(root, (str, os.PathLike)):
            raise TypeError(f"{type(self).__name__}(): root must be a folder path (str or os.PathLike), "
                            f"got {type(root).__name__}")
        for name, fn in (("transform", transform), ("target_transform", target_transform)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{type(self).__name__}(): {name} must be callable or None, got {fn!r}")
        self.root = os.path.expanduser(os.fspath(root))
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return len(self._images)

    def __getitem__(self, index):
        """(image, target): the transforms applied, when given."""
        image, target = np.array(self._images[index]), int(self._labels[index])   # a copy, as a PIL image is
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __repr__(self):
        split = "Train" if self.train else "Test"
        return (f"Dataset {type(self).__name__}\n    Number of datapoints: {len(self)}\n    Root location: "
                f"{self.root}\n    Split: {split}")

    @property
    def class_to_idx(self):
        return {c: i for i, c in enumerate(self.classes)}


class MNIST(VisionDataset):
    """The MNIST digits from root/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte (or the .gz files)."""

    mirrors = ["https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"]
    resources = [("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
                 ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
                 ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
                 ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c")]
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
               "8 - eight", "9 - nine"]

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform, target_transform)
        self.train = bool(train)
        if download:
            self.download()
        prefix = "train" if self.train else "t10k"
        images = _files.load_idx(self._file(f"{prefix}-images-idx3-ubyte"))
        labels = _files.load_idx(self._file(f"{prefix}-labels-idx1-ubyte"))
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels) or images.dtype != np.uint8:
            raise ValueError(f"MNIST(): {self.raw_folder} holds images of shape {images.shape} ({images.dtype}) and "
                             f"labels of shape {labels.shape}; expected (n, 28, 28) uint8 images and n labels")
        self._images, self._labels = images, labels.astype(np.int64)

    raw_folder = property(lambda self: os.path.join(self.root, "MNIST", "raw"))

    @property
    def data(self):
        """All images as a uint8 tensor (n, 28, 28), as torchvision's."""
        from ... import torch
        return torch.from_numpy(self._images)

    @property
    def targets(self):
        """All labels as an int64 tensor, as torchvision's."""
        from ... import torch
        return torch.from_numpy(self._labels)

    def _file(self, name):
        """The path of raw file `name`: uncompressed as torchvision extracts it, or the .gz as downloaded."""
        for candidate in (name, name + ".gz"):
            path = os.path.join(self.raw_folder, candidate)
            if os.path.isfile(path):
                return path
        raise RuntimeError(f"Dataset not found. You can use download=True to download it (looked for {name} or "
                           f"{name}.gz in {self.raw_folder})")

    def _check_exists(self):
        return all(os.path.isfile(os.path.join(self.raw_folder, f[:-3])) or
                   os.path.isfile(os.path.join(self.raw_folder, f)) for f, _ in self.resources)

    def download(self):
        """Fetch the four files from the mirrors (MD5 checked) and extract them, unless they are already there."""
        if self._check_exists():
            return
        for name, md5 in self.resources:
            archive = os.path.join(self.raw_folder, name)
            _files.download([mirror + name for mirror in self.mirrors], archive, md5)
            partial = archive[:-3] + ".partial"          # renamed once whole: a crash leaves no short file
            with gzip.open(archive, "rb") as src, open(partial, "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.replace(partial, archive[:-3])


class CIFAR10(VisionDataset):
    """CIFAR-10 from root/cifar-10-batches-bin/{data_batch_1..5,test_batch}.bin (the binary version)."""

    base_folder = "cifar-10-batches-bin"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
    filename = "cifar-10-binary.tar.gz"
    tgz_md5 = "c32a1d4ab5d03f1284b67883e8d87530"
    train_list = [f"data_batch_{i}.bin" for i in range(1, 6)]
    test_list = ["test_batch.bin"]
    classes = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform, target_transform)
        self.train = bool(train)
        if download:
            self.download()
        folder = os.path.join(self.root, self.base_folder)
        paths = [os.path.join(folder, f) for f in (self.train_list if self.train else self.test_list)]
        missing = [p for p in paths if not os.path.isfile(p)]
        if missing:
            raise RuntimeError(f"Dataset not found or corrupted. You can use download=True to download it "
                               f"(missing {', '.join(os.path.basename(p) for p in missing)} in {folder}){self._hint()}")
        parts = [_files.load_cifar_binary(p) for p in paths]
        self.data = np.concatenate([images for images, _ in parts])          # (n, 32, 32, 3) uint8, HWC
        self.targets = np.concatenate([labels for _, labels in parts]).tolist()

    _images = property(lambda self: self.data)
    _labels = property(lambda self: self.targets)

    def _hint(self):
        """A note when only the pickled Python version is present."""
        if os.path.isdir(os.path.join(self.root, "cifar-10-batches-py")):
            return ("; found cifar-10-batches-py, the Python version, which minifp does not read because its "
                    "batches are pickles (loading a pickle can run code): download=True fetches the binary version")
        return ""

    def _check_exists(self):
        folder = os.path.join(self.root, self.base_folder)
        return all(os.path.isfile(os.path.join(folder, f)) for f in self.train_list + self.test_list)

    def download(self):
        """Fetch cifar-10-binary.tar.gz (MD5 checked) and extract it under root, unless it is already there."""
        if self._check_exists():
            return
        archive = os.path.join(self.root, self.filename)
        if not (os.path.isfile(archive) and _files.file_md5(archive) == self.tgz_md5):
            _files.download(self.url, archive, self.tgz_md5)
        _files.extract_tar(archive, self.root)
