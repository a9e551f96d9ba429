"""minifp.torch.utils.data: datasets, samplers, PyTorch's default collate and the DataLoader."""
import collections

import numpy as np
import pytest

import minifp
import minifp.torch as torch
from minifp.torch.utils.data import (BatchSampler, DataLoader, Dataset, IterableDataset, RandomSampler,
                                     SequentialSampler, Subset, TensorDataset, default_collate, default_convert,
                                     random_split)


def xy(n=10):
    x = torch.from_numpy(np.arange(2 * n, dtype=np.float32).reshape(n, 2))
    y = torch.from_numpy(np.arange(n, dtype=np.int64))
    return x, y


class Squares(Dataset):
    """A map-style dataset of (int, float, array, str) samples."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return i, i * 0.5, np.full(3, i, np.float32), f"s{i}"

    def __len__(self):
        return self.n


# -- TensorDataset and friends -------------------------------------------------------------------


def test_tensor_dataset_items_are_rows():
    x, y = xy()
    ds = TensorDataset(x, y)
    assert len(ds) == 10
    a, b = ds[3]
    np.testing.assert_array_equal(a.numpy(), [6, 7])
    assert b.item() == 3 and isinstance(a, torch.Tensor)


def test_tensor_dataset_checks_sizes_and_types():
    x, y = xy()
    with pytest.raises(ValueError, match=r"Size mismatch between tensors: first dimensions \[10, 9\]"):
        TensorDataset(x, y[:9])
    with pytest.raises(TypeError, match=r"tensors\[1\] is a ndarray"):
        TensorDataset(x, np.arange(10))


def test_subset_concat_and_random_split():
    ds = Squares(10)
    sub = Subset(ds, [4, 1])
    assert len(sub) == 2 and sub[0][0] == 4 and sub[1][0] == 1
    both = ds + Squares(3)
    assert len(both) == 13 and both[11][0] == 1 and both[-1][0] == 2
    parts = random_split(ds, [7, 3], generator=np.random.default_rng(0))
    assert [len(p) for p in parts] == [7, 3]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    assert [len(p) for p in random_split(ds, [0.5, 0.3, 0.2])] == [5, 3, 2]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(ds, [5, 4])


# -- samplers -------------------------------------------------------------------------------------


def test_batch_sampler_lengths_and_short_last_batch():
    assert list(BatchSampler(SequentialSampler(range(7)), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(SequentialSampler(range(7)), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=True"):
        BatchSampler(range(3), True, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got drop_last=1"):
        BatchSampler(range(3), 2, 1)


def test_random_sampler_draws_a_permutation_per_pass():
    order = list(RandomSampler(range(10), generator=np.random.default_rng(3)))
    assert sorted(order) == list(range(10))
    assert order == np.random.default_rng(3).permutation(10).tolist()
    longer = list(RandomSampler(range(4), num_samples=10, generator=np.random.default_rng(0)))
    assert len(longer) == 10 and sorted(longer[:4]) == sorted(longer[4:8]) == [0, 1, 2, 3]
    drawn = list(RandomSampler(range(4), replacement=True, num_samples=50, generator=np.random.default_rng(0)))
    assert len(drawn) == 50 and set(drawn) <= {0, 1, 2, 3}
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got replacement=1"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="generator must be None"):
        RandomSampler(range(3), generator=42)


# -- collate --------------------------------------------------------------------------------------


def test_default_collate_follows_pytorch_per_type():
    ints, floats, arrays, strings = default_collate([Squares(4)[i] for i in range(3)])    # a tuple gives a list
    assert ints.dtype is torch.int64 and ints.numpy().tolist() == [0, 1, 2]
    assert floats.dtype is getattr(torch, "float64", torch.float32)       # PyTorch: float64
    np.testing.assert_array_equal(floats.numpy(), [0.0, 0.5, 1.0])
    assert arrays.dtype is torch.float32 and arrays.shape == (3, 3)
    assert strings == ("s0", "s1", "s2")        # a column of strings: the tuple zip made, as PyTorch gives
    bools = default_collate([True, False])
    assert bools.dtype is torch.bool


def test_default_collate_of_tensors_stacks_them():
    a = torch.from_numpy(np.float16([[1, 2], [3, 4]]))
    b = torch.from_numpy(np.float16([[5, 6], [7, 8]]))
    out = default_collate([a, b])
    assert out.shape == (2, 2, 2) and out.dtype is torch.float16
    np.testing.assert_array_equal(out.numpy()[1], [[5, 6], [7, 8]])


def test_default_collate_of_numpy_scalars_keeps_their_dtype():
    out = default_collate([np.int32(1), np.int32(2)])
    assert out.dtype is torch.int32 and out.numpy().tolist() == [1, 2]


def test_default_collate_of_containers():
    Point = collections.namedtuple("Point", "x y")
    p = default_collate([Point(1, 2), Point(3, 4)])
    assert type(p) is Point and p.x.numpy().tolist() == [1, 3]
    d = default_collate([{"a": 1, "b": [1, 2]}, {"a": 2, "b": [3, 4]}])
    assert d["a"].numpy().tolist() == [1, 2]
    assert isinstance(d["b"], list) and d["b"][0].numpy().tolist() == [1, 3]
    od = default_collate([collections.OrderedDict(k=np.float32(1))] * 2)
    assert type(od) is collections.OrderedDict


def test_default_collate_errors_are_pytorchs():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, numbers, "
                                        "dicts or lists; found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_default_convert_turns_arrays_into_tensors_only():
    out = default_convert((np.arange(3), 5, "s", {"k": np.float32(2)}))
    assert isinstance(out, list) and isinstance(out[0], torch.Tensor) and out[1] == 5 and out[2] == "s"
    assert isinstance(out[3]["k"], torch.Tensor)


# -- DataLoader -----------------------------------------------------------------------------------


def test_loader_batches_in_order_with_a_short_last_batch():
    x, y = xy(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [b[1].numpy().tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert isinstance(batches[0], list) and isinstance(batches[0][0], torch.Tensor)
    assert batches[0][0].dtype is torch.float32 and batches[0][1].dtype is torch.int64
    np.testing.assert_array_equal(batches[2][0].numpy(), [[16, 17], [18, 19]])


def test_loader_drop_last():
    x, y = xy(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=4, drop_last=True)
    assert len(loader) == 2 and [len(b[1]) for b in loader] == [4, 4]


def test_tensor_dataset_batches_equal_the_stacked_samples():
    # The loader indexes a TensorDataset in one op per tensor; it must give what collating the rows gives.
    x, y = xy(9)
    x16 = torch.from_numpy(x.numpy().astype(np.float16))
    ds = TensorDataset(x16, y)
    fast = list(DataLoader(ds, batch_size=4, shuffle=True, generator=np.random.default_rng(5)))
    slow = list(DataLoader(ds, batch_size=4, shuffle=True, generator=np.random.default_rng(5),
                           collate_fn=lambda b: default_collate(b)))       # not default_collate itself: no shortcut
    assert len(fast) == 3 and fast[0][0].dtype is torch.float16
    for f, s in zip(fast, slow):
        for a, b in zip(f, s):
            assert a.dtype is b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_shuffle_is_a_permutation_repeatable_by_seed_and_new_each_epoch():
    x, y = xy(12)
    ds = TensorDataset(x, y)
    torch.manual_seed(7)
    loader = DataLoader(ds, batch_size=5, shuffle=True)
    epoch1 = np.concatenate([b[1].numpy() for b in loader])
    epoch2 = np.concatenate([b[1].numpy() for b in loader])
    assert sorted(epoch1) == list(range(12)) and sorted(epoch2) == list(range(12))
    assert epoch1.tolist() != epoch2.tolist()
    torch.manual_seed(7)
    again = np.concatenate([b[1].numpy() for b in DataLoader(ds, batch_size=5, shuffle=True)])
    assert again.tolist() == epoch1.tolist()
    with_gen = [b[1].numpy().tolist() for b in DataLoader(ds, batch_size=12, shuffle=True,
                                                           generator=np.random.default_rng(1))]
    assert with_gen == [np.random.default_rng(1).permutation(12).tolist()]


def test_loader_over_a_map_style_dataset_with_mixed_samples():
    loader = DataLoader(Squares(5), batch_size=2)
    ints, floats, arrays, strings = next(iter(loader))
    assert ints.numpy().tolist() == [0, 1] and strings == ("s0", "s1") and arrays.shape == (2, 3)
    assert len(loader) == 3


def test_batch_size_none_yields_converted_samples():
    loader = DataLoader(Squares(3), batch_size=None)
    first = next(iter(loader))
    assert first[0] == 0 and isinstance(first[2], torch.Tensor) and first[2].shape == (3,)
    assert len(loader) == 3


def test_custom_collate_fn_sampler_and_batch_sampler():
    loader = DataLoader(Squares(6), batch_size=2, collate_fn=lambda b: [s[0] for s in b])
    assert list(loader) == [[0, 1], [2, 3], [4, 5]]
    loader = DataLoader(Squares(6), batch_sampler=[[5, 0], [2]], collate_fn=lambda b: [s[0] for s in b])
    assert list(loader) == [[5, 0], [2]]
    loader = DataLoader(Squares(6), batch_size=3, sampler=[5, 4, 3, 2], collate_fn=lambda b: [s[0] for s in b])
    assert list(loader) == [[5, 4, 3], [2]]


def test_getitems_is_used_when_the_dataset_has_it():
    class Batched(Squares):
        calls = 0

        def __getitems__(self, indices):
            Batched.calls += 1
            return [self[i] for i in indices]

    assert len(list(DataLoader(Batched(6), batch_size=3))) == 2 and Batched.calls == 2


def test_iterable_dataset_batches_in_order():
    class Count(IterableDataset):
        def __iter__(self):
            return iter(range(7))

        def __len__(self):
            return 7

    assert [b.numpy().tolist() for b in DataLoader(Count(), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(DataLoader(Count(), batch_size=3)) == 3 and len(DataLoader(Count(), batch_size=3, drop_last=True)) == 2
    with pytest.raises(ValueError, match="DataLoader with IterableDataset: expected unspecified shuffle option, "
                                         "but got shuffle=True"):
        DataLoader(Count(), shuffle=True)


def test_worker_options_are_accepted_and_checked_as_pytorch_checks_them():
    x, y = xy(4)
    loader = DataLoader(TensorDataset(x, y), batch_size=2, num_workers=4, pin_memory=True, persistent_workers=True)
    assert loader.prefetch_factor == 2 and len(list(loader)) == 2
    cases = [(dict(num_workers=-1), "num_workers option should be non-negative; use num_workers=0 to disable "
                                    "multiprocessing."),
             (dict(timeout=-1), "timeout option should be non-negative"),
             (dict(prefetch_factor=2), "prefetch_factor option could only be specified in multiprocessing"),
             (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
             (dict(sampler=[0, 1], shuffle=True), "sampler option is mutually exclusive with shuffle"),
             (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive with batch_size, "
                                                       "shuffle, sampler, and drop_last"),
             (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching and is mutually "
                                                     "exclusive with drop_last"),
             (dict(batch_size=0), "batch_size should be a positive integer value, but got batch_size=0")]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            DataLoader(TensorDataset(x, y), **kwargs)


def test_loader_feeds_a_model_step():
    # The batches are face tensors that the engine's ops take directly.
    x, y = xy(6)
    w = torch.from_numpy(np.float32([[1.0], [-1.0]]))
    for xb, yb in DataLoader(TensorDataset(x, y), batch_size=3):
        out = minifp.matmul(xb, w)
        np.testing.assert_array_equal(out.numpy().ravel(), -np.ones(3, np.float32))
