"""What a training script touches before its first op (versions, accelerator, backends, cuda's queries and
memory, parallel wrappers, distributed, compile), the misuse PyTorch refuses, and the error for a missing name."""
import importlib
import os
import warnings

import numpy as np
import pytest

import minifp.torch as torch
import minifp.torch.nn.functional as F
from minifp.torch import nn

warnings.filterwarnings("ignore", message="minifp: no GPU here")


def test_versions_compare_as_pytorch_2_13():
    from packaging.version import Version
    assert Version(torch.__version__) >= Version("2.6") and "minifp" in torch.__version__
    assert torch.version.cuda == "13.0" and torch.backends.cudnn.version() == 91900


@pytest.mark.parametrize("name", ["torch.backends.cudnn", "torch.backends.cuda", "torch.backends.mps",
                                  "torch.nn.parallel", "torch.distributed", "torch.multiprocessing",
                                  "torch.accelerator", "torch.linalg", "torch.jit", "torch.version",
                                  "torch.autograd"])
def test_modules_import_as_modules(name):
    module = importlib.import_module("minifp." + name)
    assert module is eval(name)


def test_backend_flags_are_the_engines_switches():
    import minifp.torch.backends.cudnn as cudnn
    assert cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32
    try:
        cudnn.allow_tf32, cudnn.benchmark = False, True
        torch.backends.cuda.matmul.allow_tf32 = True
        assert not torch.backends.cudnn.allow_tf32 and torch.get_float32_matmul_precision() == "high"
    finally:
        cudnn.allow_tf32, cudnn.benchmark = True, False
        torch.backends.cuda.matmul.allow_tf32 = False
    assert torch.backends.mps.is_available() is False


def test_accelerator_and_cuda_queries():
    assert torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "cuda"
    assert torch.accelerator.device_count() == 1 and torch.cuda.get_device_capability() == (9, 0)
    assert torch.cuda.get_device_properties(0).total_memory > 80 * 10**9
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.cuda.set_device(1)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    end.record()
    assert end.elapsed_time(start) <= 0 <= start.elapsed_time(end)


def test_cuda_memory_counts_the_bytes_tensors_hold_and_the_exact_peak():
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    assert torch.cuda.max_memory_allocated() == before
    x = torch.zeros(1000, device="cuda")
    view = x.reshape(10, 100)                   # a view: no new storage
    h = torch.zeros(1000, device="cuda", dtype=torch.float16)
    y = (x + 1) * 2                             # x + 1 is freed once y is made: 4000 bytes more at the peak
    assert torch.cuda.memory_allocated() - before == 4000 + 2000 + 4000
    assert torch.cuda.max_memory_allocated() - before == 4000 + 2000 + 4000 + 4000
    del x, view, h, y
    assert torch.cuda.memory_allocated() == before and torch.cuda.memory_reserved() == before
    assert torch.cuda.max_memory_allocated() - before == 14000
    torch.cuda.reset_peak_memory_stats()
    assert torch.cuda.max_memory_allocated() == before
    assert torch.zeros(10).device == "cpu" and torch.cuda.memory_allocated() == before     # the host's: not counted


def test_parallel_wrappers_run_the_module_and_prefix_its_state():
    torch.manual_seed(0)
    inner = nn.Linear(3, 2)
    x = torch.randn(4, 3)
    for wrapper in (nn.DataParallel(inner), nn.parallel.DistributedDataParallel(inner, device_ids=[0])):
        assert wrapper.module is inner and list(wrapper.state_dict()) == ["module.weight", "module.bias"]
        assert torch.equal(wrapper(x), inner(x))
    assert torch.compile(inner) is inner and torch.jit.script(inner) is inner


def test_distributed_is_available_but_never_initialised():
    import minifp.torch.distributed as dist
    assert dist.is_available() and not dist.is_initialized()
    with pytest.raises(RuntimeError, match="one process"):
        dist.init_process_group("nccl")
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()


def test_linalg_norms():
    x = torch.tensor([[3.0, -4.0], [0.0, 1.0]])
    assert torch.linalg.vector_norm(x).item() == pytest.approx(np.sqrt(26), rel=1e-7)
    assert torch.linalg.norm(x, dim=1).tolist() == [5.0, 1.0] and x.norm(p=1).item() == 8.0
    assert torch.linalg.vector_norm(x, ord=float("inf")).item() == 4.0


def test_global_switches_read_back_what_was_set():
    from minifp import _speed
    threads, blas = _speed.THREADS, _speed.blas_threads()       # (the worker's OpenBLAS may run one thread)
    try:
        torch.set_num_threads(3)
        torch.use_deterministic_algorithms(True)
        assert torch.get_num_threads() == 3 and torch.are_deterministic_algorithms_enabled()
    finally:
        _speed.set_threads(threads)
        if blas is not None:
            _speed.blas_threads(blas)
        torch.use_deterministic_algorithms(False)
    assert torch.zeros(2, 3).contiguous(memory_format=torch.channels_last).shape == (2, 3)


@pytest.mark.parametrize("value, words", [(0, "expects a positive integer"), (-2, "expects a positive integer"),
                                          (2.0, "expects an int, but got float"), ("2", "expects an int, but got str"),
                                          (True, "expects an int, but got bool"),
                                          (None, "expects an int, but got NoneType"),
                                          (np.float64(2), "expects an int, but got numpy.float64")])
def test_thread_counts_are_refused_as_pytorch_refuses_them(value, words, monkeypatch):
    """PyTorch 2.13's RuntimeErrors, the counts unchanged; interop threads can be set once."""
    from minifp.torch import _globals
    monkeypatch.setitem(_globals._settings, "interop", None)
    before = torch.get_num_threads()
    for fn in ("set_num_threads", "set_num_interop_threads"):
        with pytest.raises(RuntimeError, match=f"^{fn} {words}$"):
            getattr(torch, fn)(value)
    assert torch.get_num_threads() == before and torch.get_num_interop_threads() == (os.cpu_count() or 1)
    torch.set_num_interop_threads(np.int64(3))
    with pytest.raises(RuntimeError, match="cannot set number of interop threads after parallel work has started"):
        torch.set_num_interop_threads(3)
    assert torch.get_num_interop_threads() == 3


def test_misuse_is_refused_as_pytorch_refuses_it():
    p = nn.Parameter(torch.zeros(2, 3))
    # PyTorch 2.13's words (tools/record_torch_errors.py records them)
    for grad, words in ((torch.zeros(3), r"^attempting to assign a gradient of size '\[3\]' to a tensor of size "
                                         r"'\[2, 3\]'\. Please ensure that the gradient and the tensor are the same size$"),
                        (torch.zeros(2, 3, dtype=torch.float16), r"^attempting to assign a gradient with dtype "
                                                                 r"'c10::Half' to a tensor with grad_dtype 'Float'\. "),
                        (torch.zeros(2, 3, device="cuda"), "assigned grad has data located on a different device")):
        with pytest.raises(RuntimeError, match=words):
            p.grad = grad
    assert p.grad is None
    x = torch.zeros(3, requires_grad=True)      # a plain tensor's .grad: checked by the optimizer, before a step
    x.grad = torch.ones(1)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient of size '\\[1\\]'"):
        torch.optim.SGD([p, x], lr=1.0).step()
    assert x.tolist() == [0.0] * 3
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        p.fill_(3.0)
    assert p.tolist() == [[0.0] * 3] * 2
    with pytest.raises(RuntimeError, match=r"Given input size: \(1x3x3\). Calculated output size: \(1x0x0\)"):
        nn.MaxPool2d(5)(torch.ones(1, 1, 3, 3))
    with pytest.raises(RuntimeError, match="defined either for all 10 classes or no classes"):
        F.cross_entropy(torch.randn(4, 10), torch.tensor([1, 2, 3, 4]), weight=torch.ones(5))


def test_a_partial_optimizer_state_stops_the_step_before_anything_changes():
    torch.manual_seed(0)
    model = nn.Linear(2, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
    saved = opt.state_dict()
    del saved["state"][1]["exp_avg_sq"]
    fresh = torch.optim.Adam(model.parameters())
    fresh.load_state_dict(saved)
    weights = [p.tolist() for p in model.parameters()]
    with pytest.raises(KeyError, match="exp_avg_sq"):
        fresh.step()
    assert [p.tolist() for p in model.parameters()] == weights


def test_label_smoothing_works_on_cuda_tensors():
    x = torch.randn(4, 10, device="cuda")
    loss = F.cross_entropy(x, torch.tensor([1, 2, 3, 4], device="cuda"), label_smoothing=0.1)
    ref = F.cross_entropy(x.cpu(), torch.tensor([1, 2, 3, 4]), label_smoothing=0.1)
    assert loss.device == "cuda" and loss.item() == ref.item()


def test_a_missing_name_says_the_face_is_partial_and_where_its_coverage_is():
    for reach in (lambda: torch.no_such_function, lambda: nn.NoSuchLayer, lambda: F.no_such_function,
                  lambda: torch.optim.NoSuchOptimizer):
        with pytest.raises(AttributeError, match="not part of minifp's PyTorch face yet.*docs/torch_coverage.md"):
            reach()
    assert not hasattr(torch, "no_such_function")
    with pytest.raises(AttributeError, match="no_such_method"):      # a Tensor method: Python's own message...
        torch.ones(2).no_such_method


def test_an_uncaught_missing_tensor_method_is_shown_with_a_note_pointing_to_the_coverage():
    import subprocess
    import sys
    script = ("import minifp.torch as torch\nt = torch.ones(2)\n"
              "try:\n    t.shape_of_things\nexcept AttributeError as e:\n    assert not getattr(e, '__notes__', 0)\n"
              "t.no_such_method()\n")
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True).stderr
    assert "'Tensor' object has no attribute 'no_such_method'" in shown        # ...and, when shown, the note
    assert "no_such_method is not part of minifp's PyTorch face yet" in shown and "docs/torch_coverage.md" in shown
    in_ipython = ("import contextlib, io\nfrom IPython.core.interactiveshell import InteractiveShell\n"
                  "shell, shown = InteractiveShell.instance(), io.StringIO()\n"
                  "with contextlib.redirect_stdout(shown):\n"
                  "    shell.run_cell('import minifp.torch as torch'); shell.run_cell('torch.ones(2).no_such_method()')\n"
                  "    shell.run_cell('(1).nope')\n"
                  "print(shown.getvalue().count('is not part of minifp'), shown.getvalue().count('nope'))")
    assert subprocess.run([sys.executable, "-c", in_ipython], capture_output=True, text=True).stdout.split() == [
        "1", "2"]                                     # a notebook shows the note too, and only for a Tensor's
    plain = subprocess.run([sys.executable, "-c", "import minifp.torch\nnot_a_name"], capture_output=True, text=True)
    assert "NameError" in plain.stderr and "minifp" not in plain.stderr.splitlines()[-1]


def test_sdpa_kernel_switches_the_backends_for_its_block():
    """torch.nn.attention.sdpa_kernel: only the listed backends on inside, the switches restored after."""
    from minifp.torch.nn.attention import SDPBackend, sdpa_kernel
    cuda = torch.backends.cuda
    assert SDPBackend.CUDNN_ATTENTION.value == 3 and SDPBackend.MATH.value == 0
    with sdpa_kernel([SDPBackend.MATH]):
        assert cuda.math_sdp_enabled() and not cuda.flash_sdp_enabled() and not cuda.cudnn_sdp_enabled()
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        assert cuda.flash_sdp_enabled() and not cuda.math_sdp_enabled()
    assert cuda.flash_sdp_enabled() and cuda.math_sdp_enabled() and cuda.cudnn_sdp_enabled()
    with pytest.raises(AssertionError, match="got str"):
        with sdpa_kernel("math"):
            pass


def test_memory_counting_steps_over_dead_weak_proxies():
    """A weakref.proxy whose object has died (a library's, left in the garbage collector's list) raises on any
    attribute look-up, isinstance's __class__ included: counting must not ask it."""
    import weakref

    class Dead:
        pass

    d = Dead()
    proxy = weakref.proxy(d)
    del d
    x = torch.zeros(256, device="cuda")
    assert torch.cuda.memory_allocated() >= x.numel() * 4
    del proxy
