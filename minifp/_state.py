"""The engine's per-thread state in one object, changed only through the context managers below.

As in PyTorch, grad mode and autocast belong to the thread that set them: a `no_grad()` or an
`autocast()` in one thread never changes what another thread computes, and a monitor counts only
the ops of the thread that watches.
"""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Autocast:
    """What autocast does on one device: ops named in `lower` run in `fmt`, ops in `float32` in float32;
    the rest run in their inputs' promoted format. A face supplies its framework's lists."""

    fmt: object                     # the lower-precision Format
    lower: frozenset
    float32: frozenset
    device: str = "cpu"             # only tensors on this device are cast (PyTorch's eligibility rule)
    cache: bool = True              # cast float32 leaves that require grad once per region
    variables_only: bool = False    # Keras's rule: cast only leaves that require grad (variables), then promote


# Float32 products (op family "matmul" or "conv") on a device may round their inputs first, as TF32 tensor
# cores do: (device, family) -> Format. Process-wide, as PyTorch's torch.backends switches are.
FLOAT32_PRODUCTS = {}


class _State(threading.local):
    """What the dispatcher reads on every op; each thread starts from these defaults."""

    def __init__(self):
        self.grad_enabled = True
        self.autocast = None        # an Autocast, or None
        self.autocast_depth = 0     # nesting of autocast regions: the cast cache lives as long as the outermost
        self.cast_cache = {}        # (id(leaf), id(Autocast)) -> (leaf, Autocast, cast): PyTorch's autocast cache
        self.monitors = ()          # the numerics reports watching this thread (a tuple: cheap to test)
        self.layer = None           # the innermost layer being called, which the ops it creates belong to
        self.training = None        # whether the layers being called train (Keras's call context), None: unsaid
        self.accumulator = None     # an Accumulator for matmul, conv and sum/mean, or None: float32 (BLAS)
        self.fp8 = None             # the DelayedScaling recipe GEMMs follow (minifp.fp8_autocast), or None
        self.fp8_pending = None     # in an fp8_autocast block: id -> the GEMM scaling states to update at its exit
        self.fp8_touched = {}       # id -> the GEMM scaling states a backward pass went through
        self.fp8_by_op = {}         # op name -> the scaling state of GEMMs outside layers and without a parameter


STATE = _State()


class Setting:
    """STATE.name = value inside the block, the previous value restored after it (a class, not a generator:
    layers enter one on every call, and this costs a fifth as much)."""

    __slots__ = ("name", "value", "previous")

    def __init__(self, name, value):
        self.name, self.value = name, value

    def __enter__(self):
        self.previous = getattr(STATE, self.name)
        setattr(STATE, self.name, self.value)
        return self

    def __exit__(self, *exc):
        setattr(STATE, self.name, self.previous)


def grad_mode(enabled):
    """Record the graph (True) or not (False) inside the block."""
    return Setting("grad_enabled", bool(enabled))


def training_scope(training):
    """Layers called inside the block train (True), infer (False), or as the enclosing block says (None)."""
    return Setting("training", STATE.training if training is None else training)


def layer_scope(layer):
    """Ops created inside the block belong to `layer` (for the monitor)."""
    return Setting("layer", layer)


class autocast_scope(Setting):
    """Ops run as the Autocast `policy` says (None: autocast off) inside the block; the cast cache is
    emptied when the outermost region ends."""

    __slots__ = ()

    def __init__(self, policy):
        super().__init__("autocast", policy)

    def __enter__(self):
        STATE.autocast_depth += 1
        return super().__enter__()

    def __exit__(self, *exc):
        super().__exit__()
        STATE.autocast_depth -= 1
        if STATE.autocast_depth == 0:
            STATE.cast_cache.clear()


@contextlib.contextmanager
def watching(report):
    """`report` records every rounding of this thread inside the block."""
    with Setting("monitors", STATE.monitors + (report,)):
        yield


@dataclass(frozen=True)
class Accumulator:
    """How matmul, linear, conv2d, sum and mean accumulate: in the Format `fmt` ("sequential" FMA chain or
    "pairwise" tree), or as the tensor cores of `tensor_core` (a device name) do; split_k: each 2-D product cut
    along k as cuBLAS cuts it on an H100 (minifp._cublas, a fit to recordings), its float32 partials added in order."""

    fmt: object = None
    order: str = "sequential"
    tensor_core: str | None = None
    split_k: bool = False


def accumulate_scope(acc):
    """The ops that accumulate do so as the Accumulator `acc` says (None: float32 BLAS) inside the block."""
    return Setting("accumulator", acc)
