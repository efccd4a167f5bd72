"""torch.autograd.functional: vjp, jvp, jacobian, hessian, vhp, hvp over user functions of
Tensors, built on `autograd.grad` as PyTorch builds them.

Conventions kept from PyTorch 2.13: inputs and outputs are a Tensor or a tuple of Tensors and
results mirror that shape (a Jacobian is indexed [output][input]); inputs are re-leafed
(detached, requiring grad) unless create_graph is set and they already require grad, in which
case a view keeps the outer graph; results are detached unless create_graph; an output that
does not depend on an input gives zeros, or a RuntimeError under strict=True. Forward-mode
products (jvp, hvp) use the double-backward trick: the VJP is linear in its cotangent, so
differentiating it with respect to that cotangent gives the JVP. `vectorize=True` is accepted
and computes the same values row by row.
"""

from runtime import grad_mode
from runtime.ops._core import is_tensor


def _as_tuple(x, what, fn):
    """(was_tuple, tuple of Tensors), with PyTorch's TypeError for anything else."""
    was_tuple = isinstance(x, tuple)
    items = x if was_tuple else (x,)
    for i, el in enumerate(items):
        if not is_tensor(el):
            where = f"the value at index {i}" if was_tuple else f"the given {what}"
            raise TypeError(f"{fn}(): the {what} must be a Tensor or a tuple of Tensors, but "
                            f"{where} has type {type(el).__name__}")
    return was_tuple, items


def _unpack(res, was_tuple):
    return res if was_tuple else res[0]


def _unpack2(res, outer_tuple, inner_tuple):
    if not inner_tuple:
        res = tuple(row[0] for row in res)
    return res if outer_tuple else res[0]


def _prepare(inputs, create_graph, need_graph):
    return tuple(x.view_as(x) if create_graph and x.requires_grad
                 else x.detach().requires_grad_(need_graph) for x in inputs)


def _finish(values, create_graph):
    if not values or is_tensor(values[0]):
        return values if create_graph else tuple(v.detach() for v in values)
    return tuple(_finish(v, create_graph) for v in values)


def _check_v(v, other, other_tuple, fn, create_graph):
    _, v = _as_tuple(v, "v", fn)
    v = _prepare(v, create_graph, False)
    if len(v) != len(other):
        raise RuntimeError(f"{fn}(): v has {len(v)} entries, but {len(other)} are needed"
                           if other_tuple else f"{fn}(): v must hold a single Tensor")
    for i, (a, b) in enumerate(zip(v, other)):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"{fn}(): entry {i} of v has shape {list(a.shape)}, but "
                               f"{list(b.shape)} is needed")
    return v


def _need_scalar(items, fn, what):
    if len(items) != 1 or items[0].numel() != 1:
        raise RuntimeError(f"{fn}(): v can only be left out when the {what} is a single "
                           f"Tensor with a single element")


_STRICT_MESSAGES = {
    "outputs": "output {i} of the function does not require grad: in strict mode every "
               "output must be computed differentiably from the inputs",
    "grad_inputs": "the gradient with respect to input {i} does not depend on the inputs, "
                   "which strict mode does not allow",
    "jacobian": "the Jacobian with respect to input {i} does not depend on the inputs (is the "
                "function linear?), which strict mode does not allow",
    "hessian": "the Hessian with respect to input {i} does not depend on the inputs, which "
               "strict mode does not allow",
}


def _check_strict(values, kind, strict):
    if not strict:
        return
    for i, v in enumerate(values):
        if v is None:
            raise RuntimeError(f"the output of the function does not depend on input {i}, "
                               f"which strict mode does not allow")
        if not v.requires_grad:
            raise RuntimeError(_STRICT_MESSAGES[kind].format(i=i))


def _grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """autograd.grad over the outputs that require grad; None for unreached inputs."""
    from runtime import autograd

    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    outs, gos = zip(*pairs)
    return autograd.grad(outs, inputs, gos, allow_unused=True, create_graph=create_graph,
                         retain_graph=retain_graph)


def _zeros_for_none(grads, refs, strict, create_graph, stage):
    from runtime.creation import zeros_like

    out = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(f"{stage}: the result does not depend on input {i}, which "
                                   f"strict mode does not allow")
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            raise RuntimeError(f"{stage}: the result with respect to input {i} does not "
                               f"depend on the inputs, which strict mode with create_graph=True "
                               f"does not allow")
        out.append(g)
    return tuple(out)


def _call(func, inputs, fn, strict):
    was_tuple, outputs = _as_tuple(func(*inputs), "outputs of the function", fn)
    _check_strict(outputs, "outputs", strict)
    return was_tuple, outputs


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    with grad_mode.enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, True)
        out_tuple, outputs = _call(func, inputs, "vjp", strict)
        if v is None:
            _need_scalar(outputs, "vjp", "function's output")
        else:
            v = _check_v(v, outputs, out_tuple, "vjp", create_graph)
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        grads = _grad(outputs, inputs, v, create_graph)
        result = _zeros_for_none(grads, inputs, strict, create_graph, "vjp")
    return (_unpack(_finish(outputs, create_graph), out_tuple),
            _unpack(_finish(result, create_graph), in_tuple))


def _double_backward_trick(outputs, inputs, v, create_graph, strict, fn):
    """J v for the function outputs(inputs): the VJP u -> J^T u is linear in u, so the
    gradient of <J^T u, v> with respect to u is J v."""
    from runtime.creation import zeros_like

    with grad_mode.enable_grad():
        u = tuple(zeros_like(o, requires_grad=True) for o in outputs)
        vjps = _grad(outputs, inputs, u, create_graph=True)
        _check_strict(vjps, "grad_inputs", strict)
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        grads = _grad(vjps, u, v, create_graph)
        return _zeros_for_none(grads, outputs, strict, create_graph, fn)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    with grad_mode.enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, True)
        if v is None:
            _need_scalar(inputs, "jvp", "input")
        else:
            v = _check_v(v, inputs, in_tuple, "jvp", create_graph)
        out_tuple, outputs = _call(func, inputs, "jvp", strict)
    result = _double_backward_trick(outputs, inputs, v, create_graph, strict, "jvp")
    return (_unpack(_finish(outputs, create_graph), out_tuple),
            _unpack(_finish(result, create_graph), out_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError("jacobian(): strategy must be 'forward-mode' or 'reverse-mode'")
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("jacobian(): strategy='forward-mode' does not support "
                                      "create_graph=True; use the reverse mode")
        if not vectorize:
            raise NotImplementedError("jacobian(): strategy='forward-mode' needs "
                                      "vectorize=True")
    if vectorize and strict:
        raise RuntimeError("jacobian(): strict=True and vectorize=True cannot be combined")
    with grad_mode.enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, True)
        out_tuple, outputs = _call(func, inputs, "jacobian", strict)
        rows = tuple(_jacobian_of(i, out, inputs, create_graph, strict)
                     for i, out in enumerate(outputs))
    return _unpack2(_finish(rows, create_graph), out_tuple, in_tuple)


def _jacobian_of(i, out, inputs, create_graph, strict):
    """d out / d inputs[j] for every j, one VJP per element of `out`."""
    from runtime.creation import zeros_like
    from runtime.ops import reshape, stack

    columns = [[] for _ in inputs]
    flat = reshape(out, (-1,))
    for k in range(out.numel()):
        grads = _grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
        for j, (g, x) in enumerate(zip(grads, inputs)):
            if g is None:
                if strict:
                    raise RuntimeError(f"jacobian(): output {i} does not depend on input "
                                       f"{j}, which strict mode does not allow")
                g = zeros_like(x)
            elif strict and create_graph and not g.requires_grad:
                raise RuntimeError(f"jacobian(): the Jacobian of output {i} does not depend "
                                   f"on input {j}, which strict mode with create_graph=True "
                                   f"does not allow")
            columns[j].append(g)
    return tuple(_stack_rows(c, out, x, stack, reshape) for c, x in zip(columns, inputs))


def _stack_rows(rows, out, x, stack, reshape):
    from runtime.creation import zeros

    shape = tuple(out.shape) + tuple(x.shape)
    if not rows:
        return zeros(shape, dtype=x.dtype)
    return reshape(stack(rows, 0), shape)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    in_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError("hessian(): the strategy must be 'forward-mode' or "
                             "'reverse-mode'")

    def scalar_func(*xs):
        out = func(*xs)
        _, outs = _as_tuple(out, "outputs of the function", "hessian")
        _check_strict(outs, "outputs", strict)
        if isinstance(out, tuple):
            raise RuntimeError("hessian(): the function must return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("hessian(): the function must return a Tensor with a single "
                               "element")
        return out.squeeze()

    def jac_func(*xs):
        if outer_jacobian_strategy == "forward-mode":
            xs = tuple(x.requires_grad_(True) for x in xs)
        jac = jacobian(scalar_func, xs, create_graph=True)
        _check_strict(jac if isinstance(jac, tuple) else (jac,), "jacobian", strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _unpack2(res, in_tuple, in_tuple)


def _scalar_function_setup(func, inputs, v, create_graph, strict, fn):
    """Common start of vhp / hvp: re-leafed inputs, checked v, the single output and its
    gradient (with graph)."""
    in_tuple, inputs = _as_tuple(inputs, "inputs", fn)
    inputs = _prepare(inputs, create_graph, True)
    if v is None:
        _need_scalar(inputs, fn, "input")
    else:
        v = _check_v(v, inputs, in_tuple, fn, create_graph)
    out_tuple, outputs = _call(func, inputs, fn, strict)
    if out_tuple:
        raise RuntimeError(f"{fn}(): the function must return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"{fn}(): the function must return a Tensor with a single element")
    jac = _grad(outputs, inputs, create_graph=True)
    _check_strict(jac, "jacobian", strict)
    return in_tuple, inputs, v, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    with grad_mode.enable_grad():
        in_tuple, inputs, v, outputs, jac = _scalar_function_setup(
            func, inputs, v, create_graph, strict, "vhp")
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        grads = _grad(jac, inputs, v, create_graph)
        result = _zeros_for_none(grads, inputs, strict, create_graph, "vhp")
    return (_finish(outputs, create_graph)[0], _unpack(_finish(result, create_graph), in_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    from runtime.creation import zeros_like

    with grad_mode.enable_grad():
        in_tuple, inputs, v, outputs, jac = _scalar_function_setup(
            func, inputs, v, create_graph, strict, "hvp")
        u = tuple(zeros_like(x, requires_grad=True) for x in inputs)
        double_back = _grad(jac, inputs, u, create_graph=True)
        _check_strict(jac, "hessian", strict)
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        grads = _grad(double_back, u, v, create_graph)
        result = _zeros_for_none(grads, inputs, strict, create_graph, "hvp")
    return (_finish(outputs, create_graph)[0], _unpack(_finish(result, create_graph), in_tuple))
