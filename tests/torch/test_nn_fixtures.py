"""minifp.torch.nn against real PyTorch 2.13 on the CPU (tests/fixtures/pytorch/{modules,losses}.json, recorded by
tools/record_pytorch.py): the same formula weights and inputs give the same outputs, gradients and errors."""
import json
import pathlib
import warnings

import numpy as np
import pytest

import minifp.torch as torch
from minifp.torch import nn
from minifp.torch.nn import functional as F

HERE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "pytorch"
MODULES = json.loads((HERE / "modules.json").read_text())
LOSSES = json.loads((HERE / "losses.json").read_text())


def wave(spec, requires_grad=False):
    """The float32 tensor a wave() spec describes (the recorder's formula)."""
    i = np.arange(int(np.prod(spec["shape"], dtype=np.int64)), dtype=np.int64)
    phase = spec["freq"] * i.astype(np.float64) + spec["k"] + spec["quad"] * ((i * i) % 10007).astype(np.float64)
    v = (spec["offset"] + spec["scale"] * np.sin(phase)).astype(np.float32).reshape(spec["shape"])
    return torch.tensor(v, requires_grad=requires_grad)


def values(info):
    v = info["values"]
    return np.array(v if not isinstance(v, str) else float(v), dtype=np.float64)


def close(got, info, rtol=1e-5, atol=1e-6):
    assert list(got.shape) == info["shape"]
    np.testing.assert_allclose(np.asarray(got.float32() if got.fmt is not None else got.numpy(), np.float64),
                               values(info), rtol=rtol, atol=atol)


def with_weights(module, label):
    """Set every floating state_dict entry from the fixture's specs, through load_state_dict."""
    state = module.state_dict()
    new = {k: (wave(MODULES["inputs"][f"{label}.{k}"]) if v.fmt is not None else v) for k, v in state.items()}
    module.load_state_dict(new)
    return module


X = {name: wave(spec) for name, spec in MODULES["inputs"].items() if "." not in name}

LAYERS = {
    "LayerNorm(8)": (lambda: nn.LayerNorm(8), "x_ln"),
    "LayerNorm([3, 8], eps=1e-3)": (lambda: nn.LayerNorm([3, 8], eps=1e-3), "x_ln"),
    "LayerNorm(8, elementwise_affine=False)": (lambda: nn.LayerNorm(8, elementwise_affine=False), "x_ln"),
    "GroupNorm(2, 4)": (lambda: nn.GroupNorm(2, 4), "x_4ch"),
    "Conv2d(4, 6, 3, padding=1, groups=2)": (lambda: nn.Conv2d(4, 6, 3, padding=1, groups=2), "x_conv"),
    "Conv2d(4, 6, 3, dilation=2)": (lambda: nn.Conv2d(4, 6, 3, dilation=2), "x_conv"),
    "Conv2d(4, 6, 4, padding='same')": (lambda: nn.Conv2d(4, 6, 4, padding="same"), "x_conv"),
    "Conv2d(4, 6, 3, padding='same', dilation=2)": (lambda: nn.Conv2d(4, 6, 3, padding="same", dilation=2), "x_conv"),
    "Conv2d(4, 6, 3, stride=2, padding=1)": (lambda: nn.Conv2d(4, 6, 3, stride=2, padding=1), "x_conv"),
    "Conv2d(4, 6, 3, stride=2, bias=False)": (lambda: nn.Conv2d(4, 6, 3, stride=2, bias=False), "x_conv"),
    "Conv2d(4, 4, 3, padding=1, groups=4)": (lambda: nn.Conv2d(4, 4, 3, padding=1, groups=4), "x_conv"),
    "MaxPool2d(2)": (lambda: nn.MaxPool2d(2), "x_conv"),
    "MaxPool2d(3, stride=2, padding=1)": (lambda: nn.MaxPool2d(3, stride=2, padding=1), "x_conv"),
    "MaxPool2d(2, ceil_mode=True)": (lambda: nn.MaxPool2d(2, ceil_mode=True), "x_conv"),
    "AvgPool2d(2)": (lambda: nn.AvgPool2d(2), "x_conv"),
    "AvgPool2d(3, stride=2, padding=1)": (lambda: nn.AvgPool2d(3, stride=2, padding=1), "x_conv"),
    "AvgPool2d(3, stride=2, padding=1, count_include_pad=False)":
        (lambda: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), "x_conv"),
    "AvgPool2d(2, ceil_mode=True)": (lambda: nn.AvgPool2d(2, ceil_mode=True), "x_conv"),
    "AdaptiveAvgPool2d((3, 2))": (lambda: nn.AdaptiveAvgPool2d((3, 2)), "x_conv"),
    "AdaptiveAvgPool2d(1)": (lambda: nn.AdaptiveAvgPool2d(1), "x_conv"),
    "GELU()": (lambda: nn.GELU(), "x_act"),
    "GELU(approximate='tanh')": (lambda: nn.GELU(approximate="tanh"), "x_act"),
    "ReLU6()": (lambda: nn.ReLU6(), "x_act"),
    "SiLU()": (lambda: nn.SiLU(), "x_act"),
}


@pytest.mark.parametrize("label", sorted(LAYERS))
def test_layer_outputs_match_pytorch(label):
    make, x = LAYERS[label]
    module = make()
    if any(k.startswith(label + ".") for k in MODULES["inputs"]):
        with_weights(module, label)
    exact = label.startswith(("MaxPool", "ReLU6"))
    close(module(X[x]), MODULES["outputs"][label], rtol=0 if exact else 1e-5, atol=0 if exact else 1e-6)


@pytest.mark.parametrize("label", ["BatchNorm2d(4)", "BatchNorm2d(4, momentum=None)"])
def test_batchnorm_train_then_eval_matches_pytorch(label):
    bn = nn.BatchNorm2d(4, momentum=None) if "None" in label else nn.BatchNorm2d(4)
    with_weights(bn, label)
    rec = MODULES["outputs"][f"{label}/train"]
    close(bn(X["x_4ch"]), rec["output"])
    close(bn.running_mean, rec["running_mean"])
    close(bn.running_var, rec["running_var"])
    assert bn.num_batches_tracked.item() == rec["num_batches_tracked"]["values"]
    assert bn.num_batches_tracked.dtype == torch.int64
    bn.eval()
    close(bn(X["x_4ch"]), MODULES["outputs"][f"{label}/eval_after_train_call"])


def test_batchnorm_eval_fresh_matches_pytorch():
    bn = with_weights(nn.BatchNorm2d(4), "BatchNorm2d(4)").eval()
    close(bn(X["x_4ch"]), MODULES["outputs"]["BatchNorm2d(4)/eval_fresh"])


@pytest.mark.parametrize("label", ["Embedding(10, 4)", "Embedding(10, 4, padding_idx=3)"])
def test_embedding_matches_pytorch(label):
    emb = with_weights(nn.Embedding(10, 4, padding_idx=3) if "padding" in label else nn.Embedding(10, 4), label)
    y = emb(torch.tensor([[0, 3, 9], [3, 3, 1]]))
    y.backward(torch.ones_like(y))
    rec = MODULES["outputs"][label]
    close(y, rec["output"], rtol=0, atol=0)
    close(emb.weight.grad, rec["weight_grad_upstream_ones"], rtol=0, atol=0)


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_matches_pytorch(batch_first):
    mha = with_weights(nn.MultiheadAttention(8, 2, batch_first=batch_first), "MultiheadAttention(8, 2)").eval()
    q, kv = X["mha_query"], X["mha_key_value"]
    if batch_first:
        q, kv = q.transpose(0, 1), kv.transpose(0, 1)
    rec = MODULES["outputs"][f"MultiheadAttention(8, 2, batch_first={batch_first})"]
    y, attn = mha(q, kv, kv)
    close(y, rec["cross_attention"]["output"])
    close(attn, rec["cross_attention"]["weights_averaged"])
    close(mha(q, kv, kv, average_attn_weights=False)[1], rec["cross_attention"]["weights_per_head"])
    case = rec["self_attention_causal_bool_mask_and_key_padding_mask"]
    y, attn = mha(q, q, q, attn_mask=torch.tensor(case["attn_mask"]), key_padding_mask=torch.tensor(case["key_padding_mask"]))
    close(y, case["output"])
    close(attn, case["weights_averaged"])
    if batch_first:
        with torch.no_grad():
            out, none = mha(q, q, q, need_weights=False)
        assert none is None
        close(out, rec["self_attention_need_weights_false_no_grad"])


def test_scaled_dot_product_attention_matches_pytorch():
    rec = MODULES["outputs"]["scaled_dot_product_attention"]
    q, k, v = X["sdpa_q"], X["sdpa_k"], X["sdpa_v"]
    close(F.scaled_dot_product_attention(q, k, v), rec["plain"])
    close(F.scaled_dot_product_attention(q, k, v, is_causal=True), rec["is_causal"])
    close(F.scaled_dot_product_attention(q, k, v, attn_mask=torch.tensor(rec["bool_mask_values"])), rec["bool_mask"])
    close(F.scaled_dot_product_attention(q, k, v, attn_mask=X["sdpa_float_mask"]), rec["float_mask"])
    close(F.scaled_dot_product_attention(q, k, v, scale=0.3), rec["scale_0.3"])


# -- losses ------------------------------------------------------------------------------------------------

LI = LOSSES["inputs"]
TARGET = torch.tensor(LI["target"])
CLASS_WEIGHT = torch.tensor(LI["class_weight"])
POS_WEIGHT = torch.tensor(LI["pos_weight"])
BCE_TARGET = wave(LI["bce_target"])
BCE_WEIGHT = wave(LI["bce_weight"])


def _loss(name, variant, red):
    """The module and the extra arguments of one recorded case."""
    if name == "CrossEntropyLoss":
        kw = {"label_smoothing_0.1": {"label_smoothing": 0.1}, "ignore_index_1": {"ignore_index": 1},
              "weight": {"weight": CLASS_WEIGHT},
              "weight_smoothing_ignore": {"weight": CLASS_WEIGHT, "label_smoothing": 0.1, "ignore_index": 1},
              "prob_targets_smoothing_0.1": {"label_smoothing": 0.1}, "all_ignored": {"ignore_index": 1}}.get(variant, {})
        target = torch.tensor(np.array(LI["soft_target_values"], np.float32)) if variant.startswith("prob") else \
            torch.ones(4, dtype=torch.long) if variant == "all_ignored" else TARGET
        return nn.CrossEntropyLoss(reduction=red, **kw), [target]
    if name == "NLLLoss":
        kw = {"ignore_index_1": {"ignore_index": 1}, "weight": {"weight": CLASS_WEIGHT},
              "all_ignored": {"ignore_index": 1}}.get(variant, {})
        return nn.NLLLoss(reduction=red, **kw), [torch.ones(4, dtype=torch.long) if variant == "all_ignored" else TARGET]
    if name in ("MSELoss", "L1Loss"):
        return getattr(nn, name)(reduction=red), []
    if name == "BCEWithLogitsLoss":
        kw = {"pos_weight": {"pos_weight": POS_WEIGHT}, "weight": {"weight": BCE_WEIGHT},
              "weight_pos_weight": {"weight": BCE_WEIGHT, "pos_weight": POS_WEIGHT}}.get(variant, {})
        return nn.BCEWithLogitsLoss(reduction=red, **kw), [BCE_TARGET]
    if variant == "edge_probs":
        return nn.BCELoss(reduction=red), [torch.tensor(LI["edge_target"])]
    return nn.BCELoss(reduction=red, **({"weight": BCE_WEIGHT} if variant == "weight" else {})), [BCE_TARGET]


@pytest.mark.parametrize("key", sorted(LOSSES["cases"]))
def test_loss_values_and_gradients_match_pytorch(key):
    parts = key.split("/")
    name, variant, red = (parts[0], "plain", parts[1]) if len(parts) == 2 else parts
    loss_fn, others = _loss(name, variant, red)
    case = LOSSES["cases"][key]
    leaves = {n: torch.tensor(LI["edge_probs"], requires_grad=True) if n == "edge_probs" else wave(LI[n], True)
              for n in case["inputs"]}
    out = loss_fn(*[leaves[n] for n in case["inputs"]], *others)
    out.backward(torch.ones_like(out))
    close(out, case["loss"], rtol=2e-6, atol=2e-6)
    for n, t in leaves.items():
        close(t.grad, case["grads"][n], rtol=2e-6, atol=2e-6)


ERRORS = {
    "CrossEntropyLoss_label_smoothing_1.5": lambda l: F.cross_entropy(l, TARGET, label_smoothing=1.5),
    "CrossEntropyLoss_target_5_out_of_range": lambda l: F.cross_entropy(l, torch.tensor([0, 1, 5, 1])),
    "CrossEntropyLoss_target_-1": lambda l: F.cross_entropy(l, torch.tensor([0, 1, -1, 1])),
    "NLLLoss_target_5_out_of_range": lambda l: F.nll_loss(l, torch.tensor([0, 1, 5, 1])),
    "CrossEntropyLoss_prob_target_ignore_index": lambda l: F.cross_entropy(
        l, torch.tensor(np.array(LI["soft_target_values"], np.float32)), ignore_index=1),
    "CrossEntropyLoss_int_target_wrong_batch": lambda l: F.cross_entropy(l, torch.tensor([0, 1, 2])),
    "BCELoss_input_above_1": lambda l: F.binary_cross_entropy(torch.tensor([1.5]), torch.tensor([1.0])),
    "BCELoss_target_above_1": lambda l: F.binary_cross_entropy(torch.tensor([0.5]), torch.tensor([1.5])),
    "BCELoss_size_mismatch": lambda l: F.binary_cross_entropy(torch.full((2, 3), 0.5), torch.ones(3)),
    "MSELoss_broadcast_size_mismatch": lambda l: F.mse_loss(torch.ones(2, 3), torch.ones(3)),
    "BCEWithLogits_size_mismatch": lambda l: F.binary_cross_entropy_with_logits(torch.ones(2, 3), torch.ones(3)),
}


@pytest.mark.parametrize("key", sorted(ERRORS))
def test_loss_errors_and_warnings_match_pytorch(key):
    rec = LOSSES["errors"][key]
    logits = wave(LI["logits"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if rec["error"] is None:
            ERRORS[key](logits)
        else:
            with pytest.raises(getattr(__builtins__, rec["error"]["type"], None) or Exception) as e:
                ERRORS[key](logits)
            assert type(e.value).__name__ == rec["error"]["type"]
            assert str(e.value) == rec["error"]["message"]
    assert [{"category": w.category.__name__, "message": str(w.message)} for w in caught] == rec["warnings"]
