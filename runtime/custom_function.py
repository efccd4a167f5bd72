"""torch.autograd.Function: user-defined operations with a hand-written backward.

`MyFn.apply(*args)` runs `MyFn.forward(ctx, *args)` without recording, then makes `ctx` — a
node of class `MyFnBackward` — the grad_fn of the outputs. The node takes part in the engine
like any other: hooks, retain_graph (its saved tensors are freed after a non-retaining
backward), and create_graph (the user's backward then runs with grad mode on, so the
operations it performs are themselves recorded).
"""

import numpy as np

from runtime import grad_mode
from runtime.autograd_meta import edge, requires_grad
from runtime.function import MultiOutputNode, SavedTensor, raise_freed, save_input, save_output
from runtime.ops._core import is_tensor, wrap
from runtime.rules import numpy_ops


class FunctionCtx(MultiOutputNode):
    """The context passed to forward/backward; it is also the graph node."""

    _rule = None

    def save_for_backward(self, *tensors):
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        self._to_save_forward = tensors

    @property
    def saved_tensors(self):
        if self._freed:
            raise_freed()
        from runtime import tensor_ops

        return tuple(a.unpack(tensor_ops, self) if type(a) is SavedTensor else a
                     for a in self._args)

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = {id(t) for t in tensors}

    def mark_dirty(self, *tensors):
        self._dirty = {id(t) for t in tensors}

    def set_materialize_grads(self, value):
        self._materialize = bool(value)

    # -- engine interface --------------------------------------------------------------------
    def _apply(self, g, ops):
        grads = [g] if self._n_outputs == 1 else list(g)
        prev = grad_mode.snapshot()
        grad_mode.apply(ops is not numpy_ops, grad_mode._state.inference)
        try:
            result = self._call_backward(grads, ops)
        finally:
            grad_mode.restore(prev)
        return result

    def _call_backward(self, grads, ops):
        tensors = []
        for g, (shape, dt) in zip(grads, self._out_meta):
            if g is None:
                tensors.append(wrap(np.zeros(shape, dt.np), dt) if self._materialize else None)
            elif ops is numpy_ops:
                tensors.append(wrap(np.asarray(g), None))
            else:
                tensors.append(g)
        out = type(self)._function.backward(self, *tensors)
        out = out if isinstance(out, tuple) else (out,)
        return self._input_grads(out, ops)

    def _input_grads(self, out, ops):
        positions = self._tensor_positions
        if len(out) < self._n_args:
            raise RuntimeError(f"{type(self)._function.__name__}.backward returned {len(out)} "
                               f"gradients, but forward took {self._n_args} arguments; return "
                               f"one per argument (None for non-tensors)")
        grads = []
        for i in positions:
            g = out[i]
            if g is not None and ops is numpy_ops:
                g = g._data if is_tensor(g) else np.asarray(g)
            grads.append(g)
        for i, g in enumerate(out[: self._n_args]):
            if i not in positions and g is not None:
                raise RuntimeError(f"{type(self)._function.__name__}.backward returned a "
                                   f"gradient for argument {i}, which is not a tensor")
        return tuple(grads)


class _FunctionMeta(type):
    """Gives each Function subclass its node class, named `<ClassName>Backward`."""

    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_cls = type(name + "Backward", (FunctionCtx,), {"_function": cls})


class Function(metaclass=_FunctionMeta):
    """Subclass with `forward(ctx, *args)` and `backward(ctx, *grad_outputs)` static methods
    and call `apply`; the results carry a node named `<ClassName>Backward`."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a Function subclass must define forward(ctx, ...)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a Function subclass must define backward(ctx, ...)")

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Function classes are not instantiated; call MyFunction.apply(...)")

    @classmethod
    def apply(cls, *args):
        ctx = _new_ctx(cls, args)
        with grad_mode.no_grad():
            result = cls.forward(ctx, *args)
        outputs = result if isinstance(result, tuple) else (result,)
        if any(requires_grad(a) for a in args if is_tensor(a)) and grad_mode.is_grad_enabled():
            outputs = _connect(ctx, args, outputs)
        else:
            ctx._args = ()
        return outputs if isinstance(result, tuple) else outputs[0]


def _new_ctx(cls, args):
    ctx = cls._backward_cls.__new__(cls._backward_cls)
    ctx.next_functions = ()
    ctx._args = ()
    ctx._fit = None
    ctx._seq = 0
    ctx._hooks = None
    ctx._freed = None
    ctx._n_outputs = 1
    ctx._to_save = ()
    ctx._non_differentiable = set()
    ctx._dirty = set()
    ctx._materialize = True
    ctx._n_args = len(args)
    ctx._tensor_positions = [i for i, a in enumerate(args) if is_tensor(a)]
    ctx.needs_input_grad = tuple(is_tensor(a) and requires_grad(a) for a in args)
    return ctx


def _connect(ctx, args, outputs):
    """Make ctx the grad_fn of the differentiable outputs and save what forward asked for."""
    from runtime.function import _sequence

    ctx.next_functions = tuple(edge(args[i]) for i in ctx._tensor_positions)
    ctx._seq = next(_sequence)
    ctx._n_outputs = len(outputs)
    ctx._out_meta = [(o._data.shape, o._dtype) if is_tensor(o) else ((), None) for o in outputs]
    linked = []
    for i, o in enumerate(outputs):
        if not is_tensor(o) or id(o) in ctx._non_differentiable or not o._dtype.is_floating_point:
            linked.append(o)
            continue
        if any(o is a for a in args) and id(o) not in ctx._dirty:
            o = o.detach()  # returning an input unchanged: a new tensor sharing its data
        o._grad_fn = ctx
        o._output_nr = i
        linked.append(o)
    ctx._args = tuple(_save(t, linked, ctx) for t in ctx._to_save)
    ctx._to_save = ()
    if any(type(a) is SavedTensor for a in ctx._args):
        ctx._freed = False
    return tuple(linked)


def _save(t, outputs, ctx):
    if t is None or not is_tensor(t):
        return t
    if any(t is o for o in outputs):
        return save_output(t, type(ctx).__name__)
    return save_input(t)
