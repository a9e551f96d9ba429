"""The Persian post's PyTorch mixed-precision loop (../shared/seeds/001), run on minifp.

Changed from the original: the import lines (minifp.torch for torch and torchvision); the data source
(CIFAR-10 from ./ when its files are there, else CIFAR-shaped random images the script makes, as there
is no network here; MINIFP_EXAMPLE_BATCHES limits the batches); and three typos the original would stop
on (`ttransform`, `i0`, a format with a missing %d), and `device`, which it uses but never sets.
"""
import os

import numpy as np

import minifp.torch as torch
import minifp.torch.nn as nn
import minifp.torch.optim as optim
from minifp.torch.vision import datasets, transforms
from minifp.torch.vision.models import mobilenet_v2

device = 'cuda' if torch.cuda.is_available() else 'cpu'

transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0), (255))])
if os.path.exists('./cifar-10-batches-bin'):
    train_ds = datasets.CIFAR10('./', download=True, transform=transform)
else:                                   # CIFAR-shaped stand-in: 32x32 RGB images, 10 classes
    rng = np.random.default_rng(0)
    n = 128 * int(os.environ.get('MINIFP_EXAMPLE_BATCHES', 4))
    images = torch.tensor(rng.random((n, 3, 32, 32), dtype=np.float32))
    train_ds = torch.utils.data.TensorDataset(images, torch.tensor(rng.integers(0, 10, n)))
train_dl = torch.utils.data.DataLoader(train_ds, batch_size=128, shuffle=True)

# amp : Automatic Mixed Precision
from minifp.torch.cuda.amp import GradScaler # for gradient and loss scale
from minifp.torch.cuda.amp import autocast # Casts operations in float16 & 32 automatically

model = mobilenet_v2()
model.classifier = nn.Linear(1280, 10)
model.to(device)
optimizer = optim.Adam(model.parameters(), lr=0.005)
loss_fn = nn.CrossEntropyLoss().to(device)


def train(fp16=True, device='cuda'):
    scaler = GradScaler(enabled=fp16)
    loss_avg = 0.0
    for i, (inputs, labels) in enumerate(train_dl):
      optimizer.zero_grad()
      # Casts operations to mixed precision
      with autocast(enabled=fp16):
          outputs = model(inputs.to(device))
          loss = loss_fn(outputs, labels.to(device))
          loss_avg = (loss_avg * i + loss.item()) / (i+1)
      # Scales the loss, and calls backward()
      # to create scaled gradients
      scaler.scale(loss).backward()
      # Unscales gradients and calls
      # or skips optimizer.step()
      scaler.step(optimizer)
      scaler.update()
      if i%100==0:
          print('[%d, %d] loss: %.4f' %(i, len(train_dl), loss_avg))
    return loss_avg


if __name__ == '__main__':
    train(fp16=True)
