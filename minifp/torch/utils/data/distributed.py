"""`torch.utils.data.distributed`: DistributedSampler, with single-process defaults (minifp runs one process:
num_replicas=1 and rank=0 unless given), and PyTorch's arithmetic of padding, dropping and striding."""
from __future__ import annotations

import math

from . import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """The indices of replica `rank` of `num_replicas`: a permutation seeded by seed + epoch (set_epoch) when
    shuffling, padded by repetition (or cut, with drop_last) to a multiple of num_replicas, then every
    num_replicas-th index from rank."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        num_replicas = 1 if num_replicas is None else num_replicas
        rank = 0 if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank, self.epoch = dataset, num_replicas, rank, 0
        self.drop_last, self.shuffle, self.seed = drop_last, shuffle, seed
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        from .... import torch
        n = len(self.dataset)
        if self.shuffle:
            g = torch.Generator().manual_seed(self.seed + self.epoch)
            indices = torch.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """The epoch whose permutation the next pass draws (seed + epoch): every replica agrees on it."""
        self.epoch = epoch
