"""A small GPT trained on characters, in the style of nanoGPT's and minGPT's trainers: AdamW with decay and no-decay
groups, warmup then cosine learning rate, gradient accumulation, gradient clipping, autocast (bfloat16 or float16
with a GradScaler) on cuda, a checkpoint dict saved and resumed, and sampling.

Plain PyTorch: `python examples/pytorch/gpt_train.py` runs it with PyTorch, `python -m minifp.torch
examples/pytorch/gpt_train.py` the same file on minifp. Settings are `--name=value` (e.g. `--device=cpu
--dtype=float32 --max_iters=20`). The initial weights and the batches come from NumPy's generator, so that both
frameworks train the same model on the same data; the losses it prints can be compared line by line.
"""
import ast
import math
import os
import sys
import time
from contextlib import nullcontext

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F

# -- settings (override with --name=value) ------------------------------------------------------------------
out_dir = "out-gpt"
device = "cuda" if torch.cuda.is_available() else "cpu"
dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"
batch_size, block_size, gradient_accumulation_steps = 8, 32, 2
n_layer, n_head, n_embd, dropout, bias = 2, 4, 64, 0.0, True
learning_rate, min_lr, warmup_iters, lr_decay_iters, max_iters = 3e-3, 3e-4, 5, 60, 30
weight_decay, beta1, beta2, grad_clip = 0.1, 0.9, 0.95, 1.0
eval_interval, eval_iters, log_interval, seed = 10, 4, 1, 1337
init_from = "scratch"          # or "resume": continue from out_dir/ckpt.pt
always_save_checkpoint = True
for arg in sys.argv[1:]:
    key, _, value = arg.removeprefix("--").partition("=")
    if key not in globals():
        raise ValueError(f"unknown setting {key}")
    try:
        globals()[key] = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        globals()[key] = value
config = {k: v for k, v in globals().items() if not k.startswith("_") and isinstance(v, (int, float, bool, str))}

# -- data: a fixed text, encoded as bytes ---------------------------------------------------------------------
text = ("First Citizen: Before we proceed any further, hear me speak. All: Speak, speak. First Citizen: You are "
        "all resolved rather to die than to famish? All: Resolved. resolved. First Citizen: First, you know Caius "
        "Marcius is chief enemy to the people. ") * 20
data = np.frombuffer(text.encode(), dtype=np.uint8).astype(np.int64)
split = int(0.9 * len(data))
train_data, val_data = data[:split], data[split:]
vocab_size = 256
batch_rng = np.random.default_rng(seed)


def get_batch(which):
    d = train_data if which == "train" else val_data
    ix = batch_rng.integers(0, len(d) - block_size, size=batch_size)
    x = torch.from_numpy(np.stack([d[i:i + block_size] for i in ix]))
    y = torch.from_numpy(np.stack([d[i + 1:i + 1 + block_size] for i in ix]))
    if device_type == "cuda":
        x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
    return x.to(device), y.to(device)


# -- the model ------------------------------------------------------------------------------------------------
class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.resid_dropout = nn.Dropout(dropout)
        self.flash = hasattr(F, "scaled_dot_product_attention")
        if not self.flash:
            self.register_buffer("mask", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size,
                                                                                             block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(n_embd, dim=2)
        q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
        if self.flash:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = F.softmax(att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf")), dim=-1)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(n_embd, bias=bias), CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(n_embd, bias=bias)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd, bias=bias), nn.GELU(),
                                 nn.Linear(4 * n_embd, n_embd, bias=bias), nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd), wpe=nn.Embedding(block_size, n_embd), drop=nn.Dropout(dropout),
            h=nn.ModuleList([Block() for _ in range(n_layer)]), ln_f=nn.LayerNorm(n_embd, bias=bias)))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight       # weight tying

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is None:
            return self.lm_head(x[:, [-1], :]), None
        logits = self.lm_head(x)
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

    def configure_optimizers(self):
        params = {n: p for n, p in self.named_parameters() if p.requires_grad}
        decay = [p for p in params.values() if p.dim() >= 2]
        no_decay = [p for p in params.values() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=learning_rate, betas=(beta1, beta2))

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            logits, _ = self(idx[:, -block_size:])
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            idx = torch.cat((idx, torch.multinomial(F.softmax(logits, dim=-1), num_samples=1)), dim=1)
        return idx


def shared_init(model):
    """Every weight from NumPy's generator (normal, std 0.02; norms' weights 1, biases 0), the same in any
    framework."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                values = np.zeros(p.shape)
            elif ".ln_" in name or name.startswith("transformer.ln_f"):
                values = np.ones(p.shape)
            else:
                values = rng.normal(0.0, 0.02, size=tuple(p.shape))
            p.copy_(torch.from_numpy(values.astype(np.float32)))


def get_lr(it):
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (learning_rate - min_lr)


# -- training -------------------------------------------------------------------------------------------------
torch.manual_seed(seed)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
device_type = "cuda" if "cuda" in device else "cpu"
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type, dtype=ptdtype)
os.makedirs(out_dir, exist_ok=True)

model = GPT()
iter_num, best_val_loss = 0, 1e9
if init_from == "scratch":
    shared_init(model)
    model.to(device)
    optimizer = model.configure_optimizers()
else:
    checkpoint = torch.load(os.path.join(out_dir, "ckpt.pt"), map_location=device)
    state_dict = checkpoint["model"]
    for k in list(state_dict):
        if k.startswith("_orig_mod."):
            state_dict[k[len("_orig_mod."):]] = state_dict.pop(k)
    model.load_state_dict(state_dict)
    model.to(device)
    optimizer = model.configure_optimizers()
    optimizer.load_state_dict(checkpoint["optimizer"])
    iter_num, best_val_loss = checkpoint["iter_num"], checkpoint["best_val_loss"]
    batch_rng = np.random.default_rng(seed + iter_num)
scaler = torch.amp.GradScaler(device_type, enabled=(dtype == "float16"))
print(f"number of parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M")


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for which in ("train", "val"):
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(which)
            with ctx:
                _, loss = model(X, Y)
            losses[k] = loss.item()
        out[which] = losses.mean()
    model.train()
    return out


X, Y = get_batch("train")
t0 = time.time()
while True:
    lr = get_lr(iter_num)
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr
    if iter_num % eval_interval == 0 and iter_num > 0:
        losses = estimate_loss()
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
        if losses["val"] < best_val_loss or always_save_checkpoint:
            best_val_loss = min(best_val_loss, losses["val"].item())
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iter_num": iter_num,
                        "best_val_loss": best_val_loss, "config": config}, os.path.join(out_dir, "ckpt.pt"))
    for micro_step in range(gradient_accumulation_steps):
        with ctx:
            logits, loss = model(X, Y)
            loss = loss / gradient_accumulation_steps
        X, Y = get_batch("train")
        scaler.scale(loss).backward()
    if grad_clip != 0.0:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    t1 = time.time()
    dt, t0 = t1 - t0, t1
    if iter_num % log_interval == 0:
        lossf = loss.item() * gradient_accumulation_steps
        print(f"iter {iter_num}: loss {lossf:.6f}, time {dt * 1000:.2f}ms")
    iter_num += 1
    if iter_num > max_iters:
        break

start = torch.zeros((1, 1), dtype=torch.long, device=device)
sample = model.generate(start, 20, top_k=10)[0].tolist()
print("sample:", bytes(t % 256 for t in sample).decode(errors="replace"))
