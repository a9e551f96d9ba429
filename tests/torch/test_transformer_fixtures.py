"""nn.Transformer{Encoder,Decoder}{Layer,} and nn.Transformer against real PyTorch 2.13 on the CPU
(tests/fixtures/pytorch/transformer.json, recorded by tools/record_pytorch.py): with the same weights (loaded
through load_state_dict under PyTorch's keys) and inputs, the same float32 outputs and gradients within 1e-5."""
import json
import math
import pathlib
import warnings

import numpy as np
import pytest

import minifp.torch as torch
from minifp.torch import nn
from minifp.torch.nn import functional as F

FIXTURE = json.loads((pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "pytorch" / "transformer.json")
                     .read_text())
SPECS = FIXTURE["inputs"]


def wave(spec, requires_grad=False):
    """The float32 tensor a wave() spec describes (the recorder's formula)."""
    i = np.arange(int(np.prod(spec["shape"], dtype=np.int64)), dtype=np.int64)
    phase = spec["freq"] * i.astype(np.float64) + spec["k"] + spec["quad"] * ((i * i) % 10007).astype(np.float64)
    v = (spec["offset"] + spec["scale"] * np.sin(phase)).astype(np.float32).reshape(spec["shape"])
    return torch.tensor(v, requires_grad=requires_grad)


def masks():
    """tools/record_pytorch.py's make_masks(), with minifp.torch."""
    pad5 = [[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]]
    pad4 = [[False] * 4, [False] * 3 + [True], [False] * 2 + [True] * 2]
    band = [[abs(i - j) > 1 for j in range(5)] for i in range(5)]
    return {"pad_3x5": torch.tensor(pad5), "pad_3x4": torch.tensor(pad4), "band_5": torch.tensor(band),
            "causal_5": nn.Transformer.generate_square_subsequent_mask(5),
            "causal_4": nn.Transformer.generate_square_subsequent_mask(4)}


def close(got, want):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape
    # 1e-5 relative to the tensor's scale: entries near zero (sums that cancel) get the same absolute allowance.
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def run(case):
    rec = FIXTURE["cases"][case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = eval(rec["constructor"], {"nn": nn, "F": F})        # noqa: S307 - the fixture's own constructors
    assert list(m.state_dict()) == rec["state_dict"]           # PyTorch's keys, in PyTorch's order
    m.load_state_dict({k: wave(SPECS[f"{case}.{k}"]) for k in rec["state_dict"]})
    m.eval()
    inputs = {a: wave(SPECS[f"{case}:{a}"], requires_grad=True) for a in rec["input_grads"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # the mismatched-masks warning (test_warnings_and_errors...)
        y = eval(rec["call"], {"nn": nn}, {"m": m, **inputs, **masks()})     # noqa: S307
    y.backward(wave(SPECS[f"{case}:g"]))
    return rec, m, inputs, y


@pytest.mark.parametrize("case", FIXTURE["cases"])
def test_outputs_and_gradients_match_pytorch(case):
    rec, m, inputs, y = run(case)
    assert list(y.shape) == rec["output"]["shape"]
    close(y.detach().numpy(), rec["output"]["values"])
    for a, t in inputs.items():
        close(t.grad.numpy(), rec["input_grads"][a])
    grads = dict(m.named_parameters())
    assert list(grads) == list(rec["param_grads"])
    for name, want in rec["param_grads"].items():
        close(grads[name].grad.numpy(), want)


def test_square_subsequent_mask():
    got = nn.Transformer.generate_square_subsequent_mask(3)
    want = [[float(v) for v in row] for row in FIXTURE["square_subsequent_mask_3"]]
    assert got.dtype == torch.float32 and got.tolist() == want


def test_warnings_and_errors_match_pytorch():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 1)
        layer = nn.TransformerEncoderLayer(8, 2, 12, batch_first=True)
        enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        enc(torch.zeros(3, 5, 8), mask=masks()["causal_5"], src_key_padding_mask=masks()["pad_3x5"])
    want = {(w["category"], w["message"]) for w in FIXTURE["warnings"]}
    assert {(w.category.__name__, str(w.message)) for w in caught} == want
    errors = FIXTURE["errors"]
    calls = {"activation_tanh": lambda: nn.TransformerEncoderLayer(8, 2, activation="tanh"),
             "batch_mismatch": lambda: nn.Transformer(8, 2, 1, 1, 12)(torch.zeros(5, 3, 8), torch.zeros(4, 2, 8)),
             "feature_mismatch": lambda: nn.Transformer(8, 2, 1, 1, 12)(torch.zeros(5, 3, 8), torch.zeros(4, 3, 6))}
    for name, call in calls.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError) as info:
                call()
        assert str(info.value) == errors[name]["error"]["message"]


def test_defaults_are_pytorchs():
    layer = nn.TransformerEncoderLayer(16, 4)
    assert layer.linear1.out_features == 2048 and layer.dropout.p == 0.1 and layer.self_attn.batch_first is False
    assert layer.norm_first is False and layer.norm1.eps == 1e-5 and layer.activation is F.relu
    assert layer.activation_relu_or_gelu == 1
    assert nn.TransformerEncoderLayer(16, 4, activation="gelu").activation_relu_or_gelu == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)
    assert t.encoder.num_layers == 1 and isinstance(t.decoder.norm, nn.LayerNorm)
    bound = math.sqrt(6 / (48 + 16))                     # xavier_uniform_ on in_proj_weight (48, 16)
    w = t.encoder.layers[0].self_attn.in_proj_weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.5 * bound


def test_dropout_trains_and_eval_is_deterministic():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 12, dropout=0.5, batch_first=True)
    x = torch.ones(2, 3, 8)
    assert layer(x).tolist() != layer(x).tolist()          # training: fresh dropout masks
    layer.eval()
    assert layer(x).tolist() == layer(x).tolist()


def test_is_causal_is_a_hint_that_needs_its_mask():
    """PyTorch's MultiheadAttention (and so every Transformer layer) refuses is_causal=True without attn_mask."""
    layer = nn.TransformerEncoderLayer(8, 2, 12)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        layer(torch.zeros(5, 3, 8), is_causal=True)
    mha = nn.MultiheadAttention(8, 2)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        mha(torch.zeros(5, 3, 8), torch.zeros(5, 3, 8), torch.zeros(5, 3, 8), is_causal=True)
