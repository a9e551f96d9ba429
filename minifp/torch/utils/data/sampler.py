"""`torch.utils.data.sampler`: the samplers."""
from . import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
               WeightedRandomSampler)

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler",
           "WeightedRandomSampler"]
