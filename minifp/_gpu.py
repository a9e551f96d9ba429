"""The GPU's own tensor cores where they compute what the emulation does: float16 and bfloat16 products (CuPy
arrays) run as cuBLAS GEMMs with float32 accumulation and a float32 output (cublasGemmEx, CUBLAS_COMPUTE_32F),
so the op rounds once afterwards as on the CPU. Imported only when an op meets CuPy arrays."""
import numpy as np

from ._formats import bfloat16, float16

_TYPES = {float16: 2, bfloat16: 14}             # cudaDataType: CUDA_R_16F, CUDA_R_16BF
_R_32F, _COMPUTE_32F, _GEMM_DEFAULT = 0, 68, -1
_ONE, _ZERO = np.ones(1, np.float32), np.zeros(1, np.float32)


def _operand(x, dtype):
    """x (dtype's values, in dtype or float32) in dtype, and how cuBLAS reads it column-major: (transposed,
    leading dim)."""
    x = x.astype(dtype, copy=False)     # exact: x holds dtype's values; the memory order is kept
    if x.flags.c_contiguous:
        return x, False, x.shape[1]
    if not x.flags.f_contiguous:
        x = x.copy()
        return x, False, x.shape[1]
    return x, True, x.shape[0]


def gemm(a, b, fmt):
    """a (m, k) @ b (k, n), CuPy arrays of fmt's values (in its storage dtype or float32), on tensor cores:
    float32 (m, n)."""
    import cupy
    from cupy_backends.cuda.libs import cublas
    (m, k), n = a.shape, b.shape[1]
    out = cupy.empty((m, n), np.float32)
    if out.size == 0 or k == 0:
        out.fill(0)
        return out
    a, ta, lda = _operand(a, fmt.storage)
    b, tb, ldb = _operand(b, fmt.storage)
    code = _TYPES[fmt]
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setStream(handle, cupy.cuda.get_current_stream().ptr)
    mode = cublas.getPointerMode(handle)
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    try:    # row-major out = a @ b is column-major out.T = b.T @ a.T
        cublas.gemmEx(handle, int(tb), int(ta), n, m, k, _ONE.ctypes.data, b.data.ptr, code, ldb,
                      a.data.ptr, code, lda, _ZERO.ctypes.data, out.data.ptr, _R_32F, n, _COMPUTE_32F,
                      _GEMM_DEFAULT)
    finally:
        cublas.setPointerMode(handle, mode)
    return out


class TensorCores:
    """CuPy with a matmul whose 2-D products of fmt's values run on tensor cores; the rest is CuPy's."""

    def __init__(self, xp, fmt):
        self._xp, self._fmt = xp, fmt

    def __getattr__(self, name):
        return getattr(self._xp, name)

    def operand(self, a, wide):
        """What the op body gets for argument a: the storage of a tensor of fmt (the GEMM reads it as it is; any
        other arithmetic on it promotes to float32, exactly), else wide(a)."""
        return a._data if getattr(a, "fmt", None) == self._fmt else wide(a)

    def matmul(self, a, b):
        if a.ndim == 2 and b.ndim == 2:
            return gemm(a, b, self._fmt)
        # batched products: CuPy's float32 GEMM (the same exact products, float32 sums)
        return self._xp.matmul(a.astype(np.float32, copy=False), b.astype(np.float32, copy=False))


def tensor_cores(xp, fmt):
    """xp with tensor-core products when xp is CuPy and fmt is float16 or bfloat16; else xp itself."""
    return TensorCores(xp, fmt) if fmt in _TYPES else xp


_MODELS = (("H100", "H100"), ("H200", "H100"), ("H800", "H100"), ("GH200", "H100"), ("B200", "B200"),
           ("B100", "B200"), ("A100", "A100"), ("A800", "A100"), ("V100", "V100"))


def model_of(name):
    """The tensor-core model (minifp._tensorcore's DEVICES) of the GPU called `name`, or None."""
    return next((model for key, model in _MODELS if key in name), None)


def device_name():
    """The name of the GPU in use (CuPy's device 0 properties)."""
    import cupy
    name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
    return name.decode() if isinstance(name, bytes) else name
