"""torch.nn's lazy modules: LazyLinear, LazyConv1d/2d/3d, LazyConvTranspose1d/2d/3d, LazyBatchNorm1d/2d/3d and
LazyInstanceNorm1d/2d/3d, whose parameters take their shapes from the first input (Dive into Deep Learning builds
its models so), and the UninitializedParameter and UninitializedBuffer they hold until then.

As PyTorch's LazyModuleMixin: a forward pre-hook infers the shapes and materializes the parameters in place (an
optimizer made before keeps them), initialises them as the eager layer does, and the module becomes that layer
(LazyLinear a Linear); loading a state dict into a lazy module materializes its parameters with the loaded shapes.
"""
from __future__ import annotations

from ...engine import Tensor as EngineTensor, no_grad, set_storage, storage
from .. import _tensor
from . import layers, modules, more
from .module import Parameter

__all__ = ["LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]

_SHAPE_ERROR = ("Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
                "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
                "`forward` to initialize the parameters before accessing their attributes.")


def _use_error(method):
    return ValueError(f"Attempted to use an uninitialized parameter in <method '{method}' of 'torch._C.TensorBase' "
                      f"objects>. This error happens when you are using a `LazyModule` or explicitly manipulating "
                      f"`torch.nn.parameter.UninitializedParameter` objects. When using LazyModules Call `forward` "
                      f"with a dummy batch to initialize the parameters before calling torch functions")


class _Uninitialized:
    """What an uninitialized parameter or buffer refuses until materialize() gives it a shape (its class then
    becomes cls_to_become); its dtype and device are the ones it will have."""

    __slots__ = ()
    cls_to_become = None

    @property
    def shape(self):
        raise RuntimeError(_SHAPE_ERROR)

    def size(self, dim=None):
        raise _use_error("size")

    def numel(self):
        raise _use_error("numel")

    def dim(self):
        raise _use_error("dim")

    def materialize(self, shape, device=None, dtype=None):
        """Give it a shape (uninitialized values, as torch.empty) and become cls_to_become, in place."""
        made = _tensor.empty(*((shape,) if isinstance(shape, int) else shape), dtype=dtype or self.dtype,
                             device=device or self.device)
        set_storage(self, storage(made), made.fmt, made.device)
        self.__class__ = self.cls_to_become

    def __repr__(self):
        return f"<{type(self).__name__}>"


class UninitializedParameter(_Uninitialized, Parameter):
    """A parameter without a shape yet: a lazy module's until its first forward."""

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return super().__new__(cls)         # bare, as the engine makes them: __init__ gives it its empty storage

    def __init__(self, requires_grad=True, device=None, dtype=None):
        _empty(self, requires_grad, device, dtype)


class UninitializedBuffer(_Uninitialized, _tensor.Tensor):
    """A buffer without a shape yet: a lazy batch norm's running statistics until its first forward."""

    __slots__ = ()
    cls_to_become = _tensor.Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None):
        return super().__new__(cls)

    def __init__(self, requires_grad=False, device=None, dtype=None):
        _empty(self, requires_grad, device, dtype)


def _empty(t, requires_grad, device, dtype):
    """Give a bare uninitialized tensor no elements, of the dtype and on the device it will have."""
    made = _tensor.empty(0, dtype=dtype, device=device)
    EngineTensor.__init__(t, storage(made), made.fmt, bool(requires_grad), made.device)


class LazyModuleMixin:
    """Shapes from the first forward's inputs: initialize_parameters(*inputs) materializes them, then the module
    becomes cls_to_become."""

    cls_to_become = None
    _inferred = None        # the size the first input gives (in_features, ...): 0 until then

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters)

    def reset_parameters(self):
        """The eager layer's initialisation, once the parameters have their shapes."""
        if not self.has_uninitialized_params() and getattr(self, self._inferred) != 0:
            super().reset_parameters()

    def has_uninitialized_params(self):
        """Whether some parameter or buffer is still uninitialized."""
        return any(isinstance(t, _Uninitialized) for t in (*self._parameters.values(), *self._buffers.values()))

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def _lazy_load_hook(self, state_dict, prefix, *rest):
        # an uninitialized parameter takes the shape of the one loaded into it
        for name, t in (*self._parameters.items(), *self._buffers.items()):
            loaded = state_dict.get(prefix + name)
            if isinstance(t, _Uninitialized) and loaded is not None and not isinstance(loaded, _Uninitialized):
                t.materialize(tuple(loaded.shape))


def _infer_parameters(module, args):
    """The forward pre-hook: materialize from the inputs, drop the hooks, become the eager layer."""
    module.initialize_parameters(*args)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    module._initialize_hook.remove()
    module._load_hook.remove()
    del module._initialize_hook, module._load_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, modules.Linear):
    """A Linear whose in_features is the first input's last dim."""

    cls_to_become, _inferred = modules.Linear, "in_features"

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:           # loaded from a state dict: the shape came with it
            self.in_features = input.shape[-1]


class _LazyConvMixin(LazyModuleMixin):
    """A convolution whose in_channels is the first input's channel count (dim 0 of an unbatched input)."""

    _inferred = "in_channels"

    def __init__(self, out_channels, kernel_size, *args, bias=True, device=None, dtype=None, **kwargs):
        super().__init__(0, 0, kernel_size, *args, bias=False, device=device, dtype=dtype, **kwargs)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            batched = len(self.kernel_size) + 2
            if input.ndim not in (batched - 1, batched):
                raise RuntimeError(f"Expected {batched - 1}D (unbatched) or {batched}D (batched) input to "
                                   f"{type(self).__name__}, but got input of size: {_tensor.Size(input.shape)!r}")
            self.in_channels = input.shape[1 if input.ndim == batched else 0]
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            pair = ((self.in_channels, self.out_channels // self.groups) if getattr(self, "transposed", False)
                    else (self.out_channels, self.in_channels // self.groups))
            with no_grad():
                self.weight.materialize(pair + tuple(self.kernel_size))
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()


def _lazy_conv(name, eager):
    """The lazy form of a convolution class."""
    return type(name, (_LazyConvMixin, eager), {"cls_to_become": eager, "__module__": __name__,
                                               "__doc__": f"A {eager.__name__} whose in_channels is the first "
                                                          f"input's channel count."})


LazyConv1d = _lazy_conv("LazyConv1d", layers.Conv1d)
LazyConv2d = _lazy_conv("LazyConv2d", modules.Conv2d)
LazyConv3d = _lazy_conv("LazyConv3d", more.Conv3d)
LazyConvTranspose1d = _lazy_conv("LazyConvTranspose1d", more.ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv("LazyConvTranspose2d", layers.ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv("LazyConvTranspose3d", more.ConvTranspose3d)


class _LazyNormMixin(LazyModuleMixin):
    """A batch or instance norm whose num_features is the first input's dim 1 (PyTorch's _LazyNormBase: affine and
    tracking by default, for the instance norms too)."""

    _inferred = "num_features"

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
        super().__init__(0, eps, momentum, False, False, device, dtype)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = _tensor.tensor(0, dtype=_tensor.int64, device=device)

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            for t in (self.weight, self.bias, self.running_mean, self.running_var):
                if t is not None:
                    t.materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormMixin, modules.BatchNorm1d):
    """A BatchNorm1d whose num_features is the first input's channel count."""
    cls_to_become = modules.BatchNorm1d


class LazyBatchNorm2d(_LazyNormMixin, modules.BatchNorm2d):
    """A BatchNorm2d whose num_features is the first input's channel count."""
    cls_to_become = modules.BatchNorm2d


class LazyBatchNorm3d(_LazyNormMixin, layers.BatchNorm3d):
    """A BatchNorm3d whose num_features is the first input's channel count."""
    cls_to_become = layers.BatchNorm3d


class LazyInstanceNorm1d(_LazyNormMixin, layers.InstanceNorm1d):
    """An InstanceNorm1d whose num_features is the first input's dim 1."""
    cls_to_become = layers.InstanceNorm1d


class LazyInstanceNorm2d(_LazyNormMixin, layers.InstanceNorm2d):
    """An InstanceNorm2d whose num_features is the first input's dim 1."""
    cls_to_become = layers.InstanceNorm2d


class LazyInstanceNorm3d(_LazyNormMixin, layers.InstanceNorm3d):
    """An InstanceNorm3d whose num_features is the first input's dim 1."""
    cls_to_become = layers.InstanceNorm3d
