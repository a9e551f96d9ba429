"""minifp.torch.vision: transforms, the MNIST and CIFAR10 datasets (from files written here), and the models."""
import gzip
import hashlib
import io
import json
import math
import tarfile
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import minifp.torch as torch
from minifp import datasets as files
from minifp.torch.utils.data import DataLoader
from minifp.torch.vision import datasets, transforms

pytestmark = [pytest.mark.filterwarnings("ignore:minifp. no GPU here"), pytest.mark.endtoend]
FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "pytorch" / "vision.json"


# -- transforms ------------------------------------------------------------------------------------


def test_to_tensor_scales_uint8_hwc_into_chw_float32():
    img = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3) * 4
    t = transforms.ToTensor()(img)
    assert isinstance(t, torch.Tensor) and t.dtype is torch.float32 and t.shape == (3, 4, 5)
    np.testing.assert_array_equal(t.numpy(), img.transpose(2, 0, 1).astype(np.float32) / np.float32(255))
    assert t.numpy().max() <= 1.0


def test_to_tensor_gives_2d_images_a_channel_and_keeps_other_dtypes_unscaled():
    assert transforms.ToTensor()(np.zeros((28, 28), np.uint8)).shape == (1, 28, 28)
    f = transforms.ToTensor()(np.full((2, 2, 3), 7.5, np.float32))
    assert f.dtype is torch.float32 and f.shape == (3, 2, 2) and float(f.numpy().max()) == 7.5
    i = transforms.ToTensor()(np.full((2, 2), 300, np.int64))
    assert i.dtype is torch.int64 and int(i.numpy().max()) == 300
    with pytest.raises(ValueError, match="pic should be 2/3 dimensional. Got 4 dimensions."):
        transforms.ToTensor()(np.zeros((1, 2, 2, 3), np.uint8))
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray. Got <class 'list'>"):
        transforms.ToTensor()([[1]])


def test_to_tensor_takes_pil_images():
    Image = pytest.importorskip("PIL.Image")
    gray = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    t = transforms.ToTensor()(Image.fromarray(gray))
    assert t.shape == (1, 3, 4)
    np.testing.assert_array_equal(t.numpy()[0], gray.astype(np.float32) / np.float32(255))
    bits = transforms.ToTensor()(Image.fromarray(gray > 100))        # mode "1": 0/255, so 0.0/1.0
    np.testing.assert_array_equal(bits.numpy()[0], (gray > 100).astype(np.float32))


def test_normalize_rounds_mean_and_std_to_the_input_dtype_then_subtracts_and_divides():
    x = np.linspace(0, 1, 2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)
    mean, std = (0.4914, 0.4822, 0.4465), (0.247, 0.243, 0.261)
    out = transforms.Normalize(mean, std)(torch.from_numpy(x))
    m, s = np.float32(mean).reshape(3, 1, 1), np.float32(std).reshape(3, 1, 1)
    assert out.dtype is torch.float32 and out.shape == x.shape
    np.testing.assert_array_equal(out.numpy(), (x - m) / s)
    x16 = x[0].astype(np.float16)
    out16 = transforms.Normalize(mean, std)(torch.from_numpy(x16))
    assert out16.dtype is torch.float16         # NumPy float16 arithmetic rounds each op, as PyTorch's CPU ops do
    np.testing.assert_array_equal(out16.numpy(), (x16 - np.float16(mean).reshape(3, 1, 1)) /
                                  np.float16(std).reshape(3, 1, 1))


def test_normalize_inplace_and_errors():
    x = torch.from_numpy(np.ones((1, 2, 2), np.float32))
    same = transforms.Normalize([0.5], [0.5], inplace=True)(x)
    assert same is x and np.all(x.numpy() == 1.0)
    with pytest.raises(ValueError, match=r"std evaluated to zero after conversion to torch.float16, leading to "
                                         r"division by zero."):
        transforms.Normalize([0.0], [1e-9])(torch.from_numpy(np.ones((1, 2, 2), np.float16)))
    with pytest.raises(TypeError, match="Input tensor should be a torch tensor. Got <class 'numpy.ndarray'>."):
        transforms.Normalize([0.0], [1.0])(np.ones((1, 2, 2)))
    with pytest.raises(TypeError, match="Input tensor should be a float tensor. Got torch.uint8."):
        transforms.Normalize([0.0], [1.0])(torch.from_numpy(np.ones((1, 2, 2), np.uint8)))
    with pytest.raises(ValueError, match=r"Expected tensor to be a tensor image of size \(..., C, H, W\). Got "
                                         r"tensor.size\(\) = torch.Size\(\[2, 2\]\)"):
        transforms.Normalize([0.0], [1.0])(torch.from_numpy(np.ones((2, 2), np.float32)))


def test_compose_applies_in_order():
    pipeline = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5,), (0.5,))])
    out = pipeline(np.array([[0, 255]], np.uint8))
    np.testing.assert_array_equal(out.numpy(), [[[-1.0, 1.0]]])
    assert "ToTensor()" in repr(pipeline) and "Normalize(mean=(0.5,), std=(0.5,))" in repr(pipeline)
    with pytest.raises(TypeError, match=r"transforms\[1\] is not callable"):
        transforms.Compose([transforms.ToTensor(), 3])


# -- MNIST ----------------------------------------------------------------------------------------


def idx_bytes(arr):
    """An array in the IDX format (the MNIST files)."""
    code = {np.uint8: 0x08, np.int32: 0x0C}[arr.dtype.type]
    head = bytes([0, 0, code, arr.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in arr.shape)
    return head + arr.astype(arr.dtype.newbyteorder(">")).tobytes()


def mnist_arrays(n, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, 28, 28), dtype=np.uint8), rng.integers(0, 10, n).astype(np.uint8)


def write_mnist(root, n_train=5, n_test=3):
    raw = Path(root) / "MNIST" / "raw"
    raw.mkdir(parents=True)
    (xs, ys), (xt, yt) = mnist_arrays(n_train, 0), mnist_arrays(n_test, 1)
    (raw / "train-images-idx3-ubyte").write_bytes(idx_bytes(xs))            # uncompressed, as torchvision leaves
    (raw / "train-labels-idx1-ubyte").write_bytes(idx_bytes(ys))
    (raw / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(idx_bytes(xt)))   # or still gzipped
    (raw / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(idx_bytes(yt)))
    return (xs, ys), (xt, yt)


def test_mnist_reads_the_standard_files(tmp_path):
    (xs, ys), (xt, yt) = write_mnist(tmp_path)
    train, test = datasets.MNIST(tmp_path), datasets.MNIST(str(tmp_path), train=False)
    assert len(train) == 5 and len(test) == 3
    img, label = train[2]
    assert isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.shape == (28, 28)
    np.testing.assert_array_equal(img, xs[2])
    assert type(label) is int and label == ys[2]
    np.testing.assert_array_equal(test[1][0], xt[1])
    assert train.data.dtype is torch.uint8 and train.data.shape == (5, 28, 28)
    assert train.targets.dtype is torch.int64 and train.targets.numpy().tolist() == ys.tolist()
    assert train.classes[3] == "3 - three" and train.class_to_idx["9 - nine"] == 9
    assert "Number of datapoints: 5" in repr(train) and "Split: Test" in repr(test)


def test_mnist_transforms_and_loader(tmp_path):
    (xs, ys), _ = write_mnist(tmp_path)
    ds = datasets.MNIST(tmp_path, transform=transforms.Compose([transforms.ToTensor(),
                                                              transforms.Normalize((0.1307,), (0.3081,))]),
                        target_transform=lambda y: y + 100)
    x, y = ds[0]
    assert x.shape == (1, 28, 28) and x.dtype is torch.float32 and y == ys[0] + 100
    xb, yb = next(iter(DataLoader(ds, batch_size=4)))
    assert xb.shape == (4, 1, 28, 28) and xb.dtype is torch.float32
    assert yb.dtype is torch.int64 and yb.numpy().tolist() == (ys[:4] + 100).tolist()
    np.testing.assert_array_equal(xb.numpy()[0], x.numpy())


def test_mnist_missing_or_malformed_files(tmp_path):
    with pytest.raises(RuntimeError, match="Dataset not found. You can use download=True to download it"):
        datasets.MNIST(tmp_path)
    write_mnist(tmp_path)
    (tmp_path / "MNIST" / "raw" / "train-labels-idx1-ubyte").write_bytes(idx_bytes(np.zeros(4, np.uint8)))
    with pytest.raises(ValueError, match=r"expected \(n, 28, 28\) uint8 images and n labels"):
        datasets.MNIST(tmp_path)
    with pytest.raises(TypeError, match="root must be a folder path"):
        datasets.MNIST(3)
    with pytest.raises(TypeError, match="transform must be callable or None"):
        datasets.MNIST(tmp_path, train=False, transform="ToTensor")


class FakeWeb:
    """urlopen() over a dict of URL -> bytes; other URLs fail as an unreachable host does."""

    def __init__(self, pages):
        self.pages, self.asked = pages, []

    def __call__(self, url, timeout=None):
        self.asked.append(url)
        if url not in self.pages:
            raise urllib.error.URLError("unreachable (test)")
        return io.BytesIO(self.pages[url])


def md5(data):
    return hashlib.md5(data).hexdigest()


def test_mnist_download_tries_the_mirrors_checks_md5_and_extracts(tmp_path, monkeypatch):
    (xs, ys), (xt, yt) = mnist_arrays(4, 0), mnist_arrays(2, 1)
    blobs = {"train-images-idx3-ubyte.gz": idx_bytes(xs), "train-labels-idx1-ubyte.gz": idx_bytes(ys),
             "t10k-images-idx3-ubyte.gz": idx_bytes(xt), "t10k-labels-idx1-ubyte.gz": idx_bytes(yt)}
    blobs = {k: gzip.compress(v) for k, v in blobs.items()}
    second = datasets.MNIST.mirrors[1]                        # the first mirror is "down"
    web = FakeWeb({second + k: v for k, v in blobs.items()})
    monkeypatch.setattr(urllib.request, "urlopen", web)
    monkeypatch.setattr(datasets.MNIST, "resources", [(k, md5(v)) for k, v in blobs.items()])
    ds = datasets.MNIST(tmp_path, download=True)
    assert len(ds) == 4
    np.testing.assert_array_equal(ds[3][0], xs[3])
    assert (tmp_path / "MNIST" / "raw" / "train-images-idx3-ubyte").is_file()         # extracted, as torchvision
    assert len(web.asked) == 8 and web.asked[0].startswith(datasets.MNIST.mirrors[0])
    datasets.MNIST(tmp_path, train=False, download=True)
    assert len(web.asked) == 8                                     # present: nothing fetched again


def test_a_download_with_a_wrong_checksum_leaves_nothing(tmp_path, monkeypatch):
    web = FakeWeb({m + "train-images-idx3-ubyte.gz": b"tampered" for m in datasets.MNIST.mirrors})
    monkeypatch.setattr(urllib.request, "urlopen", web)
    with pytest.raises(RuntimeError, match="checksum mismatch"):
        datasets.MNIST(tmp_path, download=True)
    assert list((tmp_path / "MNIST" / "raw").iterdir()) == []


# -- CIFAR-10 -------------------------------------------------------------------------------------


def cifar_records(n, seed):
    """(images (n, 32, 32, 3) HWC, labels, the binary records that hold them)."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
    labels = rng.integers(0, 10, n).astype(np.uint8)
    rows = np.concatenate([labels[:, None], images.transpose(0, 3, 1, 2).reshape(n, 3072)], axis=1)
    return images, labels, rows.astype(np.uint8).tobytes()


def write_cifar(root):
    folder = Path(root) / "cifar-10-batches-bin"
    folder.mkdir(parents=True)
    train_images, train_labels = [], []
    for i in range(1, 6):
        images, labels, data = cifar_records(i, i)
        (folder / f"data_batch_{i}.bin").write_bytes(data)
        train_images.append(images)
        train_labels.append(labels)
    images, labels, data = cifar_records(4, 0)
    (folder / "test_batch.bin").write_bytes(data)
    return (np.concatenate(train_images), np.concatenate(train_labels)), (images, labels)


def test_cifar10_reads_the_binary_batches_as_hwc(tmp_path):
    (xs, ys), (xt, yt) = write_cifar(tmp_path)
    train, test = datasets.CIFAR10(tmp_path), datasets.CIFAR10(tmp_path, train=False)
    assert len(train) == 15 and len(test) == 4
    assert train.data.shape == (15, 32, 32, 3) and train.data.dtype == np.uint8
    assert train.targets == ys.tolist() and all(type(t) is int for t in train.targets)
    img, label = test[2]
    np.testing.assert_array_equal(img, xt[2])
    assert label == yt[2] and train.classes[0] == "airplane" and train.class_to_idx["truck"] == 9


def test_cifar10_pixel_layout_is_the_documented_one(tmp_path):
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    record = np.zeros(3073, np.uint8)
    record[0] = 7
    record[1 + 1024 * 2 + 32 * 5 + 9] = 200          # blue channel, row 5, column 9
    (folder / "test_batch.bin").write_bytes(record.tobytes())
    img, label = datasets.CIFAR10(tmp_path, train=False)[0]
    assert label == 7 and img[5, 9, 2] == 200 and int(img.sum()) == 200


def test_cifar10_with_transforms_through_a_loader(tmp_path):
    write_cifar(tmp_path)
    pipeline = transforms.Compose([transforms.ToTensor(),
                                   transforms.Normalize((0.4914, 0.4822, 0.4465), (0.247, 0.243, 0.261))])
    loader = DataLoader(datasets.CIFAR10(tmp_path, transform=pipeline), batch_size=4, shuffle=True)
    xb, yb = next(iter(loader))
    assert xb.shape == (4, 3, 32, 32) and xb.dtype is torch.float32 and yb.dtype is torch.int64
    assert len(loader) == 4


def test_cifar10_refuses_the_pickled_python_version(tmp_path):
    (tmp_path / "cifar-10-batches-py").mkdir()
    (tmp_path / "cifar-10-batches-py" / "data_batch_1").write_bytes(b"\x80\x02}q\x00.")
    with pytest.raises(RuntimeError, match="found cifar-10-batches-py, the Python version, which minifp does not "
                                           "read because its batches are pickles"):
        datasets.CIFAR10(tmp_path)


def tar_gz(members):
    """A .tar.gz in memory of name -> bytes."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_cifar10_download_fetches_and_extracts_the_binary_archive(tmp_path, monkeypatch):
    members = {f"cifar-10-batches-bin/data_batch_{i}.bin": cifar_records(2, i)[2] for i in range(1, 6)}
    members["cifar-10-batches-bin/test_batch.bin"] = cifar_records(3, 0)[2]
    members["cifar-10-batches-bin/batches.meta.txt"] = "\n".join(datasets.CIFAR10.classes).encode()
    archive = tar_gz(members)
    web = FakeWeb({datasets.CIFAR10.url: archive})
    monkeypatch.setattr(urllib.request, "urlopen", web)
    monkeypatch.setattr(datasets.CIFAR10, "tgz_md5", md5(archive))
    assert len(datasets.CIFAR10(tmp_path, download=True)) == 10
    assert len(datasets.CIFAR10(tmp_path, train=False, download=True)) == 3
    assert web.asked == [datasets.CIFAR10.url]


def test_extract_tar_refuses_members_outside_the_folder(tmp_path):
    (tmp_path / "evil.tar.gz").write_bytes(tar_gz({"../outside.txt": b"x"}))
    with pytest.raises(ValueError, match="not a plain file or folder inside the archive"):
        files.extract_tar(tmp_path / "evil.tar.gz", tmp_path / "out")
    assert not (tmp_path / "outside.txt").exists()


def test_load_cifar_binary_checks_the_records(tmp_path):
    (tmp_path / "short.bin").write_bytes(bytes(3000))
    with pytest.raises(ValueError, match="3000 bytes is not a whole number of 3073-byte records"):
        files.load_cifar_binary(tmp_path / "short.bin")
    bad = np.zeros(3073, np.uint8)
    bad[0] = 12
    (tmp_path / "label.bin").write_bytes(bad.tobytes())
    with pytest.raises(ValueError, match="has label 12; CIFAR-10 labels are 0-9"):
        files.load_cifar_binary(tmp_path / "label.bin")


# -- models -----------------------------------------------------------------------------------------


def wave(spec):
    """The float32 values of a fixture's wave() spec (tools/record_pytorch.py's formula)."""
    i = np.arange(math.prod(spec["shape"]), dtype=np.int64)
    phase = spec["freq"] * i.astype(np.float64) + spec["k"] + spec["quad"] * ((i * i) % 10007).astype(np.float64)
    return (spec["offset"] + spec["scale"] * np.sin(phase)).astype(np.float32).reshape(spec["shape"])


def recorded(name):
    return json.loads(FIXTURE.read_text())["models"][name]


@pytest.mark.parametrize("name", ["mobilenet_v2", "resnet18"])
def test_state_dict_keys_shapes_and_dtypes_are_torchvisions(name):
    from minifp.torch.vision import models
    sd = getattr(models, name)(num_classes=10).state_dict()
    want = recorded(name)["state_dict"]
    assert list(sd) == [e["key"] for e in want]                     # the same keys, in the same order
    for e in want:
        assert list(sd[e["key"]].shape) == e["shape"], e["key"]
        assert repr(sd[e["key"]].dtype) == e["dtype"], e["key"]


@pytest.mark.parametrize("name", ["mobilenet_v2", "resnet18"])
def test_eval_logits_match_pytorch_with_the_same_weights(name):
    from minifp.torch.vision import models
    fixture, x_spec = recorded(name), json.loads(FIXTURE.read_text())["x"]
    model = getattr(models, name)(num_classes=10)
    sd = model.state_dict()
    weights = {e["key"]: torch.from_numpy(wave(e["init"])) if e["init"] else sd[e["key"]]
               for e in fixture["state_dict"]}
    model.load_state_dict(weights)
    model.eval()
    with torch.no_grad():
        logits = model(torch.from_numpy(wave(x_spec)))
    exact = np.array(fixture["eval_logits_float64"])
    assert logits.shape == exact.shape and logits.dtype is torch.float32
    # Within 1e-5 of PyTorch's float32 logits on every CPU recorded, and of the float64 model's, and within 1e-5
    # relative to the logits' size: all are float32 sums in different orders. The classifier's weights are
    # scaled so that the logits are of order 1 (|logits| reach 1.3), as a trained model's: the sums' errors
    # scale with them (at 16 times the size, PyTorch's own logits differ by 1.7e-5 between an AVX512 and an
    # AVX2 CPU).
    tolerance = 1e-5 * min(1.0, float(np.abs(exact).max()))
    for cpu, want in fixture["eval_logits_by_cpu"].items():
        assert np.abs(logits.numpy() - np.array(want, np.float32)).max() <= tolerance, cpu
    assert np.abs(logits.numpy() - exact).max() <= tolerance
    assert len(fixture["eval_logits_by_cpu"]) >= 2


def test_parameter_counts_are_torchvisions():
    from minifp.torch.vision import models
    count = lambda m: sum(math.prod(p.shape) for p in m.parameters())     # noqa: E731
    assert count(models.resnet18()) == 11_689_512
    assert count(models.mobilenet_v2()) == 3_504_872


def test_initialisation_follows_torchvision():
    from minifp.torch.vision import models
    torch.manual_seed(0)
    r = models.resnet18(num_classes=10)
    w = r.layer4[0].conv2.weight.detach().numpy()        # kaiming normal, fan_out, relu: std sqrt(2 / (512*9))
    assert abs(w.std() / math.sqrt(2 / (512 * 9)) - 1) < 0.02 and abs(w.mean()) < 1e-3
    assert np.all(r.bn1.weight.detach().numpy() == 1) and np.all(r.bn1.bias.detach().numpy() == 0)
    assert np.abs(r.fc.bias.detach().numpy()).max() <= 1 / math.sqrt(512)          # fc keeps Linear's default
    m = models.mobilenet_v2()
    lin = m.classifier[1]
    assert abs(lin.weight.detach().numpy().std() / 0.01 - 1) < 0.02 and np.all(lin.bias.detach().numpy() == 0)
    z = models.resnet18(zero_init_residual=True)
    assert np.all(z.layer1[1].bn2.weight.detach().numpy() == 0) and np.all(z.layer1[1].bn1.weight.detach().numpy() == 1)


def test_mobilenet_structure_and_options():
    from minifp.torch.vision import models
    m = models.mobilenet_v2(num_classes=7, width_mult=0.5, dropout=0.3)
    sd = m.state_dict()
    assert sd["features.0.0.weight"].shape == (16, 3, 3, 3) and sd["classifier.1.weight"].shape == (7, 1280)
    assert m.classifier[0].p == 0.3 and len(m.features) == 19
    blocks = [m.features[k] for k in range(1, 18)]
    assert [b.use_res_connect for b in blocks].count(True) == 10
    assert [k for k, b in enumerate(blocks, 1) if b.stride == 2] == [2, 4, 7, 14]
    with pytest.raises(ValueError, match="inverted_residual_setting should be non-empty or a 4-element list"):
        models.mobilenet_v2(inverted_residual_setting=[[1, 16, 1]])


@pytest.mark.parametrize("name", ["mobilenet_v2", "resnet18"])
def test_models_train_a_step_on_cifar_shaped_input(name):
    from minifp.torch import nn
    from minifp.torch.vision import models
    torch.manual_seed(0)
    model = getattr(models, name)(num_classes=10)
    x = torch.from_numpy(np.random.default_rng(0).random((2, 3, 32, 32), dtype=np.float32))
    loss = nn.CrossEntropyLoss()(model(x), torch.tensor([1, 7]))
    loss.backward()
    first = next(iter(model.parameters()))
    assert first.grad is not None and first.grad.shape == first.shape
    assert np.isfinite(loss.item())


@pytest.mark.parametrize("name", ["mobilenet_v2", "resnet18"])
def test_pretrained_weights_are_refused(name):
    from minifp.torch.vision import models
    with pytest.raises(ValueError, match="minifp does not download pretrained weights"):
        getattr(models, name)(weights="IMAGENET1K_V1")
    with pytest.raises(ValueError, match="pretrained=True"):
        getattr(models, name)(pretrained=True)


def test_a_state_dict_round_trips_through_safetensors(tmp_path):
    pytest.importorskip("safetensors")
    from minifp.torch.vision import models
    a, b = models.resnet18(num_classes=10), models.resnet18(num_classes=10)
    torch.save(a.state_dict(), tmp_path / "r.safetensors")
    b.load_state_dict(torch.load(tmp_path / "r.safetensors"))
    for (k, va), vb in zip(a.state_dict().items(), b.state_dict().values()):
        np.testing.assert_array_equal(va.numpy(), vb.numpy(), err_msg=k)
