"""Where minifp's GPU training step spends its time: cProfile of gpu_training.py's float16 step."""
import cProfile
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_training as g     # noqa: E402

run, _ = g.stepper(g.mf_torch, 8192, g.mf_torch.float16)
prof = cProfile.Profile()
prof.enable()
run(3)
prof.disable()
stats = pstats.Stats(prof)
stats.sort_stats("tottime").print_stats(25)
stats.sort_stats("cumtime").print_stats(40)
