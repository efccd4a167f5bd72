"""torch.autograd.forward_ad: dual tensors and Jacobian-vector products.

`make_dual(x, t)` inside `dual_level()` gives a tensor whose computations carry the tangent t;
`unpack_dual(y)` returns (primal, tangent) with tangent = dy/dx . t (summed over every dual
tensor of the level that y depends on), or None when y depends on none.

The forward derivatives come from the same rules as the reverse ones, with no second table:
a dual tensor is an eager-graph input, and the tangent of y is obtained on request by the
double-backward trick. Every rule's VJP u -> J^T u is recorded linearly in the cotangent u
(create_graph), so differentiating <J^T u, t> with respect to u gives J t. For an elementwise
rule that is exactly "partial * tangent".

Known difference from PyTorch: a dual tensor (and what is computed from it) requires grad and
has a grad_fn inside the level, because the tangent travels through the reverse graph (on
leaving the level, dual tensors made from primals that did not require grad stop requiring it).
`unpack_dual(y).primal` is detached unless a primal or tangent required grad on its own.
"""

import collections

from runtime import grad_mode
from runtime.ops._core import is_tensor

UnpackedDualTensor = collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])

_levels = []  # one entry per open level: {"duals": [(dual, tangent)], "keep": bool}


def enter_dual_level():
    if _levels:
        raise RuntimeError("forward-mode AD levels cannot be nested: leave the open "
                           "dual_level first")
    _levels.append({"duals": [], "keep": False})
    return len(_levels) - 1


def exit_dual_level(*, level=None):
    if not _levels:
        raise RuntimeError("exit_dual_level: no dual level is open")
    for dual, _ in _levels.pop()["duals"]:
        if dual.is_leaf:  # made from a primal that did not require grad: plain again
            dual.requires_grad_(False)


class dual_level:
    """Context manager: the scope in which dual tensors carry tangents."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


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
    state = _levels[-1]
    state["keep"] |= tensor.requires_grad or tangent.requires_grad
    with grad_mode.enable_grad():
        dual = tensor.view_as(tensor) if tensor.requires_grad else \
            tensor.detach().requires_grad_()
    state["duals"].append((dual, tangent))
    return dual


def unpack_dual(tensor, *, level=None):
    if not _levels or not is_tensor(tensor):
        return UnpackedDualTensor(tensor, None)
    state = _levels[-1]
    for dual, tangent in state["duals"]:
        if dual is tensor:
            return UnpackedDualTensor(_primal(tensor, state), tangent)
    return UnpackedDualTensor(_primal(tensor, state), _tangent(tensor, state))


def _primal(tensor, state):
    return tensor if state["keep"] else tensor.detach()


def _tangent(y, state):
    """J t by the double-backward trick (None when y depends on no dual tensor)."""
    from runtime import autograd
    from runtime.creation import zeros_like

    if not y.requires_grad or not state["duals"] or not y.dtype.is_floating_point:
        return None
    duals = [d for d, _ in state["duals"]]
    tangents = [t for _, t in state["duals"]]
    with grad_mode.enable_grad():
        u = zeros_like(y, requires_grad=True)
        vjps = autograd.grad(y, duals, u, retain_graph=True, create_graph=True,
                             allow_unused=True)
        pairs = [(v, t) for v, t in zip(vjps, tangents) if v is not None and v.requires_grad]
        if not any(v is not None for v in vjps):
            return None
        if not pairs:
            return zeros_like(y)
        outs, ts = zip(*pairs)
        (jv,) = autograd.grad(outs, (u,), ts, retain_graph=True, create_graph=state["keep"],
                              allow_unused=True)
    if jv is None:
        return zeros_like(y)
    return jv if state["keep"] else jv.detach()
