"""torch.multiprocessing: Python's multiprocessing, and spawn(fn, args, nprocs)."""
from __future__ import annotations

import multiprocessing as _mp
from multiprocessing import (Event, Lock, Manager, Pipe, Pool, Process, Queue, cpu_count, current_process,
                             get_all_start_methods, get_context, get_start_method, set_start_method)

__all__ = ["Event", "Lock", "Manager", "Pipe", "Pool", "Process", "Queue", "cpu_count", "current_process",
           "get_all_start_methods", "get_context", "get_start_method", "set_start_method", "spawn",
           "set_sharing_strategy", "get_sharing_strategy"]

_strategy = ["file_descriptor"]


def set_sharing_strategy(strategy):
    _strategy[0] = strategy


def get_sharing_strategy():
    return _strategy[0]


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """fn(i, *args) for i in range(nprocs): in this process when nprocs is 1, else in new processes."""
    if nprocs == 1:
        fn(0, *args)
        return None
    ctx = _mp.get_context(start_method)
    procs = [ctx.Process(target=fn, args=(i, *args), daemon=daemon) for i in range(nprocs)]
    for p in procs:
        p.start()
    if not join:
        return procs
    for p in procs:
        p.join()
    failed = [i for i, p in enumerate(procs) if p.exitcode]
    if failed:
        raise RuntimeError(f"process {failed[0]} terminated with exit code {procs[failed[0]].exitcode}")
    return None
