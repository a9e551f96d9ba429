"""The timing loop of PyTorch's automatic mixed precision recipe, in its style: a stack of Linear + ReLU layers
trained at default precision, then with autocast and a GradScaler, each timed with the cuda memory statistics;
then the scaler saved and resumed in a checkpoint dict, and inference under autocast.

Plain PyTorch: `python examples/pytorch/amp_recipe.py` runs it with PyTorch, `python -m minifp.torch
examples/pytorch/amp_recipe.py` the same file on minifp. Settings are `--name=value`. Weights and data come from
NumPy's generator, so the default-precision losses of both frameworks can be compared line by line.
"""
import ast
import gc
import os
import sys
import time

import numpy as np
import torch

batch_size, in_size, out_size, num_layers, num_batches, epochs = 64, 256, 256, 3, 8, 2
out_dir = "out-amp"
for arg in sys.argv[1:]:
    key, _, value = arg.removeprefix("--").partition("=")
    if key not in globals():
        raise ValueError(f"unknown setting {key}")
    globals()[key] = ast.literal_eval(value) if value[:1].isdigit() else value

device = "cuda" if torch.cuda.is_available() else "cpu"
amp_dtype = torch.float16 if device == "cuda" else torch.bfloat16
torch.backends.cuda.matmul.allow_tf32 = False          # the recipe's note: default precision means float32 here
start_time = None


def start_timer():
    global start_time
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_max_memory_allocated()
        torch.cuda.synchronize()
    start_time = time.time()


def end_timer_and_print(local_msg):
    if device == "cuda":
        torch.cuda.synchronize()
    end_time = time.time()
    print("\n" + local_msg)
    print(f"Total execution time = {end_time - start_time:.3f} sec")
    if device == "cuda":
        print(f"Max memory used by tensors = {torch.cuda.max_memory_allocated()} bytes")


def make_model(in_size, out_size, num_layers):
    layers = []
    for _ in range(num_layers - 1):
        layers.append(torch.nn.Linear(in_size, in_size))
        layers.append(torch.nn.ReLU())
    layers.append(torch.nn.Linear(in_size, out_size))
    net = torch.nn.Sequential(*tuple(layers))
    rng = np.random.default_rng(0)                      # shared weights: the same in any framework
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-1, 1, tuple(p.shape)).astype(np.float32) / np.sqrt(in_size)))
    return net.to(device)


rng = np.random.default_rng(1)
data = [torch.from_numpy(rng.standard_normal((batch_size, in_size)).astype(np.float32)).to(device)
        for _ in range(num_batches)]
targets = [torch.from_numpy(rng.standard_normal((batch_size, out_size)).astype(np.float32)).to(device)
           for _ in range(num_batches)]
loss_fn = torch.nn.MSELoss().to(device)

# -- default precision --------------------------------------------------------------------------------------------
net = make_model(in_size, out_size, num_layers)
opt = torch.optim.SGD(net.parameters(), lr=0.001)
start_timer()
for epoch in range(epochs):
    for i, (input, target) in enumerate(zip(data, targets)):
        output = net(input)
        loss = loss_fn(output, target)
        loss.backward()
        opt.step()
        opt.zero_grad()
        print(f"default precision epoch {epoch} batch {i}: loss {loss.item():.7f}")
end_timer_and_print("Default precision:")

# -- autocast and GradScaler ---------------------------------------------------------------------------------------
net = make_model(in_size, out_size, num_layers)
opt = torch.optim.SGD(net.parameters(), lr=0.001)
use_amp = True
scaler = torch.amp.GradScaler(device, enabled=use_amp and amp_dtype == torch.float16)
start_timer()
for epoch in range(epochs):
    for i, (input, target) in enumerate(zip(data, targets)):
        with torch.autocast(device_type=device, dtype=amp_dtype, enabled=use_amp):
            output = net(input)
            assert output.dtype is amp_dtype
            loss = loss_fn(output, target)
            assert loss.dtype is torch.float32
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm=0.1)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        print(f"mixed precision epoch {epoch} batch {i}: loss {loss.item():.7f} scale {scaler.get_scale()}")
end_timer_and_print("Mixed precision:")

# -- saving and resuming ---------------------------------------------------------------------------------------------
os.makedirs(out_dir, exist_ok=True)
path = os.path.join(out_dir, "amp_checkpoint.pt")
torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "scaler": scaler.state_dict()}, path)
checkpoint = torch.load(path, map_location=device)
net.load_state_dict(checkpoint["model"])
opt.load_state_dict(checkpoint["optimizer"])
scaler.load_state_dict(checkpoint["scaler"])
print(f"resumed: scale {scaler.get_scale()}")

# -- inference ------------------------------------------------------------------------------------------------------
with torch.autocast(device_type=device, dtype=amp_dtype):
    output = net(data[0])
print(f"inference: output dtype {output.dtype}, mean {output.float().mean().item():.4f}")
