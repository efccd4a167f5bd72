"""torch.autograd.forward_ad: dual tensors and Jacobian-vector products.

`make_dual(x, t)` inside `dual_level()` gives a tensor that carries the tangent t; every op
recorded on it gives its outputs their tangents at once, and `unpack_dual(y)` returns
(primal, tangent), the tangent None when y depends on no dual tensor.

How tangents travel. A tangent rides on the tensor (`TensorMeta.tangent`). So that ops notice a
dual operand without a second dispatch path, a dual tensor whose primal does not require grad
is marked *forward-only* (`TensorMeta.fw_only`): internally it requires grad, so each op
records a node for it as usual, and `propagate` (called by `record` while a level is open)
then

- computes the outputs' tangents from the node's own derivative rule: the rule's VJP
  u -> J^T u is run with recorded ops on a fresh cotangent u, and differentiating
  <J^T u, t> with respect to u gives J t (for an elementwise rule that is "partial * tangent");
  there is no second table of forward rules;
- cuts the node's edges into forward-only tensors (backward never reaches them), and when no
  edge is left, drops the node and marks the outputs forward-only in turn.

So flags read as in PyTorch: a forward-only tensor reports requires_grad=False, no grad_fn and
is_leaf=True; a dual tensor whose primal requires grad keeps its ordinary history, and its
tangents are differentiable (the rule is run on the primal values themselves, create_graph).
On leaving the level every tangent is dropped and forward-only tensors become plain.

Known differences from PyTorch: tangents propagate only through ops recorded with grad mode on
(under no_grad, PyTorch still propagates them); the grad_fn of a differentiable tangent is the
derivative rule's graph, not PyTorch's forward formula (names such as AddBackward0 may differ);
one level at a time; custom autograd.Function ops carry no tangent.
"""

import collections
import weakref

from runtime import grad_mode
from runtime.autograd_meta import FORWARD_AD, meta_of
from runtime.ops._core import is_tensor

UnpackedDualTensor = collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])

_levels = []  # one entry per open level: weakrefs to the tensors given a tangent in it
_made = set()  # ids of the aliases make_dual returned in the open level


# -- levels -------------------------------------------------------------------------------------

def enter_dual_level():
    if _levels:
        raise RuntimeError("forward-mode AD levels cannot be nested: leave the open "
                           "dual_level first")
    _levels.append([])
    FORWARD_AD.append(propagate)
    return len(_levels) - 1


def exit_dual_level(*, level=None):
    if not _levels:
        raise RuntimeError("exit_dual_level: no dual level is open")
    FORWARD_AD.clear()
    _made.clear()
    for ref in _levels.pop():
        t = ref()
        if t is not None and t._meta is not None:
            _clear(t)


def _clear(t):
    m = t._meta
    m.tangent = None
    if m.fw_only:
        m.fw_only = False
        t._requires_grad = m.own_requires_grad if t._base is not None else False


class dual_level:
    """Context manager: the scope in which dual tensors carry tangents."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


# -- tangents on tensors ------------------------------------------------------------------------

def tangent_of(x):
    m = getattr(x, "_meta", None)
    return None if m is None else m.tangent


def is_fw_only(x):
    m = getattr(x, "_meta", None)
    return m is not None and m.fw_only


def _attach(t, tangent, fw_only):
    m = meta_of(t)
    m.tangent = tangent
    if fw_only:
        m.fw_only = True
        t._grad_fn = None
        t._output_nr = 0
        t._requires_grad = True
    _levels[-1].append(weakref.ref(t))


def make_dual(tensor, tangent, *, level=None):
    if not _levels:
        raise RuntimeError("make_dual needs an open forward-AD level: call it inside "
                           "`with forward_ad.dual_level():`")
    if not tensor.dtype.is_floating_point:
        raise ValueError(f"make_dual: the primal must be floating point, got {tensor.dtype}")
    if not tangent.dtype.is_floating_point:
        raise ValueError(f"make_dual: the tangent must be floating point, got {tangent.dtype}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"make_dual: the tangent has shape {list(tangent.shape)}, but the "
                           f"primal has shape {list(tensor.shape)}")
    real = tensor.requires_grad
    with _quiet(), grad_mode.enable_grad():
        dual = tensor.view_as(tensor)  # a view of the primal, as in PyTorch
    _attach(dual, tangent, fw_only=not real)
    _made.add(id(dual))
    return dual


def unpack_dual(tensor, *, level=None):
    """(primal, tangent): the primal is an alias of `tensor` without the tangent."""
    if not _levels or not is_tensor(tensor):
        return UnpackedDualTensor(tensor, None)
    tangent = tangent_of(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    with _quiet():
        primal = tensor.detach() if is_fw_only(tensor) else tensor.view_as(tensor)
    return UnpackedDualTensor(primal, tangent)


class _quiet:
    """No tangent propagation inside (make_dual's and unpack_dual's own aliases, the
    tangent computations themselves)."""

    def __enter__(self):
        self.saved = list(FORWARD_AD)
        FORWARD_AD.clear()

    def __exit__(self, *exc):
        FORWARD_AD[:] = self.saved
        return False


# -- propagation --------------------------------------------------------------------------------

def propagate(node, inputs, outs):
    """Called by `record` for each new node inside a level: the outputs' tangents."""
    tangents = [tangent_of(x) for x in inputs]
    if all(t is None for t in tangents):
        return
    cut = [is_fw_only(x) for x in inputs]
    if any(cut):
        node.next_functions = tuple((None, 0) if c else e
                                    for c, e in zip(cut, node.next_functions))
    fw_only = all(e[0] is None for e in node.next_functions)
    with _quiet():
        jts = _jvp(node, tangents, outs, fw_only, cut)
    for out, jt in zip(outs, jts):
        if out._dtype.is_floating_point:
            _attach(out, jt, fw_only)
        elif fw_only:
            out._grad_fn = None


def _jvp(node, tangents, outs, fw_only, cut):
    """J t for each output of `node`, by differentiating the rule's VJP in the cotangent."""
    from runtime import autograd, tensor_ops
    from runtime.creation import zeros_like
    from runtime.function import SavedTensor, _fit

    with grad_mode.enable_grad():
        args = [a.unpack(tensor_ops, node) if a.__class__ is SavedTensor else a
                for a in node._args]
        args = [_plain(a, fw_only) for a in args]
        us = [zeros_like(o.detach(), requires_grad=True) for o in outs]
        g = us[0] if node._n_outputs == 1 else us
        needs = tuple(t is not None for t in tangents)
        vjps = node._rule(tensor_ops, g, needs, *args)
        if node._fit is not None:
            vjps = tuple(_fit(tensor_ops, v, f) for v, f in zip(vjps, node._fit))
        pairs = [(v, t) for v, t in zip(vjps, tangents)
                 if v is not None and t is not None and v.requires_grad]
        jts = [None] * len(us)
        if pairs:
            vs, ts = zip(*pairs)
            jts = autograd.grad(vs, us, ts, create_graph=True, allow_unused=True)
    return [zeros_like(o.detach()) if jt is None else jt for o, jt in zip(outs, jts)]


def _plain(a, fw_only):
    """A saved value as the tangent computation sees it: forward-only tensors (and, for a
    forward-only node, everything) without history, so tangents depend only on real grads."""
    if isinstance(a, (tuple, list)):
        return type(a)(_plain(x, fw_only) for x in a)
    if is_tensor(a) and (fw_only or is_fw_only(a)) and (a._requires_grad or a._grad_fn):
        return a.detach()
    return a


# -- in-place ops on tensors with tangents ------------------------------------------------------

def inplace_moves(t, result):
    """After `result` was written into `t` in place: `t` takes over the result's tangent.
    Returns True when the op was forward-only (then `t` keeps no history)."""
    tangent = tangent_of(result)
    if tangent is None:
        if tangent_of(t) is not None:
            meta_of(t).tangent = None
        return False
    fw_only = is_fw_only(result)
    if not fw_only and is_fw_only(t):
        t._meta.fw_only = False
    _attach(t, tangent, fw_only)
    if t._base is not None and id(t) not in _made:
        _write_into_base(t, tangent, fw_only)
    return fw_only


def _write_into_base(view, tangent, fw_only):
    """An in-place write through a view changes the base's tangent in the view's region (the
    base of make_dual's own alias excepted, as in PyTorch). Other views of the base keep the
    tangents they had."""
    from runtime.creation import zeros_like
    from runtime.rules.numpy_ops import replay_view

    base = view._base
    old = tangent_of(base)
    new = zeros_like(base.detach()) if old is None else old.detach().clone()
    replay_view(new._data, view._meta.view_steps)[...] = tangent._data
    real = base._requires_grad or base._grad_fn is not None
    _attach(base, new, fw_only and not (real and not is_fw_only(base)))
