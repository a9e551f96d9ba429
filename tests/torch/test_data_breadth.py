"""utils.data's samplers and modules, torchvision's augmentations (against recorded torchvision outputs where they
are deterministic), FakeData and ImageFolder. The PIL paths are skipped when Pillow is not installed."""
import importlib
import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import minifp.torch as torch
from minifp.torch.utils.data import (DataLoader, DistributedSampler, RandomSampler, SubsetRandomSampler,
                                     TensorDataset, WeightedRandomSampler, random_split)
from minifp.torch.vision import datasets, transforms as T

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "pytorch" / "transforms.json"


def pil():
    """PIL.Image, or a skip when Pillow is not installed."""
    return pytest.importorskip("PIL.Image", reason="Pillow is not installed (pip install 'minifp[vision]')")


# -- samplers and modules ---------------------------------------------------------------------------


def test_data_submodules_import_as_in_pytorch():
    for name in ("dataloader", "dataset", "sampler", "distributed"):
        module = importlib.import_module(f"minifp.torch.utils.data.{name}")
        assert getattr(torch.utils.data, name) is module
    assert torch.utils.data.dataloader.DataLoader is DataLoader
    assert torch.utils.data.distributed.DistributedSampler is DistributedSampler
    assert torch.utils.data.get_worker_info() is None


def test_random_sampler_with_replacement_draws_lazily():
    sampler = RandomSampler(range(7), replacement=True, num_samples=int(1e10))
    assert len(sampler) == int(1e10)
    first = list(itertools.islice(sampler, 100))
    assert len(first) == 100 and set(first) <= set(range(7)) and len(set(first)) > 1
    assert len(list(itertools.islice(RandomSampler(range(7), num_samples=int(1e10)), 20))) == 20


def test_random_sampler_moves_the_global_stream_once_per_pass():
    sampler = RandomSampler(range(50))
    torch.manual_seed(3)
    part = list(itertools.islice(sampler, 5))
    after_part = torch.rand(2).tolist()
    torch.manual_seed(3)
    whole = list(sampler)
    assert torch.rand(2).tolist() == after_part and whole[:5] == part and sorted(whole) == list(range(50))


def test_samplers_take_a_torch_generator():
    def order(cls, *args, **kw):
        return list(cls(*args, generator=torch.Generator().manual_seed(7), **kw))
    assert order(RandomSampler, range(20)) == order(RandomSampler, range(20))
    assert sorted(order(RandomSampler, range(20))) == list(range(20))
    assert order(RandomSampler, range(5), replacement=True, num_samples=70) == \
        order(RandomSampler, range(5), replacement=True, num_samples=70)
    picked = order(SubsetRandomSampler, [10, 20, 30, 40])
    assert sorted(picked) == [10, 20, 30, 40] and picked == order(SubsetRandomSampler, [10, 20, 30, 40])
    weighted = order(WeightedRandomSampler, [0.0, 1.0, 3.0], 200)
    assert len(weighted) == 200 and 0 not in weighted and weighted == order(WeightedRandomSampler, [0.0, 1.0, 3.0], 200)
    assert sorted(order(WeightedRandomSampler, [1.0, 1.0, 1.0], 3, replacement=False)) == [0, 1, 2]
    a = [s.indices for s in random_split(range(10), [6, 4], generator=torch.Generator().manual_seed(2))]
    assert a == [s.indices for s in random_split(range(10), [6, 4], generator=torch.Generator().manual_seed(2))]
    ds = TensorDataset(torch.arange(12))
    runs = [[b[0].tolist() for b in DataLoader(ds, batch_size=5, shuffle=True,
                                               generator=torch.Generator().manual_seed(1))] for _ in range(2)]
    assert runs[0] == runs[1] and sorted(sum(runs[0], [])) == list(range(12))
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        WeightedRandomSampler([1.0], 0)


def test_distributed_sampler_single_process_semantics():
    sampler = DistributedSampler(range(10))
    assert sampler.num_replicas == 1 and sampler.rank == 0 and len(sampler) == 10
    epoch0 = list(sampler)
    assert sorted(epoch0) == list(range(10)) and list(sampler) == epoch0       # the same epoch, the same order
    assert epoch0 == torch.randperm(10, generator=torch.Generator().manual_seed(0)).tolist()
    sampler.set_epoch(1)
    epoch1 = list(sampler)
    assert epoch1 != epoch0 and epoch1 == list(DistributedSampler(range(10), seed=1))
    assert list(DistributedSampler(range(5), shuffle=False)) == [0, 1, 2, 3, 4]


def test_distributed_sampler_pads_drops_and_strides_as_pytorch():
    assert list(DistributedSampler(range(10), num_replicas=3, rank=2, shuffle=False)) == [2, 5, 8, 1]
    short = DistributedSampler(range(10), num_replicas=3, rank=2, shuffle=False, drop_last=True)
    assert list(short) == [2, 5, 8] and len(short) == 3
    assert list(DistributedSampler(range(2), num_replicas=5, rank=4, shuffle=False)) == [0]   # padded by repeats
    shares = [list(DistributedSampler(range(11), num_replicas=4, rank=r, seed=5)) for r in range(4)]
    assert sorted(sum(shares, [])[:11]) != [] and set(sum(shares, [])) == set(range(11))
    assert all(len(s) == 3 for s in shares)
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(4), num_replicas=3, rank=3)


# -- transforms against torchvision ------------------------------------------------------------------


FIXTURES = json.loads(FIXTURE.read_text())


@pytest.mark.parametrize("case", FIXTURES["cases"], ids=lambda c: f"{c['name']}-{c['dtype']}")
def test_deterministic_transforms_match_torchvision(case):
    kwargs = dict(case["kwargs"])
    if "interpolation" in kwargs:
        kwargs["interpolation"] = T.InterpolationMode(kwargs["interpolation"])
    transform = getattr(T, case["transform"])(*case["args"], **kwargs)
    image = np.array(FIXTURES["inputs"][case["dtype"]], dtype=case["dtype"]).reshape(FIXTURES["shape"])
    out = transform(torch.from_numpy(image))
    want = np.array(case["values"], dtype=case["dtype"]).reshape(case["shape"])
    assert out.numpy().dtype == want.dtype and out.shape == tuple(case["shape"])
    if case["dtype"] == "uint8":
        np.testing.assert_array_equal(out.numpy(), want)
    else:   # float32 sums in another order than PyTorch's kernels: within two ulps of 1
        np.testing.assert_allclose(out.numpy(), want, rtol=0, atol=2.5e-7)
    hwc = transform(np.ascontiguousarray(image.transpose(1, 2, 0)))           # an HWC array: the same numbers
    assert hwc.dtype == want.dtype
    np.testing.assert_array_equal(hwc, out.numpy().transpose(1, 2, 0))


def image(h=6, w=8):
    return (np.arange(h * w * 3, dtype=np.int64).reshape(h, w, 3) * 7 % 256).astype(np.uint8)


def test_random_crop_takes_a_window_of_the_padded_image():
    img = image()
    for mode in ("constant", "edge", "reflect", "symmetric"):
        padded = np.pad(img, ((2, 2), (2, 2), (0, 0)), mode)
        out = T.RandomCrop((6, 8), padding=2, padding_mode=mode)(img)
        assert out.shape == (6, 8, 3)
        assert any(np.array_equal(padded[i:i + 6, j:j + 8], out) for i in range(5) for j in range(5))
    t = T.RandomCrop(4, padding=(1, 2), fill=9)(torch.from_numpy(img.transpose(2, 0, 1).copy()))
    assert t.shape == (3, 4, 4) and t.dtype is torch.uint8
    grown = T.RandomCrop((9, 8), pad_if_needed=True)(img)                 # height padded by 3 on both sides
    assert grown.shape == (9, 8, 3)
    with pytest.raises(ValueError, match=r"Required crop size \(7, 7\) is larger than input image size \(6, 8\)"):
        T.RandomCrop(7)(img)
    with pytest.raises(ValueError, match="Padding mode should be either constant, edge, reflect or symmetric"):
        T.RandomCrop(3, padding=1, padding_mode="wrap")


def test_random_crop_and_flip_draw_from_the_global_stream():
    img = image(20, 20)
    torch.manual_seed(5)
    first = [T.RandomCrop(8)(img) for _ in range(3)]
    torch.manual_seed(5)
    assert all(np.array_equal(a, T.RandomCrop(8)(img)) for a in first)
    flips = [np.array_equal(T.RandomHorizontalFlip()(img), img[:, ::-1]) for _ in range(200)]
    assert 40 < sum(flips) < 160
    np.testing.assert_array_equal(T.RandomHorizontalFlip(p=1.0)(img), img[:, ::-1])
    np.testing.assert_array_equal(T.RandomHorizontalFlip(p=0.0)(img), img)


def test_random_resized_crop_of_the_whole_image_is_resize():
    img = torch.rand(3, 12, 16)
    whole = T.RandomResizedCrop((6, 10), scale=(1.0, 1.0), ratio=(16 / 12, 16 / 12))(img)
    np.testing.assert_array_equal(whole.numpy(), T.Resize((6, 10))(img).numpy())
    out = T.RandomResizedCrop(5)(image(30, 40))
    assert out.shape == (5, 5, 3) and out.dtype == np.uint8
    with pytest.raises(TypeError, match="Scale should be a sequence"):
        T.RandomResizedCrop(5, scale=0.5)


def test_resize_keeps_formats_and_checks_its_arguments():
    half = T.Resize((3, 5))(torch.rand(2, 3, 9, 11).half())
    assert half.dtype is torch.float16 and half.shape == (2, 3, 3, 5)
    same = torch.rand(3, 4, 4)
    assert T.Resize(4)(same) is same
    with pytest.raises(TypeError, match="Size should be int or sequence"):
        T.Resize("big")
    with pytest.raises(ValueError, match="If size is a sequence, it should have 1 or 2 values"):
        T.Resize((1, 2, 3))
    with pytest.raises(ValueError, match="max_size should only be passed if size specifies the length of the "
                                         "smaller edge"):
        T.Resize((4, 4), max_size=8)(same)
    with pytest.raises(NotImplementedError, match="NEAREST, NEAREST_EXACT or BILINEAR"):
        T.Resize(2, interpolation=T.InterpolationMode.BICUBIC)(same)


def test_color_jitter_checks_ranges_and_keeps_images_in_range():
    assert T.ColorJitter().brightness is None and T.ColorJitter(hue=0.1).hue == (-0.1, 0.1)
    assert T.ColorJitter(brightness=2).brightness == (0.0, 3.0)
    img = image()
    np.testing.assert_array_equal(T.ColorJitter()(img), img)
    out = T.ColorJitter(0.5, 0.5, 0.5, 0.2)(torch.rand(3, 5, 5))
    assert out.shape == (3, 5, 5) and 0 <= out.numpy().min() and out.numpy().max() <= 1
    with pytest.raises(ValueError, match="If brightness is a single number, it must be non negative."):
        T.ColorJitter(brightness=-1)
    with pytest.raises(ValueError, match=r"hue values should be between \(-0.5, 0.5\), but got \[-0.6, 0.6\]"):
        T.ColorJitter(hue=0.6)
    with pytest.raises(TypeError, match="contrast should be a single number or a list/tuple with length 2."):
        T.ColorJitter(contrast=(1, 2, 3))


def test_transforms_on_pil_images_use_pillow():
    Image = pil()
    img = Image.fromarray(image(10, 12))
    assert np.array_equal(np.asarray(T.Resize((5, 7))(img)), np.asarray(img.resize((7, 5), Image.Resampling.BILINEAR)))
    assert np.array_equal(np.asarray(T.RandomHorizontalFlip(1.0)(img)), image(10, 12)[:, ::-1])
    assert np.array_equal(np.asarray(T.CenterCrop(4)(img)), image(10, 12)[3:7, 4:8])
    padded = T.RandomCrop(12, padding=2, padding_mode="reflect")(img)
    assert isinstance(padded, Image.Image) and padded.size == (12, 12)
    jittered = T.ColorJitter(0.4, 0.4, 0.4, 0.1)(img)
    assert isinstance(jittered, Image.Image) and jittered.mode == "RGB" and jittered.size == img.size
    assert T.ToTensor()(T.RandomResizedCrop(6)(img)).shape == (3, 6, 6)


# -- FakeData and ImageFolder ------------------------------------------------------------------------


def test_fake_data_is_the_same_per_index_and_leaves_the_global_stream_alone():
    data = datasets.FakeData(size=5, image_size=(3, 8, 6), num_classes=4)
    torch.manual_seed(1)
    expected = torch.rand(3).tolist()
    torch.manual_seed(1)
    img, target = data[2]
    assert torch.rand(3).tolist() == expected
    assert img.shape == (8, 6, 3) and img.dtype == np.uint8 and isinstance(target, int) and 0 <= target < 4
    again, target2 = datasets.FakeData(size=5, image_size=(3, 8, 6), num_classes=4)[2]
    assert np.array_equal(img, again) and target == target2
    shifted = datasets.FakeData(size=5, image_size=(3, 8, 6), num_classes=4, random_offset=1)[1]
    assert np.array_equal(shifted[0], img) and shifted[1] == target
    assert not np.array_equal(data[3][0], img) and len(data) == 5
    assert datasets.FakeData(size=2, image_size=(1, 4, 5))[0][0].shape == (4, 5)
    with pytest.raises(IndexError, match="FakeData index out of range"):
        data[5]


def test_fake_data_through_transforms_and_the_loader():
    data = datasets.FakeData(size=6, image_size=(3, 10, 10), num_classes=3,
                             transform=T.Compose([T.RandomCrop(8, padding=1), T.ToTensor()]),
                             target_transform=lambda t: torch.tensor(t.item() + 10))
    images, targets = next(iter(DataLoader(data, batch_size=4)))
    assert images.shape == (4, 3, 8, 8) and images.dtype is torch.float32
    assert targets.dtype is torch.int64 and set(targets.tolist()) <= {10, 11, 12}


def make_folder(root, files):
    for rel, pixels in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        pil().fromarray(pixels).save(path)


def test_image_folder_reads_classes_and_images(tmp_path):
    red, blue = np.zeros((4, 5, 3), np.uint8), np.zeros((3, 2, 3), np.uint8)
    red[..., 0], blue[..., 2] = 200, 100
    make_folder(tmp_path, {"dog/b.png": red, "dog/sub/a.png": blue, "cat/x.png": blue})
    (tmp_path / "cat" / "notes.txt").write_text("not an image")
    folder = datasets.ImageFolder(tmp_path)
    assert folder.classes == ["cat", "dog"] and folder.class_to_idx == {"cat": 0, "dog": 1}
    assert folder.samples == [(str(tmp_path / "cat" / "x.png"), 0), (str(tmp_path / "dog" / "b.png"), 1),
                              (str(tmp_path / "dog" / "sub" / "a.png"), 1)]
    assert folder.imgs == folder.samples and folder.targets == [0, 1, 1] and len(folder) == 3
    img, target = folder[1]
    assert img.mode == "RGB" and np.array_equal(np.asarray(img), red) and target == 1
    tensor, _ = datasets.ImageFolder(tmp_path, transform=T.Compose([T.Resize((2, 2)), T.ToTensor()]))[0]
    assert tensor.shape == (3, 2, 2)


def test_image_folder_scans_without_pillow_and_says_what_it_needs(tmp_path, monkeypatch):
    for rel in ("a/1.npy", "b/2.npy"):
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        np.save(tmp_path / rel, np.full((2, 2), int(rel[2])))
    (tmp_path / "b" / "3.txt").write_text("not an array")
    folder = datasets.ImageFolder(tmp_path, loader=np.load, is_valid_file=lambda p: p.endswith(".npy"))
    assert folder.targets == [0, 1] and folder[1][0].tolist() == [[2, 2], [2, 2]]
    with pytest.raises(FileNotFoundError, match="Found no valid file for the classes a, b. Supported extensions are: "
                                                ".jpg, .jpeg"):
        datasets.ImageFolder(tmp_path)
    assert len(datasets.ImageFolder(tmp_path, allow_empty=True)) == 0
    with pytest.raises(FileNotFoundError, match="Couldn't find any class folder in"):
        datasets.ImageFolder(tmp_path / "a")
    monkeypatch.setitem(sys.modules, "PIL", None)                          # as if Pillow were not installed
    with pytest.raises(ImportError, match=r"with Pillow, which is not installed: pip install 'minifp\[vision\]'"):
        datasets.default_loader(str(tmp_path / "a" / "1.npy"))


def test_pad_vertical_flip_and_lambda():
    img = image()
    np.testing.assert_array_equal(T.Pad((1, 2), padding_mode="edge")(img), np.pad(img, ((2, 2), (1, 1), (0, 0)), "edge"))
    t = T.Pad((1, 2, 3, 4), fill=5)(torch.from_numpy(img.transpose(2, 0, 1).copy()))
    assert t.shape == (3, 12, 12) and t[0, 0, 0].item() == 5
    np.testing.assert_array_equal(T.RandomVerticalFlip(p=1.0)(img), img[::-1])
    assert T.Lambda(lambda x: x[:2])(img).shape == (2, 8, 3)
    with pytest.raises(ValueError, match="Padding must be an int or a 1, 2, or 4 element tuple, not a 3 element tuple"):
        T.Pad((1, 2, 3))
    with pytest.raises(TypeError, match="Argument lambd should be callable, got 'int'"):
        T.Lambda(3)


def test_color_jitter_on_one_channel_images():
    gray = image()[..., 0]
    out = T.ColorJitter(brightness=(2.0, 2.0))(gray)
    assert out.shape == gray.shape and out.dtype == np.uint8
    np.testing.assert_array_equal(out, np.clip(gray.astype(np.float32) * 2, 0, 255).astype(np.uint8))
    np.testing.assert_array_equal(T.ColorJitter(saturation=(0.5, 0.5), hue=(0.2, 0.2))(gray), gray)
    with pytest.raises(TypeError, match=r"permitted channel values are \[1, 3\]"):
        T.ColorJitter(brightness=(2.0, 2.0))(torch.zeros(2, 4, 4))
