"""Elementwise kernels in parts on every core, handed to a worker that waits by spinning.

Waking a sleeping thread costs the caller 10-20 us and the thread 35 us more before it runs, on the
virtual machines we measure (a halted virtual CPU must be rescheduled): as long as a whole kernel call
on 2**16 elements. So the worker polls for work without the GIL for a while (SPIN polls, about 0.1
ms) after each job, and only then sleeps; and a sleeping worker is woken only where that pays: for a
job of WAKE elements or more, or for calls that come in a burst (BURST apart or less). Between
calls far apart (a training step's casts between matrix products) the worker sleeps and the caller
runs each kernel alone, as fast as without the pool.

A job is posted in `ctl`, an int64 array, with atomic stores: a part function (a C callback made
per kernel, which takes two addresses and a range), the source and output addresses, the element
count and the number of parts. Every thread that sees the job, the caller too, claims parts with an
atomic add until none is left; the caller then waits for the parts a worker claimed. So the caller
never waits for a worker that is asleep: it runs the unclaimed parts itself.
"""
from __future__ import annotations

import threading
import time

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

PART, SRC, OUT, N, NEXT, DONE, AWAKE, BUSY = range(8)      # the slots of ctl
SPIN = 100_000
WAKE = 1 << 22
BURST = 50e-6
PART_SIZE = 1 << 20     # parts are no longer, so that a worker that comes late still finds some


def _slot(context, builder, sig, args):
    """The address of ctl[i] (args: ctl, i)."""
    ary = context.make_array(sig.args[0])(context, builder, args[0])
    return cgutils.get_item_pointer(context, builder, sig.args[0], ary, [args[1]])


@intrinsic
def _load(typingctx, ctl, i):
    """ctl[i], read atomically."""
    return types.int64(ctl, i), lambda c, b, sig, args: b.load_atomic(_slot(c, b, sig, args), "seq_cst", 8)


@intrinsic
def _store(typingctx, ctl, i, value):
    """ctl[i] = value, written atomically: what was written before is seen by whoever sees this."""
    def gen(context, builder, sig, args):
        builder.store_atomic(args[2], _slot(context, builder, sig, args), "seq_cst", 8)
        return context.get_dummy_value()
    return types.void(ctl, i, types.int64), gen


def _rmw(op):
    """ctl[i] = ctl[i] `op` value atomically, returning the value before (LLVM atomicrmw)."""
    @intrinsic
    def rmw(typingctx, ctl, i, value):
        return types.int64(ctl, i, types.int64), \
            lambda c, b, sig, args: b.atomic_rmw(op, _slot(c, b, sig, args), args[2], "seq_cst")
    return rmw


_add, _swap = _rmw("add"), _rmw("xchg")


@intrinsic
def _call(typingctx, part, src, out, start, stop):
    """part(src, out, start, stop): a call through the address of a C callback."""
    def gen(context, builder, sig, args):
        i64 = ir.IntType(64)
        fn = builder.inttoptr(args[0], ir.FunctionType(ir.VoidType(), [i64] * 4).as_pointer())
        builder.call(fn, args[1:])
        return context.get_dummy_value()
    return types.void(*[types.int64] * 5), gen


@intrinsic
def pointer(typingctx, address):
    """The int64 address as a void pointer (for numba.carray)."""
    return types.voidptr(types.int64), lambda c, b, sig, args: b.inttoptr(args[0], ir.IntType(8).as_pointer())


@numba.njit(nogil=True, cache=True)
def _work(ctl):
    """Run unclaimed parts of the posted job until none is left.

    NEXT holds the job's part count (high bits) and its next unclaimed part (low 16 bits), so that a
    claim reads both at once: a thread that comes late to a finished job claims nothing of it.
    """
    while True:
        claim = _add(ctl, NEXT, 1)
        k, parts = claim & 0xFFFF, claim >> 16
        if k >= parts:
            return
        n = ctl[N]          # steady while a part is unclaimed or running: the caller waits for them all
        _call(ctl[PART], ctl[SRC], ctl[OUT], n * k // parts, n * (k + 1) // parts)
        _add(ctl, DONE, 1)


@numba.njit(nogil=True, cache=True)
def _pending(ctl):
    claim = _load(ctl, NEXT)
    return claim & 0xFFFF < claim >> 16


@numba.njit(nogil=True, cache=True)
def _launch(ctl, part, src, out, threads):
    """Post the job, work on it, wait for the parts others claimed; False (nothing done) when another
    thread's job is running."""
    if _swap(ctl, BUSY, 1):
        return False
    parts = max(threads, min(src.size // PART_SIZE, 0xFFFF))
    ctl[PART], ctl[SRC], ctl[OUT], ctl[N] = part, src.ctypes.data, out.ctypes.data, src.size
    _store(ctl, DONE, 0)
    _store(ctl, NEXT, parts << 16)          # posted: everything written above is seen with it
    _work(ctl)
    while _load(ctl, DONE) < parts:
        pass
    _store(ctl, BUSY, 0)
    return True


@numba.njit(nogil=True, cache=True)
def _serve(ctl, spin):
    """The worker's loop: work on each job posted; return after `spin` polls without one. (A job
    posted as it returns is not lost: the caller runs every part no worker claimed.)"""
    _store(ctl, AWAKE, 1)
    idle = 0
    while idle < spin:
        if _pending(ctl):
            _work(ctl)
            idle = 0
        else:
            idle += 1
    _store(ctl, AWAKE, 0)


class Pool:
    """One job at a time on `threads` threads: the caller's and threads - 1 workers, started on first use."""

    def __init__(self, threads):
        self.threads, self.ctl, self.workers = threads, np.zeros(16, np.int64), []
        self.wake, self.starting, self.last = threading.Event(), threading.Lock(), 0.0

    def run(self, part, src, out):
        """part over src -> out, in parts; False (nothing done) when another thread's job is running."""
        start = time.perf_counter()
        if self.threads > 1 and not self.ctl[AWAKE] and (src.size >= WAKE or start - self.last < BURST):
            self._rouse()
        done = _launch(self.ctl, part, src, out, self.threads)
        self.last = time.perf_counter()
        return done

    def _rouse(self):
        with self.starting:             # two Python threads may rouse at once: start the workers once
            while len(self.workers) < self.threads - 1:
                self.workers.append(threading.Thread(target=self._serve, daemon=True, name="minifp-kernel"))
                self.workers[-1].start()
        self.wake.set()

    def _serve(self):
        while True:
            self.wake.clear()
            _serve(self.ctl, SPIN)
            self.wake.wait()
