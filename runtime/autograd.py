"""torch.autograd's functional API: backward() and grad(), checking arguments the way
PyTorch does before handing the graph task to the engine."""

import warnings

import numpy as np

from runtime import grad_mode
from runtime.autograd_meta import edge, make_view
from runtime.engine import run_backward
from runtime.ops._core import is_tensor, wrap
from runtime.overlap import overlapping
from runtime.rules import numpy_ops


_warned_create_graph = []  # non-empty once backward(create_graph=True) has warned


def _as_list(x):
    if x is None:
        return None
    if is_tensor(x):
        return [x]
    return list(x)


def _root_grads(roots, grads, create_graph):
    """One cotangent per root, implicit ones for scalar roots. As in PyTorch, each pair is
    checked (type, shape) before the counts are compared."""
    if grads is None:
        grads = [None] * len(roots)
    out = []
    for i, (r, g) in enumerate(zip(roots, grads)):
        if g is None:
            if r._data.size != 1:
                raise RuntimeError("a gradient can only be created implicitly for a scalar "
                                   "output; pass gradient= (e.g. torch.ones_like(out)) for "
                                   "this non-scalar output")
            if r._dtype.is_complex:
                raise RuntimeError(f"a gradient can only be created implicitly for a real "
                                   f"scalar output, but this one is {r._dtype}; take .abs() "
                                   f"or .real first, or pass gradient=")
            g = wrap(np.ones(r._data.shape, r._dtype.np), r._dtype)
        elif not is_tensor(g):
            raise TypeError(f"gradients must be Tensors or None, got {type(g).__name__}")
        elif g._data.shape != r._data.shape:
            raise RuntimeError(f"shape mismatch: the gradient for output {i} has shape "
                               f"torch.Size({list(g._data.shape)}) but the output has shape "
                               f"torch.Size({list(r._data.shape)})")
        if create_graph:
            out.append(g)
        else:
            out.append(g._data[()] if g._data.ndim == 0 else g._data)
    if len(grads) != len(roots):
        raise RuntimeError(f"got {len(grads)} gradients for {len(roots)} outputs; pass one "
                           f"per output")
    return out


def _check_roots(roots):
    for i, r in enumerate(roots):
        # a view that requires grad only through its base, without history, leads nowhere
        if not r.requires_grad or edge(r)[0] is None:
            raise RuntimeError(f"element {i} of the tensors to differentiate does not require "
                               f"grad and has no grad_fn, so there is nothing to "
                               f"backpropagate through")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    if grad_variables is not None:
        warnings.warn("grad_variables is deprecated; pass grad_tensors instead",
                      FutureWarning, stacklevel=2)
        grad_tensors = grad_variables if grad_tensors is None else grad_tensors
    if create_graph and not _warned_create_graph:
        _warned_create_graph.append(True)  # once per process, as PyTorch's TORCH_WARN_ONCE
        warnings.warn(
            "backward(create_graph=True) makes each parameter's .grad hold a graph that refers "
            "back to the parameter, a reference cycle that can leak memory; prefer "
            "autograd.grad(), or set the .grad fields to None when done",
            UserWarning, stacklevel=3)
    roots = _as_list(tensors)
    inputs = _as_list(inputs)
    if inputs is not None and not inputs:
        raise RuntimeError("backward(inputs=...) was given an empty list; pass the tensors "
                           "to accumulate into, or leave inputs out")
    _check_roots(roots)
    grads = _root_grads(roots, _as_list(grad_tensors), create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        for t in inputs:
            if not t.requires_grad:
                raise RuntimeError("one of the tensors in backward(inputs=...) does not "
                                   "require grad, so no gradient can be accumulated into it")
            if t.grad_fn is not None:
                t.retain_grad()  # a non-leaf input gets its .grad the retain_grad way
    run_backward(roots, grads, retain_graph, create_graph, inputs, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    if not only_inputs:
        warnings.warn("only_inputs is deprecated and ignored; gradients are returned for "
                      "`inputs` only", FutureWarning, stacklevel=2)
    if materialize_grads and allow_unused is False:
        raise ValueError("materialize_grads=True fills unused inputs with zeros, which "
                         "contradicts allow_unused=False; leave allow_unused out or set it True")
    if allow_unused is None:
        allow_unused = materialize_grads
    as_dict = isinstance(inputs, dict)
    keys = list(inputs) if as_dict else None
    in_list = list(inputs.values()) if as_dict else _as_list(inputs)
    if not in_list:
        raise RuntimeError("autograd.grad() needs at least one input to differentiate with "
                           "respect to")
    roots = _as_list(outputs)
    _check_roots(roots)
    for t in in_list:
        if not t.requires_grad:
            raise RuntimeError("one of the tensors to differentiate with respect to does not "
                               "require grad")
    grads = _root_grads(roots, _as_list(grad_outputs), create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    captured = run_backward(roots, grads, retain_graph, create_graph, in_list)
    result = tuple(_finish_grad(i, t, g, create_graph, allow_unused, materialize_grads)
                   for i, (t, g) in enumerate(zip(in_list, captured)))
    return dict(zip(keys, result)) if as_dict else result


def _finish_grad(i, t, g, create_graph, allow_unused, materialize):
    if g is None:
        if materialize:
            return wrap(np.zeros(t._data.shape, t._dtype.np), t._dtype)
        if not allow_unused:
            raise RuntimeError(f"input {i} of autograd.grad() was not used to compute the "
                               f"outputs, so it has no gradient; pass allow_unused=True to get "
                               f"None for it instead")
        return None
    if create_graph:
        return g
    out = wrap(np.asarray(g), None).to(t._dtype) if np.asarray(g).dtype != t._dtype.np \
        else wrap(np.asarray(g), t._dtype)
    return _expanded_as_view(out)


def _expanded_as_view(out):
    """A gradient made by broadcasting (sum()'s backward expands) is, in PyTorch, a view of
    the smaller tensor it expands, made while grad mode was off: detach_() of it, or an
    in-place op on it that records history, is refused as for any such view. A 0-dim one
    (sum() of a 0-dim input) is such a view too: numpy's broadcast to () is read-only."""
    d = out._data
    if not (overlapping(d) or ((0 in d.strides or d.ndim == 0) and not d.flags.writeable)):
        return out
    compact = np.array(d[tuple(slice(0, 1) if st == 0 else slice(None) for st in d.strides)])
    base = wrap(compact, out._dtype)
    data = numpy_ops.replay_view(compact, (("expand", d.shape),))
    with grad_mode.no_grad():
        return make_view(base, data, ("expand", d.shape))


from runtime.custom_function import Function, FunctionCtx  # noqa: E402,F401
from runtime.gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402,F401
from runtime import profiler  # noqa: E402,F401  (torch.autograd.profiler)

set_grad_enabled = grad_mode.set_grad_enabled
no_grad = grad_mode.no_grad
enable_grad = grad_mode.enable_grad
inference_mode = grad_mode.inference_mode

from runtime import autograd_functional as functional  # noqa: E402,F401
from runtime import autograd_graph as graph  # noqa: E402,F401
from runtime import forward_ad  # noqa: E402,F401
from runtime.anomaly import detect_anomaly, set_detect_anomaly  # noqa: E402,F401
