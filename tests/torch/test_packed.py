"""Packed sequences (torch.nn.utils.rnn), RNN/LSTM/GRU on a PackedSequence and nn.EmbeddingBag against real PyTorch
2.13 on the CPU: tests/fixtures/pytorch/packed.json, recorded by tools/record_torch_packed.py, whose case functions
run here with minifp.torch. Then what a fixture cannot hold: the packed path computes what the padded path computes
on each sequence's own steps, and the checks of a CUDA lengths tensor.

Bit for bit: packing and unpacking (they move values), EmbeddingBag's outputs (a bag's sum of at most four rows,
for a mean divided by the bag's size, in both; minifp's sum is a matmul whose order BLAS picks, so longer bags may
differ in the last bit) and its sum and max weight gradients, reprs, state_dict keys and errors. Within RTOL of the array's
largest magnitude: the recurrent layers (PyTorch's CPU sigmoid and tanh are its own vectorised approximations, not
correctly rounded, and its packed path projects each step's inputs apart where minifp projects them at once) and
the classifier's losses and weights (its log-softmax); EmbeddingBag's weight gradients in mean mode or with
per_sample_weights and its per_sample_weights gradients (see the test). The largest differences recorded: 5.8e-7
of the array's scale (recurrent), 9.7e-8 (training), 7.1e-8 (bags).
"""
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import minifp.torch as torch
from minifp.torch import nn
from minifp.torch.nn.utils import rnn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from record_torch_packed import (BAGS, bag, bag_module, conversion, error, recurrent, sequence,  # noqa: E402
                                 training, utility, wave)

FIX = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "pytorch" / "packed.json").read_text())
RTOL = 2e-6


def _compare(path, got, want, exact=True):
    """got == want (recursively); float32 arrays bit for bit where exact, else within RTOL of the array's largest
    magnitude."""
    if isinstance(want, dict) and "values" in want:
        assert isinstance(got, dict) and (got["dtype"], got["shape"]) == (want["dtype"], want["shape"]), (path, got)
        if not want["dtype"].startswith("torch.float"):
            assert got["values"] == want["values"], path
            return
        g, w = np.asarray(got["values"], np.float32), np.asarray(want["values"], np.float32)
        if exact:
            assert np.array_equal(g, w, equal_nan=True), (path, g, w)
        else:
            assert np.abs(g - w).max(initial=0) <= RTOL * np.abs(w).max(initial=0), (path, g, w)
    elif isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), (path, got, want)
        for key in want:
            _compare(f"{path}/{key}", got[key], want[key], exact)
    elif isinstance(want, list) and want and isinstance(want[0], (dict, list)):
        assert isinstance(got, list) and len(got) == len(want), path
        for k, (g, w) in enumerate(zip(got, want)):
            _compare(f"{path}/{k}", g, w, exact)
    elif isinstance(want, list) and want and isinstance(want[0], float) and not exact:
        assert len(got) == len(want) and all(abs(g - w) <= RTOL * abs(w) for g, w in zip(got, want)), path
    else:
        assert got == want, (path, got, want)


@pytest.mark.parametrize("name", sorted(FIX["utilities"]))
def test_packing_and_unpacking_are_pytorchs(name):
    _compare(name, utility(torch, name), FIX["utilities"][name])


@pytest.mark.parametrize("name", sorted(FIX["sequences"]))
def test_pack_sequence_and_unpack_sequence_are_pytorchs(name):
    _compare(name, sequence(torch, name), FIX["sequences"][name])


@pytest.mark.parametrize("expression", sorted(FIX["conversions"]))
def test_packed_sequence_conversions_are_pytorchs(expression):
    want = json.loads(json.dumps(FIX["conversions"][expression]).replace("torch.float64", "torch.float32"))
    if expression == "p.double()":      # minifp has no float64: double is float32 (the README says so) ...
        want["same"] = True             # ... so the float32 data is unchanged and the same object comes back
    _compare(expression, conversion(torch, expression), want)


@pytest.mark.parametrize("ctor", sorted(FIX["recurrent"]))
def test_recurrent_layers_on_packed_sequences_compute_what_pytorch_computes(ctor):
    _compare(ctor, recurrent(torch, ctor), FIX["recurrent"][ctor], exact=False)


@pytest.mark.parametrize("expression", sorted(FIX["bag_modules"]))
def test_embedding_bag_modules_are_pytorchs(expression):
    _compare(expression, bag_module(torch, expression), FIX["bag_modules"][expression])


@pytest.mark.parametrize("name", sorted(FIX["bags"]))
def test_embedding_bag_outputs_and_gradients_are_pytorchs(name):
    got, want = bag(torch, name), FIX["bags"][name]
    _compare(name, got["output"], want["output"])
    # PyTorch's weight gradient adds scale * grad into each row with an axpy (scale: 1 / size for mean, rounded
    # first; the sample's weight with per_sample_weights, fused where it repeats an index) and its per_sample_weights
    # gradient is a vectorised dot product; minifp's are grad / size and matmuls: each may differ by an ulp
    inexact = BAGS[name][0].get("mode", "mean") == "mean" or BAGS[name][3] is not None
    _compare(name, got["grad"], want["grad"], exact=not inexact)
    _compare(name, got["grad_per_sample_weights"], want["grad_per_sample_weights"], exact=False)


def test_the_torchtext_classifier_trains_as_in_pytorch():
    _compare("training", training(torch), FIX["training"], exact=False)


@pytest.mark.parametrize("expression", sorted(FIX["errors"]))
def test_errors_are_pytorchs(expression):
    assert error(torch, expression) == FIX["errors"][expression]


# ---- what the fixture cannot hold

@pytest.mark.parametrize("kind", [nn.RNN, nn.LSTM, nn.GRU])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_the_packed_path_is_the_padded_path_on_each_sequences_own_steps(kind, bidirectional):
    torch.manual_seed(3)
    m = kind(3, 4, num_layers=2, bidirectional=bidirectional)
    lengths = [2, 5, 1, 3]
    x = wave(torch, (5, 4, 3))
    out, finals = m(rnn.pack_padded_sequence(x, lengths, enforce_sorted=False))
    finals = finals if isinstance(finals, tuple) else (finals,)
    padded, got_lengths = rnn.pad_packed_sequence(out)
    assert got_lengths.tolist() == lengths
    for i, n in enumerate(lengths):
        alone, alone_finals = m(x[:n, i:i + 1])
        alone_finals = alone_finals if isinstance(alone_finals, tuple) else (alone_finals,)
        # equal up to the matmul of a batch of one against a batch of four (BLAS may sum a row in another order)
        np.testing.assert_allclose(padded[:n, i:i + 1].detach().numpy(), alone.detach().numpy(), rtol=0, atol=1e-6)
        assert not padded[n:, i].detach().numpy().any()
        for f, a in zip(finals, alone_finals):
            np.testing.assert_allclose(f[:, i:i + 1].detach().numpy(), a.detach().numpy(), rtol=0, atol=1e-6)


def test_packed_and_padded_agree_bit_for_bit_when_every_sequence_is_as_long():
    torch.manual_seed(4)
    m = nn.LSTM(3, 4, bidirectional=True, batch_first=True)
    x = wave(torch, (3, 4, 3))
    out, (h, c) = m(rnn.pack_padded_sequence(x, [4, 4, 4], batch_first=True))
    want, (wh, wc) = m(x)
    assert np.array_equal(rnn.pad_packed_sequence(out, batch_first=True)[0].detach().numpy(), want.detach().numpy())
    assert all(np.array_equal(a.detach().numpy(), b.detach().numpy()) for a, b in [(h, wh), (c, wc)])


def test_lengths_on_the_gpu_are_refused_as_pytorch_refuses_them():
    x = torch.zeros(3, 2, 1)
    with warnings.catch_warnings():         # (minifp's note, once, that 'cuda' is emulated here)
        warnings.simplefilter("ignore")
        lengths = torch.tensor([3, 2], device="cuda")
    # PyTorch's message, as its CPU check of the lengths words it (not recordable on the CPU-only recorder)
    with pytest.raises(RuntimeError, match=r"^'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 "
                                           r"Long tensor$"):
        rnn.pack_padded_sequence(x, lengths)


def test_a_packed_sequence_is_a_named_tuple_that_unpacks():
    p = rnn.pack_sequence([torch.ones(2, 1), torch.ones(3, 1)], enforce_sorted=False)
    data, batch_sizes, sorted_indices, unsorted_indices = p
    assert isinstance(p, tuple) and p.data is data and p._fields == ("data", "batch_sizes", "sorted_indices",
                                                                    "unsorted_indices")
    assert batch_sizes.tolist() == [2, 2, 1] and sorted_indices.tolist() == [1, 0] == unsorted_indices.tolist()
    assert rnn.PackedSequence((data, batch_sizes)).sorted_indices is None
    assert torch.nn.utils.rnn is rnn and rnn.PackedSequence is nn.utils.rnn.PackedSequence


def test_embedding_bag_reset_parameters_and_from_pretrained():
    torch.manual_seed(0)
    m = nn.EmbeddingBag(5, 3, padding_idx=2)
    before = m.weight.detach().numpy().copy()
    m.reset_parameters()
    after = m.weight.detach().numpy()
    assert not np.array_equal(before, after) and not after[2].any() and after[[0, 1, 3, 4]].all()
    w = wave(torch, (4, 2))
    frozen = nn.EmbeddingBag.from_pretrained(w, mode="sum")
    assert np.array_equal(frozen.weight.detach().numpy(), w.numpy()) and not frozen.weight.requires_grad
    y = frozen(torch.tensor([0, 3, 1]), torch.tensor([0, 2]))
    assert np.array_equal(y.numpy(), np.stack([w.numpy()[0] + w.numpy()[3], w.numpy()[1]]))
    assert nn.modules.sparse.EmbeddingBag is nn.EmbeddingBag


def test_a_packed_sequence_moves_to_the_gpu_with_its_indices_and_keeps_batch_sizes_on_the_cpu():
    p = rnn.pack_sequence([torch.ones(2, 1), torch.ones(3, 1)], enforce_sorted=False)
    with warnings.catch_warnings():         # (minifp's note, once, that 'cuda' is emulated here)
        warnings.simplefilter("ignore")
        q = p.to("cuda")
    assert q.is_cuda and not p.is_cuda and q.sorted_indices.is_cuda and q.unsorted_indices.is_cuda
    assert q.batch_sizes is p.batch_sizes and q.cpu().data.device.type == "cpu" and p.cpu() is p
    out, h = nn.GRU(1, 2)(p)
    assert out.batch_sizes is p.batch_sizes and out.sorted_indices is p.sorted_indices and h.shape == (1, 2, 2)


def test_a_length_past_the_padded_steps_is_refused():
    # PyTorch 2.13 returns batch_sizes [3, 3, 2, 1, 1] (ten steps' worth) with nine rows of data here; minifp refuses
    with pytest.raises(RuntimeError, match="the longest length 5 is more than the 4 steps of the padded input"):
        rnn.pack_padded_sequence(torch.zeros(4, 3, 2), [5, 3, 2])
