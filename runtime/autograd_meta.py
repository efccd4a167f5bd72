"""Recording: how forward operations attach nodes to the graph, for plain ops, views and
in-place ops.

- `record` attaches a node to a freshly computed output.
- `make_view` creates a tensor that shares memory and the version counter with its base and
  remembers the steps that carve it out of the base (to replay them on gradients). A view
  requires grad when its base does (PyTorch's DifferentiableViewMeta): views without history
  of their own are listed on the base, and `views_follow_base` re-derives their
  `_requires_grad` whenever the base starts or stops requiring grad, so the hot paths can
  keep reading the two slots `_requires_grad` / `_grad_fn`.
- `apply_inplace` runs an out-of-place op and writes the result back into the tensor, moving
  the autograd history as PyTorch does: the tensor's grad_fn becomes the op's node, or, for a
  view, the base's grad_fn becomes `CopySlices` and the view's a regenerated
  `AsStridedBackward0`.
"""

import weakref

import numpy as np

from runtime import grad_mode
from runtime.dtypes import FLOAT
from runtime.function import (
    AccumulateGrad,
    Node,
    SavedTensor,
    _sequence,
    raise_freed,
    node_class,
)
from runtime.rules import numpy_ops
from runtime.rules.numpy_ops import replay_view, shares_memory_within

_state = grad_mode._state
_new = object.__new__

# view creation kinds (PyTorch's CreationMeta)
DEFAULT, NO_GRAD, MULTI_OUTPUT, INFERENCE = 0, 1, 2, 3
_VIEWS_PRUNE_AT = 32  # a base's list of views is first cleared of dead ones at this length
_weakref = weakref.ref
# forward AD: while a dual level is open, [propagate] where propagate(node, inputs, outs) gives
# the outputs of a freshly recorded node their tangents (see runtime.forward_ad)
FORWARD_AD = []


class TensorMeta:
    """Rarely used per-tensor autograd state, allocated on first use."""

    __slots__ = ("hooks", "post_acc_hooks", "acc", "retains_grad", "view_steps", "creation",
                 "view_version", "own_requires_grad", "views", "detached", "tangent", "fw_only")

    def __init__(self):
        self.hooks = None
        self.post_acc_hooks = None
        self.acc = None
        self.retains_grad = False
        self.view_steps = None
        self.creation = DEFAULT
        self.view_version = 0
        self.own_requires_grad = False  # a view's own flag (requires_grad_() on the view)
        self.views = None  # on a base: weakrefs to views whose requires_grad follows it
        self.detached = False  # a non-leaf detached in place: nodes that saved it refuse it
        self.tangent = None  # forward AD: the tangent carried inside the open dual level
        self.fw_only = False  # forward AD: requires grad only so that tangents propagate


def meta_of(t):
    m = t._meta
    if m is None:
        m = t._meta = TensorMeta()
    return m


def edge(t):
    """The (node, output_nr) through which gradient flows back into `t`."""
    gf = t.grad_fn
    if gf is not None:
        return (gf, t._output_nr)
    if t._requires_grad:
        return (t._accumulator(), 0)
    return (None, 0)


def requires_grad(x):
    try:
        return x._requires_grad or x._grad_fn is not None
    except AttributeError:
        return False


_NO_EDGE = (None, 0)
_SCALAR_TYPES = (float, int, bool)


def new_node(cls, inputs, out, args):
    """A node of class `cls` whose edges lead to `inputs` (tensors or Python scalars)."""
    if len(inputs) == 1:
        return _new_unary_node(cls, inputs[0], out, args)
    if len(inputs) == 2 and inputs[1].__class__ in _SCALAR_TYPES:
        node = _new_unary_node(cls, inputs[0], out, args)
        node.next_functions += (_NO_EDGE,)
        if node._fit is not None:
            node._fit.append(None)
        return node
    node = _new(cls)
    edges = []
    fit = None
    out_dtype = out._dtype
    out_shape = out._data.shape
    for i, x in enumerate(inputs):
        if x is None or x.__class__ in _SCALAR_TYPES or not hasattr(x, "_grad_fn"):
            edges.append(_NO_EDGE)
            continue
        gf = x._grad_fn if x._base is None else x.grad_fn
        if gf is not None:
            edges.append((gf, x._output_nr))
        elif x._requires_grad:
            edges.append((x._accumulator(), 0))
        else:
            edges.append(_NO_EDGE)
            continue
        if x._dtype is not out_dtype or x._data.shape != out_shape:
            if fit is None:
                fit = [None] * len(inputs)
            fit[i] = (x._data.shape, x._dtype.np)
    node.next_functions = tuple(edges)
    node._fit = fit
    return _init_node(node, args)


def _init_node(node, args):
    """The fields every new node starts with; `_freed` False marks saved tensors to free."""
    node._args = args
    node._seq = next(_sequence)
    node._hooks = None
    node._freed = None
    for a in args:
        if a.__class__ is SavedTensor:
            node._freed = False
            break
    return node


def _new_unary_node(cls, x, out, args):
    """new_node for one tensor input that requires grad (the hot path of unary ops)."""
    node = _new(cls)
    gf = x._grad_fn if x._base is None else x.grad_fn
    if gf is not None:
        node.next_functions = ((gf, x._output_nr),)
    else:
        node.next_functions = ((x._accumulator(), 0),)
    if x._dtype is out._dtype and x._data.shape == out._data.shape:
        node._fit = None
    else:
        node._fit = [(x._data.shape, x._dtype.np)]
    # _init_node, inlined: this is the hot path of every unary op
    node._args = args
    node._seq = next(_sequence)
    node._hooks = None
    node._freed = None
    for a in args:
        if a.__class__ is SavedTensor:
            node._freed = False
            break
    return node


def record(cls, inputs, out, args=()):
    """Attach a new node of class `cls` to `out`, the result of the op on `inputs`."""
    if out._dtype.category != FLOAT:
        check_integer_history(out)
    node = new_node(cls, inputs, out, args)
    if cls._keeps_indices:
        node._freed = False
    out._grad_fn = node
    if FORWARD_AD:
        FORWARD_AD[0](node, inputs, (out,))
    return node


_INTEGER_TARGET = []  # non-empty while an in-place op records onto an integer or bool target


def on_integer_target(fn, *args):
    """fn(*args), where fn records an in-place op onto an integer or bool target: PyTorch
    rebases such a target's history without the dtype check other results get."""
    _INTEGER_TARGET.append(True)
    try:
        return fn(*args)
    finally:
        _INTEGER_TARGET.pop()


def check_integer_history(t):
    """An op on an integer tensor that requires grad (which only an in-place fill of a value
    that requires grad makes, as in PyTorch) cannot give an integer result a history, but
    for an in-place op's result on an integer target."""
    if _INTEGER_TARGET:
        return
    raise RuntimeError(f"autograd cannot record a result of dtype {t._dtype}: an integer or "
                       f"bool tensor that requires grad can only be cast to a floating point "
                       f"dtype or modified in place")


def any_requires_grad(inputs):
    if not _state.enabled:
        return False
    for x in inputs:
        if hasattr(x, "_data") and (x._requires_grad or x._grad_fn is not None):
            return True
    return False


def record_multi(cls, inputs, outs, args=()):
    """One node for several outputs (split, unbind): output i gets output_nr i."""
    if outs[0]._dtype.category != FLOAT:
        check_integer_history(outs[0])
    node = new_node(cls, inputs, outs[0], args)
    node._fit = None
    node._n_outputs = len(outs)
    for i, out in enumerate(outs):
        out._grad_fn = node
        out._output_nr = i
    if FORWARD_AD:
        FORWARD_AD[0](node, inputs, outs)
    return node


# -- views ------------------------------------------------------------------------------------

def make_view(src, data, step, node_cls=None, args=(), creation=DEFAULT):
    """A tensor viewing `src`'s memory through `step` (a (kind, arg) pair, see replay_view)."""
    out = src._new_like(data)
    out._vc = src._vc
    out._inference = src._inference  # a view of an inference tensor is one too
    m = out._meta = TensorMeta()
    if src._base is None:
        base = src
        m.view_steps = (step,)
    else:
        base = src._base
        src_meta = src._meta
        m.view_steps = src_meta.view_steps + (step,)
        if src_meta.creation != DEFAULT and (creation == DEFAULT or src_meta.creation == INFERENCE):
            creation = src_meta.creation
    out._base = base
    m.view_version = src._vc[0]
    if _state.enabled:
        m.creation = creation
        if src._requires_grad or src._grad_fn is not None:
            if node_cls is not None:
                record(node_cls, (src,), out, args)
            return out
    else:
        m.creation = INFERENCE if _state.inference or creation == INFERENCE else NO_GRAD
    if out._dtype.category == FLOAT or out._dtype is base._dtype:
        # no history of its own: its requires_grad follows the base's from now on (an
        # integer view too: a fill of its base by a value that requires grad reaches it)
        out._requires_grad = base._requires_grad or base._grad_fn is not None
        bm = base._meta
        if bm is None:
            bm = base._meta = TensorMeta()
        views = bm.views
        if views is None:
            bm.views = [_weakref(out)]
        else:
            n = len(views)
            if n >= _VIEWS_PRUNE_AT and not n & (n - 1):
                # amortised: dead views are dropped each time the list reaches a power of two
                views = bm.views = [r for r in views if r() is not None]
            views.append(_weakref(out))
    return out


def views_follow_base(base):
    """Re-derive requires_grad of the base's views without history after the base's changed."""
    bm = base._meta
    if bm is None or not bm.views:
        return
    flag = base._requires_grad or base._grad_fn is not None
    for ref in bm.views:
        view = ref()
        if view is not None:
            view._requires_grad = flag or view._meta.own_requires_grad


def set_view_requires_grad(view, flag):
    """requires_grad_() on a view: its own flag, or'ed with its base's (as PyTorch does)."""
    base = view._base
    view._meta.own_requires_grad = flag
    view._requires_grad = flag or base._requires_grad or base._grad_fn is not None


def regenerated_view_fn(view):
    """grad_fn of a view whose version moved since its history was made (the base or another
    view of it changed in place): a new AsStridedBackward0 over the base's current history."""
    base = view._base
    if view._grad_fn is None and not (base._requires_grad or base._grad_fn is not None):
        return None
    m = view._meta
    if m.creation != DEFAULT:
        raise RuntimeError(_rebase_message(view, "its base, or another view of its base, was"))
    m.view_version = view._vc[0]
    cls = node_class("AsStridedBackward0", "view_replay")
    empty = view._data.size == 0 or base._data.size == 0
    node = new_node(cls, (base,), view, (base._data.shape, m.view_steps, empty))
    node._fit = None
    if not (base._requires_grad or base._grad_fn is not None):
        # the base was detached in place since: the view keeps requiring grad, but its
        # gradient goes nowhere (PyTorch's edge to an undefined base)
        node.next_functions = (_NO_EDGE,)
    old = view._grad_fn
    view._grad_fn = node
    view._output_nr = 0
    _move_retain_hook(view, old, node)
    return node


def _rebase_message(view, what):
    """Why an in-place change cannot be recorded for a view made by `view`'s creation kind."""
    creation = view._meta.creation
    if creation == MULTI_OUTPUT:
        return (f"output {view._output_nr} of {_multi_view_name(view)} is a view that belongs "
                f"to a function returning several views, and {what} modified in place; such "
                f"views cannot be modified in place. Use an out-of-place operation instead")
    if creation == INFERENCE:
        return (f"this view was created in inference mode and {what} modified in place in "
                f"normal mode, which autograd cannot track unambiguously. Create the view and "
                f"modify it both inside the inference_mode block, or both outside it")
    return (f"this view was created under no_grad and {what} modified in place with grad mode "
            f"on, which autograd cannot track unambiguously. Create the view and modify it "
            f"both inside the no_grad block, or both outside it")


# -- in-place ---------------------------------------------------------------------------------

def check_inplace(t, recording):
    """Refuse in-place ops that would corrupt autograd history (before touching the data).
    `recording`: whether the op will be recorded (grad mode on and some operand requires
    grad); only then do the leaf and view rules apply, as in PyTorch."""
    if t._inference and not _state.inference:
        raise RuntimeError(
            "an inference tensor cannot be modified in place outside inference_mode; "
            "clone() it first to get a normal tensor")
    if not recording or (t._meta is not None and t._meta.fw_only):
        return
    base = t._base
    if base is None:
        if t._requires_grad and t._grad_fn is None:
            raise RuntimeError(
                "a leaf tensor that requires grad cannot be modified in place: autograd "
                "needs its value. Do the update under torch.no_grad(), or work on a clone")
        return
    if t._meta.creation != DEFAULT and t._dtype.category == FLOAT:
        # an int or bool target records nothing (not differentiable), so PyTorch checks not
        raise RuntimeError(_rebase_message(t, "it is being"))
    if (t._requires_grad or t._grad_fn is not None) and base._grad_fn is None:
        raise RuntimeError(
            "a view of a leaf tensor that requires grad cannot be modified in place: autograd "
            "needs the leaf's value. Do the update under torch.no_grad(), or work on a clone")
    if t._requires_grad and t._grad_fn is None:
        # a view taken before its base had history, never asked for its grad_fn since (by
        # .grad_fn, .is_leaf or an op using it): PyTorch's view is still a leaf then
        raise RuntimeError(
            "this view requires grad through its base but has no history of its own yet (it "
            "was taken before the base got one): it is a leaf and cannot be modified in "
            "place; read its .grad_fn first, or take the view again")


def _multi_view_name(t):
    gf = t._grad_fn
    name = type(gf).__name__ if gf is not None else "a multi-output view function"
    return name.replace("Backward0", "")


def apply_inplace(t, result, aliased=False, operands=()):
    """Write `result` (the out-of-place value, possibly with a node) into `t`. `aliased`: `t`
    is its own operand (a.mul_(a)), so the node's saved copies of `t` stay bound to it;
    `operands`: the op's other inputs, saved as they are even when they alias `t`."""
    node = result._grad_fn
    base = t if t._base is None else t._base
    base_had_grad = base._requires_grad or base._grad_fn is not None
    old_data = t._data
    if node is not None and not aliased:
        _snapshot_saved_self(node, t, old_data, operands)
    if old_data.shape != result._data.shape:
        raise RuntimeError(
            f"an in-place result of shape {list(result._data.shape)} cannot be written into "
            f"a tensor of shape {list(old_data.shape)}")
    if 0 in old_data.strides and old_data.size > 1:
        # elements share memory (a fill of an expanded tensor): write only what changed, so
        # that the last write to a shared element is the op's, as in PyTorch
        np.copyto(old_data, result._data, casting="unsafe", where=result._data != old_data)
    else:
        np.copyto(old_data, result._data, casting="unsafe")
    t._vc[0] += 1
    if FORWARD_AD:
        from runtime.forward_ad import inplace_moves

        if inplace_moves(t, result):
            return t
    if node is None:
        return t
    if result._dtype is not t._dtype:
        _refit_to_promoted(node, result)
    _rebind_saved_result(node, t)
    if t._base is None:
        _move_history(t, node)
    else:
        _move_view_history(t, node)
    if not base_had_grad:
        views_follow_base(base)
    return t


def _refit_to_promoted(node, result):
    """An in-place op whose promoted result (float32 += float64: float64) is written into
    a target of a narrower dtype gets gradients of the target's dtype, where its node was
    recorded against the result: an input of the result's dtype, which needed no cast then
    (a None in `_fit`), gets its gradient cast back to that dtype, as PyTorch's engine casts
    every gradient to its input's dtype."""
    spec = (result._data.shape, result._dtype.np)
    fit = node._fit or [None] * len(node.next_functions)
    node._fit = [spec if f is None and fn is not None else f
                 for f, (fn, _) in zip(fit, node.next_functions)]


def _snapshot_saved_self(node, t, old_data, operands):
    """The in-place op's node keeps the target's value from before the op: a recorded clone
    (CloneBackward0 onto the target's old history, as PyTorch saves it), so a create_graph
    backward differentiates it; a plain copy when the target has no history."""
    snapshot = None
    for a in node._args:
        if type(a) is not SavedTensor or a.tensor is None:
            continue
        s = a.tensor
        # t itself, or the detached alias save_input keeps of a tensor detached in place
        # (an operand sharing t's memory, v = t.detach(), is saved as it is, as PyTorch does)
        if s is t or (a.vc is t._vc and s._data is old_data
                      and not any(s is o for o in operands)):
            if snapshot is None:
                snapshot = _snapshot(t, old_data)
            a.tensor = snapshot
            a.vc = snapshot._vc
            a.version = snapshot._vc[0]


def _snapshot(t, old_data):
    if t.grad_fn is not None:
        return t.clone()
    snapshot = t._new_like(old_data.copy())
    snapshot._requires_grad = t._requires_grad
    return snapshot


def _saved_results(node):
    return [a for a in node._args
            if type(a) is SavedTensor and a.output_of is not None and a.tensor is None]


def _rebind_saved_result(node, t):
    for a in _saved_results(node):
        a.data = t._data
        a.vc = t._vc
        a.version = t._vc[0]


def _move_history(t, node):
    old = t._grad_fn
    t._grad_fn = node
    t._output_nr = 0
    _move_retain_hook(t, old, node)


def _move_retain_hook(t, old, node):
    m = t._meta
    if m is None or not m.retains_grad or old is None or old._hooks is None:
        return
    ref = old._hooks.retain.pop(t._output_nr, None)
    if ref is not None:
        node._hook_table().retain[0] = ref


class CopySlices(Node):
    """History of a base after an in-place op on one of its views.

    The gradient for the base passes through unchanged except in the view's region, where it
    is replaced by what the in-place op's node sends to its first input; the op's other
    inputs get their gradients as usual.
    """

    __slots__ = ("fn", "steps", "base_shape")
    _rule = None

    def _apply(self, g, ops):
        if self._freed:
            raise_freed()
        if ops is not numpy_ops:
            return self._apply_recording(g, ops)
        result = np.array(g)
        region = replay_view(result, self.steps)
        _check_region(region)
        res = self.fn._apply(np.array(region), numpy_ops)
        if res[0] is None:
            region[...] = 0
        else:
            region[...] = res[0]
        return (result,) + tuple(res[1:])

    def _apply_recording(self, g, ops):
        """The same with differentiable ops (create_graph): the gradient outside the region
        passes through, the region's comes from the op's node."""
        _check_region(replay_view(np.empty(self.base_shape, np.int8), self.steps))
        region = ops.view_region(g, self.base_shape, self.steps)
        res = self.fn._apply(region, ops)
        ones = np.ones(region._data.shape, g._data.dtype)
        inside = numpy_ops.embed_view(ones, self.base_shape, self.steps) != 0
        result = ops.where(inside, 0.0, g)
        if res[0] is not None:
            result = ops.add(result, ops.embed_view(res[0], self.base_shape, self.steps))
        return (result,) + tuple(res[1:])

    def _release(self):
        """After a backward that does not retain the graph: the wrapped node's saved tensors
        go too, and a second backward through this node raises, as through PyTorch's (which
        drops the node it wraps), even where that node saved nothing."""
        self._freed = True
        self.fn._release()


def _check_region(region):
    if shares_memory_within(region):  # PyTorch copies the region's gradient in place
        raise RuntimeError("the backward of an in-place operation on an expanded view would "
                           "write into memory that several elements share; clone() the "
                           "expanded tensor before modifying it")


def _move_view_history(t, node):
    base = t._base
    cs = CopySlices.__new__(CopySlices)
    cs.fn = node
    cs.steps = t._meta.view_steps
    cs.base_shape = base._data.shape
    cs.next_functions = (edge(base),) + node.next_functions[1:]
    cs._args = ()
    cs._fit = None
    cs._seq = next(_sequence)
    cs._hooks = None
    cs._freed = False
    old = base._grad_fn
    base._grad_fn = cs
    base._output_nr = 0
    _move_retain_hook(base, old, cs)
    history = regenerated_view_fn(t)
    for a in _saved_results(node):
        a.history = weakref.ref(history)


def accumulator_of(t):
    """The leaf's AccumulateGrad (shared while alive). A view that requires grad only through
    its base has none: gradient reaching it goes nowhere, as in PyTorch."""
    m = meta_of(t)
    if t._base is not None and not m.own_requires_grad:
        return None
    acc = m.acc() if m.acc is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        m.acc = weakref.ref(acc)
    return acc
