"""Keras 3's Optimizer base class on minifp's update rules (minifp/engine.py).

What Keras does and minifp keeps: the learning rate is a float32 variable (or a schedule read at `iterations`),
`iterations` counts applied steps, gradients are clipped (clipnorm / global_clipnorm / clipvalue), weight decay
is Keras 3's decoupled form `w -= w * weight_decay * lr` applied before the update, None gradients are dropped
with Keras's warning. What differs: Keras keeps each slot (momentum, velocity ...) in the variable's dtype;
minifp keeps every slot in float32 and computes the update in float32, rounding the new value once into the
variable's format (identical for the float32 variables of a mixed policy).

gradient_accumulation_steps=n sums the gradients in float32 "gradient_accumulator" slots and applies their mean
(clipped, with weight decay) every n-th call; `iterations` then counts applied updates (calls // n), and learning
rate schedules read the calls. use_ema keeps float32 "average" slots, updated after every call as Keras does
(avg = m * avg + (1 - m) * w, m = 0 while `iterations` is 0, else ema_momentum), copied into the weights every
ema_overwrite_frequency updates and by finalize_variable_values (which Keras's fit calls at its end). Like the other
slots, the averages are float32 where Keras keeps them in the variable's dtype (the same for float32 variables).

minifp adds `update_rounding` ("nearest", Keras's; "stochastic"; "kahan") for low-precision variables (a
"bfloat16" policy): how each new value is rounded into the variable's format, weight decay included (see
minifp.engine.update_weight). "kahan" adds a slot "kahan_comp" in the variable's own dtype to every variable
that is not float32 (saved with the optimizer's variables). It changes nothing for float32 variables.
"""
from __future__ import annotations

import copy
import math
import re
import warnings

import numpy as np

from ... import engine
from ...engine import array_module, float32 as _FLOAT32, make, set_storage, storage, Tensor, to_numpy
from . import schedules as _schedules

__all__ = ["Optimizer", "OptimizerVariable"]

_NAME_UIDS = {}

# Keras on torch runs exactly these classes (not their subclasses) through its torch optimizers, which reset the
# gradient accumulators by multiplying them by 0 (a negative sum leaves -0.0, inf and nan leave nan); others assign 0
_TORCH_PARALLEL = {"SGD", "Adam", "AdamW", "Adadelta", "Adagrad", "Adamax", "Lion", "Nadam", "RMSprop"}


def _auto_name(class_name):
    """Keras's auto_name: snake case made unique (sgd, sgd_1 ...), through the core's counters when present."""
    try:
        from .. import backend
        return backend.auto_name(class_name)
    except (ImportError, AttributeError):
        name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", re.sub(r"\W+", "", class_name))
        name = re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()
        n = _NAME_UIDS.get(name, 0)
        _NAME_UIDS[name] = n + 1
        return name if n == 0 else f"{name}_{n}"


class OptimizerVariable:
    """An optimizer's own variable (iteration, learning_rate, slots): a value with Keras's Variable manners.

    numpy(), value, assign/assign_add/assign_sub, shape, dtype (a string), name, path; float(), int() and
    arithmetic read the value.
    """

    trainable = False

    def __init__(self, value, name, path, dtype="float32"):
        self._value = value if hasattr(value, "shape") and getattr(value, "dtype", None) == dtype else \
            np.asarray(value, dtype)
        self.name, self.path = name, path

    value = property(lambda self: self._value)
    shape = property(lambda self: tuple(self._value.shape))
    ndim = property(lambda self: self._value.ndim)
    dtype = property(lambda self: str(self._value.dtype))
    _data = property(lambda self: self._value)        # the engine's names, for code that sizes weights
    fmt = property(lambda self: _FLOAT32 if self._value.dtype == np.float32 else None)

    def numpy(self):
        """The value as a host NumPy array (a NumPy scalar for a 0-d variable, as Keras returns)."""
        a = to_numpy(self._value)
        return a[()] if a.ndim == 0 else a

    def assign(self, value):
        """Replace the value (cast to this variable's dtype, shape kept)."""
        xp = array_module(self._value)
        new = xp.asarray(value.numpy() if hasattr(value, "numpy") else value, self._value.dtype)
        if new.shape != self._value.shape:
            raise ValueError(f"assign(): value of shape {new.shape} for the variable {self.path} of shape "
                             f"{self.shape}")
        self._value = new
        return self

    def assign_add(self, value):
        return self.assign(self._value + np.asarray(value, self._value.dtype))

    def assign_sub(self, value):
        return self.assign(self._value - np.asarray(value, self._value.dtype))

    def __array__(self, dtype=None, copy=None):
        a = to_numpy(self._value)
        return a.astype(dtype) if dtype is not None else a

    def __float__(self):
        return float(self._value)

    def __int__(self):
        return int(self._value)

    def __index__(self):
        return int(self._value)

    def __repr__(self):
        return f"<Variable path={self.path}, shape={self.shape}, dtype={self.dtype}, value={str(self.numpy())}>"

    def __format__(self, spec):
        return format(self.numpy(), spec)

    def __eq__(self, other):
        return self.numpy() == (other.numpy() if isinstance(other, OptimizerVariable) else other)

    def __hash__(self):
        return id(self)


class SlotVariable(OptimizerVariable):
    """A slot (an optimizer's state for one model variable: momentum, velocity, the Kahan compensation) with Keras's
    Variable manners, over the engine tensor that holds it: the engine's update writes the tensor in place."""

    def __init__(self, tensor, name, path):
        self.tensor, self.name, self.path = tensor, name, path

    @property
    def _value(self):
        return storage(self.tensor)

    @_value.setter
    def _value(self, value):
        set_storage(self.tensor, value, self.tensor.fmt)


def _read(other):
    return other.numpy() if isinstance(other, OptimizerVariable) else other


for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lt", "le", "gt", "ge", "ne"):
    def _binary(self, other, _name=f"__{_op}__"):
        return getattr(self.numpy(), _name)(_read(other))
    setattr(OptimizerVariable, f"__{_op}__", _binary)
    if _op not in ("lt", "le", "gt", "ge", "ne"):
        def _reflected(self, other, _name=f"__r{_op}__"):
            return getattr(self.numpy(), _name)(_read(other))
        setattr(OptimizerVariable, f"__r{_op}__", _reflected)
OptimizerVariable.__neg__ = lambda self: -self.numpy()


def _float32_grad(g):
    """A gradient (minifp tensor, Keras tensor, array) as a float32 array."""
    if isinstance(g, Tensor):
        return g.float32()
    if hasattr(g, "numpy") and not isinstance(g, np.ndarray):
        g = g.numpy()
    xp = array_module(g) if hasattr(g, "dtype") else np
    return xp.asarray(g, np.float32)


def _is_float32(variable):
    """Whether a model variable holds float32 values (a master copy: update_rounding changes nothing there)."""
    fmt = getattr(variable, "fmt", None)
    return fmt is not None and fmt.is_float32


def _check_learning_rate(learning_rate):
    """Keras's check (a float, a schedule or a callable), plus minifp's: a float must be finite and >= 0."""
    if isinstance(learning_rate, _schedules.LearningRateSchedule) or callable(learning_rate):
        return learning_rate
    if isinstance(learning_rate, bool) or not isinstance(learning_rate, (float, np.floating)):
        raise ValueError("Argument `learning_rate` should be float, or an instance of LearningRateSchedule, or a "
                         "callable (that takes in the current iteration value and returns the corresponding "
                         f"learning rate value). Received instead: learning_rate={learning_rate!r}")
    if not math.isfinite(learning_rate) or learning_rate < 0:
        raise ValueError(f"Argument `learning_rate` must be a finite float >= 0. Received: "
                         f"learning_rate={learning_rate}")
    return float(learning_rate)


def _serialize(obj, module):
    """Keras's serialize_keras_object layout for a built-in object."""
    return {"module": module, "class_name": type(obj).__name__, "config": obj.get_config(), "registered_name": None}


class Optimizer:
    """Keras 3's optimizer base: subclasses give `_slot_groups()` and `_update_step(grad, variable, lr)`."""

    def __init__(self, learning_rate, weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 use_ema=False, ema_momentum=0.99, ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, update_rounding="nearest", **kwargs):
        engine.check_update_rounding(update_rounding)
        if kwargs.pop("decay", None) is not None:
            warnings.warn("Argument `decay` is no longer supported and will be ignored.")
        if kwargs:
            raise ValueError(f"Argument(s) not recognized: {kwargs}")
        if gradient_accumulation_steps and not gradient_accumulation_steps >= 2:
            raise ValueError("`gradient_accumulation_steps` must be an integer >= 2. Received: "
                             f"gradient_accumulation_steps={gradient_accumulation_steps}")
        if use_ema and (ema_momentum > 1 or ema_momentum < 0):
            raise ValueError(f"`ema_momentum` must be in the range [0, 1]. Received: ema_momentum={ema_momentum}")
        if use_ema and ema_overwrite_frequency and (not isinstance(ema_overwrite_frequency, int)
                                                    or ema_overwrite_frequency < 1):
            raise ValueError("`ema_overwrite_frequency` must be an integer >= 1 or None. Received: "
                             f"ema_overwrite_frequency={ema_overwrite_frequency}")
        if sum(a is not None for a in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError("Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. Received: "
                             f"clipnorm={clipnorm}, clipvalue={clipvalue}, global_clipnorm={global_clipnorm}")
        for arg, value in (("clipnorm", clipnorm), ("clipvalue", clipvalue), ("global_clipnorm", global_clipnorm),
                           ("weight_decay", weight_decay), ("loss_scale_factor", loss_scale_factor)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float, np.number))
                                      or not math.isfinite(value) or value < 0):
                raise ValueError(f"Argument `{arg}` must be a finite float >= 0 or None. Received: {arg}={value!r}")
        learning_rate = _check_learning_rate(learning_rate)
        self.name = _auto_name(type(self).__name__) if name is None else name
        self.weight_decay, self.clipnorm, self.clipvalue = weight_decay, clipnorm, clipvalue
        self.global_clipnorm, self.use_ema, self.ema_momentum = global_clipnorm, use_ema, ema_momentum
        self.ema_overwrite_frequency, self.loss_scale_factor = ema_overwrite_frequency, loss_scale_factor
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.update_rounding = update_rounding
        self.built = False
        self._variables = []
        self._trainable_variables = []
        self._index = {}                    # id(model variable) -> position
        self._slots = {}                    # id(model variable) -> {slot name: the engine tensor holding it}
        self._averages, self._accumulators = [], []     # use_ema's and gradient_accumulation_steps' slots
        self._iterations = self._track(OptimizerVariable(0, "iteration", f"{self.name}/iteration", "int64"))
        if isinstance(learning_rate, float):
            learning_rate = self._track(OptimizerVariable(learning_rate, "learning_rate",
                                                          f"{self.name}/learning_rate"))
        self._learning_rate = learning_rate

    # -- variables -------------------------------------------------------------------------------------
    def _track(self, variable):
        self._variables.append(variable)
        return variable

    @property
    def variables(self):
        """The optimizer's variables: iteration, learning_rate (when a float), then the slots in build order."""
        return self._variables[:]

    @property
    def iterations(self):
        """How many steps were applied (an int64 variable); with gradient accumulation, how many updates (a tensor:
        the calls floor-divided by gradient_accumulation_steps)."""
        if self.gradient_accumulation_steps:
            from .. import ops
            return ops.floor_divide(self._iterations.value, self.gradient_accumulation_steps)
        return self._iterations

    # -- the engine's training-state protocol (minifp.checkpoint): the variables, Keras's own state ------------
    def _engine_params(self):
        return list(self._trainable_variables) if self.built else []

    def _engine_state(self):
        return {"variables": [np.asarray(v.numpy()) for v in self.variables]}

    def _engine_restore(self, state, params):
        if not isinstance(state, dict) or not isinstance(state.get("variables"), list):
            raise ValueError("the optimizer's state must hold a list of variables")
        saved = state["variables"]
        built = self if self.built else copy.deepcopy(self)     # the variables it will have, once built for params
        built.build(params)
        want = [(tuple(v.shape), v.numpy().dtype) for v in built.variables]
        got = [(tuple(np.shape(a)), np.asarray(a).dtype) for a in saved]
        if want != got:
            raise ValueError(f"the saved variables have shapes and dtypes {got}; {type(self).__name__} has {want}")

        def apply():
            self.build(params)              # a Keras optimizer gets its variables before its first step
            for v, a in zip(self.variables, saved):
                v.assign(np.array(a))
        return apply

    def add_variable(self, shape, initializer="zeros", dtype=None, aggregation="none", name=None):
        """A tracked float32 optimizer variable filled with zeros, ones or a constant."""
        value = {"zeros": 0.0, "ones": 1.0}.get(initializer, initializer)
        return self._track(OptimizerVariable(np.full(shape, value, dtype or "float32"), name, f"{self.name}/{name}",
                                             dtype or "float32"))

    def _slot_groups(self):
        """Slot names in Keras's creation order: each tuple is made variable by variable, names interleaved."""
        return []

    def _slot_initial(self, slot):
        return 0.0

    def _has_slot(self, variable, slot):
        """Whether this variable gets this slot (all do, unless the optimizer treats variables differently)."""
        return True

    def _slot_shape(self, slot, shape):
        """A slot's shape for a variable of this shape (the variable's own, unless the rule keeps less)."""
        return shape

    def _slot_name(self, base, slot):
        """A slot's variable name: Keras's "<variable path>_<slot>"."""
        return f"{base}_{slot}"

    def build(self, variables):
        """Make the slots for these variables (once); they are then the only ones this optimizer updates."""
        if self.built:
            return
        variables = list(variables)
        for i, variable in enumerate(variables):
            self._index[id(variable)] = i
            self._slots[id(variable)] = {}
        # Keras makes these first, all averages then all accumulators, before the rule's slots
        self._averages = [self._add_zeros_like(v, "average") for v in variables] if self.use_ema else []
        self._accumulators = [self._add_zeros_like(v, "gradient_accumulator") for v in variables] \
            if self.gradient_accumulation_steps else []
        for group in self._slot_groups():
            for variable in variables:
                for slot in group:
                    if self._has_slot(variable, slot):
                        self._slots[id(variable)][slot] = self._add_slot(variable, slot).tensor
        if self.update_rounding == "kahan":         # after Keras's slots: their order stays Keras's
            for variable in variables:
                if not _is_float32(variable):
                    self._slots[id(variable)][engine.KAHAN] = self._add_slot(variable, engine.KAHAN).tensor
        self._trainable_variables = variables[:]
        self.built = True

    @staticmethod
    def _base_name(variable):
        path = getattr(variable, "path", None) or getattr(variable, "name", None) or "variable"
        return str(path).replace('/', '_').replace(':', '_')

    def _add_zeros_like(self, variable, slot):
        """A tracked float32 variable of zeros shaped like this model variable, named "<variable path>_<slot>"."""
        w = storage(variable) if isinstance(variable, Tensor) else np.asarray(variable)
        name = f"{self._base_name(variable)}_{slot}"
        tensor = make(Tensor, array_module(w).zeros(w.shape, np.float32), _FLOAT32)
        return self._track(SlotVariable(tensor, name, f"{self.name}/{name}"))

    def _add_slot(self, variable, slot):
        name = self._slot_name(self._base_name(variable), slot)
        w = storage(variable) if isinstance(variable, Tensor) else np.asarray(variable)
        if slot == engine.KAHAN:                    # the compensation: zeros in the variable's own format
            tensor = make(Tensor, array_module(w).zeros_like(w), variable.fmt)
        else:
            shape = self._slot_shape(slot, tuple(w.shape))
            tensor = make(Tensor, array_module(w).full(shape, np.float32(self._slot_initial(slot)), np.float32),
                          _FLOAT32)
        return self._track(SlotVariable(tensor, name, f"{self.name}/{name}"))

    # -- learning rate ---------------------------------------------------------------------------------
    @property
    def learning_rate(self):
        """The learning rate: the float32 variable, or the schedule's value at `iterations` (float32)."""
        lr = self._learning_rate
        if isinstance(lr, _schedules.LearningRateSchedule):
            return np.float32(lr(self._iterations.numpy()))
        if isinstance(lr, OptimizerVariable):
            return lr
        return np.float32(lr())

    @learning_rate.setter
    def learning_rate(self, learning_rate):
        learning_rate = _check_learning_rate(learning_rate)
        if not isinstance(learning_rate, float):
            if isinstance(self._learning_rate, OptimizerVariable):
                self._variables.remove(self._learning_rate)
            self._learning_rate = learning_rate
        elif isinstance(self._learning_rate, _schedules.LearningRateSchedule):
            raise TypeError("This optimizer was created with a `LearningRateSchedule` object as its `learning_rate` "
                            "constructor argument, hence its learning rate is not settable. If you need the "
                            "learning rate to be settable, you should instantiate the optimizer with a float "
                            "`learning_rate` argument.")
        elif isinstance(self._learning_rate, OptimizerVariable):
            self._learning_rate.assign(learning_rate)
        else:
            self._learning_rate = self._track(OptimizerVariable(learning_rate, "learning_rate",
                                                                f"{self.name}/learning_rate"))

    def _lr(self):
        return np.float32(self.learning_rate)

    # -- applying gradients ----------------------------------------------------------------------------
    def apply_gradients(self, grads_and_vars):
        """Apply (gradient, variable) pairs; returns `iterations`."""
        pairs = list(grads_and_vars)
        if not pairs:
            return self._iterations
        grads, variables = zip(*pairs)
        self.apply(grads, variables)
        return self._iterations

    def apply(self, grads, trainable_variables=None):
        """Update the variables from their gradients (the ones the optimizer was built with when omitted)."""
        grads = list(grads)
        if len(grads) == 0:
            return
        if trainable_variables is None:
            if not self.built:
                raise ValueError("When passing `grads` without `variables`, the optimizer must already be built on "
                                 "a list of variables. Call `optimizer.build(trainable_variables)` first. ")
            if len(grads) != len(self._index):
                raise ValueError("When passing `grads` as a list of gradient tensors, the gradients must match "
                                 f"`optimizer.variables` one-to-on. Received a list of {len(grads)} gradients, but "
                                 f"the optimizer is tracking {len(self._trainable_variables)} trainable variables.")
            trainable_variables = self._trainable_variables
        else:
            trainable_variables = list(trainable_variables)
            if len(trainable_variables) != len(grads):
                raise ValueError(f"apply(): {len(grads)} gradients for {len(trainable_variables)} variables; give "
                                 f"one gradient (or None) per variable")
            if not self.built:
                self.build(trainable_variables)
            self._check_variables_are_known(trainable_variables)
        grads, trainable_variables = self._filter_empty_gradients(grads, trainable_variables)
        grads = [_float32_grad(g) for g in grads]
        if self.loss_scale_factor is not None:
            grads = [g / np.float32(self.loss_scale_factor) for g in grads]
        with np.errstate(all="ignore"):
            if not self.gradient_accumulation_steps:
                self._step(grads, trainable_variables)
            else:
                self._accumulate(grads, trainable_variables)
            if self.use_ema:
                self._update_averages()
        for variable in trainable_variables:
            constraint = getattr(variable, "constraint", None)
            if constraint is not None:
                variable.assign(constraint(variable))
        self._iterations.assign_add(1)

    def _step(self, grads, variables):
        """One update: clip the gradients, decay the weights, apply the rule."""
        grads = engine.keras_clip_gradients(grads, clipnorm=self.clipnorm, clipvalue=self.clipvalue,
                                            global_clipnorm=self.global_clipnorm)
        self._apply_weight_decay(variables)
        self._update_all(grads, variables, self._lr())

    def _accumulate(self, grads, variables):
        """Add the gradients to the accumulators; on every n-th call, update with their mean and reset them."""
        steps = self.gradient_accumulation_steps
        accumulators = [self._accumulators[self._index[id(v)]] for v in variables]
        if (int(self._iterations) + 1) % steps == 0:
            self._step([(g + a.value) / np.float32(steps) for g, a in zip(grads, accumulators)], variables)
            torch_parallel = type(self).__name__ in _TORCH_PARALLEL and type(self).__module__.startswith(__package__)
            for a in self._accumulators:
                a.assign(a.value * np.float32(0) if torch_parallel else np.zeros(a.shape, np.float32))
        else:
            for g, a in zip(grads, accumulators):
                a.assign(g + a.value)

    def _update_averages(self):
        """Keras's EMA after each call (m = 0 at the first update: the average starts as the weights), then the copy
        into the weights every ema_overwrite_frequency updates."""
        momentum = np.float32(int(self.iterations) != 0) * np.float32(self.ema_momentum)
        for variable, average in zip(self._trainable_variables, self._averages):
            average.assign(momentum * average.value + (np.float32(1) - momentum) * variable.float32())
        frequency = self.ema_overwrite_frequency
        if frequency and (int(self.iterations) + 1) % frequency == 0:
            self._overwrite_with_averages(self._trainable_variables)

    def _overwrite_with_averages(self, variables):
        if len(variables) != len(self._averages):
            raise ValueError(f"The length of model variables ({len(variables)}) to override does not match the "
                             f"length of model variables stored in the optimizer ({len(self._averages)}). Please "
                             "check if the optimizer was called on your model.")
        for variable, average in zip(variables, self._averages):
            variable.assign(average.value)

    def _update_all(self, grads, variables, learning_rate):
        for g, variable in zip(grads, variables):
            self._update(g, variable, learning_rate)

    def _update(self, g, variable, learning_rate):
        """One variable's update through its rule, with the slots as the rule's float32 state."""
        rule, hyper = self._rule(learning_rate)
        engine.update(rule, variable, g, self._slots[id(variable)], self.update_rounding, **hyper)

    def _rule(self, learning_rate):
        """(update rule from minifp._optim, its hyperparameters) for this step."""
        raise NotImplementedError(f"{type(self).__name__} must define _rule(learning_rate)")

    def _check_variables_are_known(self, variables):
        for v in variables:
            if id(v) not in self._index:
                raise ValueError(f"Unknown variable: {v!r}. This optimizer can only be called for the variables it "
                                 "was originally built with. When working with a new set of variables, you should "
                                 "recreate a new optimizer instance.")

    @staticmethod
    def _filter_empty_gradients(grads, variables):
        kept = [(g, v) for g, v in zip(grads, variables) if g is not None]
        if not kept:
            raise ValueError("No gradients provided for any variable.")
        if len(kept) < len(grads):
            missing = [getattr(v, "path", None) or getattr(v, "name", None) for g, v in zip(grads, variables)
                       if g is None]
            warnings.warn(f"Gradients do not exist for variables {missing} when minimizing the loss. If using "
                          "`model.compile()`, did you forget to provide a `loss` argument?")
        return [g for g, _ in kept], [v for _, v in kept]

    # -- weight decay ----------------------------------------------------------------------------------
    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Exclude these variables, or those whose name contains one of var_names, from weight decay."""
        if self.built:
            raise ValueError("`exclude_from_weight_decay()` can only be configured before the optimizer is built.")
        self._exclude_ids = {id(v) for v in var_list or ()}
        self._exclude_pattern = re.compile("|".join(set(var_names))) if var_names else None

    def _use_weight_decay(self, variable):
        if id(variable) in getattr(self, "_exclude_ids", ()):
            return False
        pattern = getattr(self, "_exclude_pattern", None)
        name = getattr(variable, "name", None)
        return not (pattern is not None and name is not None and pattern.search(str(name)))

    def _weight_decay_of(self, variable):
        """The weight decay of this variable (None: none): `weight_decay`, unless the optimizer has two."""
        return self.weight_decay

    def _apply_weight_decay(self, variables):
        """Keras 3's decoupled decay before the update: w = w - w * weight_decay * lr, rounded into w's format."""
        lr = self._lr()
        for variable in variables:
            weight_decay = self._weight_decay_of(variable)
            if weight_decay is not None and self._use_weight_decay(variable):
                wd = np.float32(weight_decay)
                w = variable.float32()
                state = {name: storage(t) for name, t in self._slots[id(variable)].items()}
                engine.update_weight(variable, w - w * wd * lr, state, self.update_rounding)
                for name, t in self._slots[id(variable)].items():
                    if state[name] is not storage(t):       # the Kahan compensation, renewed
                        set_storage(t, state[name], t.fmt)

    # -- loss scaling, config --------------------------------------------------------------------------
    def scale_loss(self, loss):
        """loss * loss_scale_factor when one is set (Keras's scale_loss), else the loss itself."""
        if self.loss_scale_factor is not None:
            return loss * self.loss_scale_factor
        return loss

    def finalize_variable_values(self, var_list):
        """With use_ema, copy the averages into these variables (Keras's fit calls it at its end); else nothing."""
        if self.use_ema:
            self._overwrite_with_averages(list(var_list))

    def get_config(self):
        """Keras's config: name, learning_rate (a float or a serialized schedule) and the base arguments."""
        lr = self._learning_rate
        if isinstance(lr, _schedules.LearningRateSchedule):
            lr = _serialize(lr, "keras.optimizers.schedules")
        elif isinstance(lr, OptimizerVariable):
            lr = float(lr.numpy())
        return {"name": self.name, "learning_rate": lr, "weight_decay": self.weight_decay,
                "clipnorm": self.clipnorm, "global_clipnorm": self.global_clipnorm, "clipvalue": self.clipvalue,
                "use_ema": self.use_ema, "ema_momentum": self.ema_momentum,
                "ema_overwrite_frequency": self.ema_overwrite_frequency,
                "loss_scale_factor": self.loss_scale_factor,
                "gradient_accumulation_steps": self.gradient_accumulation_steps,
                # minifp's own argument, only when it is not Keras's rounding: a default config stays Keras's
                **({} if self.update_rounding == "nearest" else {"update_rounding": self.update_rounding})}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """The optimizer a config describes (a schedule given as a dict is rebuilt)."""
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = _schedules.deserialize(config["learning_rate"])
        return cls(**config)

    def save_own_variables(self, store):
        """Keras's saving hook: store[str(i)] = the i-th variable's value."""
        for i, variable in enumerate(self.variables):
            store[str(i)] = variable.numpy()

    def load_own_variables(self, store):
        """Keras's loading hook (skips with a warning when the counts differ, as Keras does)."""
        if len(store.keys()) != len(self.variables):
            warnings.warn(f"Skipping variable loading for optimizer '{self.name}', because it has "
                          f"{len(self.variables)} variables whereas the saved optimizer has {len(store.keys())} "
                          "variables. ", stacklevel=2)
            return
        for i, variable in enumerate(self.variables):
            variable.assign(store[str(i)])


def serialize(optimizer):
    """Keras's serialized form of an optimizer: {"module", "class_name", "config", "registered_name"}."""
    return {"module": "keras.optimizers", "class_name": type(optimizer).__name__, "config": optimizer.get_config(),
            "registered_name": None}


def deserialize(config, custom_objects=None):
    """The optimizer a serialized config describes (built-in class names are case-insensitive)."""
    name = config["class_name"]
    custom, built_in = custom_objects or {}, _built_in()
    wrapper = built_in.pop("lossscaleoptimizer")        # it deserializes the optimizer it wraps
    if name in custom:
        cls = custom[name]
    elif name.lower() == "lossscaleoptimizer":
        return wrapper.from_config(dict(config.get("config", {})), custom_objects)
    elif name.lower() in built_in:
        cls = built_in[name.lower()]
    else:
        raise ValueError(f"Could not interpret optimizer identifier: {name!r}. Valid names (case-insensitive): "
                         f"{', '.join(sorted(built_in))}")
    return cls.from_config(dict(config.get("config", {})))


def _built_in():
    """{lower-case class name: class} of keras.optimizers' own optimizers (user subclasses need custom_objects)."""
    found, stack = {}, [Optimizer]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls is not Optimizer and cls.__module__.startswith(__package__ + ".") and cls.__dict__.get("_by_name", True):
            found[cls.__name__.lower()] = cls
    return found
