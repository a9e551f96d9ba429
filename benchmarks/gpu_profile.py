"""Where minifp's GPU training step spends its time: the GPU's kernels (PyTorch's profiler sees CuPy's and
cuBLAS's launches too) and the host's Python, for gpu_training.py's float16 step.

    python benchmarks/gpu_profile.py [--batch 8192]       # needs CuPy, PyTorch, a GPU
"""
import argparse
import cProfile
import pstats
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_training as g     # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--batch", type=int, default=8192)
run, _ = g.stepper(g.mf_torch, parser.parse_args().batch, g.mf_torch.float16)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                        torch.profiler.ProfilerActivity.CUDA]) as prof:
    run(3)
events = prof.key_averages()
for key in ("self_device_time_total", "self_cuda_time_total"):
    try:
        print(events.table(sort_by=key, row_limit=30, max_name_column_width=70))
        break
    except (AttributeError, KeyError, ValueError):
        continue
host = cProfile.Profile()
host.enable()
run(3)
host.disable()
pstats.Stats(host).sort_stats("tottime").print_stats(15)
