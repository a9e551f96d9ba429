"""Conv1d, ConvTranspose2d, InstanceNorm2d, RMSNorm, PixelShuffle, PixelUnshuffle, Upsample, LSTM, GRU and RNN
against real PyTorch 2.13 on the CPU (tests/fixtures/pytorch/layers_more.json, recorded by tools/record_pytorch.py):
the same weights (loaded under PyTorch's state_dict keys) and inputs give the same float32 outputs and gradients."""
import json
import pathlib

import numpy as np
import pytest

import minifp.torch as torch
from minifp.torch import nn
from minifp.torch.nn import functional as F

FIXTURE = json.loads((pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "pytorch" / "layers_more.json")
                     .read_text())
SPECS = FIXTURE["inputs"]


def wave(spec, requires_grad=False):
    """The float32 tensor a wave() spec describes (the recorder's formula)."""
    i = np.arange(int(np.prod(spec["shape"], dtype=np.int64)), dtype=np.int64)
    phase = spec["freq"] * i.astype(np.float64) + spec["k"] + spec["quad"] * ((i * i) % 10007).astype(np.float64)
    v = (spec["offset"] + spec["scale"] * np.sin(phase)).astype(np.float32).reshape(spec["shape"])
    return torch.tensor(v, requires_grad=requires_grad)


def flat(y):
    return [y] if isinstance(y, torch.Tensor) else [t for item in y for t in flat(item)]


def close(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * max(np.abs(want).max(), 1e-30))


def run(ctor):
    rec = FIXTURE["cases"][ctor]
    m = eval(ctor, {}, vars(nn))        # noqa: S307 - the fixture's keys are constructor calls
    assert list(m.state_dict()) == rec["state_dict"] and repr(m) == rec["repr"]
    if rec["state_dict"]:
        m.load_state_dict({k: wave(SPECS[f"{ctor}.{k}"]) for k in rec["state_dict"]})
    inputs = {a: wave(SPECS[f"{ctor}:{a}"], requires_grad=True) for a in rec["input_grads"]}
    outs = flat(eval(rec["call"], {}, {"m": m, **inputs}))      # noqa: S307
    loss = None
    for k, o in enumerate(outs):
        term = (o * wave(SPECS[f"{ctor}:g{k}"])).sum()
        loss = term if loss is None else loss + term
    loss.backward()
    return rec, m, inputs, outs


@pytest.mark.parametrize("ctor", FIXTURE["cases"])
def test_outputs_and_gradients_match_pytorch(ctor):
    rec, m, inputs, outs = run(ctor)
    assert len(outs) == len(rec["outputs"])
    for o, want in zip(outs, rec["outputs"]):
        assert list(o.shape) == want["shape"]
        close(o.detach().numpy(), want["values"])
    for a, t in inputs.items():
        close(t.grad.numpy(), rec["input_grads"][a])
    params = dict(m.named_parameters())
    assert list(params) == list(rec["param_grads"])
    for name, want in rec["param_grads"].items():
        close(params[name].grad.numpy(), want)


ERRORS = {"pixel_shuffle_channels": lambda: F.pixel_shuffle(torch.zeros(1, 3, 2, 2), 2),
          "lstm_input_size": lambda: nn.LSTM(4, 6)(torch.zeros(5, 3, 5)),
          "rnn_nonlinearity": lambda: nn.RNN(4, 6, nonlinearity="gelu"),
          "gru_proj_size": lambda: nn.GRU(4, 6, proj_size=2),
          "lstm_proj_size_6": lambda: nn.LSTM(4, 6, proj_size=6),
          "interpolate_both": lambda: F.interpolate(torch.zeros(1, 1, 2, 2), size=3, scale_factor=2),
          "interpolate_neither": lambda: F.interpolate(torch.zeros(1, 1, 2, 2)),
          "instance_norm1d_dims": lambda: nn.InstanceNorm1d(4)(torch.zeros(4)),
          "batch_norm3d_dims": lambda: nn.BatchNorm3d(3)(torch.zeros(2, 3, 4, 4)),
          "instance_norm3d_features": lambda: nn.InstanceNorm3d(3, affine=True)(torch.zeros(1, 4, 2, 2, 2))}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_match_pytorch(name):
    want = FIXTURE["errors"][name]["error"]
    with pytest.raises(Exception) as info:
        ERRORS[name]()
    assert type(info.value).__name__ == want["type"] and str(info.value) == want["message"]


def test_every_layer_is_recorded():
    recorded = {ctor.split("(")[0] for ctor in FIXTURE["cases"]}
    assert recorded == set(nn.layers.__all__) | set(nn.rnn.__all__)


def test_nearest_upsampling_selects_values_in_half_precision():
    """Nearest resizing and pixel shuffling move values without arithmetic: float16 in, the same float16 out."""
    x = torch.tensor(np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4) / 7).half()
    up = nn.Upsample(scale_factor=2)(x)
    assert up.dtype == torch.float16 and up[0, 0, ::2, ::2].tolist() == x[0, 0].tolist()
    assert F.pixel_unshuffle(F.pixel_shuffle(up.reshape(1, 4, 3, 4), 2), 2).tolist() == up.reshape(1, 4, 3, 4).tolist()


def test_rms_norm_rounds_once_into_half():
    """PyTorch computes RMSNorm of a float16 input in float32 and casts back once."""
    x = torch.tensor(np.linspace(-3, 3, 16, dtype=np.float32).reshape(2, 8)).half()
    got = nn.RMSNorm(8)(x).detach()
    x32 = x.float().numpy()
    want = (x32 / np.sqrt((x32 * x32).mean(-1, keepdims=True) + np.finfo(np.float16).eps)).astype(np.float16)
    assert got.dtype == torch.float16
    assert np.abs(got.numpy().astype(np.float32) - want.astype(np.float32)).max() <= 2.0**-10 * 2


def test_conv_transpose_output_size_picks_the_output_padding():
    """A stride-2 layer maps 5 to 9 or 10: output_size chooses (PyTorch's range check and message)."""
    m = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1)
    x = torch.randn(2, 4, 5, 5)
    assert m(x, output_size=(10, 10)).tolist() == F.conv_transpose2d(x, m.weight, m.bias, 2, 1, 1).tolist()
    assert m(x, output_size=[2, 6, 9, 10]).shape == (2, 6, 9, 10)
    with pytest.raises(ValueError, match=r"requested an output size of \[12, 10\], but valid sizes range from "
                                         r"\[9, 9\] to \[10, 10\] \(for an input of torch.Size\(\[5, 5\]\)\)"):
        m(x, output_size=[2, 6, 12, 10])


def test_instance_norm_keeps_the_input_dtype_under_autocast():
    """instance_norm is batch_norm in PyTorch, on no autocast list: float16 in, float16 out (group_norm, which
    minifp computes it with, would be float32 under CUDA autocast)."""
    x = torch.randn(2, 4, 3, 3).to("cuda").half()
    with torch.autocast("cuda"):
        assert nn.InstanceNorm2d(4)(x).dtype == torch.float16
        assert F.group_norm(x, 4).dtype == torch.float32


def test_rnn_dropout_between_layers_only_in_training():
    torch.manual_seed(0)
    m = nn.LSTM(4, 6, num_layers=2, dropout=0.5)
    x = torch.randn(5, 3, 4)
    assert m(x)[0].tolist() != m(x)[0].tolist()            # fresh masks between the layers
    m.eval()
    assert m(x)[0].tolist() == m(x)[0].tolist()
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1, but got "
                                         "dropout=0.5 and num_layers=1"):
        single = nn.GRU(4, 6, dropout=0.5)                 # one layer: nothing between layers to drop
    assert single(x)[0].tolist() == single(x)[0].tolist()


def test_instance_norm_running_statistics_match_pytorch():
    """track_running_stats: training updates the buffers with the batch mean of the instances' statistics (x,
    then 2x, momentum 0.3); eval normalises with them; num_batches_tracked stays 0, as PyTorch's."""
    rec = FIXTURE["instance_norm_running"]
    m = nn.InstanceNorm2d(3, affine=True, track_running_stats=True, momentum=0.3)
    assert list(m.state_dict()) == rec["state_dict"]
    x = wave(SPECS["running:x"])
    m(x)
    m(x * 2)
    close(m.running_mean.numpy(), rec["running_mean"])
    close(m.running_var.numpy(), rec["running_var"])
    assert m.num_batches_tracked.item() == rec["num_batches_tracked"] == 0
    close(m.eval()(x).detach().numpy(), rec["eval_output"])


def test_instance_norm_warns_of_unused_num_features():
    """Without affine, num_features is unused: a channel count that differs warns, in PyTorch's words, and runs."""
    want = FIXTURE["errors"]["instance_norm1d_features_warns"]
    with pytest.warns(UserWarning) as caught:
        out = nn.InstanceNorm1d(4)(torch.zeros(2, 5, 3))
    assert [(w.category.__name__, str(w.message)) for w in caught] == [(w["category"], w["message"])
                                                                       for w in want["warnings"]]
    assert want["error"] is None and out.shape == (2, 5, 3)
