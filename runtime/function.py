"""Graph nodes: the `grad_fn` objects of the dynamic graph.

Every differentiable primitive gets a Node subclass named as PyTorch names it (`MulBackward0`);
its `_rule` is the primitive's entry in `runtime.rules.RULES`. A node keeps:

- `next_functions`: one `(node, output_nr)` edge per differentiable input, `(None, 0)` for
  constants, in the forward call's argument order;
- `_args`: what the rule needs, where tensors are wrapped in `SavedTensor` so they can be
  version-checked and freed after backward;
- `_fit`: per input, the (shape, numpy dtype) its gradient must be reduced / cast to, or None
  when the gradient already has the input's shape and dtype (the common case, kept cheap).

Invariants: nodes are created only by `record` (or the in-place / view machinery in
`runtime.autograd_meta`); a node's sequence number orders execution in the engine (later nodes
first, AccumulateGrad nodes — one shared priority — as soon as they are ready), as PyTorch does.
"""

import itertools
import sys

import numpy as np

from runtime import grad_mode
from runtime.hooks import RemovableHandle
from runtime.rules import RULES
from runtime.rules import numpy_ops
from runtime.saved_names import AS_UNSIGNED, SAVED_NAMES

_sequence = itertools.count()
_new = object.__new__
_NEEDS_ONE = (True,)
_ACCUMULATE_FIRST = 1 << 62  # AccumulateGrad runs as soon as it is ready


class NodeHooks:
    """Hooks attached to one node; created only when the first hook is registered."""

    __slots__ = ("pre", "post", "tensor_pre", "retain")

    def __init__(self):
        self.pre = {}
        self.post = {}
        self.tensor_pre = {}  # output_nr -> {handle id: fn}, hooks of the node's outputs
        self.retain = {}  # output_nr -> weakref-holding retain_grad hook


class Node:
    """Base of every grad_fn. Call it by hand with output cotangents to run its backward."""

    __slots__ = ("next_functions", "_args", "_fit", "_seq", "_hooks", "_freed", "__weakref__")
    _rule = None
    _n_outputs = 1
    _keeps_indices = False  # saves index tensors or masks: freed after backward, as in PyTorch
    _shown = ()  # positions of `_args` shown as grad_fn._saved_<name>: kept after backward

    @classmethod
    def name(cls):
        return cls.__name__

    def __lt__(self, other):
        # ties in the engine's heap (AccumulateGrad nodes share a priority) compare equal
        return False

    def __repr__(self):
        return f"<{type(self).__name__} object at {id(self):#x}>"

    @property
    def metadata(self):
        return {}

    # -- running the rule -------------------------------------------------------------------
    def _needs(self):
        nf = self.next_functions
        if len(nf) == 1:
            return _NEEDS_ONE
        return tuple(edge[0] is not None for edge in nf)

    def _apply(self, g, ops):
        """Gradients for each next edge, given the output cotangent `g` (a list of them,
        some None, for multi-output nodes)."""
        args = self._args
        if self._freed is not None:
            if self._freed:
                raise_freed()
            args = [a.unpack(ops, self) if a.__class__ is SavedTensor else a for a in args]
        nf = self.next_functions
        n = len(nf)
        if n == 1:
            needs = _NEEDS_ONE
        elif n == 2:
            needs = (nf[0][0] is not None, nf[1][0] is not None)
        else:
            needs = tuple(e[0] is not None for e in nf)
        out = self._rule(ops, g, needs, *args)
        assert len(out) == len(nf), f"{self.name()}: rule arity mismatch"
        fit = self._fit
        if fit is not None:
            out = tuple([o if f is None else _fit(ops, o, f) for o, f in zip(out, fit)])
        return out

    def _release(self):
        """Drop saved tensors after a non-retaining backward (a later use raises); the
        values shown as `_saved_<name>` that are not tensors stay, as in PyTorch."""
        if self._freed is False:
            self._freed = True
            self._args = _kept_after_release(self._args, self._shown)

    def __call__(self, *grads):
        if len(grads) != self._n_outputs:
            raise TypeError(f"this node takes {self._n_outputs} gradient arguments, "
                            f"but {len(grads)} were given")
        from runtime import tensor_ops

        out = self._apply(grads[0] if self._n_outputs == 1 else list(grads), tensor_ops)
        return out[0] if len(out) == 1 else tuple(out)

    # -- hooks ------------------------------------------------------------------------------
    def _hook_table(self):
        if self._hooks is None:
            self._hooks = NodeHooks()
        return self._hooks

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) runs after this node; a returned tuple replaces
        grad_inputs."""
        hooks = self._hook_table().post
        handle = RemovableHandle(hooks)
        hooks[handle.id] = fn
        return handle

    def register_prehook(self, fn):
        """fn(grad_outputs) runs before this node; a returned tuple replaces grad_outputs."""
        hooks = self._hook_table().pre
        handle = RemovableHandle(hooks)
        hooks[handle.id] = fn
        return handle


def _saved_tensor(node, saved):
    """A SavedTensor of `node` as the tensor PyTorch's attribute shows."""
    from runtime.tensor import Tensor

    if saved.tensor is not None:
        return saved.tensor
    value = saved.unpack(numpy_ops, node)
    t = Tensor._wrap(np.asarray(value))
    if saved.output_of is not None:  # a saved output is the output itself: it has this node
        t._vc = saved.vc
        t._grad_fn = node
    return t


def _fit(ops, g, fit):
    """Reduce a broadcast gradient to its input's shape and cast it to the input's dtype."""
    if g is None or fit is None:
        return g
    shape, np_dtype = fit
    if np_dtype.kind not in "fc":
        # an integer tensor that requires grad (an in-place fill made it) gets no gradient
        raise RuntimeError("backward reached an integer or bool tensor that requires grad "
                           "(a fill of it by a value that requires grad); gradients can "
                           "only flow into floating point tensors")
    if g.__class__ is np.ndarray and g.shape == shape and g.dtype == np_dtype:
        return g  # a transpose's gradient, say: nothing to reduce or cast
    if ops.shape(g) != shape:
        g = ops.sum_to(g, shape)
    return ops.cast(g, np_dtype)


_node_classes = {}

# Nodes that PyTorch makes save an index tensor or a mask, so that a second backward through
# them without retain_graph fails as it does there, though our rules keep the index as data.
_INDEX_SAVING = frozenset({
    "IndexBackward0", "IndexPutBackward0", "WhereBackward0", "MaskedFillBackward0",
    "MaskedFillBackward1", "GatherBackward0", "IndexSelectBackward0", "MaxBackward0",
    "MinBackward0", "SortBackward0", "TopkBackward0", "MaskedSelectBackward0", "AmaxBackward0",
    "AminBackward0", "MaskedScatterBackward0", "ScatterBackward0", "ScatterAddBackward0",
    "KthvalueBackward0", "MedianBackward1", "ModeBackward0", "CummaxBackward0",
    "CumminBackward0", "TakeBackward0", "IndexAddBackward0", "IndexFillBackward0",
})


class MultiOutputNode(Node):
    """A node with several outputs (split, unbind); the count is per instance."""

    __slots__ = ("_n_outputs",)


def node_class(name, prim, multi_output=False):
    """The Node subclass for a primitive, created once and named as PyTorch names it."""
    cls = _node_classes.get(name)
    if cls is None:
        base = MultiOutputNode if multi_output else Node
        fields = {"__slots__": (), "_rule": staticmethod(RULES[prim]),
                  "_keeps_indices": name in _INDEX_SAVING}
        fields.update(saved_properties(SAVED_NAMES.get(name)))
        cls = type(name, (base,), fields)
        _node_classes[name] = cls
    return cls


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}  # a reduction shows as PyTorch's enum
_FREED = object()  # a saved tensor's place in `_args` once backward freed it


def saved_properties(names):
    """The class fields for a SAVED_NAMES row: a property `_saved_<name>` per named entry of
    `_args`, and the positions to keep after backward."""
    if names is None:
        return {}
    fields = {f"_saved_{n}": property(lambda node, i=i, n=n: _named_saved(node, i, n))
              for i, n in enumerate(names) if n is not None}
    fields["_shown"] = tuple(i for i, n in enumerate(names) if n is not None)
    return fields


def _kept_after_release(args, shown):
    """`args` with only the shown values that are not tensors left (None when none is)."""
    kept = None
    for i in shown:
        a = args[i]
        if a.__class__ is not SavedTensor:
            if kept is None:
                kept = [_FREED] * len(args)
            kept[i] = a
    return kept


def _named_saved(node, index, name):
    args = node._args
    value = _FREED if args is None else args[index]
    if value is _FREED:
        raise_freed()
    if type(value) is SavedTensor:
        return _saved_tensor(node, value)
    if name == "reduction":
        return _REDUCTIONS[value]
    if name in AS_UNSIGNED:
        return _as_unsigned(value)
    return tuple(value) if type(value) is list else value


def _as_unsigned(value):
    if isinstance(value, (list, tuple)):
        return tuple(_as_unsigned(v) for v in value)
    return value + (1 << 64) if isinstance(value, int) and value < 0 else value


# -- saved tensors ----------------------------------------------------------------------------

class SavedTensor:
    """A value a rule needs at backward time, checked against in-place modification.

    Inputs are held as the tensor itself (so create_graph can differentiate through them);
    outputs are held as data + version counter, to avoid an output -> node -> output cycle.
    The output of an in-place op on a view unpacks with the view's history at saving time
    (`history`, a weak reference; the node itself once that is gone), as PyTorch's does.
    """

    __slots__ = ("tensor", "data", "vc", "version", "output_of", "freed", "history")

    def __init__(self, tensor, data, vc, output_of):
        self.tensor = tensor
        self.data = data
        self.vc = vc
        self.version = vc[0] if vc is not None else 0
        self.output_of = output_of
        self.freed = False
        self.history = None

    def free(self):
        self.tensor = self.data = None
        self.freed = True

    def unpack(self, ops, node):
        vc = self.vc
        if ops is numpy_ops and (vc is None or vc[0] == self.version) and not self.freed:
            t = self.tensor
            if t is None:
                d = self.data
                if d.__class__ is not np.ndarray:
                    return d if d.__class__ is not Packed else d.restore(ops)
            else:
                if t._grad_fn is None and t._meta is not None and t._meta.detached:
                    raise_detached()
                d = t._data
            # 0-dim values travel as numpy scalars: their arithmetic is ~10x cheaper
            return d[()] if d.ndim == 0 else d
        if self.freed:
            raise_freed()
        t = self.tensor
        if t is not None and t._grad_fn is None and t._meta is not None and t._meta.detached:
            raise_detached()
        if self.vc is not None and self.vc[0] != self.version:
            raise RuntimeError(self._modified_message())
        if ops is numpy_ops:
            return self.data if self.tensor is None else self.tensor._data
        return self._as_tensor(node)

    def _as_tensor(self, node):
        from runtime.tensor import Tensor

        if self.tensor is not None:
            return self.tensor
        if not isinstance(self.data, np.ndarray):
            return self.data if self.data.__class__ is not Packed else self.data.restore(None)
        t = Tensor._wrap(self.data)
        if self.output_of is not None and grad_mode.is_grad_enabled():
            t._vc = self.vc
            history = self.history() if self.history is not None else None
            t._grad_fn = node if history is None else history
        return t

    def _modified_message(self):
        from runtime.tensor import Tensor

        data = self.data if self.tensor is None else self.tensor._data
        what = f"[torch.{Tensor._type_name(data)} {list(data.shape)}]"
        producer = self._producer_name()
        clause = f", output 0 of {producer}," if producer else ""
        return (f"a tensor saved for the backward pass was changed by an in-place operation "
                f"after it was saved: {what}{clause} is now at version {self.vc[0]}, but "
                f"backward needs version {self.version}. Clone it before the in-place "
                f"operation, or do the operation out of place. (Anomaly detection, "
                f"torch.autograd.set_detect_anomaly(True), points at the forward op.)")

    def _producer_name(self):
        if self.output_of is not None:
            name = self.output_of
        elif self.tensor is not None and self.tensor.grad_fn is not None:
            name = type(self.tensor.grad_fn).__name__
        else:
            return None
        return _op_name(name)


def raise_freed():
    raise RuntimeError(
        "this part of the graph was already backpropagated and its saved tensors were freed; "
        "pass retain_graph=True to the first backward()/autograd.grad() call if you need to "
        "run backward through the graph again")


def raise_detached():
    raise RuntimeError(
        "a tensor saved for the backward pass was detached in place (detach_()) after it was "
        "saved, so its history is gone; use the out-of-place detach() instead")


def _op_name(node_name):
    """'ExpBackward0' -> 'Exp', 'CopySlices' -> 'CopySlices'."""
    i = node_name.find("Backward")
    return node_name[:i] if i > 0 else node_name


def save_input(t):
    """Wrap an input tensor (or Python scalar) for saving on a node."""
    if t.__class__ is float or t.__class__ is int or t.__class__ is bool:
        return SavedTensor(None, t, None, None)
    if not hasattr(t, "_inference"):  # a constant (numpy array) inside a derivative rule
        return SavedTensor(None, np.asarray(t), None, None)
    m = t._meta
    if m is not None and m.detached:  # detached in place before: saved as the constant it is
        t = t.detach()
    if t._inference:
        raise RuntimeError(
            "a tensor created under inference_mode cannot be saved for backward; clone() it "
            "outside inference mode, or use no_grad() instead of inference_mode()")
    if SAVE_HOOKS:
        return SavedTensor(None, Packed(t), None, None)
    saved = _new(SavedTensor)  # SavedTensor(t, None, t._vc, None) without the __init__ call
    saved.tensor = t
    saved.data = None
    vc = saved.vc = t._vc
    saved.version = vc[0]
    saved.output_of = None
    saved.freed = False
    saved.history = None
    return saved


def save_output(t, node_name):
    if SAVE_HOOKS:
        return SavedTensor(None, Packed(t), None, node_name)
    return SavedTensor(None, t._data, t._vc, node_name)


# (pack, unpack) pairs of torch.autograd.graph.saved_tensors_hooks, innermost last
SAVE_HOOKS = []


class Packed:
    """A saved tensor as the innermost saved_tensors_hooks pack hook returned it."""

    __slots__ = ("value", "unpack")

    def __init__(self, tensor):
        pack, self.unpack = SAVE_HOOKS[-1]
        self.value = pack(tensor)

    def restore(self, ops):
        """The unpack hook's tensor: as a Tensor (recording), or its data (numpy backward)."""
        t = self.unpack(self.value)
        if ops is not numpy_ops:
            return t
        return t._data[()] if t._data.ndim == 0 else t._data


# -- AccumulateGrad -----------------------------------------------------------------------

class AccumulateGrad(Node):
    """Sink node of a leaf: adds incoming gradients into `variable.grad`."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()
        self._args = ()
        self._fit = None
        self._seq = _ACCUMULATE_FIRST  # one priority for all, as PyTorch's UINT64_MAX
        self._hooks = None
        self._freed = None

    @classmethod
    def name(cls):
        return "torch::autograd::AccumulateGrad"

    def _apply(self, g, ops):
        accumulate(self.variable, g, ops, _ENGINE_REFS)
        return ()

    def __call__(self, *grads):
        if len(grads) != 1:
            raise TypeError(f"this node takes 1 gradient argument, but {len(grads)} were given")
        from runtime import tensor_ops

        accumulate(self.variable, grads[0], tensor_ops)
        return ()


# References the engine itself holds to a gradient array when AccumulateGrad runs on it (its
# pending buffer, the list of the node's inputs, two call frames, getrefcount's argument).
_ENGINE_REFS = 5


def _can_take(variable, g, refs):
    """Whether `.grad` may become the array `g` itself instead of a copy: PyTorch takes a
    fresh gradient over when nothing else refers to it and its layout is the variable's."""
    return (refs and g.__class__ is np.ndarray and sys.getrefcount(g) <= refs + 1
            and _owns_its_memory(g) and g.flags.writeable and g.dtype == variable._dtype.np
            and g.strides == variable._data.strides and g.shape == variable._data.shape)


def _owns_its_memory(g):
    """g has no base, or is a view of all of a fresh array nothing else refers to (a
    transposed product transposed back, a reshaped sum): taking g then takes that array."""
    base = g.base
    if base is None:
        return True
    # references to base: g's, this frame's and getrefcount's argument
    return (base.base is None and sys.getrefcount(base) <= 3 and base.nbytes == g.nbytes
            and base.ctypes.data == g.ctypes.data)


def accumulate(variable, g, ops, refs=0):
    """Add gradient `g` into `variable.grad`: in place normally, out of place when recording.
    `refs`: how many references to `g` the caller holds (0: never take `g` over)."""
    from runtime.tensor import Tensor

    if variable._grad_fn is not None:  # detached in place, then given history in place
        raise RuntimeError("a leaf's gradient arrived after an in-place operation gave the "
                           "leaf a history of its own (it was detached and modified in place)")
    if not variable._requires_grad:  # detached in place after use: nothing lands
        return
    np_dtype = variable._dtype.np
    if ops is numpy_ops:
        existing = variable._grad
        if existing is None:
            take = _can_take(variable, g, refs)
            variable._grad = Tensor._wrap(g if take else np.array(g, dtype=np_dtype))
        else:  # in place, as PyTorch does when not recording (history, if any, is kept)
            np.add(existing._data, g, out=existing._data, casting="unsafe")
            existing._vc[0] += 1
        return
    g = ops.cast(g, np_dtype)
    existing = variable._grad
    if existing is None:
        if g.requires_grad and grad_mode.is_grad_enabled():
            # recording (create_graph, or a node called by hand): .grad is a recorded copy
            fresh = Tensor._wrap(np.zeros_like(g._data))
            variable._grad = fresh.copy_(g)
        else:
            variable._grad = g if g.requires_grad else Tensor._wrap(np.array(g._data))
    else:  # recording (create_graph): out of place, so the old .grad object is untouched
        variable._grad = existing + g
