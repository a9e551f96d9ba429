"""A CIFAR-10 ResNet18 trainer in the style of the popular pytorch-cifar repositories: the model defined in the
script, DataLoader with augmentation transforms, DataParallel on cuda, SGD with a cosine schedule, test accuracy,
and the best checkpoint saved with torch.save (and resumed with --resume).

Plain PyTorch: `python examples/pytorch/cifar_resnet.py` runs it with PyTorch (and torchvision's transforms),
`python -m minifp.torch examples/pytorch/cifar_resnet.py` the same file on minifp. With no CIFAR-10 on the machine
it trains on a synthetic CIFAR-shaped set made by NumPy (--synthetic, the default here). Weights come from NumPy's
generator, so that with --no-augment --no-shuffle both frameworks print the same losses.
"""
import argparse
import os

import numpy as np
import torch
import torch.backends.cudnn as cudnn
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
import torchvision.transforms as transforms

parser = argparse.ArgumentParser(description="CIFAR10 training")
parser.add_argument("--lr", default=0.1, type=float, help="learning rate")
parser.add_argument("--resume", "-r", action="store_true", help="resume from checkpoint")
parser.add_argument("--epochs", default=2, type=int)
parser.add_argument("--batch-size", default=16, type=int)
parser.add_argument("--train-size", default=64, type=int, help="images in the synthetic training set")
parser.add_argument("--width", default=16, type=int, help="channels of the first stage (64 in ResNet18)")
parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
parser.add_argument("--no-augment", action="store_true")
parser.add_argument("--no-shuffle", action="store_true")
parser.add_argument("--checkpoint-dir", default="checkpoint")
args = parser.parse_args()
device = args.device
best_acc, start_epoch = 0, 0


class SyntheticCIFAR(torch.utils.data.Dataset):
    """CIFAR-10-shaped images (32x32x3 uint8, as NumPy arrays) and labels, from NumPy's generator."""

    def __init__(self, size, seed, transform=None):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, 10, size)
        base = rng.integers(0, 256, (10, 32, 32, 3))        # one pattern per class, plus noise
        noise = rng.integers(-40, 41, (size, 32, 32, 3))
        self.images = np.clip(base[self.labels] + noise, 0, 255).astype(np.uint8)
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        image = self.images[i]
        return (self.transform(image) if self.transform else image), int(self.labels[i])


normalize = transforms.Normalize((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010))
augment = [] if args.no_augment else [transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip()]
transform_train = transforms.Compose([transforms.ToTensor(), *augment, normalize])
transform_test = transforms.Compose([transforms.ToTensor(), normalize])
trainset = SyntheticCIFAR(args.train_size, 0, transform_train)
testset = SyntheticCIFAR(args.train_size // 2, 1, transform_test)
trainloader = torch.utils.data.DataLoader(trainset, batch_size=args.batch_size, shuffle=not args.no_shuffle,
                                          num_workers=0)
testloader = torch.utils.data.DataLoader(testset, batch_size=args.batch_size, shuffle=False, num_workers=0)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride, bias=False),
                                          nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, block, num_blocks, width=64, num_classes=10):
        super().__init__()
        self.in_planes = width
        self.conv1 = nn.Conv2d(3, width, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.layer1 = self._make_layer(block, width, num_blocks[0], stride=1)
        self.layer2 = self._make_layer(block, 2 * width, num_blocks[1], stride=2)
        self.layer3 = self._make_layer(block, 4 * width, num_blocks[2], stride=2)
        self.layer4 = self._make_layer(block, 8 * width, num_blocks[3], stride=2)
        self.linear = nn.Linear(8 * width * block.expansion, num_classes)

    def _make_layer(self, block, planes, num_blocks, stride):
        layers = []
        for s in [stride] + [1] * (num_blocks - 1):
            layers.append(block(self.in_planes, planes, s))
            self.in_planes = planes * block.expansion
        return nn.Sequential(*layers)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        out = F.avg_pool2d(out, 4)
        return self.linear(out.view(out.size(0), -1))


def ResNet18(width):
    return ResNet(BasicBlock, [2, 2, 2, 2], width)


def shared_init(net):
    """He-normal convolutions and linear weights, BatchNorm at 1 and 0, from NumPy's generator."""
    rng = np.random.default_rng(0)
    with torch.no_grad():
        for name, p in net.named_parameters():
            if p.dim() > 1:
                fan_in = int(np.prod(p.shape[1:]))
                values = rng.normal(0, np.sqrt(2.0 / fan_in), tuple(p.shape))
            else:
                values = np.ones(p.shape) if name.endswith("weight") else np.zeros(p.shape)
            p.copy_(torch.from_numpy(values.astype(np.float32)))


print("==> Building model..")
net = ResNet18(args.width)
shared_init(net)
net = net.to(device)
if device == "cuda":
    net = torch.nn.DataParallel(net)
    cudnn.benchmark = True

if args.resume:
    print("==> Resuming from checkpoint..")
    assert os.path.isdir(args.checkpoint_dir), "Error: no checkpoint directory found!"
    checkpoint = torch.load(os.path.join(args.checkpoint_dir, "ckpt.pth"))
    net.load_state_dict(checkpoint["net"])
    best_acc, start_epoch = checkpoint["acc"], checkpoint["epoch"] + 1

criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=200)


def train(epoch):
    print(f"\nEpoch: {epoch}")
    net.train()
    train_loss, correct, total = 0, 0, 0
    for batch_idx, (inputs, targets) in enumerate(trainloader):
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        train_loss += loss.item()
        _, predicted = outputs.max(1)
        total += targets.size(0)
        correct += predicted.eq(targets).sum().item()
        print(f"batch {batch_idx}: loss {loss.item():.6f} | Loss: {train_loss / (batch_idx + 1):.3f} | "
              f"Acc: {100. * correct / total:.3f}% ({correct}/{total})")


def test(epoch):
    global best_acc
    net.eval()
    test_loss, correct, total = 0, 0, 0
    with torch.no_grad():
        for batch_idx, (inputs, targets) in enumerate(testloader):
            inputs, targets = inputs.to(device), targets.to(device)
            outputs = net(inputs)
            test_loss += criterion(outputs, targets).item()
            _, predicted = outputs.max(1)
            total += targets.size(0)
            correct += predicted.eq(targets).sum().item()
    acc = 100. * correct / total
    print(f"test: Loss: {test_loss / (batch_idx + 1):.3f} | Acc: {acc:.3f}% ({correct}/{total})")
    if acc > best_acc or epoch == start_epoch:
        print("Saving..")
        state = {"net": net.state_dict(), "acc": acc, "epoch": epoch}
        os.makedirs(args.checkpoint_dir, exist_ok=True)
        torch.save(state, os.path.join(args.checkpoint_dir, "ckpt.pth"))
        best_acc = max(acc, best_acc)


for epoch in range(start_epoch, start_epoch + args.epochs):
    train(epoch)
    test(epoch)
    scheduler.step()
