"""`torchvision.datasets`: MNIST and CIFAR10 from their standard files under `root` (downloaded on request),
FakeData (random images, the same for the same index), and ImageFolder (root/class/image files, read by Pillow).

Differences from torchvision, on purpose:
- items are `(image, target)` with the image a NumPy uint8 array (MNIST (28, 28), CIFAR-10 (32, 32, 3) HWC),
  not a PIL image: `transforms.ToTensor()` takes either, and minifp does not need Pillow;
- FakeData's images are NumPy uint8 arrays as well (HWC, or (H, W) for one channel), with the pixels torchvision
  makes of its normal draws (times 255, wrapped into uint8); the draws are minifp's, not PyTorch's;
- CIFAR-10 is read from its **binary** version (`cifar-10-binary.tar.gz`, folder `cifar-10-batches-bin`):
  the Python version's batches are pickles, and loading a pickle can run code.
"""
from __future__ import annotations

import gzip
import os
import shutil

import numpy as np

from ... import datasets as _files
from ...engine import new_stream

__all__ = ["CIFAR10", "FakeData", "IMG_EXTENSIONS", "ImageFolder", "MNIST", "VisionDataset", "default_loader"]


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


# -- FakeData and ImageFolder ---------------------------------------------------------------------------


def _checked_transforms(owner, transform, target_transform):
    for name, fn in (("transform", transform), ("target_transform", target_transform)):
        if fn is not None and not callable(fn):
            raise TypeError(f"{owner}(): {name} must be callable or None, got {fn!r}")
    return transform, target_transform


def _target(target, target_transform):
    """The target as torchvision returns it: target_transform sees an int64 tensor, the item comes back."""
    if target_transform is None:
        return target
    from ... import torch
    out = target_transform(torch.tensor(target))
    return out.item() if hasattr(out, "item") else out


class FakeData:
    """size random images of image_size (C, H, W) and random targets below num_classes; item i is the same on
    every call (drawn from a stream seeded with i + random_offset, never touching the global stream)."""

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None, target_transform=None,
                 random_offset=0):
        self.size, self.image_size, self.num_classes, self.random_offset = size, image_size, num_classes, random_offset
        self.transform, self.target_transform = _checked_transforms("FakeData", transform, target_transform)

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        """(image, target): a uint8 HWC array (or (H, W)) and an int, the transforms applied when given."""
        if index >= len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        g = new_stream((index + self.random_offset) % 2 ** 64)
        noise = g.standard_normal(tuple(self.image_size), dtype=np.float32)
        target = int(g.integers(0, self.num_classes))
        # ToPILImage's float -> uint8: times 255, truncated, wrapped modulo 256 as the integer cast wraps
        pixels = np.mod(np.trunc(noise * np.float32(255)).astype(np.int64), 256).astype(np.uint8)
        image = pixels[0] if pixels.shape[0] == 1 else np.ascontiguousarray(pixels.transpose(1, 2, 0))
        if self.transform is not None:
            image = self.transform(image)
        return image, _target(target, self.target_transform)

    def __repr__(self):
        return f"Dataset {type(self).__name__}\n    Number of datapoints: {len(self)}"


IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def default_loader(path):
    """The image file at path as an RGB PIL image (Pillow is needed here, and only here)."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(f"ImageFolder's default loader reads {path!r} with Pillow, which is not installed: "
                          f"pip install 'minifp[vision]' (or pass loader=)") from None
    with open(path, "rb") as f:
        return Image.open(f).convert("RGB")


class ImageFolder:
    """Images in root/<class>/**/<file>: classes are the sorted folder names, targets their indices."""

    def __init__(self, root, transform=None, target_transform=None, loader=default_loader, is_valid_file=None,
                 allow_empty=False):
        if not isinstance(root, (str, os.PathLike)):
            raise TypeError(f"ImageFolder(): root must be a folder path (str or os.PathLike), got "
                            f"{type(root).__name__}")
        self.root = os.path.expanduser(os.fspath(root))
        self.transform, self.target_transform = _checked_transforms("ImageFolder", transform, target_transform)
        self.loader = loader
        self.extensions = IMG_EXTENSIONS if is_valid_file is None else None
        self.classes, self.class_to_idx = self.find_classes(self.root)
        self.samples = self._samples(is_valid_file, allow_empty)
        self.imgs, self.targets = self.samples, [s[1] for s in self.samples]

    @staticmethod
    def find_classes(directory):
        """(sorted class folder names, {name: index})."""
        classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
        if not classes:
            raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
        return classes, {name: i for i, name in enumerate(classes)}

    def _samples(self, is_valid_file, allow_empty):
        """(path, class index) of every valid file, class by class, in sorted order (torchvision's make_dataset)."""
        if is_valid_file is None:
            def is_valid_file(path):
                return path.lower().endswith(IMG_EXTENSIONS)
        samples, found = [], set()
        for name in sorted(self.class_to_idx):
            for folder, _, files in sorted(os.walk(os.path.join(self.root, name), followlinks=True)):
                for fname in sorted(files):
                    path = os.path.join(folder, fname)
                    if is_valid_file(path):
                        samples.append((path, self.class_to_idx[name]))
                        found.add(name)
        empty = set(self.class_to_idx) - found
        if empty and not allow_empty:
            msg = f"Found no valid file for the classes {', '.join(sorted(empty))}. "
            if self.extensions is not None:
                msg += f"Supported extensions are: {', '.join(self.extensions)}"
            raise FileNotFoundError(msg)
        return samples

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        """(image, target): the loader's image of sample `index`, the transforms applied when given."""
        path, target = self.samples[index]
        image = self.loader(path)
        if self.transform is not None:
            image = self.transform(image)
        return image, _target(target, self.target_transform)

    def __repr__(self):
        return f"Dataset {type(self).__name__}\n    Number of datapoints: {len(self)}\n    Root location: {self.root}"
