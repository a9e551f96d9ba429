"""An ImageNet-style trainer in the style of PyTorch's official ImageNet example: a torchvision architecture by
name, an ImageFolder (or FakeData with --dummy), the accelerator API, SGD with a step schedule, AverageMeter and
ProgressMeter, top-1 and top-5 accuracy, and checkpoints with a copy of the best.

Plain PyTorch: `python examples/pytorch/imagenet_style.py --dummy` runs it with PyTorch and torchvision,
`python -m minifp.torch examples/pytorch/imagenet_style.py --dummy` the same file on minifp. Small defaults
(64x64 images, 10 classes) keep a run short. Weights come from NumPy's generator, so that on the same image folder
with --no-augment --no-shuffle both frameworks print the same losses.
"""
import argparse
import os
import shutil
import time
from enum import Enum

import numpy as np
import torch
import torch.nn as nn
import torch.optim
import torch.utils.data
import torchvision.datasets as datasets
import torchvision.models as models
import torchvision.transforms as transforms
from torch.optim.lr_scheduler import StepLR

parser = argparse.ArgumentParser(description="ImageNet-style training")
parser.add_argument("data", metavar="DIR", nargs="?", default="imagenet", help="path to dataset (train/ and val/)")
parser.add_argument("-a", "--arch", default="resnet18", choices=["resnet18", "mobilenet_v2"])
parser.add_argument("--epochs", default=1, type=int)
parser.add_argument("-b", "--batch-size", default=8, type=int)
parser.add_argument("--lr", "--learning-rate", default=0.01, type=float, dest="lr")
parser.add_argument("--momentum", default=0.9, type=float)
parser.add_argument("--wd", "--weight-decay", default=1e-4, type=float, dest="weight_decay")
parser.add_argument("-p", "--print-freq", default=1, type=int)
parser.add_argument("--resume", default="", type=str, metavar="PATH")
parser.add_argument("-e", "--evaluate", dest="evaluate", action="store_true")
parser.add_argument("--dummy", action="store_true", help="use fake data")
parser.add_argument("--image-size", default=64, type=int)
parser.add_argument("--num-classes", default=10, type=int)
parser.add_argument("--no-augment", action="store_true", help="Resize and CenterCrop for training too")
parser.add_argument("--no-shuffle", action="store_true")
parser.add_argument("--cpu", action="store_true", help="train on the CPU even with an accelerator")
best_acc1 = 0


def shared_init(model):
    """Weights from NumPy's generator (He-normal for matrices and kernels; norms' weights 1, biases 0)."""
    rng = np.random.default_rng(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() > 1:
                values = rng.normal(0, np.sqrt(2.0 / int(np.prod(p.shape[1:]))), tuple(p.shape))
            else:
                values = np.ones(p.shape) if name.endswith("weight") else np.zeros(p.shape)
            p.copy_(torch.from_numpy(values.astype(np.float32)))


def main():
    global best_acc1
    args = parser.parse_args()
    if torch.accelerator.is_available() and not args.cpu:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")
    print(f"=> creating model '{args.arch}' on {device}")
    model = models.__dict__[args.arch](num_classes=args.num_classes)
    shared_init(model)
    model = model.to(device)
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    scheduler = StepLR(optimizer, step_size=30, gamma=0.1)
    if args.resume:
        print(f"=> loading checkpoint '{args.resume}'")
        checkpoint = torch.load(args.resume, map_location=device)
        args.start_epoch, best_acc1 = checkpoint["epoch"], checkpoint["best_acc1"]
        model.load_state_dict(checkpoint["state_dict"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
    else:
        args.start_epoch = 0

    size = args.image_size
    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    plain = [transforms.Resize(size + size // 7), transforms.CenterCrop(size), transforms.ToTensor(), normalize]
    train_tf = plain if args.no_augment else [transforms.RandomResizedCrop(size), transforms.RandomHorizontalFlip(),
                                              transforms.ToTensor(), normalize]
    if args.dummy:
        print("=> Dummy data is used!")
        train_dataset = datasets.FakeData(64, (3, size, size), args.num_classes, transforms.ToTensor())
        val_dataset = datasets.FakeData(16, (3, size, size), args.num_classes, transforms.ToTensor())
    else:
        train_dataset = datasets.ImageFolder(os.path.join(args.data, "train"), transforms.Compose(train_tf))
        val_dataset = datasets.ImageFolder(os.path.join(args.data, "val"), transforms.Compose(plain))
    train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=args.batch_size,
                                               shuffle=not args.no_shuffle, num_workers=0, pin_memory=True)
    val_loader = torch.utils.data.DataLoader(val_dataset, batch_size=args.batch_size, shuffle=False, num_workers=0,
                                             pin_memory=True)
    if args.evaluate:
        validate(val_loader, model, criterion, args, device)
        return
    for epoch in range(args.start_epoch, args.start_epoch + args.epochs):
        train(train_loader, model, criterion, optimizer, epoch, device, args)
        acc1 = validate(val_loader, model, criterion, args, device)
        scheduler.step()
        is_best = acc1 > best_acc1
        best_acc1 = max(acc1, best_acc1)
        save_checkpoint({"epoch": epoch + 1, "arch": args.arch, "state_dict": model.state_dict(),
                         "best_acc1": best_acc1, "optimizer": optimizer.state_dict(),
                         "scheduler": scheduler.state_dict()}, is_best)


def train(train_loader, model, criterion, optimizer, epoch, device, args):
    batch_time, data_time = AverageMeter("Time", ":6.3f"), AverageMeter("Data", ":6.3f")
    losses, top1, top5 = AverageMeter("Loss", ":.4e"), AverageMeter("Acc@1", ":6.2f"), AverageMeter("Acc@5", ":6.2f")
    progress = ProgressMeter(len(train_loader), [batch_time, data_time, losses, top1, top5],
                             prefix=f"Epoch: [{epoch}]")
    model.train()
    end = time.time()
    for i, (images, target) in enumerate(train_loader):
        data_time.update(time.time() - end)
        images, target = images.to(device, non_blocking=True), target.to(device, non_blocking=True)
        output = model(images)
        loss = criterion(output, target)
        acc1, acc5 = accuracy(output, target, topk=(1, 5))
        losses.update(loss.item(), images.size(0))
        top1.update(acc1[0], images.size(0))
        top5.update(acc5[0], images.size(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        batch_time.update(time.time() - end)
        end = time.time()
        print(f"train batch {i}: loss {loss.item():.6f}")
        if i % args.print_freq == 0:
            progress.display(i + 1)


def validate(val_loader, model, criterion, args, device):
    batch_time = AverageMeter("Time", ":6.3f", Summary.NONE)
    losses = AverageMeter("Loss", ":.4e", Summary.NONE)
    top1, top5 = AverageMeter("Acc@1", ":6.2f", Summary.AVERAGE), AverageMeter("Acc@5", ":6.2f", Summary.AVERAGE)
    progress = ProgressMeter(len(val_loader), [batch_time, losses, top1, top5], prefix="Test: ")
    model.eval()
    with torch.no_grad():
        end = time.time()
        for i, (images, target) in enumerate(val_loader):
            images, target = images.to(device, non_blocking=True), target.to(device, non_blocking=True)
            output = model(images)
            loss = criterion(output, target)
            acc1, acc5 = accuracy(output, target, topk=(1, 5))
            losses.update(loss.item(), images.size(0))
            top1.update(acc1[0], images.size(0))
            top5.update(acc5[0], images.size(0))
            batch_time.update(time.time() - end)
            end = time.time()
            if i % args.print_freq == 0:
                progress.display(i + 1)
    progress.display_summary()
    return top1.avg


def save_checkpoint(state, is_best, filename="checkpoint.pth.tar"):
    torch.save(state, filename)
    if is_best:
        shutil.copyfile(filename, "model_best.pth.tar")


class Summary(Enum):
    NONE, AVERAGE, SUM, COUNT = range(4)


class AverageMeter:
    """Computes and stores the average and current value"""

    def __init__(self, name, fmt=":f", summary_type=Summary.AVERAGE):
        self.name, self.fmt, self.summary_type = name, fmt, summary_type
        self.reset()

    def reset(self):
        self.val = self.avg = self.sum = self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def __str__(self):
        fmtstr = "{name} {val" + self.fmt + "} ({avg" + self.fmt + "})"
        return fmtstr.format(**self.__dict__)

    def summary(self):
        if self.summary_type is Summary.NONE:
            return ""
        return f"{self.name} {self.avg:.3f}"


class ProgressMeter:
    def __init__(self, num_batches, meters, prefix=""):
        num_digits = len(str(num_batches // 1))
        fmt = "{:" + str(num_digits) + "d}"
        self.batch_fmtstr = "[" + fmt + "/" + fmt.format(num_batches) + "]"
        self.meters, self.prefix = meters, prefix

    def display(self, batch):
        print("\t".join([self.prefix + self.batch_fmtstr.format(batch)] + [str(meter) for meter in self.meters]))

    def display_summary(self):
        print(" ".join([" *"] + [meter.summary() for meter in self.meters]))


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk, batch_size = max(topk), target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


if __name__ == "__main__":
    main()
