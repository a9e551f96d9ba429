"""torch.func: function transforms (grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd, hessian, vmap) and
functional_call, stack_module_state, replace_all_batch_norm_modules_.

minifp has no batching rules and no forward-mode AD. vmap calls the function once per slice of the mapped dimension
and stacks the results (the semantics of PyTorch's vmap: pytrees of inputs and outputs, in_dims, out_dims, its
errors, randomness; not its speed). The differentiating transforms run autograd.grad as torch.autograd.functional
does: jacrev row by row, jacfwd column by column and jvp by the double-backward trick (the same values; where a
result takes several roundings PyTorch's forward mode may sum them in another order). A result keeps its graph
only where something needs it: an enclosing transform (grad of grad, jacfwd of jacrev) or an argument that requires
grad in the caller's graph (not a tensor the function reads from its closure, such as a module's own parameters:
PyTorch's result would be differentiable with respect to those too).
"""
from __future__ import annotations

import contextlib
import functools
import threading

import numpy as np

from ..engine import (Tensor as _EngineTensor, enable_grad, get_random_state, is_grad_enabled, set_random_state,
                      storage, to_numpy)
from . import _functions, _tensor
from ._missing import missing
from .autograd import functional as _autograd_functional
from .nn.module import Module
from .nn.modules import _BatchNorm
from .utils._pytree import (LeafSpec, broadcast_to_and_flatten, tree_flatten, tree_map, tree_unflatten,
                            treespec_pprint)

__all__ = ["functional_call", "stack_module_state", "replace_all_batch_norm_modules_", "grad", "grad_and_value",
           "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian", "vmap"]

__getattr__ = missing("minifp.torch.func")

_nesting = threading.local()        # how many differentiating transforms the running code is inside


@contextlib.contextmanager
def _inside_transform():
    _nesting.depth = getattr(_nesting, "depth", 0) + 1
    try:
        yield
    finally:
        _nesting.depth -= 1


def _keeps_graph(*trees):
    """Whether results must stay differentiable: inside another transform, or an input requires grad."""
    if getattr(_nesting, "depth", 0):
        return True
    return is_grad_enabled() and any(isinstance(x, _EngineTensor) and x.requires_grad
                                     for tree in trees for x in tree_flatten(tree)[0])


def _detached(tree, graph):
    """The tree as the caller sees it: its tensors detached unless the graph is kept."""
    return tree if graph else tree_map(lambda x: x.detach() if isinstance(x, _EngineTensor) else x, tree)


# -- functional_call, stacking modules ---------------------------------------------------------------------------


def _merged(dicts):
    """One dict of names to tensors from a dict or a sequence of dicts with distinct keys."""
    if isinstance(dicts, dict):
        return dicts
    if not isinstance(dicts, (list, tuple)):
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(dicts)}")
    if not all(isinstance(d, dict) for d in dicts):
        raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
    keys = [k for d in dicts for k in d]
    repeated = list(dict.fromkeys(k for k in keys if keys.count(k) > 1))
    if repeated:
        raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
    return {k: v for d in dicts for k, v in d.items()}


def _named_tensors(module):
    return list(module.named_parameters(remove_duplicate=False)) + list(module.named_buffers(remove_duplicate=False))


def _untied(module, given):
    """given, plus every name tied to a given one (one tensor under several names) with that value."""
    names_of = {}
    for name, t in _named_tensors(module):
        names_of.setdefault(id(t), set()).add(name)
    out = dict(given)
    for names in names_of.values():
        named = [n for n in names if n in given]
        if len(names) < 2 or not named:
            continue
        if len({id(given[n]) for n in named}) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                             f"Consider using tie_weights=False")
        out.update({n: given[named[0]] for n in names})
    return out


def _check_keys(module, given):
    """strict=True: the names must be exactly the module's parameters and buffers (tied names included)."""
    valid = {name for name, _ in _named_tensors(module)}
    errors = []
    if set(given) - valid:
        errors.append(f"Unexpected key(s): {', '.join(map(repr, sorted(set(given) - valid)))}.")
    if valid - set(given):
        errors.append(f"Missing key(s): {', '.join(map(repr, sorted(valid - set(given))))}.")
    if errors:
        raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t" + "\n\t".join(errors))


_MISSING = object()


def _swap(module, name, value):
    """Put value under the dotted name (a parameter's or buffer's place, else a plain attribute); returns what was
    there (_MISSING where nothing was)."""
    *path, attr = name.split(".")
    for i, part in enumerate(path):
        child = getattr(module, part, _MISSING)
        if child is _MISSING:
            raise AttributeError(f"{module._get_name()} has no attribute `{part}`")
        if not isinstance(child, Module):
            raise TypeError(f"submodule `{'.'.join(path[:i + 1])}`: {child} is not an instance of torch.nn.Module")
        module = child
    for store in (module._parameters, module._buffers):
        if attr in store:
            old = store[attr]
            if value is _MISSING:
                del store[attr]
            else:
                store[attr] = value
            return old
    old = getattr(module, attr, _MISSING)
    if value is not _MISSING:
        object.__setattr__(module, attr, value)
    elif old is not _MISSING:
        object.__delattr__(module, attr)
    return old


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with its parameters and buffers replaced, for this call, by the given tensors."""
    given = _merged(parameter_and_buffer_dicts)
    tensors = _untied(module, given) if tie_weights else given
    if strict:
        _check_keys(module, tensors)
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    saved = {}
    try:
        for name, value in tensors.items():
            saved[name] = _swap(module, name, value)
        return module(*args, **(kwargs or {}))
    finally:
        for name, old in reversed(saved.items()):
            now = _swap(module, name, old)
            if name in given:
                given[name] = now       # a buffer the module replaced (PyTorch writes it back into the dict)


def stack_module_state(models):
    """(params, buffers): each parameter and buffer of the models stacked along a new first dim, new leaves."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if len({type(m) for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named):
        tables = [dict(n) for n in named]
        return {k: _stacked_leaf([t[k] for t in tables], k) for k in tables[0]}
    return stacked(m.named_parameters() for m in models), stacked(m.named_buffers() for m in models)


def _stacked_leaf(tensors, name):
    flags = {t.requires_grad for t in tensors}
    if len(flags) > 1:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = _functions.stack(tensors)
    return result.detach().requires_grad_() if flags == {True} else result


def replace_all_batch_norm_modules_(root):
    """Every BatchNorm in root normalises by its batch's statistics only (no running statistics); returns root."""
    for m in root.modules():
        if isinstance(m, _BatchNorm) and m.track_running_stats:
            m.running_mean = m.running_var = m.num_batches_tracked = None
            m.track_running_stats = False
    return root


# -- argnums and inputs ----------------------------------------------------------------------------------------


def _argnum(i, n):
    if not isinstance(i, int):
        raise RuntimeError(f"argnum must be int, got: {type(i)}")
    if -n <= i < n:
        return i % n
    raise RuntimeError(f"Got argnum={i}, but only {n} positional inputs")


def _indices(args, argnums):
    """The positions argnums names, checked as PyTorch checks them."""
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, int):
        return (_argnum(argnums, len(args)),)
    found = tuple(_argnum(i, len(args)) for i in argnums)
    if not found:
        raise RuntimeError("argnums must be non-empty")
    if len(set(argnums)) != len(argnums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return found


def _differentiable(x, graph):
    """A tensor the transform differentiates with respect to: a fresh leaf, or where the caller's graph is kept,
    a view of x (its own gradients, and through it x's)."""
    if not isinstance(x, _EngineTensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    return x.view_as(x) if graph and x.requires_grad else x.detach().requires_grad_(True)


class _Inputs:
    """The arguments at argnums as flat tensors, and the arguments with other tensors in their places."""

    def __init__(self, args, argnums):
        self.args, self.index, self.single = args, _indices(args, argnums), isinstance(argnums, int)
        picked = args[self.index[0]] if self.single else tuple(args[i] for i in self.index)
        self.flat, self.spec = tree_flatten(picked)

    def called(self, func, flat, kwargs=None):
        picked = tree_unflatten(flat, self.spec)
        picked = (picked,) if self.single else picked
        args = list(self.args)
        for i, value in zip(self.index, picked):
            args[i] = value
        return func(*args, **(kwargs or {}))

    def shaped(self, flat):
        """flat per-input results in the structure of the arguments at argnums."""
        return tree_unflatten(flat, self.spec)


def _split_aux(output, has_aux, api):
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


def _tensor_outputs(output, api):
    """The output's leaves, checked to be tensors (PyTorch's errors for functions returning anything else)."""
    flat, spec = tree_flatten(output)
    if (len(flat) == 1 and flat[0] is None) or not flat:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {flat})")
    for o in flat:
        if not isinstance(o, _EngineTensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")
    return flat, spec


# -- grad, vjp -------------------------------------------------------------------------------------------------


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (the gradient of func's scalar output with respect to the arguments at argnums, the
    output), or (gradient, (output, aux)) with has_aux."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        inputs = _Inputs(args, argnums)
        graph = _keeps_graph(args, kwargs)
        with _inside_transform(), enable_grad():
            leaves = [_differentiable(x, graph) for x in inputs.flat]
            output, aux = _split_aux(inputs.called(func, leaves, kwargs), has_aux, "grad_and_value(f)(*args)")
            if not isinstance(output, _EngineTensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                                   f"{type(output)}")
            if output.ndim != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {output.ndim} dims. Maybe you wanted to use the vjp or jacrev APIs "
                                   f"instead?")
            found = _autograd_functional._grads((output,), leaves, (_tensor.ones_like(output),), graph)
        result = _detached((inputs.shaped(list(found)), output, aux), graph)
        return (result[0], (result[1], result[2])) if has_aux else result[:2]
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of func's scalar output with respect to the arguments at argnums (with
    has_aux: (gradient, aux))."""
    both = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        found, value = both(*args, **kwargs)
        return (found, value[1]) if has_aux else found
    return wrapper


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn[, aux]): vjp_fn(cotangents) gives the cotangents times func's Jacobian, per
    primal."""
    inputs = _Inputs(primals, tuple(range(len(primals))))
    graph = _keeps_graph(primals)
    with _inside_transform(), enable_grad():
        leaves = [_differentiable(x, graph) for x in inputs.flat]
        output, aux = _split_aux(inputs.called(func, leaves), has_aux, "vjp(f, *primals)")
        flat_out, out_spec = _tensor_outputs(output, "vjp(f, *primals)")
        for o in flat_out:
            if not o.is_floating_point():
                raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got "
                                   f"Tensor with dtype {o.dtype}")

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        flat_cot, cot_spec = tree_flatten(cotangents)
        if cot_spec != out_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {treespec_pprint(cot_spec)}, primal output: "
                               f"{treespec_pprint(out_spec)}")
        _tensor.check_output_gradients(flat_out, flat_cot)
        # (the cotangents may come from an enclosing transform that differentiates through this product)
        keep = (graph or _keeps_graph(cotangents)) and (is_grad_enabled() if create_graph is None else create_graph)
        with enable_grad():
            found = _autograd_functional._grads(flat_out, leaves, flat_cot, keep)
        return _detached(inputs.shaped(list(found)), keep)

    results = (_detached(output, graph), vjp_fn)
    return results + (_detached(aux, graph),) if has_aux else results


# -- forward mode, Jacobians, Hessians --------------------------------------------------------------------------


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), its Jacobian times tangents[, aux]), by the double-backward trick."""
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat, spec = tree_flatten(primals)
    flat_tangents, tangent_spec = tree_flatten(tangents)
    if spec != tangent_spec:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python structure. For example, "
                           f"if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{spec} and tangents with structure {tangent_spec}")
    for name, leaves in (("primals", flat), ("tangents", flat_tangents)):
        if not leaves:
            raise RuntimeError(f"{api}: Expected {name} to contain at least one Tensor.")
        for x in leaves:
            if not isinstance(x, _EngineTensor):
                raise RuntimeError(f"{api}: Expected {name} to only contain Tensors, got {type(x)}")
    for p, t in zip(flat, flat_tangents):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the "
                               f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} while "
                               f"the given forward gradient is of size {list(t.shape)}.")
    graph = _keeps_graph(primals, tangents)
    inputs = _Inputs(primals, tuple(range(len(primals))))
    box = {}

    def flat_func(*leaves):
        output, box["aux"] = _split_aux(inputs.called(func, list(leaves)), has_aux, api)
        flat_out, box["spec"] = _tensor_outputs(output, api)
        return tuple(flat_out)

    with _inside_transform():
        leaves = tuple(_differentiable(x, graph) for x in flat)
        outs, found = _autograd_functional.jvp(flat_func, leaves, tuple(flat_tangents), create_graph=graph)
    results = (tree_unflatten(outs, box["spec"]), tree_unflatten(found, box["spec"]))
    return _detached(results + ((box["aux"],) if has_aux else ()), graph)


def linearize(func, *primals):
    """(func(*primals), jvp_fn): jvp_fn(*tangents) is func's Jacobian at primals times the tangents (each call
    runs func again: minifp records no linear program)."""
    output = _detached(func(*primals), _keeps_graph(primals))

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]
    return output, jvp_fn


def _jacobian(func, argnums, has_aux, api, args, forward):
    """func's Jacobian with respect to the arguments at argnums: for each output (in the structure of func's
    output), the per-input Jacobians (in the structure of the arguments) of shape output.shape + input.shape."""
    inputs = _Inputs(args, argnums)
    graph = _keeps_graph(args)
    box = {}

    def flat_func(*leaves):
        output, box["aux"] = _split_aux(inputs.called(func, list(leaves)), has_aux, api)
        flat_out, box["spec"] = _tensor_outputs(output, api)
        for o in flat_out:
            if not o.is_floating_point():
                raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got "
                                   f"Tensor with dtype {o.dtype}")
        return tuple(flat_out)

    with _inside_transform():
        leaves = tuple(_differentiable(x, graph) for x in inputs.flat)
        if forward:
            per_output = _columns(flat_func, leaves, graph)
        else:
            per_output = _autograd_functional.jacobian(flat_func, leaves, create_graph=graph)
    jac = tree_unflatten([inputs.shaped(list(row)) for row in per_output], box["spec"])
    return _detached((jac, box["aux"]), graph) if has_aux else _detached(jac, graph)


def _columns(func, xs, graph):
    """The Jacobian column by column, as forward mode builds it: one run of func, one gradient with respect to
    zero output gradients u that require grad (J^T u), then J e_k for each input element k by differentiating
    that with respect to u (the double-backward trick, one sweep per column). Per output, per input:
    output.shape + input.shape."""
    with enable_grad():
        xs = _autograd_functional._grad_ready(xs, graph)
        outs = func(*xs)
        us = tuple(_tensor.zeros_like(o).requires_grad_(True) for o in outs)
        transposed = _autograd_functional._grads(outs, xs, us, True)
        per_input = []
        for x, g in zip(xs, transposed):
            columns = []
            for k in range(x.numel()):
                onehot = np.zeros(x.numel(), np.float32)
                onehot[k] = 1.0
                seed = _tensor.tensor(onehot.reshape(tuple(x.shape)), dtype=g.dtype, device=g.device)
                columns.append(_autograd_functional._grads((g,), us, (seed,), graph))
            per_input.append([_functions.stack([c[j] for c in columns], -1).reshape(tuple(o.shape) + tuple(x.shape))
                              if columns else _tensor.zeros(tuple(o.shape) + tuple(x.shape), dtype=o.dtype)
                              for j, o in enumerate(outs)])
    return [tuple(per_input[i][j] for i in range(len(xs))) for j in range(len(outs))]


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None):
    """A function returning func's Jacobian with respect to the arguments at argnums (reverse mode, row by row)."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        return _jacobian(func, argnums, has_aux, "vjp(f, *primals)", args, forward=False)
    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """A function returning func's Jacobian with respect to the arguments at argnums, column by column (one sweep
    per input element, as forward mode costs)."""
    _check_randomness(randomness)

    @functools.wraps(func)
    def wrapper(*args):
        return _jacobian(func, argnums, has_aux, "jvp(f, primals, tangents)", args, forward=True)
    return wrapper


def hessian(func, argnums=0):
    """A function returning func's Hessian with respect to the arguments at argnums: jacfwd(jacrev(func))."""
    return jacfwd(jacrev(func, argnums), argnums)


# -- vmap --------------------------------------------------------------------------------------------------------


def _check_randomness(randomness):
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")


def _name(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def _in_dims(func, in_dims, args):
    """(the flat arguments, their spec, one in_dim per flat argument (made non-negative), the batch size)."""
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
                         f"trying to vmap over a function with no inputs. The latter is unsupported.")
    flat, spec = tree_flatten(args)
    dims = broadcast_to_and_flatten(in_dims, spec)
    where = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
    if dims is None:
        raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`. in_dims has structure "
                         f"{tree_flatten(in_dims)[1]} but inputs has structure {spec}.")
    for i, (x, d) in enumerate(zip(flat, dims)):
        if d is None:
            continue
        if not isinstance(d, int):
            raise ValueError(f"{where}: Got in_dim={d} for an input but in_dim must be either an integer dimension "
                             f"or None.")
        if not isinstance(x, _EngineTensor):
            raise ValueError(f"{where}: Got in_dim={d} for an input but the input is of type {type(x)}. We cannot "
                             f"vmap over non-Tensor arguments, please use None as the respective in_dim")
        if not -x.ndim <= d < x.ndim:
            raise ValueError(f"{where}: Got in_dim={d} for some input, but that input is a Tensor of dimensionality "
                             f"{x.ndim} so expected in_dim to satisfy -{x.ndim} <= in_dim < {x.ndim}.")
        dims[i] = d % x.ndim
    sizes = [x.shape[d] for x, d in zip(flat, dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return flat, spec, dims, sizes[0]


def _check_out_dims(func, out_dims):
    for d in tree_flatten(out_dims)[0]:
        if d is not None and not isinstance(d, int):
            raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a "
                             f"python collection of ints representing where in the outputs the vmapped dimension "
                             f"should appear.")


def _out_dims(func, out_dims, output):
    """(the spec of the first call's output, one out_dim per leaf of it)."""
    flat, spec = tree_flatten(output)
    if isinstance(spec, LeafSpec):
        dims = ([out_dims] if isinstance(out_dims, int) or out_dims is None else
                list(out_dims) if isinstance(out_dims, tuple) and len(out_dims) == 1 else None)
    else:
        dims = broadcast_to_and_flatten(out_dims, spec)
    if dims is None:
        raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with "
                         f"the structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but "
                         f"outputs has structure {spec}.")
    for x, d in zip(flat, dims):
        if d is not None and not isinstance(x, _EngineTensor):
            raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` must only return Tensors, got type "
                             f"{type(x)}. Did you mean to set out_dims= to None for output?")
    return spec, dims


def _joined(func, values, d):
    """One output's values over the batch, stacked at out_dim d (d None: the value, which must be the same for
    every slice)."""
    if d is None:
        first = values[0]
        if isinstance(first, _EngineTensor) and any(not np.array_equal(to_numpy(storage(v)),
                                                                       to_numpy(storage(first))) for v in values[1:]):
            raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` can not return a BatchedTensor when "
                             f"out_dim is None")
        return first
    if not -values[0].ndim - 1 <= d <= values[0].ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-values[0].ndim - 1}, "
                         f"{values[0].ndim}], but got {d})")
    return _functions.stack(values, d)


def _slice(x, d, b):
    """x's slice b along d; of an empty dim, a slice of zeros (PyTorch runs func once on the empty batch)."""
    if x.shape[d] == 0:
        return x.new_zeros(tuple(x.shape[:d]) + tuple(x.shape[d + 1:]))
    return x.select(d, b)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """func mapped over a dimension of its inputs: a loop that calls func on each slice (at in_dims; None: the
    argument as it is) and stacks the outputs at out_dims (the results PyTorch's vmap gives, without its speed)."""
    _check_randomness(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _check_out_dims(func, out_dims)
        flat, spec, dims, size = _in_dims(func, in_dims, args)
        start = get_random_state()
        results = []
        for b in range(max(size, 1)):
            if randomness == "same":
                set_random_state(start)         # every slice draws the same numbers
            sliced = [x if d is None else _slice(x, d, b) for x, d in zip(flat, dims)]
            results.append(func(*tree_unflatten(sliced, spec), **kwargs))
            if randomness == "error" and get_random_state() != start:
                set_random_state(start)
                raise RuntimeError("vmap: called random operation while in randomness error mode. Please either "
                                   "use the 'same' or 'different' randomness flags on vmap or perform the "
                                   "randomness operation out of vmap")
        out_spec, out = _out_dims(func, out_dims, results[0])
        columns = zip(*(tree_flatten(r)[0] for r in results))
        joined = [_joined(func, list(values), d) for values, d in zip(columns, out)]
        if size == 0:           # (the one call ran on zeros to learn the outputs' shapes: none of it is kept)
            joined = [v if d is None else v.narrow(d, 0, 0) for v, d in zip(joined, out)]
        return tree_unflatten(joined, out_spec)
    return wrapped
